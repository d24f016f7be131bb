//! The SQLite store: durable on one host, shared by several processes.
//!
//! The file is opened in WAL mode with a busy timeout; every decision that
//! reads and writes (a rate-limit take, a budget take, a label merge) is one
//! `BEGIN IMMEDIATE` transaction, so that processes sharing the file take the
//! write lock before they read and never decide on a stale value. An approval
//! transition is one conditional `UPDATE` (compare-and-set). Everything lives
//! in the file, so pending approvals, run labels, budgets and rate-limit
//! state survive a restart. `synchronous = NORMAL`: a committed decision
//! survives a crash of the process; a power cut may lose the last few.
//!
//! Connections are opened lazily and kept in a small pool; a connection that
//! failed is dropped and a new one opened on the next call, so the store
//! recovers by itself when the file becomes writable again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use harnessweaver_core::store::{gcra, ns_to_ms_ceil, Acquire, ApprovalState, Bounded, Budget, Labels, PendingApproval, RateKey, Store, StoreError};
use harnessweaver_core::{Clock, SystemClock};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS hw_rate (key TEXT PRIMARY KEY, tat_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hw_run (
    run_id TEXT PRIMARY KEY, total INTEGER NOT NULL DEFAULT 0,
    private INTEGER NOT NULL DEFAULT 0, untrusted INTEGER NOT NULL DEFAULT 0,
    touched_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hw_run_tool (
    run_id TEXT NOT NULL, tool TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (run_id, tool)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hw_approval (
    id TEXT PRIMARY KEY, body TEXT NOT NULL, state TEXT NOT NULL,
    decided_by TEXT, note TEXT, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL,
    principal TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hw_approval_open ON hw_approval (state, created_ms);
CREATE TABLE IF NOT EXISTS hw_audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL, call_id TEXT NOT NULL,
    run_id TEXT NOT NULL, tool TEXT NOT NULL, principal TEXT NOT NULL, tenant TEXT,
    decision TEXT NOT NULL, code TEXT, step TEXT, args_digest TEXT, approval_id TEXT,
    event TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hw_audit_checkpoint (
    id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL, checkpoint TEXT NOT NULL
);
";

/// Indexes on `hw_approval.principal` (a column files made before it lack
/// until [`migrate`] adds it): the approval limit counts a principal's open
/// approvals through the first, and drops expired ones through the second,
/// without a scan of the table.
const APPROVAL_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS hw_approval_principal ON hw_approval (principal, expires_ms) WHERE state IN ('pending', 'approved');
CREATE INDEX IF NOT EXISTS hw_approval_expiry ON hw_approval (expires_ms);
";

/// A principal's open approvals, not expired at `?2` (through `hw_approval_principal`).
const COUNT_OPEN: &str = "SELECT count(*) FROM hw_approval WHERE principal = ?1 AND state IN ('pending', 'approved') AND expires_ms > ?2";

/// Adds `hw_approval.principal` to a file made before it (filled from each
/// approval's body), then the indexes that read it. Safe when several
/// processes open the file at once: the check is repeated under the write lock.
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let has_column = |c: &Connection| -> rusqlite::Result<bool> {
        c.query_row("SELECT count(*) FROM pragma_table_info('hw_approval') WHERE name = 'principal'", [], |r| r.get::<_, i64>(0)).map(|n| n > 0)
    };
    if !has_column(conn)? {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !has_column(&tx)? {
            tx.execute_batch(
                "ALTER TABLE hw_approval ADD COLUMN principal TEXT NOT NULL DEFAULT '';
                 UPDATE hw_approval SET principal = coalesce(json_extract(body, '$.principal.id'), '');",
            )?;
        }
        tx.commit()?;
    }
    conn.execute_batch(APPROVAL_INDEXES)
}

fn put_approval_row(conn: &Connection, approval: &PendingApproval, body: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO hw_approval (id, body, state, decided_by, note, created_ms, expires_ms, principal)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        approval.id,
        body,
        approval.state.as_str(),
        approval.decided_by,
        approval.note,
        i64::try_from(approval.created_ms).unwrap_or(i64::MAX),
        i64::try_from(approval.expires_ms).unwrap_or(i64::MAX),
        approval.principal_id(),
    ])?;
    Ok(())
}

/// Housekeeping (dropping spent rate buckets, old runs and decided
/// approvals) runs on one call in this many.
const PRUNE_EVERY: u64 = 4096;

/// How often a transaction SQLite refused as busy is tried in all.
const BUSY_ATTEMPTS: u32 = 5;

enum Retry {
    Busy(StoreError),
    Fatal(StoreError),
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(code, _)
        if matches!(code.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// How a SQLite store is opened.
#[derive(Debug, Clone, Copy)]
pub struct SqliteOptions {
    /// How long a writer waits for another process's lock before the store
    /// counts as unavailable.
    pub busy_timeout: Duration,
    /// How long a run's labels and budgets are kept after its last change.
    pub run_ttl_ms: u64,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { busy_timeout: Duration::from_secs(5), run_ttl_ms: 86_400_000 }
    }
}

/// A pool of connections to one SQLite file.
#[derive(Debug)]
pub(super) struct Pool {
    path: PathBuf,
    options: SqliteOptions,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    pub(super) fn new(path: &Path, options: SqliteOptions) -> Self {
        Self { path: path.to_path_buf(), options, idle: Mutex::new(Vec::new()) }
    }

    fn error(&self, e: &rusqlite::Error) -> StoreError {
        StoreError::new(format!("sqlite `{}`: {}", self.path.display(), sqlite_reason(e)))
    }

    fn open(&self) -> Result<Connection, StoreError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::new(format!("sqlite: cannot create `{}`: {e}", dir.display())))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&self.path, flags).map_err(|e| self.error(&e))?;
        conn.busy_timeout(self.options.busy_timeout).map_err(|e| self.error(&e))?;
        // SQLite opens a file it cannot write read-only without a word;
        // every decision writes, so that is the store being unavailable.
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(|e| self.error(&e))? {
            return Err(StoreError::new(format!("sqlite `{}`: the database is read-only", self.path.display())));
        }
        // `journal_mode` answers with the mode in force; a read-only file
        // keeps its old mode, which the first write then reports.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(|e| self.error(&e))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;").map_err(|e| self.error(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| self.error(&e))?;
        migrate(&mut conn).map_err(|e| self.error(&e))?;
        Ok(conn)
    }

    /// Runs `f` on a pooled connection; a connection that failed is dropped.
    /// SQLite can answer "busy" without waiting out the busy timeout (when
    /// processes open the file or switch it to WAL at once, or to break a
    /// lock cycle); the transaction then rolled back whole, so it is tried
    /// again a few times before the store counts as unavailable.
    pub(super) fn with<T>(&self, f: impl Fn(&mut Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let started = std::time::Instant::now();
            match self.try_with(&f) {
                // Only a busy answer that did not wait out the timeout is
                // retried; one that waited is a lock really held.
                Err(Retry::Busy(_)) if attempt < BUSY_ATTEMPTS && started.elapsed() < self.options.busy_timeout / 2 => {
                    std::thread::sleep(Duration::from_millis(10 * u64::from(attempt)));
                }
                Err(Retry::Busy(e) | Retry::Fatal(e)) => return Err(e),
                Ok(value) => return Ok(value),
            }
        }
    }

    fn try_with<T>(&self, f: &impl Fn(&mut Connection) -> rusqlite::Result<T>) -> Result<T, Retry> {
        let pooled = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => self.open_retrying().map_err(Retry::Fatal)?,
        };
        match f(&mut conn) {
            Ok(value) => {
                self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
                Ok(value)
            }
            Err(e) if is_busy(&e) => {
                // The connection is sound; only the transaction lost.
                self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
                Err(Retry::Busy(self.error(&e)))
            }
            Err(e) => Err(Retry::Fatal(self.error(&e))),
        }
    }

    /// [`Pool::open`], tried again when the file is busy being opened by others.
    fn open_retrying(&self) -> Result<Connection, StoreError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let started = std::time::Instant::now();
            match self.open() {
                Err(e) if attempt < BUSY_ATTEMPTS && e.message.contains("locked") && started.elapsed() < self.options.busy_timeout / 2 => {
                    std::thread::sleep(Duration::from_millis(10 * u64::from(attempt)));
                }
                other => return other,
            }
        }
    }
}

