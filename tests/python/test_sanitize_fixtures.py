"""Runs every case of fixtures/sanitize/cases.jsonl through the Python binding's
`sanitize(value, sanitizers)` and compares the output exactly: with the gold
output, or, for the cases in fixtures/sanitize/divergences.jsonl, with the
output recorded there (the Rust runner, core/tests/fixtures_sanitize.rs,
checks the same two files, so the languages agree byte for byte).

Until the binding exposes `sanitize` (see docs/sanitizers.md, "What the
bindings need"), the test is skipped with that reason, visibly."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import harnessweaver as hw
from fixture_support import FIXTURES

# Cases known to fail in Python only, by id, each with the reason. Keep empty.
EXPECTED_FAILURES: Dict[str, str] = {}


def read_jsonl(name: str) -> List[Dict[str, Any]]:
    with open(FIXTURES / "sanitize" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_sanitize_corpus() -> None:
    if not hasattr(hw, "sanitize"):
        pytest.skip("the Python binding has no sanitize() yet (docs/sanitizers.md: what the bindings need)")
    cases = read_jsonl("cases.jsonl")
    recorded = {d["id"]: d["output"] for d in read_jsonl("divergences.jsonl")}
    assert len(cases) >= 3000
    failures = []
    for case in cases:
        out, _counts = hw.sanitize(case["input"], case["sanitizers"])
        want = recorded.get(case["id"], case["expected"])
        ok = out == want
        if case["id"] in EXPECTED_FAILURES:
            ok = not ok
        if not ok:
            failures.append(f"{case['id']}: expected {want!r}, got {out!r}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:50])
