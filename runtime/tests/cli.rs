//! The `harnessweaver` command line: `doctor` and `tools pin` (exit codes,
//! output, pinning that edits only the digest line), `tools list|show|add`,
//! `audit tail`, `--json` and `--help` on every command, colour only on a
//! terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessweaver_core::governor::Governor;
use harnessweaver_core::{CallContext, Harness, PinState, Principal};
use harnessweaver_runtime::cli::run_with;
use serde_json::{json, Value};

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
    let expected_yaml =
        YAML_TOOL.replace("spec:\n    # reached natively\n", &format!("spec:\n    # reached natively\n    definition_digest: \"{lookup_digest}\"\n"));
    assert_eq!(yaml, expected_yaml);
    let json = fs::read_to_string(dir.join("tools/search.json")).unwrap();
    let expected_json = JSON_TOOL.replace("\t\t\"handler\"", &format!("\t\t\"definition_digest\": \"{search_digest}\",\n\t\t\"handler\""));
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
        (
            "tools/b.json",
            "{\"apiVersion\": \"harnessweaver/v1\", \"kind\": \"Tool\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"handler\": \"x:y\"}}",
        ),
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
        let code = harnessweaver_runtime::cli::run_with(&args, &mut out, &mut err);
        (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    };
    let args = r#"{"order_id": "A-1234", "amount_usd": 250}"#;
    let (code, out, _) = run(&[
        "explain",
        "refund_payment",
        "--harness",
        shop,
        "--args",
        args,
        "--principal",
        r#"{"id": "s", "roles": ["support"], "scopes": ["payments:refund"]}"#,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("4. policy    refuse [policy_denied]") && out.contains("policy rule `support-may-not-refund`"), "{out}");
    let (code, out, _) = run(&[
        "explain",
        "refund_payment",
        "--harness",
        shop,
        "--args",
        args,
        "--principal",
        r#"{"id": "f", "roles": ["finance"], "scopes": ["payments:refund"]}"#,
        "--json",
    ]);
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

/// The shop example (examples/shop).
fn example_shop() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop").to_str().unwrap().to_string()
}

#[test]
fn tools_list_is_a_table_and_json() {
    let shop = example_shop();
    let (code, out, _) = run(&["tools", "list", &shop]);
    assert_eq!(code, 0, "{out}");
    let header = out.lines().next().unwrap();
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["NAME", "TRANSPORT", "RISK", "SIDE", "EFFECT", "PIN"]);
    let row = out.lines().find(|l| l.starts_with("refund_payment ")).unwrap();
    assert_eq!(row.split_whitespace().collect::<Vec<_>>(), ["refund_payment", "native", "high", "write_external", "pinned"]);
    assert!(!out.contains('\x1b'), "never coloured when not a terminal");
    let (code, out, _) = run(&["tools", "list", &shop, "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let h = Harness::load(PathBuf::from(&shop).join("harness.yaml")).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), h.tools().len());
    let notify = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "notify_customer").unwrap();
    let t = h.tool("notify_customer").unwrap();
    assert_eq!(notify["transport"], "http");
    assert_eq!(notify["pin"], t.pin().as_str());
    assert_eq!(notify["digest"], t.digest());
}

#[test]
fn tools_show_prints_the_resolved_manifest() {
    let shop = example_shop();
    let (code, out, _) = run(&["tools", "show", "lookup_order", "--harness", &shop]);
    assert_eq!(code, 0, "{out}");
    let h = Harness::load(PathBuf::from(&shop).join("harness.yaml")).unwrap();
    let t = h.tool("lookup_order").unwrap();
    assert!(out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["digest:", t.digest()]), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pin:", "pinned"]), "{out}");
    assert!(out.contains("\"order_id\""), "the schema is printed: {out}");
    let (code, out, _) = run(&["tools", "show", "lookup_order", "--harness", &shop, "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["input_schema"], t.manifest().input_schema);
    assert_eq!(v["timeout_ms"], 5000);
    assert!(v["file"].as_str().unwrap().ends_with("tools/lookup_order.yaml"));
    let (code, _, err) = run(&["tools", "show", "nope", "--harness", &shop]);
    assert_eq!(code, 2);
    assert!(err.contains("`nope`"), "{err}");
}

const TOOL: &str = "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: ping}\nspec:\n  handler: \"m:ping\"\n  description: Ping.\n  input_schema: {type: object, properties: {n: {type: integer}}}\n";

#[test]
fn tools_add_edits_the_harness_and_pins() {
    let harness = "# my harness\napiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests:\n      - tools/*.yaml   # the old ones\n  audit: {sink: none}\n";
    let dir = dir_with(&[("harness.yaml", harness), ("tools/a.yaml", &TOOL.replace("ping", "a")), ("more/ping.yaml", TOOL)]);
    let h = dir.join("harness.yaml");
    let (code, out, err) = run(&["tools", "add", dir.join("more/ping.yaml").to_str().unwrap(), "--harness", h.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        fs::read_to_string(&h).unwrap(),
        harness.replace("# the old ones\n", "# the old ones\n      - \"more/*.yaml\"\n"),
        "one line added, comments kept"
    );
    let loaded = Harness::load(&h).unwrap();
    assert_eq!(loaded.tool("ping").unwrap().pin(), PinState::Pinned);
    assert_eq!(loaded.tool("a").unwrap().pin(), PinState::Unpinned, "only the added tool is pinned");
    // Again: nothing changes.
    let before = fs::read_to_string(&h).unwrap();
    let (code, out, _) = run(&["tools", "add", dir.join("more/ping.yaml").to_str().unwrap(), "--harness", h.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["harness_changed"].as_bool(), v["glob"].as_str(), v["tool"].as_str()), (Some(false), Some("more/*.yaml"), Some("ping")));
    assert_eq!(fs::read_to_string(&h).unwrap(), before);

    // A manifest that would clash (a duplicate name) leaves harness.yaml as it was.
    fs::create_dir_all(dir.join("dup")).unwrap();
    fs::write(dir.join("dup/ping.yaml"), TOOL).unwrap();
    let (code, out, _) = run(&["tools", "add", dir.join("dup/ping.yaml").to_str().unwrap(), "--harness", h.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[duplicate_tool]"), "{out}");
    assert_eq!(fs::read_to_string(&h).unwrap(), before);

    // A broken manifest: its problems point into it (file:line:column).
    fs::write(dir.join("more/bad.yaml"), "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: bad}\nspec:\n  timeout: 10\n").unwrap();
    let (code, out, _) = run(&["tools", "add", dir.join("more/bad.yaml").to_str().unwrap(), "--harness", h.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("bad.yaml:5:12: spec.timeout:"), "{out}");

    // No harness.yaml yet: one is written.
    let fresh = dir_with(&[("tools/ping.yaml", TOOL)]);
    let (code, out, _) = run(&["tools", "add", fresh.join("tools/ping.yaml").to_str().unwrap(), "--harness", fresh.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(Harness::load(fresh.join("harness.yaml")).unwrap().tool("ping").unwrap().pin(), PinState::Pinned);
    // Outside the harness directory: refused.
    let (code, out, _) = run(&["tools", "add", dir.join("more/ping.yaml").to_str().unwrap(), "--harness", fresh.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("not inside the harness directory"), "{out}");
}

fn audited(sink: &str) -> (PathBuf, Governor) {
    let harness =
        format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n  audit: {{sink: \"{sink}\"}}\n");
    let dir = dir_with(&[("harness.yaml", &harness), ("tools/ping.yaml", TOOL)]);
    let h = Harness::load(dir.join("harness.yaml")).unwrap();
    let g = Governor::from_harness(&h, harnessweaver_runtime::governor_options()).unwrap();
    (dir, g)
}

fn call(g: &Governor, who: &str, args: Value) {
    let ctx = CallContext { principal: Principal::new(who), ..CallContext::default() };
    let handler: harnessweaver_core::governor::Handler = std::sync::Arc::new(|_, _| Ok(json!("pong")));
    let handlers = std::collections::HashMap::from([("ping".to_string(), handler)]);
    let _ = g.call("ping", args, &ctx, &handlers);
}

#[test]
fn audit_tail_reads_jsonl_and_sqlite() {
    for sink in ["audit/events.jsonl", "sqlite:audit.db"] {
        let (dir, g) = audited(sink);
        let d = dir.to_str().unwrap();
        let (code, out, _) = run(&["audit", "tail", d]);
        assert_eq!(code, 0, "{sink}: {out}");
        assert!(out.contains("no audit events yet"), "{sink}: {out}");
        for i in 0..12 {
            call(&g, &format!("p{i}"), json!({"n": "not a number"}));
        }
        let (code, out, _) = run(&["audit", "tail", d]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out.lines().count(), 10, "{sink}: {out}");
        assert!(out.lines().last().unwrap().contains("principal=p11") && out.lines().next().unwrap().contains("principal=p2"), "{out}");
        assert!(out.contains("refused") && out.contains("[invalid_args at validate]"), "{sink}: {out}");
        let (code, out, _) = run(&["audit", "tail", d, "-n", "3", "--json"]);
        assert_eq!(code, 0);
        let events: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(events.len(), 3);
        assert_eq!((events[2]["principal"].as_str(), events[2]["code"].as_str()), (Some("p11"), Some("invalid_args")));
    }
    // A line that is not an event is reported with its file and line, and skipped.
    let (dir, g) = audited("events.jsonl");
    call(&g, "p0", json!({"n": 1}));
    fs::OpenOptions::new().append(true).open(dir.join("events.jsonl")).unwrap().write_all(b"{not json\n").unwrap();
    call(&g, "p1", json!({"n": 1}));
    let (code, out, err) = run(&["audit", "tail", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("events.jsonl:2: not an audit event"), "{err}");
    let (dir, _) = audited("none");
    let (code, _, err) = run(&["audit", "tail", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("keeps no audit trail") && err.contains("[no_audit_sink]"), "{err}");
    let (code, out, _) = run(&["audit", "tail", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["problems"][0]["code"], "no_audit_sink");
    assert_eq!(run(&["audit", "tail", "-n", "x"]).0, 2);
    assert_eq!(run(&["audit"]).0, 2);
}

#[test]
fn audit_tail_follow_prints_new_events() {
    for sink in ["audit.jsonl", "sqlite:audit.db"] {
        let (dir, g) = audited(sink);
        call(&g, "before", json!({"n": 1}));
        let mut child = Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
            .args(["audit", "tail", "--follow", "--json", "-n", "1"])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // A watchdog, so a broken --follow fails the test instead of hanging it.
        let pid = child.id();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(std::time::Duration::from_secs(120)) {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(first["principal"], "before", "{sink}");
        call(&g, "after", json!({"n": 2}));
        call(&g, "later", json!({"n": "bad"}));
        for (who, decision) in [("after", "allowed"), ("later", "refused")] {
            let next: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!((next["principal"].as_str(), next["decision"].as_str()), (Some(who), Some(decision)), "{sink}");
        }
        drop(done);
        watchdog.join().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn every_command_has_help_and_usage_errors() {
    for args in [
        &["doctor", "--help"][..],
        &["tools", "list", "--help"],
        &["tools", "show", "--help"],
        &["tools", "pin", "-h"],
        &["tools", "add", "--help"],
        &["explain", "--help"],
        &["audit", "tail", "--help"],
        &["audit", "--help"],
        &["tools", "--help"],
        &["effects", "list", "--help"],
        &["effects", "resolve", "--help"],
        &["effects", "compensate", "--help"],
        &["lock", "--help"],
        &["lock", "verify", "--help"],
        &["--help"],
    ] {
        let (code, out, _) = run(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(out.starts_with("usage: harnessweaver"), "{args:?}: {out}");
        assert!(out.contains("exit codes: 0"), "{args:?}: {out}");
    }
    for args in [
        &["tools", "show"][..],
        &["tools", "list", "a", "b"],
        &["tools", "frob"],
        &["explain"],
        &["audit", "tail", "--bogus"],
        &["tools", "add"],
        &["effects", "frob"],
        &["effects", "resolve", "call-1"],
        &["lock", "--bogus"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains("usage: harnessweaver"), "{args:?}: {err}");
    }
    let (code, _, err) = run(&["add", "tool", "m:f"]);
    assert_eq!(code, 3);
    assert!(err.contains("Python package"), "{err}");
}

#[test]
fn doctor_and_pin_print_json() {
    let dir = shop();
    let d = dir.to_str().unwrap();
    let (code, out, _) = run(&["doctor", d, "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["ok"].as_bool(), v["unpinned"].as_u64(), v["tools"].as_array().map(Vec::len)), (Some(true), Some(2), Some(2)));
    let (code, out, _) = run(&["tools", "pin", d, "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changed"], 2);
    assert!(v["tools"].as_array().unwrap().iter().all(|t| t["result"] == "pinned"), "{out}");
    let (_, out, _) = run(&["tools", "pin", d, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["changed"].as_u64(), v["tools"][0]["result"].as_str()), (Some(0), Some("unchanged")));
}

#[test]
fn json_problems_carry_file_line_and_column() {
    let dir = dir_with(&[
        ("harness.yaml", "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n"),
        ("tools/a.yaml", "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: a}\nspec:\n  handler: \"a:b\"\n  timeout: 10\n"),
    ]);
    for args in [&["doctor", "--json"][..], &["tools", "list", "--json"], &["tools", "pin", "--json"]] {
        let mut args = args.to_vec();
        args.insert(args.len() - 1, dir.to_str().unwrap());
        let (code, out, _) = run(&args);
        assert_eq!(code, 1, "{args:?}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["ok"], false);
        let p = &v["problems"][0];
        assert_eq!((p["code"].as_str(), p["line"].as_u64(), p["column"].as_u64()), (Some("invalid_duration"), Some(6), Some(12)), "{out}");
        assert!(p["file"].as_str().unwrap().ends_with("tools/a.yaml"));
    }
}

#[test]
fn colour_only_on_a_terminal() {
    // Through a pipe (not a terminal) the binary never colours, even for a table.
    let out = Command::new(env!("CARGO_BIN_EXE_harnessweaver")).args(["tools", "list", &example_shop()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.contains(&0x1b));
    // On a terminal (util-linux `script` gives the binary a pseudo-terminal)
    // it does, unless NO_COLOR is set or --json asked for.
    let on_tty = |extra: &str, no_color: bool| {
        let cmd = format!("{} tools list {} {extra}", env!("CARGO_BIN_EXE_harnessweaver"), example_shop());
        let mut c = Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"]).env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        let out = c.output().expect("util-linux `script` runs the binary on a pseudo-terminal");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let coloured = on_tty("", false);
    assert!(coloured.contains("\x1b[32mpinned\x1b[0m"), "{coloured:?}");
    assert!(!on_tty("", true).contains('\x1b'));
    assert!(!on_tty("--json", false).contains('\x1b'));
    let _ = std::io::stdout().flush();
}

/// Issue 17, item 3: `harnessweaver approvals approve` applies separation of
/// duties: the principal whose call waits cannot approve it, even holding the
/// approver role; another approver can; `approvals.allow_self_approval: true`
/// in the harness lets the caller approve her own call.
#[test]
fn approvals_cli_refuses_self_approval() {
    for allow in [false, true] {
        let harness = format!(
            "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n  state: sqlite:state.db\n  approvals: {{allow_self_approval: {allow}}}\n"
        );
        let tool = "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: pay}\nspec: {handler: \"x:pay\", description: d, approval: {when: \"true\", approver_role: finance}}\n";
        let dir = dir_with(&[("harness.yaml", &harness), ("tools/pay.yaml", tool)]);
        let pay: harnessweaver_core::governor::Handler = std::sync::Arc::new(|_, _| Ok(json!("paid")));
        let options = harnessweaver_core::LoadOptions { handlers: std::collections::HashMap::from([("pay".to_string(), pay)]), ..Default::default() };
        let g = harnessweaver_runtime::load(dir.join("harness.yaml"), options).unwrap();
        let fin = Principal::from_value(&json!({"id": "fin-1", "roles": ["finance"]})).unwrap();
        let ctx = CallContext { principal: fin, ..CallContext::default() };
        let pending = g.call("pay", json!({"usd": 5}), &ctx);
        let id = pending.approval.expect("pending").id;
        let path = dir.join("harness.yaml");
        let harness_arg = path.to_str().unwrap();
        let (code, out, err) =
            run(&["approvals", "approve", &id, "--harness", harness_arg, "--approver", r#"{"id": "fin-1", "roles": ["finance"]}"#]);
        if allow {
            assert_eq!(code, 0, "{out}{err}");
        } else {
            assert_eq!(code, 1, "{out}{err}");
            assert!(format!("{out}{err}").contains("approver_not_allowed"), "{out}{err}");
            let (code, out, err) =
                run(&["approvals", "approve", &id, "--harness", harness_arg, "--approver", r#"{"id": "fin-2", "roles": ["finance"]}"#]);
            assert_eq!(code, 0, "{out}{err}");
        }
    }
}

#[test]
fn issue18_item5_doctor_says_how_to_require_pins_and_require_pins_refuses_unpinned_tools() {
    let dir = shop();
    let h = dir.join("harness.yaml");
    let (code, out, _) = run(&["doctor", h.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("hint: to refuse unpinned tools at load, set `require_pins: true` under `spec.tools:` in harness.yaml"), "{out}");
    // Turned on: each unpinned manifest is a load problem at its place, with the digest to pin.
    fs::write(&h, format!("{HARNESS}    require_pins: true\n")).unwrap();
    let digest = {
        fs::write(dir.join("h2.yaml"), HARNESS).unwrap();
        Harness::load(dir.join("h2.yaml")).unwrap().tool("lookup").unwrap().digest().to_string()
    };
    let (code, out, _) = run(&["doctor", h.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("[unpinned]").count(), 2, "{out}");
    assert!(out.contains(&format!("tools/lookup.yaml:8:5: spec.definition_digest: tool `lookup` is not pinned and the harness requires pins (`spec.tools.require_pins`); add `definition_digest: \"{digest}\"` under `spec:` or run `harnessweaver tools pin`")), "{out}");
    // Pinned, it loads and doctor has nothing to hint.
    assert_eq!(run(&["tools", "pin", h.to_str().unwrap()]).0, 0);
    let (code, out, _) = run(&["doctor", h.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("hint:") && !out.contains("warning"), "{out}");
}
