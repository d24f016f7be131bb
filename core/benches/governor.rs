//! The decision path: steps 1–7 and 9 of a governed call for a typical
//! manifest (schema, scopes, rate limit, approval.when, sanitizers, label),
//! with a 1 KB output, beside the bare handler work (producing the output).
//!
//! `make bench-governor` runs it; the ratio and the added cost are printed at the end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use criterion::{criterion_group, Criterion};
use harnessweaver_core::governor::{Begin, InvokeOutcome};
use harnessweaver_core::{CallContext, LoadOptions, Principal, Runtime};
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

#[path = "support/decision_path.rs"]
mod decision_path;
use decision_path::{harness_dir, harness_dir_named, output_1kb};

fn bench(c: &mut Criterion) {
    let dir = harness_dir();
    let handler: harnessweaver_core::governor::Handler = Arc::new(|_args: &Value, _key: &str| Ok(output_1kb()));
    let options_with = |audit: Option<Arc<dyn harnessweaver_core::audit::AuditSink>>| {
        let mut options = LoadOptions {
            handlers: [("refund_payment".to_string(), handler.clone()), ("refund_sanitized".to_string(), handler.clone())].into_iter().collect(),
            ..LoadOptions::default()
        };
        options.governor.audit = audit;
        options
    };
    let rt = Runtime::load(dir.join("harness.yaml"), options_with(None)).unwrap();
    let principal = Principal::from_value(&json!({"id": "agent-7", "roles": ["support"], "scopes": ["payments:refund"]})).unwrap();
    let ctx = rt.run(principal, Some("acme".into()), None);
    let args = json!({"order_id": "A-1234", "amount_usd": 42.5, "reason": "duplicate charge", "notify": true});
    let out = output_1kb();
    assert!(serde_json::to_string(&out).unwrap().len() >= 900);

    let mut group = c.benchmark_group("governor");
    group.bench_function("bare handler (1 KB output)", |b| b.iter(|| black_box(output_1kb())));
    group.bench_function("governed call, steps 1-9 (1 KB output)", |b| {
        b.iter(|| {
            let ticket = match rt.governor().begin("refund_payment", black_box(args.clone()), &ctx) {
                Begin::Invoke(t) => t,
                Begin::Done(r) => panic!("refused: {r:?}"),
            };
            let result = rt.governor().finish(ticket, InvokeOutcome::Returned(output_1kb()));
            assert!(result.is_allowed());
            black_box(result)
        })
    });
    group.bench_function("governed call with pii_redact + strip_instructions (1 KB output)", |b| {
        b.iter(|| {
            let ticket = match rt.governor().begin("refund_sanitized", black_box(args.clone()), &ctx) {
                Begin::Invoke(t) => t,
                Begin::Done(r) => panic!("refused: {r:?}"),
            };
            black_box(rt.governor().finish(ticket, InvokeOutcome::Returned(output_1kb())))
        })
    });
    // The same calls with an audit sink (issue 16: any sink adds < 2 µs): a
    // JSON Lines file (chained, flock per record) and a Rust closure.
    let jsonl_dir = harness_dir_named("jsonl");
    decision_path::with_audit_sink(&jsonl_dir, "audit.jsonl");
    let sinks = [
        ("governed call, JSON Lines audit sink (1 KB output)", Runtime::load(jsonl_dir.join("harness.yaml"), options_with(None)).unwrap()),
        (
            "governed call, callback audit sink (1 KB output)",
            Runtime::load(dir.join("harness.yaml"), options_with(Some(Arc::new(decision_path::CallbackSink::default())))).unwrap(),
        ),
    ];
    for (name, rt) in &sinks {
        let ctx = rt.run(ctx.principal.clone(), Some("acme".into()), None);
        group.bench_function(*name, |b| {
            b.iter(|| {
                let ticket = match rt.governor().begin("refund_payment", black_box(args.clone()), &ctx) {
                    Begin::Invoke(t) => t,
                    Begin::Done(r) => panic!("refused: {r:?}"),
                };
                black_box(rt.governor().finish(ticket, InvokeOutcome::Returned(output_1kb())))
            })
        });
    }
    let refused_ctx = CallContext { principal: Principal::new("nobody"), ..ctx.clone() };
    group.bench_function("refused at step 4 (scope missing)", |b| {
        b.iter(|| black_box(rt.governor().begin("refund_payment", black_box(args.clone()), &refused_ctx)))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&jsonl_dir);
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let home = std::env::var_os("CRITERION_HOME").map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../criterion"), PathBuf::from);
    let base = home.join("governor");
    let read = |name: &str| -> Option<f64> {
        let text = std::fs::read_to_string(base.join(name).join("new/estimates.json")).ok()?;
        serde_json::from_str::<Value>(&text).ok()?["median"]["point_estimate"].as_f64()
    };
    if let (Some(bare), Some(governed)) = (read("bare handler (1 KB output)"), read("governed call, steps 1-9 (1 KB output)")) {
        println!(
            "governor: governed call {:.0} ns, bare handler {:.0} ns, added {:.0} ns per call (goal < 1500 ns)",
            governed,
            bare,
            governed - bare
        );
        if let Some(sanitized) = read("governed call with pii_redact + strip_instructions (1 KB output)") {
            println!("governor: with both sanitizers {:.0} ns, added {:.0} ns per call", sanitized, sanitized - bare);
        }
        for (sink, name) in
            [("JSON Lines", "governed call, JSON Lines audit sink (1 KB output)"), ("callback", "governed call, callback audit sink (1 KB output)")]
        {
            if let Some(with_sink) = read(name) {
                println!(
                    "governor: {sink} audit sink {with_sink:.0} ns, added {:.0} ns per call over no sink (goal < 2000 ns)",
                    with_sink - governed
                );
            }
        }
    }
}
