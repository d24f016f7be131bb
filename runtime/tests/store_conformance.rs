//! One conformance suite, run against every store backend: memory, SQLite
//! (a file in a scratch directory) and Redis (a real `redis-server` started
//! on a free port for each test, stopped after it).
//!
//! Limits exact at their count, retry-after right, all or nothing across
//! keys, approvals single use under races, labels kept across calls and
//! across a re-opened store, budgets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use harnessweaver_core::store::{Acquire, ApprovalState, Bounded, Budget, Labels, MemoryStore, PendingApproval, Rate, RateKey, Store};
use harnessweaver_runtime::store::{RedisClock, RedisOptions, RedisStore, SqliteOptions, SqliteStore};
use serde_json::json;
use support::{scratch_dir, RedisServer};

/// A backend under test: the store, and how to open it again (a new
/// process would do the same), keeping whatever it needs alive.
struct Backend {
    store: Arc<dyn Store>,
    reopen: Box<dyn Fn() -> Arc<dyn Store>>,
    durable: bool,
    _guard: Box<dyn std::any::Any>,
}

fn memory() -> Backend {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let same = store.clone();
    Backend { store, reopen: Box::new(move || same.clone()), durable: false, _guard: Box::new(()) }
}

struct DirGuard(PathBuf);
impl Drop for DirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sqlite() -> Backend {
    let dir = scratch_dir("sqlite");
    let path = dir.join("state.db");
    let open = move || -> Arc<dyn Store> { Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap()) };
    Backend { store: open(), reopen: Box::new(open), durable: true, _guard: Box::new(DirGuard(dir)) }
}

fn redis() -> Backend {
    let server = RedisServer::start();
    let url = server.url();
    let open = move || -> Arc<dyn Store> {
        let options = RedisOptions { namespace: "conformance".into(), clock: RedisClock::Caller, ..RedisOptions::default() };
        Arc::new(RedisStore::open(&url, options).unwrap())
    };
    Backend { store: open(), reopen: Box::new(open), durable: true, _guard: Box::new(server) }
}

fn key(name: &str, count: u64, period_ms: u64) -> RateKey {
    RateKey { key: name.into(), rate: Rate { count, period_ms } }
}

const T0: u64 = 1_764_000_000_000;

fn limits_exact_at_count(b: &Backend) {
    let s = &b.store;
    let k = [key("rl/ping/tenant/acme", 5, 60_000)];
    for i in 0..5 {
        assert_eq!(s.acquire(&k, T0).unwrap(), Acquire::Allowed, "call {i}");
    }
    assert_eq!(s.acquire(&k, T0).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 12_000 });
    // Another bucket is independent.
    assert_eq!(s.acquire(&[key("rl/ping/tenant/other", 5, 60_000)], T0).unwrap(), Acquire::Allowed);
}

fn retry_after_right(b: &Backend) {
    let s = &b.store;
    let k = [key("k", 3, 60_000)];
    for _ in 0..3 {
        assert_eq!(s.acquire(&k, T0).unwrap(), Acquire::Allowed);
    }
    assert_eq!(s.acquire(&k, T0).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 20_000 });
    assert_eq!(s.acquire(&k, T0 + 19_999).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 1 });
    assert_eq!(s.acquire(&k, T0 + 20_000).unwrap(), Acquire::Allowed);
    assert_eq!(s.acquire(&k, T0 + 20_000).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 20_000 });
    // A period that does not divide: 1000 ms / 3 = 333.333… ms, rounded up.
    let odd = [key("odd", 3, 1_000)];
    for _ in 0..3 {
        assert_eq!(s.acquire(&odd, T0).unwrap(), Acquire::Allowed);
    }
    assert_eq!(s.acquire(&odd, T0).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 334 });
    assert_eq!(s.acquire(&odd, T0 + 333).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 1 });
    assert_eq!(s.acquire(&odd, T0 + 334).unwrap(), Acquire::Allowed);
    // After a full idle period the whole burst is back.
    let later = T0 + 10 * 60_000;
    for _ in 0..3 {
        assert_eq!(s.acquire(&k, later).unwrap(), Acquire::Allowed);
    }
    assert!(matches!(s.acquire(&k, later).unwrap(), Acquire::Limited { .. }));
}

