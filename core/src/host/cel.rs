//! cel-lite for hosts: compiling, gathering the variables of one evaluation,
//! and a compile error as a load problem.
//!
//! The rule every binding follows: only what an expression reads is
//! converted ([`Program::reads`]: of a map, the fields a selection chain
//! names; anything else whole), so a value with no JSON form, or a 10 MB
//! blob, in a part no evaluation reads is neither converted nor reported.
//! [`gather`] applies it to any host's values through [`Host`]; Node's
//! JavaScript gathers the same parts itself. Keys of `vars` are the six names
//! only ([`check_key`], one message for every language).

use std::marker::PhantomData;

use serde::de::IgnoredAny;
use serde_json::Value;

use crate::cel_lite::{CompileError, NAMES};
use crate::error::{Error, Problem};

pub use crate::cel_lite::{compile, ApprovalVerdict, Outcome as CelOutcome, Part, Program, Read, MAX_DEPTH, MAX_LENGTH};

/// The six names, in order.
pub const VAR_NAMES: [&str; 7] = NAMES;

/// The names an expression may use, as text for messages.
const NAMES_TEXT: &str = "`principal`, `tenant`, `task`, `tool`, `args`, `labels`, `run`";

/// How much of a bad key a message shows.
const KEY_SHOWN: usize = 40;

fn invalid_vars(message: String) -> Error {
    Error::InvalidArgument { code: "invalid_vars", message }
}

/// `Ok` for a key of `vars` that is one of the six names; `invalid_vars` for any other.
pub fn check_key(key: &str) -> Result<(), Error> {
    if NAMES.contains(&key) {
        return Ok(());
    }
    let shown: String = key.chars().take(KEY_SHOWN).collect();
    let more = if shown.len() < key.len() { "…" } else { "" };
    Err(invalid_vars(format!("unknown variable `{shown}{more}`; expressions can use {NAMES_TEXT}")))
}

/// The error for a key that is not a string (`type_name` is the host's name of its type).
pub fn non_string_key(type_name: &str) -> Error {
    invalid_vars(format!("variable names are strings, found a key of type `{type_name}`; expressions can use {NAMES_TEXT}"))
}

/// The error for variables that are not a mapping (`type_name` is the host's name of its type).
pub fn not_a_mapping(type_name: &str) -> Error {
    invalid_vars(format!("`vars` must be a mapping of variables, not `{type_name}`"))
}

/// A host's values, as [`gather`] reads them.
pub trait Host {
    /// A value of the host.
    type Value;
    /// A map of the host, read field by field.
    type Map;
    /// `value` as a map read field by field; `None` when it is not one (it is then converted whole).
    fn as_map(&self, value: &Self::Value) -> Result<Option<Self::Map>, Error>;
    /// The field `name` of `map` (for read `read` of the program); `None` when absent.
    fn field(&self, map: &Self::Map, read: usize, name: &str) -> Result<Option<Self::Value>, Error>;
    /// `value` converted whole; `depth` is how far below its variable it sits.
    fn convert(&self, value: &Self::Value, depth: usize) -> Result<Value, Error>;
}

/// The parts of `vars` (a map from the six names, keys already checked;
/// `None` for no variables) that `program` reads, one per [`Program::reads`].
pub fn gather<H: Host>(host: &H, program: &Program, vars: Option<&H::Map>) -> Result<Vec<Part>, Error> {
    let reads = program.reads();
    let mut parts = Vec::with_capacity(reads.len());
    // The map gathered for each read, if any.
    let mut maps: Vec<Option<H::Map>> = Vec::with_capacity(reads.len());
    for (i, read) in reads.iter().enumerate() {
        let from = match read.parent {
            None => vars,
            Some(p) => maps.get(p).and_then(Option::as_ref),
        };
        let value = match from {
            Some(map) => host.field(map, i, &read.name)?,
            None => None,
        };
        let (part, map) = match value {
            None => (Part::Absent, None),
            Some(value) => match if read.whole { None } else { host.as_map(&value)? } {
                Some(map) => (Part::Map, Some(map)),
                None => (Part::Value(host.convert(&value, read.depth)?), None),
            },
        };
        parts.push(part);
        maps.push(map);
    }
    Ok(parts)
}

/// The parts `program` reads of variables given as JSON text (a JSON object
/// of some of the six names, or `null`): the whole text must be JSON
/// (`invalid_json`), but only the parts read are parsed into values.
pub fn gather_json(program: &Program, text: &str) -> Result<Vec<Part>, Error> {
    serde_json::from_str::<IgnoredAny>(text).map_err(|e| invalid_json(&e))?;
    let top = text.trim();
    if top == "null" {
        return gather(&JsonText(PhantomData), program, None);
    }
    let vars = JsonText(PhantomData).as_map(&top)?.ok_or_else(|| not_a_mapping(json_type(top)))?;
    vars.iter().try_for_each(|(key, _)| check_key(key))?;
    gather(&JsonText(PhantomData), program, Some(&vars))
}

fn invalid_json(e: &serde_json::Error) -> Error {
    Error::InvalidArgument { code: "invalid_json", message: format!("`vars` is not JSON: {e}") }
}

fn json_type(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        _ => "number",
    }
}

/// Values as the JSON text of valid JSON, each parsed only when converted.
struct JsonText<'t>(PhantomData<&'t str>);

impl<'t> Host for JsonText<'t> {
    type Value = &'t str;
    type Map = Vec<(String, &'t str)>;

    fn as_map(&self, value: &&'t str) -> Result<Option<Self::Map>, Error> {
        let Some(mut rest) = value.strip_prefix('{') else { return Ok(None) };
        let mut fields = Vec::new();
        loop {
            rest = rest.trim_start().trim_start_matches(',').trim_start();
            if rest.starts_with('}') || rest.is_empty() {
                return Ok(Some(fields));
            }
            let (key, after) = rest.split_at(json_len(rest));
            let key: String = serde_json::from_str(key).map_err(|e| invalid_json(&e))?;
            let after = after.trim_start().trim_start_matches(':').trim_start();
            let (value, after) = after.split_at(json_len(after));
            fields.push((key, value));
            rest = after;
        }
    }

    fn field(&self, map: &Self::Map, _read: usize, name: &str) -> Result<Option<&'t str>, Error> {
        // The last of repeated keys, as a full parse keeps.
        Ok(map.iter().rev().find(|(key, _)| key == name).map(|(_, value)| *value))
    }

    fn convert(&self, value: &&'t str, _depth: usize) -> Result<Value, Error> {
        serde_json::from_str(value).map_err(|e| {
            if e.to_string().starts_with("recursion limit exceeded") {
                Error::value("nesting_too_deep", "value nests deeper than 128 levels (JSON text)")
            } else {
                invalid_json(&e)
            }
        })
    }
}

/// The length of the JSON value, or key, at the start of `text` (valid JSON).
fn json_len(text: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' if depth == 0 => return i + 1,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth <= 1 => return if depth == 1 { i + 1 } else { i },
            b'}' | b']' => depth -= 1,
            b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

/// A compile error as a load problem (code, message, line, column).
pub fn to_problem(err: &CompileError) -> Problem {
    Problem { line: Some(err.line()), column: Some(err.column()), ..Problem::new(err.code(), err.message().to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lengths() {
        for (text, len) in [(r#""a\"b" : 1"#, 6), ("12.5e3, ", 6), (r#"{"a": [1, "}", {"b": "\\"}]}, 1"#, 28), ("[[]]]", 4), ("true}", 4)] {
            assert_eq!(json_len(text), len, "{text}");
        }
    }
}
