#!/usr/bin/env python3
"""The upstream MCP server behind the gateway in `make conformance-gateway`:
the conformance suite's fixture tools (tools-call-* scenarios), written with
the official Python SDK. The gateway fronts it (transport: mcp) under pinned
manifests, so the suite sees them as governed tools.
"""
import asyncio
import base64
from typing import Annotated

from pydantic import Field

import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("conformance-fixtures")
# A 1x1 PNG and a tiny WAV header, as the scenarios ask for base64 data.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5dd2f4d0000000049454e44ae426082")).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00").decode()


@server.tool(description="Returns simple text.", structured_output=False)
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Always fails.", structured_output=False)
def test_error_handling() -> str:
    raise ValueError("This tool intentionally returns an error for testing")


@server.tool(description="Returns an image.", structured_output=False)
def test_image_content() -> list:
    return [t.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool(description="Returns audio.", structured_output=False)
def test_audio_content() -> list:
    return [t.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool(description="Returns an embedded resource.", structured_output=False)
def test_embedded_resource() -> list:
    res = t.TextResourceContents(uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content.")
    return [t.EmbeddedResource(type="resource", resource=res)]


@server.tool(description="Returns text, an image and a resource.", structured_output=False)
def test_multiple_content_types() -> list:
    res = t.TextResourceContents(uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}')
    return [t.TextContent(type="text", text="Multiple content types test:"),
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
            t.EmbeddedResource(type="resource", resource=res)]


@server.tool(description="Logs three messages while it runs.", structured_output=False)
async def test_tool_with_logging(ctx: Context) -> str:
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"]:
        await ctx.info(message)
        await asyncio.sleep(0.05)
    return "Logging test completed"


@server.tool(description="Reports progress while it runs.", structured_output=False)
async def test_tool_with_progress(ctx: Context) -> str:
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100)
        await asyncio.sleep(0.05)
    return "Progress test completed"


@server.tool(description="Echoes the region its request was routed by (SEP-2243: the `Mcp-Param-Region` header).", structured_output=False)
def test_custom_headers(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    return f"routed to {region}"


@server.tool(description="Asks the client's model for a completion (needs the client's sampling capability).", structured_output=False)
async def test_missing_capability(ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text="Say hello"))], max_tokens=16)
    return f"the client's model said: {result.content}"


# Issue 22 (relays): the tools-call-sampling and tools-call-elicitation
# scenarios' tools; the gateway relays their requests to the suite's client.
@server.tool(description="Asks the client's model to complete `prompt`.", structured_output=False)
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        [t.SamplingMessage(role="user", content=t.TextContent(type="text", text=prompt))], max_tokens=100)
    content = result.content
    return f"LLM response: {content.text if isinstance(content, t.TextContent) else content}"


@server.tool(description="Asks the client's user for a username and an e-mail address.", structured_output=False)
async def test_elicitation(message: str, ctx: Context) -> str:
    schema = {"type": "object", "required": ["username", "email"], "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}}
    result = await ctx.session.elicit(message, schema)
    return f"User response: <action: {result.action}, content: {result.content}>"



# Issue 22: the elicitation-sep1034-defaults and elicitation-sep1330-enums
# scenarios' tools; the suite checks the schema its client receives, so the
# gateway's relay must keep `default`, `enum`, `enumNames`, `oneOf`/`anyOf`.
@server.tool(description="Asks the client's user for five fields, each with a default.", structured_output=False)
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True}}}
    result = await ctx.session.elicit("Please review your details.", schema)
    return f"Elicitation completed: action={result.action}, content={result.content}"


