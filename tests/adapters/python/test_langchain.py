"""The LangChain adapter, driven through the standard tool-calling loop by
langchain-core's fake chat model (no network): allowed calls run the handler,
refusals become error ToolMessages with their code, approvals stop the loop
with ApprovalPending and resume through approve()/reject()."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

import harnessweaver as hw
from harnessweaver.adapters import langchain as hwa

from conftest import BOB, CAROL, FINANCE, SUPPORT, Shop, doc_block


class ScriptedChatModel(FakeMessagesListChatModel):
    """The fake chat model, with bind_tools recording what a real model would be sent."""

    bound: List[Dict[str, Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self


def calls(*tool_calls: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for i, n, a in tool_calls])


def loop(model: Any, tools: List[BaseTool], prompt: str) -> List[Any]:
    """The standard tool-calling loop; an ApprovalPending stops it."""
    by_name = {t.name: t for t in tools}
    messages: List[Any] = [HumanMessage(prompt)]
    while True:
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return messages
        for call in reply.tool_calls:
            messages.append(by_name[call["name"]].invoke(call))


def tool_messages(messages: List[Any]) -> Dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def test_tools_carry_the_pinned_manifest_and_follow_the_principal(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[AIMessage("hi")])
    model.bind_tools(hwa.tools(shop.h, shop.h.run(principal=BOB)))
    sent = {t["function"]["name"]: t["function"] for t in model.bound}
    refund = shop.h.tool("refund_payment")
    assert sent["refund_payment"]["description"] == refund.description
    assert sent["refund_payment"]["parameters"] == refund.input_schema
    support = hwa.tools(shop.h, shop.h.run(principal={"id": "al", "roles": ["support"], "scopes": ["orders:read"]}))
    assert "refund_payment" not in {t.name for t in support}


def test_allowed_call_runs_the_handler_and_refusals_are_error_messages(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[
        calls(("c1", "lookup_order", {"order_id": "A-1001"}), ("c2", "lookup_order", {"order_id": "nope"})),
        AIMessage("done"),
    ])
    seen = tool_messages(loop(model, hwa.tools(shop.h, shop.h.run(principal=BOB)), "where is A-1001?"))
    assert shop.calls == [("lookup_order", "A-1001")]
    assert seen["c1"].status == "success" and json.loads(seen["c1"].content)["status"] == "shipped"
    assert seen["c1"].artifact["decision"] == "allowed" and seen["c1"].artifact["labels"]["private"] is True
    assert seen["c2"].status == "error"
    assert seen["c2"].content.startswith("[tool call refused: invalid_args]")


def test_policy_refusal_is_an_error_message_with_its_code(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[calls(("c1", "refund_payment", {"order_id": "A-1001", "amount_usd": 5})),
                                         AIMessage("sorry")])
    seen = tool_messages(loop(model, hwa.tools(shop.h, shop.h.run(principal=CAROL)), "refund"))
    assert seen["c1"].status == "error"
    assert seen["c1"].content.startswith("[tool call refused: policy_denied]")
    assert shop.refunds() == []


def pending_refund(shop: Shop) -> hwa.ApprovalPending:
    model = ScriptedChatModel(responses=[calls(("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180}))])
    with pytest.raises(hwa.ApprovalPending) as info:
        loop(model, hwa.tools(shop.h, shop.h.run(principal=BOB)), "refund A-1002")
    return info.value


def test_approval_stops_the_loop_and_the_approved_call_runs_once(shop: Shop) -> None:
    pending = pending_refund(shop)
    assert isinstance(pending, hw.ApprovalRequired) and pending.code == "approval_required"
    assert pending.tool_call_id == "c1" and pending.tool == "refund_payment"
    assert pending.approval["approver_role"] == "finance"
    assert shop.refunds() == []
    with pytest.raises(hw.HarnessweaverError) as bad:
        hwa.approve(shop.h, pending, approver=SUPPORT)
    assert bad.value.code == "approver_not_allowed"
    message = hwa.approve(shop.h, pending, approver=FINANCE)
    assert isinstance(message, ToolMessage) and message.tool_call_id == "c1" and message.status == "success"
    assert json.loads(message.content)["refunded_usd"] == 180
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    with pytest.raises(hw.HarnessweaverError) as again:  # an approval is used once
        hwa.approve(shop.h, pending, approver=FINANCE)
    assert again.value.code == "approval_not_pending"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]


def test_rejected_call_never_runs(shop: Shop) -> None:
    pending = pending_refund(shop)
    message = hwa.reject(shop.h, pending, by=FINANCE, reason="over the limit")
    assert message.status == "error" and message.tool_call_id == "c1"
    assert message.content.startswith("[tool call refused: approval_denied]")
    assert shop.refunds() == []


def test_async_tools_and_approval(shop: Shop) -> None:
    tools = {t.name: t for t in hwa.tools(shop.h, shop.h.run(principal=BOB))}

    async def main() -> Any:
        ok = await tools["lookup_order"].ainvoke({"name": "lookup_order", "args": {"order_id": "A-1001"},
                                                  "id": "c1", "type": "tool_call"})
        assert ok.status == "success"
        with pytest.raises(hwa.ApprovalPending) as info:
            await tools["refund_payment"].ainvoke({"name": "refund_payment", "id": "c2", "type": "tool_call",
                                                   "args": {"order_id": "A-1002", "amount_usd": 180}})
        assert info.value.tool_call_id == "c2"
        return await hwa.aapprove(shop.h, info.value, approver=FINANCE)

    message = asyncio.run(main())
    assert message.status == "success"
    assert shop.calls == [("lookup_order", "A-1001"), ("refund_payment", "A-1002", 180)]


def test_the_docs_example_runs(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[
        calls(("c1", "lookup_order", {"order_id": "A-1002"}), ("c2", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})),
        AIMessage("refunded"),
    ])
    scope: Dict[str, Any] = {"h": shop.h, "user": BOB, "finance_user": FINANCE, "model": model}
    exec(compile(doc_block("### LangChain"), "docs/adapters.md", "exec"), scope)
    assert scope["reply"].content == "refunded"
    assert shop.calls == [("lookup_order", "A-1002"), ("refund_payment", "A-1002", 180)]
    assert [m.status for m in scope["messages"] if isinstance(m, ToolMessage)] == ["success", "success"]
