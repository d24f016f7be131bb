"""The demo behind `make demo`: load the shop harness, list its tools with their
pin state, then run `harnessweaver doctor` on it.

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

    # The console script that `pip install` put beside this Python.
    script = Path(sys.executable).parent / "harnessweaver"
    command = [str(script)] if script.exists() else [shutil.which("harnessweaver") or "harnessweaver"]
    command += ["doctor", relative]
    print("$ harnessweaver doctor", relative, flush=True)
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