@server.tool(description="Asks the client's user to choose, in each of the five enum forms.", structured_output=False)
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    schema = {"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}}}}
    result = await ctx.session.elicit("Please choose.", schema)
    return f"Elicitation completed: action={result.action}, content={result.content}"


# Issue 22: the input-required-result-* scenarios' tools (2026-07-28). Each
# asks the client as a 2025-11-25 server would (server requests on its stdio
# session with the gateway); the gateway relays them to the suite's
# stateless client as an InputRequiredResult, holding this call open until
# the client retries with its answers. `_meta` `harnessweaver/input_key`
# names the request's key in `inputRequests` (the scenarios expect theirs),
# and `progressToken` echoes the call's own token, so the gateway knows which
# call a request belongs to while others wait on the same connection.
def keyed(ctx: Context, key: str) -> dict:
    meta = {"harnessweaver/input_key": key}
    token = (ctx.request_context.meta or {}).get("progress_token")
    if token is not None:
        meta["progressToken"] = token
    return meta


async def ask_elicit(ctx: Context, key: str, message: str, properties: dict, required: list[str]) -> t.ElicitResult:
    schema = {"type": "object", "properties": properties, "required": required}
    request = t.ElicitRequest(params=t.ElicitRequestFormParams(message=message, requested_schema=schema, _meta=keyed(ctx, key)))
    return await ctx.session.send_request(request, t.ElicitResult)


async def ask_sample(ctx: Context, key: str, text: str, max_tokens: int) -> t.CreateMessageResult:
    params = t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text=text))], max_tokens=max_tokens, _meta=keyed(ctx, key))
    return await ctx.session.send_request(t.CreateMessageRequest(params=params), t.CreateMessageResult)


async def ask_roots(ctx: Context, key: str) -> t.ListRootsResult:
    return await ctx.session.send_request(t.ListRootsRequest(params=t.RequestParams(_meta=keyed(ctx, key))), t.ListRootsResult)


def said(result: t.CreateMessageResult) -> str:
    content = result.content
    return content.text if isinstance(content, t.TextContent) else str(content)


@server.tool(description="Asks the client's user for a name, then greets them.", structured_output=False)
async def test_input_required_result_elicitation(ctx: Context) -> str:
    answer = await ask_elicit(ctx, "user_name", "What is your name?", {"name": {"type": "string"}}, ["name"])
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool(description="Asks the client's model for the capital of France.", structured_output=False)
async def test_input_required_result_sampling(ctx: Context) -> str:
    return f"the client's model said: {said(await ask_sample(ctx, 'capital_question', 'What is the capital of France?', 100))}"


@server.tool(description="Asks the client for its roots.", structured_output=False)
async def test_input_required_result_list_roots(ctx: Context) -> str:
    roots = await ask_roots(ctx, "client_roots")
    return "the client's roots: " + ", ".join(str(r.uri) for r in roots.roots)


@server.tool(description="Asks the client's user to confirm; says state-ok once resumed.", structured_output=False)
async def test_input_required_result_request_state(ctx: Context) -> str:
    answer = await ask_elicit(ctx, "confirm", "Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
    return f"state-ok: confirmed={(answer.content or {}).get('ok')}"


@server.tool(description="Asks the client's user, its model and its roots at once.", structured_output=False)
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    name, greeting, roots = await asyncio.gather(
        ask_elicit(ctx, "user_name", "What is your name?", {"name": {"type": "string"}}, ["name"]),
        ask_sample(ctx, "greeting", "Generate a greeting", 50),
        ask_roots(ctx, "client_roots"))
    return f"{said(greeting)} {(name.content or {}).get('name')} ({len(roots.roots)} roots)"


@server.tool(description="Asks the client's user two questions, one after the other.", structured_output=False)
async def test_input_required_result_multi_round(ctx: Context) -> str:
    name = await ask_elicit(ctx, "step1", "Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])
    color = await ask_elicit(ctx, "step2", "Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"


@server.tool(description="Asks the client's user to confirm (the suite tampers with the state).", structured_output=False)
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    await ask_elicit(ctx, "confirm", "Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
    return "confirmed"


@server.tool(description="Asks the client's user if it can, then its model.", structured_output=False)
async def test_input_required_result_capabilities(ctx: Context) -> str:
    try:
        await ask_elicit(ctx, "user_name", "What is your name?", {"name": {"type": "string"}}, ["name"])
    except Exception:  # noqa: BLE001 - a client without elicitation: the gateway answers an error
        pass
    return said(await ask_sample(ctx, "capital_question", "What is the capital of France?", 100))


if __name__ == "__main__":
    server.run()
