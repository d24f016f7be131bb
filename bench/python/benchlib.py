"""Shared by the Python benchmarks (not a test): timing with medians over
repeats, and the machine-readable rows that `bench/report.py` turns into the
one table of BENCHMARKS.md.

A row is one JSON object per line in ``target/bench-results/<suite>.jsonl``::

    {"area": "digest", "case": "small schema (212 B), Python",
     "ours": {"name": "hw.definition_digest", "value": 1530.2, "unit": "ns"},
     "peer": {"name": "json.dumps + sha256", "value": 9100.0, "unit": "ns"},
     "better": "lower", "goal": {"metric": "ratio", "op": ">=", "value": 10, "text": ">= 10x"},
     "repeats": 7, "note": "..."}

``better`` says which way is good for both values ("lower" for times, "higher"
for rates); the report's ratio is always "how many times better ours is".
``goal.metric`` is ``ratio``, ``ours`` (the value itself) or ``added`` (ours
minus peer: the cost a governed call adds to the bare handler). A row with
``"kind": "fact"`` is a measured observation shown under the table.

Environment: ``BENCH_QUICK=1`` for fewer repeats and shorter samples (a
smoke-sized run: ``BENCH_SMOKE=1``, one repeat of a few iterations, asserts
nothing about speed); ``HW_BENCH_RESULTS`` for the results directory.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("HW_BENCH_RESULTS", ROOT / "target" / "bench-results"))
INPUTS = Path(os.environ.get("HW_BENCH_INPUTS", ROOT / "target" / "bench-inputs"))
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
QUICK = SMOKE or os.environ.get("BENCH_QUICK") == "1"
RUN = os.environ.get("HW_BENCH_RUN", "")
REPEATS = 1 if SMOKE else (3 if QUICK else 7)
SAMPLE_S = 0.002 if SMOKE else (0.05 if QUICK else 0.2)


def median_ns(fn: Callable[[], Any], repeats: int = REPEATS, sample_s: float = SAMPLE_S) -> float:
    """Median over ``repeats`` samples of the ns per call of ``fn``; each
    sample loops ``fn`` for about ``sample_s`` seconds (calibrated once)."""
    fn()
    n = 1
    while True:  # calibrate (and warm up)
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        took = time.perf_counter_ns() - start
        if took >= sample_s * 1e9 / 4 or SMOKE:
            break
        n *= 2
    loops = max(1, int(n * sample_s * 1e9 / max(took, 1)))
    samples: List[float] = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter_ns() - start) / loops)
    return statistics.median(samples)


def value(name: str, v: float, unit: str) -> Dict[str, Any]:
    return {"name": name, "value": v, "unit": unit}


class Results:
    """Collects rows and writes them to ``target/bench-results/<suite>.jsonl``."""

    def __init__(self, suite: str) -> None:
        self.suite = suite
        self.rows: List[Dict[str, Any]] = []

    def row(self, area: str, case: str, ours: Dict[str, Any], peer: Optional[Dict[str, Any]] = None, *,
            better: str = "lower", goal: Optional[Dict[str, Any]] = None, note: str = "",
            repeats: int = REPEATS, headline: bool = False) -> None:
        self.rows.append({"area": area, "case": case, "ours": ours, "peer": peer, "better": better, "goal": goal,
                          "note": note, "repeats": repeats, "headline": headline, "suite": self.suite, "run": RUN, "load": os.getloadavg()[0]})
        self._print(self.rows[-1])

    def fact(self, area: str, text: str) -> None:
        self.rows.append({"kind": "fact", "area": area, "text": text, "suite": self.suite, "run": RUN})
        print(f"  [{area}] {text}")

    @staticmethod
    def _print(r: Dict[str, Any]) -> None:
        o, p = r["ours"], r["peer"]
        line = f"  [{r['area']}] {r['case']}: {o['name']} {o['value']:.4g} {o['unit']}"
        if p:
            line += f"; {p['name']} {p['value']:.4g} {p['unit']}"
            if p["value"] and o["value"]:
                ratio = p["value"] / o["value"] if r["better"] == "lower" else o["value"] / p["value"]
                line += f"; ours {ratio:.3g}x"
        print(line, flush=True)

    def write(self) -> Path:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{self.suite}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for r in self.rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"wrote {len(self.rows)} rows to {path}")
        return path


def ratio_goal(x: float, what: str) -> Dict[str, Any]:
    return {"metric": "ratio", "op": ">=", "value": x, "text": f">= {x:g}x {what}"}


def max_goal(metric: str, ns: float, text: str) -> Dict[str, Any]:
    return {"metric": metric, "op": "<", "value": ns, "text": text}


def pkg_version(dist: str) -> str:
    """The installed version of a distribution (peers are named with it)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def load_inputs(name: str) -> Any:
    path = INPUTS / f"{name}.json"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `python bench/inputs.py` (make bench-inputs) first")
    return json.loads(path.read_text(encoding="utf-8"))
