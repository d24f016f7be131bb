//! harnessweaver-core: everything that decides.
//!
//! Manifests and the harness, canonical JSON and the definition digest,
//! cel-lite, the nine-step governor, the sanitizers, the state store
//! interface with the memory store, and audit events live here, with no
//! async runtime, HTTP, MCP, Redis or SQLite. What reaches the world
//! (transports, durable stores, the MCP gateway, the CLI) is the
//! `harnessweaver-runtime` crate, plugged in through [`backends::Backends`].
//! The Python, Node and Swift bindings only convert types and call host
//! handlers.

pub mod audit;
pub mod backends;
pub mod builtins;
mod call;
pub mod canonical;
pub mod cel_lite;
mod check;
mod clock;
mod codes;
mod digest;
#[cfg(test)]
mod docs_reference;
pub mod effects;
pub mod error;
pub use harness::gateway as gateway_spec;
pub mod governor;
pub mod harness;
pub mod host;
pub mod lock;
pub mod manifest;
mod parallel;
pub mod pin;
pub mod progress;
pub mod runtime;
pub mod sanitize;
pub mod store;
mod suggest;
mod text;
mod validate;
mod yaml;

pub use call::{CallContext, CallResult, Decision, Principal, Step};
pub use clock::{Clock, IdSource, ManualClock, SystemClock};
pub use codes::{ArgumentCode, AuditFinding, ContentDrop, LoadCode, ProblemCode, ProgressDrop, RefusalClass, RefusalCode, ValueCode};
pub use digest::{definition_digest, is_well_formed as digest_is_well_formed, sha256_tagged, tool_definition_digest};
pub use error::{Error, Problem};
pub use harness::Harness;
pub use manifest::{PinState, Tool};
pub use runtime::{LoadOptions, Runtime};
pub use validate::SchemaValidator;
pub use yaml::parse_yaml;
