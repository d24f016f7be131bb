//! The SQLite audit sink: events as rows of `hw_audit` (the narrow columns
//! for queries, and the chained record in `event`), signed checkpoints as rows
//! of `hw_audit_checkpoint`.
//!
//! Each insert is one `BEGIN IMMEDIATE` transaction that reads the newest
//! row's `seq` first: when another process wrote since, the chain continues
//! from that row's record, so processes sharing the file keep one chain.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::{params, OptionalExtension as _, TransactionBehavior};

use super::sqlite::{Pool, SqliteOptions};
use harnessweaver_core::audit::{AuditEvent, AuditSink, Chain, ChainHead, Checkpoint, CheckpointKey, Item, Report};
use harnessweaver_core::error::Error;
use harnessweaver_core::{Clock as _, SystemClock};

/// Audit events as rows of the `hw_audit` table of a SQLite file
/// (`spec.audit.sink: sqlite:<path>`), chained and checkpointed.
#[derive(Debug)]
pub struct SqliteAuditSink {
    pool: Pool,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    chain: Chain,
    /// The row (`hw_audit.seq`) the committed head belongs to, and that head.
    committed: (i64, ChainHead),
    buf: Vec<u8>,
}

impl SqliteAuditSink {
    /// Opens (creating) the file, chaining without signatures; fails when it cannot be written.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, Error> {
        Self::open_signed(path, options, None, 0)
    }

    /// Opens (creating) the file; with `key`, signs a checkpoint every `every` records (0: only at close) and when dropped.
    pub fn open_signed(path: impl AsRef<Path>, options: SqliteOptions, key: Option<CheckpointKey>, every: u64) -> Result<Self, Error> {
        let pool = Pool::new(path.as_ref(), options);
        let committed = pool.with(|conn| newest(conn)).map_err(|e| Error::Io { message: e.message })?;
        let chain = Chain::new(committed.1.clone(), key, every);
        Ok(Self { pool, state: Mutex::new(State { chain, committed, buf: Vec::with_capacity(512) }) })
    }

    /// Every event recorded so far, oldest first (tests and `audit tail`).
    pub fn events(&self) -> Result<Vec<serde_json::Value>, Error> {
        let rows = self
            .pool
            .with(|conn| {
                let mut stmt = conn.prepare_cached("SELECT event FROM hw_audit ORDER BY seq")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect::<rusqlite::Result<Vec<String>>>()
            })
            .map_err(|e| Error::Io { message: e.message })?;
        rows.iter().map(|text| serde_json::from_str(text).map_err(|e| Error::Io { message: format!("audit row: {e}") })).collect()
    }

    fn write_checkpoint(conn: &rusqlite::Connection, cp: &Checkpoint) -> rusqlite::Result<()> {
        conn.prepare_cached("INSERT INTO hw_audit_checkpoint (seq, checkpoint) VALUES (?1, ?2)")?
            .execute(params![i64::try_from(cp.seq).unwrap_or(i64::MAX), cp.to_line()])?;
        Ok(())
    }
}

/// The newest row's number and the chain head of its record (the genesis
/// head for an empty table or a row written before the chain).
fn newest(conn: &rusqlite::Connection) -> rusqlite::Result<(i64, ChainHead)> {
    let row: Option<(i64, String)> =
        conn.prepare_cached("SELECT seq, event FROM hw_audit ORDER BY seq DESC LIMIT 1")?.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
    Ok(match row {
        Some((rowid, text)) => (rowid, ChainHead::of_record(text.as_bytes()).unwrap_or_default()),
        None => (0, ChainHead::default()),
    })
}

impl AuditSink for SqliteAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let state = &self.state;
        self.pool
            .with(|conn| {
                let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
                let st = &mut *guard;
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let max: i64 = tx.prepare_cached("SELECT coalesce(max(seq), 0) FROM hw_audit")?.query_row([], |r| r.get(0))?;
                // Another process wrote since (or a failed attempt advanced the chain): continue from the table.
                let head = if max == st.committed.0 { st.committed.1.clone() } else { newest(&tx)?.1 };
                st.chain.resume(head);
                let mut buf = std::mem::take(&mut st.buf);
                let appended = st.chain.append(event, &mut buf).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.to_string().into()))?;
                let text = std::str::from_utf8(appended.record).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                tx.prepare_cached(
                    "INSERT INTO hw_audit (ts_ms, call_id, run_id, tool, principal, tenant, decision, code, step, args_digest, approval_id, event)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )?
                .execute(params![
                    i64::try_from(event.ts_ms).unwrap_or(i64::MAX),
                    event.call_id,
                    event.run_id,
                    event.tool,
                    event.principal,
                    event.tenant,
                    event.decision.as_str(),
                    event.code.map(|c| c.as_str()),
                    event.step.map(|s| s.as_str()),
                    event.args_digest,
                    event.approval_id,
                    text,
                ])?;
                let rowid = tx.last_insert_rowid();
                if let Some(cp) = &appended.checkpoint {
                    Self::write_checkpoint(&tx, cp)?;
                }
                tx.commit()?;
                st.committed = (rowid, st.chain.head().clone());
                st.buf = buf;
                Ok(())
            })
            .map_err(|e| Error::Io { message: e.message })
    }
}

impl Drop for SqliteAuditSink {
    /// Signs the closing checkpoint over the table's newest record.
    fn drop(&mut self) {
        let state = &self.state;
        let _ = self.pool.with(|conn| {
            let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            st.chain.resume(newest(&tx)?.1);
            if let Some(cp) = st.chain.close(SystemClock.now_ms()) {
                Self::write_checkpoint(&tx, &cp)?;
            }
            tx.commit()
        });
    }
}

/// Reads a SQLite trail (rows in `seq` order, then checkpoints) and verifies it.
pub fn verify_sqlite(path: &Path, trusted: Option<&std::collections::HashSet<String>>) -> Result<Report, String> {
    let cannot = |e: rusqlite::Error| format!("cannot read the audit tables of `{}`: {e}", path.display());
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(cannot)?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
    let read = |sql: &str| -> Result<Vec<(String, String)>, String> {
        let mut stmt = conn.prepare(sql).map_err(cannot)?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?.to_string(), r.get::<_, String>(1)?))).map_err(cannot)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(cannot)
    };
    let has = |table: &str| {
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| r.get::<_, i64>(0)).map(|n| n > 0)
    };
    let events = if has("hw_audit").map_err(cannot)? { read("SELECT seq, event FROM hw_audit ORDER BY seq")? } else { Vec::new() };
    let checkpoints =
        if has("hw_audit_checkpoint").map_err(cannot)? { read("SELECT id, checkpoint FROM hw_audit_checkpoint ORDER BY id")? } else { Vec::new() };
    let at: Vec<String> = events
        .iter()
        .map(|(row, _)| format!("hw_audit row {row}"))
        .chain(checkpoints.iter().map(|(id, _)| format!("hw_audit_checkpoint row {id}")))
        .collect();
    let items = events.iter().chain(checkpoints.iter()).zip(at.iter()).map(|((_, text), at)| Item { at, bytes: text.as_bytes(), complete: true });
    Ok(harnessweaver_core::audit::verify(items, trusted))
}
