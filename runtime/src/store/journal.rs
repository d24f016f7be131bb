//! The durable effect journals (issue 21) behind the core's
//! [`Journal`](harnessweaver_core::effects::Journal) trait: SQLite (one file
//! shared by the processes of a host; the intent is committed with
//! `synchronous = FULL` before the tool runs, so a `kill -9` between intent
//! and outcome leaves it `unknown`) and Redis (shared by hosts; a claim is
//! one Lua script). The rules (retry modes, states) are the core's; these
//! only store, each claim atomically.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use harnessweaver_core::effects::{Claim, EffectEntry, EffectState, Journal, StoreError};
use harnessweaver_core::error::Problem;
use harnessweaver_core::harness::{Harness, JournalBackend};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS hw_effect (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL UNIQUE, tool TEXT NOT NULL,
    idempotency_key TEXT NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hw_effect_key ON hw_effect (tool, idempotency_key, seq);
";

fn failed(what: &str, e: &impl std::fmt::Display) -> StoreError {
    StoreError { message: format!("the effect journal could not {what}: {e}") }
}

fn body_of(entry: &EffectEntry) -> Result<String, StoreError> {
    serde_json::to_string(entry).map_err(|e| failed("encode an entry", &e))
}

fn entry_of(body: &str) -> Result<EffectEntry, StoreError> {
    serde_json::from_str(body).map_err(|e| failed("read an entry", &e))
}

/// A claim's answer: the body of the `unknown` entry that blocked it, or none.
fn claim_of(blocked: Option<String>) -> Result<Claim, StoreError> {
    match blocked {
        Some(body) => Ok(Claim::Blocked(Box::new(entry_of(&body)?))),
        None => Ok(Claim::Recorded),
    }
}

/// The SQLite effect journal: table `hw_effect` of one file.
#[derive(Debug)]
pub struct SqliteJournal {
    path: PathBuf,
    busy_timeout: Duration,
    conn: Mutex<Option<Connection>>,
}

impl SqliteJournal {
    /// The journal in the file at `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>, busy_timeout: Duration) -> Self {
        Self { path: path.into(), busy_timeout, conn: Mutex::new(None) }
    }

    fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Connection> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(busy_timeout)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // An intent must be on disk before the tool runs.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(conn)
    }

    /// Runs `f` on the connection, opening it when needed and dropping it after a failure.
    fn with<T>(&self, what: &str, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(Self::open(&self.path, self.busy_timeout).map_err(|e| failed("open its file", &e))?);
        }
        let Some(conn) = slot.as_mut() else { return Err(StoreError { message: "the effect journal is not open".into() }) };
        let result = f(conn).map_err(|e| failed(what, &e));
        if result.is_err() {
            *slot = None;
        }
        result
    }
}

impl Journal for SqliteJournal {
    fn claim(&self, intent: &EffectEntry, exclusive: bool) -> Result<Claim, StoreError> {
        let body = body_of(intent)?;
        let blocked = self.with("record an intent", |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if exclusive {
                let latest: Option<(String, String)> = tx
                    .query_row(
                        "SELECT state, body FROM hw_effect WHERE tool = ?1 AND idempotency_key = ?2 ORDER BY seq DESC LIMIT 1",
                        params![intent.tool, intent.idempotency_key],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                if let Some((state, body)) = latest.filter(|(s, _)| s == EffectState::Unknown.as_str()) {
                    let _ = state;
                    return Ok(Some(body));
                }
            }
            tx.execute(
                "INSERT INTO hw_effect (call_id, tool, idempotency_key, state, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![intent.call_id, intent.tool, intent.idempotency_key, intent.state.as_str(), body],
            )?;
            tx.commit()?;
            Ok(None)
        })?;
        claim_of(blocked)
    }

    fn put(&self, entry: &EffectEntry) -> Result<(), StoreError> {
        let body = body_of(entry)?;
        self.with("record an outcome", |conn| {
            let changed =
                conn.execute("UPDATE hw_effect SET state = ?2, body = ?3 WHERE call_id = ?1", params![entry.call_id, entry.state.as_str(), body])?;
            if changed == 0 {
                conn.execute(
                    "INSERT INTO hw_effect (call_id, tool, idempotency_key, state, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![entry.call_id, entry.tool, entry.idempotency_key, entry.state.as_str(), body],
                )?;
            }
            Ok(())
        })
    }

    fn get(&self, call_id: &str) -> Result<Option<EffectEntry>, StoreError> {
        let body: Option<String> = self.with("read an entry", |conn| {
            conn.query_row("SELECT body FROM hw_effect WHERE call_id = ?1", params![call_id], |r| r.get(0)).optional()
        })?;
        body.as_deref().map(entry_of).transpose()
    }

    fn list(&self) -> Result<Vec<EffectEntry>, StoreError> {
        let bodies: Vec<String> = self.with("list its entries", |conn| {
            let mut stmt = conn.prepare("SELECT body FROM hw_effect ORDER BY seq")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })?;
        bodies.iter().map(|b| entry_of(b)).collect()
    }
}