fn all_or_nothing(b: &Backend) {
    let s = &b.store;
    let a = key("a", 5, 1_000);
    let bb = key("b", 1, 1_000);
    assert_eq!(s.acquire(&[a.clone(), bb.clone()], T0).unwrap(), Acquire::Allowed);
    assert!(matches!(s.acquire(&[a.clone(), bb.clone()], T0).unwrap(), Acquire::Limited { index: 1, .. }));
    for _ in 0..4 {
        assert_eq!(s.acquire(std::slice::from_ref(&a), T0).unwrap(), Acquire::Allowed);
    }
    assert!(matches!(s.acquire(std::slice::from_ref(&a), T0).unwrap(), Acquire::Limited { index: 0, .. }));
    // The first full key is the one reported.
    assert!(matches!(s.acquire(&[a, bb], T0).unwrap(), Acquire::Limited { index: 0, .. }));
}

fn limits_exact_under_threads(b: &Backend) {
    let k = [key("rl/ping/tenant/threads", 40, 3_600_000)];
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let s = b.store.clone();
            let k = k.clone();
            std::thread::spawn(move || (0..20).filter(|_| s.acquire(&k, T0).unwrap() == Acquire::Allowed).count())
        })
        .collect();
    let allowed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(allowed, 40);
}

fn approval(id: &str, created_ms: u64, state: ApprovalState) -> PendingApproval {
    PendingApproval {
        id: id.into(),
        tool: "refund_payment".into(),
        // Values JSON libraries like to change: big integers, floats, unicode, empty containers.
        args: json!({"order": "A-0001", "amount": 9007199254740991_i64, "ratio": 1e-7, "note": "caf\u{e9} \u{1F600}", "tags": [], "meta": {}}),
        args_digest: "sha256:abc".into(),
        principal: json!({"id": "alice", "roles": ["support"]}),
        tenant: Some("acme".into()),
        task: None,
        run_id: "run-1".into(),
        approver_role: Some("finance".into()),
        reasons: vec!["risk critical".into()],
        created_ms,
        expires_ms: created_ms + 3_600_000,
        state,
        decided_by: None,
        note: None,
        policy_version: "sha256:policy".into(),
        original_args_digest: Some("sha256:first".into()),
        asked_by: vec!["risk".into(), "rule:harness/review".into()],
    }
}

fn approvals_round_trip(b: &Backend) {
    let s = &b.store;
    assert_eq!(s.approval("nope").unwrap(), None);
    let a = approval("apr-1", T0, ApprovalState::Pending);
    s.put_approval(&a).unwrap();
    assert_eq!(s.approval("apr-1").unwrap(), Some(a.clone()));
    s.put_approval(&approval("apr-0", T0 - 5, ApprovalState::Pending)).unwrap();
    s.put_approval(&approval("apr-2", T0 + 5, ApprovalState::Pending)).unwrap();
    assert!(s.transition("apr-1", ApprovalState::Pending, ApprovalState::Approved, Some("bob"), None).unwrap());
    assert!(!s.transition("apr-1", ApprovalState::Pending, ApprovalState::Denied, Some("carol"), Some("no")).unwrap());
    assert!(s.transition("apr-2", ApprovalState::Pending, ApprovalState::Denied, Some("carol"), Some("too much")).unwrap());
    assert!(!s.transition("missing", ApprovalState::Pending, ApprovalState::Approved, None, None).unwrap());
    let got = s.approval("apr-1").unwrap().unwrap();
    assert_eq!((got.state, got.decided_by.as_deref(), got.note.as_deref()), (ApprovalState::Approved, Some("bob"), None));
    assert_eq!(got.args, a.args);
    let denied = s.approval("apr-2").unwrap().unwrap();
    assert_eq!((denied.state, denied.decided_by.as_deref(), denied.note.as_deref()), (ApprovalState::Denied, Some("carol"), Some("too much")));
    let open: Vec<String> = s.open_approvals().unwrap().into_iter().map(|a| a.id).collect();
    assert_eq!(open, ["apr-0", "apr-1"]);
    assert!(s.transition("apr-1", ApprovalState::Approved, ApprovalState::Used, None, None).unwrap());
    let open: Vec<String> = s.open_approvals().unwrap().into_iter().map(|a| a.id).collect();
    assert_eq!(open, ["apr-0"]);
    // `by` absent keeps who approved.
    assert_eq!(s.approval("apr-1").unwrap().unwrap().decided_by.as_deref(), Some("bob"));
}

