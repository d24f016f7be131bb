//! The Redis store behind a Sentinel-managed primary and on a Redis Cluster,
//! both started here from `redis-server` on free ports of 127.0.0.1 (a
//! sentinel is `redis-server --sentinel`; the cluster is three primaries
//! joined with `redis-cli --cluster create`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harnessweaver_core::store::{Acquire, ApprovalState, Labels, Rate, RateKey, Store};
use harnessweaver_runtime::store::{RedisClock, RedisOptions, RedisStore};
use support::{scratch_dir, RedisServer};

struct Killed(Vec<Child>);
impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "{what} did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn redis_server(dir: &Path, args: &[&str]) -> Child {
    Command::new("redis-server").args(args).arg("--dir").arg(dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

/// Limits, labels and approvals work the same through this store.
fn exercise(s: &RedisStore) {
    let keys = [
        RateKey { key: "rl/ping/principal/alice".into(), rate: Rate { count: 3, period_ms: 60_000 } },
        RateKey { key: "rl/ping/tenant/acme".into(), rate: Rate { count: 10, period_ms: 60_000 } },
    ];
    for _ in 0..3 {
        assert_eq!(s.acquire_with_labels(&keys, 1_000, "run-1").unwrap().0, Acquire::Allowed);
    }
    assert_eq!(s.acquire(&keys, 1_000).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 20_000 });
    assert_eq!(s.add_labels("run-1", Labels { private: true, untrusted: false }).unwrap(), Labels { private: true, untrusted: false });
    assert_eq!(s.acquire_with_labels(&keys[1..], 1_000, "run-1").unwrap(), (Acquire::Allowed, Some(Labels { private: true, untrusted: false })));
    let approval: harnessweaver_core::store::PendingApproval = serde_json::from_value(serde_json::json!({
        "id": "apr-1", "tool": "ping", "args": {}, "args_digest": "sha256:0", "principal": {"id": "alice"},
        "tenant": null, "task": null, "run_id": "run-1", "approver_role": null, "reasons": [],
        "created_ms": 1_000, "expires_ms": 2_000, "state": "pending", "decided_by": null, "note": null
    }))
    .unwrap();
    s.put_approval(&approval).unwrap();
    assert_eq!(s.open_approvals().unwrap().len(), 1);
    assert!(s.transition("apr-1", ApprovalState::Pending, ApprovalState::Approved, Some("bob"), None).unwrap());
    assert!(!s.transition("apr-1", ApprovalState::Pending, ApprovalState::Approved, Some("bob"), None).unwrap());
}

fn options(ns: &str) -> RedisOptions {
    RedisOptions { namespace: ns.into(), clock: RedisClock::Caller, timeout: Duration::from_secs(2), ..RedisOptions::default() }
}

#[test]
fn sentinel_managed_primary() {
    let primary = RedisServer::start();
    let dir = scratch_dir("sentinel");
    let port = free_port();
    let conf = dir.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\nsentinel monitor hwprimary 127.0.0.1 {} 1\nsentinel down-after-milliseconds hwprimary 5000\n",
            primary.port
        ),
    )
    .unwrap();
    let sentinel = Command::new("redis-server").arg(&conf).arg("--sentinel").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let _guard = Killed(vec![sentinel]);
    wait_for("the sentinel", || {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg("hwprimary").query::<Vec<String>>(&mut c))
            .is_ok_and(|addr| addr.len() == 2)
    });
    let store = RedisStore::open(&format!("redis+sentinel://127.0.0.1:{port}/hwprimary"), options("sentinel")).unwrap();
    exercise(&store);
    // The keys are on the primary the sentinel named.
    let keys: Vec<String> = redis::cmd("KEYS").arg("hw:{sentinel}:*").query(&mut primary.conn()).unwrap();
    assert!(keys.len() >= 3, "{keys:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_cluster() {
    let dir = scratch_dir("cluster");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes: Vec<Child> = ports
        .iter()
        .map(|p| {
            let node_dir = dir.join(p.to_string());
            std::fs::create_dir_all(&node_dir).unwrap();
            redis_server(
                &node_dir,
                &["--port", &p.to_string(), "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--save", "", "--appendonly", "no"],
            )
        })
        .collect();
    let _guard = Killed(nodes);
    for p in &ports {
        wait_for("a cluster node", || {
            redis::Client::open(format!("redis://127.0.0.1:{p}/"))
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
        });
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addrs)
        .arg("--cluster-yes")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(created.success(), "redis-cli --cluster create failed");
    wait_for("the cluster", || {
        ports.iter().all(|p| {
            redis::Client::open(format!("redis://127.0.0.1:{p}/"))
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        })
    });
    let url = format!("redis+cluster://{}", addrs.join(","));
    // Two harnesses: their keys hash to different slots, each harness's keys to one.
    for ns in ["shop", "payments"] {
        let store = RedisStore::open(&url, options(ns)).unwrap();
        exercise(&store);
    }
    let _ = std::fs::remove_dir_all(dir);
}
