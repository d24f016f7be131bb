#!/usr/bin/env python3
"""A host serving the gateway harness with `hw.serve_mcp`, its native tool
`greet` a Python function (tests/gateway/test_gateway_python_client.py).

    python py_host.py HARNESS_DIR [--http 127.0.0.1:0]
"""
import sys

import harnessweaver as hw


def greet(name: str) -> str:
    if name == "boom":
        raise ValueError("the handler failed on purpose")
    return f"Hello, {name}!"


if __name__ == "__main__":
    h = hw.load(sys.argv[1], handlers={"greet": greet})
    http = sys.argv[sys.argv.index("--http") + 1] if "--http" in sys.argv else None
    hw.serve_mcp(h, http=http)
