"""Spans to the host's own OpenTelemetry API (issue 24), the way an
instrumented library behaves: each governed call's span, as the core describes
it (the ``span`` host method: name, attributes, timings, phases, error), is
handed to ``opentelemetry.trace`` when that package is installed, and each
approver's decision is recorded in the ``harnessweaver.approval.wait``
histogram of ``opentelemetry.metrics``. Nothing here decides what a span holds.

The core hands each audit event (and each approval decision) to the
``observe`` callback given at load, beside the harness's own sink (whose trail
stays as configured), while the observer *listens*: a switch in the core that
this module sets from the API's tracer provider, once at load and again each
time a provider is set (the API's setter is wrapped when this module loads).
With the API's proxy provider (no SDK configured) it is off, and the core
builds no event for the observer: a call costs what it costs without the API.
Without the package, :func:`observer` gives none: one import check when this
module loads, nothing per call."""

import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

try:
    from opentelemetry import metrics as _metrics, trace as _trace
except ImportError:  # the host has no OpenTelemetry API
    _trace = None  # type: ignore[assignment]
    _metrics = None  # type: ignore[assignment]

Observer = Callable[[Dict[str, Any]], None]

# The hosts loaded with an observer (weakly), told when the provider changes.
_hosts: List["weakref.ref[Any]"] = []


def _sdk() -> bool:
    """Whether a real tracer provider (an SDK) is behind the API."""
    return _trace is not None and not isinstance(_trace.get_tracer_provider(), _trace.ProxyTracerProvider)


def _tell(host: Any, listening: bool) -> None:
    host.request("observe", {"listening": listening})


def _provider_changed() -> None:
    listening = _sdk()
    for ref in list(_hosts):
        host = ref()
        if host is None:
            _hosts.remove(ref)
        else:
            _tell(host, listening)


def _watch_provider(trace: Any) -> None:
    """Wraps the API's provider setter (``set_tracer_provider``, and the
    environment's ``OTEL_PYTHON_TRACER_PROVIDER``, both go through
    ``_set_tracer_provider``) so that hosts loaded before an SDK is configured
    start listening from their next call."""
    name = "_set_tracer_provider" if hasattr(trace, "_set_tracer_provider") else "set_tracer_provider"
    original = getattr(trace, name)

    def set_provider(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            _provider_changed()

    setattr(trace, name, set_provider)


if _trace is not None:
    _watch_provider(_trace)


def observer() -> Tuple[Optional[Observer], Callable[[Any], None]]:
    """The ``observe`` callback to load with (none without OpenTelemetry), and a
    function to call with the loaded host."""
    if _trace is None or _metrics is None:
        return None, lambda host: None
    trace = _trace
    tracer = trace.get_tracer("harnessweaver")
    wait = _metrics.get_meter("harnessweaver").create_histogram(
        "harnessweaver.approval.wait",
        unit="s",
        description="how long an approval waited, from the call that asked to the approver's decision",
    )
    loaded: List[Any] = []

    def observe(event: Dict[str, Any]) -> None:
        host = loaded[0]() if loaded else None
        if host is None:
            return
        decided = event.get("approval_decided")
        if decided is not None:
            attributes = {"gen_ai.tool.name": decided["tool"], "harnessweaver.approval.state": decided["state"]}
            wait.record(decided["wait_ms"] / 1000, attributes=attributes)
        else:
            _emit(trace, tracer, host.request("span", {"event": event}))

    def attach(host: Any) -> None:
        loaded.append(weakref.ref(host))
        _hosts[:] = [ref for ref in _hosts if ref() is not None] + [weakref.ref(host)]
        _tell(host, _sdk())

    return observe, attach


def _emit(trace: Any, tracer: Any, span: Dict[str, Any]) -> None:
    start_ns = span["start_ms"] * 1_000_000
    parent = tracer.start_span(
        span["name"], kind=trace.SpanKind.INTERNAL, attributes=dict(span["attributes"]), start_time=start_ns
    )
    within = trace.set_span_in_context(parent)
    for phase in span["phases"]:
        begin = start_ns + phase["start_offset_us"] * 1000
        child = tracer.start_span(phase["name"], context=within, start_time=begin)
        child.end(end_time=begin + phase["duration_us"] * 1000)
    if span["error"] is not None:
        parent.set_status(trace.Status(trace.StatusCode.ERROR, span["error"]))
    parent.end(end_time=start_ns + span["duration_us"] * 1000)
