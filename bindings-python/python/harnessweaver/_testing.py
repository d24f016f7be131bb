"""Test-only hooks (internal, not API): a harness on a manual clock with
deterministic ids, as the shared governor fixtures need."""

from __future__ import annotations

from typing import Any

from . import Harness, load as _load


def load(path: Any, *args: Any, clock_ms: int, sequential_ids: bool = True, **kw: Any) -> Harness:
    """:func:`harnessweaver.load` with a manual clock at ``clock_ms`` and ids ``run-1``, ``call-1``, ..."""
    return _load(path, *args, clock_ms=clock_ms, sequential_ids=sequential_ids, **kw)


def advance_ms(harness: Harness, ms: int) -> None:
    """Moves the manual clock of a harness from :func:`load` forward."""
    harness.advance_ms(ms)
