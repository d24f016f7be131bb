'use strict'
// Issue 24: the adapter to the host's own OpenTelemetry API (index.js loads it; null when
// @opentelemetry/api is not installed, checked once: then no observer is given and a call
// pays nothing). Each call's span, as the core describes it (the `span` host method), goes
// to the API's tracer, and each approval decision's wait to the `harnessweaver.approval.wait`
// histogram. Each host has a switch in the core saying whether its observer listens: on while
// an SDK is behind the API's proxy tracer provider (else the core builds no event for it);
// the API's setGlobalTracerProvider and disable are wrapped to flip the switches.

const otel = (() => {
  try {
    return require('@opentelemetry/api')
  } catch {
    return null
  }
})()

// Hosts loaded with an observer, weakly.
const observed = new Set()

function sdkRegistered() {
  const provider = otel.trace.getTracerProvider()
  return provider.getDelegateTracer ? provider.getDelegateTracer('harnessweaver') !== undefined : true
}

for (const name of otel ? ['setGlobalTracerProvider', 'disable'] : []) {
  const original = otel.trace[name]
  otel.trace[name] = function (...args) {
    try {
      return original.apply(this, args)
    } finally {
      for (const ref of observed) ref.deref()?.request('observe', { listening: sdkRegistered() }) ?? observed.delete(ref)
    }
  }
}

/** The observer of the host `loaded.host` (a WeakRef set once it is loaded): an audit event or approval decision to OpenTelemetry. */
function observer(loaded) {
  return (event) => {
    const decided = event.approval_decided
    if (decided) {
      // The API's meter provider has no proxy: asked at each (rare) decision, so a provider set later is used.
      const wait = otel.metrics.getMeter('harnessweaver').createHistogram('harnessweaver.approval.wait', {
        unit: 's',
        description: "how long an approval waited, from the call that asked to the approver's decision",
      })
      wait.record(decided.wait_ms / 1000, { 'gen_ai.tool.name': decided.tool, 'harnessweaver.approval.state': decided.state })
    } else if (loaded.host?.deref()) {
      emitSpan(otel.trace.getTracerProvider().getTracer('harnessweaver'), loaded.host.deref().request('span', { event }))
    }
  }
}

function emitSpan(tracer, span) {
  // [seconds, nanoseconds] of `us` microseconds after the span's start (µs since the epoch fit a double exactly).
  const at = (us) => {
    const t = span.start_ms * 1000 + us
    return [Math.floor(t / 1e6), (t % 1e6) * 1000]
  }
  const parent = tracer.startSpan(span.name, { kind: otel.SpanKind.INTERNAL, attributes: Object.fromEntries(span.attributes), startTime: at(0) })
  const within = otel.trace.setSpan(otel.context.active(), parent)
  for (const phase of span.phases) {
    tracer.startSpan(phase.name, { startTime: at(phase.start_offset_us) }, within).end(at(phase.start_offset_us + phase.duration_us))
  }
  if (span.error !== null) parent.setStatus({ code: otel.SpanStatusCode.ERROR, message: span.error })
  parent.end(at(span.duration_us))
}

/** Watches a loaded host (a WeakRef to it): its switch set now and whenever a provider comes or goes. */
function watch(ref) {
  observed.add(ref)
  ref.deref().request('observe', { listening: sdkRegistered() })
}

module.exports = otel && { observer, watch }
