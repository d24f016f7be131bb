"""The governor for Python: load a harness with its handlers, then call tools.

The core decides every step of a call (``_native.Runtime.begin`` runs steps
1-7, ``finish_*`` runs step 9 and writes the audit event). This module only
imports handlers, invokes them between the two with the tool's timeout, and
turns refusals into exceptions when asked to.

Sync handlers run on a daemon worker thread and are abandoned when they
overrun (the thread is left to finish on its own and never reused); async
handlers run under ``asyncio.wait_for``. A sync handler marked with
:func:`inline` runs on the calling thread instead: no thread hand-off, and an
overrun is refused with ``timeout`` when it returns, but it cannot be abandoned.
"""

from __future__ import annotations

import _thread
import asyncio
import importlib
import inspect
import os
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _native
from ._native import CallResult, HarnessweaverError, LoadError, Principal

__all__ = [
    "ApprovalDenied",
    "ApprovalRequired",
    "CallResult",
    "DigestMismatch",
    "FlowBlocked",
    "GovernedHarness",
    "InvalidArguments",
    "LimitExceeded",
    "OutputRejected",
    "PolicyDenied",
    "Principal",
    "Run",
    "ToolBlocked",
    "ToolFailed",
    "ToolNotFound",
    "inline",
]


# --- refusals as exceptions ------------------------------------------------------------------


class ToolBlocked(HarnessweaverError):
    """A call that did not run (refused, or waiting for approval). ``.code`` and
    ``.step`` are the core's; ``.result`` is the whole :class:`CallResult`."""

    def __init__(self, result: CallResult) -> None:
        super().__init__(result.message)
        self.result = result
        # A refused or pending result always has a code and a step.
        self.code = cast(str, result.code)
        self.step = result.step
        self.problems: List[Any] = []

    def to_model(self) -> str:
        """The text to hand back to the model."""
        return self.result.to_model()


class ToolNotFound(ToolBlocked):
    """Step 1 (resolve): unknown tool, no manifest, disabled, tenant not enabled."""


class InvalidArguments(ToolBlocked):
    """Step 2 (validate): the arguments fail the schema or a payload constraint."""


class DigestMismatch(ToolBlocked):
    """Step 3 (pin): the tool changed since it was pinned."""


class PolicyDenied(ToolBlocked):
    """Step 4 (policy): a scope is missing or a policy rule denies."""


class LimitExceeded(ToolBlocked):
    """Step 5 (limits): a run budget is spent or a rate limit hit (``retry_after_ms``)."""

    @property
    def retry_after_ms(self) -> Optional[int]:
        """For ``rate_limited``: when the call may be retried, in ms; None for ``budget_exhausted``."""
        return self.result.retry_after_ms


class FlowBlocked(ToolBlocked):
    """Step 6 (flow): the lethal-trifecta rule."""


class ApprovalRequired(ToolBlocked):
    """Step 7: the call waits for a human; ``.approval`` is the pending approval."""

    @property
    def approval(self) -> Dict[str, Any]:
        """The pending approval ``{id, tool, args_digest, approver_role, reasons,
        expires_ms, …}``: pass its ``id`` to ``approve``, ``grant`` or ``deny``."""
        return cast(Dict[str, Any], self.result.approval)


class ApprovalDenied(ToolBlocked):
    """Step 7: the approval was denied, or is not pending."""


class ToolFailed(ToolBlocked):
    """Step 8 (invoke): the handler raised, timed out or returned no JSON."""


class OutputRejected(ToolBlocked):
    """Step 9 (output): the output fails the tool's output constraints."""


_BY_STEP = {
    "resolve": ToolNotFound,
    "validate": InvalidArguments,
    "pin": DigestMismatch,
    "policy": PolicyDenied,
    "limits": LimitExceeded,
    "flow": FlowBlocked,
    "approval": ApprovalDenied,
    "invoke": ToolFailed,
    "output": OutputRejected,
}


