"""Relays at protocol 2026-07-28 (issue 22): what an upstream MCP tool asks
of the client mid-call (sampling, elicitation) reaches a stateless client as
an `InputRequiredResult`; the gateway holds the upstream call open and
resumes it when the client retries with `inputResponses` and the sealed
`requestState`. Driven by the official Python SDK client (2026-07-28 after
`server/discover`) against tests/gateway/relay/relay_server.py, and the
`-32021` refusal of a call whose manifest declares a client capability the
request does not (`spec.client_capabilities`).
"""

import asyncio

import mcp_types as t
import pytest
from mcp.client.client import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from gateway_support import http_gateway, stdio_session
from test_gateway_relays import Client, audit, relay_harness, text


@pytest.fixture
def harness(tmp_path):
    return relay_harness(tmp_path / "h")


ANSWER = {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "test-model"}


def test_an_upstream_sampling_request_is_asked_as_an_input_required_result_and_resumed(harness):
    client = Client()
    args = {"prompt": "six times seven?"}

    async def body(s):
        asked = await s.call_tool("ask_model", args, allow_input_required=True)
        (key, request), = asked.input_requests.items()
        done = await s.call_tool("ask_model", args, input_responses={key: ANSWER}, request_state=asked.request_state)
        # The state named a call that has resumed: a replay finds nothing.
        with pytest.raises(MCPError) as replay:
            await s.call_tool("ask_model", args, input_responses={key: ANSWER}, request_state=asked.request_state)
        return asked, request, done, replay.value

    asked, request, done, replay = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert isinstance(asked, t.InputRequiredResult) and asked.request_state.startswith("hw1.")
    assert request.method == "sampling/createMessage"
    assert request.params.messages[0].content.text == "six times seven?"
    assert done.is_error is False and text(done) == "model said: forty-two"
    assert client.samplings == []  # asked through the result, never as a server request
    assert replay.error.code == -32602 and replay.error.data == {"reason": "gone"}


def test_an_upstream_elicitation_is_asked_and_the_users_answer_goes_upstream(harness):
    client = Client()
    args = {"question": "Favourite colour?"}

    async def body(s):
        asked = await s.call_tool("ask_user", args, allow_input_required=True)
        (key, request), = asked.input_requests.items()
        answer = {key: {"action": "accept", "content": {"answer": "green"}}}
        return request, await s.call_tool("ask_user", args, input_responses=answer, request_state=asked.request_state)

    request, done = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert request.method == "elicitation/create" and request.params.message == "Favourite colour?"
    assert text(done) == "user said: green"


def test_a_request_state_is_bound_to_its_call(harness):
    client = Client()

    async def body(s):
        asked = await s.call_tool("ask_model", {"prompt": "a"}, allow_input_required=True)
        (key, _), = asked.input_requests.items()
        errors = {}
        for name, args, state in [
            ("tampered", {"prompt": "a"}, asked.request_state + "0"),
            ("forged", {"prompt": "a"}, "hw1.7b7d.00"),
            ("other_call", {"prompt": "b"}, asked.request_state),
        ]:
            with pytest.raises(MCPError) as e:
                await s.call_tool("ask_model", args, input_responses={key: ANSWER}, request_state=state)
            errors[name] = (e.value.error.code, e.value.error.data["reason"])
        # None of these used the held call up: the right retry still resumes it.
        done = await s.call_tool("ask_model", {"prompt": "a"}, input_responses={key: ANSWER}, request_state=asked.request_state)
        return errors, done

    errors, done = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert errors == {"tampered": (-32602, "tampered"), "forged": (-32602, "tampered"), "other_call": (-32602, "other_call")}
    assert text(done) == "model said: forty-two"


def test_another_caller_cannot_resume_a_held_call(harness):
    async def session(token, body):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with SdkClient(streamable_http_client(url, http_client=http), mode="auto", cache=None, **Client().kwargs) as c:
                return await body(c.session)

    async def alice(s):
        return await s.call_tool("ask_model", {"prompt": "a"}, allow_input_required=True)

    async def bob(s):
        with pytest.raises(MCPError) as e:
            await s.call_tool("ask_model", {"prompt": "a"}, input_responses={key: ANSWER}, request_state=asked.request_state)
        return e.value.error

    with http_gateway(harness) as url:
        asked = asyncio.run(session(harness["alice_token"], alice))
        (key, _), = asked.input_requests.items()
        error = asyncio.run(session(harness["bob_token"], bob))
    assert error.code == -32602 and error.data == {"reason": "other_caller"}


def test_a_relay_in_a_private_untrusted_run_is_refused_not_asked(harness):
    """The core decides each relayed request first: summarise_patient's
    sampling request would be the trifecta, so the upstream gets relay_denied
    and the client is never asked."""
    client = Client()

    async def body(s):
        return await s.call_tool("summarise_patient", {"name": "Ann"}, allow_input_required=True)

    done = asyncio.run(stdio_session(harness, body, discover=True, **client.kwargs))
    assert isinstance(done, t.CallToolResult)
    assert text(done).startswith("sampling refused:") and "relay_denied" in text(done)
    denied = [e for e in audit(harness) if e.get("code") == "relay_denied"]
    assert [(e["tool"], e["subject"]) for e in denied] == [("summarise_patient", "relay sampling/createMessage")]


def test_a_call_needing_an_undeclared_client_capability_is_refused_32021(harness):
    """ask_user's manifest says `client_capabilities: [elicitation]`: a
    2026-07-28 request without elicitation is refused before any step runs."""

    async def body(s):
        with pytest.raises(MCPError) as e:
            await s.call_tool("ask_user", {"question": "?"}, allow_input_required=True)
        return e.value.error

    error = asyncio.run(stdio_session(harness, body, discover=True, **Client(elicitation=False).kwargs))
    assert error.code == -32021 and error.data == {"requiredCapabilities": {"elicitation": {}}}
    assert [e for e in audit(harness) if e.get("tool") == "ask_user"] == []

    async def declared(s):
        return await s.call_tool("ask_user", {"question": "?"}, allow_input_required=True)

    asked = asyncio.run(stdio_session(harness, declared, discover=True, **Client().kwargs))
    assert isinstance(asked, t.InputRequiredResult)
