//! cel-lite speed: a typical approval expression compiled once and evaluated
//! against realistic variables, and beside it the same expression in the `cel`
//! crate (cel-rust, `--features bench-peer`) with the ratio printed at the end.
//!
//! `make bench-cel` runs it with the peer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use criterion::{criterion_group, Criterion};
use harnessweaver_core::cel_lite::{self, Vars};
use serde_json::{json, Map, Value};
use std::hint::black_box;
use std::path::PathBuf;

const EXPR: &str = "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'";

struct Call {
    principal: Value,
    tenant: Value,
    task: Value,
    tool: Value,
    args: Value,
    labels: Value,
}

fn call() -> Call {
    Call {
        principal: json!({
            "id": "user-4711", "kind": "human", "tenant": "acme",
            "roles": ["engineer", "oncall", "support", "reviewer"],
            "scopes": ["tickets:read", "tickets:write", "payments:refund"]
        }),
        tenant: json!({"id": "acme", "plan": "enterprise", "region": "eu-west-1"}),
        task: json!({"id": "run-2025-11-30-0042", "kind": "support", "step": 3}),
        tool: json!({"name": "refund_payment", "risk": "high", "labels": ["payments", "egress"], "version": "1.4.0"}),
        args: json!({
            "payment_id": "pay_1PqR2sT3uV", "amount_usd": 250, "currency": "USD",
            "reason": "customer reported a duplicate charge", "notify_customer": true
        }),
        labels: json!(["private"]),
    }
}

impl Call {
    fn vars(&self) -> Vars<'_> {
        Vars {
            principal: Some(&self.principal),
            tenant: Some(&self.tenant),
            task: Some(&self.task),
            tool: Some(&self.tool),
            args: Some(&self.args),
            labels: Some(&self.labels),
            run: None,
        }
    }

    fn map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("principal".into(), self.principal.clone());
        m.insert("tenant".into(), self.tenant.clone());
        m.insert("task".into(), self.task.clone());
        m.insert("tool".into(), self.tool.clone());
        m.insert("args".into(), self.args.clone());
        m.insert("labels".into(), self.labels.clone());
        m
    }
}

fn cel_lite_benches(c: &mut Criterion) {
    let call = call();
    let program = cel_lite::compile(EXPR).unwrap();
    assert!(program.approval_required_with(&call.vars()).required);
    let mut g = c.benchmark_group("approval");
    g.bench_function("cel_lite_borrowed_vars", |b| b.iter(|| black_box(&program).approval_required_with(black_box(&call.vars()))));
    let map = call.map();
    g.bench_function("cel_lite_json_map", |b| b.iter(|| black_box(&program).approval_required(black_box(&map))));
    g.bench_function("cel_lite_compile", |b| b.iter(|| cel_lite::compile(black_box(EXPR)).unwrap()));
    g.finish();
}

#[cfg(feature = "bench-peer")]
fn peer_benches(c: &mut Criterion) {
    use cel::{Context, Program};
    let call = call();
    let program = Program::compile(EXPR).unwrap();
    let root = Context::default();
    let bind = |ctx: &mut Context<'_, '_>| {
        ctx.add_variable("principal", &call.principal).unwrap();
        ctx.add_variable("tenant", &call.tenant).unwrap();
        ctx.add_variable("task", &call.task).unwrap();
        ctx.add_variable("tool", &call.tool).unwrap();
        ctx.add_variable("args", &call.args).unwrap();
        ctx.add_variable("labels", &call.labels).unwrap();
    };
    let mut prepared = root.new_inner_scope();
    bind(&mut prepared);
    assert_eq!(program.execute(&prepared).unwrap(), cel::Value::Bool(true));
    let mut g = c.benchmark_group("approval");
    g.bench_function("cel_rust_prepared_context", |b| b.iter(|| black_box(&program).execute(black_box(&prepared))));
    g.bench_function("cel_rust_per_call_scope", |b| {
        b.iter(|| {
            let mut scope = root.new_inner_scope();
            bind(&mut scope);
            black_box(&program).execute(&scope).unwrap()
        })
    });
    g.bench_function("cel_rust_compile", |b| b.iter(|| Program::compile(black_box(EXPR)).unwrap()));
    g.finish();
}

#[cfg(not(feature = "bench-peer"))]
fn peer_benches(_c: &mut Criterion) {}

criterion_group! {
    name = benches;
    config = Criterion::default().output_directory(&output_dir());
    targets = cel_lite_benches, peer_benches
}

fn output_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/criterion")
}

fn mean_ns(dir: &std::path::Path, id: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("approval").join(id).join("new/estimates.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn main() {
    let dir = output_dir();
    benches();
    Criterion::default().configure_from_args().final_summary();
    // The ratio, from criterion's own estimates of this run.
    let ours = mean_ns(&dir, "cel_lite_borrowed_vars");
    let ours_map = mean_ns(&dir, "cel_lite_json_map");
    println!("\ncel-lite approval expression: `{EXPR}`");
    if let Some(o) = ours {
        println!("  cel-lite, borrowed vars:         {o:>10.1} ns/eval");
    }
    if let Some(o) = ours_map {
        println!("  cel-lite, JSON map:              {o:>10.1} ns/eval");
    }
    for (id, label) in
        [("cel_rust_prepared_context", "cel 0.15, prepared context"), ("cel_rust_per_call_scope", "cel 0.15, variables bound per call")]
    {
        if let (Some(o), Some(p)) = (ours, mean_ns(&dir, id)) {
            println!("  {label:<33}{p:>10.1} ns/eval  ({:.1}x cel-lite)", p / o);
        }
    }
}
