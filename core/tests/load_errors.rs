//! What a new user might get wrong, one test each: every test asserts the
//! problem's code and where it points (file, line, column, field path).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessweaver_core::{Error, Harness, PinState, Problem, Tool};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory holding `files` (path, text).
fn dir_with(files: &[(&str, &str)]) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("hw-load-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    dir
}

const HARNESS: &str = "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n";

fn manifest(spec: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: t\nspec:\n{spec}")
}

fn problems(dir: &Path) -> Vec<Problem> {
    match Harness::load(dir.join("harness.yaml")) {
        Ok(h) => panic!("loaded {} tools; expected problems", h.tools().len()),
        Err(e) => e.problems().to_vec(),
    }
}

/// The one problem of loading a harness with one manifest `spec`.
fn one(spec: &str) -> Problem {
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &manifest(spec))]);
    let mut p = problems(&dir);
    assert_eq!(p.len(), 1, "{p:#?}");
    p.remove(0)
}

fn at(p: &Problem, code: &str, file: &str, line: usize, column: usize, path: &str) {
    assert_eq!((p.code.as_str(), p.file.as_deref(), p.line, p.column, p.path.as_str()), (code, Some(file), Some(line), Some(column), path), "{p:#?}");
    assert!(!p.message.is_empty());
}

#[test]
fn broken_yaml() {
    let p = one("  handler: \"a:b\n  risk: low\n");
    assert_eq!(p.code, "yaml_syntax");
    assert_eq!(p.file.as_deref(), Some("tools/t.yaml"));
    assert!(p.line.is_some() && p.column.is_some());
}

#[test]
fn broken_harness_yaml() {
    let dir = dir_with(&[("harness.yaml", "apiVersion: harnessweaver/v1\nkind: Harness\nspec: {tools: [\n")]);
    let p = problems(&dir);
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].code.as_str(), p[0].file.as_deref()), ("yaml_syntax", Some("harness.yaml")));
}

#[test]
fn broken_json() {
    let dir = dir_with(&[
        ("harness.yaml", "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.json]\n"),
        ("tools/t.json", "{\"apiVersion\": \"harnessweaver/v1\",\n \"kind\": \"Tool\" \"x\"}"),
    ]);
    let p = problems(&dir);
    at(&p[0], "json_syntax", "tools/t.json", 2, 17, "");
}

#[test]
fn wrong_types() {
    at(&one("  handler: \"a:b\"\n  enabled: \"no\"\n"), "wrong_type", "tools/t.yaml", 7, 12, "spec.enabled");
    at(&one("  handler: \"a:b\"\n  scopes: admin\n"), "wrong_type", "tools/t.yaml", 7, 11, "spec.scopes");
    at(&one("  handler: \"a:b\"\n  input_schema: [1]\n"), "wrong_type", "tools/t.yaml", 7, 17, "spec.input_schema");
    at(&one("  handler: \"a:b\"\n  output:\n    max_bytes: \"10kb\"\n"), "wrong_type", "tools/t.yaml", 8, 16, "spec.output.max_bytes");
}

#[test]
fn yes_and_on_stay_strings() {
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &manifest("  handler: \"a:b\"\n  scopes: [yes, on, no, off]\n"))]);
    let h = Harness::load(dir.join("harness.yaml")).unwrap();
    assert_eq!(h.tools()[0].manifest().scopes, ["yes", "on", "no", "off"]);
}

#[test]
fn unknown_fields_are_named() {
    let p = one("  handler: \"a:b\"\n  timeuot: 5s\n");
    at(&p, "unknown_field", "tools/t.yaml", 7, 3, "spec.timeuot");
    assert!(p.message.contains("`timeuot`"), "{}", p.message);
    at(&one("  handler: \"a:b\"\n  approval: { when: \"true\", role: x }\n"), "unknown_field", "tools/t.yaml", 7, 29, "spec.approval.role");
}

#[test]
fn missing_handler_and_url() {
    at(&one("  description: x\n"), "missing_handler", "tools/t.yaml", 6, 3, "spec.handler");
    at(&one("  transport: http\n"), "missing_url", "tools/t.yaml", 6, 3, "spec.url");
}

