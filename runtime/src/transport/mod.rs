//! Transports: how the core itself reaches `http`, `code` and `mcp` tools
//! (step 8 of the governor). Native tools stay with the host.
//!
//! # The entry point
//!
//! [`Governor::invoke`](harnessweaver_core::governor::Governor::invoke) (and
//! [`Runtime::invoke`](harnessweaver_core::runtime::Runtime::invoke)) takes the
//! [`Ticket`] that `begin` handed out and returns an [`InvokeOutcome`] for
//! `finish`. It is blocking, takes `&self`, holds no lock while it waits
//! and is `Send + Sync`, so:
//!
//! - Rust: [`Runtime::call`](harnessweaver_core::runtime::Runtime::call) does begin →
//!   invoke → finish for every non-native tool.
//! - Python: `begin` with the GIL, then `py.allow_threads(|| runtime.invoke(&ticket))`,
//!   then `finish`.
//! - Node: `begin` on the JS thread, `invoke` inside an `AsyncTask` (libuv's
//!   worker pool), `finish` when the promise settles.
//!
//! Many calls may be in flight at once, from any threads.
//!
//! # Transports
//!
//! - [`http`]: POST the arguments as JSON (ureq, rustls with the platform's
//!   roots); refused in test mode (R14).
//! - [`code`]: the code in `code_arg` runs in Monty inside a pooled worker
//!   process, `harnessweaver-sandbox` (S4), found by [`code::find_worker`].
//! - [`mcp`]: `tools/call` on an MCP server declared in harness.yaml (rmcp on
//!   a tokio runtime owned here); the served definitions are checked against
//!   the manifests at load or first use (the rug-pull check). In test mode a
//!   server reached by `url` is refused like http (R14), and not connected.
//! - [`process`]: a local program, argv only, one JSON request and response
//!   on stdin/stdout (`harnessweaver-process-v1`); with `sandbox.required`
//!   under the OS sandbox of [`confine`] or not at all.
//!
//! The values a transport hands out for a call (http `headers_env`, an MCP
//! server's `env` and `headers_env`) come back with the output
//! ([`InvokeOutcome::ReturnedWithSecrets`]) for step 9 to mask.
//!
//! Every failure comes back as an outcome the governor maps to a stable code
//! (`timeout`, `handler_error`, `transport_refused`, `sandbox_error`,
//! `sandbox_unavailable`, `sandbox_unsupported_policy`), with a
//! message that names settings and variables, never their values.

pub mod builtin;
pub mod code;
pub mod confine;
pub mod http;
mod locate;
pub mod mcp;
pub mod process;
pub mod relay;
mod secret_command;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use harnessweaver_core::error::Problem;
use harnessweaver_core::governor::{InvokeOutcome, Ticket, Transport};
use harnessweaver_core::harness::{HarnessSpec, McpServer, Mode};
use harnessweaver_core::manifest::{self, Tool};

/// What a host may choose about the transports.
#[derive(Debug, Clone, Default)]
pub struct TransportOptions {
    /// The `harnessweaver-sandbox` worker binary. Default: see [`code::find_worker`].
    pub sandbox_worker: Option<PathBuf>,
    /// Idle workers kept warm per memory limit (default 2).
    pub sandbox_pool_size: Option<usize>,
    /// The `harnessweaver-confine` launcher of confined process tools.
    /// Default: see [`confine::find_launcher`].
    pub confine_launcher: Option<PathBuf>,
    /// The confinement mechanisms to assume instead of this machine's
    /// ([`confine::Probe::current`]): for tests that simulate a machine
    /// lacking one.
    pub sandbox_probe: Option<confine::Probe>,
}

/// How one tool is reached, compiled at load.
#[derive(Debug)]
enum ToolTransport {
    Http(http::HttpTool),
    Code(code::CodeTool),
    Mcp(mcp::McpTool),
    /// A tool of a `url` MCP server in test mode: never reached (R14), not
    /// even connected at load.
    McpUrlInTestMode,
    Process(Box<process::ProcessTool>),
}

