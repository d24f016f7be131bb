//! Issue 21: effects that survive crashes. A worker process (the
//! `harnessweaver` binary's hidden `_effect-call`) makes one governed call
//! of an external-write process tool; the tool writes its idempotency key to
//! a ledger and holds. The test kills the worker with `kill -9` (SIGKILL)
//! between the journal's intent and its outcome, then retries the same call
//! in a new worker, on a SQLite journal and on a Redis journal: nothing is
//! written twice, in each retry mode, and the journal says why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{scratch_dir, RedisServer};

/// The tool's handler: `hold_before` holds before writing, `hold_after`
/// after; each writes its pid and a marker file first. With `dedup` a key
/// already in the ledger is not written again (what an idempotent service
/// does).
const CHARGE: &str = r#"import json, os, sys, time
req = json.load(sys.stdin)
key = req["idempotency_key"]
def hold(stage):
    if os.path.exists("hold_" + stage):
        open("pid", "w").write(str(os.getpid()))
        open("at_" + stage, "w").write(key)
        time.sleep(120)
hold("before")
seen = open("ledger.txt").read().split() if os.path.exists("ledger.txt") else []
written = not ("dedup" in sys.argv[1:] and key in seen)
if written:
    with open("ledger.txt", "a") as f:
        f.write(key + "\n")
        f.flush()
        os.fsync(f.fileno())
hold("after")
print(json.dumps({"ok": True, "output": {"written": written}}))
"#;

/// The reconcile tool: did the write of this key happen?
const CHECK: &str = r#"import json, os, sys
req = json.load(sys.stdin)
key = req["args"]["idempotency_key"]
seen = open("ledger.txt").read().split() if os.path.exists("ledger.txt") else []
print(json.dumps({"ok": True, "output": {"applied": key in seen}}))
"#;

fn write_harness(dir: &Path, journal: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("charge.py"), CHARGE).unwrap();
    std::fs::write(dir.join("check.py"), CHECK).unwrap();
    let name = dir.file_name().unwrap().to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    std::fs::write(
        dir.join("harness.yaml"),
        format!(
            "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {{ name: {name} }}\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  effects:\n    journal: \"{journal}\"\n"
        ),
    )
    .unwrap();
    let tool = |name: &str, extra_arg: &str, effect: &str| {
        format!(
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{ name: {name} }}\nspec:\n  transport: process\n  command: /usr/bin/python3\n  args: [charge.py{extra_arg}]\n  description: Charges.\n  timeout: 200s\n  side_effect: write_external\n  effect: {effect}\n"
        )
    };
    let tools = [
        ("once.yaml", tool("charge_once", "", "{ kind: external_write, retry_mode: none }")),
        ("idem.yaml", tool("charge_idem", ", dedup", "{ kind: external_write, retry_mode: idempotency_key }")),
        ("rec.yaml", tool("charge_rec", "", "{ kind: external_write, retry_mode: reconcile, reconcile: check_charge }")),
        (
            "check.yaml",
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: check_charge }\nspec:\n  transport: process\n  command: /usr/bin/python3\n  args: [check.py]\n  description: Says whether a charge happened.\n  side_effect: read\n  output: { label: trusted }\n".to_string(),
        ),
    ];
    for (file, text) in tools {
        std::fs::write(dir.join("tools").join(file), text).unwrap();
    }
    dir.join("harness.yaml")
}

