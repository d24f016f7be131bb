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

Inside a LangGraph graph, ``tools(h, run, interrupt=True)`` makes a waiting call
pause the graph with LangGraph's ``interrupt()`` instead; resume it with
``Command(resume=...)`` and :func:`approve_interrupt` or :func:`reject_interrupt`.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Dict, Iterable, List, Optional, cast

from .._governor import Run
from .._native import ApprovalRequired
from ._common import Spec, require, specs, stored_approval

__all__ = ["ApprovalPending", "tools", "approve", "aapprove", "reject", "approve_interrupt", "reject_interrupt"]

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

    class GovernedTool(tools_mod.StructuredTool):  # type: ignore[misc, name-defined]
        """A harness tool; an approval-pending call raises :class:`ApprovalPending`."""

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            token = _CALL_ID.set(_call_id_of(input))
            try:
                return super().invoke(input, config, **kwargs)
            except ApprovalPending as pending:
                pending.tool_call_id = _call_id_of(input)
                raise pending from None
            finally:
                _CALL_ID.reset(token)

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            token = _CALL_ID.set(_call_id_of(input))
            try:
                return await super().ainvoke(input, config, **kwargs)
            except ApprovalPending as pending:
                pending.tool_call_id = _call_id_of(input)
                raise pending from None
            finally:
                _CALL_ID.reset(token)

    _TOOL_CLASS = GovernedTool
    return GovernedTool


# The model's id of the tool call being run (set by GovernedTool.invoke for a ToolCall input).
_CALL_ID: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("harnessweaver_tool_call_id", default=None)


def _call_id_of(input: Any) -> Optional[str]:
    if isinstance(input, dict) and input.get("type") == "tool_call":
        return input.get("id")
    return None


def tools(h: Any, ctx: Run, *, names: Optional[Iterable[str]] = None, interrupt: bool = False) -> List[Any]:
    """The tools ``ctx``'s principal may call, as LangChain ``StructuredTool``
    objects whose calls go through the governor within run ``ctx`` (from
    ``h.run(...)``). ``names`` keeps only those tools.

    With ``interrupt=True`` (for tools run inside a LangGraph graph with a
    checkpointer, e.g. by its ``ToolNode``; needs ``langgraph``), a call that
    needs approval calls LangGraph's ``interrupt()`` instead of raising
    :class:`ApprovalPending`: the graph pauses with the harness approval as the
    interrupt's value, and is resumed with ``Command(resume=...)`` and the value
    of :func:`approve_interrupt` or :func:`reject_interrupt`."""
    cls = _tool_class()
    graph = _Graph(h, require("langgraph.types", "langchain", "langgraph", "langgraph").interrupt) if interrupt else None
    return [_tool(cls, ctx, spec, graph) for spec in specs(h, ctx, names)]


class _Graph:
    """What one set of tools remembers inside a LangGraph graph. A resumed node
    runs every tool call of its step again, and LangGraph hands resume values to
    the ``interrupt()`` calls of a step in the order they are made, which for a
    ``ToolNode`` running calls in parallel is not the calls' order. So decisions
    are taken from the harness, not from the resume value: a call waits while
    its approval is pending (each ``interrupt()`` either pauses the graph or,
    resumed, means "look again"), and each call's result is kept by tool call id,
    so a call is decided, run and audited once."""

    __slots__ = ("h", "pause", "done", "asked", "running")

    def __init__(self, h: Any, pause: Any) -> None:
        self.h = h
        self.pause = pause
        self.done: Dict[str, Any] = {}  # tool call id -> CallResult
        self.asked: Dict[str, str] = {}  # tool call id -> harness approval id
        self.running: Dict[str, Any] = {}  # tool call id -> asyncio task of its governed call

    def recall(self, run: Run, tool: str, args: Dict[str, Any], call_id: Optional[str]) -> "tuple[Any, Optional[str]]":
        """The result this call already has, or the approval it asked for (by
        call id, else by run, tool and arguments: tools made anew)."""
        if call_id and call_id in self.done:
            return self.done[call_id], None
        approval = self.asked.get(call_id) if call_id else None
        if approval is None:
            found = stored_approval(self.h, run, tool, args)
            approval = None if found is None else found["id"]
        return None, approval

    def asked_for(self, call_id: Optional[str], result: Any) -> Optional[str]:
        if result.decision != "pending":
            return None
        if call_id:
            self.asked[call_id] = result.approval["id"]
        return cast(str, result.approval["id"])

    def wait(self, tool: str, args: Dict[str, Any], approval: str) -> None:
        """Returns once ``approval`` is no longer pending; raises LangGraph's
        GraphInterrupt (pausing the graph) while it is."""
        while True:
            entry = next((a for a in self.h.approvals() if a["id"] == approval), None)
            if entry is None or entry["state"] != "pending":
                return
            self.pause(_request(tool, args, entry))

    def keep(self, call_id: Optional[str], result: Any) -> None:
        if call_id:
            self.done[call_id] = result
            self.asked.pop(call_id, None)

    async def finish(self, call_id: Optional[str], governed: Any) -> Any:
        """Awaits the governed call ``governed`` to its end even when the tool is
        cancelled (an interrupt of another call of the step cancels the step's
        other calls), and remembers its outcome."""

        async def to_the_end() -> Any:
            try:
                result = await governed
                if self.asked_for(call_id, result) is None:
                    self.keep(call_id, result)
                return result
            finally:
                self.running.pop(call_id or "", None)

        task = asyncio.ensure_future(to_the_end())
        if call_id:
            self.running[call_id] = task
        return await asyncio.shield(task)

    async def settled(self, call_id: Optional[str]) -> None:
        """Waits for this call's governed call still running from before the
        graph paused (its outcome is then remembered)."""
        task = self.running.get(call_id) if call_id else None
        if task is not None:
            await asyncio.wait([task])


