"""Progress of process tools and native handlers through the gateway (issue 22),
driven by the official Python MCP SDK client's progress callback:

- a process tool (tests/gateway/progress/crawl.py) reports on stderr
  (`harnessweaver-progress {json}` lines), through `harnessweaver gateway mcp`
  and through the Python host;
- a Python native handler (tests/gateway/progress/progress_host.py) reports
  through the `progress` callable it asks for, served by `hw.serve_mcp`.

The core decides each report (docs/gateway.md#relays): only increasing
progress, messages sanitized with the tool's output sanitizers and bounded;
the caller of the call gets them under its own progress token.
"""

import asyncio
import json
import shutil
import sys

import pytest
from gateway_support import HERE, HW
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PROGRESS = HERE / "progress"

HARNESS = """\
apiVersion: harnessweaver/v1
kind: Harness
metadata: { name: progress-test }
spec:
  tools:
    manifests: [tools/*.yaml]
  gateway:
    stdio:
      principal: { id: desktop, roles: [support] }
"""

CRAWL = """\
apiVersion: harnessweaver/v1
kind: Tool
metadata: {{ name: crawl }}
spec:
  transport: process
  command: {python}
  args: [crawl.py]
  description: Crawl some pages.
  input_schema:
    type: object
    properties: {{ pages: {{ type: integer, minimum: 1 }} }}
    required: [pages]
  output: {{ sanitize: [pii_redact] }}
"""

INDEX_DOCS = """\
apiVersion: harnessweaver/v1
kind: Tool
metadata: { name: index_docs }
spec:
  transport: native
  handler: "progress_host:index_docs"
  description: Index some documents.
  input_schema:
    type: object
    properties: { docs: { type: integer, minimum: 1 } }
    required: [docs]
  output: { sanitize: [pii_redact] }
"""


@pytest.fixture
def harness(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "harness.yaml").write_text(HARNESS)
    (tmp_path / "tools" / "crawl.yaml").write_text(CRAWL.format(python=json.dumps(sys.executable)))
    (tmp_path / "tools" / "index_docs.yaml").write_text(INDEX_DOCS)
    shutil.copy(PROGRESS / "crawl.py", tmp_path / "crawl.py")
    return str(tmp_path)


def session(params, calls):
    """Runs `calls` ([(tool, args, with_progress)]) in one session: each call's result and the progress it saw."""

    async def run():
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                out = []
                for tool, args, with_progress in calls:
                    seen = []

                    async def on_progress(progress, total, message, seen=seen):
                        seen.append((progress, total, message))

                    result = await s.call_tool(tool, args, progress_callback=on_progress if with_progress else None)
                    out.append((result, seen))
                return out

    return asyncio.run(run())


CRAWLED = [(1, 3, "fetched page 1 for [EMAIL]"), (2, 3, "fetched page 2"), (3, 3, "fetched page 3")]
INDEXED = [(1, 2, "indexed doc 1 of [EMAIL]"), (2, 2, "indexed doc 2 of [EMAIL]")]


def test_a_process_tools_progress_reaches_its_caller_sanitized(harness):
    """The CLI gateway: what the process printed on stderr as progress, decided by the core (the
    repeated, invalid, oversized and ordinary lines dropped), the email redacted."""
    params = StdioServerParameters(command=HW, args=["gateway", "mcp", harness, "--stdio"])
    [(result, seen), (quiet, unseen)] = session(params, [("crawl", {"pages": 3}, True), ("crawl", {"pages": 2}, False)])
    assert result.is_error is False and json.loads(result.content[0].text) == {"pages": 3}
    assert seen == CRAWLED
    # A caller that gave no progress token gets none, and the call runs as before.
    assert quiet.is_error is False and unseen == []


def test_a_python_handler_and_a_process_tool_report_progress_through_serve_mcp(harness):
    """`hw.serve_mcp`: the native handler's `progress(n, total, message)` and the process tool's
    stderr lines reach the caller of each call, sanitized; the handler's repeated report is dropped."""
    params = StdioServerParameters(command=sys.executable, args=[str(PROGRESS / "progress_host.py"), harness])
    [(indexed, seen_index), (crawled, seen_crawl)] = session(params, [("index_docs", {"docs": 2}, True), ("crawl", {"pages": 3}, True)])
    assert indexed.is_error is False and json.loads(indexed.content[0].text) == {"indexed": 2}
    assert seen_index == INDEXED
    assert crawled.is_error is False
    assert seen_crawl == CRAWLED