#[test]
fn forbidden_fields() {
    at(&one("  handler: \"a:b\"\n  sandbox: monty\n"), "forbidden_field", "tools/t.yaml", 7, 3, "spec.sandbox");
    at(&one("  transport: code\n  sandbox: monty\n  server: mcp://x\n"), "forbidden_field", "tools/t.yaml", 8, 3, "spec.server");
}

#[test]
fn mcp_needs_a_declared_server() {
    let p = one("  transport: mcp\n  server: mcp://payments\n");
    at(&p, "unknown_mcp_server", "tools/t.yaml", 7, 11, "spec.server");
    assert!(p.message.contains("`mcp://payments`") && p.message.contains("none is declared"), "{}", p.message);
    at(&one("  transport: mcp\n  server: payments\n"), "invalid_value", "tools/t.yaml", 7, 11, "spec.server");
    at(&one("  transport: mcp\n"), "missing_field", "tools/t.yaml", 6, 3, "spec.server");
    at(&one("  transport: code\n  sandbox: firecracker\n"), "unknown_sandbox", "tools/t.yaml", 7, 12, "spec.sandbox");
}

#[test]
fn bad_durations() {
    for (text, col) in [("30", 12), ("30 sec", 12), ("1.5s", 12), ("0ms", 12), ("-5s", 12), ("'5 m'", 12)] {
        let p = one(&format!("  handler: \"a:b\"\n  timeout: {text}\n"));
        at(&p, "invalid_duration", "tools/t.yaml", 7, col, "spec.timeout");
    }
    let p = one("  transport: code\n  sandbox: monty\n  limits:\n    timeout: soon\n");
    at(&p, "invalid_duration", "tools/t.yaml", 9, 14, "spec.limits.timeout");
}

#[test]
fn good_durations() {
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &manifest("  handler: \"a:b\"\n  timeout: 500ms\n"))]);
    let h = Harness::load(dir.join("harness.yaml")).unwrap();
    assert_eq!(h.tools()[0].manifest().timeout.ms, 500);
    assert_eq!(h.tools()[0].describe()["timeout"], "500ms");
    for (text, ms) in [("30s", 30_000), ("2m", 120_000), ("1h", 3_600_000), ("90s", 90_000)] {
        let d = harnessweaver_core::manifest::Duration::parse(text).unwrap();
        assert_eq!(d.ms, ms);
    }
    assert_eq!(harnessweaver_core::manifest::Duration { ms: 90_000 }.to_text(), "90s");
}

#[test]
fn bad_rate_limits() {
    for text in ["10/min", "0/m", "ten/m", "10", "10/", "/m", "10/w", "1.5/s"] {
        let p = one(&format!("  handler: \"a:b\"\n  rate_limit:\n    per_tenant: \"{text}\"\n"));
        at(&p, "invalid_rate_limit", "tools/t.yaml", 8, 17, "spec.rate_limit.per_tenant");
    }
}

#[test]
fn bad_names() {
    for name in ["9lives", "has space", "slash/name", "émoji", "\"\""] {
        let text = format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {name}\nspec:\n  handler: \"a:b\"\n");
        let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &text)]);
        let p = problems(&dir);
        at(&p[0], "invalid_name", "tools/t.yaml", 4, 9, "metadata.name");
    }
}

#[test]
fn bad_pin() {
    at(&one("  handler: \"a:b\"\n  definition_digest: sha256:9f3c...\n"), "invalid_digest", "tools/t.yaml", 7, 22, "spec.definition_digest");
}