def _tool(cls: Any, run: Run, spec: Spec, graph: Optional[_Graph]) -> Any:
    tools_mod = require("langchain_core.tools", *_ADAPTER)

    def settle(result: Any, args: Dict[str, Any]) -> Any:
        if result.allowed:
            return result.to_model(), result.to_dict()
        if result.decision == "pending":
            raise ApprovalPending(ApprovalRequired(result), run, args, None)
        raise tools_mod.ToolException(result.to_model())

    def call(**args: Any) -> Any:
        if graph is None:
            return settle(run.call(spec.name, args, raise_on_refusal=False), args)
        call_id = _CALL_ID.get()
        result, approval = graph.recall(run, spec.name, args, call_id)
        if result is None:
            if approval is None:
                result = run.call(spec.name, args, raise_on_refusal=False)
                approval = graph.asked_for(call_id, result)
            if approval is not None:
                graph.wait(spec.name, args, approval)
                result = run.call(spec.name, args, approval=approval, raise_on_refusal=False)
            graph.keep(call_id, result)
        return settle(result, args)

    async def acall(**args: Any) -> Any:
        if graph is None:
            return settle(await run.acall(spec.name, args, raise_on_refusal=False), args)
        call_id = _CALL_ID.get()
        await graph.settled(call_id)
        result, approval = graph.recall(run, spec.name, args, call_id)
        if result is None:
            if approval is None:
                result = await graph.finish(call_id, run.acall(spec.name, args, raise_on_refusal=False))
                approval = result.approval["id"] if result.decision == "pending" else None
            if approval is not None:
                graph.wait(spec.name, args, approval)
                result = await graph.finish(call_id, run.acall(spec.name, args, approval=approval, raise_on_refusal=False))
        return settle(result, args)

    return cls(
        name=spec.name,
        description=spec.description,
        args_schema=spec.parameters,
        func=call,
        coroutine=acall,
        handle_tool_error=True,
        response_format="content_and_artifact",
    )


_KEY = "harnessweaver_approval"  # the approval id, in an interrupt's value


def _request(tool: str, args: Dict[str, Any], approval: Dict[str, Any]) -> Dict[str, Any]:
    """The value of the interrupt of a call waiting for a human."""
    return {
        _KEY: approval["id"],
        "tool": tool,
        "args": args,
        "approver_role": approval.get("approver_role"),
        "reasons": list(approval.get("reasons") or []),
    }


def _interrupt_value(interrupt: Any) -> Dict[str, Any]:
    value = getattr(interrupt, "value", interrupt)
    if not isinstance(value, dict) or _KEY not in value:
        raise _not_ours()
    return value


def _not_ours() -> Exception:
    from .._native import InvalidArgumentError

    err = InvalidArgumentError("this interrupt is not a harnessweaver approval")
    err.code = "invalid_interrupt"
    return err


def approve_interrupt(h: Any, interrupt: Any, *, approver: Any) -> Dict[str, Any]:
    """Grants the harness approval of a LangGraph ``interrupt`` (the ``Interrupt``
    or its value) as ``approver`` (raises ``HarnessweaverError`` with code
    ``approver_not_allowed`` without the tool's ``approver_role``, and the call
    keeps waiting) and returns a value to resume the graph with
    (``Command(resume=...)``); the resumed call runs its handler once. The
    decision is the harness's: the value only says what was decided."""
    value = _interrupt_value(interrupt)
    h.grant(value[_KEY], approver=approver)
    return {_KEY: value[_KEY], "approved": True}


def reject_interrupt(h: Any, interrupt: Any, *, by: Any, reason: str = "") -> Dict[str, Any]:
    """Denies the harness approval of a LangGraph ``interrupt`` (recorded with
    ``by`` and ``reason``) and returns a value to resume the graph with; the
    resumed call is refused ``approval_denied``, which the model reads, and the
    handler never runs."""
    value = _interrupt_value(interrupt)
    h.deny(value[_KEY], reason, by=by)
    return {_KEY: value[_KEY], "approved": False}


def _message(pending: ApprovalPending, result: Any) -> Any:
    messages = require("langchain_core.messages", *_ADAPTER)
    content = result.to_model()
    return messages.ToolMessage(
        content=content,
        artifact=result.to_dict(),
        tool_call_id=pending.tool_call_id or "",
        name=pending.tool,
        status="success" if result.allowed else "error",
    )


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
