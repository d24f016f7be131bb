//! The effect journal (issue 21, seed 003): each external write's intent is
//! recorded before the tool runs and its outcome after, so that a crash
//! between the two leaves the entry `unknown` and a retry of the same call
//! is decided by the tool's retry mode instead of writing twice by accident.
//!
//! The state machine (the rules live here, in the core; a backend only stores):
//!
//! ```text
//! intent ──► unknown ──(outcome: returned)──────────► succeeded ──(compensate)──► compensated_by set
//!               │   ──(outcome: failed before/at the tool)──► failed
//!               │   ──(timeout, crash: nothing)──► stays unknown
//!               └──(reconcile / `effects resolve`)──► succeeded | failed   (resolution: reconciled | manual)
//! ```
//!
//! A retry is a call of the same tool with the same idempotency key (a call
//! of an external-write tool without an explicit key gets one derived from
//! the tool, its canonical args, the principal and the tenant, so repeating
//! the same call is recognised in every language). Against an `unknown`
//! entry, [`retry_rule`] says what the retry may do.
//!
//! Backends: [`MemoryJournal`] here; SQLite and Redis in harnessweaver-runtime.

mod memory;

use serde::{Deserialize, Serialize};

pub use memory::MemoryJournal;

use crate::manifest::RetryMode;
pub use crate::store::StoreError;

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    /// The intent is recorded and no outcome is: in flight, or lost to a crash or a timeout.
    Unknown,
    /// The write happened (the tool returned, or a reconcile or a person said so).
    Succeeded,
    /// The write did not happen (the tool failed, or a reconcile or a person said so).
    Failed,
}

impl EffectState {
    /// `unknown`, `succeeded` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }

    /// The state named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Unknown, Self::Succeeded, Self::Failed].into_iter().find(|s| s.as_str() == text)
    }
}

/// One external write as the journal holds it. Never args, outputs or secrets: a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectEntry {
    /// The call's id (the entry's key).
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// `sha256:` of the canonical args.
    pub args_digest: String,
    /// The key a retry repeats.
    pub idempotency_key: String,
    /// The tool's retry mode when the intent was recorded.
    pub retry_mode: String,
    /// Where it stands.
    pub state: EffectState,
    /// Who called.
    pub principal: String,
    /// When the intent was recorded (ms since the epoch).
    pub created_ms: u64,
    /// When the state last changed.
    pub updated_ms: u64,
    /// How a known state was reached: `outcome`, `reconciled` or `manual`.
    pub resolution: Option<String>,
    /// Who resolved it by hand (`effects resolve`).
    pub resolved_by: Option<String>,
    /// The call this one compensates.
    pub compensates: Option<String>,
    /// The call that compensated this one.
    pub compensated_by: Option<String>,
}

/// What [`Journal::claim`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The intent is recorded: run the tool.
    Recorded,
    /// An earlier attempt with the same tool and key is `unknown`: nothing was recorded.
    Blocked(Box<EffectEntry>),
}

/// Storage of the journal. Each method is one atomic step of the backend, so
/// that two processes retrying one key at once cannot both pass a claim.
pub trait Journal: Send + Sync {
    /// Records `intent` (state `unknown`) unless `exclusive` and the latest
    /// entry of the same tool and idempotency key is `unknown`; then returns it.
    fn claim(&self, intent: &EffectEntry, exclusive: bool) -> Result<Claim, StoreError>;

    /// Replaces the entry with `entry.call_id`.
    fn put(&self, entry: &EffectEntry) -> Result<(), StoreError>;

    /// The entry of `call_id`.
    fn get(&self, call_id: &str) -> Result<Option<EffectEntry>, StoreError>;

    /// Every entry, oldest first.
    fn list(&self) -> Result<Vec<EffectEntry>, StoreError>;
}

/// What a retry of an `unknown` write may do, by retry mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryRule {
    /// Record a new attempt with the same key and run it (the service deduplicates).
    GoThrough,
    /// Refuse with `effect_unknown` until someone reconciles or resolves the entry.
    Refuse,
    /// Ask the reconcile tool first: applied → `effect_applied`, not applied → run.
    Reconcile,
}

/// The rule for a retry in `mode`.
pub fn retry_rule(mode: RetryMode) -> RetryRule {
    match mode {
        RetryMode::None => RetryRule::Refuse,
        RetryMode::IdempotencyKey => RetryRule::GoThrough,
        RetryMode::Reconcile => RetryRule::Reconcile,
    }
}

/// Whether a claim must fail against an `unknown` attempt: every mode but `idempotency_key`.
pub fn claim_is_exclusive(mode: RetryMode) -> bool {
    retry_rule(mode) != RetryRule::GoThrough
}

/// What an invocation's outcome makes of the entry: `None` leaves it
/// `unknown` (a timeout: the tool may still be running).
pub fn state_after(outcome: &crate::call::InvokeOutcome) -> Option<EffectState> {
    use crate::call::InvokeOutcome as O;
    match outcome {
        O::Returned(_) | O::ReturnedWithSecrets { .. } | O::Content { .. } | O::NotJson { .. } => Some(EffectState::Succeeded),
        O::TimedOut => None,
        O::Failed { .. }
        | O::TransportRefused { .. }
        | O::SandboxError { .. }
        | O::SandboxUnavailable { .. }
        | O::SandboxUnsupportedPolicy { .. }
        | O::Refused { .. } => Some(EffectState::Failed),
    }
}

/// Resolves an `unknown` entry by hand (`effects resolve`): `applied` says
/// whether the write happened. Refused (`effect_not_resolvable`) when the
/// entry's outcome is known already.
pub fn resolve(journal: &dyn Journal, call_id: &str, applied: bool, by: &str, now_ms: u64) -> Result<EffectEntry, crate::error::Error> {
    use crate::codes::ArgumentCode;
    let invalid = |code: ArgumentCode, message: String| crate::error::Error::InvalidArgument { code: code.as_str(), message };
    let store = |e: StoreError| invalid(ArgumentCode::StoreUnavailable, e.to_string());
    let mut entry = journal
        .get(call_id)
        .map_err(store)?
        .ok_or_else(|| invalid(ArgumentCode::UnknownEffect, format!("the effect journal holds no call `{call_id}`")))?;
    if entry.state != EffectState::Unknown {
        return Err(invalid(
            ArgumentCode::EffectNotResolvable,
            format!("call `{call_id}` is `{}` already; only an `unknown` entry is resolved", entry.state.as_str()),
        ));
    }
    entry.state = if applied { EffectState::Succeeded } else { EffectState::Failed };
    entry.resolution = Some("manual".into());
    entry.resolved_by = Some(by.to_string());
    entry.updated_ms = now_ms;
    journal.put(&entry).map_err(store)?;
    Ok(entry)
}

/// The journal entries as JSON (for `effects list` and the host method), newest last.
pub fn entries_json(entries: &[EffectEntry], state: Option<EffectState>) -> serde_json::Value {
    serde_json::Value::Array(entries.iter().filter(|e| state.is_none_or(|s| e.state == s)).filter_map(|e| serde_json::to_value(e).ok()).collect())
}
