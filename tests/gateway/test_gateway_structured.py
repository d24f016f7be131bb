"""Issue 22: `structuredContent` through the official Python MCP SDK client.

A tool whose manifest declares `output_schema` is listed with it as
`outputSchema`; an allowed call returns its cleaned output as
`structuredContent` (which the SDK client itself validates against the listed
schema), and an output that does not meet the schema is refused at step 9
(`output_schema_mismatch`), never sent. The tool: a code tool written into the
test's copy of tests/gateway/harness (scope records:admin, which only the
caller here holds).
"""
import asyncio
import json

import pytest

from gateway_support import make_harness, stdio_session

CALLER = json.dumps({"id": "rita", "roles": ["support"], "scopes": ["records:admin"]})
# A code tool's output is `{"value": <the final expression>, "stdout": "…"}`.
AREA = {"type": "object", "required": ["area"], "additionalProperties": False,
        "properties": {"area": {"type": "number"}, "unit": {"type": "string"}}}
SCHEMA = {"type": "object", "required": ["value"], "additionalProperties": False,
          "properties": {"value": AREA, "stdout": {"type": "string"}}}
MANIFEST = f"""apiVersion: harnessweaver/v1
kind: Tool
metadata: {{ name: measure }}
spec:
  transport: code
  sandbox: monty
  description: Computes an area.
  input_schema:
    type: object
    properties:
      code: {{ type: string }}
    required: [code]
  output_schema: {json.dumps(SCHEMA)}
  output: {{ sanitize: [pii_redact] }}
  scopes: ["records:admin"]
"""


@pytest.fixture
def harness(tmp_path):
    info = make_harness(tmp_path / "h")
    with open(f"{info['dir']}/tools/measure.yaml", "w") as f:
        f.write(MANIFEST)
    return info


def session(info, body):
    return asyncio.run(stdio_session(info, body, principal=CALLER, tenant="acme"))


def test_a_declared_output_schema_is_listed_and_the_output_sent_as_structured_content(harness):
    async def body(s):
        tools = {t.name: t for t in (await s.list_tools()).tools}
        # call_tool validates structuredContent against the listed outputSchema itself.
        ok = await s.call_tool("measure", {"code": "{'area': 6 * 7, 'unit': 'mail ann@example.com'}"})
        wrong = await s.call_tool("measure", {"code": "{'area': 'large'}"})
        extra = await s.call_tool("measure", {"code": "{'area': 1, 'colour': 'red'}"})
        return tools, ok, wrong, extra

    tools, ok, wrong, extra = session(harness, body)
    assert tools["measure"].output_schema == SCHEMA
    assert tools["shout"].output_schema is None  # a tool without one lists none
    assert ok.is_error is False
    # The cleaned output (sanitizers ran), as structured content and as its text.
    assert ok.structured_content == {"value": {"area": 42, "unit": "mail [EMAIL]"}, "stdout": ""}
    assert json.loads(ok.content[0].text) == ok.structured_content
    for refused in (wrong, extra):
        assert refused.is_error is True
        assert refused.structured_content["code"] == "output_schema_mismatch"
        assert refused.structured_content["step"] == "output"
        assert "large" not in refused.content[0].text
