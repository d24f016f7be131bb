//! harnessweaver-runtime: what reaches the world.
//!
//! The core ([`harnessweaver_core`]) decides; this crate connects it: the
//! http, code and mcp [`transport`]s, the SQLite and Redis [`store`]s and the
//! SQLite audit sink (all through [`RuntimeBackends`], the core's
//! [`Backends`](harnessweaver_core::backends::Backends)), the MCP
//! [`gateway`], and the `harnessweaver` command line ([`cli`]).

mod backends;
pub mod cli;
pub mod console;
pub mod gateway;
pub mod store;
pub mod telemetry;
pub mod transport;

use std::path::Path;

use harnessweaver_core::{Error, LoadOptions, Runtime};

pub use backends::RuntimeBackends;

/// Governor options with every backend: [`RuntimeBackends`] with the
/// default transport settings.
pub fn governor_options() -> harnessweaver_core::governor::GovernorOptions {
    harnessweaver_core::governor::GovernorOptions { backends: Some(RuntimeBackends::shared(Default::default())), ..Default::default() }
}

/// Loads a harness with every backend it may name (durable stores,
/// transports): [`Runtime::load`] with [`RuntimeBackends`] unless the
/// options already name backends.
pub fn load(path: impl AsRef<Path>, mut options: LoadOptions) -> Result<Runtime, Error> {
    if options.governor.backends.is_none() {
        options.governor.backends = Some(RuntimeBackends::shared(Default::default()));
    }
    Runtime::load(path, options)
}
