"""`harnessweaver.cel_lite` from a user's side: the API, and hostile expressions
and arguments (10 MB strings, million-item lists, deep nesting, catastrophic
patterns, unknown names, values with no JSON form). Each gives a clear
`CompileError`, `Unevaluable` or `InvalidValueError` in bounded time, never a
crash or a hang. `harnessweaver doctor` reports cel-lite problems with places."""

from __future__ import annotations

import datetime
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import harnessweaver as hw
from fixture_support import FIXTURES
from harnessweaver import cel_lite

APPROVAL = "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"
VARS = {
    "args": {"amount_usd": 250, "currency": "USD"},
    "principal": {"id": "u-1", "roles": ["engineer"]},
    "tool": {"name": "refund_payment", "risk": "high"},
}
# Generous for a debug build on a busy machine; the point is "bounded", not "fast".
BOUND_SECONDS = 20.0


def bounded(f: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    try:
        return f()
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < BOUND_SECONDS, f"took {elapsed:.1f}s"


def unevaluable(expr: str, vars_: Dict[str, Any]) -> str:
    program = cel_lite.compile(expr)
    with pytest.raises(cel_lite.Unevaluable) as info:
        bounded(lambda: program.evaluate(vars_))
    assert info.value.code == "unevaluable"
    assert str(info.value) == info.value.reason
    required, reason = bounded(lambda: program.approval_required(vars_))
    assert required is True and reason, reason
    return info.value.reason


def compile_error(expr: str) -> cel_lite.CompileError:
    with pytest.raises(cel_lite.CompileError) as info:
        bounded(lambda: cel_lite.compile(expr))
    return info.value


# --- API ---------------------------------------------------------------------------------------


def test_compile_and_evaluate() -> None:
    program = cel_lite.compile(APPROVAL)
    assert isinstance(program, cel_lite.Program)
    assert program.source == APPROVAL
    assert program.names == ["args", "principal", "tool"]
    assert program.evaluate(VARS) is True
    assert program.approval_required(VARS) == (True, None)
    finance = dict(VARS, principal={"roles": ["finance"]})
    assert program.evaluate(finance) is False
    assert program.approval_required(finance) == (False, None)
    assert cel_lite.compile("[1, 2.5, 'x', null, {'a': true}]").evaluate() == [1, 2.5, "x", None, {"a": True}]
    assert cel_lite.compile("{1: 'a'}").evaluate({}) == {"1": "a"}
    assert isinstance(cel_lite.compile("2.0").evaluate(), float)
    assert cel_lite.NAMES == ("principal", "tenant", "task", "tool", "args", "labels", "run")
    assert "Program(" in repr(program)


def test_vars_may_be_any_mapping_and_only_used_names_are_converted() -> None:
    from types import MappingProxyType

    program = cel_lite.compile("args.x + 1")
    assert program.evaluate(MappingProxyType({"args": {"x": 1}})) == 2
    # `tenant` is not used, so its value (no JSON form) is never converted.
    assert program.evaluate({"args": {"x": 1}, "tenant": object()}) == 2


def test_only_the_parts_of_a_variable_an_expression_reads_are_converted() -> None:
    # A selection chain reads one field of each dict on its way; any other use reads the whole value.
    when = datetime.datetime(2026, 1, 1)
    args = {"amount_usd": 250, "when": when, "nested": {"a": 1, "f": print}, 7: "int key"}
    assert cel_lite.compile("args.amount_usd > 100").evaluate({"args": args}) is True
    assert cel_lite.compile("args.nested.a == 1 && has(args.nested.a)").evaluate({"args": args}) is True
    assert cel_lite.compile("args.nested.zz == 1").approval_required({"args": args}) == (
        True,
        "no such key `zz` in `args.nested`",
    )
    for expr, code in [
        ("size(args) > 1", "unsupported_type"),
        ("args.amount_usd > 1 && args.nested == {}", "unsupported_type"),
        ("args.when == 1", "unsupported_type"),
        ("has(args.when)", "unsupported_type"),
    ]:
        with pytest.raises(hw.InvalidValueError) as info:
            cel_lite.compile(expr).evaluate({"args": args})
        assert info.value.code == code, expr
    # Not a dict: converted whole, so the evaluation reports its type (or the conversion its lack of a JSON form).
    assert cel_lite.compile("args.a.b == 1").approval_required({"args": {"a": "text"}}) == (
        True,
        "cannot select `b` from `args.a`, a string",
    )
    with pytest.raises(hw.InvalidValueError):
        cel_lite.compile("args.a == 1").evaluate({"args": when})


def test_unevaluable_raises_or_gives_the_default() -> None:
    program = cel_lite.compile("args.amount_usd > 100")
    with pytest.raises(cel_lite.Unevaluable) as info:
        program.evaluate({"args": {}})
    err = info.value
    assert isinstance(err, hw.HarnessweaverError)
    assert err.code == "unevaluable"
    assert "no such key `amount_usd` in `args`" == err.reason
    assert program.evaluate({"args": {}}, default=None) is None
    assert program.evaluate({"args": {}}, default="fallback") == "fallback"
    assert program.evaluate({"args": {"amount_usd": 5}}, default="fallback") is False
    assert program.approval_required({}) == (True, "`args` is not set")
    assert cel_lite.compile("args.amount_usd").approval_required({"args": {"amount_usd": 1}})[0] is True
    with pytest.raises(TypeError, match="defualt"):
        program.evaluate({"args": {}}, defualt=1)


def test_compile_error_carries_code_place_and_caret() -> None:
    err = compile_error("args.amount_usd > 100 &&\n  bogus.x")
    assert isinstance(err, hw.HarnessweaverError)
    assert type(err).__module__ == "harnessweaver.cel_lite" and type(err).__name__ == "CompileError"
    assert (err.code, err.line, err.column) == ("cel_unknown_name", 2, 3)
    assert err.message.startswith("unknown name `bogus`")
    assert str(err) == f"line 2, column 3: {err.message}\n    bogus.x\n    ^"
    assert [p.to_dict() for p in err.problems] == [
        {"code": "cel_unknown_name", "message": err.message, "file": None, "line": 2, "column": 3, "path": ""}
    ]
    for expr, code, hint in [
        ("args.a and args.b", "cel_syntax", "&&"),
        ("args.a = 1", "cel_syntax", "=="),
        ("len(args.a)", "cel_unknown_function", "size"),
        ("args.a.startswith('x')", "cel_unknown_function", "startsWith"),
        ("args.a == True", "cel_unknown_name", "true"),
        ("args.a.matches('(')", "cel_bad_regex", ""),
        ("size()", "cel_wrong_arguments", ""),
        ("", "cel_syntax", ""),
    ]:
        err = compile_error(expr)
        assert err.code == code, (expr, str(err))
        assert hint in err.message, (expr, err.message)


def test_bad_arguments_are_clear_errors() -> None:
    program = cel_lite.compile("args")
    with pytest.raises(hw.InvalidArgumentError, match="`argz`|'argz'") as info:
        program.evaluate({"argz": {}})
    assert info.value.code == "invalid_vars"
    with pytest.raises(hw.InvalidArgumentError):
        program.evaluate([("args", 1)])  # type: ignore[arg-type]
    with pytest.raises(hw.InvalidArgumentError):
        program.evaluate({1: 2})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        cel_lite.compile(42)  # type: ignore[arg-type]
    for bad, code in [
        (2**70, "integer_out_of_range"),
        (float("nan"), "non_finite_number"),
        (float("inf"), "non_finite_number"),
        ({1: 2}, "non_string_key"),
        (datetime.date(2026, 1, 1), "unsupported_type"),
        ({1, 2}, "unsupported_type"),
        ("\ud800", "invalid_string"),
    ]:
        with pytest.raises(hw.InvalidValueError) as info:
            program.evaluate({"args": bad})
        assert info.value.code == code, (bad, info.value)


def test_programs_are_shared_between_threads() -> None:
    program = cel_lite.compile("args.n * 2")
    results: List[Any] = []

    def work(n: int) -> None:
        results.extend(program.evaluate({"args": {"n": n}}) for _ in range(200))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(set(results)) == [0, 2, 4, 6]


def test_evaluation_releases_the_gil() -> None:
    # Nested macros over literals: no input to convert, all the time in the core.
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expr = ten
    for name in "abcdefg":
        expr = f"{ten}.all({name}, {expr if name != 'a' else 'true'} != null)"
    program = cel_lite.compile(expr)
    done = threading.Event()
    took: List[float] = []

    def run() -> None:
        start = time.perf_counter()
        program.evaluate({}, default=None)
        took.append(time.perf_counter() - start)
        done.set()

    thread = threading.Thread(target=run)
    ticks, last, worst = 0, time.perf_counter(), 0.0
    thread.start()
    while not done.is_set():
        now = time.perf_counter()
        worst, last, ticks = max(worst, now - last), now, ticks + 1
    thread.join()
    if took[0] > 0.3:  # only meaningful when the evaluation takes a while
        assert worst < took[0] / 2, f"main thread stalled {worst:.3f}s of {took[0]:.3f}s"


# --- hostile arguments -------------------------------------------------------------------------

BIG = "a" * 10_000_000
MILLION = list(range(1_000_000))


def test_ten_megabyte_strings() -> None:
    args = {"args": {"note": BIG, "pattern": "(a{1000}){1000}"}}
    assert bounded(lambda: cel_lite.compile("size(args.note)").evaluate(args)) == 10_000_000
    assert bounded(lambda: cel_lite.compile("args.note.contains('b')").evaluate(args)) is False
    assert bounded(lambda: cel_lite.compile("args.note.startsWith('aaa')").evaluate(args)) is True
    assert "exceed" in unevaluable("args.note + args.note", args)
    assert "limit" in unevaluable("args.note.matches(args.pattern)", args)


def test_million_item_lists() -> None:
    args = {"args": {"items": MILLION}}
    assert bounded(lambda: cel_lite.compile("args.items.exists(i, i == -1)").evaluate(args)) is False
    assert bounded(lambda: cel_lite.compile("-1 in args.items").evaluate(args)) is False
    assert bounded(lambda: cel_lite.compile("size(args.items.filter(x, x % 2 == 0))").evaluate(args)) == 500_000
    assert "limit" in unevaluable("args.items.map(x, args.items.map(y, y))", args)
    assert "limit" in unevaluable("args.items.exists(x, args.items.exists(y, x == y + 1000000))", args)
    assert "exceed" in unevaluable("args.items + args.items", args)


def test_catastrophic_patterns_run_in_linear_time() -> None:
    args = {"args": {"note": "a" * 100_000 + "!"}}
    for pattern in ["(a+)+$", "^(a|aa)+$", "(a|a)*b", "^(a*)*$"]:
        assert bounded(lambda pattern=pattern: cel_lite.compile(f"args.note.matches('{pattern}')").evaluate(args)) is False
    assert compile_error("args.note.matches('a{1000}{1000}{1000}')").code == "cel_bad_regex"
    assert compile_error("args.note.matches('" + "(" * 100 + "a" + ")" * 100 + "')").code == "cel_bad_regex"


def test_deep_nesting() -> None:
    err = compile_error("(" * 2000 + "1" + ")" * 2000)
    assert (err.code, err.line, err.column) == ("cel_too_deep", 1, 65)
    assert compile_error("(" * 100_000 + "1" + ")" * 100_000).code == "cel_too_large"
    assert compile_error("!" * 3000 + "true").code == "cel_too_deep"
    assert compile_error("[" * 100 + "]" * 100).code == "cel_too_deep"
    assert compile_error("-" * 1000 + "1").code == "cel_too_deep"
    deep: Any = 1
    for _ in range(400):
        deep = {"k": deep}
    assert "nests deeper" in unevaluable("args", {"args": deep})
    assert cel_lite.compile("has(args.k.k.k)").evaluate({"args": deep}) is True
    deeper: Any = 1
    for _ in range(2000):
        deeper = [deeper]
    with pytest.raises(hw.InvalidValueError) as info:
        cel_lite.compile("args").evaluate({"args": deeper})
    assert info.value.code == "nesting_too_deep"


def test_huge_expressions_and_literals() -> None:
    assert compile_error("x" * 10_000_000).code == "cel_too_large"
    assert compile_error("'" + "a" * 5000 + "'").code == "cel_too_large"
    err = compile_error("args.a ||\n" * 500 + "true")
    assert err.code == "cel_too_large"
    blowup = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expr = "1"
    for name in "abcdefg":
        expr = f"{blowup}.map({name}, {expr})"
    assert "limit" in unevaluable(expr, {})
    doubling = "'abcdefgh'"
    for _ in range(30):
        doubling = f"({doubling} + {doubling})" if len(doubling) < 1500 else doubling
    program = cel_lite.compile(doubling)
    bounded(lambda: program.evaluate({}, default=None))


def test_unknown_names_and_functions_fail_at_compile_time() -> None:
    for expr, code, column in [
        ("request.amount > 1", "cel_unknown_name", 1),
        ("args.a > 1 || env.HOME == ''", "cel_unknown_name", 15),
        ("len(args.x) > 1", "cel_unknown_function", 1),
        ("args.x.lower() == 'a'", "cel_unknown_function", 8),
        ("timestamp('2020-01-01T00:00:00Z')", "cel_unknown_function", 1),
        ("b'abc'", "cel_unsupported", 1),
    ]:
        err = compile_error(expr)
        assert (err.code, err.column) == (code, column), (expr, str(err))
    # Unbound (known but not given) names are unevaluable, not errors.
    assert unevaluable("tenant.id == 'acme'", {}) == "`tenant` is not set"


# --- doctor ------------------------------------------------------------------------------------


def test_doctor_reports_cel_lite_problems_with_places() -> None:
    harness = FIXTURES / "load" / "cel_compile_errors" / "harness.yaml"
    script = Path(sys.executable).parent / "harnessweaver"
    out = subprocess.run([str(script), "doctor", str(harness)], capture_output=True, text=True, check=False)
    assert out.returncode == 1, out.stderr
    text = out.stdout + out.stderr
    base = str(harness.parent)
    for place, code in [
        ("harness.yaml:10:54: spec.policy.rules[0].when", "cel_syntax"),
        ("tools/a.yaml:6:39: spec.approval.when", "cel_syntax"),
        ("tools/b.yaml:7:11: spec.approval.when", "cel_unknown_name"),
        ("tools/c.yaml:9:7: spec.approval.when", "cel_unknown_function"),
    ]:
        line = next((row for row in text.splitlines() if f"{base}/{place}" in row), None)
        assert line is not None, f"doctor does not name {place}:\n{text}"
        assert f"[{code}]" in line, line
    assert "unknown name `request`" in text
