"""The ``harnessweaver`` console script: the core's command line."""

from __future__ import annotations

import sys
from typing import List, Optional

from . import _native


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    sys.stdout.flush()
    return _native.cli_run(list(args))


if __name__ == "__main__":
    sys.exit(main())
