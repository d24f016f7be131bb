"""Helpers of the gateway tests: the binary, a fresh harness, a running HTTP
gateway, an official-SDK client session over stdio."""
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# mk/gateway.mk passes the binary it built; by hand, the debug build of this tree.
HW = os.environ.get("HW_GATEWAY_BIN") or str(
    ROOT / "target" / os.environ.get("CARGO_BUILD_TARGET", "x86_64-unknown-linux-gnu") / "debug" / "harnessweaver"
)


def make_harness(dest, *args):
    """tests/gateway/harness filled in under `dest` (see make_harness.py)."""
    out = subprocess.run([sys.executable, str(HERE / "make_harness.py"), str(dest), *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def gateway_env(info):
    """The environment of a gateway for `info`: ours, plus its tokens and secrets."""
    env = dict(os.environ)
    env.update(info["env"])
    return env


def approvals(info, *args):
    """`harnessweaver approvals ARGS --harness DIR`, in a process of its own."""
    return subprocess.run([HW, "approvals", *args, "--harness", info["dir"]], capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def http_gateway(info, cmd=None):
    """Starts `gateway mcp --http 127.0.0.1:0` (or `cmd`), yields its /mcp URL, stops it."""
    cmd = cmd or [HW, "gateway", "mcp", info["dir"], "--http", "127.0.0.1:0"]
    proc = subprocess.Popen(cmd, env=gateway_env(info), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    url = None
    for line in proc.stderr:
        lines.append(line)
        m = re.search(r"serving MCP at (https?://\S+/mcp)", line)
        if m:
            url = m.group(1)
            break
    if url is None:
        proc.wait(timeout=30)
        raise AssertionError("the gateway did not start:\n" + "".join(lines))
    # Keep draining stderr so the gateway never blocks on a full pipe.
    threading.Thread(target=lambda: [lines.append(l) for l in proc.stderr], daemon=True).start()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def stdio_session(info, body, *, principal=None, tenant=None, args=(), command=None, discover=False, **callbacks):
    """`body(session)`'s result, on one official Python SDK `ClientSession` over
    stdio to `harnessweaver gateway mcp DIR --stdio` for `info` (or `command`,
    a host serving the harness, e.g. py_host.py).

    - `principal` (a JSON object as a dict or text, or a bare id) and `tenant`
      become `--principal` and `--tenant`; `args` are further flags;
    - `callbacks` go to the session (`logging_callback`, `sampling_callback`,
      `elicitation_callback`, …);
    - `discover`: the 2026-07-28 way in (`server/discover`, no `initialize`)
      instead of the 2025-11-25 handshake.
    """
    command = list(command or [HW, "gateway", "mcp", info["dir"], "--stdio"])
    if principal is not None:
        command += ["--principal", principal if isinstance(principal, str) else json.dumps(principal)]
    if tenant is not None:
        command += ["--tenant", tenant]
    params = StdioServerParameters(command=command[0], args=[*command[1:], *args], env=gateway_env(info))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w, **callbacks) as s:
            await (s.discover() if discover else s.initialize())
            return await body(s)