/// Issue 17, item 11: approvals past their expiry are dropped (memory,
/// SQLite) or left to expire by key TTL (Redis) and are never counted; the
/// count is per principal and covers pending and approved ones only.
fn expired_approvals_are_dropped_and_not_counted(b: &Backend, drops_at_once: bool) {
    let s = &b.store;
    let mut old = approval("apr-old", T0, ApprovalState::Pending);
    old.expires_ms = T0 + 10;
    s.put_approval(&old).unwrap();
    s.put_approval(&approval("apr-live", T0, ApprovalState::Pending)).unwrap();
    s.put_approval(&approval("apr-granted", T0, ApprovalState::Approved)).unwrap();
    s.put_approval(&approval("apr-denied", T0, ApprovalState::Denied)).unwrap();
    let mut bobs = approval("apr-bob", T0, ApprovalState::Pending);
    bobs.principal = json!({"id": "bob"});
    s.put_approval(&bobs).unwrap();
    // Before the first expiry: alice has old, live and granted open.
    assert_eq!(s.prune_and_count_open("alice", T0 + 5).unwrap(), 3);
    // After it: the expired one no longer counts, and memory and SQLite drop it.
    assert_eq!(s.prune_and_count_open("alice", T0 + 10).unwrap(), 2);
    assert_eq!(s.prune_and_count_open("bob", T0 + 10).unwrap(), 1);
    assert_eq!(s.prune_and_count_open("nobody", T0 + 10).unwrap(), 0);
    if drops_at_once {
        assert_eq!(s.approval("apr-old").unwrap(), None);
    }
    assert!(s.approval("apr-live").unwrap().is_some());
}

/// Issue 17 review: the approval limit is counted through a per-principal
/// index (other principals' approvals do not enter it) and the count and the
/// put are one atomic step: racing asks never pass the limit together; a
/// decided or expired approval frees its place.
fn approval_limit_per_principal_atomic(b: &Backend) {
    let s = &b.store;
    let mine = |id: &str, who: &str, state: ApprovalState| {
        let mut a = approval(id, T0, state);
        a.principal = json!({"id": who});
        a
    };
    // Many approvals of other principals, open and decided.
    for i in 0..50 {
        s.put_approval(&mine(&format!("other-{i}"), &format!("p{}", i % 7), ApprovalState::Pending)).unwrap();
    }
    for i in 0..3 {
        assert_eq!(s.put_approval_bounded(&mine(&format!("a-{i}"), "alice", ApprovalState::Pending), 3, T0).unwrap(), Bounded::Put { open: i });
    }
    assert_eq!(s.put_approval_bounded(&mine("a-3", "alice", ApprovalState::Pending), 3, T0).unwrap(), Bounded::Full { open: 3 });
    assert_eq!(s.approval("a-3").unwrap(), None, "a refused ask is not stored");
    assert_eq!(s.prune_and_count_open("alice", T0).unwrap(), 3);
    // Approved still counts; used and denied free their place.
    assert!(s.transition("a-0", ApprovalState::Pending, ApprovalState::Approved, Some("bob"), None).unwrap());
    assert_eq!(s.prune_and_count_open("alice", T0).unwrap(), 3);
    assert!(s.transition("a-0", ApprovalState::Approved, ApprovalState::Used, None, None).unwrap());
    assert!(s.transition("a-1", ApprovalState::Pending, ApprovalState::Denied, Some("bob"), Some("no")).unwrap());
    assert_eq!(s.prune_and_count_open("alice", T0).unwrap(), 1);
    assert_eq!(s.put_approval_bounded(&mine("a-4", "alice", ApprovalState::Pending), 3, T0).unwrap(), Bounded::Put { open: 1 });
    // Expired ones free their place too (they expire at T0 + 3_600_000).
    let later = T0 + 3_600_000;
    assert_eq!(s.put_approval_bounded(&mine("a-5", "alice", ApprovalState::Pending), 3, later).unwrap(), Bounded::Put { open: 0 });
    // Racing asks, each through its own handle as separate processes would: exactly the limit is stored.
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let s = if b.durable { (b.reopen)() } else { b.store.clone() };
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                (0..4)
                    .filter(|i| {
                        let mut a = approval(&format!("race-{t}-{i}"), T0, ApprovalState::Pending);
                        a.principal = json!({"id": "carol"});
                        matches!(s.put_approval_bounded(&a, 5, T0).unwrap(), Bounded::Put { .. })
                    })
                    .count()
            })
        })
        .collect();
    let stored: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(stored, 5);
    assert_eq!(s.prune_and_count_open("carol", T0).unwrap(), 5);
}

