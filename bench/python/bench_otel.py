"""Benchmark (not a test): what OpenTelemetry costs a governed call from
Python (issue 24), as CPU time per call (load-robust enough on a shared
machine), in three processes, since the tracer provider is process-wide:

- ``none``: the OpenTelemetry API is not installed (its import is blocked);
- ``api``: the API installed, no SDK configured (its proxy provider);
- ``sdk``: the SDK configured, spans to an in-memory exporter through a
  ``SimpleSpanProcessor`` (the export itself is cheap; the rest is the span).

Each prints the best of ROUNDS rounds of CALLS calls; the summary gives each
mode's ratio to ``none``. ``audit.sink: none``, the same trivial tool.

    make bench-python-otel           (release build, .venv-bench)
    python bench/python/bench_otel.py   (whatever harnessweaver is importable)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROUNDS = 5
CALLS = 2000

CHILD = r"""
import json, sys, time
mode, path, rounds, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if mode == "none":
    sys.modules["opentelemetry"] = None  # not installed: its import raises ImportError
import harnessweaver as hw
if mode == "sdk":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
h = hw.load(path, {"lookup_order": lambda order_id: {"order_id": order_id, "status": "shipped"}})
principal = hw.Principal("alice", scopes=["orders:read"])
args = {"order_id": "A-1001"}
for _ in range(200):
    h.call("lookup_order", args, principal=principal)
best = None
for _ in range(rounds):
    if mode == "sdk":
        exporter.clear()
    start = time.process_time()
    for _ in range(calls):
        h.call("lookup_order", args, principal=principal)
    per = (time.process_time() - start) / calls
    best = per if best is None else min(best, per)
spans = len(exporter.get_finished_spans()) if mode == "sdk" else 0
print(json.dumps({"mode": mode, "cpu_us": best * 1e6, "spans": spans}))
"""


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_call import MANIFEST

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tools").mkdir()
        (root / "tools" / "lookup_order.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
        spec = {"mode": "test", "tools": {"manifests": ["tools/*.json"]}, "audit": {"sink": "none"}}
        harness = {"apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": "bench"}, "spec": spec}
        (root / "harness.yaml").write_text(json.dumps(harness), encoding="utf-8")
        got = {}
        for mode in ("none", "api", "sdk"):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, mode, str(root / "harness.yaml"), str(ROUNDS), str(CALLS)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            got[mode] = json.loads(out)
    assert got["sdk"]["spans"] > 0, "the SDK mode recorded no span"
    base = got["none"]["cpu_us"]
    for mode, row in got.items():
        print(f"  otel {mode:4s} {row['cpu_us']:8.2f} us CPU/call   ratio to none {row['cpu_us'] / base:5.2f}")
    print("  goal: api within noise of none (the core builds no event while nobody listens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
