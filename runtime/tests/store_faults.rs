//! The governor when its store fails: a real Redis stopped mid-run and
//! started again, a SQLite file locked by another connection, a SQLite file
//! that cannot be written. Calls are refused with `store_unavailable` (never
//! allowed uncounted) and go through again once the store is back; a harness
//! may let rate limits fail open instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use harnessweaver_core::governor::Handler;
use harnessweaver_core::{CallContext, CallResult, Decision, LoadOptions, Principal, Runtime};
use serde_json::{json, Value};
use support::{scratch_dir, write_harness, RedisServer};

fn handlers() -> HashMap<String, Handler> {
    let pong: Handler = Arc::new(|_: &Value, _: &str| Ok(json!("pong")));
    HashMap::from([("ping".to_string(), pong)])
}

fn load(path: &Path) -> Runtime {
    harnessweaver_runtime::load(path, LoadOptions { handlers: handlers(), ..LoadOptions::default() }).unwrap()
}

fn call(rt: &Runtime) -> CallResult {
    let ctx = CallContext { principal: Principal::new("alice"), tenant: Some("acme".into()), ..CallContext::default() };
    rt.governor().call("ping", json!({}), &ctx, &handlers())
}

fn code(r: &CallResult) -> &str {
    match r.decision {
        Decision::Allowed => "allowed",
        _ => r.code.map(|c| c.as_str()).unwrap_or("?"),
    }
}

