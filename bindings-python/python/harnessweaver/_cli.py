"""The ``harnessweaver`` console script: the core's command line, plus
``add tool``, which needs Python to read a function's type hints."""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from . import _native


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    if args[:2] == ["add", "tool"]:
        from . import _add_tool

        try:
            return _add_tool.main(args[2:])
        except SystemExit as exc:  # argparse's usage errors and --help
            return int(exc.code or 0)
    # `doctor` imports the manifests' handlers in a child process of this Python.
    os.environ.setdefault("HARNESSWEAVER_PYTHON", sys.executable)
    return _native.cli_run(args)


if __name__ == "__main__":
    sys.exit(main())
