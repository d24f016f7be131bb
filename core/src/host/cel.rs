//! cel-lite for hosts: compiling, the variables of one evaluation (only the
//! six names, checked here with one message for every language), and a
//! compile error as a load problem.

use serde_json::{Map, Value};

use crate::cel_lite::{CompileError, NAMES};
use crate::error::{Error, Problem};

pub use crate::cel_lite::{compile, ApprovalVerdict, Bindings, Need, Outcome as CelOutcome, Program, MAX_DEPTH, MAX_LENGTH};

/// The names an expression may use, as text for messages.
const NAMES_TEXT: &str = "`principal`, `tenant`, `task`, `tool`, `args`, `labels`";

/// How much of a bad key a message shows.
const KEY_SHOWN: usize = 40;

/// One of the six variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// `principal`
    Principal,
    /// `tenant`
    Tenant,
    /// `task`
    Task,
    /// `tool`
    Tool,
    /// `args`
    Args,
    /// `labels`
    Labels,
}

impl Var {
    /// Every variable, in the order of [`VAR_NAMES`].
    pub const ALL: [Var; 6] = [Var::Principal, Var::Tenant, Var::Task, Var::Tool, Var::Args, Var::Labels];

    /// The variable's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Var::Principal => "principal",
            Var::Tenant => "tenant",
            Var::Task => "task",
            Var::Tool => "tool",
            Var::Args => "args",
            Var::Labels => "labels",
        }
    }

    /// The variable called `name`.
    pub fn parse(name: &str) -> Option<Var> {
        Var::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

fn invalid_vars(message: String) -> Error {
    Error::InvalidArgument { code: "invalid_vars", message }
}

/// The variables of one evaluation, keyed by the six names only.
#[derive(Debug, Clone, Default)]
pub struct Vars(Map<String, Value>);

impl Vars {
    /// No variables bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// The variable `key` names; `invalid_vars` for any other key.
    pub fn check_key(key: &str) -> Result<Var, Error> {
        Var::parse(key).ok_or_else(|| {
            let shown: String = key.chars().take(KEY_SHOWN).collect();
            let more = if shown.len() < key.len() { "…" } else { "" };
            invalid_vars(format!("unknown variable `{shown}{more}`; expressions can use {NAMES_TEXT}"))
        })
    }

    /// The error for a key that is not a string (`type_name` is the host's name of its type).
    pub fn non_string_key(type_name: &str) -> Error {
        invalid_vars(format!("variable names are strings, found a key of type `{type_name}`; expressions can use {NAMES_TEXT}"))
    }

    /// The error for variables that are not a mapping (`type_name` is the host's name of its type).
    pub fn not_a_mapping(type_name: &str) -> Error {
        invalid_vars(format!("`vars` must be a mapping of variables, not `{type_name}`"))
    }

    /// Binds `var`.
    pub fn insert(&mut self, var: Var, value: Value) {
        self.0.insert(var.as_str().to_string(), value);
    }

    /// Variables from a JSON object, every key checked.
    pub fn from_object(map: Map<String, Value>) -> Result<Vars, Error> {
        for key in map.keys() {
            Self::check_key(key)?;
        }
        Ok(Vars(map))
    }

    /// Variables from JSON text (Swift): `invalid_json`, or as [`Vars::from_object`].
    pub fn from_json_text(text: &str) -> Result<Vars, Error> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Self::from_object(map),
            Ok(Value::Null) => Ok(Vars::new()),
            Ok(other) => Err(Self::not_a_mapping(json_type(&other))),
            Err(e) => Err(Error::InvalidArgument { code: "invalid_json", message: format!("`vars` is not JSON: {e}") }),
        }
    }

    /// Evaluates `program` against these variables.
    pub fn evaluate(&self, program: &Program) -> CelOutcome {
        program.evaluate(&self.0)
    }

    /// The approval rule for `program` against these variables.
    pub fn approval_required(&self, program: &Program) -> ApprovalVerdict {
        program.approval_required(&self.0)
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A compile error as a load problem (code, message, line, column).
pub fn to_problem(err: &CompileError) -> Problem {
    Problem { line: Some(err.line()), column: Some(err.column()), ..Problem::new(err.code(), err.message().to_string()) }
}

/// The six names, in order.
pub const VAR_NAMES: [&str; 6] = NAMES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_agree_with_cel_lite() {
        assert_eq!(Var::ALL.map(Var::as_str), NAMES);
    }
}