/// The transports of one loaded harness: the http client, the sandbox pool
/// and the MCP connections, with each tool's settings.
#[derive(Default)]
pub struct Transports {
    tools: HashMap<String, ToolTransport>,
    test_mode: bool,
    http: http::HttpClient,
    code: Option<Arc<code::CodePool>>,
    mcp: Option<mcp::McpHub>,
    process: Option<process::ProcessRunner>,
    /// The confinement of the built-in `run_command` (issue 20), when enabled.
    builtin_confinement: Option<confine::Confinement>,
}

impl std::fmt::Debug for Transports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transports").field("tools", &self.tools.len()).field("test_mode", &self.test_mode).finish()
    }
}

impl Transports {
    /// Compiles the transport settings of `tools`. Problems (an MCP server
    /// the harness does not declare, one that cannot be reached at load) are
    /// returned, not raised, so the load reports them with the rest.
    pub fn build<'a>(spec: &HarnessSpec, tools: impl Iterator<Item = &'a Tool>, options: &TransportOptions) -> (Transports, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut compiled = HashMap::new();
        let mut mcp_tools = Vec::new();
        let mut wants_code = false;
        let mut wants_process = false;
        for tool in tools {
            let m = tool.manifest();
            match m.transport {
                manifest::Transport::Native | manifest::Transport::Builtin => {}
                manifest::Transport::Http => {
                    let max_response = tool.max_output_bytes().saturating_mul(http::RESPONSE_FACTOR).max(http::RESPONSE_FLOOR);
                    compiled.insert(
                        m.name.clone(),
                        ToolTransport::Http(http::HttpTool {
                            url: m.url.clone().unwrap_or_default(),
                            headers_env: m.headers_env.clone(),
                            max_response_bytes: max_response,
                        }),
                    );
                }
                manifest::Transport::Code => {
                    wants_code = true;
                    compiled.insert(m.name.clone(), ToolTransport::Code(code::CodeTool { code_arg: m.code_arg.clone(), limits: m.limits }));
                }
                manifest::Transport::Process => {
                    if let Some(spec) = &m.process {
                        wants_process = true;
                        compiled.insert(m.name.clone(), ToolTransport::Process(Box::new(process::ProcessTool::new(spec.clone()))));
                    }
                }
                manifest::Transport::Mcp => {
                    let server = m.server.clone().unwrap_or_default();
                    let name = mcp::server_name(&server).unwrap_or_default().to_string();
                    let Some(config) = spec.mcp_servers.get(&name) else {
                        let mut p = Problem::new("unknown_mcp_server", format!("`{server}` names no server of `spec.mcp.servers` in harness.yaml"));
                        p.file = tool.file().map(str::to_string);
                        p.path = "spec.server".into();
                        problems.push(p);
                        continue;
                    };
                    if spec.mode == Mode::Test && matches!(config, McpServer::Url { .. }) {
                        compiled.insert(m.name.clone(), ToolTransport::McpUrlInTestMode);
                        continue;
                    }
                    let t = mcp::McpTool {
                        server: name,
                        tool: m.name.clone(),
                        digest: tool.digest().to_string(),
                        file: tool.file().map(str::to_string),
                        output_schema: m.output_schema.clone(),
                    };
                    mcp_tools.push(t.clone());
                    compiled.insert(m.name.clone(), ToolTransport::Mcp(t));
                }
            }
        }
        let confinement = || confine::Confinement::new(options.confine_launcher.as_deref(), options.sandbox_probe.clone());
        let code =
            wants_code.then(|| Arc::new(code::CodePool::confined_by(options.sandbox_worker.clone(), options.sandbox_pool_size, confinement())));
        if let Some(pool) = &code {
            // Start one worker per memory limit in the background, so the
            // first call finds it warm (a missing worker is reported by the call).
            let mut limits: Vec<u64> = compiled
                .values()
                .filter_map(|t| match t {
                    ToolTransport::Code(c) => Some(c.limits.max_memory_mb),
                    _ => None,
                })
                .collect();
            limits.sort_unstable();
            limits.dedup();
            let weak = Arc::downgrade(pool);
            let _ = std::thread::Builder::new().name("harnessweaver-sandbox-warm".into()).spawn(move || {
                for mb in limits {
                    match weak.upgrade() {
                        Some(pool) => {
                            let _ = pool.warm(mb);
                        }
                        None => return,
                    }
                }
            });
        }
        let mcp = if mcp_tools.is_empty() {
            None
        } else {
            match mcp::McpHub::new(&spec.mcp_servers, spec.mcp_connect, mcp_tools) {
                Ok(hub) => {
                    problems.extend(hub.load_problems());
                    Some(hub)
                }
                Err(message) => {
                    problems.push(Problem::new("mcp_unavailable", message));
                    None
                }
            }
        };
        let process = wants_process.then(|| process::ProcessRunner::new(confinement()));
        let wants_commands =
            spec.builtins.as_ref().is_some_and(|b| b.tools.contains(&harnessweaver_core::harness::builtins::BuiltinTool::RunCommand));
        let builtin_confinement = wants_commands.then(confinement);
        let transports = Transports {
            tools: compiled,
            test_mode: spec.mode == Mode::Test,
            http: http::HttpClient::default(),
            code,
            mcp,
            process,
            builtin_confinement,
        };
        (transports, problems)
    }

    /// Runs the ticket's tool through its transport, within the ticket's
    /// timeout. Native tickets are the host's: they come back as a failure.
    pub fn invoke(&self, ticket: &Ticket) -> InvokeOutcome {
        self.run(ticket)
    }

    fn run(&self, ticket: &Ticket) -> InvokeOutcome {
        if matches!(ticket.transport, Transport::Native { .. }) {
            return InvokeOutcome::Failed { kind: "native tools are invoked by the host".into() };
        }
        match self.tools.get(&ticket.tool) {
            Some(ToolTransport::Http(tool)) => {
                if self.test_mode {
                    return InvokeOutcome::TransportRefused {
                        reason: format!("`{}` was not called: the harness is in test mode, where the http transport does not call out", ticket.tool),
                    };
                }
                self.http.invoke(tool, ticket)
            }
            Some(ToolTransport::Code(tool)) => match &self.code {
                Some(pool) => pool.invoke(tool, ticket),
                None => InvokeOutcome::SandboxError { message: "no sandbox is configured".into() },
            },
            Some(ToolTransport::Mcp(tool)) => match &self.mcp {
                Some(hub) => hub.invoke(tool, ticket),
                None => InvokeOutcome::TransportRefused { reason: format!("`{}`: its MCP server is not configured", ticket.tool) },
            },
            Some(ToolTransport::McpUrlInTestMode) => InvokeOutcome::TransportRefused {
                reason: format!("`{}` was not called: the harness is in test mode, where an MCP server reached by url is not called", ticket.tool),
            },
            Some(ToolTransport::Process(tool)) => match &self.process {
                Some(runner) => runner.invoke(tool, ticket),
                None => InvokeOutcome::Failed { kind: "no process runner is configured".into() },
            },
            None => InvokeOutcome::Failed { kind: "no transport is configured for this tool".into() },
        }
    }

    /// Whether the live definition of an MCP tool differs from its manifest
    /// (connecting first when the harness connects lazily). `None` when the
    /// tool is not an MCP tool or its server cannot be reached now (the call
    /// then fails at invoke with the reason).
    pub fn live_pin_mismatch(&self, tool: &str) -> Option<String> {
        match (self.tools.get(tool), &self.mcp) {
            (Some(ToolTransport::Mcp(t)), Some(hub)) => hub.mismatch(t),
            _ => None,
        }
    }
}

