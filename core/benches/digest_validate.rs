//! The definition digest and step 2 (input validation) in Rust, on the inputs
//! the Python and Node benchmarks share (target/bench-inputs/, written by
//! `bench/inputs.py`; `HW_BENCH_INPUTS` to read them elsewhere):
//!
//! - `digest/{small,large}`: `definition_digest`, beside serde_json's
//!   (sorted-key) `to_vec` + sha2 of the same object, what a Rust user would
//!   write instead;
//! - `validate/{valid,invalid}`: `SchemaValidator::check` over every tool's
//!   arguments (compiled once), as step 2 runs it.
//!
//! `make bench-digest` / `make bench-validate` run it; bench/criterion_results.py
//! reads criterion's medians into target/bench-results.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use criterion::{criterion_group, Criterion};
use harnessweaver_core::definition_digest;
use harnessweaver_core::SchemaValidator;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use std::path::PathBuf;

fn inputs(name: &str) -> Value {
    let dir = std::env::var_os("HW_BENCH_INPUTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-inputs"));
    let path = dir.join(format!("{name}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; run `python bench/inputs.py` (make bench-inputs) first", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn peer_digest(name: &str, description: &str, schema: &Value) -> String {
    let bytes = serde_json::to_vec(&json!({"description": description, "input_schema": schema, "name": name})).unwrap();
    let hash = Sha256::digest(&bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn digest(c: &mut Criterion) {
    let all = inputs("digest");
    let mut g = c.benchmark_group("digest");
    for size in ["small", "large"] {
        let d = &all[size];
        let (name, description, schema) = (d["name"].as_str().unwrap(), d["description"].as_str().unwrap(), &d["input_schema"]);
        let ours = definition_digest(name, description, schema).unwrap();
        // Equal bytes hashed only where serde_json's text is canonical (sorted keys, same numbers).
        if ours != peer_digest(name, description, schema) {
            eprintln!("note: {size}: serde_json's text differs from the canonical JSON (numbers), the peer hashes other bytes");
        }
        g.bench_function(format!("{size}_ours"), |b| {
            b.iter(|| definition_digest(black_box(name), black_box(description), black_box(schema)).unwrap())
        });
        g.bench_function(format!("{size}_peer"), |b| b.iter(|| peer_digest(black_box(name), black_box(description), black_box(schema))));
    }
    g.finish();
}

fn validate(c: &mut Criterion) {
    let data = inputs("validation");
    let cases: Vec<(SchemaValidator, Value, Value)> = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let v = SchemaValidator::compile(&c["schema"]).unwrap();
            assert!(v.check(&c["valid"]).is_none(), "{}: valid args refused", c["tool"]);
            assert!(v.check(&c["invalid"]).is_some(), "{}: invalid args accepted", c["tool"]);
            (v, c["valid"].clone(), c["invalid"].clone())
        })
        .collect();
    let mut g = c.benchmark_group("validate");
    g.bench_function("valid_ours", |b| {
        b.iter(|| {
            for (v, good, _) in &cases {
                black_box(v.check(black_box(good)));
            }
        })
    });
    g.bench_function("invalid_ours", |b| {
        b.iter(|| {
            for (v, _, bad) in &cases {
                black_box(v.check(black_box(bad)));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, digest, validate);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
