"""The Pydantic AI adapter, driven by Pydantic AI's FunctionModel with a scripted
conversation (no network): allowed calls run the handler, refusals reach the
model as tool errors (ModelRetry for the schema, ToolFailed otherwise) with their
code, approvals end the run with DeferredToolRequests and resume with
DeferredToolResults."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import harnessweaver as hw
from harnessweaver.adapters import pydantic_ai as hwa

from conftest import BOB, CAROL, FINANCE, SUPPORT, Shop, doc_block


class Script:
    """A FunctionModel that answers with the scripted turns in order and records
    every tool result (return, retry or failure) the model was shown."""

    def __init__(self, *turns: List[Any]) -> None:
        self.turns = list(turns)
        self.seen: Dict[str, Any] = {}
        self.tool_defs: Dict[str, Any] = {}
        self.model = FunctionModel(self.respond)

    def respond(self, messages: List[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tool_defs = {t.name: t for t in info.function_tools}
        for message in messages:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if getattr(part, "tool_call_id", None) and part.part_kind in ("tool-return", "retry-prompt"):
                        self.seen[part.tool_call_id] = part
        return ModelResponse(parts=self.turns.pop(0))


def call(call_id: str, name: str, args: Dict[str, Any]) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


def text_of(part: Any) -> str:
    return part.model_response_str() if part.part_kind == "tool-return" else str(part.content)


def agent(script: Script, tools: List[Any]) -> Agent:
    return Agent(script.model, tools=tools, output_type=[str, DeferredToolRequests])


def test_tools_carry_the_pinned_manifest_and_follow_the_principal(shop: Shop) -> None:
    script = Script([TextPart("hi")])
    asyncio.run(agent(script, hwa.tools(shop.h, shop.h.run(principal=BOB))).run("hello"))
    refund = shop.h.tool("refund_payment")
    assert script.tool_defs["refund_payment"].description == refund.description
    assert script.tool_defs["refund_payment"].parameters_json_schema == refund.input_schema
    support = hwa.tools(shop.h, shop.h.run(principal={"id": "al", "roles": ["support"], "scopes": ["orders:read"]}))
    assert "refund_payment" not in {t.name for t in support}


def test_allowed_call_runs_the_handler_and_a_schema_refusal_asks_for_a_retry(shop: Shop) -> None:
    script = Script(
        [call("c1", "lookup_order", {"order_id": "A-1001"}), call("c2", "lookup_order", {"order_id": "nope"})],
        [TextPart("done")],
    )
    result = asyncio.run(agent(script, hwa.tools(shop.h, shop.h.run(principal=BOB))).run("where is A-1001?"))
    assert result.output == "done"
    assert shop.calls == [("lookup_order", "A-1001")]
    assert script.seen["c1"].part_kind == "tool-return"
    assert json.loads(script.seen["c1"].content)["status"] == "shipped"
    assert script.seen["c1"].metadata["decision"] == "allowed" and script.seen["c1"].metadata["labels"]["private"] is True
    retried = script.seen["c2"]  # ModelRetry: a tool result asking the model to correct its arguments
    assert retried.outcome == "retried" and retried.retry.cause == "model_retry"
    assert "[tool call refused: invalid_args]" in text_of(script.seen["c2"])


def test_policy_refusal_is_a_tool_failure_with_its_code(shop: Shop) -> None:
    script = Script([call("c1", "refund_payment", {"order_id": "A-1001", "amount_usd": 5})], [TextPart("sorry")])
    result = asyncio.run(agent(script, hwa.tools(shop.h, shop.h.run(principal=CAROL))).run("refund"))
    assert result.output == "sorry"
    part = script.seen["c1"]
    assert part.part_kind == "tool-return" and part.outcome == "failed" and part.retry is None
    assert "[tool call refused: policy_denied]" in text_of(part)
    assert shop.refunds() == []


def pending_refund(shop: Shop) -> Any:
    script = Script([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [TextPart("refunded")])
    ag = agent(script, hwa.tools(shop.h, shop.h.run(principal=BOB)))
    result = asyncio.run(ag.run("refund A-1002"))
    return script, ag, result


def test_approval_defers_the_call_and_the_approved_call_runs_once(shop: Shop) -> None:
    script, ag, result = pending_refund(shop)
    requests = result.output
    assert isinstance(requests, DeferredToolRequests)
    assert [p.tool_call_id for p in requests.approvals] == ["c1"]
    meta = requests.metadata["c1"]
    assert meta["approver_role"] == "finance" and meta["code"] == "approval_required"
    assert meta["harnessweaver_approval"] in [a["id"] for a in shop.h.approvals()]
    assert shop.refunds() == []
    with pytest.raises(hw.HarnessweaverError) as bad:
        hwa.approve(shop.h, requests, approver=SUPPORT)
    assert bad.value.code == "approver_not_allowed"
    decided = hwa.approve(shop.h, requests, approver=FINANCE)
    # Kept between requests as JSON, as an app would.
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    resumed = asyncio.run(ag.run(message_history=history, deferred_tool_results=decided))
    ModelMessagesTypeAdapter.dump_json(resumed.all_messages())  # the tool results are plain data too
    assert resumed.output == "refunded"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    assert json.loads(script.seen["c1"].content)["refunded_usd"] == 180
    assert shop.h.approvals() == []


def test_rejected_call_never_runs_and_the_model_reads_the_denial(shop: Shop) -> None:
    script, ag, result = pending_refund(shop)
    decided = hwa.reject(shop.h, result.output, by=FINANCE, reason="over the limit")
    resumed = asyncio.run(ag.run(message_history=result.all_messages(), deferred_tool_results=decided))
    assert resumed.output == "refunded"  # the script's last turn; what matters is below
    assert shop.refunds() == []
    assert "[tool call refused: approval_denied]" in text_of(script.seen["c1"])


def test_the_docs_example_runs(shop: Shop) -> None:
    script = Script([call("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})], [TextPart("refunded")])
    scope: Dict[str, Any] = {"h": shop.h, "user": BOB, "finance_user": FINANCE, "model": script.model}
    body = "".join("    " + line if line.strip() else line for line in doc_block("### Pydantic AI").splitlines(True))
    exec(compile("async def main():\n" + body + "    return result\n", "docs/adapters.md", "exec"), scope)
    result = asyncio.run(scope["main"]())
    assert result.output == "refunded"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
