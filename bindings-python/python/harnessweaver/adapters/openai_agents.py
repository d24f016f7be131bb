"""The OpenAI Agents SDK adapter (``pip install 'harnessweaver[openai-agents]'``).

    from agents import Agent, Runner
    from harnessweaver.adapters import openai_agents as hwa

    run = h.run(principal=user)
    agent = Agent(name="support", tools=hwa.tools(h, run))
    result = await Runner.run(agent, "refund order A-1001")
    while result.interruptions:                      # calls waiting for a human
        state = result.to_state()
        for item in result.interruptions:
            hwa.approve(state, item, approver=finance_user)   # or hwa.reject(state, item, by=...)
        result = await Runner.run(agent, state)

Each tool is a ``FunctionTool`` with the pinned manifest's name, description and
input schema. A call runs through the governor (``run.acall``); a refusal comes
back to the model as the tool's output, ``[tool call refused: <code>] <message>``.
A call that needs approval (step 7) sets the SDK's ``needs_approval``: the run
stops with an interruption, and :func:`approve` grants the harness approval (the
approver must hold the tool's ``approver_role``) and approves the SDK item, so
the resumed run calls the handler once; :func:`reject` denies both, and the
model reads the core's ``approval_denied`` message.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, cast

from .._governor import Run
from ._common import Spec, require, specs, stored_approval

__all__ = ["tools", "approve", "reject"]

_ADAPTER = ("openai_agents", "openai-agents", "openai-agents")


class _Gate:
    """The harness approvals of one set of tools, by the SDK's tool call id. A
    call id missing here (a ``RunState`` restored for tools made anew) is found
    among the harness's approvals by run, tool and arguments."""

    __slots__ = ("harness", "run", "pending", "settled")

    def __init__(self, harness: Any, run: Run) -> None:
        self.harness = harness
        self.run = run
        self.pending: Dict[str, str] = {}  # call id -> harness approval id
        self.settled: Dict[str, Any] = {}  # call id -> CallResult decided inline (on_approval)

    def stored(self, tool: str, args: Any) -> Optional[str]:
        found = stored_approval(self.harness, self.run, tool, args)
        return None if found is None else found["id"]

    def approval_of(self, tool: str, args: Any, call_id: Optional[str]) -> Optional[str]:
        return self.pending.get(call_id or "") or self.stored(tool, args)


def tools(h: Any, ctx: Run, *, names: Optional[Iterable[str]] = None) -> List[Any]:
    """The tools ``ctx``'s principal may call, as ``agents.FunctionTool`` objects
    whose calls go through the governor within run ``ctx`` (from ``h.run(...)``).
    ``names`` keeps only those tools."""
    agents = require("agents", *_ADAPTER)
    gate = _Gate(h, ctx)
    out = []
    for spec in specs(h, ctx, names):
        tool = agents.FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=spec.parameters,
            on_invoke_tool=_invoker(gate, spec),
            # The manifest's schema is the contract and the governor validates it;
            # the SDK's strict mode would rewrite it.
            strict_json_schema=False,
            needs_approval=_approval_check(gate, spec),
        )
        # Read by approve()/reject(); kept on the invoker too, which a copy of the tool
        # (dataclasses.replace, Agent.clone) shares.
        tool._harnessweaver_gate = gate
        tool.on_invoke_tool._harnessweaver_gate = gate
        out.append(tool)
    return out


def _approval_check(gate: _Gate, spec: Spec) -> Any:
    async def needs_approval(_ctx: Any, params: Dict[str, Any], call_id: str) -> bool:
        if call_id in gate.pending:
            return True
        if call_id in gate.settled:
            return False
        if gate.stored(spec.name, params) is not None:
            return True
        run = gate.run
        verdict = gate.harness.explain(spec.name, params, principal=run.principal, tenant=run.tenant, task=run.task, run=run.id)
        if verdict["decision"] != "pending":
            return False  # allowed or refused: the call itself says which
        # Ask for the approval now, so its id (and who may grant it) is known while the run waits.
        result = await run.acall(spec.name, params, raise_on_refusal=False)
        if result.decision == "pending":
            gate.pending[call_id] = cast(Dict[str, Any], result.approval)["id"]
            return True
        gate.settled[call_id] = result  # decided inline by the harness's on_approval
        return False

    return needs_approval


def _invoker(gate: _Gate, spec: Spec) -> Any:
    async def on_invoke_tool(ctx: Any, arguments: str) -> str:
        call_id = getattr(ctx, "tool_call_id", None)
        result = gate.settled.pop(call_id, None) if call_id else None
        if result is None:
            try:
                args = json.loads(arguments) if arguments else {}
            except ValueError:
                args = arguments  # the governor refuses what is not an object
            approval = gate.approval_of(spec.name, args, call_id)
            gate.pending.pop(call_id or "", None)
            result = await gate.run.acall(spec.name, args, approval=approval, raise_on_refusal=False)
        return result.to_model()

    return on_invoke_tool


def _gate_of(item: Any) -> Optional[_Gate]:
    agent = getattr(item, "agent", None)
    name = getattr(item, "tool_name", None) or getattr(item, "name", None)
    for tool in getattr(agent, "tools", None) or []:
        gate = getattr(tool, "_harnessweaver_gate", None) or getattr(
            getattr(tool, "on_invoke_tool", None), "_harnessweaver_gate", None
        )
        if gate is not None and getattr(tool, "name", None) == name:
            return cast(_Gate, gate)
    return None


def approve(state: Any, interruption: Any, *, approver: Any) -> None:
    """Approves a waiting call: grants its harness approval as ``approver`` (who
    must hold the tool's ``approver_role``; raises ``HarnessweaverError`` with
    code ``approver_not_allowed`` otherwise, leaving the call waiting), then
    approves ``interruption`` in the SDK's ``state``. Resume with
    ``Runner.run(agent, state)``; the handler then runs once. An interruption of
    a tool that is not a harness tool is only approved in the SDK."""
    gate = _gate_of(interruption)
    if gate is not None:
        approval = gate.approval_of(interruption.tool_name, _arguments(interruption), interruption.call_id)
        if approval is not None:
            gate.harness.grant(approval, approver=approver)
    state.approve(interruption)


def reject(state: Any, interruption: Any, *, by: Any, reason: str = "") -> None:
    """Denies a waiting call: denies its harness approval (recorded with ``by``
    and ``reason``) and rejects ``interruption`` in the SDK's ``state``; the model
    reads the core's ``approval_denied`` refusal and the handler never runs."""
    gate = _gate_of(interruption)
    message = None
    if gate is not None:
        args = _arguments(interruption)
        approval = gate.approval_of(interruption.tool_name, args, interruption.call_id)
        gate.pending.pop(interruption.call_id or "", None)
        if approval is not None:
            gate.harness.deny(approval, reason, by=by)
            # The call presenting the denied approval is refused by the core (and audited): its text is the denial.
            message = gate.run.call(interruption.tool_name, args, approval=approval, raise_on_refusal=False).to_model()
    state.reject(interruption, rejection_message=message)


def _arguments(item: Any) -> Any:
    text = getattr(item, "arguments", None)
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text