/// A lowercase reason without the file's contents.
fn sqlite_reason(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(code, _) => match code.code {
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => "the database is locked".to_string(),
            rusqlite::ErrorCode::ReadOnly => "the database is read-only".to_string(),
            rusqlite::ErrorCode::DiskFull => "the disk is full".to_string(),
            rusqlite::ErrorCode::CannotOpen => "the database cannot be opened".to_string(),
            rusqlite::ErrorCode::PermissionDenied => "permission denied".to_string(),
            _ => e.to_string().to_lowercase(),
        },
        _ => e.to_string().to_lowercase(),
    }
}

fn to_i64(n: u128) -> rusqlite::Result<i64> {
    i64::try_from(n).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// State in a SQLite file (`spec.state: sqlite:<path>`).
#[derive(Debug)]
pub struct SqliteStore {
    pool: Pool,
    calls: AtomicU64,
}

impl SqliteStore {
    /// Opens (creating) the store at `path` and checks that it can be used.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let store = Self::open_lazy(path, options);
        store.pool.with(|_| Ok(()))?;
        Ok(store)
    }

    /// A store at `path` that opens its file on first use; until then (and
    /// while the file cannot be written) every operation is a [`StoreError`].
    pub fn open_lazy(path: impl AsRef<Path>, options: SqliteOptions) -> Self {
        Self { pool: Pool::new(path.as_ref(), options), calls: AtomicU64::new(0) }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.pool.path
    }

    fn maybe_prune(&self, conn: &Connection, now_ms: u64) -> rusqlite::Result<()> {
        if self.calls.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY != PRUNE_EVERY - 1 {
            return Ok(());
        }
        let ttl = self.pool.options.run_ttl_ms;
        let now_ns = to_i64(u128::from(now_ms) * 1_000_000)?;
        // Buckets and approvals carry the governor's clock (maybe injected);
        // runs are stamped with the system's.
        let approval_cutoff = i64::try_from(now_ms.saturating_sub(ttl)).unwrap_or(0);
        let run_cutoff = i64::try_from(self::now_ms().saturating_sub(ttl)).unwrap_or(0);
        // A bucket whose arrival time has passed is the same as no bucket.
        conn.execute("DELETE FROM hw_rate WHERE tat_ns < ?1", params![now_ns])?;
        conn.execute("DELETE FROM hw_run_tool WHERE run_id IN (SELECT run_id FROM hw_run WHERE touched_ms < ?1)", params![run_cutoff])?;
        conn.execute("DELETE FROM hw_run WHERE touched_ms < ?1", params![run_cutoff])?;
        conn.execute("DELETE FROM hw_approval WHERE expires_ms < ?1 AND state IN ('denied', 'used')", params![approval_cutoff])?;
        Ok(())
    }
}

