//! `harnessweaver _stress-limit`: a worker for the multi-process tests and
//! the store benchmark (hidden from the usage text). It loads a harness,
//! calls one tool `--calls` times through the full governor (begin, a
//! handler answering `"pong"`, finish: what a binding does), and prints one
//! JSON line with what was decided and the store's round trips.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use harnessweaver_core::governor::{Begin, CallContext, Decision, Handler, InvokeOutcome, Principal};
use harnessweaver_core::harness::Harness;
use harnessweaver_core::runtime::LoadOptions;
use harnessweaver_core::store::{Acquire, RateKey};
use harnessweaver_core::{Clock, SystemClock};

const HELP: &str =
    "usage: harnessweaver _stress-limit --harness FILE --tool T --calls N [--tenant T] [--principal ID] [--start-at-ms MS] [--store-only]

Calls T N times through the governor (a handler answering \"pong\" for every
tool), starting at MS (ms since the epoch) when given, and prints
(with --store-only, takes from T's per-tenant bucket in the store directly,
without the governor)
{\"allowed\", \"rate_limited\", \"store_unavailable\", \"other\", \"round_trips\", \"elapsed_us\"}.";

/// Runs the worker; exit 0 after printing the counts, 2 on a usage error,
/// 1 when the harness does not load.
pub fn run(args: &[&str], out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let mut opts: HashMap<&str, &str> = HashMap::new();
    let mut store_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--store-only" => store_only = true,
            "--help" | "-h" => {
                let _ = writeln!(out, "{HELP}");
                return 0;
            }
            "--harness" | "--tool" | "--calls" | "--tenant" | "--principal" | "--start-at-ms" => match it.next() {
                Some(v) => {
                    opts.insert(a, v);
                }
                None => {
                    let _ = writeln!(err, "harnessweaver _stress-limit: `{a}` needs a value\n\n{HELP}");
                    return 2;
                }
            },
            other => {
                let _ = writeln!(err, "harnessweaver _stress-limit: unknown argument `{other}`\n\n{HELP}");
                return 2;
            }
        }
    }
    let (Some(path), Some(tool), Some(calls)) = (opts.get("--harness"), opts.get("--tool"), opts.get("--calls").and_then(|c| c.parse::<u64>().ok()))
    else {
        let _ = writeln!(err, "harnessweaver _stress-limit: `--harness`, `--tool` and `--calls` are required\n\n{HELP}");
        return 2;
    };
    let harness = match Harness::load(path) {
        Ok(h) => h,
        Err(e) => {
            let _ = writeln!(err, "harnessweaver _stress-limit: {e}");
            return 1;
        }
    };
    let pong: Handler = Arc::new(|_: &Value, _: &str| Ok(json!("pong")));
    let handlers: HashMap<String, Handler> = harness.tools().iter().map(|t| (t.name().to_string(), pong.clone())).collect();
    let runtime = match crate::load(path, LoadOptions { handlers: handlers.clone(), ..LoadOptions::default() }) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "harnessweaver _stress-limit: {e}");
            return 1;
        }
    };
    if let Some(at) = opts.get("--start-at-ms").and_then(|s| s.parse::<u64>().ok()) {
        let now = SystemClock.now_ms();
        if at > now {
            std::thread::sleep(Duration::from_millis(at - now));
        }
    }
    let ctx = CallContext {
        principal: Principal::new(opts.get("--principal").copied().unwrap_or("stress")),
        tenant: opts.get("--tenant").map(|t| (*t).to_string()),
        ..CallContext::default()
    };
    let governor = runtime.governor();
    let before = governor.store().round_trips().unwrap_or(0);
    let (mut allowed, mut limited, mut unavailable, mut other) = (0u64, 0u64, 0u64, 0u64);
    let started = Instant::now();
    let bucket = governor
        .tool(tool)
        .and_then(|rt| rt.per_tenant)
        .map(|rate| [RateKey { key: format!("rl/{tool}/tenant/{}", ctx.tenant.as_deref().unwrap_or_default()), rate }]);
    for _ in 0..calls {
        if store_only {
            let Some(keys) = &bucket else {
                let _ = writeln!(err, "harnessweaver _stress-limit: `--store-only` needs a tool with `rate_limit.per_tenant`");
                return 2;
            };
            match governor.store().acquire(keys, governor.clock().now_ms()) {
                Ok(Acquire::Allowed) => allowed += 1,
                Ok(Acquire::Limited { .. }) => limited += 1,
                Err(_) => unavailable += 1,
            }
            continue;
        }
        // As a binding does: the host runs the handler between begin and
        // finish (`Governor::call` would add a worker thread per call).
        let result = match governor.begin(tool, json!({}), &ctx) {
            Begin::Done(result) => result,
            Begin::Invoke(ticket) => governor.finish(ticket, InvokeOutcome::Returned(json!("pong"))),
        };
        match (result.decision, result.code.map(|c| c.as_str())) {
            (Decision::Allowed, _) => allowed += 1,
            (_, Some("rate_limited")) => limited += 1,
            (_, Some("store_unavailable")) => unavailable += 1,
            _ => other += 1,
        }
    }
    let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let round_trips = governor.store().round_trips().map(|n| n.saturating_sub(before));
    let line = json!({
        "allowed": allowed,
        "rate_limited": limited,
        "store_unavailable": unavailable,
        "other": other,
        "round_trips": round_trips,
        "elapsed_us": elapsed_us,
    });
    let _ = writeln!(out, "{line}");
    0
}
