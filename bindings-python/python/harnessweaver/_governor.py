"""The governor for Python: a loaded :class:`Harness` and its :class:`Run`\\ s.

The core decides every step of a call and its timeout verdict; this module
only says how Python runs a handler. ``call`` runs a sync handler on the
calling thread under the core's deadline: on an overrun a watchdog raises
:class:`HandlerOverrun` in the handler at its next bytecode (a handler stuck in
C code sees it when that returns), and the call ends ``timeout`` either way.
An async handler runs in its own event loop on a daemon thread, abandoned at
the deadline. ``acall`` awaits an async handler under the deadline (the core
judges its deadline again when it returns), and runs sync ones on a daemon
thread (:func:`inline` ones on the event loop's thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import inspect
import os
import site
import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import CallResult, Principal, Ticket
from ._types import PrincipalDict
from .adapters import opentelemetry as _otel

__all__ = ["Harness", "Run", "inline"]

_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+: bounds an await without a task


class _Inline:
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 - an async __call__


def inline(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a sync handler to run on the event loop's thread in ``acall`` too
    (``call`` always runs sync handlers on the calling thread)."""
    if not callable(fn):
        raise TypeError(f"a handler must be callable, not {type(fn).__name__}")
    if _is_async(fn):
        raise TypeError("inline() is for sync handlers; async handlers already run on the caller's event loop")
    return fn if isinstance(fn, _Inline) else _Inline(fn)


def _declare(fn: Any) -> Tuple[Any, str, bool, bool]:
    """``(function, mode, takes idempotency_key, takes progress)`` for the core."""
    if not callable(fn):
        raise TypeError(f"a handler must be callable, not {type(fn).__name__}")
    mode = "inline" if isinstance(fn, _Inline) else "async" if _is_async(fn) else "sync"
    fn = fn.fn if isinstance(fn, _Inline) else fn
    try:
        params: Any = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = ()
    return fn, mode, "idempotency_key" in params, "progress" in params


def _defined_in(fn: Any) -> Optional[str]:
    """The file the code of ``fn`` is defined in; None for code built into Python."""
    for _ in range(8):  # a partial of a method, an lru_cache of a function, an instance's __call__, ...
        if inspect.isfunction(fn):
            return fn.__code__.co_filename
        if inspect.isclass(fn):
            return getattr(sys.modules.get(fn.__module__), "__file__", None)
        inner: Any
        if isinstance(fn, (functools.partial, _Inline)):
            inner = fn.func if isinstance(fn, functools.partial) else fn.fn
        else:
            inner = getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
        if inner is None and not inspect.isroutine(fn):
            inner = getattr(type(fn), "__call__", None)  # noqa: B004 - the code an instance runs when called
        if inner is None:
            return None
        fn = inner
    return None


def _resolve(module: str, attrs: List[str], base: Any) -> Tuple[Any, Optional[str], List[str], str, bool, bool]:
    """Imports a manifest's ``handler`` and reports the facts the core decides on:
    where the resolved callable's code is defined, and which attributes of the path were modules."""
    base = os.fspath(base)
    if base not in sys.path:
        sys.path.insert(0, base)
    fn: Any = importlib.import_module(module)
    modules = []
    for i, part in enumerate(attrs):
        fn = getattr(fn, part)
        if inspect.ismodule(fn):
            modules.append(".".join(attrs[: i + 1]))
    if not callable(fn):
        raise ImportError(f"`{module}:{'.'.join(attrs)}` is not callable")
    _, mode, takes_key, takes_progress = _declare(fn)
    return fn, _defined_in(fn), modules, mode, takes_key, takes_progress


def _roots() -> List[str]:
    """Where installed packages live: their code may be named by a manifest."""
    found = set(getattr(site, "getsitepackages", list)()) | {site.getusersitepackages()}
    found |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    return sorted(found)


def _thread(fn: Callable[[], Any]) -> "concurrent.futures.Future[Any]":
    """Runs ``fn()`` on a daemon thread (one abandoned at its deadline must not hold up the exit)."""
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def target() -> None:
        done.set_running_or_notify_cancel()
        try:
            done.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - every failure is the call's outcome
            done.set_exception(exc)

    threading.Thread(target=target, name="harnessweaver-handler", daemon=True).start()
    return done


def _run(fn: Callable[..., Any], kwargs: Dict[str, Any], timeout: float) -> Tuple[str, Any]:
    """An async handler from ``call``: its own event loop on a daemon thread, abandoned at the deadline."""
    done = _thread(lambda: asyncio.run(fn(**kwargs)))
    concurrent.futures.wait([done], min(timeout, threading.TIMEOUT_MAX))
    if not done.done():
        return "timeout", None
    exc = done.exception()
    return ("returned", done.result()) if exc is None else ("failed", type(exc).__name__)


