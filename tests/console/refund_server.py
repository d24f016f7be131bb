#!/usr/bin/env python3
"""The shop's MCP server of the console test: `refund` pays an amount back
(written with the official Python SDK, `mcp`). It prints nothing but MCP on
stdout; each refund it makes is appended to the file named by
HW_REFUND_LOG, so the test sees the call really ran, with which amount."""
import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("shop")


@server.tool(description="Refund an order.", structured_output=False)
def refund(order: str, amount: int) -> str:
    log = os.environ.get("HW_REFUND_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"order": order, "amount": amount}) + "\n")
    return f"refunded {amount} on {order}"


if __name__ == "__main__":
    server.run()
