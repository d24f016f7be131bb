//! Runs every case of fixtures/load/ (the contract that Python and Node run
//! too): each case is a harness directory with `expected.json`, either
//! `{"tools": [describe() of each tool]}` or `{"problems": [{code, file,
//! line, column, path}]}`. Messages are not compared.
//!
//! `HW_BLESS=1 cargo test --test fixtures_load` rewrites every expected.json
//! from the current output (review the diff before committing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::fs;
use std::path::{Path, PathBuf};

use harnessweaver_core::Harness;
use serde_json::{json, Map, Value};

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/load");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases in {}", dir.display());
    dirs
}

/// What a case produces, in expected.json's shape.
fn actual(case: &Path, harness: &str) -> Value {
    match Harness::load(case.join(harness)) {
        Ok(h) => json!({ "tools": h.tools().iter().map(|t| t.describe()).collect::<Vec<_>>() }),
        Err(e) => {
            assert!(!e.problems().is_empty(), "{}: a load error without problems", case.display());
            let problems: Vec<Value> = e
                .problems()
                .iter()
                .map(|p| {
                    assert!(!p.message.is_empty());
                    assert!(!p.message.contains("Some("), "{}: message names a Rust type: {}", case.display(), p.message);
                    json!({"code": p.code, "file": p.file, "line": p.line, "column": p.column, "path": p.path, "message": p.message})
                })
                .collect();
            json!({ "problems": problems })
        }
    }
}

#[test]
fn load_cases() {
    let bless = std::env::var_os("HW_BLESS").is_some();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected_path = case.join("expected.json");
        let Ok(text) = fs::read_to_string(&expected_path) else {
            failures.push(format!("{name}: no expected.json (a case that cannot run fails)"));
            continue;
        };
        let expected: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: expected.json: {e}"));
                continue;
            }
        };
        let harness = expected.get("harness").and_then(Value::as_str).unwrap_or("harness.yaml");
        let mut got = actual(&case, harness);
        // A problem's message is compared only where the case gives one.
        let wanted = expected.get("problems").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(problems) = got.get_mut("problems").and_then(Value::as_array_mut) {
            for (i, p) in problems.iter_mut().enumerate() {
                if wanted.get(i).and_then(|w| w.get("message")).is_none() {
                    p.as_object_mut().unwrap().remove("message");
                }
            }
        }
        if bless {
            let mut out = Map::new();
            for key in ["description", "harness"] {
                if let Some(v) = expected.get(key) {
                    out.insert(key.to_string(), v.clone());
                }
            }
            for (k, v) in got.as_object().unwrap() {
                out.insert(k.clone(), v.clone());
            }
            fs::write(&expected_path, serde_json::to_string_pretty(&Value::Object(out)).unwrap() + "\n").unwrap();
            n += 1;
            continue;
        }
        let want = if let Some(tools) = expected.get("tools") {
            json!({ "tools": tools })
        } else if let Some(problems) = expected.get("problems") {
            json!({ "problems": problems })
        } else {
            failures.push(format!("{name}: expected.json has neither `tools` nor `problems`"));
            continue;
        };
        if want != got {
            failures.push(format!(
                "{name}:\n  expected {}\n  got      {}",
                serde_json::to_string(&want).unwrap(),
                serde_json::to_string(&got).unwrap()
            ));
        }
        n += 1;
    }
    assert!(failures.is_empty(), "{} load fixture(s) failed:\n{}", failures.len(), failures.join("\n"));
    eprintln!("load fixtures: {n} passed");
}
