//! Loading a harness of 10,000 manifests (`Runtime::load`: read, parse and
//! check every manifest, then build the governor), the same manifests
//! bench/python/bench_load.py loads from Python. Wall time per load; the
//! runtime is dropped outside the timing (freeing it is not loading it).
//!
//! `make bench-load-rust` runs it; `make profile-load` counts its
//! instructions under callgrind (2,000 manifests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use criterion::{criterion_group, Criterion};
use harnessweaver_core::{LoadOptions, Runtime};
use std::hint::black_box;

#[path = "support/load_harness.rs"]
mod load_harness;

/// The number of manifests (the goal: < 0.5 s for 10,000).
const MANIFESTS: usize = 10_000;

fn bench(c: &mut Criterion) {
    let root = std::env::temp_dir().join(format!("hw-bench-load-{}", std::process::id()));
    let path = load_harness::write_load_harness(&root, MANIFESTS);
    assert_eq!(Runtime::load(&path, LoadOptions::default()).unwrap().harness().tools().len(), MANIFESTS);
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.bench_function("Runtime::load, 10,000 manifests", |b| {
        b.iter_with_large_drop(|| black_box(Runtime::load(&path, LoadOptions::default()).unwrap()));
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
