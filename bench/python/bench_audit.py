"""Benchmark (not a test): what an audit sink adds to a governed call from
Python: none, JSON Lines, a Python callback, SQLite (same handler, same call).

    make bench-python-audit        (builds the package first)
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import harnessweaver as hw

from bench_call import MANIFEST, lookup_order
from benchlib import REPEATS, Results, max_goal, median_ns, value

SINKS = [("none", None), ("jsonl", "audit.jsonl"), ("callback", "callback"), ("sqlite", "sqlite:audit.db")]
NAMES = {"jsonl": "JSON Lines file", "callback": "Python callback", "sqlite": "SQLite"}


def harness(root: Path, sink: Optional[str]) -> Path:
    spec: Dict[str, Any] = {"mode": "test", "tools": {"manifests": ["tools/*.json"]}}
    if sink:
        spec["audit"] = {"sink": sink}
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "tools" / "lookup_order.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    (root / "harness.yaml").write_text(json.dumps({"apiVersion": "harnessweaver/v1", "kind": "Harness",
                                                   "metadata": {"name": "bench"}, "spec": spec}), encoding="utf-8")
    return root / "harness.yaml"


def main() -> int:
    principal = hw.Principal("alice", scopes=["orders:read"])
    args = {"order_id": "A-1001"}
    calls: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, sink in SINKS:
            last: Dict[str, Any] = {}

            def keep(event: Dict[str, Any]) -> None:
                last["event"] = event

            h = hw.load(harness(Path(tmp) / name, sink), {"lookup_order": lookup_order}, keep if name == "callback" else None)
            assert h.call("lookup_order", args, principal=principal).output == lookup_order(**args)
            assert name != "callback" or last["event"]["decision"] == "allowed", "the callback sees each event as a dict"
            calls[name] = lambda h=h: h.call("lookup_order", args, principal=principal)
        # Rounds that measure every sink in turn, so a change in the machine's load hits all of them alike.
        samples: Dict[str, List[float]] = {name: [] for name in calls}
        for _ in range(REPEATS):
            for name, call in calls.items():
                samples[name].append(median_ns(call, repeats=1))
    ns = {name: statistics.median(v) for name, v in samples.items()}
    for name, v in ns.items():
        print(f"  audit sink {name:9s} {v / 1e3:8.2f} us/call   added {(v - ns['none']) / 1e3:+6.2f} us")
    print("  goal: JSON Lines and callback under 2 us added per call; SQLite measured, no goal")
    res = Results("audit-python")
    goal = max_goal("added", 2000, "< 2 µs added")
    for name in ("jsonl", "callback", "sqlite"):
        res.row("audit", f"governed call with an audit sink: {NAMES[name]}, Python", value(f"h.call, audit {name}", ns[name], "ns"),
                value("h.call, no audit sink", ns["none"], "ns"), goal=None if name == "sqlite" else goal,
                headline=name != "sqlite", note="measured and reported without a goal" if name == "sqlite" else "")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
