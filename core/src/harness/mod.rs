//! The harness (`harness.yaml`, `kind: Harness`) and loading it with its
//! manifests.
//!
//! - `model`: the settings as typed values with their defaults, and the loaded [`Harness`];
//! - `parse`: `harness.yaml`'s node tree into settings; `policy`: its policy layers, rules and examples;
//! - [`builtins`]: `spec.builtins`, the governed built-in tools and their access rules;
//! - [`gateway`]: `spec.gateway`, who the MCP gateway's callers are;
//! - `load`: files, globs, layer files, manifests (in parallel) and duplicate tools;
//! - `describe`: the settings as one JSON object.
//!
//! Configuration only: nothing here imports the governor, transports,
//! gateway or runtime.

pub mod builtins;
mod describe;
mod effects;
pub mod gateway;
mod gateway_http;
mod load;
mod model;
mod parse;
mod policy;
mod process_paths;
mod runs;

pub use effects::{EffectsSettings, JournalBackend, SecretSource, SecretsSettings};
pub(crate) use load::confusable_message;
pub use load::problems_of;
pub use model::{
    redact_url, ApprovalSettings, AuditSigning, AuditSink, Budgets, Effect, EnforceMode, ExampleExpect, Harness, HarnessSpec, KeySource, McpConnect,
    McpServer, Mode, PolicyExample, PolicyLayer, PolicyRule, StateBackend, StateOptions, StoreErrorMode, TaintedMode, ToolsSettings, TrifectaMode,
    ValueKind, DEFAULT_MAX_OPEN_APPROVALS,
};
pub use runs::{refusal as run_refusal, RunSource, RunsSettings};
