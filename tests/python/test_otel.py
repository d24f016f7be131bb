"""Issue 24: each governed call reaches the host's own OpenTelemetry API as an
``execute_tool <tool>`` span (the core's span record), read back with the
SDK's in-memory exporter; no argument or output value in any attribute; the
harness's own audit trail unchanged; nothing done without the API or an SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_governor import tool, write_harness

import harnessweaver as hw

ALICE = {"id": "alice", "roles": ["support"]}
SECRET = "sk-live-4242-do-not-trace"  # an argument value
OUTPUT = "refund-receipt-7f3a"  # an output value


SCHEMA = {
    "type": "object",
    "properties": {"note": {"type": "string"}, "amount": {"type": "integer", "maximum": 100}},
    "required": ["note", "amount"],
}


def harness(dir: Path, **spec: Any) -> Path:
    return write_harness(dir, [tool("refund", description="Refunds an order.", input_schema=SCHEMA)], **spec)


def refund(note: str, amount: int) -> Dict[str, Any]:
    return {"receipt": OUTPUT, "amount": amount}


@pytest.fixture(scope="module")
def reader() -> InMemoryMetricReader:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(provider)
    if metrics.get_meter_provider() is not provider:
        pytest.skip("another test set the process's meter provider first")
    return reader


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another test set the process's tracer provider first")
    return exporter


def test_calls_become_execute_tool_spans_without_argument_or_output_values(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    h = hw.load(harness(tmp_path, audit={"sink": "logs/audit.jsonl"}), handlers={"refund": refund})
    allowed = h.call("refund", {"note": SECRET, "amount": 7}, principal=ALICE)
    assert allowed.allowed and allowed.output["receipt"] == OUTPUT
    with pytest.raises(hw.InvalidArguments) as refused:
        h.call("refund", {"note": SECRET, "amount": 5000}, principal=ALICE)

    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name == "execute_tool refund"]
    assert len(calls) == 2
    ok, no = calls
    assert ok.kind == trace.SpanKind.INTERNAL
    attributes = dict(ok.attributes or {})
    # The policy version that decided (the digest approvals are bound to).
    assert str(attributes.pop("gen_ai.guardrail.policy.version")).startswith("sha256:")
    assert attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.call.id": allowed.call_id,
        "gen_ai.tool.description": "Refunds an order.",
        "gen_ai.guardrail.verdict.type": "allow",
        "harnessweaver.run.id": allowed.run_id,
        "harnessweaver.principal": "alice",
    }
    assert ok.status.is_ok and "error.type" not in (ok.attributes or {})
    # The refusal: its code as error.type, the span's status an error.
    assert no.attributes is not None
    assert no.attributes["error.type"] == refused.value.code == "invalid_args"
    assert no.attributes["gen_ai.guardrail.verdict.type"] == "deny"
    assert no.attributes["harnessweaver.code"] == "invalid_args"
    assert no.status.status_code == trace.StatusCode.ERROR
    # The phases are children of their call's span.
    children = {(s.name, s.parent.span_id) for s in spans if s.parent is not None}
    assert ("harnessweaver.decide", ok.context.span_id) in children
    assert ("harnessweaver.invoke", ok.context.span_id) in children
    assert ("harnessweaver.decide", no.context.span_id) in children
    assert ("harnessweaver.invoke", no.context.span_id) not in children
    # No argument or output value in any attribute of any span.
    for span in spans:
        for value in (span.attributes or {}).values():
            assert SECRET not in str(value) and OUTPUT not in str(value) and "5000" != str(value)
    # The harness's own trail is still written (the shim observes beside it, it does not replace it).
    trail = (tmp_path / "logs" / "audit.jsonl").read_text(encoding="utf-8")
    assert allowed.call_id in trail and trail.count('"tool":"refund"') == 2


def test_the_hosts_audit_callback_still_gets_every_event(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    events: List[Dict[str, Any]] = []
    h = hw.load(harness(tmp_path, audit={"sink": "callback"}), handlers={"refund": refund}, audit=events.append)
    h.call("refund", {"note": "x", "amount": 1}, principal=ALICE)
    assert [e["tool"] for e in events] == ["refund"]
    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")] == ["execute_tool refund"]


SUBPROCESS = """
import json, sys
import harnessweaver as hw
from harnessweaver import _governor
from harnessweaver.adapters import opentelemetry as _otel
asked = []
observed = []
make_observer = _otel.observer
def counting():
    observe, attach = make_observer()
    return (lambda event: (observed.append(1), observe(event))[1]), attach
