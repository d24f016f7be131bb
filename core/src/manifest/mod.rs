//! Tool manifests (`apiVersion: harnessweaver/v1`, `kind: Tool`).
//!
//! - `model`: the typed manifest, its defaults and the names its enums are written with;
//! - `parse`: a YAML node tree into a checked manifest, every problem with its line, column and field path;
//! - `schema`: the checks of `spec.input_schema`;
//! - `tool`: the loaded [`Tool`] (digest, pin state, description);
//! - `load`: text or a value into a [`Tool`].
//!
//! Parsing never stops at the first problem: every problem in a manifest is
//! collected. Files and globs are the harness loader's (`crate::harness`).

mod effect;
mod load;
mod model;
mod parse;
mod process;
mod schema;
mod tool;
mod value_path;
// Issue 22: MCP tool annotations derived from a manifest.
mod annotations;

pub use annotations::mcp_annotations;
pub use effect::{is_handle_name, missing_contract_message, needs_contract, EffectContract, EffectField, EffectKind, RetryMode};
pub use model::{
    confusable_key, is_valid_name, mcp_server_name, risk_name, sanitizer_name, side_effect_name, transport_name, Approval, ApprovalBy,
    ClientCapability, CodeLimits, Constraint, ContentKinds, Duration, Grant, Location, Manifest, OutputPolicy, PayloadConstraints, PinState,
    ProcessSandbox, ProcessSpec, Rate, RateLimit, RatePeriod, ResolvedProcess, Risk, Sanitizer, SideEffect, Transport, TrustLabel, API_VERSION,
    COMMAND_SEARCH_PATH, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PAYLOAD_BYTES, SANDBOXES,
};
pub use tool::Tool;
pub use value_path::ValuePath;

pub(crate) use load::{nonempty, parse_text};
pub(crate) use model::RISKS;
pub(crate) use parse::{check_condition, check_header, parse_manifest};
