//! harnessweaver-core: everything that decides.
//!
//! Manifests and the harness, canonical JSON and the definition digest,
//! cel-lite, the nine-step governor, the sanitizers and the state store live
//! here. The Python, Node and Swift bindings only convert types and call host
//! handlers.

pub mod canonical;
pub mod cli;
pub mod digest;
pub mod error;
pub mod harness;
pub mod manifest;
pub mod sanitize;

pub use digest::definition_digest;
pub use error::{Error, Problem};
pub use harness::Harness;
pub use manifest::{PinState, Tool};
