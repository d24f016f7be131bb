//! Runs every case in `fixtures/cel_lite/*.json` (shape:
//! `fixtures/schema/cel_lite.schema.json`). The Python and Node runners walk
//! the same folder with the same rules:
//!
//! - `{"value": v}`: `evaluate` gives a value whose canonical JSON text equals
//!   that of `v`;
//! - `{"unevaluable": true, "reason_contains": s}`: `evaluate` is unevaluable
//!   and the reason contains `s` when given;
//! - `{"compile_error": {"code", "line", "column"}}`: compiling fails so;
//! - `{"approval": {"required", "reason_contains"}}`: `approval_required`
//!   gives `required`, and a reason containing `reason_contains` (no reason
//!   when it is not given);
//! - `{"error": code}`: gathering the variables fails with that code.
//!
//! Each case runs twice: on the variables as JSON values (what the governor
//! does), and through the host API as JSON text (`host::cel::gather_json`,
//! what the Swift binding does), which converts only what the expression
//! reads. Tagged values (`$nest`, see fixtures/README.md) are decoded first.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use harnessweaver_core::canonical;
use harnessweaver_core::cel_lite::{self, ApprovalVerdict, Outcome};
use harnessweaver_core::host::cel::gather_json;
use serde_json::{json, Map, Value};
use std::io::Write as _;
use std::path::PathBuf;

/// Cases expected to fail, as `file/case` with the reason. Keep it empty.
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

#[test]
fn cel_lite_fixtures() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/cel_lite");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let default_vars = doc.get("vars").and_then(Value::as_object).cloned().unwrap_or_default();
        for case in doc["cases"].as_array().unwrap() {
            count += 1;
            let name = case["name"].as_str().unwrap();
            let id = format!("{stem}/{name}");
            let vars = case.get("vars").and_then(Value::as_object).cloned().unwrap_or_else(|| default_vars.clone());
            let vars = untag(&Value::Object(vars));
            let result = check(case["expr"].as_str().unwrap(), vars.as_object().unwrap(), &case["expect"]);
            let expected_failure = EXPECTED_FAILURES.iter().any(|(k, _)| *k == id);
            match (result, expected_failure) {
                (Ok(()), false) | (Err(_), true) => {}
                (Ok(()), true) => failures.push(format!("{id}: listed as an expected failure but passes")),
                (Err(why), false) => failures.push(format!("{id}: {why}")),
            }
        }
    }
    let _ = writeln!(std::io::stderr(), "cel-lite fixtures: {count} cases in {} files, {} failed", files.len(), failures.len());
    assert!(failures.is_empty(), "{} fixture case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// Decodes `{"$nest": {"depth": n, "leaf": v}}` (the only tag the cel-lite fixtures use).
fn untag(v: &Value) -> Value {
    match v {
        Value::Object(map) if map.len() == 1 && map.contains_key("$nest") => {
            let mut out = untag(&map["$nest"]["leaf"]);
            for i in 0..map["$nest"]["depth"].as_u64().unwrap() {
                out = if i % 2 == 0 { json!({ "k": out }) } else { json!([out]) };
            }
            out
        }
        Value::Array(items) => Value::Array(items.iter().map(untag).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, x)| (k.clone(), untag(x))).collect()),
        other => other.clone(),
    }
}

fn check(expr: &str, vars: &Map<String, Value>, expect: &Value) -> Result<(), String> {
    let compiled = cel_lite::compile(expr);
    if let Some(want) = expect.get("compile_error") {
        return match compiled {
            Ok(_) => Err(format!("expected compile error {want}, but it compiled")),
            Err(e) => {
                let got = serde_json::json!({"code": e.code(), "line": e.line(), "column": e.column()});
                if &got == want {
                    Ok(())
                } else {
                    Err(format!("expected compile error {want}, got {got}: {}", e.render()))
                }
            }
        };
    }
    let program = compiled.map_err(|e| format!("compile error: {}\n{}", e.code(), e.render()))?;
    let text = serde_json::to_string(vars).unwrap();
    let gathered = gather_json(&program, &text);
    if let Some(want) = expect.get("error") {
        return match gathered {
            Err(e) if e.code() == want => Ok(()),
            other => Err(format!("expected error {want}, got {other:?}")),
        };
    }
    let parts = gathered.map_err(|e| format!("gathering the variables failed: {e} [{}]", e.code()))?;
    check_route(&|| program.evaluate(vars), &|| program.approval_required(vars), expect).map_err(|e| format!("on JSON values: {e}"))?;
    check_route(&|| program.evaluate_parts(&parts), &|| program.approval_required_parts(&parts), expect)
        .map_err(|e| format!("through host::cel::gather_json: {e}"))
}

fn check_route(evaluate: &dyn Fn() -> Outcome, approval: &dyn Fn() -> ApprovalVerdict, expect: &Value) -> Result<(), String> {
    if let Some(want) = expect.get("approval") {
        let verdict = approval();
        let required = want["required"].as_bool().unwrap();
        if verdict.required != required {
            return Err(format!("expected approval required = {required}, got {verdict:?}"));
        }
        return match (want.get("reason_contains").and_then(Value::as_str), &verdict.reason) {
            (None, None) => Ok(()),
            (Some(part), Some(reason)) if reason.contains(part) => Ok(()),
            (want_part, got) => Err(format!("expected reason containing {want_part:?}, got {got:?}")),
        };
    }
    let outcome = evaluate();
    if let Some(want) = expect.get("value") {
        return match outcome {
            Outcome::Value(got) => {
                let (w, g) = (canonical::to_string(want), canonical::to_string(&got));
                match (w, g) {
                    (Ok(w), Ok(g)) if w == g => Ok(()),
                    (w, g) => Err(format!("expected {w:?}, got {g:?}")),
                }
            }
            Outcome::Unevaluable { reason } => Err(format!("expected {want}, got unevaluable: {reason}")),
        };
    }
    if expect.get("unevaluable").is_some() {
        return match outcome {
            Outcome::Unevaluable { reason } => match expect.get("reason_contains").and_then(Value::as_str) {
                Some(part) if !reason.contains(part) => Err(format!("expected a reason containing `{part}`, got `{reason}`")),
                _ => Ok(()),
            },
            Outcome::Value(v) => Err(format!("expected unevaluable, got {v}")),
        };
    }
    Err(format!("unknown expectation {expect}"))
}
