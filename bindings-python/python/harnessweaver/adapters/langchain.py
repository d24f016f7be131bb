"""The LangChain adapter (``pip install 'harnessweaver[langchain]'``, needs only
``langchain-core``).

    from harnessweaver.adapters import langchain as hwa

    tools = {t.name: t for t in hwa.tools(h, h.run(principal=user))}
    llm = chat_model.bind_tools(list(tools.values()))
    ...
    for call in reply.tool_calls:
        try:
            messages.append(tools[call["name"]].invoke(call))    # a ToolMessage
        except hwa.ApprovalPending as pending:                   # waits for a human
            messages.append(hwa.approve(h, pending, approver=finance_user))

Each tool is a ``StructuredTool`` with the pinned manifest's name, description and
JSON schema (``args_schema``); a call runs through the governor within the run,
and its ``ToolMessage`` holds the core's text for the model (``content``) and
the ``CallResult`` (``artifact``). A refusal raises ``ToolException`` with the core's text, which the tool turns
into a ``ToolMessage`` with ``status="error"`` and content ``[tool call refused:
<code>] <message>``. A call that needs approval raises :class:`ApprovalPending`
(an ``hw.ApprovalRequired`` carrying the tool call id), which stops the
tool-calling loop; :func:`approve` runs the approved call (the handler runs
once) and :func:`reject` denies it, each returning the ``ToolMessage`` to append.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from .._governor import ApprovalRequired, Run
from ._common import Spec, require, specs

__all__ = ["ApprovalPending", "tools", "approve", "aapprove", "reject"]

_ADAPTER = ("langchain", "langchain", "langchain-core")


class ApprovalPending(ApprovalRequired):
    """A tool call waiting for a human: ``.approval`` (the harness approval, with
    ``id`` and ``approver_role``), ``.tool_call_id`` (the model's call id),
    ``.tool``, ``.arguments`` and ``.run``. Pass it to :func:`approve` or :func:`reject`."""

    def __init__(self, blocked: ApprovalRequired, run: Run, args: Dict[str, Any], tool_call_id: Optional[str]) -> None:
        super().__init__(blocked.result)
        self.run = run
        self.tool = blocked.result.tool
        self.arguments = args
        self.tool_call_id = tool_call_id


_TOOL_CLASS: Any = None


def _tool_class() -> Any:
    """``StructuredTool`` with the governor's approval stop, made on first use
    (so importing this module does not import LangChain)."""
    global _TOOL_CLASS
    if _TOOL_CLASS is not None:
        return _TOOL_CLASS
    tools_mod = require("langchain_core.tools", *_ADAPTER)

    class GovernedTool(tools_mod.StructuredTool):  # type: ignore[misc, valid-type]
        """A harness tool; an approval-pending call raises :class:`ApprovalPending`."""

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            try:
                return super().invoke(input, config, **kwargs)
            except ApprovalPending as pending:
                raise _with_call_id(pending, input) from None

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            try:
                return await super().ainvoke(input, config, **kwargs)
            except ApprovalPending as pending:
                raise _with_call_id(pending, input) from None

    _TOOL_CLASS = GovernedTool
    return GovernedTool


def _with_call_id(pending: ApprovalPending, input: Any) -> ApprovalPending:
    if isinstance(input, dict) and input.get("type") == "tool_call":
        pending.tool_call_id = input.get("id")
    return pending


def tools(h: Any, ctx: Run, *, names: Optional[Iterable[str]] = None) -> List[Any]:
    """The tools ``ctx``'s principal may call, as LangChain ``StructuredTool``
    objects whose calls go through the governor within run ``ctx`` (from
    ``h.run(...)``). ``names`` keeps only those tools."""
    cls = _tool_class()
    return [_tool(cls, ctx, spec) for spec in specs(h, ctx, names)]


def _tool(cls: Any, run: Run, spec: Spec) -> Any:
    tools_mod = require("langchain_core.tools", *_ADAPTER)

    def settle(result: Any, args: Dict[str, Any]) -> Any:
        if result.allowed:
            return result.to_model(), result
        if result.decision == "pending":
            raise ApprovalPending(ApprovalRequired(result), run, args, None)
        raise tools_mod.ToolException(result.to_model())

    def call(**args: Any) -> Any:
        return settle(run.call(spec.name, args, raise_on_refusal=False), args)

    async def acall(**args: Any) -> Any:
        return settle(await run.acall(spec.name, args, raise_on_refusal=False), args)

    return cls(name=spec.name, description=spec.description, args_schema=spec.parameters, func=call,
               coroutine=acall, handle_tool_error=True, response_format="content_and_artifact")


def _message(pending: ApprovalPending, result: Any) -> Any:
    messages = require("langchain_core.messages", *_ADAPTER)
    content = result.to_model()
    return messages.ToolMessage(content=content, artifact=result, tool_call_id=pending.tool_call_id or "",
                                name=pending.tool, status="success" if result.allowed else "error")


def approve(h: Any, pending: ApprovalPending, *, approver: Any, args: Optional[Dict[str, Any]] = None) -> Any:
    """Grants ``pending``'s approval as ``approver`` (who must hold the tool's
    ``approver_role``; raises ``HarnessweaverError`` with code
    ``approver_not_allowed`` otherwise) and runs the call (``args`` replaces the
    arguments with the approver's edit, checked again). Returns the
    ``ToolMessage`` to append for the model: the output, or the refusal."""
    return _message(pending, h.approve(pending.approval["id"], approver=approver, args=args, raise_on_refusal=False))


async def aapprove(h: Any, pending: ApprovalPending, *, approver: Any, args: Optional[Dict[str, Any]] = None) -> Any:
    """:func:`approve` for asyncio."""
    result = await h.aapprove(pending.approval["id"], approver=approver, args=args, raise_on_refusal=False)
    return _message(pending, result)


def reject(h: Any, pending: ApprovalPending, *, by: Any, reason: str = "") -> Any:
    """Denies ``pending``'s approval (recorded with ``by`` and ``reason``); the
    handler never runs. Returns the error ``ToolMessage`` with the core's
    ``approval_denied`` refusal for the model."""
    approval = pending.approval["id"]
    h.deny(approval, reason, by=by)
    return _message(pending, pending.run.call(pending.tool, pending.arguments, approval=approval, raise_on_refusal=False))
