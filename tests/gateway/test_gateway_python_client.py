"""`harnessweaver gateway mcp` driven by the official Python MCP SDK client
(PyPI `mcp`, pinned in tests/gateway/requirements.txt), over stdio and
streamable HTTP; approvals resolved by `harnessweaver approvals` in another
process through the shared SQLite state file.

The harness (tests/gateway/harness, filled in by make_harness.py) has:
add and shout (upstream MCP tools of tests/mcp/py_server.py; add over 100
waits for finance; shout for tenant acme only), calc (code, scope calc:run,
denied when the code mentions 'secret'), payroll (scope payroll:admin),
retired (disabled) and greet (native: hidden by the bare CLI).
"""
import asyncio
import json
import os
import subprocess
import sys
import time

import httpx2
import jwt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway_support import HERE, HW, approvals, gateway_env, http_gateway, make_harness, stdio_session

FINANCE = '{"id": "fiona", "roles": ["finance"]}'


def run(coro):
    return asyncio.run(coro)


async def http_session(url, token, body):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return await body(s)


def names(tools):
    return sorted(t.name for t in tools.tools)


def refusal(result):
    assert result.is_error is True, result
    return result.structured_content


@pytest.fixture
def harness(tmp_path):
    return make_harness(tmp_path / "h")


def test_stdio_lists_only_what_the_caller_may_use_with_the_pinned_definitions(harness):
    async def body(s):
        return await s.list_tools()

    tools = run(stdio_session(harness, body))
    # desktop: roles [support], scopes [calc:run], tenant acme. payroll needs a
    # scope, retired is disabled, greet is native (no host here).
    assert names(tools) == ["add", "calc", "shout"]
    calc = next(t for t in tools.tools if t.name == "calc")
    assert calc.description == "Evaluate a small calculation written in Python."
    assert calc.input_schema["properties"]["code"] == {"type": "string", "maxLength": 200}
    assert calc.input_schema["additionalProperties"] is False


def test_stdio_calls_and_refusals_carry_codes(harness):
    async def body(s):
        out = {}
        out["calc"] = await s.call_tool("calc", {"code": "6 * 7"})
        out["add"] = await s.call_tool("add", {"a": 2, "b": 3})
        out["shout"] = await s.call_tool("shout", {"text": "hi"})
        out["schema"] = await s.call_tool("calc", {"code": 5})
        out["extra"] = await s.call_tool("calc", {"code": "1", "rm": True})
        out["policy"] = await s.call_tool("calc", {"code": "'secret' + 'x'"})
        out["scope"] = await s.call_tool("payroll", {"code": "1"})
        out["disabled"] = await s.call_tool("retired", {"code": "1"})
        out["unknown"] = await s.call_tool("rm_rf", {})
        out["native"] = await s.call_tool("greet", {"name": "Ada"})
        return out

    out = run(stdio_session(harness, body))
    assert out["calc"].is_error is False
    assert json.loads(out["calc"].content[0].text)["value"] == 42
    assert out["add"].is_error is False and out["add"].content[0].text == "5"
    assert out["shout"].content[0].text == "HI"
    expected = {
        "schema": ("invalid_args", "validate"),
        "extra": ("invalid_args", "validate"),
        "policy": ("policy_denied", "policy"),
        "scope": ("scope_missing", "policy"),
        "disabled": ("tool_disabled", "resolve"),
        "unknown": ("unknown_tool", "resolve"),
        "native": ("transport_refused", "invoke"),
    }
    for key, (code, step) in expected.items():
        s = refusal(out[key])
        assert (s["status"], s["code"], s["step"]) == ("refused", code, step), (key, s)
        text = out[key].content[0].text
        assert text.startswith(f"[tool call refused: {code}]"), text
    # The value refused is never echoed back.
    assert "secret" not in out["policy"].content[0].text


