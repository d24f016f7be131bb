"""Test-only hooks (internal, not API): a harness on a manual clock with
deterministic ids, as the shared governor fixtures need."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from . import Harness, _load


def load(
    path: Any,
    handlers: Optional[Mapping[str, Callable[..., Any]]] = None,
    audit: Optional[Callable[..., Any]] = None,
    on_approval: Optional[Callable[..., Any]] = None,
    *,
    tools: Sequence[Any] = (),
    clock_ms: int,
    sequential_ids: bool = True,
    sandbox_worker: Optional[str] = None,
) -> Harness:
    """:func:`harnessweaver.load` with a manual clock reading ``clock_ms``
    (move it with :func:`advance_ms`) and ids ``run-1``, ``call-1``, ..."""
    return _load(
        path, handlers, audit, on_approval, tools, clock_ms=clock_ms, sequential_ids=sequential_ids, sandbox_worker=sandbox_worker
    )


def advance_ms(harness: Harness, ms: int) -> None:
    """Moves the manual clock of a harness from :func:`load` forward."""
    harness._rt.advance_ms(ms)