impl harnessweaver_core::backends::Invoker for Transports {
    fn invoke(&self, ticket: &Ticket) -> InvokeOutcome {
        self.run(ticket)
    }

    fn live_pin_mismatch(&self, tool: &str) -> Option<String> {
        Transports::live_pin_mismatch(self, tool)
    }

    fn secret_command(&self, argv: &[String], dir: &std::path::Path, timeout_ms: u64) -> Result<String, String> {
        secret_command::run(argv, dir, timeout_ms)
    }

    fn run_builtin(&self, ticket: &Ticket, grant: &harnessweaver_core::builtins::EffectGrant<'_>) -> InvokeOutcome {
        let fallback;
        let confinement = match &self.builtin_confinement {
            Some(c) => c,
            None => {
                fallback = confine::Confinement::new(None, None);
                &fallback
            }
        };
        builtin::run(grant, ticket, confinement, &self.http, self.test_mode)
    }
}

/// What `doctor` warns about before any call: `headers_env` and MCP `env` /
/// `headers_env` variables that are not set now (naming the variable, never
/// a value).
pub fn environment_warnings(harness: &harnessweaver_core::harness::Harness) -> Vec<String> {
    let mut out = Vec::new();
    // One confinement for every process tool (finding the launcher reads
    // this process's memory map), made only when a tool needs it.
    let confinement = std::cell::OnceCell::new();
    for tool in harness.tools() {
        let m = tool.manifest();
        let file = tool.file().unwrap_or_default();
        for (header, var) in &m.headers_env {
            if std::env::var_os(var).is_none() {
                out.push(format!("{file}: tool `{}`: environment variable `{var}` for header `{header}` is not set; its calls will fail", m.name));
            }
        }
        if let Some(p) = &m.process {
            out.extend(process_warning(file, &m.name, p, &confinement));
        }
    }
    for (name, server) in &harness.spec().mcp_servers {
        let vars: Vec<(&String, &String)> = match server {
            harnessweaver_core::harness::McpServer::Command { env, .. } => env.iter().collect(),
            harnessweaver_core::harness::McpServer::Url { headers_env, .. } => headers_env.iter().collect(),
        };
        for (key, var) in vars {
            if std::env::var_os(var).is_none() {
                out.push(format!("harness.yaml: MCP server `{name}`: environment variable `{var}` for `{key}` is not set"));
            }
        }
    }
    out
}