fn approvals_single_use_under_races(b: &Backend) {
    for round in 0..5 {
        let id = format!("race-{round}");
        b.store.put_approval(&approval(&id, T0, ApprovalState::Approved)).unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                // Each racer has its own store handle, as separate processes would.
                let s = if b.durable { (b.reopen)() } else { b.store.clone() };
                let id = id.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    s.transition(&id, ApprovalState::Approved, ApprovalState::Used, None, None).unwrap()
                })
            })
            .collect();
        let winners = handles.into_iter().map(|h| h.join().unwrap()).filter(|w| *w).count();
        assert_eq!(winners, 1, "round {round}");
        assert_eq!(b.store.approval(&id).unwrap().unwrap().state, ApprovalState::Used);
    }
    // Approve against deny: exactly one decision sticks.
    b.store.put_approval(&approval("judge", T0, ApprovalState::Pending)).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let s = b.store.clone();
            std::thread::spawn(move || {
                let to = if i % 2 == 0 { ApprovalState::Approved } else { ApprovalState::Denied };
                s.transition("judge", ApprovalState::Pending, to, Some(&format!("p{i}")), None).unwrap()
            })
        })
        .collect();
    assert_eq!(handles.into_iter().map(|h| h.join().unwrap()).filter(|w| *w).count(), 1);
}

fn labels_kept(b: &Backend) {
    let s = &b.store;
    assert_eq!(s.labels("run-a").unwrap(), Labels::default());
    let l = s.add_labels("run-a", Labels { private: true, untrusted: false }).unwrap();
    assert_eq!(l, Labels { private: true, untrusted: false });
    let l = s.add_labels("run-a", Labels { private: false, untrusted: true }).unwrap();
    assert_eq!(l, Labels { private: true, untrusted: true });
    // Adding nothing takes nothing away.
    assert_eq!(s.add_labels("run-a", Labels::default()).unwrap(), Labels { private: true, untrusted: true });
    assert_eq!(s.labels("run-a").unwrap(), Labels { private: true, untrusted: true });
    assert_eq!(s.labels("run-b").unwrap(), Labels::default());
}

