"""What every adapter shares: importing the framework lazily, and the model-facing
tool definitions of a run (the pinned manifests, filtered by what its principal
may call)."""

from __future__ import annotations

import importlib
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, cast

from .._governor import Run
from .._native import HarnessweaverError, InvalidArgumentError, canonical_json


def require(module: str, adapter: str, extra: str, package: str) -> Any:
    """Imports ``module`` or raises an ImportError (code ``framework_missing``)
    naming the pip extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        err = ImportError(f"harnessweaver.adapters.{adapter} needs `{package}`: pip install 'harnessweaver[{extra}]'")
        err.code = "framework_missing"  # type: ignore[attr-defined]  # the same code as the TypeScript adapters'
        raise err from exc


def _invalid(message: str, code: str) -> InvalidArgumentError:
    err = InvalidArgumentError(message)
    err.code = code
    return err


class Spec(NamedTuple):
    """One tool as the model sees it."""

    name: str
    description: str
    parameters: Dict[str, Any]


def specs(h: Any, run: Any, names: Optional[Iterable[str]]) -> List[Spec]:
    """The tools ``run``'s principal may call, from ``h.tool_specs``, in the
    harness's order; ``names`` keeps only those (each must be a tool of ``h``).
    Raises ``InvalidArgumentError`` with code ``invalid_run`` or ``unknown_tool``."""
    if not isinstance(run, Run):
        raise _invalid(f"expected a run from h.run(principal=...), not {type(run).__name__}", "invalid_run")
    if run._harness is not h:
        raise _invalid(f"run `{run.id}` belongs to another harness", "invalid_run")
    wanted = None
    if names is not None:
        wanted = set(names)
        harness: Any = h  # (`run._harness is not h` above narrowed `h` to the mixin)
        unknown = sorted(n for n in wanted if harness.tool(n) is None)
        if unknown:
            raise _invalid(f"the harness has no tool {', '.join(f'`{n}`' for n in unknown)}", "unknown_tool")
    out = []
    for spec in h.tool_specs("openai", principal=run.principal, tenant=run.tenant):
        fn = cast(Dict[str, Any], spec["function"])  # an OpenAI tool spec: {"type": "function", "function": {...}}
        if wanted is None or fn["name"] in wanted:
            out.append(Spec(fn["name"], fn.get("description", ""), fn.get("parameters") or {"type": "object"}))
    return out


def stored_approval(h: Any, run: Run, tool: str, args: Any) -> Optional[Dict[str, Any]]:
    """The harness approval of ``run`` waiting for (or granted to) exactly this
    call, found by tool and arguments: how a call made again (a resumed graph
    node, a restored run state) finds the approval it asked for."""
    try:
        text = canonical_json(args)
    except HarnessweaverError:
        return None
    for approval in h.approvals():
        if approval["run_id"] == run.id and approval["tool"] == tool and canonical_json(approval["args"]) == text:
            return cast(Dict[str, Any], approval)
    return None
