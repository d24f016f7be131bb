"""Builds the one table of `make bench` from the rows every benchmark wrote
into target/bench-results/*.jsonl (format: bench/python/benchlib.py), prints
it, and writes BENCHMARKS.md with the machine, the date, the commit and the
command. BENCHMARKS.md is generated: regenerate it with `make bench`, never
edit it by hand.

    python bench/report.py [--results DIR] [--out BENCHMARKS.md] [--run ID] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
AREAS = ["decision path", "audit", "validation", "cel-lite", "digest", "policy (reference)", "load", "sanitizers",
         "concurrency", "store", "transports"]
GOALS = [
    ("decision path", "governed call adds < 1.5 µs in Rust, < 10 µs from Python, < 6 µs from Node (issue 16)"),
    ("validation", "at least 10x Python `jsonschema`"),
    ("cel-lite", "at least 10x `cel-python` from Python; within 2x of `@marcbachmann/cel-js` from Node"),
    ("audit", "an audit sink (JSON Lines, callback) adds < 2 µs per call from Python"),
    ("digest", "Node's digest of a definition at least as fast as fast-json-stable-stringify + crypto"),
    ("load", "10,000 manifests load in under 0.8 s from Python and 0.5 s in Rust"),
]


def fmt(v: float, unit: str) -> str:
    if unit == "ns":
        for scale, u in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if abs(v) >= scale:
                return f"{v / scale:.3g} {u}"
        return f"{v:.3g} ns"
    if unit in ("calls/s", "decisions/s"):
        return f"{v:,.0f} {unit}"
    if unit == "%":
        return f"{v:.0f}%"
    return f"{v:.3g} {unit}"


def ratio_of(r: Dict[str, Any]) -> Optional[float]:
    o, p = r["ours"]["value"], (r.get("peer") or {}).get("value")
    if not p or not o:
        return None
    return p / o if r.get("better", "lower") == "lower" else o / p


def added_of(r: Dict[str, Any]) -> Optional[float]:
    p = r.get("peer")
    return None if not p else r["ours"]["value"] - p["value"]


def judge(r: Dict[str, Any]) -> Tuple[str, str]:
    """(goal text, verdict) of a row."""
    g = r.get("goal")
    if not g:
        return "", ""
    metric = {"ratio": ratio_of(r), "ours": r["ours"]["value"], "added": added_of(r)}.get(g["metric"])
    if metric is None:
        return g["text"], "n/a"
    ok = metric >= g["value"] if g["op"] == ">=" else metric < g["value"]
    return g["text"], "met" if ok else "**missed**"


def ratio_cell(r: Dict[str, Any]) -> str:
    ratio = ratio_of(r)
    if r.get("goal") and r["goal"]["metric"] == "added":
        a = added_of(r)
        return f"+{fmt(a, r['ours']['unit'])} per call" if a is not None else ""
    if ratio is None:
        return ""
    return f"{ratio:.2g}x" if ratio < 10 else f"{ratio:,.0f}x"


def headline_figure(r: Dict[str, Any]) -> str:
    """The figure a goal is judged on, in words."""
    g = r["goal"]
    o, p = r["ours"], r.get("peer")
    if g["metric"] == "added" and p:
        return f"+{fmt(o['value'] - p['value'], o['unit'])} per call ({o['name']} {fmt(o['value'], o['unit'])}, {p['name']} {fmt(p['value'], p['unit'])})"
    if g["metric"] == "ratio" and p:
        return f"{ratio_cell(r)} ({o['name']} {fmt(o['value'], o['unit'])}, {p['name']} {fmt(p['value'], p['unit'])})"
    return f"{fmt(o['value'], o['unit'])} ({o['name']})"


def cell(s: str) -> str:
    return s.replace("|", "\\|")


def machine() -> List[str]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))  # type: ignore[union-attr]
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, AttributeError):
        pass
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip() or str(os.cpu_count())

    def version(cmd: List[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
        except (OSError, subprocess.CalledProcessError, IndexError):
            return "?"

    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- CPU: {model}, `nproc` {nproc}; memory {mem}; {platform.system()} {platform.release()}",
        f"- Load average when the report was written (1/5/15 min): {load} (the machine is shared: absolute times "
        "vary between runs, the ratios compare ours and the peer measured in the same run)",
        f"- Toolchains: {version(['rustc', '--version'])}; Python {platform.python_version()}; Node {version(['node', '--version'])}",
    ]


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.environ.get("HW_BENCH_RESULTS", str(ROOT / "target" / "bench-results")))
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--command", default=os.environ.get("HW_BENCH_COMMAND", "make bench"))
    ap.add_argument("--run", default="", help="only rows of this run (HW_BENCH_RUN); others are listed as left out")
    ap.add_argument("--commit", default="HEAD", help="the commit the rows were measured on (when rebuilding the table later)")
    ap.add_argument("--note", default="", help="a line under the header (for example what the measured commit lacks)")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args()

    rows: List[Dict[str, Any]] = []
    for path in sorted(Path(args.results).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    if not rows:
        print(f"no results in {args.results}: run the benchmarks first (make bench)", file=sys.stderr)
        return 1
    stale = sorted({r["suite"] for r in rows if args.run and r.get("run") != args.run})
    if args.run:
        rows = [r for r in rows if r.get("run") == args.run]
    facts = [r for r in rows if r.get("kind") == "fact"]
    table = [r for r in rows if r.get("kind") != "fact"]
    order = {a: i for i, a in enumerate(AREAS)}
    table.sort(key=lambda r: (order.get(r["area"], len(AREAS)), r["suite"]))

    lines: List[str] = []
    lines.append("| area | case | ours | peer | ratio | goal | met? |")
    lines.append("|---|---|---|---|---:|---|---|")
    verdicts: List[Tuple[Dict[str, Any], str, str]] = []
    for r in table:
        o, p = r["ours"], r.get("peer")
        goal, verdict = judge(r)
        if goal:
            verdicts.append((r, goal, verdict))
        ours = f"{fmt(o['value'], o['unit'])} ({o['name']})"
        peer = f"{fmt(p['value'], p['unit'])} ({p['name']})" if p else "—"
        case = r["case"] + (f" [{r['note']}]" if r.get("note") else "")
        lines.append(f"| {cell(r['area'])} | {cell(case)} | {cell(ours)} | {cell(peer)} | {ratio_cell(r)} | {cell(goal)} | {verdict} |")

    head: List[str] = []
    head.append("<!-- Generated by `make bench` (bench/report.py) from target/bench-results/. Do not edit by hand: "
                "run the command again. -->")
    head.append("# Benchmarks")
    head.append("")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # The files `make bench` itself writes do not count as changes.
    dirty = " (with uncommitted changes)" if args.commit == "HEAD" and git("status", "--porcelain", "--untracked-files=no", "--", ".",
                                                 ":!BENCHMARKS.md", ":!docs/sanitizers.md") else ""
    head.append(f"Generated {now} by `{args.command}` on commit `{git('rev-parse', '--short=12', args.commit)}`{dirty} "
                f"({git('log', '-1', '--format=%s', args.commit)[:100]}).")
    if args.note:
        head.append("")
        head.append(args.note)
    head.append("")
    head += machine()
    loads = [r["load"] for r in table if isinstance(r.get("load"), (int, float))]
    if loads:
        head.append(f"- Load average (1 min) while the rows were measured: {min(loads):.1f} to {max(loads):.1f} "
                    f"(median {sorted(loads)[len(loads) // 2]:.1f}) on {os.cpu_count()} CPUs")
    head.append("")
    head.append("Every row measures ours and its peer in the same run, on the same inputs; times are medians over "
                "repeated samples (criterion's median for Rust rows). **ratio** is how many times better ours is "
                "(peer time / our time, or our rate / the peer's rate); for the decision path it is the cost a "
                "governed call adds to the bare handler. Peers: Python packages in `.venv-bench` "
                "(bench/python/requirements.txt), npm packages in bench/node (package-lock.json).")
    head.append("")
    head.append("## Goals")
    head.append("")
    for area, text in GOALS:
        mine = [(r, v) for r, g, v in verdicts if r["area"] == area]
        if not mine:
            head.append(f"- {area}: {text} — **not measured in this run**")
            continue
        missed = [r for r, v in mine if v != "met"]
        state = "met" if not missed else f"**missed** in {len(missed)} of {len(mine)} rows"
        head.append(f"- {area}: {text} — {state}:")
        for r, v in mine:
            head.append(f"  - {r['case']}: {headline_figure(r)} ({v})")
    head.append("")
    if stale:
        head.append("Left out (rows from an earlier run, their target did not run this time): "
                    + ", ".join(f"`{s}`" for s in stale))
        head.append("")
    head.append("## All results")
    head.append("")
    body = lines
    tail: List[str] = []
    if facts:
        tail.append("")
        tail.append("## Observations (measured in the same run)")
        tail.append("")
        facts.sort(key=lambda r: order.get(r["area"], len(AREAS)))
        tail += [f"- {f['area']}: {f['text']}" for f in facts]
    tail.append("")
    tail.append("Where a goal is missed, bench/README.md notes where the time goes.")
    text = "\n".join(head + body + tail) + "\n"
    # Sections other benchmarks write (the AgentDojo replay, issue 23) are kept as they are.
    old = Path(args.out).read_text(encoding="utf-8") if Path(args.out).exists() else ""
    kept = old.find("\n<!-- kept:")
    if kept >= 0:
        text += old[kept:]
    print("\n".join(body))
    print()
    print("\n".join(head[head.index("## Goals"):head.index("## All results")]))
    if not args.no_write:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
