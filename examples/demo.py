"""The demo behind `make demo`: load the shop harness, list its tools with their
pin state, make a few governed calls (allowed with PII redacted, a schema
refusal, a policy refusal, a refund waiting for approval and then approved by
a finance principal), then run `harnessweaver doctor` on it.

Run it with the package installed (make build-python does that):
    .venv/bin/python examples/demo.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import harnessweaver as hw

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "shop" / "harness.yaml"


def main() -> int:
    relative = os.path.relpath(HARNESS)
    try:
        harness = hw.load(HARNESS)
    except hw.LoadError as err:
        print(f"{relative} did not load ({err.code}):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1

    print(f"{relative}: {len(harness.tools)} tools\n")
    width = max(len(t.name) for t in harness.tools)
    for tool in harness.tools:
        print(f"  {tool.name:<{width}}  {tool.pin:<10}  {tool.transport:<7} risk={tool.risk:<8} {tool.digest}")
    print()

    governed_calls(harness)

    # The console script that `pip install` put beside this Python.
    script = Path(sys.executable).parent / "harnessweaver"
    command = [str(script)] if script.exists() else [shutil.which("harnessweaver") or "harnessweaver"]
    command += ["doctor", relative]
    print("$ harnessweaver doctor", relative, flush=True)
    return subprocess.run(command, check=False).returncode


AGENT = {"id": "agent-7", "roles": ["support"], "scopes": ["payments:refund"]}
BILLING_BOT = {"id": "billing-bot", "roles": [], "scopes": ["payments:refund"]}
FINANCE = {"id": "fiona", "roles": ["finance"], "scopes": []}


def show(label: str, result: "hw.CallResult") -> None:
    where = f" ({result.code} at step {result.step})" if result.code else ""
    print(f"  {label:<44} {result.decision}{where}")
    print(f"  {'':<44} -> {result.to_model()[:100]}")


def governed_calls(harness: "hw.GovernedHarness") -> None:
    print("governed calls:")
    run = harness.run(principal=AGENT, tenant="shop")
    show("lookup_order A-1001 (PII redacted)", run.call("lookup_order", {"order_id": "A-1001"}, raise_on_refusal=False))
    show("lookup_order `1001` (schema refusal)", run.call("lookup_order", {"order_id": "1001"}, raise_on_refusal=False))
    show("refund by a support agent (policy refusal)", run.call("refund_payment", {"order_id": "A-1002", "amount_usd": 40}, raise_on_refusal=False))
    pending = harness.call("refund_payment", {"order_id": "A-1002", "amount_usd": 180}, principal=BILLING_BOT, tenant="shop", raise_on_refusal=False)
    show("refund $180 by billing-bot (approval.when)", pending)
    if pending.approval:
        show("  approved by fiona (finance)", harness.approve(pending.approval["id"], approver=FINANCE, raise_on_refusal=False))
    print()


if __name__ == "__main__":
    sys.exit(main())
