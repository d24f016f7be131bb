//! A governed call in a loop, for instruction counts under callgrind
//! (`make profile-governor`): `profile_call N` runs N calls of the
//! decision-path benchmark's tool (steps 1-9, 1 KB output); the per-call
//! cost is the difference between two counts divided by the difference in N.
//! `profile_call N bare` times the bare handler alone (CPU time), `profile_call
//! N clone` what the loop does besides the governor (cloning the args and output);
//! `profile_call N jsonl`, `jsonl-single` (`spec.audit.single_writer`) and `profile_call N callback` add an audit sink (a
//! JSON Lines file, a Rust closure); with N >= 10,000 the CPU time per call
//! is printed too (it counts the sink's system calls, which callgrind cannot see).
//! `profile_call load PATH` loads the harness at PATH once and prints the
//! time taken, split into reading it and building the governor;
//! `profile_call write N DIR` writes the load benchmark's harness of N
//! manifests into DIR (the one `benches/load.rs` and bench/python/bench_load.py load).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "profiling code")]

use harnessweaver_core::governor::{Begin, InvokeOutcome};
use harnessweaver_core::{Harness, LoadOptions, Principal, Runtime};
use serde_json::json;
use std::hint::black_box;

#[path = "../benches/support/decision_path.rs"]
mod decision_path;
use decision_path::{harness_dir, output_1kb};
#[path = "../benches/support/load_harness.rs"]
mod load_harness;

/// User + system CPU time of this process so far, in µs (Linux: /proc/self/stat, 10 ms ticks).
fn cpu_us() -> u64 {
    cpu_so_far().unwrap_or(0) * 1000
}

/// User + system CPU time of this process so far, in ms (Linux: /proc/self/stat, 10 ms ticks).
fn cpu_so_far() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10)
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let first = argv.next();
    if first.as_deref() == Some("write") {
        let n: usize = argv.next().and_then(|a| a.parse().ok()).expect("profile_call write N DIR");
        let dir = argv.next().expect("profile_call write N DIR");
        println!("{}", load_harness::write_load_harness(std::path::Path::new(&dir), n).display());
        return;
    }
    if first.as_deref() == Some("load") {
        let path = argv.next().expect("profile_call load PATH");
        // The two halves a host calls when it reads the harness once.
        let started = std::time::Instant::now();
        let harness = Harness::load(&path).unwrap();
        let read = started.elapsed();
        let rt = Runtime::from_harness(harness, LoadOptions::default()).unwrap();
        let wall = started.elapsed();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        println!(
            "loaded {} tools in {:.1} ms (Harness::load {:.1} ms, Runtime::from_harness {:.1} ms); process CPU so far {}",
            rt.harness().tools().len(),
            ms(wall),
            ms(read),
            ms(wall - read),
            cpu_so_far().map_or_else(|| "unknown".to_string(), |c| format!("{c} ms"))
        );
        // Left to the OS: freeing the runtime is not part of loading it.
        std::process::exit(0);
    }
    let n: usize = first.as_deref().and_then(|a| a.parse().ok()).unwrap_or(1000);
    // `profile_call N jsonl|callback`: the same calls with an audit sink.
    let sink = argv.next().unwrap_or_default();
    if sink == "bare" {
        // The benchmark's bare handler alone: building (and dropping) the 1 KB output.
        let cpu_before = cpu_us();
        for _ in 0..n {
            black_box(output_1kb());
        }
        eprintln!("{n} bare handler calls: {:.2} µs CPU per call", (cpu_us() - cpu_before) as f64 / n as f64);
        return;
    }
    let dir = harness_dir();
    let mut options = LoadOptions { host_handlers: vec!["refund_payment".into(), "refund_sanitized".into()], ..LoadOptions::default() };
    match sink.as_str() {
        "" | "none" => {}
        "jsonl" => decision_path::with_audit_sink(&dir, "audit.jsonl"),
        "jsonl-single" => {
            // The same sink with `spec.audit.single_writer: true` (no lock per record).
            decision_path::with_audit_sink(&dir, "audit.jsonl");
            let path = dir.join("harness.yaml");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{text}    single_writer: true\n")).unwrap();
        }
        "callback" => options.governor.audit = Some(std::sync::Arc::new(decision_path::CallbackSink::default())),
        "clone" | "fresh" | "fresh-made" => {}
        other => panic!("unknown sink `{other}` (none, jsonl, jsonl-single, callback, bare, clone, fresh, fresh-made)"),
    }
    let rt = Runtime::load(dir.join("harness.yaml"), options).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let principal = Principal::from_value(&json!({"id": "agent-7", "roles": ["support"], "scopes": ["payments:refund"]})).unwrap();
    let ctx = rt.run(principal, Some("acme".into()), None);
    let args = json!({"order_id": "A-1234", "amount_usd": 42.5, "reason": "duplicate charge", "notify": true});
    let out = output_1kb();
    if sink == "clone" {
        // What the governed loop does besides the governor: clone the args and the output, drop them.
        let cpu_before = cpu_us();
        for _ in 0..n {
            black_box((args.clone(), out.clone()));
        }
        eprintln!("{n} clones of the args and output: {:.2} µs CPU per call", (cpu_us() - cpu_before) as f64 / n as f64);
        return;
    }
    if sink == "fresh" || sink == "fresh-made" {
        // Outputs that differ from call to call (new ids and amounts), made
        // before the loop: nothing of them was read by the run before but
        // their keys and repeated words. `fresh-made` only drops them (the
        // baseline): under callgrind, `fresh` minus `fresh-made` is the
        // governor's cost when outputs do not repeat.
        let outputs: Vec<_> = (0..n).map(decision_path::output_1kb_numbered).collect();
        for out in outputs {
            if sink == "fresh-made" {
                black_box((args.clone(), out));
                continue;
            }
            let ticket = match rt.governor().begin("refund_payment", args.clone(), &ctx) {
                Begin::Invoke(t) => t,
                Begin::Done(r) => panic!("refused: {r:?}"),
            };
            black_box(rt.governor().finish(ticket, InvokeOutcome::Returned(out)));
        }
        return;
    }
    let cpu_before = cpu_us();
    for _ in 0..n {
        let ticket = match rt.governor().begin("refund_payment", args.clone(), &ctx) {
            Begin::Invoke(t) => t,
            Begin::Done(r) => panic!("refused: {r:?}"),
        };
        let result = rt.governor().finish(ticket, InvokeOutcome::Returned(out.clone()));
        assert!(result.is_allowed());
        black_box(result);
    }
    if n >= 10_000 {
        let per_call = (cpu_us() - cpu_before) as f64 / n as f64;
        eprintln!("{n} calls, audit sink {}: {per_call:.2} µs CPU per call", if sink.is_empty() { "none" } else { sink.as_str() });
    }
}
