"""Benchmark (not a test): a typical approval expression compiled once and
evaluated against realistic variables through `harnessweaver.cel_lite`, beside
the same expression in the PyPI packages `cel-python` (module `celpy`, pure
Python) and `common-expression-language` (module `cel`, the Rust `cel` crate
behind PyO3), in the same run. Prints ns per evaluation and the ratios.

Run with `make bench-cel-python` (it builds a release wheel of harnessweaver and
installs it and the peers into .venv-bench). Every implementation must give the
same answers on the same variables before it is timed."""

from __future__ import annotations

import platform
import sys
from typing import Any, Callable, Dict, List, Tuple

import harnessweaver
from harnessweaver import cel_lite

from benchlib import REPEATS, Results, median_ns, pkg_version, ratio_goal, value

EXPR = "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"

# What a governor would pass for a refund call: the principal, the tool's facts, the args.
VARS: List[Dict[str, Any]] = [
    {  # an engineer refunding 250 USD: approval required
        "principal": {"id": "u-42", "roles": ["engineer", "oncall"], "scopes": ["tickets:write", "refunds:create"]},
        "tenant": {"id": "acme", "plan": "enterprise", "region": "eu"},
        "tool": {"name": "refund_payment", "risk": "high", "labels": ["payments", "external"]},
        "args": {"order_id": "ord_8812", "amount_usd": 250, "currency": "USD", "reason": "damaged on arrival"},
    },
    {  # finance refunding 250 USD: no approval
        "principal": {"id": "u-7", "roles": ["finance"], "scopes": ["refunds:create"]},
        "tenant": {"id": "acme", "plan": "enterprise", "region": "eu"},
        "tool": {"name": "refund_payment", "risk": "high", "labels": ["payments", "external"]},
        "args": {"order_id": "ord_8813", "amount_usd": 250, "currency": "USD", "reason": "duplicate charge"},
    },
    {  # a small amount on a critical tool: approval required
        "principal": {"id": "u-9", "roles": ["support"], "scopes": []},
        "tenant": {"id": "globex", "plan": "team", "region": "us"},
        "tool": {"name": "wipe_account", "risk": "critical", "labels": ["destructive"]},
        "args": {"order_id": "ord_1", "amount_usd": 12.5, "currency": "USD", "reason": "test"},
    },
]
EXPECTED = [True, False, True]


def timeit(run: Callable[[Dict[str, Any]], Any], rounds: int) -> float:
    """Median ns per evaluation over `rounds` samples (one variable set after another)."""

    def one_loop() -> None:
        for v in VARS:
            run(v)
    return median_ns(one_loop, repeats=rounds) / len(VARS)


def peers() -> List[Tuple[str, Callable[[Dict[str, Any]], Any]]]:
    out: List[Tuple[str, Callable[[Dict[str, Any]], Any]]] = []
    try:
        import celpy  # cel-python

        env = celpy.Environment()
        program = env.program(env.compile(EXPR))

        def run_celpy(v: Dict[str, Any]) -> Any:
            # cel-python evaluates CEL values: converting the variables is part of every call.
            return bool(program.evaluate({k: celpy.json_to_cel(x) for k, x in v.items()}))

        out.append(("cel-python (celpy, pure Python)", run_celpy))
        converted = {id(v): {k: celpy.json_to_cel(x) for k, x in v.items()} for v in VARS}

        def run_celpy_preconverted(v: Dict[str, Any]) -> Any:
            # The most generous reading: the host already holds CEL values.
            return bool(program.evaluate(converted[id(v)]))

        out.append(("cel-python, variables converted once", run_celpy_preconverted))
    except ImportError:
        print("cel-python is not installed (pip install cel-python)", file=sys.stderr)
    try:
        import cel  # common-expression-language

        compiled = cel.compile(EXPR)
        out.append(("common-expression-language (cel crate, PyO3)", compiled.execute))
    except ImportError:
        print("common-expression-language is not installed", file=sys.stderr)
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else REPEATS
    program = cel_lite.compile(EXPR)
    contenders: List[Tuple[str, Callable[[Dict[str, Any]], Any]]] = [
        ("harnessweaver.cel_lite evaluate", program.evaluate),
        ("harnessweaver.cel_lite approval_required", lambda v: program.approval_required(v)[0]),
    ]
    contenders += peers()
    for name, run in contenders:
        got = [bool(run(v)) for v in VARS]
        assert got == EXPECTED, f"{name} gives {got}, expected {EXPECTED}"

    print(f"expression: {EXPR}")
    print(f"python {platform.python_version()} on {platform.machine()}; harnessweaver from {harnessweaver.__file__}")
    print(f"median of {rounds} samples, {len(VARS)} variable sets per loop\n")
    results = [(name, timeit(run, rounds)) for name, run in contenders]
    ours = results[0][1]
    width = max(len(n) for n, _ in results)
    for name, ns in results:
        ratio = "" if name == results[0][0] else f"{ns / ours:8.1f}x slower than cel_lite"
        print(f"  {name:<{width}}  {ns:10.0f} ns/eval  {ratio}")
    celpy_ns = next((ns for n, ns in results if n.startswith("cel-python")), None)
    if celpy_ns is not None:
        verdict = "met" if celpy_ns / ours >= 10 else "NOT met"
        print(f"\ngoal (at least 10x faster than cel-python through the Python binding): {verdict}, {celpy_ns / ours:.0f}x")
    res = Results("cel-python")
    versions = {"cel-python": pkg_version("cel-python"), "common-expression-language": pkg_version("common-expression-language")}
    for name, ns in results[2:]:
        dist = "cel-python" if name.startswith("cel-python") else "common-expression-language"
        res.row("cel-lite", f"approval expression ({len(VARS)} variable sets), vs {name}, Python",
                value("hw.cel_lite evaluate", ours, "ns"), value(f"{dist} {versions[dist]}", ns, "ns"),
                goal=ratio_goal(10, "cel-python") if name.startswith("cel-python (") else None,
                headline=name.startswith("cel-python ("))
    res.write()


if __name__ == "__main__":
    main()
