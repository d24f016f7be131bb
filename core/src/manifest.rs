//! Tool manifests (`apiVersion: harnessweaver/v1`, `kind: Tool`).
//!
//! STUB: the loader work replaces this with the full parser. The public
//! signatures below are the contract the bindings code against.

use serde_json::Value;

use crate::error::{Error, Problem};

/// Whether a manifest's `definition_digest` matches its current definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinState {
    /// The pin equals the digest of the current definition.
    Pinned,
    /// The pin differs: every call is refused with `digest_mismatch`.
    Mismatched,
    /// No pin: `doctor` warns and prints the digest to pin.
    Unpinned,
}

impl PinState {
    /// `pinned`, `mismatched` or `unpinned`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pinned => "pinned",
            Self::Mismatched => "mismatched",
            Self::Unpinned => "unpinned",
        }
    }
}

/// A loaded tool: its manifest, where it came from, and its digest.
#[derive(Debug, Clone)]
pub struct Tool {
    name: String,
}

impl Tool {
    /// Parses one manifest given as a JSON-like value (a tool registered in code).
    pub fn from_manifest_value(_value: &Value, origin: &str) -> Result<Tool, Error> {
        Err(Error::Load(vec![Problem::new("not_implemented", format!("cannot load `{origin}` yet"))]))
    }

    /// Parses one manifest given as YAML or JSON text.
    pub fn from_manifest_text(_text: &str, origin: &str) -> Result<Tool, Error> {
        Err(Error::Load(vec![Problem::new("not_implemented", format!("cannot load `{origin}` yet"))]))
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pin state.
    pub fn pin(&self) -> PinState {
        PinState::Unpinned
    }

    /// Everything about the tool as one JSON object: name, description,
    /// input_schema, digest, pin, and every spec field with defaults filled in.
    pub fn describe(&self) -> Value {
        Value::Null
    }
}
