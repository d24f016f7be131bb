"""Runs every case of fixtures/sanitize/cases.jsonl through the Python binding's
`sanitize(value, sanitizers)` and compares the output exactly: with the gold
output, or, for the cases in fixtures/sanitize/divergences.jsonl, with the
output recorded there (the Rust runner, core/tests/fixtures_sanitize.rs,
checks the same two files, so the languages agree byte for byte).

Every case must run; none is skipped."""

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


def test_sanitize_api() -> None:
    out, counts = hw.sanitize({"ann@example.com": "call +1 415 555 0100", "n": 3}, ["pii_redact"])
    assert out == {"[EMAIL]": "call [PHONE]", "n": 3}
    assert counts == {"EMAIL": 1, "PHONE": 1}
    same, none = hw.sanitize("nothing to see", ("pii_redact", "strip_instructions"))
    assert (same, none) == ("nothing to see", {})
    with pytest.raises(hw.HarnessweaverError) as e:
        hw.sanitize("x", ["scrub_everything"])
    assert e.value.code == "unknown_sanitizer"
    with pytest.raises(hw.HarnessweaverError) as e:
        hw.sanitize(float("nan"), ["pii_redact"])
    assert e.value.code == "non_finite_number"