fn worker(harness: &Path, tool: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harnessweaver"));
    c.args(["_effect-call", "--harness"]).arg(harness).args(["--tool", tool, "--args", r#"{"amount": 7}"#, "--principal", "alice"]);
    c
}

/// One call in a worker that runs to its end: the result.
fn call(harness: &Path, tool: &str) -> Value {
    let out = worker(harness, tool).output().unwrap();
    assert!(out.status.success(), "worker: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts the call in a worker, waits until the handler holds at `stage`
/// (`before` or `after` its write), and kills the worker with SIGKILL, then
/// the held handler (its own process group, so it outlived its host).
fn crash_during(harness: &Path, tool: &str, stage: &str) {
    let dir = harness.parent().unwrap();
    let hold = dir.join(format!("hold_{stage}"));
    let marker = dir.join(format!("at_{stage}"));
    std::fs::write(&hold, "").unwrap();
    let mut child = worker(harness, tool).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the handler of `{tool}` never reached `{stage}`");
        assert!(child.try_wait().unwrap().is_none(), "the worker ended before the handler held");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Child::kill sends SIGKILL on Unix: no destructor, no outcome recorded.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "the worker died of SIGKILL");
    let pid = std::fs::read_to_string(dir.join("pid")).unwrap();
    let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    for f in [hold, marker, dir.join("pid")] {
        std::fs::remove_file(f).unwrap();
    }
}

fn ledger_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("ledger.txt")).unwrap_or_default().lines().map(str::to_string).collect()
}

/// The journal's entries of `tool`, through the `effects list` command.
fn journal_states(harness: &Path, tool: &str) -> Vec<(String, Option<String>)> {
    let out = Command::new(env!("CARGO_BIN_EXE_harnessweaver")).args(["effects", "list", "--json", "--harness"]).arg(harness).output().unwrap();
    assert!(out.status.success(), "effects list: {}", String::from_utf8_lossy(&out.stderr));
    let entries: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    entries
        .iter()
        .filter(|e| e["tool"] == tool)
        .map(|e| (e["state"].as_str().unwrap().to_string(), e["resolution"].as_str().map(str::to_string)))
        .collect()
}

fn pair(state: &str, resolution: Option<&str>) -> (String, Option<String>) {
    (state.to_string(), resolution.map(str::to_string))
}

/// Every retry mode against a crash between intent and outcome.
fn crash_then_retry(harness: &Path) {
    let dir = harness.parent().unwrap();

    // retry_mode none: written once by the crashed attempt; the retry is
    // refused until someone resolves the entry, and the ledger keeps one line.
    crash_during(harness, "charge_once", "after");
    assert_eq!(ledger_lines(dir).len(), 1);
    assert_eq!(journal_states(harness, "charge_once"), [pair("unknown", None)]);
    let retry = call(harness, "charge_once");
    assert_eq!((retry["decision"].as_str(), retry["code"].as_str()), (Some("refused"), Some("effect_unknown")), "{retry}");
    assert_eq!(ledger_lines(dir).len(), 1, "a non-idempotent write happened twice");
    // Resolved by hand as applied (from another process): the entry is known.
    let crashed_id = {
        let out = Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
            .args(["effects", "list", "--json", "--state", "unknown", "--harness"])
            .arg(harness)
            .output()
            .unwrap();
        let entries: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        entries[0]["call_id"].as_str().unwrap().to_string()
    };
    let resolved = Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
        .args(["effects", "resolve", &crashed_id, "--applied", "--by", "ops", "--harness"])
        .arg(harness)
        .output()
        .unwrap();
    assert!(resolved.status.success(), "{}", String::from_utf8_lossy(&resolved.stderr));
    assert_eq!(journal_states(harness, "charge_once"), [pair("succeeded", Some("manual"))]);
    std::fs::remove_file(dir.join("ledger.txt")).unwrap();

    // retry_mode idempotency_key: the retry goes through with the same key;
    // the handler sees the key and does not write again.
    crash_during(harness, "charge_idem", "after");
    let retry = call(harness, "charge_idem");
    assert_eq!(retry["decision"], "allowed", "{retry}");
    assert_eq!(retry["output"]["written"], false, "{retry}");
    let lines = ledger_lines(dir);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(journal_states(harness, "charge_idem"), [pair("unknown", None), pair("succeeded", Some("outcome"))]);
    std::fs::remove_file(dir.join("ledger.txt")).unwrap();

    // retry_mode reconcile, crashed after the write: the reconcile tool says
    // it happened, the retry is not made (`effect_applied`).
    crash_during(harness, "charge_rec", "after");
    let retry = call(harness, "charge_rec");
    assert_eq!((retry["decision"].as_str(), retry["code"].as_str()), (Some("refused"), Some("effect_applied")), "{retry}");
    assert_eq!(ledger_lines(dir).len(), 1);
    assert_eq!(journal_states(harness, "charge_rec"), [pair("succeeded", Some("reconciled"))]);
    std::fs::remove_file(dir.join("ledger.txt")).unwrap();

    // retry_mode reconcile, crashed before the write: the reconcile tool says
    // it did not happen, and the retry writes it, once.
    crash_during(harness, "charge_rec", "before");
    assert!(ledger_lines(dir).is_empty());
    let states = journal_states(harness, "charge_rec");
    assert_eq!(states.last(), Some(&pair("unknown", None)), "{states:?}");
    let retry = call(harness, "charge_rec");
    assert_eq!(retry["decision"], "allowed", "{retry}");
    assert_eq!(ledger_lines(dir).len(), 1);
    let states = journal_states(harness, "charge_rec");
    assert_eq!(&states[states.len() - 2..], [pair("failed", Some("reconciled")), pair("succeeded", Some("outcome"))]);
}

#[test]
fn sqlite_journal_survives_kill_9_between_intent_and_outcome() {
    let dir = scratch_dir("effects-sqlite");
    let harness = write_harness(&dir, "sqlite:effects.db");
    crash_then_retry(&harness);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_journal_survives_kill_9_between_intent_and_outcome() {
    let server = RedisServer::start();
    let dir = scratch_dir("effects-redis");
    let harness = write_harness(&dir, &server.url());
    crash_then_retry(&harness);
    let _ = std::fs::remove_dir_all(dir);
}
