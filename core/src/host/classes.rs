//! The classes a refused or pending call raises as in a host language.
//!
//! Bindings build their exception/Error classes from [`RefusalClass::ALL`]
//! (names, docs, parents, extra attributes), and pick the one to raise with
//! [`RefusalClass::of`]: the table and the "pending wins over step" rule live
//! here once instead of in every binding.

use crate::governor::{CallResult, Decision, Step};

/// The exception class of a call that did not run.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalClass {
    /// The base of every class here.
    ToolBlocked,
    /// Step 1.
    ToolNotFound,
    /// Step 2.
    InvalidArguments,
    /// Step 3.
    DigestMismatch,
    /// Step 4.
    PolicyDenied,
    /// Step 5.
    LimitExceeded,
    /// Step 6.
    FlowBlocked,
    /// A pending call.
    ApprovalRequired,
    /// Step 7, refused.
    ApprovalDenied,
    /// Step 8.
    ToolFailed,
    /// Step 9.
    OutputRejected,
}

/// An attribute a class adds, read from the call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassExtra {
    /// `retry_after_ms` (`retryAfterMs` in JavaScript).
    RetryAfterMs,
    /// `approval`: the pending approval.
    Approval,
}

impl ClassExtra {
    /// The snake_case attribute name (the result field it reads).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RetryAfterMs => "retry_after_ms",
            Self::Approval => "approval",
        }
    }
}

impl RefusalClass {
    /// Every class, the base first, so parents exist before their children.
    pub const ALL: &'static [RefusalClass] = &[
        Self::ToolBlocked,
        Self::ToolNotFound,
        Self::InvalidArguments,
        Self::DigestMismatch,
        Self::PolicyDenied,
        Self::LimitExceeded,
        Self::FlowBlocked,
        Self::ApprovalRequired,
        Self::ApprovalDenied,
        Self::ToolFailed,
        Self::OutputRejected,
    ];

    /// The class name in every language.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ToolBlocked => "ToolBlocked",
            Self::ToolNotFound => "ToolNotFound",
            Self::InvalidArguments => "InvalidArguments",
            Self::DigestMismatch => "DigestMismatch",
            Self::PolicyDenied => "PolicyDenied",
            Self::LimitExceeded => "LimitExceeded",
            Self::FlowBlocked => "FlowBlocked",
            Self::ApprovalRequired => "ApprovalRequired",
            Self::ApprovalDenied => "ApprovalDenied",
            Self::ToolFailed => "ToolFailed",
            Self::OutputRejected => "OutputRejected",
        }
    }

    /// The class's documentation, one line.
    pub const fn doc(self) -> &'static str {
        match self {
            Self::ToolBlocked => {
                "A call that did not run (refused, or waiting for approval); `code` and `step` are the core's, `result` is the whole call result."
            }
            Self::ToolNotFound => "Step 1 (resolve): unknown tool, no manifest, disabled, tenant not enabled.",
            Self::InvalidArguments => "Step 2 (validate): the arguments fail the schema or a payload constraint.",
            Self::DigestMismatch => "Step 3 (pin): the tool changed since it was pinned.",
            Self::PolicyDenied => "Step 4 (policy): a scope is missing or a policy rule denies.",
            Self::LimitExceeded => "Step 5 (limits): a run budget is spent or a rate limit hit (`retry_after_ms`).",
            Self::FlowBlocked => "Step 6 (flow): the lethal-trifecta rule.",
            Self::ApprovalRequired => "Step 7: the call waits for a human; `approval` is the pending approval.",
            Self::ApprovalDenied => "Step 7: the approval was denied, or is not pending.",
            Self::ToolFailed => "Step 8 (invoke): the handler raised, timed out or returned no JSON.",
            Self::OutputRejected => "Step 9 (output): the output fails the tool's output constraints.",
        }
    }

    /// The parent class; `None` for the base (its parent is the binding's base error).
    pub const fn parent(self) -> Option<RefusalClass> {
        match self {
            Self::ToolBlocked => None,
            _ => Some(Self::ToolBlocked),
        }
    }

    /// The step whose refusals raise as this class.
    pub const fn step(self) -> Option<Step> {
        match self {
            Self::ToolBlocked => None,
            Self::ToolNotFound => Some(Step::Resolve),
            Self::InvalidArguments => Some(Step::Validate),
            Self::DigestMismatch => Some(Step::Pin),
            Self::PolicyDenied => Some(Step::Policy),
            Self::LimitExceeded => Some(Step::Limits),
            Self::FlowBlocked => Some(Step::Flow),
            Self::ApprovalRequired | Self::ApprovalDenied => Some(Step::Approval),
            Self::ToolFailed => Some(Step::Invoke),
            Self::OutputRejected => Some(Step::Output),
        }
    }

    /// The extra attributes instances expose.
    pub const fn extras(self) -> &'static [ClassExtra] {
        match self {
            Self::LimitExceeded => &[ClassExtra::RetryAfterMs],
            Self::ApprovalRequired => &[ClassExtra::Approval],
            _ => &[],
        }
    }

    /// The class of a call that ended so: pending → `ApprovalRequired`,
    /// refused → by its step (`ToolBlocked` without one), allowed → `None`.
    pub fn of(decision: Decision, step: Option<Step>) -> Option<RefusalClass> {
        match decision {
            Decision::Allowed => None,
            Decision::Pending => Some(Self::ApprovalRequired),
            Decision::Refused => Some(match step {
                None => Self::ToolBlocked,
                Some(Step::Approval) => Self::ApprovalDenied,
                Some(s) => Self::ALL.iter().copied().find(|c| c.step() == Some(s) && *c != Self::ApprovalRequired).unwrap_or(Self::ToolBlocked),
            }),
        }
    }

    /// The class of `result` (see [`RefusalClass::of`]).
    pub fn of_result(result: &CallResult) -> Option<RefusalClass> {
        Self::of(result.decision, result.step)
    }
}
