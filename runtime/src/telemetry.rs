//! OpenTelemetry export of governed calls (OTLP over HTTP).
//!
//! When `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, [`init_from_env`] installs a tracer and a meter provider (the
//! maintained `opentelemetry` crates, batch export on their own thread) and
//! every governor the runtime builds records each call as an
//! `execute_tool {tool}` span: the core's [`SpanRecord`] (GenAI semantic
//! conventions, never arguments or outputs), with a child span per phase.
//! Metrics: `harnessweaver.calls` (by decision and code),
//! `harnessweaver.refusals` (by code) and `harnessweaver.phase.duration` (a
//! histogram per phase, seconds), `harnessweaver.approval.wait` (a histogram,
//! seconds from the call that asked for an approval to its decision). Without the variable nothing is installed and
//! the governor's audit sink is not even wrapped: no cost.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use harnessweaver_core::audit::{ApprovalDecided, AuditEvent, AuditSink, SpanRecord, SpanValue};
use harnessweaver_core::error::Error;
use harnessweaver_core::harness::Harness;

/// The installed exporters (process-wide, once).
struct Telemetry {
    tracer: SdkTracer,
    calls: Counter<u64>,
    refusals: Counter<u64>,
    phases: Histogram<f64>,
    approval_wait: Histogram<f64>,
}

static ACTIVE: OnceLock<Telemetry> = OnceLock::new();

/// Flushes and shuts the exporters down when dropped (before the process exits).
#[derive(Debug)]
pub struct TelemetryGuard {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let _ = self.tracer.force_flush();
        let _ = self.tracer.shutdown();
        if let Some(m) = &self.meter {
            let _ = m.force_flush();
            let _ = m.shutdown();
        }
    }
}

/// Whether the environment asks for OTLP export.
pub fn configured() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].iter().any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
        && std::env::var("OTEL_SDK_DISABLED").map_or(true, |v| v != "true")
}

/// Installs OTLP/HTTP export when the environment configures it (see the
/// module's page); `Ok(None)` when it does not. Keep the guard until exit.
pub fn init_from_env() -> Result<Option<TelemetryGuard>, String> {
    if !configured() || ACTIVE.get().is_some() {
        return Ok(None);
    }
    // reqwest is built without a TLS provider of its own (as the MCP transport's): ring, once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let resource = Resource::builder().with_service_name(std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "harnessweaver".into())).build();
    let spans = opentelemetry_otlp::SpanExporter::builder().with_http().build().map_err(|e| format!("OTLP span exporter: {e}"))?;
    let tracer_provider = SdkTracerProvider::builder().with_batch_exporter(spans).with_resource(resource.clone()).build();
    let meter_provider = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .build()
        .ok()
        .map(|exporter| SdkMeterProvider::builder().with_periodic_exporter(exporter).with_resource(resource).build());
    let tracer = tracer_provider.tracer("harnessweaver");
    let meter = match &meter_provider {
        Some(m) => m.meter("harnessweaver"),
        None => opentelemetry::global::meter("harnessweaver"),
    };
    let telemetry = Telemetry {
        tracer,
        calls: meter.u64_counter("harnessweaver.calls").with_description("governed calls, by decision and code").build(),
        refusals: meter.u64_counter("harnessweaver.refusals").with_description("refused calls, by code").build(),
        phases: meter
            .f64_histogram("harnessweaver.phase.duration")
            .with_unit("s")
            .with_description("time per phase of a governed call (decide: steps 1-7, invoke, output)")
            .build(),
        approval_wait: meter
            .f64_histogram("harnessweaver.approval.wait")
            .with_unit("s")
            .with_description("how long an approval waited, from the call that asked to the approver's decision")
            .build(),
    };
    let _ = ACTIVE.set(telemetry);
    Ok(Some(TelemetryGuard { tracer: tracer_provider, meter: meter_provider }))
}

/// The audit sink a governor records to: `sink`, wrapped to export spans when telemetry is installed.
pub(crate) fn observe(harness: &Harness, sink: Arc<dyn AuditSink>) -> Arc<dyn AuditSink> {
    if ACTIVE.get().is_none() {
        return sink;
    }
    let descriptions = harness.tools().iter().map(|t| (t.name().to_string(), t.manifest().description.clone())).collect();
    Arc::new(SpanSink { inner: sink, descriptions, policy_version: harnessweaver_core::governor::policy_version_of(harness) })
}

/// Records each event to the harness's sink and exports its span.
#[derive(Debug)]
struct SpanSink {
    inner: Arc<dyn AuditSink>,
    descriptions: HashMap<String, String>,
    /// The loaded policy's version (the same digest the governor binds approvals to).
    policy_version: String,
}

impl AuditSink for SpanSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        if let Some(t) = ACTIVE.get() {
            let record = SpanRecord::of(event, self.descriptions.get(&event.tool).map(String::as_str), Some(&self.policy_version));
            t.export(&record, event);
        }
        if self.inner.is_null() {
            Ok(())
        } else {
            self.inner.record(event)
        }
    }

    fn approval_decided(&self, decided: &ApprovalDecided) {
        if let Some(t) = ACTIVE.get() {
            t.approval_wait.record(
                decided.wait_ms as f64 / 1e3,
                &[KeyValue::new("gen_ai.tool.name", decided.tool.clone()), KeyValue::new("harnessweaver.approval.state", decided.state.clone())],
            );
        }
        self.inner.approval_decided(decided);
    }
}

fn at(start_ms: u64, offset_us: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(start_ms) + Duration::from_micros(offset_us)
}

fn value(v: &SpanValue) -> Value {
    match v {
        SpanValue::Str(s) => Value::from(s.clone()),
        SpanValue::Int(i) => Value::from(*i),
        SpanValue::List(names) => Value::Array(opentelemetry::Array::String(names.iter().map(|n| n.clone().into()).collect())),
    }
}

impl Telemetry {
    fn export(&self, record: &SpanRecord, event: &AuditEvent) {
        let attributes: Vec<KeyValue> = record.attributes.iter().map(|(k, v)| KeyValue::new(*k, value(v))).collect();
        let mut span = self
            .tracer
            .span_builder(record.name.clone())
            .with_kind(SpanKind::Internal)
            .with_start_time(at(record.start_ms, 0))
            .with_attributes(attributes)
            .start(&self.tracer);
        if let Some(code) = &record.error {
            span.set_status(Status::error(code.clone()));
        }
        let cx = Context::current_with_span(span);
        for phase in &record.phases {
            let mut child = self
                .tracer
                .span_builder(phase.name)
                .with_kind(SpanKind::Internal)
                .with_start_time(at(record.start_ms, phase.start_offset_us))
                .start_with_context(&self.tracer, &cx);
            child.end_with_timestamp(at(record.start_ms, phase.start_offset_us + phase.duration_us));
            let name = phase.name.trim_start_matches("harnessweaver.");
            self.phases.record(
                phase.duration_us as f64 / 1e6,
                &[KeyValue::new("harnessweaver.phase", name), KeyValue::new("gen_ai.tool.name", event.tool.clone())],
            );
        }
        cx.span().end_with_timestamp(at(record.start_ms, record.duration_us));
        let code = event.code.map_or("", |c| c.as_str());
        self.calls.add(1, &[KeyValue::new("harnessweaver.decision", event.decision.as_str()), KeyValue::new("harnessweaver.code", code)]);
        if record.error.is_some() {
            self.refusals.add(1, &[KeyValue::new("harnessweaver.code", code), KeyValue::new("gen_ai.tool.name", event.tool.clone())]);
        }
    }
}
