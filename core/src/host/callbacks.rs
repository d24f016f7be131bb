//! The host's audit and approval callbacks, and the shaping of what they see
//! and answer, so every language hands over the same view and reads the same
//! answer (a non-boolean answer decides nothing; a callback that raised
//! decides nothing and is logged once, here).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::{ApprovalDecided, AuditEvent, AuditSink};
use crate::error::Error;
use crate::governor::{ApprovalRequest, InlineDecision};
use crate::store::PendingApproval;

/// A host function receiving every audit event.
pub trait AuditCallback: Send + Sync {
    /// Delivers one event (`serde_json::to_value(event)` is its JSON form);
    /// `Err` carries the failure kind (an exception class), which the core logs.
    fn record(&self, event: &AuditEvent) -> Result<(), String>;

    /// Delivers an approver's decision (issue 24), to the `observe` callback
    /// only (never to a harness's `audit` callback); a binding that has no
    /// use for it keeps this default.
    fn approval_decided(&self, _decided: &ApprovalDecided) -> Result<(), String> {
        Ok(())
    }
}

/// A host function that may decide an approval inline.
pub trait ApprovalCallback: Send + Sync {
    /// Answers for the call `view` shows.
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer;
}

/// What an approval callback sees: the request and the pending approval,
/// without its internal state.
#[derive(Debug)]
pub struct ApprovalView<'a> {
    request: &'a ApprovalRequest,
    pending: &'a PendingApproval,
}

impl ApprovalView<'_> {
    /// The request `{id, tool, args_digest, approver_role, reasons, expires_ms}`.
    pub fn request(&self) -> Value {
        serde_json::to_value(self.request).unwrap_or(Value::Null)
    }

    /// The pending approval as the approver sees it (no `state`).
    pub fn approval(&self) -> Value {
        let mut value = serde_json::to_value(self.pending).unwrap_or(Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.remove("state");
        }
        value
    }
}

/// An approval callback's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Approve: the call runs.
    Approve,
    /// Deny: the call is refused `approval_denied`.
    Deny,
    /// No decision (`None`, `null`, anything that is not a boolean): the call stays pending.
    Undecided,
    /// `{"accept": "<candidate id>"}`: accept that candidate of the request
    /// (a built-in tool's "always allow"): its rule is written to the
    /// permission file and the call runs (issue 20).
    Accept {
        /// The candidate's id (`c1`, …) in the request's `candidates`.
        candidate: String,
    },
    /// The callback raised or threw `kind`: the call stays pending; logged once.
    Failed {
        /// The exception class or error name.
        kind: String,
    },
}

impl ApprovalAnswer {
    /// `Some(true)` approves, `Some(false)` denies, `None` (not a boolean) leaves it pending.
    pub fn from_bool(answer: Option<bool>) -> Self {
        match answer {
            Some(true) => Self::Approve,
            Some(false) => Self::Deny,
            None => Self::Undecided,
        }
    }

    /// A callback's answer as JSON: `true` approves, `false` denies,
    /// `{"accept": "<candidate id>"}` accepts a candidate, anything else
    /// leaves the call pending. Every binding reads its callback's return
    /// value through this, so they agree.
    pub fn from_value(answer: &Value) -> Self {
        match answer {
            Value::Bool(b) => Self::from_bool(Some(*b)),
            Value::Object(map) if map.len() == 1 => match map.get("accept") {
                Some(Value::String(candidate)) => Self::Accept { candidate: candidate.clone() },
                _ => Self::Undecided,
            },
            _ => Self::Undecided,
        }
    }
}

/// The governor's approval callback around a host's.
pub(crate) fn approval_hook(callback: Arc<dyn ApprovalCallback>) -> crate::governor::ApprovalCallback {
    Arc::new(move |request: &ApprovalRequest, pending: &PendingApproval| -> InlineDecision {
        match callback.decide(&ApprovalView { request, pending }) {
            ApprovalAnswer::Approve => InlineDecision::Approve,
            ApprovalAnswer::Deny => InlineDecision::Deny,
            ApprovalAnswer::Undecided => InlineDecision::Undecided,
            ApprovalAnswer::Accept { candidate } => InlineDecision::Accept(candidate),
            ApprovalAnswer::Failed { kind } => {
                eprintln!("harnessweaver: the approval callback raised {kind}; `{}` stays pending", request.id);
                InlineDecision::Undecided
            }
        }
    })
}

/// An audit sink delivering to a host callback: the harness's `audit`
/// callback (`observer: false`), or the `observe` callback (issue 24), which
/// also hears approvers' decisions.
pub(crate) struct CallbackSink(pub(crate) Arc<dyn AuditCallback>, pub(crate) bool);

impl fmt::Debug for CallbackSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.1 { "CallbackSink(observer)" } else { "CallbackSink" })
    }
}

impl AuditSink for CallbackSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        self.0.record(event).map_err(|kind| Error::Io { message: format!("audit callback raised {kind}") })
    }

    fn approval_decided(&self, decided: &ApprovalDecided) {
        if self.1 {
            // An observer's failure fails nothing.
            let _ignored = self.0.approval_decided(decided);
        }
    }
}
