//! A host function the core calls with values (a JavaScript function, say):
//! the one trait a binding implements for its audit, observe and approval
//! callbacks. What each callback receives, and how an approval's answer is
//! read, is shaped here, so every binding that uses it agrees.

use serde_json::{json, Value};

use super::callbacks::{ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback};
use crate::audit::{ApprovalDecided, AuditEvent};

/// A function of the host language, called with values.
pub trait HostFn: Send + Sync {
    /// Calls the function with `args`: its answer as a value (null when it
    /// has no JSON form), or `Err` with the kind of what it raised or threw.
    fn call(&self, args: &[Value]) -> Result<Value, String>;
}

/// An audit callback gets each event's JSON form; an observer also gets
/// `{"approval_decided": {...}}` for an approver's decision (issue 24).
impl<F: HostFn> AuditCallback for F {
    fn record(&self, event: &AuditEvent) -> Result<(), String> {
        self.call(&[serde_json::to_value(event).map_err(|e| e.to_string())?]).map(drop)
    }

    fn approval_decided(&self, decided: &ApprovalDecided) -> Result<(), String> {
        self.call(&[json!({ "approval_decided": decided })]).map(drop)
    }
}

/// An approval callback gets the request and the pending approval; its answer is read by [`ApprovalAnswer::from_value`].
impl<F: HostFn> ApprovalCallback for F {
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer {
        match self.call(&[view.request(), view.approval()]) {
            Err(kind) => ApprovalAnswer::Failed { kind },
            Ok(answer) => ApprovalAnswer::from_value(&answer),
        }
    }
}
