//! Runs the sanitizer corpus (fixtures/sanitize/cases.jsonl) through the Rust
//! sanitizers, for the benchmark and for blessing divergences.
//!
//! ```text
//! cargo run --release --example sanitize_corpus -- [--corpus PATH] --eval OUT.jsonl [--repeat N]
//! cargo run --release --example sanitize_corpus -- --eval OUT.jsonl --sanitizers pii_redact
//! cargo run --example sanitize_corpus -- --bless
//! ```
//!
//! `--eval` writes one line per case: the output, the PII spans found (code
//! point offsets, per JSON pointer, with the key rules applied) and the
//! seconds `apply` took (best of `--repeat` runs). `--bless` rewrites
//! fixtures/sanitize/divergences.jsonl: the cases whose output differs from
//! the labelled gold output, with the actual output, so every language can
//! still compare byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use harnessweaver_core::sanitize::{apply, find_pii, key_kind, PiiKind, Sanitizer};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Instant;

fn pointer_escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

fn cp(text: &str, byte: usize) -> usize {
    text.get(..byte).map(|s| s.chars().count()).unwrap_or(0)
}

fn spans(v: &Value, path: &str, rule: Option<PiiKind>, out: &mut Vec<Value>) {
    match v {
        Value::String(s) => {
            if let Some(k) = rule {
                if !s.trim().is_empty() {
                    out.push(json!({"path": path, "start": 0, "end": s.chars().count(), "kind": k.as_str()}));
                    return;
                }
            }
            for f in find_pii(s) {
                out.push(json!({"path": path, "start": cp(s, f.start), "end": cp(s, f.end), "kind": f.kind}));
            }
        }
        Value::Array(items) => {
            for (i, it) in items.iter().enumerate() {
                spans(it, &format!("{path}/{i}"), rule, out);
            }
        }
        Value::Object(m) => {
            for (k, it) in m {
                spans(it, &format!("{path}/{}", pointer_escape(k)), key_kind(k), out);
            }
        }
        _ => {}
    }
}

fn sanitizers(case: &Value) -> Vec<Sanitizer> {
    case["sanitizers"].as_array().map(|a| a.iter().filter_map(|s| s.as_str().and_then(Sanitizer::from_name)).collect()).unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/sanitize");
    let corpus = arg("--corpus").unwrap_or_else(|| format!("{root}/cases.jsonl"));
    let repeat: usize = arg("--repeat").and_then(|r| r.parse().ok()).unwrap_or(1).max(1);
    let bless = args.iter().any(|a| a == "--bless");
    let eval = arg("--eval");
    // `--sanitizers pii_redact` runs one list for every case (throughput
    // comparisons with PII-only peers); by default each case's own list.
    let forced: Option<Vec<Sanitizer>> = arg("--sanitizers").map(|l| l.split(',').filter_map(Sanitizer::from_name).collect());

    let file = std::fs::File::open(&corpus).unwrap_or_else(|e| panic!("{corpus}: {e}"));
    let cases: Vec<Value> = std::io::BufReader::new(file).lines().map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();

    // `--big-mb N`: every text input joined and repeated to N MB, sanitized
    // as one string (large-output throughput), printed as one JSON line.
    if let Some(mb) = arg("--big-mb").and_then(|m| m.parse::<usize>().ok()) {
        let joined: String = cases.iter().filter_map(|c| c["input"].as_str()).collect::<Vec<_>>().join("\n");
        let mut big = String::with_capacity(mb << 20);
        while big.len() < mb << 20 {
            big.push_str(&joined);
            big.push('\n');
        }
        let t = Instant::now();
        let (a, ca) = harnessweaver_core::sanitize::pii_redact(&big);
        let pii = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (b, cb) = harnessweaver_core::sanitize::strip_instructions(&big);
        let strip = t.elapsed().as_secs_f64();
        let line = json!({"bytes": big.len(), "pii_seconds": pii, "strip_seconds": strip,
            "pii_replacements": ca.total(), "strip_replacements": cb.total(), "out_bytes": a.len() + b.len()});
        println!("{line}");
        return;
    }
    let mut eval_out = eval.as_ref().map(|p| std::io::BufWriter::new(std::fs::File::create(p).unwrap()));
    let mut divergences = Vec::new();
    let mut total_secs = 0f64;
    let mut total_bytes = 0usize;
    for case in &cases {
        let sans = forced.clone().unwrap_or_else(|| sanitizers(case));
        let input = &case["input"];
        let mut best = f64::INFINITY;
        let mut output = Value::Null;
        for _ in 0..repeat {
            let t = Instant::now();
            let (o, _) = apply(input, &sans);
            best = best.min(t.elapsed().as_secs_f64());
            output = o;
        }
        total_secs += best;
        total_bytes += match input {
            Value::String(s) => s.len(),
            v => v.to_string().len(),
        };
        if output != case["expected"] {
            divergences.push(json!({"id": case["id"], "output": output}));
        }
        if let Some(w) = eval_out.as_mut() {
            let mut found = Vec::new();
            spans(input, "", None, &mut found);
            let line = json!({"id": case["id"], "output": output, "pii": found, "seconds": best});
            writeln!(w, "{line}").unwrap();
        }
    }
    eprintln!(
        "{} cases, {} diverge from gold, {:.1} MB in {:.3} s ({:.1} MB/s)",
        cases.len(),
        divergences.len(),
        total_bytes as f64 / 1e6,
        total_secs,
        total_bytes as f64 / 1e6 / total_secs.max(1e-9)
    );
    if bless {
        let path = format!("{root}/divergences.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        for d in &divergences {
            writeln!(f, "{}", serde_json::to_string(d).unwrap()).unwrap();
        }
        eprintln!("wrote {path}");
    }
}
