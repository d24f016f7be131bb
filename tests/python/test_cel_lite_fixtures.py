"""Runs every case of fixtures/cel_lite/*.json through `harnessweaver.cel_lite`,
with the rules of the Rust runner (core/tests/fixtures_cel_lite.rs):

- `{"value": v}`: `evaluate` gives a value whose canonical JSON equals that of `v`;
- `{"unevaluable": true, "reason_contains": s}`: `evaluate` raises `Unevaluable`
  whose reason contains `s` when given;
- `{"compile_error": {"code", "line", "column"}}`: `compile` raises so;
- `{"approval": {"required", "reason_contains"}}`: `approval_required` gives
  `required`, and a reason containing `reason_contains` (none when not given);
- `{"error": code}`: `evaluate` and `approval_required` raise `InvalidValueError`
  with that code.

Variables are decoded from the fixtures' tagged JSON first (fixtures/README.md).

A case this runner cannot run fails; expected failures are listed in
EXPECTED_FAILURES, never skipped."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

import harnessweaver as hw
from fixture_support import cases, read, untag
from harnessweaver import cel_lite

# Cases known to fail in Python, by "<file stem>/<case name>", each with the reason. Keep empty.
EXPECTED_FAILURES: Dict[str, str] = {}


def all_cases() -> List[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    out = []
    for path in cases("cel_lite"):
        doc = read(path)
        for case in doc["cases"]:
            vars_ = untag(case["vars"] if "vars" in case else doc.get("vars", {}))
            out.append((f"{path.stem}/{case['name']}", case, vars_))
    return out


CASES = all_cases()


def check(case: Dict[str, Any], vars_: Dict[str, Any]) -> None:
    expect = case["expect"]
    if "compile_error" in expect:
        with pytest.raises(cel_lite.CompileError) as info:
            program = cel_lite.compile(case["expr"])
            pytest.fail(f"expected compile error {expect['compile_error']}, but it compiled: {program!r}")
        err = info.value
        got = {"code": err.code, "line": err.line, "column": err.column}
        assert got == expect["compile_error"], str(err)
        return
    try:
        program = cel_lite.compile(case["expr"])
    except cel_lite.CompileError as err:
        pytest.fail(f"compile error {err.code}:\n{err}")
    if "error" in expect:
        for run in (program.evaluate, program.approval_required):
            with pytest.raises(hw.InvalidValueError) as bad:
                run(vars_)
            assert bad.value.code == expect["error"], bad.value
        return
    if "approval" in expect:
        want = expect["approval"]
        required, reason = program.approval_required(vars_)
        assert required is want["required"], (required, reason)
        if "reason_contains" in want:
            assert reason is not None and want["reason_contains"] in reason, reason
        else:
            assert reason is None, reason
        return
    if "value" in expect:
        try:
            got = program.evaluate(vars_)
        except cel_lite.Unevaluable as err:
            pytest.fail(f"expected {expect['value']!r}, got unevaluable: {err.reason}")
        assert hw.canonical_json(got) == hw.canonical_json(expect["value"])
        return
    if "unevaluable" in expect:
        with pytest.raises(cel_lite.Unevaluable) as info:
            got = program.evaluate(vars_)
            pytest.fail(f"expected unevaluable, got {got!r}")
        assert info.value.code == "unevaluable"
        if "reason_contains" in expect:
            assert expect["reason_contains"] in info.value.reason, info.value.reason
        return
    pytest.fail(f"unknown expectation {expect!r}")


@pytest.mark.parametrize(("case_id", "case", "vars_"), CASES, ids=[c[0] for c in CASES])
def test_cel_lite_fixture(case_id: str, case: Dict[str, Any], vars_: Dict[str, Any]) -> None:
    if case_id in EXPECTED_FAILURES:
        with pytest.raises(AssertionError):
            check(case, vars_)
    else:
        check(case, vars_)


def test_every_file_has_cases() -> None:
    paths = cases("cel_lite")
    assert paths, "no fixtures in fixtures/cel_lite"
    stems = {case_id.split("/", 1)[0] for case_id, _, _ in CASES}
    assert stems == {p.stem for p in paths}


def test_expected_failures_name_real_cases() -> None:
    ids = {case_id for case_id, _, _ in CASES}
    for case_id in EXPECTED_FAILURES:
        assert case_id in ids, case_id


def test_case_count(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(
            f"\ncel-lite fixtures (Python): {len(CASES)} cases in {len(cases('cel_lite'))} files, "
            f"{len(EXPECTED_FAILURES)} expected failures"
        )
