//! The audit trail: one narrow event per call, refused or not.
//!
//! An event names the tool, the principal's id, the tenant, the decision, its
//! code and step, timings and a digest of the arguments. It never carries
//! arguments, outputs, headers or secrets (rule S1), so a trail can be shipped
//! anywhere without becoming a leak.
//!
//! The JSON Lines and SQLite sinks chain their records and sign checkpoints
//! (`chain`), and `verify` judges a trail read back (`harnessweaver audit verify`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::call::{Decision, RefusalCode, Step, WouldRefuse};
use crate::error::Error;

mod chain;
mod jsonl;
mod span;
mod verify;

pub use chain::{
    key_id, parse_public_key, record_digest, record_link, Appended, Chain, ChainHead, Checkpoint, CheckpointKey, DEFAULT_CHECKPOINT_EVERY, GENESIS,
};
pub use jsonl::{read_jsonl_head, signing_key, JsonlSink};
pub use span::{attr as span_attr, SpanPhase, SpanRecord, SpanValue};
pub use verify::{verify, Finding, GoodCheckpoint, Item, Report};

/// Time spent per phase, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// Steps 1–7.
    pub decide_us: u64,
    /// Step 8 (the transport), when the tool ran.
    pub invoke_us: u64,
    /// Step 9.
    pub output_us: u64,
}

/// One call, as the audit trail records it (read back from its JSON form by
/// the `span` host method, issue 24).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub would_refuse: Vec<WouldRefuse>,
    /// The policy rules that decided (issue 24), as `layer/rule`
    /// (`layer/default` for a layer's default deny): the deny rule of a
    /// refusal, the approve rules of a pending call, the allow rules of an allowed one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// What a built-in tool's call touched, as its approver saw it (issue 20):
    /// the path of a file tool, the argv of `run_command`, the method and host
    /// of `fetch`; never content, a query, headers or a body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// A `process` tool's calls (issue 19): `true` when it runs under the OS
    /// sandbox, `false` when it runs unconfined, with the host's authority.
    /// Absent for the other transports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confined: Option<bool>,
    /// The sink arguments that argument provenance refused or sent to a
    /// human (issue 23): each argument's name, origin and the digest of its
    /// value, never the value. Absent when provenance decided nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<SinkDigest>,
    /// Whether the run's task asked for what the tool does (`flow.intent`):
    /// `requested` or `unrequested`. Absent for a tool with no `flow.intent`,
    /// and for a call stopped before step 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Time per phase.
    pub timings: Timings,
}

/// One sink argument of an audit event (issue 23): which argument, where its
/// value came from, and `sha256:` of the value's canonical JSON text (the
/// digest the refusal's reason shows), never the value itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkDigest {
    /// The argument's name.
    pub argument: String,
    /// `tainted` (seen only in untrusted content), `untraced` (seen nowhere),
    /// or `tainted_link` (a content argument of `flow.links` carries a link
    /// seen only in untrusted content).
    pub origin: String,
    /// `sha256:` of the value's canonical JSON text.
    pub digest: String,
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

    /// An approver decided a pending approval (issue 24: the approval-wait
    /// metric). Not an audit event: the trail records calls; a sink that
    /// feeds metrics or an observer takes it, the others ignore it.
    fn approval_decided(&self, _decided: &ApprovalDecided) {}
}

/// An approval decided by an approver (granted or denied), with how long it
/// waited: from the call that asked for it to the decision. Names and ids
/// only, like an audit event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecided {
    /// When it was decided (ms since the epoch).
    pub ts_ms: u64,
    /// The approval's id.
    pub approval_id: String,
    /// The tool it is for.
    pub tool: String,
    /// The tenant of the call that asked.
    pub tenant: Option<String>,
    /// `approved` or `denied`.
    pub state: String,
    /// Milliseconds from the request to the decision.
    pub wait_ms: u64,
    /// The policy version it was asked under.
    pub policy_version: String,
}

/// Whether an observer wants events now (issue 24): a host's OpenTelemetry
/// shim answers once at load from the API's tracer provider and again when a
/// provider is set or removed later. While it says no, the governor builds no
/// event for the observer (a call costs what it costs without one).
#[derive(Debug, Clone)]
pub struct Listening(Arc<AtomicBool>);

impl Listening {
    /// A switch, on or off.
    pub fn new(on: bool) -> Self {
        Self(Arc::new(AtomicBool::new(on)))
    }

    /// Whether the observer wants events.
    #[inline]
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns it on or off (takes effect from the next call).
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }
}

/// A sink, and an observer that also sees every event while it listens
/// (issue 24): the observer's failures are ignored, and events are built for
/// it even when the sink drops them.
#[derive(Debug)]
pub struct Observed {
    /// The audit sink.
    pub sink: Arc<dyn AuditSink>,
    /// Sees each event after the sink.
    pub observer: Arc<dyn AuditSink>,
    /// Whether the observer wants events now.
    pub listening: Listening,
}

impl AuditSink for Observed {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let recorded = if self.sink.is_null() { Ok(()) } else { self.sink.record(event) };
        if self.listening.get() {
            let _ignored = self.observer.record(event);
        }
        recorded
    }

    /// As null as its sink: whether the observer listens is asked per call
    /// ([`Listening`]), not once.
    fn is_null(&self) -> bool {
        self.sink.is_null()
    }

    fn approval_decided(&self, decided: &ApprovalDecided) {
        self.sink.approval_decided(decided);
        if self.listening.get() {
            self.observer.approval_decided(decided);
        }
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
