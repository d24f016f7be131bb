"""Issue 22 through the official Python MCP SDK client (PyPI `mcp`): both
protocol generations on one gateway (the 2025-11-25 `initialize` handshake
and 2026-07-28 stateless requests after `server/discover`), MCP content
parts governed one by one, and tool annotations taken from the manifests,
never from the upstream server.

The tools: `purge` and `snapshot` of tests/mcp/py_server.py, fronted by
tests/gateway/harness (scope records:admin, which only the callers here hold).
"""
import asyncio
import json
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway_support import HERE, http_gateway, make_harness, stdio_session

ROOT = HERE.parent.parent
RECORDS = json.dumps({"id": "rita", "roles": ["support"], "scopes": ["records:admin", "calc:run"]})
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFAAIBpd0vTQAAAABJRU5ErkJggg=="


@pytest.fixture
def harness(tmp_path):
    return make_harness(tmp_path / "h")


def run(coro):
    return asyncio.run(coro)


def records_session(info, body):
    """`body` on a stdio session as a caller holding records:admin."""
    return stdio_session(info, body, principal=RECORDS, tenant="acme")


def set_output(info, tool, output):
    """Rewrites the `output:` line of a tool's manifest (not part of its pin)."""
    path = f"{info['dir']}/tools/{tool}.yaml"
    with open(path) as f:
        text = f.read()
    start = text.index("  output: ")
    end = text.index("\n", start)
    with open(path, "w") as f:
        f.write(text[:start] + f"  output: {output}" + text[end:])


def test_annotations_come_from_the_manifest_not_from_the_upstream(harness):
    # The upstream server itself calls `purge` a harmless read-only lookup…
    async def upstream(s):
        return {t.name: t for t in (await s.list_tools()).tools}

    params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "tests" / "mcp" / "py_server.py")])

    async def direct():
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return await upstream(s)

    served = run(direct())
    assert served["purge"].annotations.read_only_hint is True
    assert served["purge"].annotations.destructive_hint is False
    assert served["purge"].annotations.title == "Harmless lookup"

    # …the gateway says what the manifest says (side_effect: destructive,
    # effect retry_mode none, an MCP server: open world), and drops the title.
    tools = run(records_session(harness, upstream))
    purge = tools["purge"].annotations
    assert (purge.read_only_hint, purge.destructive_hint, purge.idempotent_hint, purge.open_world_hint) == (False, True, False, True)
    assert purge.title is None
    snap = tools["snapshot"].annotations
    assert (snap.read_only_hint, snap.destructive_hint, snap.open_world_hint) == (True, None, True)
    # The title is the manifest's metadata.title.
    assert tools["snapshot"].title == "Customer snapshot" and snap.title == "Customer snapshot"
    calc = tools["calc"].annotations  # code, side_effect none (the default), no egress
    assert (calc.read_only_hint, calc.open_world_hint) == (True, False)


def snapshot_call(info):
    async def body(s):
        return await s.call_tool("snapshot", {"contact": "ann@example.com"})

    return run(records_session(info, body))


def test_content_parts_pass_as_their_types_each_governed(harness):
    result = snapshot_call(harness)
    assert result.is_error is False
    kinds = [c.type for c in result.content]
    # max_bytes 400: the text (20 bytes once redacted) and the image (96) fit,
    # the audio (536) does not and is dropped whole; the resource (18) fits.
    assert kinds == ["text", "image", "resource"], result
    assert result.content[0].text == "snapshot for [EMAIL]"
    assert result.content[1].data == PNG and result.content[1].mime_type == "image/png"
    assert result.content[2].resource.text == "written by [EMAIL]"
    report = result.meta["harnessweaver"]["output"]
    assert report["content"] == {"parts": 3, "dropped": [{"index": 2, "type": "audio", "code": "content_too_large"}]}
    assert report["redactions"] == {"EMAIL": 2}

    # With room for it, the same audio passes intact.
    set_output(harness, "snapshot", "{ max_bytes: 2000, sanitize: [pii_redact] }")
    result = snapshot_call(harness)
    assert [c.type for c in result.content] == ["text", "image", "audio", "resource"]
    assert len(result.content[2].data) == 536


def test_text_only_drops_images_and_audio(harness):
    set_output(harness, "snapshot", "{ max_bytes: 2000, sanitize: [pii_redact], content: text_only }")
    result = snapshot_call(harness)
    assert [c.type for c in result.content] == ["text", "resource"]
    dropped = result.meta["harnessweaver"]["output"]["content"]["dropped"]
    assert dropped == [{"index": 1, "type": "image", "code": "content_not_allowed"},
                       {"index": 2, "type": "audio", "code": "content_not_allowed"}]


async def http_client(url, token, mode, body):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:
            return c.protocol_version, await body(c)


@pytest.mark.parametrize("mode,version", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_both_protocol_generations_on_one_endpoint(harness, mode, version):
    async def body(c):
        listed = await c.list_tools()
        ok = await c.call_tool("shout", {"text": "governed"})
        refused = await c.call_tool("calc", {"code": "'a secret'"})
        return listed, ok, refused

    with http_gateway(harness) as url:
        got, (listed, ok, refused) = run(http_client(url, harness["alice_token"], mode, body))
    assert got == version
    assert sorted(t.name for t in listed.tools) == ["add", "calc", "payroll", "shout"]
    assert ok.is_error is False and ok.content[0].text == "GOVERNED"
    assert refused.is_error is True and refused.structured_content["code"] == "policy_denied"
