//! The audit trail: one narrow event per call, refused or not.
//!
//! An event names the tool, the principal's id, the tenant, the decision, its
//! code and step, timings and a digest of the arguments. It never carries
//! arguments, outputs, headers or secrets (rule S1), so a trail can be shipped
//! anywhere without becoming a leak.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::call::{Decision, RefusalCode, Step, WouldRefuse};
use crate::error::Error;

/// Time spent per phase, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Timings {
    /// Steps 1–7.
    pub decide_us: u64,
    /// Step 8 (the transport), when the tool ran.
    pub invoke_us: u64,
    /// Step 9.
    pub output_us: u64,
}

/// One call, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEvent {
    /// When the call was made (ms since the epoch).
    pub ts_ms: u64,
    /// The call's id.
    pub call_id: String,
    /// The run's id.
    pub run_id: String,
    /// The tool named by the call (may not exist: `unknown_tool`).
    pub tool: String,
    /// The principal's id.
    pub principal: String,
    /// The tenant.
    pub tenant: Option<String>,
    /// `allowed`, `refused` or `pending`.
    pub decision: Decision,
    /// The code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The step that decided.
    pub step: Option<Step>,
    /// `sha256:` of the canonical args (absent when args had no canonical form).
    pub args_digest: Option<String>,
    /// When an approver edited the args: the digest of the args first asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_args_digest: Option<String>,
    /// The approval involved, if any.
    pub approval_id: Option<String>,
    /// Redactions per kind, and whether the output was cut (allowed calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redactions: Option<BTreeMap<String, u64>>,
    /// Whether the output was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// What policy rules in shadow mode would have refused (`would_refuse`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_refuse: Vec<WouldRefuse>,
    /// A `process` tool's calls (issue 19): `true` when it runs under the OS
    /// sandbox, `false` when it runs unconfined, with the host's authority.
    /// Absent for the other transports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confined: Option<bool>,
    /// Time per phase.
    pub timings: Timings,
}

/// One field of an event's JSON form, borrowed, for a binding that builds
/// its native object (a Python dict) without going through JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventField<'a> {
    /// A number.
    U64(u64),
    /// A string, or null.
    Str(Option<&'a str>),
    /// A boolean.
    Bool(bool),
    /// Redactions per kind.
    Counts(&'a BTreeMap<String, u64>),
    /// `would_refuse`.
    Refusals(&'a [WouldRefuse]),
    /// Time per phase.
    Timings(&'a Timings),
}

impl AuditEvent {
    /// The names of the JSON form's fields, in its order.
    pub const FIELDS: [&'static str; 17] = [
        "ts_ms", "call_id", "run_id", "tool", "principal", "tenant", "decision", "code", "step", "args_digest", "original_args_digest",
        "approval_id", "redactions", "truncated", "would_refuse", "confined", "timings",
    ];

    /// The JSON form's fields in the order of [`AuditEvent::FIELDS`], `None`
    /// where the JSON form leaves one out (core/tests/host_api.rs checks the two agree).
    pub fn fields(&self) -> [Option<EventField<'_>>; 17] {
        use EventField::{Bool, Counts, Refusals, Str, Timings as Times, U64};
        [
            Some(U64(self.ts_ms)),
            Some(Str(Some(&self.call_id))),
            Some(Str(Some(&self.run_id))),
            Some(Str(Some(&self.tool))),
            Some(Str(Some(&self.principal))),
            Some(Str(self.tenant.as_deref())),
            Some(Str(Some(self.decision.as_str()))),
            Some(Str(self.code.map(RefusalCode::as_str))),
            Some(Str(self.step.map(Step::as_str))),
            Some(Str(self.args_digest.as_deref())),
            self.original_args_digest.as_deref().map(|d| Str(Some(d))),
            Some(Str(self.approval_id.as_deref())),
            self.redactions.as_ref().map(Counts),
            self.truncated.map(Bool),
            Some(Refusals(&self.would_refuse)).filter(|_| !self.would_refuse.is_empty()),
            self.confined.map(Bool),
            Some(Times(&self.timings)),
        ]
    }
}

/// Where audit events go.
pub trait AuditSink: Send + Sync + fmt::Debug {
    /// Records one event. A sink that fails reports it through `Err`; the
    /// governor then refuses nothing already decided but logs the failure.
    fn record(&self, event: &AuditEvent) -> Result<(), Error>;

    /// True for a sink that drops every event: the governor then builds no
    /// events and computes no args digest only they would carry.
    fn is_null(&self) -> bool {
        false
    }
}

/// Drops every event (`audit: {sink: none}`).
#[derive(Debug, Default)]
pub struct NullSink;

impl AuditSink for NullSink {
    fn record(&self, _event: &AuditEvent) -> Result<(), Error> {
        Ok(())
    }

    fn is_null(&self) -> bool {
        true
    }
}

/// Keeps events in memory (tests, fixtures, `audit tail` in one process).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<AuditEvent>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl AuditSink for MemorySink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
        Ok(())
    }
}

/// Appends one JSON object per line to a file.
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    /// The file, and the line buffer every event is written into (kept, so a call allocates nothing).
    file: Mutex<(File, Vec<u8>)>,
}

impl JsonlSink {
    /// Opens (creating) `path` for appending.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::Io { message: format!("cannot create `{}`: {e}", dir.display()) })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::Io { message: format!("cannot open audit file `{}`: {e}", path.display()) })?;
        Ok(Self { path, file: Mutex::new((file, Vec::with_capacity(512))) })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AuditSink for JsonlSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let mut guard = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, line) = &mut *guard;
        line.clear();
        serde_json::to_writer(&mut *line, event).map_err(|e| Error::Io { message: format!("audit event: {e}") })?;
        line.push(b'\n');
        // One write per line, so concurrent writers (threads or processes with
        // O_APPEND) never interleave within a line.
        file.write_all(line).map_err(|e| Error::Io { message: format!("cannot write audit file `{}`: {e}", self.path.display()) })
    }
}
