//! What OpenTelemetry costs a governed call when nobody listens (issue 24:
//! "< 100 ns per call when no exporter or API is present"): a plain lookup
//! call (steps 1-9, small output, `audit: none`) through the host API a binding
//! uses, with no observer (no OpenTelemetry API), with an observer that does
//! not listen (the API without an SDK), and with one that listens (the core's
//! share of what an SDK costs: building and handing over each event).
//!
//! `make bench-otel` runs it and prints each mode's added time per call
//! beside the first. `make profile-otel` counts the same with callgrind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use criterion::{criterion_group, Criterion};

#[path = "support/otel_hosts.rs"]
mod otel_hosts;
use otel_hosts::{call, host, Mode};

const MODES: [(Mode, &str); 3] = [
    (Mode::NoObserver, "no observer (no OpenTelemetry API)"),
    (Mode::NotListening, "observer not listening (API without SDK)"),
    (Mode::Listening, "observer listening (SDK configured)"),
];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("otel");
    for (mode, name) in MODES {
        let (h, ctx, args, _count) = host(mode);
        group.bench_function(name, |b| b.iter(|| call(&h, &ctx, &args)));
    }
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // The medians criterion wrote, side by side.
    let dir = std::env::var("CRITERION_HOME").map_or_else(|_| std::path::PathBuf::from("../target/criterion"), std::path::PathBuf::from);
    let median = |name: &str| -> Option<f64> {
        let path = dir.join("otel").join(name).join("new/estimates.json");
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str::<serde_json::Value>(&text).ok()?["median"]["point_estimate"].as_f64()
    };
    if let Some(base) = median(MODES[0].1) {
        for (_, name) in &MODES[1..] {
            if let Some(m) = median(name) {
                println!("otel: {name}: {:+.1} ns per call beside no observer ({base:.0} ns), ratio {:.4}", m - base, m / base);
            }
        }
    }
}