fn durable_across_reopen(b: &Backend) {
    b.store.add_labels("run-d", Labels { private: true, untrusted: false }).unwrap();
    b.store.put_approval(&approval("apr-d", T0, ApprovalState::Pending)).unwrap();
    assert_eq!(b.store.take_budget("run-d", "ping", Some(2), None).unwrap(), Budget::Taken);
    let k = [key("rl/d", 2, 3_600_000)];
    assert_eq!(b.store.acquire(&k, T0).unwrap(), Acquire::Allowed);
    assert_eq!(b.store.acquire(&k, T0).unwrap(), Acquire::Allowed);
    let again = (b.reopen)();
    assert_eq!(again.labels("run-d").unwrap(), Labels { private: true, untrusted: false });
    assert_eq!(again.approval("apr-d").unwrap().unwrap().state, ApprovalState::Pending);
    assert_eq!(again.open_approvals().unwrap().len(), 1);
    assert_eq!(again.take_budget("run-d", "ping", Some(2), None).unwrap(), Budget::Taken);
    assert_eq!(again.take_budget("run-d", "ping", Some(2), None).unwrap(), Budget::RunExhausted { limit: 2 });
    assert!(matches!(again.acquire(&k, T0).unwrap(), Acquire::Limited { .. }));
}

fn budgets(b: &Backend) {
    let s = &b.store;
    assert_eq!(s.take_budget("r", "a", Some(3), Some(2)).unwrap(), Budget::Taken);
    assert_eq!(s.take_budget("r", "a", Some(3), Some(2)).unwrap(), Budget::Taken);
    assert_eq!(s.take_budget("r", "a", Some(3), Some(2)).unwrap(), Budget::ToolExhausted { limit: 2 });
    assert_eq!(s.take_budget("r", "b", Some(3), None).unwrap(), Budget::Taken);
    assert_eq!(s.take_budget("r", "b", Some(3), None).unwrap(), Budget::RunExhausted { limit: 3 });
    // A refused call gives its count back.
    s.release_budget("r", "b").unwrap();
    assert_eq!(s.take_budget("r", "c", Some(3), None).unwrap(), Budget::Taken);
    assert_eq!(s.take_budget("r", "c", Some(3), None).unwrap(), Budget::RunExhausted { limit: 3 });
    // Releasing what was never taken does not go below zero.
    s.release_budget("other", "x").unwrap();
    s.release_budget("other", "x").unwrap();
    assert_eq!(s.take_budget("other", "x", Some(1), Some(1)).unwrap(), Budget::Taken);
    assert_eq!(s.take_budget("other", "x", Some(1), Some(1)).unwrap(), Budget::RunExhausted { limit: 1 });
    // No limits: always taken.
    for _ in 0..10 {
        assert_eq!(s.take_budget("free", "x", None, None).unwrap(), Budget::Taken);
    }
}

fn budgets_exact_under_threads(b: &Backend) {
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let s = b.store.clone();
            std::thread::spawn(move || (0..10).filter(|_| s.take_budget("shared", "t", Some(25), None).unwrap() == Budget::Taken).count())
        })
        .collect();
    assert_eq!(handles.into_iter().map(|h| h.join().unwrap()).sum::<usize>(), 25);
}

macro_rules! conformance {
    ($backend:ident) => {
        mod $backend {
            use super::*;

            #[test]
            fn limits_exact_at_count() {
                super::limits_exact_at_count(&$backend());
            }
            #[test]
            fn retry_after_right() {
                super::retry_after_right(&$backend());
            }
            #[test]
            fn all_or_nothing() {
                super::all_or_nothing(&$backend());
            }
            #[test]
            fn limits_exact_under_threads() {
                super::limits_exact_under_threads(&$backend());
            }
            #[test]
            fn approvals_round_trip() {
                super::approvals_round_trip(&$backend());
            }
            #[test]
            fn expired_approvals_are_dropped_and_not_counted() {
                super::expired_approvals_are_dropped_and_not_counted(&$backend(), stringify!($backend) != "redis");
            }
            #[test]
            fn issue17_review_approval_limit_per_principal_atomic() {
                super::approval_limit_per_principal_atomic(&$backend());
            }
            #[test]
            fn approvals_single_use_under_races() {
                super::approvals_single_use_under_races(&$backend());
            }
            #[test]
            fn labels_kept() {
                super::labels_kept(&$backend());
            }
            #[test]
            fn budgets() {
                super::budgets(&$backend());
            }
            #[test]
            fn budgets_exact_under_threads() {
                super::budgets_exact_under_threads(&$backend());
            }
            #[test]
            fn durable_across_reopen() {
                let b = $backend();
                if b.durable {
                    super::durable_across_reopen(&b);
                }
            }
        }
    };
}