fn now_ms() -> u64 {
    SystemClock.now_ms()
}

impl Store for SqliteStore {
    fn acquire(&self, keys: &[RateKey], now_ms: u64) -> Result<Acquire, StoreError> {
        self.pool.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now_ns = u128::from(now_ms) * 1_000_000;
            let mut next = Vec::with_capacity(keys.len());
            {
                let mut get = tx.prepare_cached("SELECT tat_ns FROM hw_rate WHERE key = ?1")?;
                for (index, key) in keys.iter().enumerate() {
                    let stored: Option<i64> = get.query_row(params![key.key], |r| r.get(0)).optional()?;
                    let stored = stored.and_then(|t| u128::try_from(t).ok());
                    match gcra(stored, now_ns, key.rate) {
                        Ok(tat) => next.push(tat),
                        // Nothing was written: the transaction ends without a change.
                        Err(wait) => return Ok(Acquire::Limited { index, retry_after_ms: ns_to_ms_ceil(wait) }),
                    }
                }
                let mut put =
                    tx.prepare_cached("INSERT INTO hw_rate (key, tat_ns) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET tat_ns = excluded.tat_ns")?;
                for (key, tat) in keys.iter().zip(next) {
                    put.execute(params![key.key, to_i64(tat)?])?;
                }
            }
            self.maybe_prune(&tx, now_ms)?;
            tx.commit()?;
            Ok(Acquire::Allowed)
        })
    }

    fn take_budget(&self, run_id: &str, tool: &str, max_total: Option<u64>, max_tool: Option<u64>) -> Result<Budget, StoreError> {
        let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        self.pool.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let total: i64 = tx.query_row("SELECT total FROM hw_run WHERE run_id = ?1", params![run_id], |r| r.get(0)).optional()?.unwrap_or(0);
            if let Some(limit) = max_total.filter(|limit| to_u64(total) >= *limit) {
                return Ok(Budget::RunExhausted { limit });
            }
            let per_tool: i64 = tx
                .query_row("SELECT n FROM hw_run_tool WHERE run_id = ?1 AND tool = ?2", params![run_id, tool], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            if let Some(limit) = max_tool.filter(|limit| to_u64(per_tool) >= *limit) {
                return Ok(Budget::ToolExhausted { limit });
            }
            tx.execute(
                "INSERT INTO hw_run (run_id, total, touched_ms) VALUES (?1, 1, ?2)
                 ON CONFLICT (run_id) DO UPDATE SET total = total + 1, touched_ms = excluded.touched_ms",
                params![run_id, now],
            )?;
            tx.execute(
                "INSERT INTO hw_run_tool (run_id, tool, n) VALUES (?1, ?2, 1) ON CONFLICT (run_id, tool) DO UPDATE SET n = n + 1",
                params![run_id, tool],
            )?;
            tx.commit()?;
            Ok(Budget::Taken)
        })
    }

    fn release_budget(&self, run_id: &str, tool: &str) -> Result<(), StoreError> {
        self.pool.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("UPDATE hw_run SET total = total - 1 WHERE run_id = ?1 AND total > 0", params![run_id])?;
            tx.execute("UPDATE hw_run_tool SET n = n - 1 WHERE run_id = ?1 AND tool = ?2 AND n > 0", params![run_id, tool])?;
            tx.commit()
        })
    }

    fn labels(&self, run_id: &str) -> Result<Labels, StoreError> {
        self.pool.with(|conn| {
            let row: Option<(bool, bool)> = conn
                .prepare_cached("SELECT private, untrusted FROM hw_run WHERE run_id = ?1")?
                .query_row(params![run_id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            Ok(row.map(|(private, untrusted)| Labels { private, untrusted }).unwrap_or_default())
        })
    }

    fn add_labels(&self, run_id: &str, labels: Labels) -> Result<Labels, StoreError> {
        let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        self.pool.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO hw_run (run_id, private, untrusted, touched_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id) DO UPDATE SET private = max(private, excluded.private),
                     untrusted = max(untrusted, excluded.untrusted), touched_ms = excluded.touched_ms",
                params![run_id, labels.private, labels.untrusted, now],
            )?;
            let (private, untrusted) =
                tx.query_row("SELECT private, untrusted FROM hw_run WHERE run_id = ?1", params![run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            tx.commit()?;
            Ok(Labels { private, untrusted })
        })
    }

    fn put_approval(&self, approval: &PendingApproval) -> Result<(), StoreError> {
        let body = serde_json::to_string(approval).map_err(|e| StoreError::new(format!("approval: {e}")))?;
        self.pool.with(|conn| put_approval_row(conn, approval, &body))
    }

    fn put_approval_bounded(&self, approval: &PendingApproval, limit: u64, now_ms: u64) -> Result<Bounded, StoreError> {
        let body = serde_json::to_string(approval).map_err(|e| StoreError::new(format!("approval: {e}")))?;
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.pool.with(|conn| {
            // One write transaction: every process sharing the file sees
            // the count and the insert together.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM hw_approval WHERE expires_ms <= ?1")?.execute(params![now])?;
            let open = to_u64(tx.prepare_cached(COUNT_OPEN)?.query_row(params![approval.principal_id(), now], |r| r.get(0))?);
            let bounded = if open >= limit {
                Bounded::Full { open }
            } else {
                put_approval_row(&tx, approval, &body)?;
                Bounded::Put { open }
            };
            tx.commit()?;
            Ok(bounded)
        })
    }

    fn approval(&self, id: &str) -> Result<Option<PendingApproval>, StoreError> {
        let row = self.pool.with(|conn| {
            conn.prepare_cached("SELECT body, state, decided_by, note FROM hw_approval WHERE id = ?1")?
                .query_row(params![id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?)))
                .optional()
        })?;
        row.map(|(body, state, by, note)| approval_from_row(&body, &state, by, note)).transpose()
    }

    fn transition(&self, id: &str, from: ApprovalState, to: ApprovalState, by: Option<&str>, note: Option<&str>) -> Result<bool, StoreError> {
        self.pool.with(|conn| {
            // One statement: the state check and the change are atomic
            // across every process sharing the file.
            let changed = conn.execute(
                "UPDATE hw_approval SET state = ?3, decided_by = coalesce(?4, decided_by), note = coalesce(?5, note)
                 WHERE id = ?1 AND state = ?2",
                params![id, from.as_str(), to.as_str(), by, note],
            )?;
            Ok(changed == 1)
        })
    }

    fn prune_and_count_open(&self, principal_id: &str, now_ms: u64) -> Result<u64, StoreError> {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.pool.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM hw_approval WHERE expires_ms <= ?1")?.execute(params![now])?;
            let open: i64 = tx.prepare_cached(COUNT_OPEN)?.query_row(params![principal_id, now], |r| r.get(0))?;
            tx.commit()?;
            Ok(to_u64(open))
        })
    }

    fn open_approvals(&self) -> Result<Vec<PendingApproval>, StoreError> {
        let rows = self.pool.with(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body, state, decided_by, note FROM hw_approval WHERE state IN ('pending', 'approved') ORDER BY created_ms, id",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?)))?;
            rows.collect::<rusqlite::Result<Vec<(String, String, Option<String>, Option<String>)>>>()
        })?;
        rows.into_iter().map(|(body, state, by, note)| approval_from_row(&body, &state, by, note)).collect()
    }
}

/// The approval as put, with the fields a transition changes.
pub(super) fn approval_from_row(body: &str, state: &str, by: Option<String>, note: Option<String>) -> Result<PendingApproval, StoreError> {
    let mut approval: PendingApproval = serde_json::from_str(body).map_err(|e| StoreError::new(format!("a stored approval cannot be read: {e}")))?;
    approval.state = parse_state(state)?;
    approval.decided_by = by;
    approval.note = note;
    Ok(approval)
}

pub(super) fn parse_state(state: &str) -> Result<ApprovalState, StoreError> {
    Ok(match state {
        "pending" => ApprovalState::Pending,
        "approved" => ApprovalState::Approved,
        "denied" => ApprovalState::Denied,
        "used" => ApprovalState::Used,
        other => return Err(StoreError::new(format!("a stored approval has the unknown state `{other}`"))),
    })
}
