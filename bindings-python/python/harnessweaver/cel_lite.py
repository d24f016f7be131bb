"""cel-lite: the expression language of ``approval.when`` and policy rules,
usable outside a harness (to check an expression, or in tests).

    from harnessweaver import cel_lite
    program = cel_lite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
    program.evaluate({"args": {"amount_usd": 250}, "principal": {"roles": []}})   # True
    program.evaluate({"args": {}}, default=None)   # None: unevaluable
    program.approval_required({"args": {}})   # (True, "no such key `amount_usd` in `args`")

``compile`` raises :class:`CompileError` (``.code``, ``.message``, ``.line``,
``.column``; ``str()`` shows the line with a caret). ``evaluate`` returns plain
Python data or raises :class:`Unevaluable` (``.reason``) unless ``default=`` is
given; ``approval_required`` returns ``(required, reason)``: true, unevaluable or
not a bool means required. ``vars`` maps some of the names in ``NAMES`` to
JSON-like values (another key raises ``InvalidArgumentError``); only the parts
an expression reads are converted, and evaluation is bounded and runs without
the GIL.
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
    cel_compile as compile,  # noqa: A004 - the name the API promises
)

__all__ = ["CompileError", "MAX_DEPTH", "MAX_LENGTH", "NAMES", "Program", "Unevaluable", "compile"]

#: The variable names an expression may use.
NAMES: Tuple[str, ...] = tuple(CEL_NAMES)
