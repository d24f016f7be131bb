"""Spans to the host's own OpenTelemetry API (issue 24), the way an
instrumented library behaves: each governed call's span, as the core describes
it (the ``span`` host method: name, attributes, timings, phases, error), is
handed to ``opentelemetry.trace`` when that package is installed. Nothing here
decides what a span holds.

The core hands each audit event to the ``observe`` callback given at load,
beside the harness's own sink (whose trail stays as configured). Without the
package, :func:`observer` gives none: one import check when this module loads,
nothing per call. With it but no SDK configured (the API's proxy provider), a
call costs one provider check."""

import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

try:
    from opentelemetry import trace as _trace
except ImportError:  # the host has no OpenTelemetry API
    _trace = None  # type: ignore[assignment]

Observer = Callable[[Dict[str, Any]], None]


def observer() -> Tuple[Optional[Observer], Callable[[Any], None]]:
    """The ``observe`` callback to load with (none without OpenTelemetry), and a
    function to call with the loaded host."""
    if _trace is None:
        return None, lambda host: None
    trace = _trace
    tracer = trace.get_tracer("harnessweaver")
    loaded: List[Any] = []

    def observe(event: Dict[str, Any]) -> None:
        if loaded and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            host = loaded[0]()
            if host is not None:
                _emit(trace, tracer, host.request("span", {"event": event}))

    return observe, lambda host: loaded.append(weakref.ref(host))


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