conformance!(memory);
conformance!(sqlite);
conformance!(redis);

// Backend-specific checks.

#[test]
fn redis_keys_are_namespaced_and_expire() {
    let server = RedisServer::start();
    let options = RedisOptions { namespace: "shop".into(), clock: RedisClock::Caller, run_ttl_ms: 60_000, ..RedisOptions::default() };
    let s = RedisStore::open(&server.url(), options).unwrap();
    s.acquire(&[key("rl/ping/tenant/acme", 10, 60_000)], T0).unwrap();
    s.add_labels("run-1", Labels { private: true, untrusted: false }).unwrap();
    s.put_approval(&approval("apr-1", T0, ApprovalState::Pending)).unwrap();
    let mut c = server.conn();
    let mut keys: Vec<String> = ::redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        ["hw:{shop}:apr-by:alice", "hw:{shop}:apr-open:all", "hw:{shop}:apr:apr-1", "hw:{shop}:rl:rl/ping/tenant/acme", "hw:{shop}:run:run-1"]
    );
    let ttl = |k: &str| -> i64 { ::redis::cmd("PTTL").arg(k).query(&mut server.conn()).unwrap() };
    // One call of 10/min: the bucket is spent after one interval (6 s).
    let rl = ttl("hw:{shop}:rl:rl/ping/tenant/acme");
    assert!(rl > 5_000 && rl <= 6_000, "{rl}");
    let run = ttl("hw:{shop}:run:run-1");
    assert!(run > 50_000 && run <= 60_000, "{run}");
    let apr = ttl("hw:{shop}:apr:apr-1");
    assert!(apr > 3_600_000 && apr <= 3_660_000, "{apr}");
    // The principal's open index lives as long as its last approval.
    let by = ttl("hw:{shop}:apr-by:alice");
    assert!(by > 3_600_000 && by <= 3_660_000, "{by}");
}

#[test]
fn redis_one_round_trip_per_decision() {
    let server = RedisServer::start();
    for clock in [RedisClock::Caller, RedisClock::Server] {
        let options = RedisOptions { namespace: format!("rt-{clock:?}"), clock, ..RedisOptions::default() };
        let s = RedisStore::open(&server.url(), options).unwrap();
        let keys = [key("rl/a/principal/p", 1000, 60_000), key("rl/a/tenant/t", 1000, 60_000)];
        s.acquire(&keys, T0).unwrap(); // connects and loads the script
        let before = s.round_trip_count();
        for _ in 0..50 {
            assert_eq!(s.acquire(&keys, T0).unwrap(), Acquire::Allowed);
        }
        assert_eq!(s.round_trip_count() - before, 50);
        assert_eq!(s.round_trips(), Some(s.round_trip_count()));
    }
}

/// Issue 17 review: the approval limit costs one round trip per ask on
/// Redis, however many approvals other principals hold (it used to read
/// every open approval).
#[test]
fn issue17_review_redis_approval_limit_is_one_round_trip() {
    let server = RedisServer::start();
    let options = RedisOptions { namespace: "limit-rt".into(), clock: RedisClock::Caller, ..RedisOptions::default() };
    let s = RedisStore::open(&server.url(), options).unwrap();
    let ask = |id: &str, who: &str| {
        let mut a = approval(id, T0, ApprovalState::Pending);
        a.principal = json!({"id": who});
        a
    };
    s.put_approval_bounded(&ask("warm", "zed"), 100, T0).unwrap(); // connects and loads the script
    for others in [0, 300] {
        for i in 0..others {
            s.put_approval(&ask(&format!("o-{others}-{i}"), "others")).unwrap();
        }
        let before = s.round_trip_count();
        for i in 0..10 {
            s.put_approval_bounded(&ask(&format!("m-{others}-{i}"), "mine"), 100, T0).unwrap();
        }
        assert_eq!(s.round_trip_count() - before, 10, "with {others} approvals of others");
    }
}

