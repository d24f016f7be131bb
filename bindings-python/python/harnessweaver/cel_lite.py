"""cel-lite: the expression language of ``approval.when`` and policy rules,
usable outside a harness (to check an expression, or in tests).

    from harnessweaver import cel_lite
    program = cel_lite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
    program.evaluate({"args": {"amount_usd": 250}, "principal": {"roles": []}})   # True
    program.approval_required({"args": {}})   # (True, "no such key `amount_usd` in `args`")

``compile(text)`` returns a :class:`Program` or raises :class:`CompileError`
(``.code`` such as ``cel_syntax``, ``.message``, 1-based ``.line`` and
``.column``; ``str()`` is the message with the expression's line and a caret).

``Program.evaluate(vars)`` returns the value as plain Python data (dict, list,
str, int, float, bool, None) or raises :class:`Unevaluable` (``.reason`` names
the part that failed: a missing key, a wrong type, an overflow, a cost limit).
``evaluate(vars, default=x)`` returns ``x`` instead of raising.
``Program.approval_required(vars)`` applies the approval rule and returns
``(required, reason)``: true, unevaluable or not a bool means required.

``vars`` maps some of the names ``principal``, ``tenant``, ``task``, ``tool``,
``args``, ``labels`` to JSON-like values; a name left out is unbound (using it
is unevaluable); any other key raises :class:`~harnessweaver.InvalidArgumentError`.
Only the names the expression uses are converted. Evaluation is bounded (cost,
memory, string and list sizes) and runs without the GIL.
"""

from __future__ import annotations

from typing import Tuple

from ._native import (
    CEL_MAX_DEPTH as MAX_DEPTH,
    CEL_MAX_LENGTH as MAX_LENGTH,
    CEL_NAMES,
    CelCompileError as CompileError,
    CelProgram as Program,
    CelUnevaluable as Unevaluable,
    cel_compile as _compile,
)

__all__ = ["CompileError", "MAX_DEPTH", "MAX_LENGTH", "NAMES", "Program", "Unevaluable", "compile"]

#: The variable names an expression may use.
NAMES: Tuple[str, ...] = tuple(CEL_NAMES)


def compile(text: str) -> Program:  # noqa: A001 - the name the API promises
    """Compiles a cel-lite expression (at most ``MAX_LENGTH`` bytes, nesting at most
    ``MAX_DEPTH``). Raises :class:`CompileError` with ``.code``, ``.line`` and ``.column``."""
    return _compile(text)