def _blocked(result: CallResult) -> ToolBlocked:
    if result.decision == "pending":
        return ApprovalRequired(result)
    return _BY_STEP.get(cast(str, result.step), ToolBlocked)(result)


# --- handler invocation ----------------------------------------------------------------------


class _Worker:
    """One daemon thread running sync handlers, one at a time.

    A synchronous call hands its job over with two bare locks, ``go`` (wakes
    the worker) and ``done`` (wakes the caller), and waits on ``done`` with
    the tool's timeout: two thread switches and no ``Future``, queue or
    condition variable per call. ``acall`` still gets a ``Future`` it can
    await. A worker whose handler overran is abandoned: it finishes on its own,
    then exits, and is never reused."""

    __slots__ = ("pool", "go", "done", "job", "value", "error", "abandoned")

    def __init__(self, pool: "_Workers") -> None:
        self.pool = pool
        self.go = _thread.allocate_lock()
        self.go.acquire()
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.job: Optional[Tuple[Callable[..., Any], Dict[str, Any], Optional[Future[Any]]]] = None
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self.abandoned = False
        threading.Thread(target=self._loop, name="harnessweaver-handler", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.go.acquire()
            job, self.job = self.job, None
            if job is None:  # told to stop
                return
            fn, kwargs, future = job
            del job
            value = error = None
            try:
                value = fn(**kwargs)
                if inspect.iscoroutine(value):
                    value = asyncio.run(value)
            except BaseException as exc:  # noqa: BLE001 - every failure is reported as the call's outcome
                error = exc
            del fn, kwargs
            if future is None:
                # The caller reads the outcome and puts the worker back.
                self.value, self.error = value, error
                del value, error
                self.done.release()
                if self.abandoned:
                    return
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
            del future, value, error
            if not self.pool.give_back(self):
                return


class _Workers:
    """Daemon worker threads for sync handlers. A worker whose handler overran
    is abandoned: it finishes on its own and is never reused, so a hung handler
    cannot starve later calls (and daemon threads never block interpreter exit)."""

    def __init__(self) -> None:
        self._idle: List[_Worker] = []
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            return _Worker(self)
        worker.abandoned = False
        return worker

    def run(self, fn: Callable[..., Any], kwargs: Dict[str, Any], timeout: float) -> Tuple[bool, Any, Optional[BaseException]]:
        """Runs ``fn(**kwargs)`` on a worker and waits at most ``timeout``
        seconds: ``(finished, value, error)``; an unfinished handler is abandoned."""
        worker = self._take()
        worker.job = (fn, kwargs, None)
        worker.go.release()
        try:
            finished = worker.done.acquire(timeout=min(timeout, threading.TIMEOUT_MAX))
        except BaseException:  # interrupted (KeyboardInterrupt): let the handler finish alone
            self._abandon_sync(worker)
            raise
        if not finished and not self._abandon_sync(worker):
            return False, None, None
        value, error = worker.value, worker.error
        worker.value = worker.error = None
        if not worker.abandoned:
            with self._lock:
                self._idle.append(worker)
        return True, value, error

    def _abandon_sync(self, worker: _Worker) -> bool:
        """Abandons a worker that has not signalled ``done``; True when it
        finished just now after all (it then stops instead of being reused)."""
        worker.abandoned = True
        if worker.done.acquire(blocking=False):
            # It may already be waiting for a next job: tell it to stop.
            worker.job = None
            worker.go.release()
            return True
        return False

    def submit(self, fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Tuple[Future[Any], _Worker]:
        worker = self._take()
        future: Future[Any] = Future()
        worker.job = (fn, kwargs, future)
        worker.go.release()
        return future, worker

    def abandon(self, worker: _Worker) -> None:
        with self._lock:
            # Already back among the idle: it finished after all.
            if not any(w is worker for w in self._idle):
                worker.abandoned = True

    def give_back(self, worker: _Worker) -> bool:
        with self._lock:
            if worker.abandoned:
                return False
            self._idle.append(worker)
            return True


# asyncio.timeout (Python 3.11+) bounds an await without wrapping it in a task.
_timeout = getattr(asyncio, "timeout", None)

# One pool for every harness in the process: idle workers are shared.
_WORKERS = _Workers()


def _takes_key(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "idempotency_key" in params


class _Inline:
    """A sync handler to run on the calling thread (see :func:`inline`)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def inline(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a sync handler to run on the thread that makes the call, without
    the hand-off to a worker thread (a few microseconds per call, more on a
    busy machine). Its timeout is checked when it returns: an overrun is
    refused with ``timeout`` and its output withheld, but a handler that never
    returns blocks its caller, because it cannot be abandoned. Use it for
    handlers that cannot hang (pure computation, in-memory lookups)::

        hw.load(path, handlers={"lookup_order": hw.inline(lookup_order)})
    """
    if isinstance(fn, _Inline):
        return fn
    if not callable(fn):
        raise TypeError(f"a handler must be callable, not {type(fn).__name__}")
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004 - an async __call__
        raise TypeError("inline() is for sync handlers; async handlers already run on the caller's event loop")
    return _Inline(fn)


class _Handler:
    __slots__ = ("fn", "takes_key", "is_async", "inline")

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"a handler must be callable, not {type(fn).__name__}")
        self.inline = isinstance(fn, _Inline)
        if isinstance(fn, _Inline):
            fn = fn.fn
        self.fn = fn
        self.takes_key = _takes_key(fn)
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _import_handler(ref: str, base: str) -> Callable[..., Any]:
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ImportError(f"handler `{ref}` is not `module:function`")
    if base not in sys.path:
        sys.path.insert(0, base)
    module = importlib.import_module(module_name)
    _check_handler_origin(ref, module, base)
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise ImportError(f"`{ref}` is not callable")
    return cast(Callable[..., Any], fn)


def _check_handler_origin(ref: str, module: Any, base: str) -> None:
    """A manifest's ``handler`` names code in the project: a module under the
    harness directory, or an installed package (site-packages). Anything else
    (the standard library, ``os:system``, ``subprocess:run``, builtins, or a
    module of the same name imported earlier from another harness directory)
    is refused: a manifest must not turn any importable callable into a tool.
    Hosts that need another function pass it in ``handlers=``."""
    origin = getattr(module, "__file__", None)
    if origin:
        real = os.path.realpath(origin)
        root = os.path.realpath(base)
        if os.path.commonpath([real, root]) == root:
            return
        if any(part in ("site-packages", "dist-packages") for part in real.split(os.sep)):
            return
    where = f"`{origin}`" if origin else "a built-in module"
    raise ImportError(
        f"handler `{ref}` resolves to {where}, outside the harness directory and installed packages;"
        f" pass the function in handlers= instead"
    )


def _load_error(problems: List[Dict[str, Any]]) -> LoadError:
    lines = [f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found"]
    for p in problems:
        lines.append(f"  {p['file']}: {p['path']}: {p['message']} [{p['code']}]")
    err = LoadError("\n".join(lines))
    err.code = problems[0]["code"] if len(problems) == 1 else "load_error"
    err.problems = [_native.make_problem(**p) for p in problems]
    return err


# --- the harness -----------------------------------------------------------------------------


RunLike = Union["Run", str, None]


class Run:
    """A run: calls made through it share its labels (private, untrusted),
    its budgets and its id."""

    __slots__ = ("_harness", "id", "principal", "tenant", "task")

    def __init__(
        self, harness: "GovernedHarness", run_id: str, principal: Any, tenant: Optional[str], task: Optional[str]
    ) -> None:
        self._harness = harness
        self.id = run_id
        self.principal = principal
        self.tenant = tenant
        self.task = task

    @property
    def labels(self) -> Dict[str, bool]:
        """``{"private": bool, "untrusted": bool}``, as the store holds them now."""
        return self._harness._rt.labels(self.id)

    def call(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        approval: Optional[str] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """:meth:`GovernedHarness.call` within this run."""
        return self._harness.call(
            tool,
            args,
            principal=self.principal,
            tenant=self.tenant,
            task=self.task,
            run=self.id,
            approval=approval,
            raise_on_refusal=raise_on_refusal,
        )

    async def acall(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        approval: Optional[str] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """:meth:`GovernedHarness.acall` within this run."""
        return await self._harness.acall(
            tool,
            args,
            principal=self.principal,
            tenant=self.tenant,
            task=self.task,
            run=self.id,
            approval=approval,
            raise_on_refusal=raise_on_refusal,
        )

    def __repr__(self) -> str:
        return f"Run(id={self.id!r})"


class GovernedHarness:
    """Mixin of :class:`harnessweaver.Harness`: calls through the governor."""

    __slots__ = ()

    _rt: "_native.Runtime"
    _handlers: Dict[str, _Handler]
    _workers: _Workers

    def _init_governor(
        self,
        path: str,
        described: List[Dict[str, Any]],
        handlers: Optional[Mapping[str, Callable[..., Any]]],
        tools: Sequence[Any],
        audit: Optional[Callable[[Dict[str, Any]], Any]],
        on_approval: Optional[Callable[..., Optional[bool]]],
        clock_ms: Optional[int] = None,
        sequential_ids: bool = False,
        sandbox_worker: Optional[str] = None,
    ) -> None:
        given: Dict[str, Callable[..., Any]] = dict(handlers or {})
        code_tools: List[Tuple[Any, str]] = []
        for item in tools:
            description, fn = _tool_item(item)
            source = description._source_manifest()
            code_tools.append(source)
            if fn is not None:
                given[description.name] = fn
        base = os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else os.path.abspath(path)
        problems: List[Dict[str, Any]] = []
        for tool in described:
            name = tool["name"]
            if tool.get("transport") != "native" or name in given or not tool.get("handler"):
                continue
            try:
                given[name] = _import_handler(tool["handler"], base)
            except Exception as exc:  # noqa: BLE001 - any import failure is a load problem
                problems.append(
                    {
                        "code": "handler_import_failed",
                        "message": f"cannot import handler `{tool['handler']}` of `{name}`: {type(exc).__name__}: {exc}",
                        "file": tool.get("file"),
                        "path": "spec.handler",
                    }
                )
        if problems:
            raise _load_error(problems)
        # The mixin has no slots of its own; Harness, which it is mixed into, holds these.
        self._handlers = {name: _Handler(fn) for name, fn in given.items()}  # type: ignore[misc]
        self._rt = _native.Runtime(  # type: ignore[misc]
            path, sorted(self._handlers), code_tools, audit, on_approval, clock_ms, sequential_ids, sandbox_worker
        )
        self._workers = _WORKERS  # type: ignore[misc]

    # -- calls --

    def _begin(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]],
        principal: Any,
        tenant: Optional[str],
        task: Optional[str],
        run: RunLike,
        approval: Optional[str],
    ) -> Any:
        run_id = run.id if isinstance(run, Run) else run
        if isinstance(approval, Mapping):
            approval = approval.get("id")
        return self._rt.begin(tool, {} if args is None else args, principal, tenant, task, run_id, approval)

    def _invoke(self, ticket: "_native.Ticket") -> CallResult:
        handler = self._handlers.get(ticket.tool)
        if handler is None:  # http, code, mcp: the core's transports
            return self._rt.finish_transport(ticket)
        kwargs = ticket.args
        if handler.takes_key:
            kwargs["idempotency_key"] = ticket.idempotency_key
        if handler.inline:
            return self._invoke_inline(ticket, handler, kwargs)
        finished, value, error = self._workers.run(handler.fn, kwargs, ticket.timeout_ms / 1000.0)
        if not finished:
            return self._rt.finish_timed_out(ticket)
        if error is not None:
            return self._rt.finish_failed(ticket, type(error).__name__)
        return self._rt.finish_returned(ticket, value)

    def _invoke_inline(self, ticket: "_native.Ticket", handler: _Handler, kwargs: Dict[str, Any]) -> CallResult:
        started = time.monotonic()
        try:
            value = handler.fn(**kwargs)
            if inspect.iscoroutine(value):
                value = asyncio.run(value)
        except BaseException as exc:
            result = self._rt.finish_failed(ticket, type(exc).__name__)
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: recorded, then raised
                raise
            return result
        if time.monotonic() - started > ticket.timeout_ms / 1000.0:
            return self._rt.finish_timed_out(ticket)
        return self._rt.finish_returned(ticket, value)

    async def _ainvoke(self, ticket: "_native.Ticket") -> CallResult:
        handler = self._handlers.get(ticket.tool)
        if handler is None:  # http, code, mcp: the core's transports, off the event loop
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self._rt.finish_transport, ticket)
        kwargs = ticket.args
        if handler.takes_key:
            kwargs["idempotency_key"] = ticket.idempotency_key
        if handler.inline:  # on the event loop's thread, as asked
            return self._invoke_inline(ticket, handler, kwargs)
        timeout = ticket.timeout_ms / 1000.0
        try:
            if handler.is_async:
                if _timeout is not None:
                    # No extra task (cheaper than wait_for); the handler is cancelled on overrun.
                    async with _timeout(timeout):
                        value = await handler.fn(**kwargs)
                else:
                    value = await asyncio.wait_for(handler.fn(**kwargs), timeout)
            else:
                future, worker = self._workers.submit(handler.fn, kwargs)
                try:
                    value = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout)
                except asyncio.TimeoutError:
                    self._workers.abandon(worker)
                    raise
        except asyncio.TimeoutError:
            return self._rt.finish_timed_out(ticket)
        except asyncio.CancelledError:
            self._rt.finish_failed(ticket, "CancelledError")
            raise
        except BaseException as exc:  # noqa: BLE001
            return self._rt.finish_failed(ticket, type(exc).__name__)
        return self._rt.finish_returned(ticket, value)

    @staticmethod
    def _deliver(result: CallResult, raise_on_refusal: bool) -> CallResult:
        if raise_on_refusal and result.decision != "allowed":
            raise _blocked(result)
        return result

    def call(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Any,
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: RunLike = None,
        approval: Optional[str] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """Calls ``tool`` with ``args`` through the nine steps and returns the
        :class:`CallResult`. A refused or pending call raises a :class:`ToolBlocked`
        subclass (``.code``, ``.step``, ``.result``) unless ``raise_on_refusal=False``.
        The handler runs on a worker thread; an async handler runs in its own
        event loop there (use :meth:`acall` inside a running loop).

        ``principal`` is a :class:`Principal` or a mapping ``{id, roles, scopes,
        attrs}``; ``run`` a :class:`Run` or run id (without one the call gets a run
        of its own); ``approval`` the id of an approval granted for exactly this
        call. Raises :class:`InvalidArgumentError` (``invalid_principal``) and
        :class:`InvalidValueError` (``non_finite_number``, ``integer_out_of_range``,
        ``nesting_too_deep``, …) for bad input; the refusal codes are in
        docs/governor.md."""
        begun = self._begin(tool, args, principal, tenant, task, run, approval)
        if type(begun) is CallResult:
            return self._deliver(begun, raise_on_refusal)
        return self._deliver(self._invoke(begun), raise_on_refusal)

    async def acall(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Any,
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: RunLike = None,
        approval: Optional[str] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """:meth:`call` for asyncio: async handlers are awaited (with
        ``asyncio.wait_for``), sync ones run on a worker thread."""
        begun = self._begin(tool, args, principal, tenant, task, run, approval)
        if type(begun) is CallResult:
            return self._deliver(begun, raise_on_refusal)
        return self._deliver(await self._ainvoke(begun), raise_on_refusal)

    def run(self, *, principal: Any, tenant: Optional[str] = None, task: Optional[str] = None) -> Run:
        """Starts a run: its calls share labels, budgets and the run id."""
        if not isinstance(principal, Principal):
            principal = Principal.from_mapping(principal)
        return Run(self, self._rt.new_run(), principal, tenant, task)

    # -- approvals --

    def approve(
        self, id: Any, *, approver: Any, args: Optional[Mapping[str, Any]] = None, raise_on_refusal: bool = True
    ) -> CallResult:
        """Grants approval ``id`` (``approver`` must hold the tool's approver role),
        then runs the approved call and returns its result. ``args`` replaces the
        call's arguments with the approver's edit; the edited call goes through
        every step again. Raises :class:`InvalidArgumentError` with
        ``unknown_approval``, ``approval_not_pending`` (already decided or used),
        ``approval_expired`` or ``approver_not_allowed``."""
        begun = self._rt.approve_and_begin(_approval_id(id), approver, args)
        if type(begun) is CallResult:
            return self._deliver(begun, raise_on_refusal)
        return self._deliver(self._invoke(begun), raise_on_refusal)

    async def aapprove(
        self, id: Any, *, approver: Any, args: Optional[Mapping[str, Any]] = None, raise_on_refusal: bool = True
    ) -> CallResult:
        """:meth:`approve` for asyncio."""
        begun = self._rt.approve_and_begin(_approval_id(id), approver, args)
        if type(begun) is CallResult:
            return self._deliver(begun, raise_on_refusal)
        return self._deliver(await self._ainvoke(begun), raise_on_refusal)

    def grant(self, id: Any, *, approver: Any) -> Dict[str, Any]:
        """Grants approval ``id`` without running the call; the caller makes the
        call later with ``approval=id`` (before it expires). Returns the approval.
        Raises as :meth:`approve`."""
        return self._rt.grant(_approval_id(id), approver)

    def explain(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Any,
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: RunLike = None,
    ) -> Dict[str, Any]:
        """Each step's verdict for this call, without running it or changing any
        state (no budget spent, no approval created). The dict's ``"text"`` is a
        readable one-line-per-step form."""
        run_id = run.id if isinstance(run, Run) else run
        value, text = self._rt.explain(tool, {} if args is None else args, principal, tenant, task, run_id)
        value["text"] = text
        return value

    def deny(self, id: str, reason: str = "", *, by: Any) -> Dict[str, Any]:
        """Denies approval ``id`` (``by`` is the reviewer's principal) and returns
        it; a later call presenting it is refused ``approval_denied``. Raises
        :class:`InvalidArgumentError` (``unknown_approval``, ``approval_not_pending``)."""
        return self._rt.deny(_approval_id(id), by, reason)

    def approvals(self) -> List[Dict[str, Any]]:
        """Approvals waiting for a human, or granted and not yet used."""
        return self._rt.approvals()

    def tool_specs(self, format: str = "openai", principal: Any = None, tenant: Optional[str] = None) -> List[Dict[str, Any]]:
        """The tools as model APIs take them: ``"openai"``, ``"anthropic"`` or ``"mcp"``,
        leaving out tools ``principal`` in ``tenant`` can never call. Raises
        :class:`InvalidArgumentError` (``invalid_format``) for another format."""
        return self._rt.tool_specs(format, principal, tenant)


class _NotForCalls:
    """Stands for the runtime of a harness opened with ``inspect()``."""

    def __getattr__(self, name: str) -> Any:
        from ._native import InvalidArgumentError

        err = InvalidArgumentError("this harness was opened with inspect() and cannot take calls; use load()")
        err.code = "not_loaded_for_calls"
        raise err


def _approval_id(id: Any) -> str:
    if isinstance(id, Mapping):
        return cast(str, id["id"])
    if isinstance(id, ApprovalRequired):
        return cast(str, id.approval["id"])
    return cast(str, id)


def _tool_item(item: Any) -> Tuple[Any, Optional[Callable[..., Any]]]:
    from . import ToolDescription

    if isinstance(item, ToolDescription):
        return item, None
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], ToolDescription):
        return item[0], item[1]
    raise TypeError("`tools` takes ToolDescription objects or (ToolDescription, function) pairs")
