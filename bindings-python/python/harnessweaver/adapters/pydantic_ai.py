"""The Pydantic AI adapter (``pip install 'harnessweaver[pydantic-ai]'``, needs only
``pydantic-ai-slim``).

    from pydantic_ai import Agent, DeferredToolRequests
    from harnessweaver.adapters import pydantic_ai as hwa

    agent = Agent(model, tools=hwa.tools(h, h.run(principal=user)),
                  output_type=[str, DeferredToolRequests])
    result = await agent.run("Refund order A-1002")
    if isinstance(result.output, DeferredToolRequests):          # calls waiting for a human
        decided = hwa.approve(h, result.output, approver=finance_user)   # or hwa.reject(...)
        result = await agent.run(message_history=result.all_messages(), deferred_tool_results=decided)

Each tool is a ``pydantic_ai.Tool`` (``Tool.from_schema``) with the pinned
manifest's name, description and JSON schema; a call runs through the governor
within the run and returns the core's text for the model (the ``CallResult`` is
the ``ToolReturn``'s metadata, which the model does not see). Refusals use
Pydantic AI's tool errors: arguments that fail the schema raise ``ModelRetry``
(the model may correct them), every other refusal raises ``ToolFailed``; both
carry ``[tool call refused: <code>] <message>``. A call that needs approval
raises Pydantic AI's ``ApprovalRequired`` with the harness approval in its
metadata, so the run ends with ``DeferredToolRequests``; :func:`approve` grants
the harness approvals and returns the ``DeferredToolResults`` to resume with
(the handler then runs once); :func:`reject` denies them.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, cast

from .._governor import Run
from ._common import Spec, require, specs

__all__ = ["tools", "approve", "reject"]

_ADAPTER = ("pydantic_ai", "pydantic-ai", "pydantic-ai-slim")
_KEY = "harnessweaver_approval"  # the approval id, in the deferred call's metadata


def _pydantic_ai() -> Any:
    return require("pydantic_ai", *_ADAPTER)


def tools(h: Any, ctx: Run, *, names: Optional[Iterable[str]] = None) -> List[Any]:
    """The tools ``ctx``'s principal may call, as ``pydantic_ai.Tool`` objects
    whose calls go through the governor within run ``ctx`` (from ``h.run(...)``).
    ``names`` keeps only those tools."""
    pai = _pydantic_ai()
    return [
        pai.Tool.from_schema(_function(pai, ctx, spec), spec.name, spec.description, spec.parameters, takes_ctx=True)
        for spec in specs(h, ctx, names)
    ]


def _function(pai: Any, run: Run, spec: Spec) -> Any:
    async def call(ctx: Any, **args: Any) -> Any:
        approval = None
        if ctx.tool_call_approved and isinstance(ctx.tool_call_metadata, dict):
            approval = ctx.tool_call_metadata.get(_KEY)
        result = await run.acall(spec.name, args, approval=approval, raise_on_refusal=False)
        if result.allowed:
            return pai.ToolReturn(return_value=result.to_model(), metadata=result.to_dict())
        if result.decision == "pending":
            found = cast(Dict[str, Any], result.approval)
            raise pai.ApprovalRequired(
                metadata={
                    _KEY: found["id"],
                    "approver_role": found.get("approver_role"),
                    "reasons": list(found.get("reasons") or []),
                    "code": result.code,
                }
            )
        if result.step == "validate":
            raise pai.ModelRetry(result.to_model())
        raise pai.ToolFailed(result.to_model())

    call.__name__ = spec.name
    return call


def _ours(requests: Any, only: Optional[Iterable[str]]) -> List[Any]:
    wanted = None if only is None else set(only)
    out = []
    for part in requests.approvals:
        meta = requests.metadata.get(part.tool_call_id) or {}
        if _KEY in meta and (wanted is None or part.tool_call_id in wanted):
            out.append((part, meta[_KEY]))
    return out


def approve(h: Any, requests: Any, *, approver: Any, only: Optional[Iterable[str]] = None) -> Any:
    """Grants the harness approvals of ``requests`` (a ``DeferredToolRequests``;
    ``only`` limits it to those tool call ids) as ``approver``, who must hold each
    tool's ``approver_role`` (else ``HarnessweaverError`` with code
    ``approver_not_allowed``). Returns the ``DeferredToolResults`` to pass as
    ``deferred_tool_results=`` with the run's messages; each approved call then
    runs its handler once. Calls that are not harness approvals are left out."""
    pai = _pydantic_ai()
    results = pai.DeferredToolResults()
    for part, approval in _ours(requests, only):
        h.grant(approval, approver=approver)
        results.approvals[part.tool_call_id] = True
        results.metadata[part.tool_call_id] = {_KEY: approval}
    return results


def reject(h: Any, requests: Any, *, by: Any, reason: str = "", only: Optional[Iterable[str]] = None) -> Any:
    """Denies the harness approvals of ``requests`` (recorded with ``by`` and
    ``reason``; ``only`` limits it to those tool call ids). Returns the
    ``DeferredToolResults`` whose ``ToolDenied`` messages are the core's
    ``approval_denied`` refusals; the handlers never run."""
    pai = _pydantic_ai()
    results = pai.DeferredToolResults()
    waiting: Dict[str, Dict[str, Any]] = {a["id"]: a for a in h.approvals()}
    for part, approval in _ours(requests, only):
        entry = waiting.get(approval)
        h.deny(approval, reason, by=by)
        message = None
        if entry is not None:
            # The call presenting the denied approval is refused by the core (and audited): its text is the denial.
            refused = h.call(
                entry["tool"],
                entry["args"],
                principal=entry["principal"],
                tenant=entry["tenant"],
                task=entry["task"],
                run=entry["run_id"],
                approval=approval,
                raise_on_refusal=False,
            )
            message = refused.to_model()
        results.approvals[part.tool_call_id] = pai.ToolDenied(message) if message else False
    return results
