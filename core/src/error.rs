//! Errors and load problems, each with a stable snake_case code.
//!
//! Codes are API: they appear in fixtures, in Python exceptions (`.code`), in
//! JavaScript errors (`err.code`) and in Swift. Messages are lowercase, put user
//! input in backticks, name no Rust type and are safe to show a model.

use serde::Serialize;
use std::fmt;

use crate::codes::ProblemCode;

/// One problem found while loading a harness or a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Stable snake_case code, for example `unknown_field`.
    pub code: ProblemCode,
    /// What is wrong, safe to show a model.
    pub message: String,
    /// The file the problem is in, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The field path, for example `spec.rate_limit.per_principal`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
}

impl Problem {
    /// A problem with a code and message and no location yet.
    pub fn new(code: impl Into<ProblemCode>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), file: None, line: None, column: None, path: String::new() }
    }

    /// The names of [`Self::to_value`]'s fields, in order (bindings make them properties).
    pub const FIELDS: [&'static str; 6] = ["code", "message", "file", "line", "column", "path"];

    /// The problem as hosts show it: every field present, null when unknown
    /// (the same shape in every language).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({"code": self.code, "message": self.message, "file": self.file, "line": self.line, "column": self.column, "path": self.path})
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            write!(f, ": ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{} [{}]", self.message, self.code)
    }
}

/// Every error the core raises. Decisions (allowed, refused, pending) are
/// values, not errors; these are bad input and faults.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A harness or manifest failed to load; every problem found is listed.
    Load(Vec<Problem>),
    /// A value that has no portable JSON form (NaN, huge integers, too deep).
    /// The message names the rule, never the value; `path` is the JSON
    /// pointer to it inside the value converted (empty: the value itself).
    Value { code: &'static str, message: String, path: String },
    /// A bad argument from the host (a malformed principal, an unknown option).
    InvalidArgument { code: &'static str, message: String },
    /// A file could not be read or written.
    Io { message: String },
}

impl Error {
    /// A value error with no path yet.
    pub fn value(code: &'static str, message: impl Into<String>) -> Self {
        Self::Value { code, message: message.into(), path: String::new() }
    }

    /// The error of a value found under `key` of an object: its path gains
    /// that step in front (a JSON pointer, `~` and `/` escaped; a long key
    /// is cut short, as every caller's string in a message is).
    pub fn at_key(self, key: &str) -> Self {
        self.prefixed(&crate::text::capped(key).replace('~', "~0").replace('/', "~1"))
    }

    /// The error of a value found at `index` of an array.
    pub fn at_index(self, index: usize) -> Self {
        self.prefixed(&index.to_string())
    }

    fn prefixed(self, step: &str) -> Self {
        match self {
            Self::Value { code, message, path } => Self::Value { code, message, path: format!("/{step}{path}") },
            other => other,
        }
    }

    /// Where a value error is: the JSON pointer to the value (`/` for the
    /// value itself); `None` for other errors.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            Self::Value { path, .. } if path.is_empty() => Some("/"),
            Self::Value { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The stable snake_case code.
    pub fn code(&self) -> &str {
        match self {
            Self::Load(problems) if problems.len() == 1 => problems.first().map_or(ProblemCode::LoadError.as_str(), |p| p.code.as_str()),
            Self::Load(_) => ProblemCode::LoadError.as_str(),
            Self::Value { code, .. } | Self::InvalidArgument { code, .. } => code,
            Self::Io { .. } => "io_error",
        }
    }

    /// Which family it is, for hosts that raise one error class per family:
    /// `load`, `value`, `invalid_argument` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Load(_) => "load",
            Self::Value { .. } => "value",
            Self::InvalidArgument { .. } => "invalid_argument",
            Self::Io { .. } => "other",
        }
    }

    /// The load problems as hosts show them: every field present, null when
    /// unknown (the same shape in every language).
    pub fn problems_value(&self) -> serde_json::Value {
        serde_json::Value::Array(self.problems().iter().map(Problem::to_value).collect())
    }

    /// The load problems, empty for other errors.
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Load(problems) => problems,
            _ => &[],
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Load(problems) => {
                let n = problems.len();
                write!(f, "{n} problem{} found", if n == 1 { "" } else { "s" })?;
                for p in problems {
                    write!(f, "\n  {p}")?;
                }
                Ok(())
            }
            // Caller strings in them are cut short (issue 17, item 14).
            Self::Value { message, path, .. } if !path.is_empty() => f.write_str(&crate::text::cap_message(format!("at `{path}`: {message}"))),
            Self::Value { message, .. } | Self::InvalidArgument { message, .. } | Self::Io { message } => {
                f.write_str(&crate::text::cap_message(message.clone()))
            }
        }
    }
}

impl std::error::Error for Error {}