#[test]
fn glob_escaping_the_directory() {
    let outer = dir_with(&[("outside.yaml", &manifest("  handler: \"a:b\"\n"))]);
    let inner = outer.join("harness");
    fs::create_dir_all(inner.join("tools")).unwrap();
    fs::write(
        inner.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests:\n      - ../*.yaml\n      - /etc/*\n      - tools/../../*.yaml\n",
    )
    .unwrap();
    let p = problems(&inner);
    assert_eq!(p.len(), 3, "{p:#?}");
    at(&p[0], "path_escape", "harness.yaml", 6, 9, "spec.tools.manifests[0]");
    at(&p[1], "path_escape", "harness.yaml", 7, 9, "spec.tools.manifests[1]");
    at(&p[2], "path_escape", "harness.yaml", 8, 9, "spec.tools.manifests[2]");
}

#[cfg(unix)]
#[test]
fn symlink_escape() {
    let outer = dir_with(&[("secret.yaml", &manifest("  handler: \"a:b\"\n")), ("harness/harness.yaml", HARNESS)]);
    fs::create_dir_all(outer.join("harness/tools")).unwrap();
    std::os::unix::fs::symlink(outer.join("secret.yaml"), outer.join("harness/tools/t.yaml")).unwrap();
    let p = problems(&outer.join("harness"));
    at(&p[0], "path_escape", "harness.yaml", 5, 17, "spec.tools.manifests[0]");
    // A symlinked directory that leads outside is refused too.
    let outer2 = dir_with(&[("elsewhere/t.yaml", &manifest("  handler: \"a:b\"\n")), ("harness/harness.yaml", HARNESS)]);
    std::os::unix::fs::symlink(outer2.join("elsewhere"), outer2.join("harness/tools")).unwrap();
    let p = problems(&outer2.join("harness"));
    assert_eq!(p[0].code, "path_escape");
}

#[test]
fn glob_matching_nothing() {
    let dir = dir_with(&[("harness.yaml", HARNESS)]);
    let p = problems(&dir);
    at(&p[0], "glob_no_match", "harness.yaml", 5, 17, "spec.tools.manifests[0]");
}

#[test]
fn duplicate_names_name_both_files() {
    let dir = dir_with(&[
        ("harness.yaml", HARNESS),
        ("tools/a.yaml", &manifest("  handler: \"a:b\"\n")),
        ("tools/b.yaml", &manifest("  handler: \"a:c\"\n")),
    ]);
    let p = problems(&dir);
    assert_eq!(p.len(), 1);
    at(&p[0], "duplicate_tool", "tools/b.yaml", 4, 9, "metadata.name");
    assert!(p[0].message.contains("tools/a.yaml") && p[0].message.contains("tools/b.yaml"), "{}", p[0].message);
}

#[test]
fn every_problem_at_once() {
    let dir = dir_with(&[
        ("harness.yaml", "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: dev\n  tools:\n    manifests: [\"tools/*.yaml\"]\n"),
        ("tools/a.yaml", &manifest("  handler: \"a:b\"\n  timeout: 5\n  risk: severe\n  extra: 1\n")),
        ("tools/b.yaml", "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: b}\nspec: {transport: http}\n"),
    ]);
    let p = problems(&dir);
    let codes: Vec<&str> = p.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["invalid_value", "invalid_duration", "invalid_value", "unknown_field", "missing_url"]);
    let err = Harness::load(dir.join("harness.yaml")).unwrap_err();
    assert_eq!(err.code(), "load_error");
    let text = err.to_string();
    assert!(text.starts_with("5 problems found"), "{text}");
    assert!(text.contains("tools/a.yaml:7:12: spec.timeout:"), "{text}");
}

#[test]
fn missing_harness_file() {
    let dir = dir_with(&[]);
    let err = Harness::load(dir.join("harness.yaml")).unwrap_err();
    assert_eq!(err.code(), "io_error");
    assert_eq!(err.problems()[0].file.as_deref(), Some("harness.yaml"));
}

#[test]
fn wrong_api_version_and_kind() {
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", "apiVersion: v1\nkind: tool\nmetadata: {name: t}\nspec: {handler: \"a:b\"}\n")]);
    let p = problems(&dir);
    at(&p[0], "wrong_api_version", "tools/t.yaml", 1, 13, "apiVersion");
    at(&p[1], "wrong_kind", "tools/t.yaml", 2, 7, "kind");
}

#[test]
fn invalid_schemas() {
    at(&one("  handler: \"a:b\"\n  input_schema: { type: array }\n"), "invalid_schema", "tools/t.yaml", 7, 25, "spec.input_schema.type");
    at(
        &one("  handler: \"a:b\"\n  input_schema:\n    type: object\n    properties:\n      x: { type: text }\n"),
        "invalid_schema",
        "tools/t.yaml",
        10,
        18,
        "spec.input_schema.properties.x.type",
    );
    // Caught by the JSON Schema compiler rather than the shape checks.
    let p = one("  handler: \"a:b\"\n  input_schema:\n    type: object\n    properties:\n      x: { type: string, pattern: \"(\" }\n");
    assert_eq!(p.code, "invalid_schema");
}

#[test]
fn pin_states_and_digest() {
    let d = harnessweaver_core::definition_digest("t", "", &serde_json::json!({"type": "object"})).unwrap();
    let pinned = Tool::from_manifest_text(&manifest(&format!("  handler: \"a:b\"\n  definition_digest: \"{d}\"\n")), "t.yaml").unwrap();
    assert_eq!((pinned.pin(), pinned.digest()), (PinState::Pinned, d.as_str()));
    let other = format!("sha256:{}", "0".repeat(64));
    let stale = Tool::from_manifest_text(&manifest(&format!("  handler: \"a:b\"\n  definition_digest: \"{other}\"\n")), "t.yaml").unwrap();
    assert_eq!(stale.pin(), PinState::Mismatched);
    assert_eq!(stale.describe()["pinned_digest"], other.as_str());
    let none = Tool::from_manifest_text(&manifest("  handler: \"a:b\"\n"), "t.yaml").unwrap();
    assert_eq!(none.pin(), PinState::Unpinned);
    assert_eq!(none.describe()["pin"], "unpinned");
}

#[test]
fn manifests_from_values_and_text() {
    let value = serde_json::json!({
        "apiVersion": "harnessweaver/v1", "kind": "Tool",
        "metadata": {"name": "fake"},
        "spec": {"handler": "tests:fake", "description": "a fake 𝄞", "risk": "medium"}
    });
    let t = Tool::from_manifest_value(&value, "FakeTool").unwrap();
    assert_eq!(t.describe()["risk"], "medium");
    assert_eq!(t.describe()["file"], "FakeTool");
    let bad = serde_json::json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "x"}, "spec": {"risk": 3}});
    let err = Tool::from_manifest_value(&bad, "FakeTool").unwrap_err();
    let codes: Vec<&str> = err.problems().iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["missing_handler", "wrong_type"]);
    assert!(err.problems().iter().all(|p| p.line.is_none() && p.file.as_deref() == Some("FakeTool")));
    let json_text = "{\"apiVersion\": \"harnessweaver/v1\", \"kind\": \"Tool\", \"metadata\": {\"name\": \"j\"}, \"spec\": {\"handler\": \"a:b\", \"timeout\": 5}}";
    let err = Tool::from_manifest_text(json_text, "j.json").unwrap_err();
    let p = &err.problems()[0];
    assert_eq!((p.code.as_str(), p.line, p.column), ("invalid_duration", Some(1), Some(117)));
    assert!(matches!(err, Error::Load(_)));
}

#[test]
fn harness_defaults_and_sections() {
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &manifest("  handler: \"a:b\"\n"))]);
    let h = Harness::load(dir.join("harness.yaml")).unwrap();
    let s = h.spec();
    assert_eq!(s.mode, harnessweaver_core::harness::Mode::Production);
    assert!(s.tools.require_manifest);
    assert_eq!(s.tools.max_output_bytes, 100_000);
    assert_eq!(s.trifecta, harnessweaver_core::harness::TrifectaMode::Block);
    assert_eq!(s.state, harnessweaver_core::harness::StateBackend::Memory);
    assert_eq!(s.audit_sink, harnessweaver_core::harness::AuditSink::None);
    assert!(h.tool("t").is_some() && h.tool("nope").is_none());
    let d = h.describe();
    assert_eq!(d["mode"], "production");
    assert_eq!(d["tools"]["max_output_bytes"], 100_000);
    assert_eq!(d["flow"]["trifecta"], "block");
    assert_eq!(d["state"], "memory");
    assert_eq!(d["audit"]["sink"], "none");
    // `flow.unrequested_actions` is described (and so part of the policy
    // version) only when set to other than its default, `refuse`.
    assert!(d["flow"].get("unrequested_actions").is_none());
    let approving = HARNESS.replacen("spec:\n", "spec:\n  flow: { unrequested_actions: approve }\n", 1);
    assert_ne!(approving, HARNESS, "the test harness has a `spec:` line");
    let dir = dir_with(&[("harness.yaml", &approving), ("tools/t.yaml", &manifest("  handler: \"a:b\"\n"))]);
    assert_eq!(Harness::load(dir.join("harness.yaml")).unwrap().describe()["flow"]["unrequested_actions"], "approve");
}

#[test]
fn harness_describe_shows_every_section() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/load/harness_full/harness.yaml");
    let d = Harness::load(root).unwrap().describe();
    assert_eq!(
        d,
        serde_json::json!({
            "name": "full",
            "mode": "test",
            "tools": {"manifests": ["tools/*.yaml"], "require_manifest": false, "require_pins": false, "max_output_bytes": 1234, "approval_by_risk": ["high", "critical"]},
            "policy": {
                "layers": [{"name": "harness", "mode": "enforce", "default": "allow", "file": null}],
                "rules": [
                    {"name": "no-support-refunds", "effect": "deny", "tools": ["refund_*"], "when": "'support' in principal.roles",
                     "layer": "harness", "mode": "enforce", "examples": 0, "file": "harness.yaml"},
                    {"name": "everything-else", "effect": "allow", "tools": ["*"], "when": "true",
                     "layer": "harness", "mode": "enforce", "examples": 0, "file": "harness.yaml"}
                ]
            },
            "flow": {"trifecta": "approve", "tainted_arguments": "refuse"},
            "budgets": {"max_tool_calls": 50, "per_tool": {"t": 3}},
            "approvals": {"allow_self_approval": true, "max_open_per_principal": 100},
            "audit": {"sink": "audit/events.jsonl"},
            "state": "sqlite:state.db",
            "state_options": {"rate_limits_on_store_error": "open", "run_ttl_ms": 7_200_000, "timeout_ms": 2_000},
            "mcp": {"connect": "eager", "servers": {
                "docs": {"url": "https://docs.internal/mcp", "headers_env": {"Authorization": "DOCS_TOKEN"}},
                "payments": {"command": "payments-mcp", "args": ["--stdio"], "env": {"TOKEN": "PAYMENTS_TOKEN"}}
            }}
        })
    );
}

/// Every prefix of every manifest in the fixtures, and a few thousand
/// deterministic byte mutations of them, load or fail with located problems:
/// never a panic, never an error without problems.
#[test]
fn never_panics_on_mangled_manifests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/load");
    let mut texts = Vec::new();
    for case in fs::read_dir(&root).unwrap() {
        let tools = case.unwrap().path().join("tools");
        let Ok(entries) = fs::read_dir(&tools) else { continue };
        for e in entries {
            if let Ok(t) = fs::read_to_string(e.unwrap().path()) {
                texts.push(t);
            }
        }
    }
    assert!(texts.len() > 20);
    let check = |text: &str| {
        for origin in ["m.yaml", "m.json"] {
            if let Err(e) = Tool::from_manifest_text(text, origin) {
                assert!(!e.problems().is_empty(), "{text:?}");
                for p in e.problems() {
                    assert!(!p.code.as_str().is_empty() && !p.message.is_empty());
                }
            }
        }
    };
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b" \n\t:{}[],'\"#&*!|>-?%@`\\0aZ9";
    for text in &texts {
        for (i, _) in text.char_indices().step_by(3) {
            check(&text[..i]);
        }
        for _ in 0..60 {
            let mut bytes = text.as_bytes().to_vec();
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % bytes.len().max(1);
                let b = alphabet[(next() as usize) % alphabet.len()];
                if next() % 2 == 0 && !bytes.is_empty() {
                    bytes[at] = b;
                } else {
                    bytes.insert(at.min(bytes.len()), b);
                }
            }
            check(&String::from_utf8_lossy(&bytes));
        }
    }
}

#[test]
fn conditions_compile_at_load_and_point_inside() {
    // Quoted: the column is inside the quotes.
    at(&one("  handler: \"a:b\"\n  approval:\n    when: \"args.x >\"\n"), "cel_syntax", "tools/t.yaml", 8, 20, "spec.approval.when");
    // Plain, with an unknown name.
    at(&one("  handler: \"a:b\"\n  approval:\n    when: user.admin\n"), "cel_unknown_name", "tools/t.yaml", 8, 11, "spec.approval.when");
    // A literal block: later lines keep their place.
    at(
        &one("  handler: \"a:b\"\n  approval:\n    when: |\n      args.x > 1 &&\n        args.y ==\n"),
        "cel_syntax",
        "tools/t.yaml",
        10,
        18,
        "spec.approval.when",
    );
    // A wrong type is one problem, not also a compile error.
    at(&one("  handler: \"a:b\"\n  approval:\n    when: [1]\n"), "wrong_type", "tools/t.yaml", 8, 11, "spec.approval.when");
}

#[test]
fn a_directory_means_its_harness_yaml_and_globs_skip_it() {
    let dir = dir_with(&[
        ("harness.yaml", "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"*.yaml\"]\n"),
        ("t.yaml", &manifest("  handler: \"a:b\"\n")),
    ]);
    let h = Harness::load(&dir).unwrap();
    assert_eq!(h.tools().len(), 1);
    assert_eq!(h.tools()[0].file(), Some("t.yaml"));
}

#[test]
fn issue17_item13_confusable_tool_names_are_a_load_error_naming_both_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/load/confusable_tool");
    let p = problems(&root);
    assert_eq!(p.len(), 2, "{p:#?}");
    at(&p[0], "confusable_tool", "tools/b.yaml", 4, 9, "metadata.name");
    at(&p[1], "confusable_tool", "tools/d.yaml", 4, 9, "metadata.name");
    for (p, names) in p.iter().zip([["`Refund_payment`", "`refund_payment`"], ["`wire_10`", "`wire_l0`"]]) {
        let (a, b) = if names[0].contains("Refund") { ("tools/a.yaml", "tools/b.yaml") } else { ("tools/c.yaml", "tools/d.yaml") };
        assert!(p.message.contains(a) && p.message.contains(b) && names.iter().all(|n| p.message.contains(n)), "{}", p.message);
    }
    // Each pair alone: the names that differ only by confusables clash, a
    // plainly different name does not.
    for (x, y, clash) in [
        ("refund_payment", "REFUND_PAYMENT", true),
        ("pay0", "payO", true),
        ("burn", "bum", true),
        ("list.files", "list_files", false),
        ("refund_payment", "refund_payments", false),
    ] {
        let m = |n: &str| format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {n}\nspec:\n  handler: \"a:b\"\n");
        let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/a.yaml", &m(x)), ("tools/b.yaml", &m(y))]);
        match Harness::load(dir.join("harness.yaml")) {
            Ok(h) => assert!(!clash && h.tools().len() == 2, "`{x}` and `{y}` both loaded"),
            Err(e) => {
                assert!(clash, "`{x}` and `{y}`: {e}");
                at(&e.problems()[0], "confusable_tool", "tools/b.yaml", 4, 9, "metadata.name");
            }
        }
    }
}

#[test]
fn issue17_conformance_integer_valued_float_bounds_load_and_are_enforced() {
    // JSON Schema counts `2.0` as an integer: every count keyword takes it.
    let keywords = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"];
    for keyword in keywords {
        let contains = if keyword.ends_with("Contains") { "contains: true, " } else { "" };
        let schema = format!("  input_schema:\n    type: object\n    properties:\n      v: {{{contains}{keyword}: 2.0}}\n");
        let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/t.yaml", &manifest(&format!("  handler: \"a:b\"\n{schema}")))]);
        let h = Harness::load(dir.join("harness.yaml")).unwrap_or_else(|e| panic!("{keyword}: 2.0 refused: {e}"));
        let v = h.tools()[0].validator();
        let (short, long) = match keyword {
            "minLength" | "maxLength" => (serde_json::json!({"v": "a"}), serde_json::json!({"v": "abc"})),
            "minItems" | "maxItems" => (serde_json::json!({"v": [1]}), serde_json::json!({"v": [1, 2, 3]})),
            "minContains" | "maxContains" => (serde_json::json!({"v": [1]}), serde_json::json!({"v": [1, 2, 3]})),
            _ => (serde_json::json!({"v": {"a": 1}}), serde_json::json!({"v": {"a": 1, "b": 2, "c": 3}})),
        };
        let refused = if keyword.starts_with("min") { short } else { long };
        let got = v.check(&refused).map(|x| x.keyword);
        assert!(got.as_deref().is_some_and(|k| k == keyword || (!contains.is_empty() && k == "contains")), "{keyword}: 2.0 not enforced: {got:?}");
    }
    // A fractional, negative or non-finite count is still refused.
    for bad in ["2.5", "-1.0", ".inf"] {
        let p = one(&format!("  handler: \"a:b\"\n  input_schema:\n    type: object\n    properties:\n      v: {{maxItems: {bad}}}\n"));
        assert_eq!((p.code.as_str(), p.path.as_str()), ("invalid_schema", "spec.input_schema.properties.v.maxItems"), "{bad}");
    }
}