def test_approval_pending_then_approved_from_another_process(harness):
    async def ask(s):
        return await s.call_tool("add", {"a": 200, "b": 3})

    first = run(stdio_session(harness, ask))
    s = refusal(first)
    assert s["status"] == "pending" and s["code"] == "approval_required"
    apr = s["approval_id"]
    assert apr in first.content[0].text

    listed = approvals(harness, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [open_one] = [a for a in json.loads(listed.stdout) if a["id"] == apr]
    assert (open_one["tool"], open_one["state"], open_one["args"]) == ("add", "pending", {"a": 200, "b": 3})

    # Asking again before anyone decides points at the same approval.
    again = refusal(run(stdio_session(harness, ask)))
    assert again["status"] == "pending" and again["approval_id"] == apr

    # add needs role finance: the default approver ($USER, no roles) is refused.
    nobody = approvals(harness, "approve", apr)
    assert nobody.returncode == 1 and "[approver_not_allowed]" in nobody.stderr
    granted = approvals(harness, "approve", apr, "--approver", FINANCE)
    assert granted.returncode == 0, granted.stderr
    assert "approved" in granted.stdout

    async def retry_twice(s):
        return await s.call_tool("add", {"a": 200, "b": 3}), await s.call_tool("add", {"a": 200, "b": 3})

    done, after = run(stdio_session(harness, retry_twice))
    assert done.is_error is False and done.content[0].text == "203"
    # Single use: the next identical call waits again, under a new id.
    s = refusal(after)
    assert s["status"] == "pending" and s["approval_id"] != apr
    # Other arguments are not covered by someone else's grant.
    assert approvals(harness, "approve", s["approval_id"], "--approver", FINANCE).returncode == 0

    async def other_args(s):
        return await s.call_tool("add", {"a": 201, "b": 3})

    assert refusal(run(stdio_session(harness, other_args)))["status"] == "pending"


def test_denied_approval_named_in_meta_is_refused_with_its_code(harness):
    async def ask(s):
        return await s.call_tool("add", {"a": 300, "b": 1})

    apr = refusal(run(stdio_session(harness, ask)))["approval_id"]
    denied = approvals(harness, "deny", apr, "--reason", "too much", "--approver", FINANCE)
    assert denied.returncode == 0, denied.stderr
    assert approvals(harness, "approve", apr, "--approver", FINANCE).returncode == 1

    async def ask_with_meta(s):
        return await s.call_tool("add", {"a": 300, "b": 1}, meta={"harnessweaver/approval_id": apr})

    s = refusal(run(stdio_session(harness, ask_with_meta)))
    assert (s["status"], s["code"], s["step"]) == ("refused", "approval_denied", "approval")


def test_stdio_identity_from_flags_overrides_the_configured_one(harness):
    async def body(s):
        return await s.list_tools()

    # A principal with the payroll scope, in another tenant: shout (acme only) disappears.
    tools = run(stdio_session(harness, body, principal={"id": "ops", "scopes": ["payroll:admin"]}, tenant="globex"))
    assert names(tools) == ["add", "payroll"]


def test_http_without_or_with_a_bad_token_gets_401_and_no_tools(harness):
    with http_gateway(harness) as url:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        for auth in [None, "Bearer nope", f"Basic {harness['alice_token']}", "Bearer " + harness["alice_token"] + "x"]:
            h = dict(headers, **({"Authorization": auth} if auth else {}))
            r = httpx2.post(url, json=init, headers=h)
            assert r.status_code == 401, (auth, r.status_code)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert "tools" not in r.text

        async def body(s):
            return await s.list_tools()

        with pytest.raises(Exception):
            run(http_session(url, None, body))
        with pytest.raises(Exception):
            run(http_session(url, "wrong", body))


def test_http_keys_map_to_principals_and_tenants(harness):
    with http_gateway(harness) as url:
        async def alice(s):
            return await s.list_tools(), await s.call_tool("payroll", {"code": "1000 * 12"})

        tools, pay = run(http_session(url, harness["alice_token"], alice))
        # alice: scopes calc:run and payroll:admin, tenant acme.
        assert names(tools) == ["add", "calc", "payroll", "shout"]
        assert json.loads(pay.content[0].text)["value"] == 12000

        async def bob(s):
            return await s.list_tools(), await s.call_tool("shout", {"text": "x"}), await s.call_tool("add", {"a": 1, "b": 1})

        tools, shout, add = run(http_session(url, harness["bob_token"], bob))
        # bob: no scopes, tenant globex.
        assert names(tools) == ["add"]
        assert refusal(shout)["code"] == "tenant_not_enabled"
        assert add.content[0].text == "2"


def test_http_approval_resolved_while_the_gateway_runs(harness):
    with http_gateway(harness) as url:
        async def ask(s):
            return await s.call_tool("add", {"a": 500, "b": 5})

        apr = refusal(run(http_session(url, harness["bob_token"], ask)))["approval_id"]
        assert approvals(harness, "approve", apr, "--approver", FINANCE).returncode == 0
        done = run(http_session(url, harness["bob_token"], ask))
        assert done.is_error is False and done.content[0].text == "505"


def test_http_session_is_bound_to_the_caller_who_opened_it(harness):
    """Issue 17 item 8: an MCP session belongs to the principal and tenant that
    opened it; another authenticated caller who knows its id gets 404 for
    every use of it (list, call, the SSE stream, DELETE), and the session
    goes on serving its owner."""
    accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def headers(token, sid, **more):
        return dict(accept, Authorization=f"Bearer {token}", **{"Mcp-Session-Id": sid}, **more)

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 20, "b": 22}}}
    alice, bob = harness["alice_token"], harness["bob_token"]
    with http_gateway(harness) as url:
        r = httpx2.post(url, json=init, headers=dict(accept, Authorization=f"Bearer {alice}"))
        assert r.status_code == 200, r.text
        sid = r.headers["mcp-session-id"]
        r = httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers(alice, sid))
        assert r.status_code == 202, r.text

        for body in (listing, call, {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            r = httpx2.post(url, json=body, headers=headers(bob, sid), timeout=10)
            assert r.status_code == 404, (body["method"], r.status_code, r.text)
            assert "42" not in r.text and "add" not in r.text
        with httpx2.stream("GET", url, headers=headers(bob, sid), timeout=10) as r:
            assert r.status_code == 404
        r = httpx2.delete(url, headers=headers(bob, sid), timeout=10)
        assert r.status_code == 404

        # The owner's session is untouched, and only the owner ends it.
        r = httpx2.post(url, json=listing, headers=headers(alice, sid), timeout=10)
        assert r.status_code == 200 and '"payroll"' in r.text, r.text
        r = httpx2.post(url, json=call, headers=headers(alice, sid), timeout=30)
        assert r.status_code == 200 and '"text":"42"' in r.text.replace(" ", ""), r.text
        assert httpx2.delete(url, headers=headers(alice, sid), timeout=10).status_code in (200, 202, 204)
        assert httpx2.post(url, json=listing, headers=headers(alice, sid), timeout=10).status_code == 404


def add_trifecta_tools(info, run=None):
    """Two code tools: `lookup` reads customer PII (the run becomes private, and
    its output is untrusted), `send` has egress (refused `trifecta` after it)."""
    tools = os.path.join(info["dir"], "tools")
    common = ("  transport: code\n  sandbox: monty\n  input_schema:\n    type: object\n"
              "    properties: { code: { type: string } }\n    required: [code]\n")
    with open(os.path.join(tools, "lookup.yaml"), "w") as f:
        f.write("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: lookup }\nspec:\n"
                "  description: Look up a customer.\n  data_access: [\"pii:customer\"]\n" + common)
    with open(os.path.join(tools, "send.yaml"), "w") as f:
        f.write("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: send }\nspec:\n"
                "  description: Send a message.\n  egress: [mail.example]\n" + common)
    if run:
        text = open(info["harness"]).read().replace("  gateway:\n", f"  gateway:\n    run: {run}\n", 1)
        open(info["harness"], "w").write(text)


def test_http_new_session_with_same_token_keeps_the_trifecta_refusal(tmp_path):
    """Issue 17 item 15: labels are not laundered by reconnecting. With the
    default `spec.gateway.run: principal`, a caller refused `trifecta` who
    opens a new MCP session (or a new stdio gateway process) with the same
    identity is still refused; with `run: session` a new session starts clean."""
    info = make_harness(tmp_path / "h")
    add_trifecta_tools(info)

    async def taint(s):
        read = await s.call_tool("lookup", {"code": "'Ada, ada@example.com'"})
        return read, await s.call_tool("send", {"code": "'hi'"})

    async def send(s):
        return await s.call_tool("send", {"code": "'hi'"})

    with http_gateway(info) as url:
        read, first = run(http_session(url, info["alice_token"], taint))
        assert read.is_error is False, read
        assert refusal(first)["code"] == "trifecta"
        again = run(http_session(url, info["alice_token"], send))
        assert refusal(again)["code"] == "trifecta"
        # Another principal's run is its own: bob was never tainted.
        assert run(http_session(url, info["bob_token"], send)).is_error is False
    # A new gateway process (stdio) as the same caller, over the same store.
    stdio = make_harness(tmp_path / "s")
    add_trifecta_tools(stdio)
    assert refusal(run(stdio_session(stdio, taint))[1])["code"] == "trifecta"
    assert refusal(run(stdio_session(stdio, send)))["code"] == "trifecta"

    per_session = make_harness(tmp_path / "p")
    add_trifecta_tools(per_session, run="session")
    with http_gateway(per_session) as url:
        assert refusal(run(http_session(url, per_session["alice_token"], taint))[1])["code"] == "trifecta"
        assert run(http_session(url, per_session["alice_token"], send)).is_error is False


@pytest.mark.parametrize("algorithm", ["HS256", "RS256", "ES256"])
def test_http_jwt_maps_claims_and_refuses_bad_tokens(tmp_path, algorithm):
    info = make_harness(tmp_path / "h", "--jwt", algorithm)
    key = info["jwt"].get("secret") or info["jwt"]["private_key_pem"]
    now = int(time.time())
    claims = {"sub": "carol", "roles": ["finance"], "scope": "calc:run payroll:admin", "tenant": "globex",
              "iss": "test-idp", "aud": "harnessweaver", "iat": now, "exp": now + 600}
    good = jwt.encode(claims, key, algorithm=algorithm)
    with http_gateway(info) as url:
        async def body(s):
            return await s.list_tools()

        # carol in globex: shout (acme only) hidden; both scopes held.
        assert names(run(http_session(url, good, body))) == ["add", "calc", "payroll"]
        bad = {
            "expired": jwt.encode(dict(claims, exp=now - 3600, iat=now - 7200), key, algorithm=algorithm),
            "audience": jwt.encode(dict(claims, aud="someone-else"), key, algorithm=algorithm),
            "issuer": jwt.encode(dict(claims, iss="evil"), key, algorithm=algorithm),
            "no-subject": jwt.encode({k: v for k, v in claims.items() if k != "sub"}, key, algorithm=algorithm),
            # issue 17 item 2: configured claims are required, nbf is checked.
            "no-issuer": jwt.encode({k: v for k, v in claims.items() if k != "iss"}, key, algorithm=algorithm),
            "no-audience": jwt.encode({k: v for k, v in claims.items() if k != "aud"}, key, algorithm=algorithm),
            "no-exp": jwt.encode({k: v for k, v in claims.items() if k != "exp"}, key, algorithm=algorithm),
            "nbf-tomorrow": jwt.encode(dict(claims, nbf=now + 86400, exp=now + 2 * 86400), key, algorithm=algorithm),
            "forged": jwt.encode(claims, "not-the-key-" * 4, algorithm="HS256"),
            "alg-none": jwt.encode(claims, None, algorithm="none"),
            "tampered": good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB"),
        }
        for why, token in bad.items():
            r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})
            assert r.status_code == 401, (why, r.status_code, r.text)


