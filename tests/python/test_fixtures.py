"""Runs every case of fixtures/canonical/, fixtures/digest/ and fixtures/load/
through the Python binding. A case this runner cannot run fails; expected
failures are listed in EXPECTED_FAILURES, never skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict

import pytest

import harnessweaver as hw
from fixture_support import FIXTURES, cases, load_case_dirs, read, rel, untag

# Cases known to fail in Python, by "<area>/<case>", each with the reason. Keep empty.
EXPECTED_FAILURES: Dict[str, str] = {}


def run_expecting(case_id: str, expect: Dict[str, Any], key: str, compute: Callable[[], Any]) -> None:
    def check() -> None:
        if "error" in expect:
            with pytest.raises(hw.HarnessweaverError) as info:
                got = compute()
                pytest.fail(f"expected error `{expect['error']}`, got {got!r}")
            assert info.value.code == expect["error"], str(info.value)
        else:
            assert set(expect) == {key}, f"unknown expectation {expect!r}"
            assert compute() == expect[key]

    if case_id in EXPECTED_FAILURES:
        with pytest.raises(AssertionError):
            check()
    else:
        check()


@pytest.mark.parametrize("path", cases("canonical"), ids=lambda p: p.stem)
def test_canonical(path: Path) -> None:
    case = read(path)
    run_expecting(f"canonical/{path.stem}", case["expect"], "canonical", lambda: hw.canonical_json(untag(case["value"])))


@pytest.mark.parametrize("path", cases("digest"), ids=lambda p: p.stem)
def test_digest(path: Path) -> None:
    case = read(path)
    run_expecting(
        f"digest/{path.stem}",
        case["expect"],
        "digest",
        lambda: hw.definition_digest(
            case["name"], case["tool_description"], untag(case["input_schema"]), untag(case.get("output_schema"))
        ),
    )


@pytest.mark.parametrize("case_dir", load_case_dirs(), ids=lambda p: p.name)
def test_load(case_dir: Path) -> None:
    expected = read(case_dir / "expected.json")
    harness_path = case_dir / expected.get("harness", "harness.yaml")

    def check() -> None:
        assert "tools" in expected or "problems" in expected, "expected.json has neither `tools` nor `problems`"
        if "problems" in expected:
            with pytest.raises(hw.LoadError) as info:
                hw.inspect(harness_path)
            got = []
            for want, problem in zip(expected["problems"], info.value.problems):
                d = problem.to_dict()
                d["file"] = rel(d["file"], case_dir)
                got.append({k: d.get(k) for k in want})
            got += [p.to_dict() for p in info.value.problems[len(expected["problems"]) :]]
            assert got == expected["problems"], str(info.value)
        else:
            assert set(expected) - {"description", "harness"} == {"tools"}, f"unknown expectation {expected!r}"
            harness = hw.inspect(harness_path)
            assert [t.describe() for t in harness.tools] == expected["tools"]

    if f"load/{case_dir.name}" in EXPECTED_FAILURES:
        with pytest.raises(AssertionError):
            check()
    else:
        check()


def test_every_area_has_cases() -> None:
    assert cases("canonical"), "no fixtures in fixtures/canonical"
    assert cases("digest"), "no fixtures in fixtures/digest"
    assert load_case_dirs(), "no fixtures in fixtures/load"


def test_expected_failures_name_real_cases() -> None:
    for case_id in EXPECTED_FAILURES:
        area, name = case_id.split("/", 1)
        assert (FIXTURES / area / f"{name}.json").exists() or (FIXTURES / area / name).is_dir(), case_id
