"""`harnessweaver gateway mcp` serving a harness with built-in tools (issue
20) and `spec.runs` (issue 21), driven by the official Python MCP client as
test_gateway_python_client.py does: a path escape is refused and the same
tool runs inside the workspace; the gateway's runs go through `spec.runs`
admission like the bindings' runs (`run_not_admitted`, `max_runs_per_day`
counted in the shared state store across gateway processes)."""
import asyncio
import os

from gateway_support import make_harness, stdio_session

BUILTINS = (
    "  builtins:\n"
    "    workspace: ws\n"
    "    tools: [read_file, write_file, list_dir]\n"
    "    access:\n"
    "      - { effect: allow, kind: filesystem.write, paths: [\"notes/**\"] }\n"
)


def harness_with(tmp_path, extra):
    """tests/gateway/harness with `extra` under `spec`, a workspace and a file outside it."""
    info = make_harness(tmp_path / "h")
    text = open(info["harness"]).read().replace("spec:\n", "spec:\n" + extra, 1)
    open(info["harness"], "w").write(text)
    os.makedirs(os.path.join(info["dir"], "ws", "notes"))
    with open(os.path.join(info["dir"], "ws", "notes", "a.md"), "w") as f:
        f.write("alpha\n")
    with open(os.path.join(info["dir"], "outside.txt"), "w") as f:
        f.write("do not read\n")
    return info


def session(info, body):
    return asyncio.run(stdio_session(info, body))


def code_of(result):
    return result.structured_content["code"] if result.is_error else None


def test_builtins_through_the_gateway_refuse_an_escape_and_run_inside_the_workspace(tmp_path):
    info = harness_with(tmp_path, BUILTINS)

    async def body(s):
        listed = sorted(t.name for t in (await s.list_tools()).tools)
        calls = [
            await s.call_tool("read_file", {"path": "../outside.txt"}),
            await s.call_tool("read_file", {"path": "notes/a.md"}),
            await s.call_tool("write_file", {"path": "../escaped.md", "content": "x"}),
            await s.call_tool("write_file", {"path": "notes/b.md", "content": "beta"}),
        ]
        return listed, calls

    listed, (escape_read, inside_read, escape_write, inside_write) = session(info, body)
    assert {"read_file", "write_file", "list_dir"} <= set(listed)
    assert code_of(escape_read) == "path_escape"
    assert escape_read.structured_content["step"] == "validate"
    assert "do not read" not in escape_read.content[0].text
    assert code_of(inside_read) is None, inside_read
    assert '"content":"alpha\\n"' in inside_read.content[0].text
    assert code_of(escape_write) == "path_escape"
    assert not os.path.exists(os.path.join(info["dir"], "escaped.md"))
    assert code_of(inside_write) is None, inside_write
    assert open(os.path.join(info["dir"], "ws", "notes", "b.md")).read() == "beta"


def test_gateway_runs_are_admitted_per_principal_per_day_across_processes(tmp_path):
    info = harness_with(tmp_path, BUILTINS + "  runs:\n    sources:\n      gateway: { max_runs_per_day: 1 }\n")

    async def two_calls(s):
        return [await s.call_tool("read_file", {"path": "notes/a.md"}), await s.call_tool("read_file", {"path": "notes/a.md"})]

    first, again = session(info, two_calls)
    # The caller's run is admitted once; its calls share it.
    assert code_of(first) is None and code_of(again) is None, (first, again)
    # A new gateway process, the same caller: a new run, past today's limit (the count is in state.db).
    (refused, _) = session(info, two_calls)
    assert code_of(refused) == "run_not_admitted", refused
    assert "max_runs_per_day" in refused.structured_content["message"]


def test_gateway_runs_need_the_gateway_source_when_spec_runs_lists_sources(tmp_path):
    info = harness_with(tmp_path, BUILTINS + "  runs:\n    sources:\n      api: { enabled: true }\n")

    async def one_call(s):
        return await s.call_tool("read_file", {"path": "notes/a.md"})

    refused = session(info, one_call)
    assert code_of(refused) == "run_not_admitted", refused

    info_ok = harness_with(tmp_path / "ok", BUILTINS + "  runs:\n    sources:\n      gateway: { enabled: true }\n")
    assert code_of(session(info_ok, one_call)) is None
