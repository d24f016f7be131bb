"""The OpenAI Agents SDK adapter, driven by the SDK's own Runner with a scripted
Model (no network): allowed calls run the handler, refusals reach the model as
tool output with their code, approvals pause the run as SDK interruptions."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, Dict, List

import pytest
from agents import Agent, FunctionTool, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import harnessweaver as hw
from harnessweaver.adapters import openai_agents as hwa

from conftest import BOB, CAROL, FINANCE, SUPPORT, Shop, doc_block

set_tracing_disabled(True)


def call(call_id: str, name: str, args: Dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{call_id}", call_id=call_id, name=name, arguments=json.dumps(args),
                                    type="function_call", status="completed")


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg_1", role="assistant", status="completed", type="message",
                                 content=[ResponseOutputText(text=text, type="output_text", annotations=[])])


class ScriptedModel(Model):
    """Returns the scripted turns in order and records what it was given."""

    def __init__(self, *turns: List[Any]) -> None:
        self.turns = list(turns)
        self.inputs: List[Any] = []
        self.tools: List[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        self.tools = tools
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def outputs(self) -> Dict[str, str]:
        """Every tool output the model has been shown, by call id."""
        seen: Dict[str, str] = {}
        for items in self.inputs:
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    seen[item["call_id"]] = item["output"]
        return seen


def agent(model: Model, tools: List[Any]) -> Agent:
    return Agent(name="support", instructions="Help the customer.", model=model, tools=tools)


def test_tools_carry_the_pinned_manifest_and_follow_the_principal(shop: Shop) -> None:
    tools = hwa.tools(shop.h, shop.h.run(principal=BOB))
    assert all(isinstance(t, FunctionTool) for t in tools)
    by_name = {t.name: t for t in tools}
    refund = shop.h.tool("refund_payment")
    assert by_name["refund_payment"].description == refund.description
    assert by_name["refund_payment"].params_json_schema == refund.input_schema
    # A principal without the refund scope never sees the tool.
    support = hwa.tools(shop.h, shop.h.run(principal={"id": "al", "roles": ["support"], "scopes": ["orders:read"]}))
    assert "refund_payment" not in {t.name for t in support}
    assert [t.name for t in hwa.tools(shop.h, shop.h.run(principal=BOB), names=["lookup_order"])] == ["lookup_order"]
    with pytest.raises(hw.InvalidArgumentError, match="no tool `nope`") as unknown:
        hwa.tools(shop.h, shop.h.run(principal=BOB), names=["nope"])
    assert unknown.value.code == "unknown_tool"
    with pytest.raises(hw.InvalidArgumentError, match="h.run") as not_a_run:
        hwa.tools(shop.h, BOB)  # type: ignore[arg-type]
    assert not_a_run.value.code == "invalid_run"
    other = Shop().h
    with pytest.raises(hw.InvalidArgumentError, match="another harness"):
        hwa.tools(shop.h, other.run(principal=BOB))


def test_allowed_call_runs_the_handler_and_refusals_reach_the_model(shop: Shop) -> None:
    model = ScriptedModel(
        [call("c1", "lookup_order", {"order_id": "A-1001"}), call("c2", "lookup_order", {"order_id": "nope"})],
        [say("done")],
    )
    result = asyncio.run(Runner.run(agent(model, hwa.tools(shop.h, shop.h.run(principal=BOB))), "where is A-1001?"))
    assert result.final_output == "done"
    assert shop.calls == [("lookup_order", "A-1001")]  # the refused call never reached the handler
    seen = model.outputs()
    assert json.loads(seen["c1"])["status"] == "shipped"
    assert seen["c2"].startswith("[tool call refused: invalid_args]")
    assert "/order_id" in seen["c2"]


def test_policy_refusal_reaches_the_model_with_its_code(shop: Shop) -> None:
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1001", "amount_usd": 5})], [say("sorry")])
    result = asyncio.run(Runner.run(agent(model, hwa.tools(shop.h, shop.h.run(principal=CAROL))), "refund"))
    assert result.final_output == "sorry" and not result.interruptions
    assert model.outputs()["c1"].startswith("[tool call refused: policy_denied]")
    assert shop.refunds() == []


def pending_refund(shop: Shop) -> Any:
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [say("refunded")])
    ag = agent(model, hwa.tools(shop.h, shop.h.run(principal=BOB)))
    result = asyncio.run(Runner.run(ag, "refund A-1002"))
    return model, ag, result


def test_approval_pauses_the_run_and_the_approved_call_runs_once(shop: Shop) -> None:
    model, ag, result = pending_refund(shop)
    assert [i.tool_name for i in result.interruptions] == ["refund_payment"]
    assert shop.refunds() == []
    waiting = shop.h.approvals()
    assert [(a["tool"], a["state"]) for a in waiting] == [("refund_payment", "pending")]
    state = result.to_state()
    item = result.interruptions[0]
    # Only a holder of the tool's approver_role can approve; the call keeps waiting.
    with pytest.raises(hw.HarnessweaverError) as bad:
        hwa.approve(state, item, approver=SUPPORT)
    assert bad.value.code == "approver_not_allowed"
    hwa.approve(state, item, approver=FINANCE)
    resumed = asyncio.run(Runner.run(ag, state))
    assert resumed.final_output == "refunded" and not resumed.interruptions
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    assert json.loads(model.outputs()["c1"])["refunded_usd"] == 180
    assert shop.h.approvals() == []  # used up


def test_a_copied_tool_still_ties_the_approval(shop: Shop) -> None:
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [say("refunded")])
    ag = agent(model, [dataclasses.replace(t) for t in hwa.tools(shop.h, shop.h.run(principal=BOB))])
    result = asyncio.run(Runner.run(ag, "refund A-1002"))
    state = result.to_state()
    hwa.approve(state, result.interruptions[0], approver=FINANCE)
    asyncio.run(Runner.run(ag, state))
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]


def test_rejected_call_never_runs_and_the_model_reads_the_denial(shop: Shop) -> None:
    model, ag, result = pending_refund(shop)
    state = result.to_state()
    hwa.reject(state, result.interruptions[0], by=FINANCE, reason="over the limit")
    resumed = asyncio.run(Runner.run(ag, state))
    assert resumed.final_output == "refunded"  # the script's last turn; what matters is below
    assert shop.refunds() == []
    assert model.outputs()["c1"].startswith("[tool call refused: approval_denied]")


def test_on_approval_decides_inline_without_an_interruption() -> None:
    shop = Shop(on_approval=lambda request, approval: True)
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [say("ok")])
    result = asyncio.run(Runner.run(agent(model, hwa.tools(shop.h, shop.h.run(principal=BOB))), "refund"))
    assert not result.interruptions
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    assert json.loads(model.outputs()["c1"])["refunded_usd"] == 180


def test_the_docs_example_runs(shop: Shop) -> None:
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [say("refunded")])
    scope = {"h": shop.h, "user": BOB, "finance_user": FINANCE, "model": model}
    exec(compile("async def main():\n" + _indent(doc_block("### OpenAI Agents SDK")), "docs/adapters.md", "exec"), scope)
    result = asyncio.run(scope["main"]())
    assert result.final_output == "refunded"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]


def _indent(code: str) -> str:
    return "".join("    " + line if line.strip() else line for line in code.splitlines(True)) + "    return result\n"


def test_a_restored_run_state_finds_its_harness_approval(shop: Shop) -> None:
    from agents import RunState

    run = shop.h.run(principal=BOB)
    model = ScriptedModel([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [say("refunded")])
    result = asyncio.run(Runner.run(agent(model, hwa.tools(shop.h, run)), "refund A-1002"))
    saved = result.to_state().to_string()
    # Another request of the app: tools made anew (no memory of the call id), the state read back.
    fresh = agent(model, hwa.tools(shop.h, run))
    state = asyncio.run(RunState.from_string(fresh, saved))
    [item] = state.get_interruptions()
    with pytest.raises(hw.HarnessweaverError) as bad:
        hwa.approve(state, item, approver=SUPPORT)
    assert bad.value.code == "approver_not_allowed"
    hwa.approve(state, item, approver=FINANCE)
    resumed = asyncio.run(Runner.run(fresh, state))
    assert resumed.final_output == "refunded"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    assert shop.h.approvals() == []
