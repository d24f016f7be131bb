//! `harnessweaver doctor` and `harnessweaver tools pin`: exit codes, output,
//! and pinning that edits only the digest line.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessweaver_core::cli::run_with;
use harnessweaver_core::{Harness, PinState};

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn dir_with(files: &[(&str, &str)]) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("hw-cli-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    dir
}

fn run(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&args, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

const HARNESS: &str = "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\", \"tools/*.json\"]\n";

const YAML_TOOL: &str = "# The lookup tool.\n# Owned by the shop team.\napiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: lookup, owner: shop }   # flow style\nspec:\n    # reached natively\n    transport: native\n    handler: \"shop:lookup\"   # the function\n    description: Look up an order.\n";

const JSON_TOOL: &str = "{\n\t\"apiVersion\": \"harnessweaver/v1\",\n\t\"kind\": \"Tool\",\n\t\"metadata\": {\"name\": \"search\"},\n\t\"spec\": {\n\t\t\"handler\": \"shop:search\",\n\t\t\"description\": \"Search (caf\\u00e9)\"\n\t}\n}\n";

fn shop() -> PathBuf {
    dir_with(&[("harness.yaml", HARNESS), ("tools/lookup.yaml", YAML_TOOL), ("tools/search.json", JSON_TOOL)])
}

#[test]
fn pin_adds_only_the_digest_line_and_is_idempotent() {
    let dir = shop();
    let harness = dir.join("harness.yaml");
    let h = harness.to_str().unwrap();

    let (code, out, _) = run(&["doctor", h]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("warning:").count(), 2, "{out}");
    let loaded = Harness::load(&harness).unwrap();
    let lookup_digest = loaded.tool("lookup").unwrap().digest().to_string();
    let search_digest = loaded.tool("search").unwrap().digest().to_string();
    assert!(out.contains(&lookup_digest), "doctor prints the digest to pin: {out}");

    let (code, out, _) = run(&["tools", "pin", h]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 manifests updated"), "{out}");
    let yaml = fs::read_to_string(dir.join("tools/lookup.yaml")).unwrap();
    let expected_yaml = YAML_TOOL.replace(
        "spec:\n    # reached natively\n",
        &format!("spec:\n    # reached natively\n    definition_digest: \"{lookup_digest}\"\n"),
    );
    assert_eq!(yaml, expected_yaml);
    let json = fs::read_to_string(dir.join("tools/search.json")).unwrap();
    let expected_json =
        JSON_TOOL.replace("\t\t\"handler\"", &format!("\t\t\"definition_digest\": \"{search_digest}\",\n\t\t\"handler\""));
    assert_eq!(json, expected_json);
    serde_json::from_str::<serde_json::Value>(&json).unwrap();

    let (code, out, _) = run(&["tools", "pin", h]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing changed"), "{out}");
    assert_eq!(fs::read_to_string(dir.join("tools/lookup.yaml")).unwrap(), expected_yaml);
    assert_eq!(fs::read_to_string(dir.join("tools/search.json")).unwrap(), expected_json);

    let (code, out, _) = run(&["doctor", h]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("warning"), "{out}");
}

#[test]
fn mismatched_pin_fails_doctor_and_pin_replaces_it_in_place() {
    let stale = format!("sha256:{}", "a".repeat(64));
    let text = YAML_TOOL.replace("    transport: native\n", &format!("    transport: native\n    definition_digest: '{stale}'  # reviewed\n"));
    let dir = dir_with(&[("harness.yaml", HARNESS), ("tools/lookup.yaml", &text)]);
    fs::write(dir.join("harness.yaml"), "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n").unwrap();
    let h = dir.join("harness.yaml");
    let hs = h.to_str().unwrap();
    assert_eq!(Harness::load(&h).unwrap().tools()[0].pin(), PinState::Mismatched);
    let (code, out, _) = run(&["doctor", hs]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("digest_mismatch"), "{out}");

    let (code, out, _) = run(&["tools", "pin", hs, "--tool", "lookup"]);
    assert_eq!(code, 0, "{out}");
    let digest = Harness::load(&h).unwrap().tools()[0].digest().to_string();
    let after = fs::read_to_string(dir.join("tools/lookup.yaml")).unwrap();
    assert_eq!(after, text.replace(&format!("'{stale}'"), &format!("\"{digest}\"")));
    assert_eq!(run(&["doctor", hs]).0, 0);
}

#[test]
fn pin_one_tool_only() {
    let dir = shop();
    let h = dir.join("harness.yaml");
    let (code, out, _) = run(&["tools", "pin", h.to_str().unwrap(), "--tool=search"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fs::read_to_string(dir.join("tools/lookup.yaml")).unwrap(), YAML_TOOL);
    let loaded = Harness::load(&h).unwrap();
    assert_eq!(loaded.tool("search").unwrap().pin(), PinState::Pinned);
    assert_eq!(loaded.tool("lookup").unwrap().pin(), PinState::Unpinned);
    let (code, _, err) = run(&["tools", "pin", h.to_str().unwrap(), "--tool", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("`nope`"), "{err}");
}

#[test]
fn doctor_reports_every_problem_with_its_place() {
    let dir = dir_with(&[
        ("harness.yaml", HARNESS.replace("spec:\n", "spec:\n  mode: staging\n").as_str()),
        ("tools/a.yaml", "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: a}\nspec:\n  handler: \"a:b\"\n  timeout: 10\n"),
        ("tools/b.json", "{\"apiVersion\": \"harnessweaver/v1\", \"kind\": \"Tool\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"handler\": \"x:y\"}}"),
    ]);
    let h = dir.join("harness.yaml");
    let (code, out, _) = run(&["doctor", h.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let shown = dir.display().to_string();
    assert!(out.contains(&format!("{shown}/harness.yaml:4:9: spec.mode:")), "{out}");
    assert!(out.contains(&format!("{shown}/tools/a.yaml:6:12: spec.timeout:")), "{out}");
    assert!(out.contains("[invalid_duration]") && out.contains("[duplicate_tool]"), "{out}");
    assert!(out.contains("3 problems"), "{out}");
    // Pinning refuses to touch anything while there are problems.
    let (code, out, _) = run(&["tools", "pin", h.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn usage_errors_and_help() {
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["frobnicate"]).0, 2);
    assert_eq!(run(&["doctor", "--strict"]).0, 2);
    assert_eq!(run(&["doctor", "a.yaml", "b.yaml"]).0, 2);
    assert_eq!(run(&["tools"]).0, 2);
    assert_eq!(run(&["tools", "pin", "--tool"]).0, 2);
    for args in [&["--help"][..], &["doctor", "--help"], &["tools", "pin", "--help"], &["tools", "--help"]] {
        let (code, out, _) = run(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(out.starts_with("usage: harnessweaver"), "{out}");
    }
    let dir = shop();
    let (code, out, _) = run(&["doctor", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("{}/tools/lookup.yaml", dir.display())), "a directory means its harness.yaml: {out}");
    let (code, out, _) = run(&["doctor", "/nonexistent/harness.yaml"]);
    assert_eq!(code, 1);
    assert!(out.contains("[io_error]"), "{out}");
}

#[test]
fn the_binary_exits_with_the_same_codes() {
    let bin = env!("CARGO_BIN_EXE_harnessweaver");
    let dir = shop();
    let status = Command::new(bin).args(["doctor"]).current_dir(&dir).status().unwrap();
    assert_eq!(status.code(), Some(0), "doctor defaults to ./harness.yaml");
    let out = Command::new(bin).args(["tools", "pin"]).current_dir(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let again = Command::new(bin).args(["tools", "pin"]).current_dir(&dir).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing changed"));
    assert_eq!(Command::new(bin).arg("nope").status().unwrap().code(), Some(2));
    let empty = dir_with(&[("x", "")]);
    assert_eq!(Command::new(bin).arg("doctor").current_dir(&empty).output().unwrap().status.code(), Some(1));
}

#[test]
fn explain_prints_each_step_and_exits_by_decision() {
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop");
    let shop = shop.to_str().unwrap();
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = harnessweaver_core::cli::run_with(&args, &mut out, &mut err);
        (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    };
    let args = r#"{"order_id": "A-1234", "amount_usd": 250}"#;
    let (code, out, _) = run(&["explain", "refund_payment", "--harness", shop, "--args", args, "--principal", r#"{"id": "s", "roles": ["support"], "scopes": ["payments:refund"]}"#]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("4. policy    refuse [policy_denied]") && out.contains("policy rule `support-may-not-refund`"), "{out}");
    let (code, out, _) = run(&["explain", "refund_payment", "--harness", shop, "--args", args, "--principal", r#"{"id": "f", "roles": ["finance"], "scopes": ["payments:refund"]}"#, "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["decision"].as_str(), v["step"].as_str()), (Some("pending"), Some("approval")));
    assert_eq!(v["steps"].as_array().unwrap().len(), 7);
    let (code, out, _) = run(&["explain", "search_catalog", "--harness", shop, "--args", r#"{"query": "shoes"}"#]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8. invoke    skip"), "{out}");
    let (code, _, err) = run(&["explain", "x", "--args", "{nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("`--args` is not JSON"), "{err}");
}
