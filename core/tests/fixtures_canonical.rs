//! Runs every case of fixtures/canonical/ and fixtures/digest/ (the contract
//! that Python and Node run too).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::fs;
use std::path::{Path, PathBuf};

use harnessweaver_core::{canonical, tool_definition_digest, Error};
use serde_json::{json, Map, Value};

fn fixtures(area: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(area);
    let mut files: Vec<PathBuf> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

/// Decodes the fixtures' tagged JSON (`$float`, `$int`, `$nest`) the way a
/// host would build the value, through the same conversions the bindings use.
fn untag(v: &Value) -> Result<Value, Error> {
    Ok(match v {
        Value::Object(map) if map.len() == 1 && map.contains_key("$float") => {
            let text = map["$float"].as_str().unwrap();
            let f = match text {
                "nan" => f64::NAN,
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                other => other.parse().unwrap(),
            };
            canonical::float_value(f)?
        }
        Value::Object(map) if map.len() == 1 && map.contains_key("$int") => canonical::int_value_from_text(map["$int"].as_str().unwrap())?,
        Value::Object(map) if map.len() == 1 && map.contains_key("$nest") => {
            let spec = &map["$nest"];
            let mut out = untag(&spec["leaf"])?;
            for i in 0..spec["depth"].as_u64().unwrap() {
                out = if i % 2 == 0 { json!({ "k": out }) } else { json!([out]) };
            }
            out
        }
        Value::Array(items) => Value::Array(items.iter().map(untag).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, item) in map {
                out.insert(k.clone(), untag(item)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

fn check(path: &Path, expect: &Value, result: Result<String, Error>, key: &str) {
    match (expect.get(key), expect.get("error"), result) {
        (Some(want), None, Ok(got)) => assert_eq!(want.as_str().unwrap(), got, "{}", path.display()),
        (None, Some(code), Err(err)) => assert_eq!(code.as_str().unwrap(), err.code(), "{}", path.display()),
        (_, _, got) => panic!("{}: expected {expect}, got {got:?}", path.display()),
    }
}

#[test]
fn canonical_cases() {
    let mut n = 0;
    for path in fixtures("canonical") {
        let case: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let result = untag(&case["value"]).and_then(|v| canonical::to_string(&v));
        check(&path, &case["expect"], result, "canonical");
        n += 1;
    }
    eprintln!("canonical fixtures: {n} passed");
}

#[test]
fn digest_cases() {
    let mut n = 0;
    for path in fixtures("digest") {
        let case: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let output = case.get("output_schema").map(untag).transpose();
        let result = untag(&case["input_schema"]).and_then(|schema| {
            let output = output?;
            tool_definition_digest(case["name"].as_str().unwrap(), case["tool_description"].as_str().unwrap(), &schema, output.as_ref())
        });
        check(&path, &case["expect"], result, "digest");
        n += 1;
    }
    eprintln!("digest fixtures: {n} passed");
}