/// Issue 17 review: a SQLite file made before approvals had a principal
/// column is migrated when opened, and its open approvals count.
#[test]
fn issue17_review_sqlite_old_file_is_migrated() {
    let dir = scratch_dir("sqlite-migrate");
    let path = dir.join("state.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE hw_approval (id TEXT PRIMARY KEY, body TEXT NOT NULL, state TEXT NOT NULL,
             decided_by TEXT, note TEXT, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL) WITHOUT ROWID;",
        )
        .unwrap();
        let a = approval("old-1", T0, ApprovalState::Pending);
        conn.execute(
            "INSERT INTO hw_approval VALUES (?1, ?2, 'pending', NULL, NULL, ?3, ?4)",
            rusqlite::params![a.id, serde_json::to_string(&a).unwrap(), T0 as i64, a.expires_ms as i64],
        )
        .unwrap();
    }
    let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(s.prune_and_count_open("alice", T0).unwrap(), 1);
    assert_eq!(s.put_approval_bounded(&approval("new-1", T0, ApprovalState::Pending), 1, T0).unwrap(), Bounded::Full { open: 1 });
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_server_clock_limits_exactly() {
    let server = RedisServer::start();
    let options = RedisOptions { namespace: "server-clock".into(), clock: RedisClock::Server, ..RedisOptions::default() };
    let s = RedisStore::open(&server.url(), options).unwrap();
    // The passed time is ignored: a day-long bucket of 7 gives 7 whatever `now_ms` says.
    let k = [key("rl/x", 7, 86_400_000)];
    let allowed = (0..20u64).filter(|i| s.acquire(&k, i * 1_000_000_000).unwrap() == Acquire::Allowed).count();
    assert_eq!(allowed, 7);
    match s.acquire(&k, 0).unwrap() {
        Acquire::Limited { retry_after_ms, .. } => assert!(retry_after_ms > 86_400_000 / 7 - 5_000 && retry_after_ms <= 86_400_000 / 7 + 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn redis_bad_url_is_an_error_without_the_password() {
    let e = RedisStore::open("redis+sentinel://user:hunter2@127.0.0.1:1/", RedisOptions::default()).unwrap_err();
    assert!(!e.message.contains("hunter2"), "{}", e.message);
    // Nothing listens there: the store opens, each operation fails quickly and names no password.
    let options = RedisOptions { timeout: Duration::from_millis(300), ..RedisOptions::default() };
    let s = RedisStore::open("redis://:hunter2@127.0.0.1:1/", options).unwrap();
    let e = s.labels("r").unwrap_err();
    assert!(!e.message.contains("hunter2") && e.message.contains("***"), "{}", e.message);
    assert!(!format!("{s:?}").contains("hunter2"));
}

#[test]
fn sqlite_prunes_spent_buckets_and_keeps_live_runs() {
    let dir = scratch_dir("prune");
    let path = dir.join("state.db");
    let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(s.acquire(&[key("old", 10, 60_000)], T0).unwrap(), Acquire::Allowed);
    s.add_labels("live", Labels { private: true, untrusted: false }).unwrap();
    let later = T0 + 2 * 3_600_000;
    // Housekeeping runs on one call in 4096.
    for _ in 0..4095 {
        s.acquire(&[key("busy", 1_000_000, 1_000)], later).unwrap();
    }
    let raw = rusqlite::Connection::open(&path).unwrap();
    let buckets: Vec<String> = raw.prepare("SELECT key FROM hw_rate").unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(buckets, ["busy"]);
    assert_eq!(s.labels("live").unwrap(), Labels { private: true, untrusted: false });
    drop(DirGuard(dir));
}