/// Why the harness's code tools cannot run here, for `doctor` to fail on:
/// the sandbox worker is not found. `None` when it is, or no tool needs it.
pub fn missing_worker(harness: &harnessweaver_core::harness::Harness) -> Option<String> {
    let wants_worker = harness.tools().iter().any(|tool| tool.manifest().transport == manifest::Transport::Code);
    if !wants_worker {
        return None;
    }
    code::find_worker(None).err()
}

/// `doctor`'s word on a process tool: unconfined (trusted host code), or
/// confined on a machine that lacks a mechanism (its calls will be refused).
fn process_warning(file: &str, name: &str, p: &manifest::ProcessSpec, confinement: &std::cell::OnceCell<confine::Confinement>) -> Option<String> {
    if !p.sandbox.required {
        return Some(format!(
            "{file}: tool `{name}`: process tool runs unconfined (no `sandbox.required: true`): it has the host's authority, like native code"
        ));
    }
    let confinement = confinement.get_or_init(|| confine::Confinement::new(None, None));
    confinement.check(p).err().map(|refusal| format!("{file}: tool `{name}`: its calls will be refused: {}", refusal.message()))
}

#[cfg(test)]
mod tests {
    /// Bindings move the runtime across threads and call `invoke` from many.
    #[test]
    fn the_runtime_and_tickets_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::Transports>();
        send_sync::<harnessweaver_core::runtime::Runtime>();
        send_sync::<harnessweaver_core::governor::Ticket>();
    }
}
