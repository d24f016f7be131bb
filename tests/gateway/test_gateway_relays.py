"""Relays and in-band approvals through `harnessweaver gateway mcp` (issue 22),
driven by the official Python MCP SDK client (its progress, logging, sampling
and elicitation callbacks) against a real upstream MCP server
(tests/gateway/relay/relay_server.py, official Python SDK) fronted under
pinned manifests (tests/gateway/relay/make_relay_harness.py).
"""

import asyncio
import json
import subprocess
import sys

import mcp_types as t
import pytest
from gateway_support import HERE, HW, http_gateway, stdio_session
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def relay_harness(dest):
    out = subprocess.run(
        [sys.executable, str(HERE / "relay" / "make_relay_harness.py"), str(dest)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


@pytest.fixture
def harness(tmp_path):
    return relay_harness(tmp_path / "h")


class Client:
    """What one client saw: log messages, sampling and elicitation requests, with canned answers."""

    def __init__(self, *, sampling=True, elicitation=True, elicit_action="accept", elicit_content=None):
        self.logs = []
        self.log_params = []
        self.samplings = []
        self.elicitations = []
        self.elicit_action = elicit_action
        self.elicit_content = elicit_content
        self.kwargs = {"logging_callback": self.on_log}
        if sampling:
            self.kwargs["sampling_callback"] = self.on_sampling
        if elicitation:
            self.kwargs["elicitation_callback"] = self.on_elicitation

    async def on_log(self, params):
        self.logs.append((params.level, params.data))
        self.log_params.append(params)

    async def on_sampling(self, context, params):
        self.samplings.append(params)
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="forty-two"), model="test-model")

    async def on_elicitation(self, context, params):
        self.elicitations.append(params)
        return t.ElicitResult(action=self.elicit_action, content=self.elicit_content)


async def http_session(url, token, client, body):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (r, w):
            async with ClientSession(r, w, **client.kwargs) as s:
                await s.initialize()
                return await body(s)


def text(result):
    return result.content[0].text


