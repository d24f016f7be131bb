"""Reads criterion's estimates of the Rust benchmarks (the median over its
samples, ns per iteration) and writes them as rows for bench/report.py into
target/bench-results/<suite>.jsonl (the row format: bench/python/benchlib.py).

    python bench/criterion_results.py SUITE [--criterion DIR]

SUITE is one of: governor, cel, digest, validate, transports, load. DIR defaults to
$CRITERION_HOME or target/criterion. A benchmark missing from DIR is an error
(the suite did not run, or its names changed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent / "python"))
from benchlib import INPUTS, ROOT, Results, max_goal, value  # noqa: E402


_INDEX: Dict[str, Path] = {}


def _find(base: Path, full_id: str) -> Path:
    """The directory of benchmark `full_id` (criterion's `group/function`), from its benchmark.json."""
    if not _INDEX:
        for meta in base.glob("**/new/benchmark.json"):
            try:
                _INDEX[json.loads(meta.read_text())["full_id"]] = meta.parent
            except (OSError, KeyError, ValueError):
                continue
    if full_id not in _INDEX:
        raise SystemExit(f"criterion benchmark `{full_id}` not found under {base}: run the criterion benchmark first")
    return _INDEX[full_id]


def median_ns(base: Path, group: str, bench: str) -> float:
    return float(json.loads((_find(base, f"{group}/{bench}") / "estimates.json").read_text())["median"]["point_estimate"])


def samples(base: Path, group: str, bench: str) -> int:
    try:
        return len(json.loads((_find(base, f"{group}/{bench}") / "sample.json").read_text())["iters"])
    except (OSError, KeyError, ValueError):
        return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", choices=["governor", "cel", "digest", "validate", "transports", "load"])
    ap.add_argument("--criterion", default=os.environ.get("CRITERION_HOME", str(ROOT / "target" / "criterion")))
    args = ap.parse_args()
    base = Path(args.criterion)
    res = Results(f"{args.suite}-rust")

    def row(area: str, case: str, group: str, ours: str, ours_name: str, peer: Optional[str], peer_name: str = "",
            goal: Optional[Dict[str, Any]] = None, headline: bool = False, note: str = "") -> None:
        o = median_ns(base, group, ours)
        p = value(peer_name, median_ns(base, group, peer), "ns") if peer else None
        res.row(area, case, value(ours_name, o, "ns"), p, goal=goal, headline=headline, note=note,
                repeats=samples(base, group, ours))

    if args.suite == "governor":
        row("decision path", "governed call, trivial handler (1 KB output), Rust", "governor",
            "governed call, steps 1-9 (1 KB output)", "governed call, steps 1-9", "bare handler (1 KB output)",
            "bare handler", goal=max_goal("added", 1500, "< 1.5 µs added"), headline=True,
            note="ratio = bare / governed; the goal is on the added cost (governed - bare)")
        row("decision path", "governed call + pii_redact + strip_instructions (1 KB output), Rust", "governor",
            "governed call with pii_redact + strip_instructions (1 KB output)", "governed call, both sanitizers",
            "bare handler (1 KB output)", "bare handler")
        row("decision path", "refused at step 4 (scope missing), Rust", "governor", "refused at step 4 (scope missing)",
            "begin, refused", None)
    elif args.suite == "load":
        row("load", "load, 10,000 manifests, Rust", "load", "Runtime::load, 10,000 manifests", "Runtime::load", None,
            goal=max_goal("ours", 5e8, "< 0.5 s"), headline=True,
            note="wall time of one load (read, parse and check every manifest, build the governor), "
                 "the manifests of the Python load rows; `make profile-load` counts its instructions")
    elif args.suite == "cel":
        for peer, name in (("cel_rust_prepared_context", "cel 0.15 (cel-rust), prepared context"),
                           ("cel_rust_per_call_scope", "cel 0.15 (cel-rust), variables bound per call")):
            row("cel-lite", f"approval expression, {name.split(', ')[1]}, Rust", "approval", "cel_lite_borrowed_vars",
                "cel_lite (borrowed vars)", peer, name.split(",")[0])
        row("cel-lite", "compile the approval expression, Rust", "approval", "cel_lite_compile", "cel_lite::compile",
            "cel_rust_compile", "cel 0.15 Program::compile")
    elif args.suite == "digest":
        sizes = json.loads((INPUTS / "digest.json").read_text()) if (INPUTS / "digest.json").exists() else {}
        for size in ("small", "large"):
            b = sizes.get(size, {}).get("bytes")
            label = f"{size} definition ({b:,} B), Rust" if b else f"{size} definition, Rust"
            row("digest", label, "digest", f"{size}_ours", "definition_digest", f"{size}_peer",
                "serde_json::to_vec (sorted keys) + sha2")
    elif args.suite == "validate":
        data = json.loads((INPUTS / "validation.json").read_text())
        n = len(data["cases"])
        for outcome in ("valid", "invalid"):
            o = median_ns(base, "validate", f"{outcome}_ours") / n
            res.row("validation", f"{outcome} args, {n} tools (mean per call), Rust",
                    value("SchemaValidator::check (step 2 alone)", o, "ns"), None,
                    repeats=samples(base, "validate", f"{outcome}_ours"),
                    note="no Rust peer: step 2 is the jsonschema crate; see the Python and Node rows")
    elif args.suite == "transports":
        row("transports", "http call to a local server, Rust", "http", "governed call", "governed call (http transport)",
            "bare ureq POST", "bare ureq POST", note="ratio = bare / governed")
        row("transports", "code call on a warm sandbox worker (`x * 2`), Rust", "code", "warm worker, x * 2",
            "governed call (code transport)", None)
        try:
            row("transports", "mcp tools/call on a warm session (Python SDK server), Rust", "mcp",
                "governed tools/call (python SDK server)", "governed call (mcp transport)", None)
        except SystemExit as e:  # the MCP part needs `make mcp-servers`
            res.fact("transports", f"mcp not measured: {e}")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
