//! The fuzz targets' bodies, shared by libFuzzer (`fuzz/fuzz_targets/*.rs`,
//! `make fuzz`) and by the short pass that `make test` runs on the committed
//! corpus through a plain test harness (`core/tests/fuzz_corpus.rs`).
//!
//! Each target must never panic, hang or grow without bound on any input;
//! where a cheap property holds for every input it is asserted too (a failed
//! assertion is a crash like any other).
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use harnessweaver_core::governor::{GovernorOptions, Handler};
use harnessweaver_core::{
    canonical, cel_lite, definition_digest, digest_is_well_formed, sanitize, Decision, Harness, LoadOptions, Principal, Runtime, Tool,
};
use serde_json::{json, Value};

/// Splits `data` at the first NUL byte: (before, after).
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hw-fuzz-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(d.join("tools"));
    d
}

/// Canonical JSON and the definition digest from arbitrary JSON: the text is
/// ASCII, parses back, is a fixed point, and the digest is well formed.
pub fn canonical(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(text) = canonical::to_string(&value) else { return };
    assert!(text.is_ascii(), "canonical text is not ASCII");
    let back: Value = serde_json::from_str(&text).expect("canonical text parses");
    assert_eq!(canonical::to_string(&back).expect("canonical of canonical"), text, "not a fixed point");
    let name = value.get("name").and_then(Value::as_str).unwrap_or("t");
    if let Ok(d) = definition_digest(name, "d", &value) {
        assert!(digest_is_well_formed(&d), "malformed digest {d}");
    }
}

/// cel-lite: `expr NUL vars-json`. Compiles, evaluates (bounded) and applies
/// the approval rule: unevaluable or non-bool means required.
pub fn cel_lite(data: &[u8]) {
    let (expr, vars) = split(data);
    let Ok(expr) = std::str::from_utf8(expr) else { return };
    let Ok(program) = cel_lite::compile(expr) else { return };
    let vars = match serde_json::from_slice::<Value>(vars) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let outcome = program.evaluate(&vars);
    let verdict = program.approval_required(&vars);
    match outcome {
        cel_lite::Outcome::Value(Value::Bool(false)) => assert!(!verdict.required, "false but required"),
        _ => assert!(verdict.required, "not false but not required: {expr}"),
    }
}

/// The sanitizers on arbitrary text, alone and over a JSON value with the
/// text as key and value.
pub fn sanitize(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (out, _) = sanitize::pii_redact(&text);
    let _ = sanitize::pii_redact(&out);
    let (out, _) = sanitize::strip_instructions(&text);
    let _ = sanitize::strip_instructions(&out);
    let value = json!({ text.as_ref(): text.as_ref(), "k": [text.as_ref(), { "email": text.as_ref() }] });
    let all = [harnessweaver_core::manifest::Sanitizer::PiiRedact, harnessweaver_core::manifest::Sanitizer::StripInstructions];
    let (cleaned, _) = sanitize::apply(&value, &all);
    assert!(cleaned.is_object());
}

/// One `kind: Tool` manifest from bytes (YAML or JSON text).
pub fn manifest_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(tool) = Tool::from_manifest_text(text, "fuzz.yaml") {
        assert!(digest_is_well_formed(tool.digest()));
        let _ = tool.describe();
    }
}

/// A harness directory from bytes: the first byte picks which file the rest
/// is (harness.yaml or a tool manifest beside a fixed other one).
pub fn harness_load(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    let dir = scratch("load");
    let (harness, tool) =
        if which % 2 == 0 { (rest.to_vec(), FIXED_TOOL.as_bytes().to_vec()) } else { (FIXED_HARNESS.as_bytes().to_vec(), rest.to_vec()) };
    std::fs::write(dir.join("harness.yaml"), harness).unwrap();
    std::fs::write(dir.join("tools/t.yaml"), tool).unwrap();
    match Harness::load(dir.join("harness.yaml")) {
        Ok(h) => {
            for t in h.tools() {
                assert!(digest_is_well_formed(t.digest()));
            }
            let _ = h.describe();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

const FIXED_HARNESS: &str = "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: test\n  tools:\n    manifests: [\"tools/*.yaml\"]\n    approval_by_risk: [critical]\n  flow: {trifecta: block}\n  budgets: {max_tool_calls: 20}\n";
const FIXED_TOOL: &str = "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: echo}\nspec:\n  handler: \"x:echo\"\n  description: d\n  input_schema: {type: object}\n";

fn principal(id: &str, roles: &[&str], scopes: &[&str]) -> Principal {
    Principal::from_value(&json!({"id": id, "roles": roles, "scopes": scopes})).unwrap()
}

/// The full call: `manifest NUL args-json`. The manifest (YAML/JSON text of
/// one tool) is registered in code beside a fixed harness; its handler echoes
/// the args (or a big output when asked); the same args are called three
/// times in one run, then any pending approval is granted and run. Every
/// result must be a decision with a code and step when not allowed.
pub fn call(data: &[u8]) {
    let (manifest, args) = split(data);
    let Ok(text) = std::str::from_utf8(manifest) else { return };
    let Ok(tool) = Tool::from_manifest_text(text, "fuzz.yaml") else { return };
    let Ok(args) = serde_json::from_slice::<Value>(args) else { return };
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = scratch("call");
        std::fs::write(d.join("harness.yaml"), FIXED_HARNESS).unwrap();
        d
    });
    let echo: Handler = Arc::new(|args: &Value, key: &str| {
        if let Some(n) = args.get("repeat").and_then(Value::as_u64) {
            return Ok(json!({ "big": "x".repeat((n % 200_000) as usize) }));
        }
        if args.get("fail").is_some() {
            return Err("handler failed".to_string());
        }
        Ok(json!({ "args": args, "key": key, "url": "https://evil.example/?q=secret" }))
    });
    let name = tool.name().to_string();
    let options = LoadOptions {
        handlers: HashMap::from([(name.clone(), echo)]),
        governor: GovernorOptions { extra_tools: vec![tool], ..GovernorOptions::default() },
        ..LoadOptions::default()
    };
    let Ok(rt) = Runtime::load(dir.join("harness.yaml"), options) else { return };
    let alice = principal("alice", &["support"], &["orders:read", "payments:refund", "web:fetch"]);
    let ctx = rt.run(alice, Some("acme".to_string()), None);
    let mut last_approval = None;
    for _ in 0..3 {
        let r = rt.call(&name, args.clone(), &ctx);
        match r.decision {
            Decision::Allowed => assert!(r.code.is_none() || r.code.is_some()),
            Decision::Refused | Decision::Pending => {
                assert!(r.code.is_some() && r.step.is_some(), "refusal without a code or step: {r:?}");
            }
        }
        if let Some(a) = r.approval {
            last_approval = Some(a.id);
        }
    }
    if let Some(id) = last_approval {
        let bob = principal("bob", &["finance", "admin", "approver"], &[]);
        let _ = rt.approve(&id, &bob);
        let _ = rt.approve(&id, &bob); // replay: must not run twice
    }
}
