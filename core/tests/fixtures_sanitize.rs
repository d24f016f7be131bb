//! Runs every case of fixtures/sanitize/cases.jsonl through `sanitize::apply`
//! and checks the output byte for byte: against the labelled gold output, or,
//! for the cases listed in fixtures/sanitize/divergences.jsonl (known misses
//! and known over-redactions, written by
//! `cargo run --example sanitize_corpus -- --bless`), against the output
//! recorded there. A listed case that now matches gold fails too, so the
//! list never goes stale.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use harnessweaver_core::sanitize::{apply, Sanitizer};
use serde_json::Value;
use std::collections::BTreeMap;

fn read_jsonl(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_corpus_case_matches() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/sanitize");
    let cases = read_jsonl(&format!("{root}/cases.jsonl"));
    let divergences: BTreeMap<String, Value> =
        read_jsonl(&format!("{root}/divergences.jsonl")).into_iter().map(|d| (d["id"].as_str().unwrap().to_owned(), d["output"].clone())).collect();
    assert!(cases.len() >= 3000, "corpus has {} cases", cases.len());
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/schema/sanitize.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for case in &cases {
        assert!(validator.is_valid(case), "{} does not match sanitize.schema.json", case["id"]);
    }
    let mut failures = Vec::new();
    let mut by_set: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let sans: Vec<Sanitizer> =
            case["sanitizers"].as_array().unwrap().iter().map(|s| Sanitizer::from_name(s.as_str().unwrap()).unwrap()).collect();
        let (out, report) = apply(&case["input"], &sans);
        let entry = by_set.entry(case["set"].as_str().unwrap().to_owned()).or_default();
        entry.0 += 1;
        match divergences.get(id) {
            Some(recorded) => {
                entry.1 += 1;
                if &out != recorded {
                    failures.push(format!("{id}: output differs from the recorded divergence"));
                }
                if out == case["expected"] {
                    failures.push(format!("{id}: now matches gold; re-bless divergences.jsonl"));
                }
            }
            None => {
                if out != case["expected"] {
                    failures.push(format!("{id}:\n  expected {}\n  got      {}", case["expected"], out));
                }
            }
        }
        // The report counts, never echoes: no count key holds input text.
        for (kind, _) in report.counts.iter() {
            assert!(kind.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '.' || c.is_ascii_lowercase()), "{kind}");
        }
    }
    eprintln!("sanitize corpus: {} cases; per set (cases, known divergences): {by_set:?}", cases.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
