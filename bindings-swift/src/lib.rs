//! Swift bindings (UniFFI) for harnessweaver.
//!
//! This crate only converts values between the core and UniFFI's types and maps
//! the core's errors to one error enum whose cases carry the stable `code`;
//! every decision is made in the core. JSON values cross as JSON text (Swift's
//! `Codable` reads and writes it); tool descriptions come back as JSON text too,
//! one object per tool, with every field `Tool::describe()` gives.
//!
//! The generated Swift sources are committed in `generated/`;
//! `tests/swift/test_uniffi.py` regenerates them and fails on drift.

mod cel_lite;

use std::fmt;
use std::sync::Arc;

use harnessweaver_core::host::{self as core, Error as CoreError, Host, ManifestSource};
use serde_json::Value;

uniffi::setup_scaffolding!();

/// One load problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Problem {
    /// Stable snake_case code, for example `unknown_field`.
    pub code: String,
    /// What is wrong, safe to show a model.
    pub message: String,
    /// The file the problem is in, when there is one.
    pub file: Option<String>,
    /// 1-based line, when known.
    pub line: Option<u64>,
    /// 1-based column, when known.
    pub column: Option<u64>,
    /// The field path, for example `spec.timeout`; empty for a whole file.
    pub path: String,
}

/// Every error; each case carries the stable snake_case `code`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Error)]
pub enum HarnessweaverError {
    /// A harness or manifest failed to load; `problems` lists every problem found.
    Load { code: String, detail: String, problems: Vec<Problem> },
    /// A value with no portable JSON form (NaN, huge integers, nesting too deep, bad JSON text).
    InvalidValue { code: String, detail: String },
    /// A bad argument from the caller.
    InvalidArgument { code: String, detail: String },
    /// Anything else (for example a file that cannot be read).
    Other { code: String, detail: String },
}

impl fmt::Display for HarnessweaverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Load { code, detail, .. }
            | Self::InvalidValue { code, detail }
            | Self::InvalidArgument { code, detail }
            | Self::Other { code, detail } => write!(f, "{detail} [{code}]"),
        }
    }
}

impl std::error::Error for HarnessweaverError {}

impl From<CoreError> for HarnessweaverError {
    fn from(err: CoreError) -> Self {
        let code = err.code().to_string();
        let detail = err.to_string();
        match &err {
            CoreError::Load(problems) => Self::Load {
                code,
                detail,
                problems: problems
                    .iter()
                    .map(|p| Problem {
                        code: p.code.to_string(),
                        message: p.message.clone(),
                        file: p.file.clone(),
                        line: p.line.map(|n| n as u64),
                        column: p.column.map(|n| n as u64),
                        path: p.path.clone(),
                    })
                    .collect(),
            },
            CoreError::Value { .. } => Self::InvalidValue { code, detail },
            CoreError::InvalidArgument { .. } => Self::InvalidArgument { code, detail },
            _ => Self::Other { code, detail },
        }
    }
}

fn parse_json(text: &str) -> Result<Value, HarnessweaverError> {
    serde_json::from_str(text)
        .map_err(|e| HarnessweaverError::InvalidValue { code: "invalid_json".to_string(), detail: format!("not valid JSON: {e}") })
}

fn json_text(value: &Value) -> String {
    // Serialising a `Value` cannot fail (its keys are strings).
    serde_json::to_string(value).unwrap_or_default()
}

/// A loaded harness (read only: Swift takes no calls; the core's own backends).
#[derive(uniffi::Object)]
pub struct Harness {
    inner: Host,
}

#[uniffi::export]
impl Harness {
    /// Every tool's description as a JSON object text, in load order.
    pub fn tools_json(&self) -> Vec<String> {
        self.inner.tools().map(|t| json_text(&t.describe())).collect()
    }

    /// The tool names, in load order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.tools().map(|t| t.name().to_string()).collect()
    }
}

fn load_error(e: core::LoadErrors) -> HarnessweaverError {
    CoreError::Load(e.problems).into()
}

/// Loads `harness.yaml` and every manifest it names.
#[uniffi::export]
pub fn load(path: String) -> Result<Arc<Harness>, HarnessweaverError> {
    Ok(Arc::new(Harness { inner: Host::inspect(path.as_ref()).map_err(load_error)? }))
}

/// The definition digest (`sha256:…`); `input_schema_json` is the schema as JSON text,
/// `output_schema_json` the output schema's, when the tool declares one.
#[uniffi::export(default(output_schema_json = None))]
pub fn definition_digest(
    name: String,
    description: String,
    input_schema_json: String,
    output_schema_json: Option<String>,
) -> Result<String, HarnessweaverError> {
    let schema = parse_json(&input_schema_json)?;
    let output = output_schema_json.as_deref().map(parse_json).transpose()?;
    Ok(core::tool_definition_digest(&name, &description, &schema, output.as_ref())?)
}

/// The canonical JSON text of the value given as JSON text.
#[uniffi::export]
pub fn canonical_json(value_json: String) -> Result<String, HarnessweaverError> {
    let value = parse_json(&value_json)?;
    Ok(core::canonical::to_string(&value)?)
}

/// Parses one `kind: Tool` manifest (YAML or JSON text) and returns its description as JSON text.
#[uniffi::export]
pub fn tool_description_from_manifest(manifest: String) -> Result<String, HarnessweaverError> {
    let source = ManifestSource::Text { text: manifest, origin: ManifestSource::DEFAULT_ORIGIN.into() };
    Ok(json_text(&core::describe_manifest(&source).map_err(load_error)?))
}
