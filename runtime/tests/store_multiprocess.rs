//! Several OS processes (the `harnessweaver` binary's hidden `_stress-limit`
//! worker) hammer one per-tenant limit through the full governor, sharing a
//! SQLite file or a real Redis: exactly `count` calls are allowed in the
//! window, none is lost to a store error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod support;

use std::process::Command;

use serde_json::Value;
use support::{scratch_dir, write_harness, RedisServer};

const WORKERS: usize = 4;
const CALLS: u64 = 60;
const COUNT: u64 = 50;

fn hammer(harness: &std::path::Path) -> Vec<Value> {
    // Start together, once every worker has loaded.
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64 + 1_500;
    let children: Vec<_> = (0..WORKERS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
                .args(["_stress-limit", "--harness"])
                .arg(harness)
                .args(["--tool", "ping", "--calls", &CALLS.to_string(), "--tenant", "acme"])
                .args(["--principal", &format!("worker-{i}"), "--start-at-ms", &start.to_string()])
                .output()
                .map(|o| (i, o))
        })
        .map(|r| r.unwrap())
        .collect::<Vec<_>>();
    children
        .into_iter()
        .map(|(i, out)| {
            assert!(out.status.success(), "worker {i}: {}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect()
}

fn check(results: &[Value]) {
    let sum = |k: &str| results.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("allowed"), COUNT, "{results:?}");
    assert_eq!(sum("rate_limited"), WORKERS as u64 * CALLS - COUNT, "{results:?}");
    assert_eq!(sum("store_unavailable") + sum("other"), 0, "{results:?}");
}

#[test]
fn sqlite_processes_share_one_limit_exactly() {
    let dir = scratch_dir("mp-sqlite");
    let path = write_harness(&dir, "mp", "sqlite:state.db", &format!("{COUNT}/h"), "");
    check(&hammer(&path));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_processes_share_one_limit_exactly() {
    let server = RedisServer::start();
    let dir = scratch_dir("mp-redis");
    let path = write_harness(&dir, "mp", &server.url(), &format!("{COUNT}/h"), "");
    let results = hammer(&path);
    check(&results);
    // Round trips per governed call (labels, the rate-limit script, labels for the result).
    let rt: u64 = results.iter().map(|r| r["round_trips"].as_u64().unwrap()).sum();
    eprintln!("redis: {rt} round trips for {} calls", WORKERS as u64 * CALLS);
    // One per governed call, plus per worker its connection and the first
    // sight of the script (EVALSHA answered NOSCRIPT, then EVAL).
    assert!(rt <= WORKERS as u64 * (CALLS + 2), "{rt}");
    let _ = std::fs::remove_dir_all(dir);
}
