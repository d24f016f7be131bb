"""Type-checked, never run (`make lint-python`: mypy --strict with
warn_unused_ignores): what the API's types accept and give (issue 18, item 7).
Each `# type: ignore[code]` marks a line mypy must refuse; if the API's types
stopped refusing it, the ignore would be unused and mypy would fail."""

from __future__ import annotations

from typing import Dict, List, Optional

from typing_extensions import assert_type

import harnessweaver as hw
from harnessweaver import CallResult, JSONObject, JSONValue, Principal, PrincipalDict


def principals(h: hw.Harness) -> None:
    # A Principal, or a dict with the principal's keys (only `id` required).
    h.call("t", {}, principal=Principal("bot", scopes=["orders:read"]))
    h.call("t", {}, principal={"id": "bot"})
    h.call("t", {}, principal={"id": "bot", "roles": ["support"], "scopes": [], "attrs": {"team": "eu"}})
    p: PrincipalDict = {"id": "bot", "scopes": ["orders:read"]}
    h.explain("t", {}, principal=p)
    h.begin("t", {}, principal=p, tenant="acme")
    h.run(principal=p)
    h.tool_specs("openai", principal=p)
    h.approve("id", approver={"id": "finance-lead", "roles": ["finance"]})
    h.deny("id", "no", by=Principal("finance-lead"))
    h.compensate("call-1", principal=p, tenant="acme")
    h.accept_candidate("id", "cand-1", approver={"id": "lead"})
    h.resolve_effect("call-1", True, by="ops")
    h.compensate("call-1")  # type: ignore[call-arg]
    # Not a principal: a misspelt key, a wrong type, no id, anything else.
    h.call("t", {}, principal={"idd": "bot"})  # type: ignore[arg-type]
    h.call("t", {}, principal={"id": 7})  # type: ignore[arg-type]
    h.call("t", {}, principal={"scopes": ["x"]})  # type: ignore[arg-type]
    h.call("t", {}, principal="bot")  # type: ignore[arg-type]
    h.run(principal=42)  # type: ignore[arg-type]


async def async_principals(h: hw.Harness) -> None:
    await h.acall("t", {}, principal={"id": "bot"})
    await h.acall("t", {}, principal=["bot"])  # type: ignore[arg-type]
    await h.aapprove("id", approver={"id": "lead"})


def results(r: CallResult, h: hw.Harness) -> None:
    # Outputs and results are JSON values, not Any.
    assert_type(r.output, JSONValue)
    assert_type(r.to_dict(), JSONObject)
    assert_type(r.approval, Optional[JSONObject])
    assert_type(r.output_report, Optional[JSONObject])
    assert_type(r.would_refuse, List[JSONObject])
    assert_type(h.explain("t", {}, principal={"id": "bot"}), Dict[str, JSONValue])
    assert_type(h.tool_specs(), List[JSONObject])
    assert_type(h.approvals(), List[JSONObject])
    assert_type(h.effects("unknown"), List[JSONObject])
    assert_type(h.compensate("call-1", principal={"id": "bob"}), JSONObject)
    # A JSON value must be narrowed before use, as json.loads's would be if it were typed.
    r.output["customer"]  # type: ignore[index, call-overload]
    if isinstance(r.output, dict):
        assert_type(r.output["customer"], JSONValue)
