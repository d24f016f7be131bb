#!/usr/bin/env python3
"""Copies tests/gateway/relay/harness into DEST, writes a manifest for each
tool relay_server.py serves (from its served definition, as a reviewer
fronting a server would, plus the governance each test needs) and pins them
with `harnessweaver tools pin`.

    python tests/gateway/relay/make_relay_harness.py DEST

Prints one JSON object: {"dir", "env", "alice_token", "bob_token"}; `env` holds
the tokens and HW_RELAY_SECRET, the value the gateway hands the server. Used by
the Python and Node relay tests alike.
"""

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SERVER = os.path.join(HERE, "relay_server.py")
HW = os.environ.get("HW_GATEWAY_BIN") or os.path.join(
    ROOT, "target", os.environ.get("CARGO_BUILD_TARGET", "x86_64-unknown-linux-gnu"), "debug", "harnessweaver"
)

# What each tool's manifest adds to its served definition.
GOVERNANCE = {
    # Reads private data: running it makes the run private, and its request
    # (its output, untrusted) makes a relay the lethal trifecta.
    "summarise_patient": '  data_access: ["pii:health"]\n',
    # The caller's own user may confirm it (in band).
    "transfer": '  approval: { when: "args.amount > 100", by: caller }\n',
    # Its upstream asks the client's user (issue 22): a 2026-07-28 call that
    # does not declare elicitation is refused -32021.
    "ask_user": "  client_capabilities: [elicitation]\n",
    # Only a reviewer with role ops may approve it (out of band).
    "wipe": '  approval: { when: "true", approver_role: ops }\n',
    # Its progress and log messages are output: sanitized like its result.
    "gossip": "  output: { sanitize: [pii_redact, strip_instructions] }\n",
}


async def served(env):
    params = StdioServerParameters(command=sys.executable, args=[SERVER], env={**os.environ, **env})
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            return (await s.list_tools()).tools


def main():
    dest = sys.argv[1]
    shutil.copytree(os.path.join(HERE, "harness"), dest, dirs_exist_ok=True)
    path = os.path.join(dest, "harness.yaml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("{{PYTHON}}", sys.executable).replace("{{SERVER}}", SERVER))
    # The value the gateway hands the server (`env`): masked where the server echoes it.
    env = {"HW_RELAY_SECRET": "relay-" + secrets.token_hex(16)}
    for tool in asyncio.run(served({"RELAY_SECRET": env["HW_RELAY_SECRET"]})):
        manifest = (
            "apiVersion: harnessweaver/v1\n"
            "kind: Tool\n"
            f"metadata: {{ name: {json.dumps(tool.name)} }}\n"
            "spec:\n"
            "  transport: mcp\n"
            "  server: mcp://relay\n"
            f"  description: {json.dumps(tool.description)}\n"
            f"  input_schema: {json.dumps(tool.input_schema)}\n" + GOVERNANCE.get(tool.name, "")
        )
        with open(os.path.join(dest, "tools", f"{tool.name}.yaml"), "w") as f:
            f.write(manifest)
    subprocess.run([HW, "tools", "pin", dest], check=True, capture_output=True, text=True, env={**os.environ, **env})
    alice, bob = "alice-" + secrets.token_hex(16), "bob-" + secrets.token_hex(16)
    env.update({"HW_RELAY_TOKEN_ALICE": alice, "HW_RELAY_TOKEN_BOB": bob})
    print(json.dumps({"dir": dest, "env": env, "alice_token": alice, "bob_token": bob}))


if __name__ == "__main__":
    main()