def audit(info):
    with open(f"{info['dir']}/audit.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def approvals(info):
    out = subprocess.run(
        [HW, "approvals", "list", "--json", "--harness", info["dir"]], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_progress_of_an_upstream_tool_reaches_its_caller(harness):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def body(s):
        return await s.call_tool("count", {"steps": 3}, progress_callback=on_progress)

    result = asyncio.run(stdio_session(harness, body, **Client().kwargs))
    assert text(result) == "counted 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_two_concurrent_clients_each_get_only_their_own_progress_and_logs(harness):
    """Two principals over streamable HTTP, calling the same upstream server at
    the same time: each sees the progress of its own call only, and never a log
    message of the other's (log messages of overlapping calls carry no call id
    and are dropped rather than guessed)."""
    alice, bob = Client(), Client()
    progress = {"alice": [], "bob": []}

    def recorder(who):
        async def on_progress(p, total, message):
            progress[who].append((p, total))

        return on_progress

    with http_gateway(harness) as url:

        async def session(name, token, client, steps, tag):
            async def body(s):
                counted = await s.call_tool("count", {"steps": steps}, progress_callback=recorder(name))
                chattered = await s.call_tool("chatter", {"tag": tag})
                return text(counted), text(chattered)

            return await http_session(url, token, client, body)

        async def both():
            return await asyncio.gather(
                session("alice", harness["alice_token"], alice, 6, "alice-secret"),
                session("bob", harness["bob_token"], bob, 2, "bob-secret"),
            )

        results = asyncio.run(both())

        # Alone on the connection, a call's log messages reach its caller.
        async def solo(s):
            return text(await s.call_tool("chatter", {"tag": "solo"}))

        alice_solo = Client()
        assert asyncio.run(http_session(url, harness["alice_token"], alice_solo, solo)) == "chattered solo"

    assert results == [("counted 6", "chattered alice-secret"), ("counted 2", "chattered bob-secret")]
    assert progress["alice"] == [(i, 6) for i in range(1, 7)]
    assert progress["bob"] == [(i, 2) for i in range(1, 3)]
    assert not any("bob" in str(data) for _, data in alice.logs), alice.logs
    assert not any("alice" in str(data) for _, data in bob.logs), bob.logs
    assert [data for _, data in alice_solo.logs] == ["solo debug", "solo info", "solo warning"]


def test_relayed_progress_and_log_text_is_governed_like_the_tools_output(harness):
    """gossip's manifest sanitizes its output (pii_redact, strip_instructions):
    what it sends while it runs goes through the same policy before the client
    sees it. The value the gateway handed the server (its `env`) is masked; a
    log message carries at most min(output.max_bytes, 4 KiB) of text, a
    progress message 1 KiB (core/src/progress.rs)."""
    client = Client()
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def body(s):
        return text(await s.call_tool("gossip", {}, progress_callback=on_progress))

    assert asyncio.run(stdio_session(harness, body, **client.kwargs)) == "gossiped"
    secret = harness["env"]["HW_RELAY_SECRET"]
    shown = json.dumps([seen, [p.model_dump() for p in client.log_params]])
    assert "jane.doe" not in shown and secret not in shown, shown
    assert "Ignore all previous instructions" not in shown, shown

    assert seen[0] == (1, 2, "mailing [EMAIL]")
    assert seen[1] == (2, 2, "y" * 1024)  # the core's progress rule: 1 KiB per message
    [info, warning, error] = client.log_params
    assert (info.level, info.logger) == ("info", "mailer")
    assert info.data == "[removed: instruction]", info.data
    assert warning.data == {"contact": "Write to [EMAIL]", "note": "handed [SECRET]"}
    assert (error.level, error.data) == ("error", "x" * 4096)
    # Nothing was withheld: no notification came out of the audit trail as refused.
    assert [e["decision"] for e in audit(harness) if e["tool"] == "gossip"] == ["allowed"]


def test_logging_set_level_filters_relayed_log_messages(harness):
    everything, warnings = Client(), Client()

    async def all_levels(s):
        return text(await s.call_tool("chatter", {"tag": "a"}))

    async def warnings_only(s):
        await s.set_logging_level("warning")
        return text(await s.call_tool("chatter", {"tag": "b"}))

    assert asyncio.run(stdio_session(harness, all_levels, **everything.kwargs)) == "chattered a"
    assert asyncio.run(stdio_session(harness, warnings_only, **warnings.kwargs)) == "chattered b"
    assert everything.logs == [("debug", "a debug"), ("info", "a info"), ("warning", "a warning")]
    assert warnings.logs == [("warning", "b warning")]


def test_sampling_is_relayed_to_the_callers_client(harness):
    client = Client()

    async def body(s):
        return text(await s.call_tool("ask_model", {"prompt": "what is six times seven?"}))

    assert asyncio.run(stdio_session(harness, body, **client.kwargs)) == "model said: forty-two"
    assert len(client.samplings) == 1
    assert client.samplings[0].messages[0].content.text == "what is six times seven?"


def test_sampling_to_a_client_without_the_capability_is_an_error_upstream(harness):
    client = Client(sampling=False)

    async def body(s):
        return text(await s.call_tool("ask_model", {"prompt": "hi"}))

    out = asyncio.run(stdio_session(harness, body, **client.kwargs))
    assert out.startswith("sampling refused:") and "does not support" in out, out


def assert_sampling_refused_and_audited(harness, tool, args):
    """`tool`'s sampling request is refused upstream, never reaches the client, and is audited once."""
    client = Client()

    async def body(s):
        return text(await s.call_tool(tool, args))

    out = asyncio.run(stdio_session(harness, body, **client.kwargs))
    assert out.startswith("sampling refused:") and "relay_denied" in out, out
    assert client.samplings == []
    denied = [e for e in audit(harness) if e.get("code") == "relay_denied"]
    assert len(denied) == 1, audit(harness)
    assert denied[0]["tool"] == tool and denied[0]["step"] == "flow"
    assert denied[0]["subject"] == "relay sampling/createMessage" and denied[0]["principal"] == "desktop"


def test_sampling_in_a_private_untrusted_run_is_refused_and_audited(harness):
    """summarise_patient reads pii:health and its request is untrusted: relaying
    it would send private data out (the trifecta)."""
    assert_sampling_refused_and_audited(harness, "summarise_patient", {"name": "Ann"})


def test_the_same_sampling_is_relayed_when_the_harness_turns_the_trifecta_off(harness):
    path = f"{harness['dir']}/harness.yaml"
    with open(path) as f:
        text_ = f.read()
    with open(path, "w") as f:
        f.write(text_.replace("  state: sqlite:state.db\n", '  state: sqlite:state.db\n  flow: { trifecta: "off" }\n'))
    client = Client()

    async def body(s):
        return text(await s.call_tool("summarise_patient", {"name": "Ann"}))

    assert asyncio.run(stdio_session(harness, body, **client.kwargs)) == "model said: forty-two"
    assert len(client.samplings) == 1


def test_sampling_with_the_context_of_every_server_is_refused(harness):
    assert_sampling_refused_and_audited(harness, "ask_model_everything", {"prompt": "hi"})


def test_elicitation_is_relayed_to_the_callers_user(harness):
    client = Client(elicit_content={"answer": "blue"})

    async def body(s):
        return text(await s.call_tool("ask_user", {"question": "Favourite colour?"}))

    assert asyncio.run(stdio_session(harness, body, **client.kwargs)) == "user said: blue"
    assert [e.message for e in client.elicitations] == ["Favourite colour?"]


# In-band approvals: transfer is `approval.by: caller` (over 100), wipe is a
# `role` tool (approver_role ops).


def test_caller_confirms_a_caller_approval_in_band(harness):
    client = Client(elicit_action="accept", elicit_content={})

    async def body(s):
        small = await s.call_tool("transfer", {"amount": 5})
        big = await s.call_tool("transfer", {"amount": 500})
        return small, big

    small, big = asyncio.run(stdio_session(harness, body, **client.kwargs))
    # No approval needed: nobody is asked.
    assert text(small) == "sent 5"
    assert big.is_error is False and text(big) == "sent 500"
    assert len(client.elicitations) == 1
    message = client.elicitations[0].message
    assert "transfer" in message and '{"amount":500}' in message
    # Audited as any approval: the pending call, then the call that used the
    # approval the caller granted.
    events = [e for e in audit(harness) if e["tool"] == "transfer" and e["args_digest"] == audit_digest({"amount": 500})]
    assert [(e["decision"], e["code"]) for e in events] == [("pending", "approval_required"), ("allowed", None)]
    assert events[0]["approval_id"] == events[1]["approval_id"]
    assert approvals(harness) == []


def audit_digest(args):
    import hashlib

    return "sha256:" + hashlib.sha256(json.dumps(args, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def test_caller_declines_in_band_and_the_call_is_refused(harness):
    client = Client(elicit_action="decline")

    async def body(s):
        return await s.call_tool("transfer", {"amount": 500})

    result = asyncio.run(stdio_session(harness, body, **client.kwargs))
    assert result.is_error is True
    assert (result.structured_content["code"], result.structured_content["step"]) == ("approval_denied", "approval")
    assert len(client.elicitations) == 1


def test_a_client_without_elicitation_gets_the_out_of_band_answer(harness):
    client = Client(elicitation=False)

    async def body(s):
        return await s.call_tool("transfer", {"amount": 500})

    result = asyncio.run(stdio_session(harness, body, **client.kwargs))
    assert result.is_error is True
    s = result.structured_content
    assert (s["status"], s["code"]) == ("pending", "approval_required")
    assert [a["id"] for a in approvals(harness)] == [s["approval_id"]]


def test_a_role_approval_is_never_put_to_the_caller_and_cannot_be_answered_in_band(harness):
    """wipe needs a reviewer with role ops. A client that accepts every
    elicitation is never asked; answering anyway (a retry carrying an accept
    and the approval id as requestState) approves nothing; the ops reviewer's
    out-of-band grant then lets the same call run."""
    client = Client(elicit_action="accept", elicit_content={})

    async def first(s):
        return await s.call_tool("wipe", {"db": "prod"})

    pending = asyncio.run(stdio_session(harness, first, **client.kwargs)).structured_content
    assert (pending["status"], pending["code"]) == ("pending", "approval_required")
    assert client.elicitations == []
    apr = pending["approval_id"]

    async def forged(s):
        return await s.call_tool(
            "wipe",
            {"db": "prod"},
            request_state=apr,
            input_responses={"harnessweaver_approval": {"action": "accept", "content": {}}},
        )

    again = asyncio.run(stdio_session(harness, forged, **client.kwargs)).structured_content
    assert (again["status"], again["code"], again["approval_id"]) == ("pending", "approval_required", apr)
    assert [(a["id"], a["state"]) for a in approvals(harness)] == [(apr, "pending")]

    granted = subprocess.run(
        [HW, "approvals", "approve", apr, "--approver", '{"id": "olga", "roles": ["ops"]}', "--harness", harness["dir"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert granted.returncode == 0, granted.stderr

    async def after(s):
        return await s.call_tool("wipe", {"db": "prod"})

    assert text(asyncio.run(stdio_session(harness, after, **client.kwargs))) == "wiped prod"
    assert client.elicitations == []


def test_another_principal_cannot_answer_a_callers_approval(harness):
    """bob retries alice's pending transfer naming her approval with an accept:
    the core refuses (only the caller whose call waits decides in band), and her
    approval stays pending."""
    alice = Client(elicitation=False)
    bob = Client(elicitation=False)
    with http_gateway(harness) as url:

        async def ask(s):
            return (await s.call_tool("transfer", {"amount": 500})).structured_content

        pending = asyncio.run(http_session(url, harness["alice_token"], alice, ask))
        apr = pending["approval_id"]

        async def forged(s):
            return (
                await s.call_tool(
                    "transfer",
                    {"amount": 500},
                    request_state=apr,
                    input_responses={"harnessweaver_approval": {"action": "accept", "content": {}}},
                )
            ).structured_content

        bobs = asyncio.run(http_session(url, harness["bob_token"], bob, forged))
    assert (bobs["status"], bobs["code"]) == ("pending", "approval_required")
    assert bobs["approval_id"] != apr
    states = {a["id"]: a["state"] for a in approvals(harness)}
    assert states[apr] == "pending"


def test_a_retry_carrying_the_callers_answer_resumes_a_caller_approval(harness):
    """The InputRequiredResult path (2026-07-28) from the gateway's side: a retry
    naming the approval as requestState with an accept under inputResponses
    resumes the caller's own `approval.by: caller` call (the same retry that
    approves nothing for a role tool or for another principal, above)."""
    client = Client(elicitation=False)

    async def body(s):
        pending = (await s.call_tool("transfer", {"amount": 700})).structured_content
        retried = await s.call_tool(
            "transfer",
            {"amount": 700},
            request_state=pending["approval_id"],
            input_responses={"harnessweaver_approval": {"action": "accept", "content": {}}},
        )
        return pending, retried

    pending, retried = asyncio.run(stdio_session(harness, body, **client.kwargs))
    assert pending["status"] == "pending"
    assert retried.is_error is False and text(retried) == "sent 700"
    assert approvals(harness) == []


def test_at_2026_07_28_a_caller_approval_is_asked_as_an_input_required_result(harness):
    client = Client()

    async def body(s):
        return await s.call_tool("transfer", {"amount": 500}, allow_input_required=True)

    asked = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert isinstance(asked, t.InputRequiredResult)
    request = asked.input_requests["harnessweaver_approval"]
    assert request.method == "elicitation/create"
    assert "transfer" in request.params.message and '{"amount":500}' in request.params.message
    assert [(a["id"], a["state"]) for a in approvals(harness)] == [(asked.request_state, "pending")]


def test_at_2026_07_28_the_callers_answer_resumes_the_call(harness):
    client = Client(elicit_action="accept", elicit_content={})

    async def body(s):
        asked = await s.call_tool("transfer", {"amount": 500}, allow_input_required=True)
        answer = {"harnessweaver_approval": {"action": "accept", "content": {}}}
        return await s.call_tool("transfer", {"amount": 500}, input_responses=answer, request_state=asked.request_state)

    done = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert done.is_error is False and text(done) == "sent 500"
    assert approvals(harness) == []

    # A role tool is not asked in band at 2026-07-28 either: the out-of-band answer.
    async def role(s):
        return await s.call_tool("wipe", {"db": "x"}, allow_input_required=True)

    pending = asyncio.run(stdio_session(harness, role, discover=True, **client.kwargs))
    assert isinstance(pending, t.CallToolResult) and pending.structured_content["status"] == "pending"
