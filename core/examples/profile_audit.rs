//! The audit chain's cost beside the unchained sink (issue 24), for
//! instruction counts under callgrind and CPU time (`make profile-audit`):
//! `profile_audit MODE N DIR` records N events of a typical size to a JSON
//! Lines file in DIR, where MODE is
//! - `unchained`: what the sink did before the chain (serialise, one write per line),
//! - `chained`: `JsonlSink` (seq, prev, the SHA-256 of each record, flock per record),
//! - `signed`: `JsonlSink` with a key, a checkpoint every 1000 records and one at close.
//!
//! It prints the CPU time (user + system, which counts the system calls callgrind
//! cannot see) per event; the per-event instruction count is the difference
//! between two callgrind runs divided by the difference in N.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "profiling code")]

use std::io::Write as _;

use harnessweaver_core::audit::{AuditEvent, AuditSink, CheckpointKey, JsonlSink, Timings};
use harnessweaver_core::{Decision, RefusalCode, Step};

/// User + system CPU time of this process so far, in µs (getrusage).
fn cpu_us() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0) + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
    ticks * 10_000
}

fn event(i: u64) -> AuditEvent {
    AuditEvent {
        ts_ms: 1_796_012_108_000 + i,
        call_id: format!("call_{i:016x}"),
        run_id: "run_4f1c2d3e5a6b7c8d".into(),
        tool: "refund".into(),
        principal: "alice".into(),
        tenant: Some("acme".into()),
        decision: if i.is_multiple_of(5) { Decision::Refused } else { Decision::Allowed },
        code: (i.is_multiple_of(5)).then_some(RefusalCode::PolicyDenied),
        step: (i.is_multiple_of(5)).then_some(Step::Policy),
        args_digest: Some("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into()),
        original_args_digest: None,
        approval_id: None,
        redactions: None,
        truncated: Some(false),
        would_refuse: Vec::new(),
        rules: Vec::new(),
        subject: None,
        confined: None,
        sinks: Vec::new(),
        intent: None,
        timings: Timings { decide_us: 12, invoke_us: 340, output_us: 8 },
    }
}

/// The sink as it was before the chain: one serialised line per write.
struct Unchained {
    file: std::fs::File,
    line: Vec<u8>,
}

impl Unchained {
    fn record(&mut self, e: &AuditEvent) {
        self.line.clear();
        serde_json::to_writer(&mut self.line, e).unwrap();
        self.line.push(b'\n');
        self.file.write_all(&self.line).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, n, dir) = (args[1].as_str(), args[2].parse::<u64>().unwrap(), std::path::PathBuf::from(&args[3]));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{mode}.jsonl"));
    let _ = std::fs::remove_file(&path);
    let events: Vec<AuditEvent> = (0..n).map(event).collect();
    let start = cpu_us();
    match mode {
        "unchained" => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
            let mut sink = Unchained { file, line: Vec::with_capacity(512) };
            for e in &events {
                sink.record(e);
            }
        }
        "chained" | "signed" => {
            let key = (mode == "signed").then(|| CheckpointKey::from_seed(&[7u8; 32]).unwrap());
            let sink = JsonlSink::open_signed(&path, key, 1000).unwrap();
            for e in &events {
                sink.record(e).unwrap();
            }
        }
        other => panic!("unknown mode `{other}`"),
    }
    let spent = cpu_us() - start;
    if n > 0 {
        println!("{mode}: {n} events, {:.2} µs CPU per event", spent as f64 / n as f64);
    }
}
