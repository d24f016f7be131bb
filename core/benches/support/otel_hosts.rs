//! The OpenTelemetry cost benchmark's hosts (issue 24), shared by
//! `benches/otel.rs` (criterion) and `examples/profile_otel.rs` (callgrind):
//! a plain lookup tool (schema-checked arguments, a small output, no rule, no
//! provenance, `audit: none`, so that what OpenTelemetry adds is not lost in
//! the rest of the call) loaded as a binding loads it, with no observer (no
//! OpenTelemetry API), with an observer that does not listen (the API without
//! an SDK: the shim turned it off), and with one that listens and takes each
//! event (what the core does for an SDK).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use harnessweaver_core::audit::AuditEvent;
use harnessweaver_core::host::{AuditCallback, Begun, CallContext, HandlerDecl, HandlerMode, Host, HostOptions, Outcome, Principal};
use serde_json::{json, Value};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Writes the harness (the `lookup_order` tool, `audit: none`) into a temporary directory.
fn harness_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hw-bench-otel-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    let manifest = json!({
        "apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "lookup_order"},
        "spec": {
            "transport": "native", "handler": "bench:lookup", "description": "Look an order up.",
            "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        }
    });
    std::fs::write(dir.join("tools/lookup_order.json"), manifest.to_string()).unwrap();
    let harness = "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.json\"]\n  audit:\n    sink: none\n";
    std::fs::write(dir.join("harness.yaml"), harness).unwrap();
    dir
}

/// Which observer a host has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// None: the OpenTelemetry API is not installed.
    NoObserver,
    /// One that does not listen: the API without an SDK.
    NotListening,
    /// One that listens (counts each event): an SDK is configured.
    Listening,
}

/// Counts what it is handed (what it costs a host to take an event, without the host's language).
#[derive(Default)]
pub struct Counter(pub AtomicU64);

impl AuditCallback for Counter {
    fn record(&self, event: &AuditEvent) -> Result<(), String> {
        black_box(event);
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A loaded host in `mode`, its call context and arguments, and the observer's count.
pub fn host(mode: Mode) -> (Host, CallContext, Value, Arc<Counter>) {
    let dir = harness_dir();
    let counter = Arc::new(Counter::default());
    let observe = (mode != Mode::NoObserver).then(|| counter.clone() as Arc<dyn AuditCallback>);
    let handlers = vec![HandlerDecl {
        tool: "lookup_order".into(),
        mode: HandlerMode::CallerThread,
        takes_idempotency_key: false,
        takes_progress: false,
        function: None,
    }];
    let host = Host::load(&dir.join("harness.yaml"), HostOptions { handlers, observe, ..HostOptions::default() }).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if mode == Mode::NotListening {
        assert_eq!(host.request("observe", &json!({"listening": false})).unwrap(), json!(true));
    }
    let ctx = CallContext { principal: Principal::new("agent-7"), tenant: Some("acme".into()), ..CallContext::default() };
    let args = json!({"order_id": "A-1234"});
    (host, ctx, args, counter)
}

/// One governed call, steps 1-9, as a binding makes it.
pub fn call(host: &Host, ctx: &CallContext, args: &Value) {
    let ticket = match host.begin("lookup_order", args.clone(), ctx).unwrap() {
        Begun::Allowed(t) => t,
        other => panic!("not allowed: {other:?}"),
    };
    let result = host.finish(ticket, Outcome::Returned(json!({"order_id": "A-1234", "status": "shipped"})));
    assert!(result.is_allowed());
    black_box(result);
}
