"""cel-lite through the Swift binding's UniFFI surface (driven through UniFFI's
Python bindings generated from the same library, as test_uniffi.py does): every
case of fixtures/cel_lite/*.json with the rules of the Rust runner (variables
decoded from the fixtures' tagged JSON, then sent as JSON text), and the errors. A case this runner cannot run fails; expected failures are listed in
EXPECTED_FAILURES, never skipped."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

import pytest

from test_uniffi import ROOT, uf  # noqa: F401 - `uf` is the module-scoped fixture

sys.path.insert(0, str(ROOT / "tests" / "python"))
from fixture_support import untag  # noqa: E402

FIXTURES = ROOT / "fixtures" / "cel_lite"

# Cases known to fail through UniFFI, by "<file stem>/<case name>", each with the reason. Keep empty.
EXPECTED_FAILURES: Dict[str, str] = {}


def all_cases() -> List[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            out.append((f"{path.stem}/{case['name']}", case, untag(case["vars"] if "vars" in case else doc.get("vars", {}))))
    return out


CASES = all_cases()


def check(uf: ModuleType, case: Dict[str, Any], vars_: Dict[str, Any]) -> None:  # noqa: F811
    expect = case["expect"]
    if "compile_error" in expect:
        with pytest.raises(uf.CelLiteError.Compile) as info:
            uf.cel_lite_compile(case["expr"])
        got = {"code": info.value.code, "line": info.value.line, "column": info.value.column}
        assert got == expect["compile_error"], info.value.rendered
        return
    program = uf.cel_lite_compile(case["expr"])
    vars_json = json.dumps(vars_)
    if "error" in expect:
        for run in (program.evaluate, program.approval_required):
            with pytest.raises(uf.CelLiteError.InvalidVars) as bad:
                run(vars_json)
            assert bad.value.code == expect["error"], bad.value
        return
    if "approval" in expect:
        verdict = program.approval_required(vars_json)
        assert verdict.required == expect["approval"]["required"], verdict
        if "reason_contains" in expect["approval"]:
            assert verdict.reason is not None and expect["approval"]["reason_contains"] in verdict.reason, verdict
        else:
            assert verdict.reason is None, verdict
        return
    outcome = program.evaluate(vars_json)
    if "value" in expect:
        assert isinstance(outcome, uf.CelOutcome.VALUE), outcome
        assert uf.canonical_json(outcome.json) == uf.canonical_json(json.dumps(expect["value"]))
        return
    if "unevaluable" in expect:
        assert isinstance(outcome, uf.CelOutcome.UNEVALUABLE), outcome
        assert expect.get("reason_contains", "") in outcome.reason, outcome.reason
        return
    pytest.fail(f"unknown expectation {expect!r}")


@pytest.mark.parametrize(("case_id", "case", "vars_"), CASES, ids=[c[0] for c in CASES])
def test_cel_lite_fixture(uf: ModuleType, case_id: str, case: Dict[str, Any], vars_: Dict[str, Any]) -> None:  # noqa: F811
    if case_id in EXPECTED_FAILURES:
        with pytest.raises(AssertionError):
            check(uf, case, vars_)
    else:
        check(uf, case, vars_)


def test_program_and_errors(uf: ModuleType) -> None:  # noqa: F811
    program = uf.cel_lite_compile("args.amount_usd > 100 && !('finance' in principal.roles)")
    assert program.names() == ["args", "principal"]
    assert program.source().startswith("args.amount_usd")
    assert program.evaluate('{"args": {"amount_usd": 250}, "principal": {"roles": []}}') == uf.CelOutcome.VALUE(json="true")
    verdict = program.approval_required("{}")
    assert verdict.required is True and verdict.reason == "`args` is not set"
    with pytest.raises(uf.CelLiteError.InvalidVars) as info:
        program.evaluate('{"argz": 1}')
    assert info.value.code == "invalid_vars"
    with pytest.raises(uf.CelLiteError.InvalidVars) as info:
        program.evaluate("[1")
    assert info.value.code == "invalid_json"
    with pytest.raises(uf.CelLiteError.Compile) as info:
        uf.cel_lite_compile("args.a >\n  bogus")
    assert (info.value.code, info.value.line, info.value.column) == ("cel_unknown_name", 2, 3)
    assert info.value.rendered.endswith("    bogus\n    ^")


def test_every_file_has_cases() -> None:
    assert CASES, "no fixtures in fixtures/cel_lite"
    ids = {c[0] for c in CASES}
    for case_id in EXPECTED_FAILURES:
        assert case_id in ids, case_id