#[test]
fn redis_stopped_mid_run_fails_closed_and_recovers() {
    let mut server = RedisServer::start();
    let dir = scratch_dir("fault-redis");
    let path = write_harness(&dir, "faults", &server.url(), "1000/h", "  state_options: { timeout: 500ms }\n");
    let rt = load(&path);
    for _ in 0..5 {
        assert_eq!(code(&call(&rt)), "allowed");
    }
    server.stop();
    for _ in 0..5 {
        let r = call(&rt);
        assert_eq!(code(&r), "store_unavailable", "{}", r.message);
        assert!(r.message.contains("state store is unavailable"), "{}", r.message);
    }
    server.restart();
    // The first call after the restart reconnects; none is allowed uncounted.
    let results: Vec<String> = (0..5).map(|_| code(&call(&rt)).to_string()).collect();
    assert!(results.iter().all(|c| c == "allowed"), "{results:?}");
    // And the limit is counted again on the new server.
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("hw:{faults}:rl:*").query(&mut c).unwrap();
    assert_eq!(keys.len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_down_rate_limits_may_fail_open_but_budgets_do_not() {
    let mut server = RedisServer::start();
    let dir = scratch_dir("fault-open");
    let open =
        write_harness(&dir.join("open"), "open", &server.url(), "2/h", "  state_options: { rate_limits_on_store_error: open, timeout: 300ms }\n");
    let budgeted = write_harness(
        &dir.join("budget"),
        "budget",
        &server.url(),
        "2/h",
        "  state_options: { rate_limits_on_store_error: open, timeout: 300ms }\n  budgets: { max_tool_calls: 10 }\n",
    );
    let (open, budgeted) = (load(&open), load(&budgeted));
    // While Redis is up the limit holds.
    let up: Vec<String> = (0..3).map(|_| code(&call(&open)).to_string()).collect();
    assert_eq!(up, ["allowed", "allowed", "rate_limited"]);
    server.stop();
    for _ in 0..3 {
        let r = call(&open);
        assert_eq!(code(&r), "allowed", "{:?} {}", r.step, r.message);
        assert_eq!(code(&call(&budgeted)), "store_unavailable");
    }
    server.restart();
    assert_eq!(code(&call(&budgeted)), "allowed");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_locked_fails_closed_and_recovers() {
    let dir = scratch_dir("fault-lock");
    let path = write_harness(&dir, "lock", "sqlite:state/hw.db", "1000/h", "  state_options: { timeout: 200ms }\n");
    let rt = load(&path);
    assert_eq!(code(&call(&rt)), "allowed");
    let other = rusqlite::Connection::open(dir.join("state/hw.db")).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    for _ in 0..3 {
        let r = call(&rt);
        assert_eq!(code(&r), "store_unavailable", "{}", r.message);
        assert!(r.message.contains("locked"), "{}", r.message);
    }
    other.execute_batch("COMMIT").unwrap();
    assert_eq!(code(&call(&rt)), "allowed");
    let _ = std::fs::remove_dir_all(dir);
}

/// Makes `file` unwritable: read-only permissions, and for root (who
/// ignores them) the immutable attribute. Returns how, to undo it.
fn make_unwritable(file: &Path) -> &'static str {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
    if std::fs::OpenOptions::new().append(true).open(file).is_err() {
        return "mode";
    }
    let ok = std::process::Command::new("chattr").arg("+i").arg(file).status().is_ok_and(|s| s.success());
    assert!(ok, "running as root and `chattr +i` failed: cannot make the file read-only");
    assert!(std::fs::OpenOptions::new().append(true).open(file).is_err());
    "chattr"
}

fn make_writable(file: &Path, how: &str) {
    use std::os::unix::fs::PermissionsExt;
    if how == "chattr" {
        assert!(std::process::Command::new("chattr").arg("-i").arg(file).status().unwrap().success());
    }
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn sqlite_read_only_fails_closed_and_recovers() {
    let dir = scratch_dir("fault-ro");
    let path = write_harness(&dir, "ro", "sqlite:hw.db", "1000/h", "  state_options: { timeout: 200ms }\n");
    // Create the file and its tables, then close it (no WAL left behind).
    {
        let rt = load(&path);
        assert_eq!(code(&call(&rt)), "allowed");
    }
    let db = dir.join("hw.db");
    let _ = std::fs::remove_file(dir.join("hw.db-wal"));
    let _ = std::fs::remove_file(dir.join("hw.db-shm"));
    let how = make_unwritable(&db);
    let rt = load(&path);
    let results: Vec<CallResult> = (0..3).map(|_| call(&rt)).collect();
    make_writable(&db, how);
    for r in &results {
        assert_eq!(code(r), "store_unavailable", "{}", r.message);
    }
    assert_eq!(code(&call(&rt)), "allowed");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_state_survives_a_restart_of_the_governor() {
    let dir = scratch_dir("restart");
    let path = write_harness(&dir, "restart", "sqlite:hw.db", "3/h", "");
    {
        let rt = load(&path);
        let got: Vec<String> = (0..2).map(|_| code(&call(&rt)).to_string()).collect();
        assert_eq!(got, ["allowed", "allowed"]);
    }
    let rt = load(&path);
    let got: Vec<String> = (0..2).map(|_| code(&call(&rt)).to_string()).collect();
    assert_eq!(got, ["allowed", "rate_limited"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_audit_sink_writes_rows() {
    let dir = scratch_dir("audit");
    let path = write_harness(&dir, "audit", "sqlite:hw.db", "2/h", "  audit: { sink: \"sqlite:hw.db\" }\n");
    let rt = load(&path);
    for _ in 0..3 {
        call(&rt);
    }
    let conn = rusqlite::Connection::open(dir.join("hw.db")).unwrap();
    let rows: Vec<(String, Option<String>, String)> = conn
        .prepare("SELECT decision, code, event FROM hw_audit ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].0, "allowed");
    assert_eq!((rows[2].0.as_str(), rows[2].1.as_deref()), ("refused", Some("rate_limited")));
    let event: Value = serde_json::from_str(&rows[2].2).unwrap();
    assert_eq!(event["tool"], "ping");
    assert_eq!(event["tenant"], "acme");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn state_options_are_checked_at_load() {
    let dir = scratch_dir("options");
    let path = write_harness(
        &dir,
        "options",
        "memory",
        "2/h",
        "  state_options: { rate_limits_on_store_error: maybe, run_ttl: 3 days, timeout: 5, extra: 1 }\n",
    );
    let e = harnessweaver_core::Harness::load(&path).unwrap_err();
    let codes: Vec<(String, String)> = e.problems().iter().map(|p| (p.code.to_string(), p.path.clone())).collect();
    assert!(codes.contains(&("invalid_value".into(), "spec.state_options.rate_limits_on_store_error".into())), "{codes:?}");
    assert!(codes.contains(&("invalid_duration".into(), "spec.state_options.run_ttl".into())), "{codes:?}");
    assert!(codes.contains(&("wrong_type".into(), "spec.state_options.timeout".into())), "{codes:?}");
    assert!(codes.iter().any(|(c, p)| c == "unknown_field" && p.contains("extra")), "{codes:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn describe_hides_the_redis_password() {
    let dir = scratch_dir("describe");
    let path = write_harness(&dir, "d", "redis://user:hunter2@127.0.0.1:1/0", "2/h", "");
    let h = harnessweaver_core::Harness::load(&path).unwrap();
    let d = h.describe();
    assert_eq!(d["state"], "redis://user:***@127.0.0.1:1/0");
    assert_eq!(d["state_options"]["rate_limits_on_store_error"], "closed");
    let _ = std::fs::remove_dir_all(dir);
}