_otel.observer = counting
request = _governor.Harness.request
_governor.Harness.request = lambda self, m, a: (asked.append(m), request(self, m, a))[1]
h = hw.load(sys.argv[1], handlers={"refund": lambda note, amount: amount})
h.call("refund", {"note": "x", "amount": 1}, principal={"id": "alice"})
before = list(asked)
events_before = len(observed)
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
h.call("refund", {"note": "x", "amount": 2}, principal={"id": "alice"})
print(json.dumps({"before": before, "after": asked, "events_before": events_before, "events_after": len(observed),
                  "spans": [s.name for s in exporter.get_finished_spans()]}))
"""


def test_no_sdk_configured_costs_no_span_and_a_later_sdk_gets_them(tmp_path: Path) -> None:
    path = harness(tmp_path)
    out = subprocess.run([sys.executable, "-c", SUBPROCESS, str(path)], capture_output=True, text=True, check=True).stdout
    seen = json.loads(out)
    # The API's proxy provider: the core hands the observer no event at all
    # (it builds none: the shim turned the observer off at load), asks no span.
    assert seen["events_before"] == 0 and "span" not in seen["before"]
    assert seen["before"].count("observe") == 1  # the switch, set once at load
    # A provider set after load turns it on: the next call is observed and becomes a span.
    assert seen["events_after"] == 1
    assert seen["after"].count("span") == 1
    assert "execute_tool refund" in seen["spans"]


def test_without_the_api_no_observer_is_given() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # not installed: its import raises ImportError
        from harnessweaver.adapters import opentelemetry as _otel
        print(_otel.observer()[0] is None, _otel._trace is None)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


def test_approval_waits_reach_the_meter_and_decisions_name_the_policy(
    tmp_path: Path, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    exporter.clear()
    pay = tool("pay", description="Pays.", input_schema=SCHEMA)
    review = {"rules": [{"name": "pay-review", "effect": "approve", "tools": ["pay"]}]}
    path = write_harness(tmp_path, [pay], policy=review)
    h = hw.load(path, handlers={"pay": refund}, clock_ms=1_000, sequential_ids=True)
    with pytest.raises(hw.ApprovalRequired) as first:
        h.call("pay", {"note": SECRET, "amount": 50}, principal=ALICE)
    h.advance_ms(4_000)
    h.deny(first.value.approval["id"], "no", by={"id": "bob"})
    with pytest.raises(hw.ApprovalRequired) as second:
        h.call("pay", {"note": "x", "amount": 60}, principal=ALICE)
    h.advance_ms(250)
    assert h.approve(second.value.approval["id"], approver={"id": "bob"}).allowed

    data = reader.get_metrics_data()
    assert data is not None
    points = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "harnessweaver.approval.wait"
        for p in m.data.data_points
    ]
    by_state = {dict(p.attributes or {})["harnessweaver.approval.state"]: p for p in points}
    assert set(by_state) == {"approved", "denied"}
    assert (by_state["denied"].count, by_state["denied"].sum) == (1, 4.0)
    assert (by_state["approved"].count, by_state["approved"].sum) == (1, 0.25)
    assert all(dict(p.attributes or {})["gen_ai.tool.name"] == "pay" for p in points)
    # The pending call's span: escalate, the rule that asked, and the policy version it was asked under.
    pending = [s for s in exporter.get_finished_spans() if s.name == "execute_tool pay"][0]
    assert pending.attributes is not None
    assert pending.attributes["gen_ai.guardrail.verdict.type"] == "escalate"
    assert list(pending.attributes["gen_ai.guardrail.policy.rule.id"]) == ["harness/pay-review"]
    assert str(pending.attributes["gen_ai.guardrail.policy.version"]).startswith("sha256:")
