"""The LangChain adapter's tools inside a LangGraph graph (ToolNode, a
checkpointer, the fake chat model): with interrupt=True a call that needs
approval pauses the graph with LangGraph's interrupt() and resumes with
Command(resume=...) after approve_interrupt/reject_interrupt."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import harnessweaver as hw
from harnessweaver.adapters import langchain as hwa

from conftest import BOB, FINANCE, SUPPORT, Shop, doc_block
from test_langchain import ScriptedChatModel, calls


def graph(model: Any, tools: List[Any]) -> Any:
    llm = model.bind_tools(tools)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [llm.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=InMemorySaver())


def refund_graph(shop: Shop) -> Any:
    model = ScriptedChatModel(responses=[
        calls(("c1", "lookup_order", {"order_id": "A-1002"}), ("c2", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})),
        AIMessage("refunded"),
    ])
    return graph(model, hwa.tools(shop.h, shop.h.run(principal=BOB), interrupt=True))


CONFIG: Dict[str, Any] = {"configurable": {"thread_id": "t1"}}


def tool_messages(state: Dict[str, Any]) -> Dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


def test_approval_interrupts_the_graph_and_the_approved_call_runs_once(shop: Shop) -> None:
    g = refund_graph(shop)
    state = g.invoke({"messages": [("user", "refund A-1002")]}, CONFIG)
    [paused] = state["__interrupt__"]
    assert paused.value["tool"] == "refund_payment" and paused.value["approver_role"] == "finance"
    assert paused.value["harnessweaver_approval"] in [a["id"] for a in shop.h.approvals()]
    assert shop.refunds() == []
    with pytest.raises(hw.HarnessweaverError) as bad:
        hwa.approve_interrupt(shop.h, paused, approver=SUPPORT)
    assert bad.value.code == "approver_not_allowed"
    state = g.invoke(Command(resume=hwa.approve_interrupt(shop.h, paused, approver=FINANCE)), CONFIG)
    assert "__interrupt__" not in state and state["messages"][-1].content == "refunded"
    # The allowed lookup ran once, although LangGraph ran the tools' step again on resume.
    assert shop.calls == [("lookup_order", "A-1002"), ("refund_payment", "A-1002", 180)]
    seen = tool_messages(state)
    assert seen["c2"].status == "success" and json.loads(seen["c2"].content)["refunded_usd"] == 180
    assert shop.h.approvals() == []


def test_rejected_interrupt_never_runs_the_handler(shop: Shop) -> None:
    g = refund_graph(shop)
    [paused] = g.invoke({"messages": [("user", "refund A-1002")]}, CONFIG)["__interrupt__"]
    state = g.invoke(Command(resume=hwa.reject_interrupt(shop.h, paused, by=FINANCE, reason="no")), CONFIG)
    assert shop.refunds() == []
    seen = tool_messages(state)
    assert seen["c2"].status == "error"
    assert seen["c2"].content.startswith("[tool call refused: approval_denied]")
    assert shop.h.approvals() == []


def test_an_answer_that_is_not_a_harness_decision_leaves_the_call_waiting(shop: Shop) -> None:
    g = refund_graph(shop)
    [paused] = g.invoke({"messages": [("user", "refund A-1002")]}, CONFIG)["__interrupt__"]
    state = g.invoke(Command(resume=True), CONFIG)
    [again] = state["__interrupt__"]  # the harness still holds the call: it asks again
    assert again.value == paused.value
    assert shop.refunds() == []
    state = g.invoke(Command(resume=hwa.approve_interrupt(shop.h, again, approver=FINANCE)), CONFIG)
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    with pytest.raises(hw.InvalidArgumentError) as bad:
        hwa.approve_interrupt(shop.h, {"something": "else"}, approver=FINANCE)
    assert bad.value.code == "invalid_interrupt"


def test_the_docs_example_runs(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[calls(("c1", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})),
                                         AIMessage("refunded")])
    scope: Dict[str, Any] = {"h": shop.h, "user": BOB, "finance_user": FINANCE, "model": model}
    exec(compile(doc_block("#### With LangGraph"), "docs/adapters.md", "exec"), scope)
    assert scope["state"]["messages"][-1].content == "refunded"
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]


def test_two_waiting_calls_in_one_step_are_answered_each_on_its_own(shop: Shop) -> None:
    model = ScriptedChatModel(responses=[
        calls(("c1", "refund_payment", {"order_id": "A-1001", "amount_usd": 150}),
              ("c2", "refund_payment", {"order_id": "A-1002", "amount_usd": 180})),
        AIMessage("done"),
    ])
    g = graph(model, hwa.tools(shop.h, shop.h.run(principal=BOB), interrupt=True))
    state = g.invoke({"messages": [("user", "refund both")]}, CONFIG)
    rounds = []
    while state.get("__interrupt__"):
        rounds.append(sorted(i.value["args"]["order_id"] for i in state["__interrupt__"]))
        answers = {}
        for i in state["__interrupt__"]:
            if i.value["args"]["order_id"] == "A-1001":
                answers[i.id] = hwa.reject_interrupt(shop.h, i, by=FINANCE)
            else:
                answers[i.id] = hwa.approve_interrupt(shop.h, i, approver=FINANCE)
        state = g.invoke(Command(resume=answers), CONFIG)
    # LangGraph's ToolNode surfaces one interrupt per step, from whichever call asked first, and
    # runs the whole step again on resume; each call is still decided and run once.
    assert sorted(sum(rounds, [])) == ["A-1001", "A-1002"]
    assert shop.refunds() == [("refund_payment", "A-1002", 180)]
    seen = tool_messages(state)
    assert seen["c1"].content.startswith("[tool call refused: approval_denied]")
    assert seen["c2"].status == "success" and json.loads(seen["c2"].content)["refunded_usd"] == 180
    assert shop.h.approvals() == []


def test_an_async_graph_interrupts_and_resumes_the_same_way(shop: Shop) -> None:
    g = refund_graph(shop)

    async def main() -> Dict[str, Any]:
        state = await g.ainvoke({"messages": [("user", "refund A-1002")]}, CONFIG)
        [paused] = state["__interrupt__"]
        assert shop.refunds() == []
        return await g.ainvoke(Command(resume=hwa.approve_interrupt(shop.h, paused, approver=FINANCE)), CONFIG)

    state = asyncio.run(main())
    assert state["messages"][-1].content == "refunded"
    # Each call ran once; the lookup started before the pause may finish after the refund.
    assert sorted(shop.calls) == [("lookup_order", "A-1002"), ("refund_payment", "A-1002", 180)]