def test_approvals_cli_refuses_the_memory_store(tmp_path):
    info = make_harness(tmp_path / "h", "--state", "memory")
    r = approvals(info, "list")
    assert r.returncode == 1
    assert "[memory_store]" in r.stderr and "sqlite:" in r.stderr


def test_gateway_http_without_credentials_does_not_start(tmp_path):
    info = make_harness(tmp_path / "h")
    text = open(info["harness"]).read()
    start = text.index("    http:\n")
    open(info["harness"], "w").write(text[:start])
    r = subprocess.run([HW, "gateway", "mcp", info["dir"], "--http", "127.0.0.1:0"], env=gateway_env(info),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "needs credentials" in r.stderr


# -- hw.serve_mcp: native tools served by the Python host --------------------

PY_HOST = str(HERE / "py_host.py")


def test_serve_mcp_stdio_runs_python_handlers(harness):
    async def body(s):
        return (await s.list_tools(), await s.call_tool("greet", {"name": "Ada"}), await s.call_tool("greet", {"name": ""}),
                await s.call_tool("greet", {"name": "boom"}), await s.call_tool("add", {"a": 1, "b": 2}))

    tools, hello, empty, boom, add = run(stdio_session(harness, body, command=[sys.executable, PY_HOST, harness["dir"]]))
    assert names(tools) == ["add", "calc", "greet", "shout"]
    assert hello.is_error is False and hello.content[0].text == "Hello, Ada!"
    assert refusal(empty)["code"] == "invalid_args"
    s = refusal(boom)
    assert (s["code"], s["step"]) == ("handler_error", "invoke")
    assert "on purpose" not in boom.content[0].text  # handler internals stay out
    assert add.content[0].text == "3"


def test_serve_mcp_http_checks_tokens_and_runs_python_handlers(harness):
    with http_gateway(harness, [sys.executable, PY_HOST, harness["dir"], "--http", "127.0.0.1:0"]) as url:
        r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 401

        async def body(s):
            return await s.list_tools(), await s.call_tool("greet", {"name": "Grace"})

        tools, hello = run(http_session(url, harness["bob_token"], body))
        assert names(tools) == ["add", "greet"]
        assert hello.content[0].text == "Hello, Grace!"
