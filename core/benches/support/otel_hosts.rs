//! The OpenTelemetry cost benchmark's hosts (issue 24), shared by
//! `benches/otel.rs` (criterion) and `examples/profile_otel.rs` (callgrind):
//! the decision-path tool (steps 1-9, 1 KB output, `audit: none`) loaded as a
//! binding loads it, with no observer (no OpenTelemetry API), with an observer
//! that does not listen (the API without an SDK: the shim turned it off), and
//! with one that listens and takes each event (what the core does for an SDK).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use harnessweaver_core::audit::AuditEvent;
use harnessweaver_core::host::{AuditCallback, Begun, CallContext, HandlerDecl, HandlerMode, Host, HostOptions, Outcome, Principal};
use serde_json::{json, Value};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::decision_path::{harness_dir, output_1kb};

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
    let handlers = ["refund_payment", "refund_sanitized"]
        .iter()
        .map(|t| HandlerDecl { tool: (*t).into(), mode: HandlerMode::CallerThread, takes_idempotency_key: false, function: None })
        .collect();
    let host = Host::load(&dir.join("harness.yaml"), HostOptions { handlers, observe, ..HostOptions::default() }).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if mode == Mode::NotListening {
        assert_eq!(host.request("observe", &json!({"listening": false})).unwrap(), json!(true));
    }
    let principal = Principal::from_value(&json!({"id": "agent-7", "roles": ["support"], "scopes": ["payments:refund"]})).unwrap();
    let ctx = CallContext { principal, tenant: Some("acme".into()), ..CallContext::default() };
    let args = json!({"order_id": "A-1234", "amount_usd": 42.5, "reason": "duplicate charge", "notify": true});
    (host, ctx, args, counter)
}

/// One governed call, steps 1-9, as a binding makes it.
pub fn call(host: &Host, ctx: &CallContext, args: &Value) {
    let ticket = match host.begin("refund_payment", args.clone(), ctx).unwrap() {
        Begun::Allowed(t) => t,
        other => panic!("not allowed: {other:?}"),
    };
    let result = host.finish(ticket, Outcome::Returned(output_1kb()));
    assert!(result.is_allowed());
    black_box(result);
}