class Run:
    """A run: calls made through it share its labels, budgets and id."""

    __slots__ = ("_harness", "id", "principal", "tenant", "task")

    def __init__(self, harness: "Harness", run_id: str, principal: Principal, tenant: Optional[str], task: Optional[str]) -> None:
        self._harness, self.id, self.principal, self.tenant, self.task = harness, run_id, principal, tenant, task

    @property
    def labels(self) -> Dict[str, bool]:
        """``{"private": bool, "untrusted": bool}``, as the store holds them now."""
        return self._harness.labels(self.id)

    def call(self, tool: str, args: Optional[Mapping[str, Any]] = None, **kw: Any) -> CallResult:
        """:meth:`Harness.call` within this run."""
        return self._harness.call(tool, args, principal=self.principal, tenant=self.tenant, task=self.task, run=self.id, **kw)

    async def acall(self, tool: str, args: Optional[Mapping[str, Any]] = None, **kw: Any) -> CallResult:
        """:meth:`Harness.acall` within this run."""
        return await self._harness.acall(
            tool, args, principal=self.principal, tenant=self.tenant, task=self.task, run=self.id, **kw
        )

    def __repr__(self) -> str:
        return f"Run(id={self.id!r})"


class Harness(_native.Host):
    """A loaded harness: its ``tools`` and (from ``load``) the governor."""

    path: str
    _tools: Optional[List[Any]]

    def __new__(
        cls,
        path: str,
        handlers: Mapping[str, Any],
        tools: Sequence[Any],
        audit: Any,
        on_approval: Any,
        inspect_only: bool = False,
        **test: Any,
    ) -> "Harness":
        declared = {name: _declare(fn) for name, fn in handlers.items()}
        observe, observed = _otel.observer()
        self: Harness = super().__new__(  # type: ignore[assignment]
            cls,
            path,
            declared,
            list(tools),
            audit,
            on_approval,
            None if inspect_only else _resolve,
            _roots(),
            _run,
            inspect=inspect_only,
            observe=observe,
            **test,
        )
        self.path, self._tools = path, None
        observed(self)
        return self

    @property
    def tools(self) -> List[Any]:
        """Every tool's :class:`ToolDescription`, in the order its manifest was found."""
        if self._tools is None:
            from . import ToolDescription

            self._tools = [ToolDescription(d) for d in self.describe_tools()]
        return self._tools

    def tool(self, name: str) -> Optional[Any]:
        """The tool called ``name``, or None."""
        return next((t for t in self.tools if t.name == name), None)

    def run(self, *, principal: Union[Principal, PrincipalDict], tenant: Optional[str] = None, task: Optional[str] = None) -> Run:
        """Starts a run from the ``api`` source for ``principal`` (admitted by
        ``spec.runs``: ``run_not_admitted`` otherwise): its calls share labels,
        budgets and the run id."""
        who = principal if isinstance(principal, Principal) else Principal.from_mapping(principal)
        return Run(self, self.new_run("api", who), who, tenant, task)

    async def acall(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Union[Principal, PrincipalDict],
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: Any = None,
        approval: Any = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """:meth:`call` for asyncio: async handlers are awaited under the deadline."""
        ticket = self.begin(tool, args, principal=principal, tenant=tenant, task=task, run=run, approval=approval)
        return self.deliver(await self._ainvoke(ticket), raise_on_refusal)

    async def aapprove(
        self,
        id: Any,
        *,
        approver: Union[Principal, PrincipalDict],
        args: Optional[Mapping[str, Any]] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """:meth:`approve` for asyncio."""
        return self.deliver(await self._ainvoke(self.approve_and_begin(id, approver=approver, args=args)), raise_on_refusal)

    async def _ainvoke(self, ticket: "Ticket | CallResult") -> CallResult:
        if isinstance(ticket, CallResult):  # refused or pending
            return ticket
        if ticket.route == "transport":  # http, code, mcp: the core's transports, off the event loop
            return await asyncio.get_running_loop().run_in_executor(None, self.finish_transport, ticket)
        fn, kwargs = self.handler(ticket), ticket.kwargs()
        try:
            if ticket.route == "inline":
                value = fn(**kwargs)
            elif ticket.route != "async":
                running = asyncio.wrap_future(_thread(lambda: fn(**kwargs)))
                value = await asyncio.wait_for(asyncio.shield(running), ticket.remaining)
            elif _timeout is None:
                value = await asyncio.wait_for(fn(**kwargs), ticket.remaining)
            else:  # awaited in this task, under its deadline
                async with _timeout(ticket.remaining):
                    value = await fn(**kwargs)
        except asyncio.TimeoutError:
            return self.finish(ticket, "timeout")
        except asyncio.CancelledError:
            self.finish(ticket, "failed", "CancelledError")
            raise
        except BaseException as exc:  # noqa: BLE001 - the call ends handler_error
            return self.finish(ticket, "failed", type(exc).__name__)
        return self.finish(ticket, "returned", value)

    def __repr__(self) -> str:
        return f"Harness(path={self.path!r}, tools={[t.name for t in self.tools]!r})"
