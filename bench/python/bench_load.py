"""Benchmark (not a test): `harnessweaver.load()` and `inspect()` of a harness
with 10, 1,000 and 10,000 generated manifests (YAML, each pinned with its
definition_digest, with a schema, scopes, a rate limit and an approval
condition; http transport so no handler import is involved): wall time and
peak memory. Every measurement runs in a fresh Python process that imports
harnessweaver, reads its RSS high-water mark (``ru_maxrss``), loads, and reads
it again; the table shows medians over the repeats and how each grows with
the number of manifests.

    make bench-load                         (or: python bench_load.py --sizes 10,1000)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import harnessweaver as hw

from benchlib import QUICK, REPEATS, SMOKE, Results, max_goal, value

MANIFEST = """\
apiVersion: harnessweaver/v1
kind: Tool
metadata: {{ name: {name}, version: 1.{i}.0, owner: team-{team} }}
spec:
  definition_digest: "{digest}"
  transport: http
  url: https://svc-{team}.internal/v1/{name}
  description: {description}
  input_schema: {schema}
  side_effect: write_external
  effect: {{ kind: external_write, retry_mode: idempotency_key }}
  risk: medium
  egress: [svc-{team}.internal]
  scopes: ["{team}:write"]
  rate_limit: {{ per_principal: 100/m, per_tenant: 5000/h }}
  approval: {{ when: "args.amount_usd > {limit} && !('finance' in principal.roles)", approver_role: finance }}
  output: {{ max_bytes: 20000, sanitize: [pii_redact] }}
  timeout: 10s
"""

CHILD = r"""
import json, resource, sys, time
import harnessweaver as hw
what, path = sys.argv[1], sys.argv[2]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter_ns()
h = hw.inspect(path) if what == "inspect" else hw.load(path)
took = time.perf_counter_ns() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ns": took, "rss_before_kb": before, "rss_after_kb": after, "tools": len(h.tools)}))
"""


# How much of load() is Python's (private names: skipped if they change): the
# native host alone, built as `hw.load` builds it, beside `hw.load` (each twice, the second timed).
BREAKDOWN = r"""
import json, sys, time
import harnessweaver as hw
from harnessweaver import _governor, _native
path = sys.argv[1]
def native():
    return _native.Host(path, {}, [], None, None, _governor._resolve, _governor._roots(), _governor._run)
took = {}
for name, fn in [("native_ns", native), ("load_ns", lambda: hw.load(path))] * 2:
    start = time.perf_counter_ns()
    fn()
    took[name] = time.perf_counter_ns() - start
print(json.dumps(took))
"""


def breakdown(path: Path) -> Dict[str, float]:
    out = subprocess.run([sys.executable, "-c", BREAKDOWN, str(path)], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def write_harness(root: Path, n: int) -> Path:
    (root / "tools").mkdir(parents=True)
    for i in range(n):
        name = f"tool_{i:05d}"
        team = f"t{i % 37}"
        description = f"Update record kind {i} in the {team} service and notify its owner."
        schema = {"type": "object", "additionalProperties": False, "required": ["record_id", "amount_usd"],
                  "properties": {"record_id": {"type": "string", "pattern": "^R-[0-9]{6}$"},
                                 "amount_usd": {"type": "number", "minimum": 0},
                                 "note": {"type": "string", "maxLength": 500},
                                 "notify": {"type": "boolean"}}}
        digest = hw.definition_digest(name, description, schema)
        (root / "tools" / f"{name}.yaml").write_text(MANIFEST.format(
            name=name, i=i, team=team, digest=digest, description=description, schema=json.dumps(schema),
            limit=100 + i % 900), encoding="utf-8")
    (root / "harness.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {name: bench-load}\n"
        "spec:\n  mode: test\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  audit: {sink: none}\n", encoding="utf-8")
    return root / "harness.yaml"


def measure(what: str, path: Path, n: int) -> Dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, what, str(path)], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    assert r["tools"] == n, r
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10,100" if SMOKE else "10,1000,10000")
    ap.add_argument("--repeats", type=int, default=REPEATS if SMOKE else (2 if QUICK else 3))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    res = Results("load-python")
    base = Path(tempfile.mkdtemp(prefix="hw-bench-load-"))
    summary: Dict[str, Dict[int, Dict[str, float]]] = {"load": {}, "inspect": {}}
    try:
        for n in sizes:
            path = write_harness(base / str(n), n)
            for what in ("inspect", "load"):
                runs: List[Dict[str, float]] = [measure(what, path, n) for _ in range(args.repeats)]
                ns = statistics.median(r["ns"] for r in runs)
                peak_mb = statistics.median(r["rss_after_kb"] for r in runs) / 1024
                added_mb = statistics.median(r["rss_after_kb"] - r["rss_before_kb"] for r in runs) / 1024
                summary[what][n] = {"ns": ns, "peak_mb": peak_mb, "added_mb": added_mb}
                fn = "hw.inspect()" if what == "inspect" else "hw.load()"
                goal = max_goal("ours", 0.8e9, "< 0.8 s") if (what == "load" and n == 10000) else None
                res.row("load", f"{what}, {n:,} manifests, Python", value(fn, ns, "ns"), goal=goal,
                        repeats=args.repeats, headline=goal is not None,
                        note=f"peak RSS {peak_mb:.0f} MB, {added_mb:.1f} MB above the process after `import harnessweaver`")
        for what, by in summary.items():
            ns_sorted = sorted(by)
            if len(ns_sorted) < 2:
                continue
            lo, hi = ns_sorted[-2], ns_sorted[-1]
            per = (by[hi]["ns"] - by[lo]["ns"]) / (hi - lo)
            mem = (by[hi]["added_mb"] - by[lo]["added_mb"]) * 1024 / (hi - lo)
            steps = ", ".join(f"{n:,}: {by[n]['ns'] / 1e6:.1f} ms, +{by[n]['added_mb']:.1f} MB" for n in ns_sorted)
            res.fact("load", f"`{what}()`: {steps} (medians of {args.repeats} fresh processes). From {lo:,} to {hi:,} "
                             f"manifests ({hi / lo:g}x) time grows {by[hi]['ns'] / by[lo]['ns']:.1f}x and added memory "
                             f"{by[hi]['added_mb'] / max(by[lo]['added_mb'], 0.01):.1f}x: about {per / 1e3:.0f} µs and "
                             f"{mem:.1f} KB per manifest.")
        big = max(sizes)
        parts = [breakdown(base / str(big) / "harness.yaml") for _ in range(args.repeats)]
        if all(parts):
            native = statistics.median(p["native_ns"] for p in parts)
            load = statistics.median(p["load_ns"] for p in parts)
            res.fact("load", f"Where `load()` of {big:,} manifests spends its time: the native host (read the harness "
                             f"once, parse, validate, compile schemas and conditions) {native / 1e6:.0f} ms of "
                             f"{load / 1e6:.0f} ms; the rest ({(load - native) / 1e6:.1f} ms) is Python (nothing per manifest).")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