/// Records the intent unless `exclusive` and the latest entry of the key is
/// unknown (then returns that entry's body). KEYS: the key's index, the
/// order list. ARGV: the entry body, exclusive (`1`/`0`), the entry key
/// prefix, the call id.
const CLAIM: &str = r"
local latest = redis.call('GET', KEYS[1])
if ARGV[2] == '1' and latest then
  local body = redis.call('GET', ARGV[3] .. latest)
  if body and cjson.decode(body)['state'] == 'unknown' then return body end
end
redis.call('SET', ARGV[3] .. ARGV[4], ARGV[1])
redis.call('SET', KEYS[1], ARGV[4])
redis.call('RPUSH', KEYS[2], ARGV[4])
return false
";

/// The Redis effect journal: each entry a JSON string, a list for the order
/// and, per tool and key, the latest call id; all under one hash tag.
pub struct RedisJournal {
    client: redis::Client,
    timeout: Duration,
    prefix: String,
    conn: Mutex<Option<redis::Connection>>,
}

impl std::fmt::Debug for RedisJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisJournal").field("prefix", &self.prefix).finish()
    }
}

impl RedisJournal {
    /// The journal on the server at `url`, under `namespace`.
    pub fn open(url: &str, namespace: &str, timeout: Duration) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|e| failed("parse its URL", &e))?;
        Ok(Self { client, timeout, prefix: format!("hw:{{{namespace}}}:eff:"), conn: Mutex::new(None) })
    }

    fn with<T>(&self, what: &str, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, StoreError> {
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            let conn = self.client.get_connection_with_timeout(self.timeout).map_err(|e| failed("reach its server", &e))?;
            let _ = conn.set_read_timeout(Some(self.timeout));
            let _ = conn.set_write_timeout(Some(self.timeout));
            *slot = Some(conn);
        }
        let Some(conn) = slot.as_mut() else { return Err(StoreError { message: "the effect journal is not connected".into() }) };
        let result = f(conn).map_err(|e| failed(what, &e));
        if result.is_err() {
            *slot = None;
        }
        result
    }

    fn entry_key(&self, call_id: &str) -> String {
        format!("{}e:{call_id}", self.prefix)
    }
}

impl Journal for RedisJournal {
    fn claim(&self, intent: &EffectEntry, exclusive: bool) -> Result<Claim, StoreError> {
        let body = body_of(intent)?;
        let index = format!("{}k:{}\u{0}{}", self.prefix, intent.tool, intent.idempotency_key);
        let order = format!("{}order", self.prefix);
        let entry_prefix = format!("{}e:", self.prefix);
        let blocked: Option<String> = self.with("record an intent", |conn| {
            redis::Script::new(CLAIM)
                .key(index)
                .key(order)
                .arg(body)
                .arg(if exclusive { "1" } else { "0" })
                .arg(entry_prefix)
                .arg(&intent.call_id)
                .invoke(conn)
        })?;
        claim_of(blocked)
    }

    fn put(&self, entry: &EffectEntry) -> Result<(), StoreError> {
        let body = body_of(entry)?;
        let key = self.entry_key(&entry.call_id);
        self.with("record an outcome", |conn| redis::cmd("SET").arg(key).arg(body).query(conn))
    }

    fn get(&self, call_id: &str) -> Result<Option<EffectEntry>, StoreError> {
        let key = self.entry_key(call_id);
        let body: Option<String> = self.with("read an entry", |conn| redis::cmd("GET").arg(key).query(conn))?;
        body.as_deref().map(entry_of).transpose()
    }

    fn list(&self) -> Result<Vec<EffectEntry>, StoreError> {
        let order = format!("{}order", self.prefix);
        let ids: Vec<String> = self.with("list its entries", |conn| redis::cmd("LRANGE").arg(order).arg(0).arg(-1).query(conn))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(e) = self.get(&id)? {
                out.push(e);
            }
        }
        Ok(out)
    }
}

/// The journal `spec.effects.journal` names.
pub fn open_journal(harness: &Harness) -> Result<Arc<dyn Journal>, Box<Problem>> {
    let timeout = Duration::from_millis(harness.spec().state_options.timeout_ms);
    match &harness.spec().effects.journal {
        JournalBackend::Memory => Ok(Arc::new(harnessweaver_core::effects::MemoryJournal::new())),
        JournalBackend::Sqlite(path) => Ok(Arc::new(SqliteJournal::new(harness.dir().join(path), timeout))),
        JournalBackend::Redis(url) => match RedisJournal::open(url, &super::state_namespace(harness), timeout) {
            Ok(journal) => Ok(Arc::new(journal)),
            Err(e) => Err(Box::new(Problem {
                path: "spec.effects.journal".into(),
                file: Some("harness.yaml".into()),
                ..Problem::new("state_unavailable", e.message)
            })),
        },
    }
}
