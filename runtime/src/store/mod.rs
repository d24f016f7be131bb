//! The durable state stores: SQLite (one file shared by the processes of a
//! host) and Redis (shared by hosts), behind the core's
//! [`Store`](harnessweaver_core::store::Store) trait, and the SQLite audit sink.
//!
//! Both pass the same conformance tests as the core's memory store
//! (runtime/tests/store_conformance.rs).

mod journal;
mod redis;
mod sqlite;
mod sqlite_audit;
pub mod stress;

use std::sync::Arc;

use harnessweaver_core::error::Problem;
use harnessweaver_core::harness::{Harness, StateBackend};
use harnessweaver_core::store::{MemoryStore, Store};

pub use journal::{open_journal, RedisJournal, SqliteJournal};
pub use redis::{RedisClock, RedisOptions, RedisStore};
pub use sqlite::{SqliteOptions, SqliteStore};
pub use sqlite_audit::{verify_sqlite, SqliteAuditSink};

/// The store `spec.state` names: memory, a SQLite file (opened on first use:
/// a file that cannot be written now refuses calls with `store_unavailable`
/// until it can, like a Redis that is down) or Redis. `clock_injected`: an
/// injected clock (fixtures, simulations) decides instead of the Redis
/// server's clock, shared by every host.
pub fn open_store(harness: &Harness, clock_injected: bool) -> Result<Arc<dyn Store>, Box<Problem>> {
    let state_options = harness.spec().state_options;
    let timeout = std::time::Duration::from_millis(state_options.timeout_ms);
    let sqlite_options = SqliteOptions { busy_timeout: timeout, run_ttl_ms: state_options.run_ttl_ms };
    match &harness.spec().state {
        StateBackend::Memory => Ok(Arc::new(MemoryStore::new())),
        StateBackend::Sqlite(path) => Ok(Arc::new(SqliteStore::open_lazy(harness.dir().join(path), sqlite_options))),
        StateBackend::Redis(url) => {
            let redis_options = RedisOptions {
                namespace: state_namespace(harness),
                clock: if clock_injected { RedisClock::Caller } else { RedisClock::Server },
                timeout,
                run_ttl_ms: state_options.run_ttl_ms,
            };
            match RedisStore::open(url, redis_options) {
                Ok(store) => Ok(Arc::new(store)),
                Err(e) => Err(Box::new(Problem {
                    path: "spec.state".into(),
                    file: Some("harness.yaml".into()),
                    ..Problem::new("state_unavailable", e.message)
                })),
            }
        }
    }
}

/// The SQLite audit sink at `path` (relative to the harness's folder).
pub fn open_sqlite_audit(harness: &Harness, path: &str) -> Result<Arc<SqliteAuditSink>, Box<Problem>> {
    let state_options = harness.spec().state_options;
    let sqlite_options =
        SqliteOptions { busy_timeout: std::time::Duration::from_millis(state_options.timeout_ms), run_ttl_ms: state_options.run_ttl_ms };
    let every = harness.spec().audit_signing.checkpoint_every;
    harnessweaver_core::audit::signing_key(harness)
        .and_then(|key| SqliteAuditSink::open_signed(harness.dir().join(path), sqlite_options, key, every))
        .map(Arc::new)
        .map_err(|e| Box::new(Problem { path: "spec.audit.sink".into(), ..Problem::new("io_error", e.to_string()) }))
}

/// The Redis namespace of a harness: its `metadata.name`, or else a digest
/// of its settings (identical harness files on several hosts share state).
fn state_namespace(harness: &Harness) -> String {
    use sha2::{Digest, Sha256};
    if let Some(name) = harness.spec().name.as_deref().filter(|n| !n.is_empty()) {
        return name.to_string();
    }
    // Without where the state lives: hosts may reach one Redis by several names.
    let mut settings = harness.describe();
    if let Some(map) = settings.as_object_mut() {
        map.remove("state");
        map.remove("state_options");
    }
    let digest = Sha256::digest(settings.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
