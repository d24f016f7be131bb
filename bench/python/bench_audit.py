"""Benchmark (not a test): what an audit sink adds to a governed call from
Python: none, JSON Lines, a Python callback, SQLite (same handler, same call).

    .venv-bench/bin/python bench/python/bench_audit.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

import harnessweaver as hw

from bench_call import MANIFEST, lookup_order
from benchlib import median_ns


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
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, sink in [("none", None), ("jsonl", "audit.jsonl"), ("callback", "callback"), ("sqlite", "sqlite:audit.db")]:
            kw: Dict[str, Any] = {"audit": (lambda event: None)} if sink == "callback" else {}
            h = hw.load(harness(Path(tmp) / name, sink), handlers={"lookup_order": lookup_order}, **kw)
            rows[name] = median_ns(lambda: h.call("lookup_order", args, principal=principal)) / 1e3
    for name, us in rows.items():
        print(f"  audit sink {name:9s} {us:8.2f} us/call   added {us - rows['none']:+6.2f} us")
    print("  goal: JSON Lines and callback under 2 us added per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
