//! cel-lite for Swift: compile an expression once, evaluate it against
//! variables given as JSON text (a JSON object with some of `principal`,
//! `tenant`, `task`, `tool`, `args`, `labels`).
//!
//! Conversion and error mapping only; parsing, evaluation and the approval
//! rule are the core's, and so is reading the JSON text (`host::cel::gather_json`:
//! the whole text must be JSON, but only the parts the expression reads are
//! parsed into values). An evaluation's outcome is a value (`CelOutcome`:
//! the result as JSON text, or unevaluable with the reason), never an error;
//! errors are a compile error (with code, line and column) or bad variables.

use std::fmt;
use std::sync::Arc;

use harnessweaver_core::host::cel::{self as core_cel, CelOutcome as Outcome, Part};
use harnessweaver_core::host::Error as CoreError;

/// A cel-lite error: the expression did not compile, or the variables are not a JSON object of the six names.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Error)]
pub enum CelLiteError {
    /// The expression did not compile; `rendered` shows its line with a caret under the spot.
    Compile { code: String, message: String, line: u64, column: u64, rendered: String },
    /// The variables are not valid JSON, not an object, name something other than the six variables, or a part the
    /// expression reads cannot be converted (`nesting_too_deep`).
    InvalidVars { code: String, detail: String },
}

impl fmt::Display for CelLiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Compile { code, rendered, .. } => write!(f, "{rendered} [{code}]"),
            Self::InvalidVars { code, detail } => write!(f, "{detail} [{code}]"),
        }
    }
}

impl std::error::Error for CelLiteError {}

/// The result of an evaluation.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum CelOutcome {
    /// The expression's value, as JSON text.
    Value { json: String },
    /// A runtime error (a missing key, a wrong type, an overflow, a cost limit) stopped it.
    Unevaluable { reason: String },
}

/// The approval rule's verdict: true, unevaluable or not a bool means required.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CelApprovalVerdict {
    /// Whether a human must approve.
    pub required: bool,
    /// Why the expression could not decide, when it could not.
    pub reason: Option<String>,
}

/// A compiled cel-lite expression; immutable and thread-safe.
#[derive(uniffi::Object)]
pub struct CelProgram {
    inner: core_cel::Program,
}

impl CelProgram {
    /// The parts of the variables the expression reads; the check and its words are the core's.
    fn parts(&self, vars_json: &str) -> Result<Vec<Part>, CelLiteError> {
        core_cel::gather_json(&self.inner, vars_json)
            .map_err(|e: CoreError| CelLiteError::InvalidVars { code: e.code().to_string(), detail: e.to_string() })
    }
}

#[uniffi::export]
impl CelProgram {
    /// The source text.
    pub fn source(&self) -> String {
        self.inner.source().to_string()
    }

    /// The variable names the expression uses, in order of first use.
    pub fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    /// Evaluates against `vars_json` (a JSON object); the outcome is a value or unevaluable.
    pub fn evaluate(&self, vars_json: String) -> Result<CelOutcome, CelLiteError> {
        Ok(match self.inner.evaluate_parts(&self.parts(&vars_json)?) {
            // Serialising a `Value` cannot fail (its keys are strings).
            Outcome::Value(v) => CelOutcome::Value { json: serde_json::to_string(&v).unwrap_or_default() },
            Outcome::Unevaluable { reason } => CelOutcome::Unevaluable { reason },
        })
    }

    /// The approval rule against `vars_json` (a JSON object).
    pub fn approval_required(&self, vars_json: String) -> Result<CelApprovalVerdict, CelLiteError> {
        let verdict = self.inner.approval_required_parts(&self.parts(&vars_json)?);
        Ok(CelApprovalVerdict { required: verdict.required, reason: verdict.reason })
    }
}

/// Compiles a cel-lite expression.
#[uniffi::export]
pub fn cel_lite_compile(text: String) -> Result<Arc<CelProgram>, CelLiteError> {
    core_cel::compile(&text).map(|inner| Arc::new(CelProgram { inner })).map_err(|e| CelLiteError::Compile {
        code: e.code().to_string(),
        message: e.message().to_string(),
        line: e.line() as u64,
        column: e.column() as u64,
        rendered: e.render(),
    })
}
