//! What the core needs from the world, as traits: the transports that run
//! `http`, `code` and `mcp` tools (step 8), and the durable state stores and
//! audit sinks a harness may name.
//!
//! The core decides and holds no network, async runtime or database code.
//! The `harnessweaver-runtime` crate implements [`Backends`] with the real
//! transports, SQLite and Redis; a host that embeds only the decision path
//! (the Swift binding, a wasm build) uses [`CoreBackends`]: the memory store,
//! the JSON Lines and callback audit sinks, and native tools only.

use std::sync::Arc;

use crate::audit::AuditSink;
use crate::call::{InvokeOutcome, Ticket, Transport};
use crate::effects::{Journal, MemoryJournal};
use crate::error::Problem;
use crate::harness::{Harness, JournalBackend, StateBackend};
use crate::manifest::Tool;
use crate::store::{MemoryStore, Store};

/// Runs tickets of the tools the core reaches itself (http, code, mcp).
///
/// Blocking, `&self`, and callable from many threads at once: bindings run
/// `invoke` off their host's main thread while other calls proceed.
pub trait Invoker: Send + Sync {
    /// Runs the ticket's tool within the ticket's timeout.
    fn invoke(&self, ticket: &Ticket) -> InvokeOutcome;

    /// Why the live definition of an MCP tool differs from its manifest
    /// (the rug-pull check), or `None` when it matches or cannot be known now.
    fn live_pin_mismatch(&self, _tool: &str) -> Option<String> {
        None
    }

    /// Runs a `command` secret source (issue 21): `argv` without a shell, in
    /// `dir`, within `timeout_ms`; its stdout, or why there is none (never
    /// its output in the reason: it may hold the secret).
    fn secret_command(&self, argv: &[String], _dir: &std::path::Path, _timeout_ms: u64) -> Result<String, String> {
        Err(format!(
            "`{}` was not run: this build cannot run commands (load the harness through harnessweaver-runtime)",
            argv.first().map_or("", String::as_str)
        ))
    }

    /// Runs a built-in tool's granted command or fetch (issue 20): the core
    /// decided and re-checked everything; this only reaches the world.
    fn run_builtin(&self, ticket: &Ticket, _grant: &crate::builtins::EffectGrant<'_>) -> InvokeOutcome {
        InvokeOutcome::TransportRefused {
            reason: format!(
                "`{}` was not run: this build cannot run commands or fetch (load the harness through harnessweaver-runtime)",
                ticket.tool
            ),
        }
    }
}

/// The invoker of a build without transports: every non-native tool is
/// refused at step 8 with a message saying what is missing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTransports;

impl Invoker for NoTransports {
    fn invoke(&self, ticket: &Ticket) -> InvokeOutcome {
        let kind = match ticket.transport {
            Transport::Native { .. } => return InvokeOutcome::Failed { kind: "native tools are invoked by the host".into() },
            Transport::Http { .. } => "http",
            Transport::Code { .. } => "code",
            Transport::Mcp { .. } => "mcp",
            Transport::Process { .. } => "process",
            Transport::Builtin => "built-in tool",
        };
        InvokeOutcome::TransportRefused {
            reason: format!("`{}` was not called: this build has no {kind} transport (load the harness through harnessweaver-runtime)", ticket.tool),
        }
    }
}

/// Opens what a harness names outside the core: its state store, a SQLite
/// audit sink, and the transports of its tools.
pub trait Backends: Send + Sync {
    /// The store `spec.state` names. `clock_injected`: an injected clock
    /// (fixtures, simulations) decides instead of a shared server's clock.
    fn open_store(&self, harness: &Harness, clock_injected: bool) -> Result<Arc<dyn Store>, Box<Problem>>;

    /// The SQLite audit sink `spec.audit.sink: sqlite:…` names.
    fn open_sqlite_audit(&self, harness: &Harness, path: &str) -> Result<Arc<dyn AuditSink>, Box<Problem>>;

    /// The transports of `tools`; problems (an undeclared MCP server, one that
    /// cannot be reached at load) are returned to be reported with the rest.
    fn transports(&self, harness: &Harness, tools: &[&Tool]) -> (Arc<dyn Invoker>, Vec<Problem>);

    /// The audit sink the governor records to, given the one the harness
    /// names: the runtime wraps it to export each call as an OpenTelemetry
    /// span when an exporter is configured (issue 24). The default keeps it.
    fn observe(&self, _harness: &Harness, sink: Arc<dyn AuditSink>) -> Arc<dyn AuditSink> {
        sink
    }

    /// The effect journal `spec.effects.journal` names (issue 21); the core
    /// alone has the memory journal.
    fn open_journal(&self, harness: &Harness) -> Result<Arc<dyn Journal>, Box<Problem>> {
        match &harness.spec().effects.journal {
            JournalBackend::Memory => Ok(Arc::new(MemoryJournal::new())),
            JournalBackend::Sqlite(_) => Err(needs_runtime("spec.effects.journal", "the SQLite effect journal")),
            JournalBackend::Redis(_) => Err(needs_runtime("spec.effects.journal", "the Redis effect journal")),
        }
    }
}

/// The backends of the core alone: the memory store, no SQLite, no Redis,
/// no transports. A harness that names more does not load, and says why.
#[derive(Debug, Default, Clone, Copy)]
pub struct CoreBackends;

fn needs_runtime(path: &str, what: &str) -> Box<Problem> {
    Box::new(Problem {
        path: path.into(),
        file: Some("harness.yaml".into()),
        ..Problem::new(
            "backend_unavailable",
            format!("{what} is not part of harnessweaver-core; load the harness through harnessweaver-runtime (the Python and Node packages do), or use the memory store"),
        )
    })
}

impl Backends for CoreBackends {
    fn open_store(&self, harness: &Harness, _clock_injected: bool) -> Result<Arc<dyn Store>, Box<Problem>> {
        match &harness.spec().state {
            StateBackend::Memory => Ok(Arc::new(MemoryStore::new())),
            StateBackend::Sqlite(_) => Err(needs_runtime("spec.state", "the SQLite state store")),
            StateBackend::Redis(_) => Err(needs_runtime("spec.state", "the Redis state store")),
        }
    }

    fn open_sqlite_audit(&self, _harness: &Harness, _path: &str) -> Result<Arc<dyn AuditSink>, Box<Problem>> {
        Err(needs_runtime("spec.audit.sink", "the SQLite audit sink"))
    }

    fn transports(&self, _harness: &Harness, _tools: &[&Tool]) -> (Arc<dyn Invoker>, Vec<Problem>) {
        (Arc::new(NoTransports), Vec::new())
    }
}
