//! The `mcp` transport: a tool served by an MCP server that harness.yaml
//! declares under `spec.mcp.servers` (`server: mcp://NAME` in the manifest).
//!
//! - A `command` server is started as a child process speaking stdio. Its
//!   environment is a short list inherited from the host ([`INHERITED_ENV`],
//!   what a program needs to start: `PATH`, `HOME`, …) plus `env`, each value
//!   read from the host variable it names. A `url` server is reached over
//!   streamable HTTP with headers from `headers_env` (S1).
//! - The client is the official Rust SDK, `rmcp`. It is async: one tokio
//!   runtime lives inside the hub, and every public function blocks on it
//!   (from a scoped thread when the caller is itself inside a runtime).
//! - When the server is connected (at load with `spec.mcp.connect: eager`,
//!   the default, or at the first call with `lazy`) and again after every
//!   reconnect, `tools/list` is compared with the manifests. A connection
//!   that has died (the server process exited, the HTTP session ended) is
//!   reopened by the next call, at step 3, before that call is served: the
//!   server is started again, listed and compared again. Failed reconnects
//!   back off ([`RECONNECT_BACKOFF_MIN`] doubling up to
//!   [`RECONNECT_BACKOFF_MAX`]); calls in between are refused without
//!   trying. A tool whose
//!   served `{name, description, inputSchema}` has another digest than its
//!   manifest's definition, or that is no longer served, is refused with
//!   `digest_mismatch` at step 3, every call, until the manifest is reviewed
//!   and the harness reloaded (the rug pull).
//! - `tools/call` carries the validated arguments. The output is the
//!   `structuredContent` when the server sends one, otherwise the text
//!   contents joined with newlines, otherwise (images, audio, embedded
//!   resources) the content parts, each governed by step 9 (issue 22).
//!   The values the server was handed (`env`, `headers_env`) go with the
//!   output, so step 9 masks them wherever the server echoes them (issue 17,
//!   item 10). `isError` is `handler_error`; a server that cannot be reached, or that
//!   closes the connection during the call, is `transport_refused`; the
//!   ticket's timeout is `timeout`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

use harnessweaver_core::error::Problem;
use harnessweaver_core::governor::{InvokeOutcome, Ticket};
use harnessweaver_core::harness::{McpConnect, McpServer};
use harnessweaver_core::tool_definition_digest;

use super::relay::{self, Upstream};

/// Variables a `command` server inherits from the host (besides its `env`).
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR", "SYSTEMROOT"];

/// How long connecting (start, `initialize`, `tools/list`) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The wait after a failed reconnect before the next attempt…
pub const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(250);

/// …doubling after each further failure, up to this.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// `NAME` of `mcp://NAME`.
pub use harnessweaver_core::manifest::mcp_server_name as server_name;

/// One MCP tool's settings.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// The server's name in `spec.mcp.servers`.
    pub server: String,
    /// The tool's name (on the server too).
    pub tool: String,
    /// The digest of the manifest's current definition.
    pub digest: String,
    /// The manifest file, for load problems.
    pub file: Option<String>,
    /// The manifest's `output_schema` (issue 22): the gateway's own, part of
    /// the digest the served definition is compared under.
    pub output_schema: Option<Value>,
}

/// The client of one connection: [`Upstream`] routes what the server sends
/// during a call to that call's relay (issue 22).
type Client = RunningService<RoleClient, Upstream>;

/// The values handed to a server when it was started or reached (its `env`
/// or `headers_env` values); none when it was handed nothing.
type Secrets = Option<Arc<[String]>>;

/// A connection just opened: the client, the values it was handed, and why
/// served definitions differ from their manifests (tool name → reason).
type Opened = (Arc<Client>, Vec<String>, HashMap<String, String>);

#[derive(Default)]
struct Connection {
    client: Option<Arc<Client>>,
    /// The values handed to the server when it was started or reached (its
    /// `env` or `headers_env` values): step 9 masks their echoes.
    secrets: Secrets,
    /// Tool name → why its served definition does not match, from the last `tools/list`.
    mismatches: HashMap<String, String>,
    /// A `tools/list` has been compared.
    checked: bool,
    /// Connects that failed in a row, and when the next may be tried.
    failures: u32,
    retry_at: Option<Instant>,
    /// Why the last connect failed.
    last_error: String,
}

/// Whether a client can still carry requests: not cancelled, and its
/// service loop still running (it ends when the server's stdout closes or
/// the HTTP transport fails; rmcp's `is_closed` alone does not see that).
fn alive(client: &Client) -> bool {
    !client.is_closed() && !client.is_transport_closed()
}

struct Slot {
    name: String,
    config: McpServer,
    tools: Vec<McpTool>,
    conn: Mutex<Connection>,
}

/// The MCP servers of one harness, their connections and the runtime they run on.
pub struct McpHub {
    rt: tokio::runtime::Runtime,
    slots: HashMap<String, Slot>,
    load_problems: Vec<Problem>,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub").field("servers", &self.slots.len()).finish()
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        // Close every session (stdio children are killed with their transport).
        let clients: Vec<Arc<Client>> = self.slots.values().filter_map(|s| s.conn.lock().ok().and_then(|mut c| c.client.take())).collect();
        for client in clients {
            if let Ok(client) = Arc::try_unwrap(client) {
                let _ = self.block(async move { tokio::time::timeout(Duration::from_secs(2), client.cancel()).await });
            }
        }
    }
}

impl McpHub {
    /// The hub for `tools`; with `eager`, every server they use is connected
    /// and checked now (problems in [`McpHub::load_problems`]).
    pub fn new(servers: &BTreeMap<String, McpServer>, connect: McpConnect, tools: Vec<McpTool>) -> Result<McpHub, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("harnessweaver-mcp")
            .enable_all()
            .build()
            .map_err(|e| format!("the MCP runtime could not start ({})", e.kind()))?;
        let mut slots: HashMap<String, Slot> = HashMap::new();
        for tool in tools {
            let Some(config) = servers.get(&tool.server) else { continue };
            slots
                .entry(tool.server.clone())
                .or_insert_with(|| Slot {
                    name: tool.server.clone(),
                    config: config.clone(),
                    tools: Vec::new(),
                    conn: Mutex::new(Connection::default()),
                })
                .tools
                .push(tool);
        }
        let mut hub = McpHub { rt, slots, load_problems: Vec::new() };
        if connect == McpConnect::Eager {
            let mut names: Vec<&String> = hub.slots.keys().collect();
            names.sort();
            let mut problems = Vec::new();
            for name in names {
                if let Some(slot) = hub.slots.get(name) {
                    if let Err(message) = hub.connected(slot) {
                        let mut p = Problem::new("mcp_unavailable", message);
                        p.file = Some("harness.yaml".into());
                        p.path = format!("spec.mcp.servers.{name}");
                        problems.push(p);
                    }
                }
            }
            hub.load_problems = problems;
        }
        Ok(hub)
    }

    /// Problems found while connecting at load.
    pub fn load_problems(&self) -> Vec<Problem> {
        self.load_problems.clone()
    }

    /// Runs a future to completion on the hub's runtime.
    fn block<F: std::future::Future + Send>(&self, fut: F) -> F::Output
    where
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            // Inside someone's runtime block_on would panic: wait from a plain thread.
            std::thread::scope(|s| match s.spawn(|| self.rt.block_on(fut)).join() {
                Ok(out) => out,
                Err(payload) => std::panic::resume_unwind(payload),
            })
        } else {
            self.rt.block_on(fut)
        }
    }

    /// The live client of `slot` and the secrets it was handed, connecting
    /// (and checking the served definitions) when there is none or the old
    /// one has closed.
    fn connected(&self, slot: &Slot) -> Result<(Arc<Client>, Secrets), String> {
        let mut conn = slot.conn.lock().map_err(|_| format!("MCP server `{}` is unusable", slot.name))?;
        if let Some(client) = conn.client.as_ref().filter(|c| alive(c)) {
            return Ok((client.clone(), conn.secrets.clone()));
        }
        conn.client = None;
        if let Some(at) = conn.retry_at {
            let now = Instant::now();
            if at > now {
                return Err(format!("{} (the next attempt in {} ms)", conn.last_error, at.duration_since(now).as_millis().max(1)));
            }
        }
        match self.open(slot) {
            Ok((client, secrets, mismatches)) => {
                conn.mismatches = mismatches;
                conn.checked = true;
                conn.failures = 0;
                conn.retry_at = None;
                conn.client = Some(client.clone());
                conn.secrets = (!secrets.is_empty()).then(|| secrets.into());
                Ok((client, conn.secrets.clone()))
            }
            Err(message) => {
                // Bounded backoff: 250 ms, 500 ms, … up to 30 s between attempts.
                let wait = RECONNECT_BACKOFF_MIN.saturating_mul(1u32 << conn.failures.min(16)).min(RECONNECT_BACKOFF_MAX);
                conn.failures = conn.failures.saturating_add(1);
                conn.retry_at = Some(Instant::now() + wait);
                conn.last_error.clone_from(&message);
                Err(message)
            }
        }
    }

    /// Starts or reaches the server, and lists and compares its tools.
    fn open(&self, slot: &Slot) -> Result<Opened, String> {
        let client = self.block(async { tokio::time::timeout(CONNECT_TIMEOUT, connect(&slot.name, &slot.config)).await });
        let (client, secrets) = match client {
            Ok(Ok(c)) => c,
            Ok(Err(message)) => return Err(message),
            Err(_) => return Err(format!("MCP server `{}` did not answer within {} s", slot.name, CONNECT_TIMEOUT.as_secs())),
        };
        let listed = self.block(async { tokio::time::timeout(CONNECT_TIMEOUT, client.list_all_tools()).await });
        let served = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(_)) => return Err(format!("MCP server `{}` did not list its tools", slot.name)),
            Err(_) => return Err(format!("MCP server `{}` did not list its tools within {} s", slot.name, CONNECT_TIMEOUT.as_secs())),
        };
        Ok((Arc::new(client), secrets, compare(&slot.name, &slot.tools, &served)))
    }

    /// Why `tool`'s served definition does not match its manifest, if it
    /// does not. Connects first when the harness connects lazily, and
    /// reconnects (re-listing) when the connection has died, so a restarted
    /// server is checked before it serves a call; a server that cannot be
    /// reached gives `None` (the call then fails at invoke).
    pub fn mismatch(&self, tool: &McpTool) -> Option<String> {
        let slot = self.slots.get(&tool.server)?;
        let fresh = slot.conn.lock().ok().is_some_and(|c| c.checked && c.client.as_deref().is_some_and(alive));
        if !fresh && self.connected(slot).is_err() {
            // Unreachable: the last list's verdict stands (a tool once found
            // changed stays refused); otherwise the call fails at invoke.
            return slot.conn.lock().ok().and_then(|c| c.mismatches.get(&tool.tool).cloned());
        }
        slot.conn.lock().ok().and_then(|c| c.mismatches.get(&tool.tool).cloned())
    }

    /// `tools/call`.
    pub fn invoke(&self, tool: &McpTool, ticket: &Ticket) -> InvokeOutcome {
        let Some(slot) = self.slots.get(&tool.server) else {
            return InvokeOutcome::TransportRefused { reason: format!("`{}`: MCP server `{}` is not configured", ticket.tool, tool.server) };
        };
        let (client, secrets) = match self.connected(slot) {
            Ok(c) => c,
            Err(message) => return InvokeOutcome::TransportRefused { reason: format!("`{}` was not called: {message}", ticket.tool) },
        };
        // A reconnect re-lists the tools: a definition that changed since the
        // call passed step 3 stops it here.
        if let Some(why) = slot.conn.lock().ok().and_then(|c| c.mismatches.get(&tool.tool).cloned()) {
            return InvokeOutcome::TransportRefused { reason: format!("`{}` was not called: {why}", ticket.tool) };
        }
        let arguments: Map<String, Value> = ticket.args.as_object().cloned().unwrap_or_default();
        let params = CallToolRequestParams::new(tool.tool.clone()).with_arguments(arguments);
        let timeout = Duration::from_millis(ticket.timeout_ms);
        // Read here, on the caller's thread: `block` may poll on another.
        let relay_of_call = relay::for_call(&ticket.call_id);
        let called = self.block(async { tokio::time::timeout(timeout, call_relayed(&client, params, relay_of_call)).await });
        match called {
            Err(_) => InvokeOutcome::TimedOut,
            Ok(Err(e)) => {
                let closed = matches!(e, rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)) || !alive(&client);
                if closed {
                    // The server died (or the session ended) under this call:
                    // forget the client, so the next call starts it again.
                    if let Ok(mut conn) = slot.conn.lock() {
                        if conn.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, &client)) {
                            conn.client = None;
                        }
                    }
                    InvokeOutcome::TransportRefused {
                        reason: format!("`{}`: MCP server `{}` closed the connection during the call", ticket.tool, tool.server),
                    }
                } else {
                    InvokeOutcome::Failed { kind: service_error(&e) }
                }
            }
            Ok(Ok(result)) => match (output(result), secrets) {
                (InvokeOutcome::Returned(value), Some(secrets)) => InvokeOutcome::ReturnedWithSecrets { value, secrets },
                (InvokeOutcome::Content { parts, .. }, secrets) => InvokeOutcome::Content { parts, secrets },
                (outcome, _) => outcome,
            },
        }
    }
}

fn service_error(e: &rmcp::ServiceError) -> String {
    match e {
        rmcp::ServiceError::McpError(data) => format!("mcp error {}", data.code.0),
        rmcp::ServiceError::Timeout { .. } => "mcp request timed out".into(),
        _ => "mcp request failed".into(),
    }
}

/// The call's output: structured content, else joined text, else (images,
/// audio, embedded resources: issue 22) the content parts, which step 9
/// governs one by one.
fn output(result: CallToolResult) -> InvokeOutcome {
    if result.is_error == Some(true) {
        return InvokeOutcome::Failed { kind: "the tool reported an error".into() };
    }
    if let Some(structured) = result.structured_content {
        return InvokeOutcome::Returned(structured);
    }
    let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let items = content.as_array().cloned().unwrap_or_default();
    let texts: Vec<&str> = items
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    if !items.is_empty() && texts.len() == items.len() {
        return InvokeOutcome::Returned(Value::String(texts.join("\n")));
    }
    if items.is_empty() {
        return InvokeOutcome::Returned(content);
    }
    InvokeOutcome::Content { parts: items, secrets: None }
}

/// Compares the served tools with the manifests.
fn compare(server: &str, tools: &[McpTool], served: &[rmcp::model::Tool]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for tool in tools {
        let Some(live) = served.iter().find(|t| t.name == tool.tool.as_str()) else {
            out.insert(tool.tool.clone(), format!("MCP server `{server}` no longer serves `{}`", tool.tool));
            continue;
        };
        let description = live.description.as_deref().unwrap_or_default();
        let schema = Value::Object((*live.input_schema).clone());
        match tool_definition_digest(&tool.tool, description, &schema, tool.output_schema.as_ref()) {
            Ok(digest) if digest == tool.digest => {}
            Ok(digest) => {
                out.insert(
                    tool.tool.clone(),
                    format!("MCP server `{server}` now serves another definition of `{}` (digest `{digest}`) than its manifest", tool.tool),
                );
            }
            Err(_) => {
                out.insert(tool.tool.clone(), format!("MCP server `{server}` serves an input schema for `{}` that cannot be pinned", tool.tool));
            }
        }
    }
    out
}

/// The definitions a server serves now, as `{name, description, input_schema}`
/// objects (for writing manifests and for tests).
pub fn list_served(name: &str, config: &McpServer) -> Result<Vec<Value>, String> {
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("the MCP runtime could not start ({})", e.kind()))?;
    rt.block_on(async {
        let (client, _secrets) =
            tokio::time::timeout(CONNECT_TIMEOUT, connect(name, config)).await.map_err(|_| format!("MCP server `{name}` did not answer"))??;
        let tools = client.list_all_tools().await.map_err(|_| format!("MCP server `{name}` did not list its tools"))?;
        let _ = client.cancel().await;
        Ok(tools
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "description": t.description.as_deref().unwrap_or_default(),
                    "input_schema": Value::Object((*t.input_schema).clone()),
                })
            })
            .collect())
    })
}

/// `tools/call` with the call's relay (issue 22, [`relay`]): the relay gets the progress notifications of this call's token, and
/// the log messages and requests the server sends while it is the only call
/// of the connection. A call dropped at its timeout is cancelled upstream.
async fn call_relayed(
    client: &Client,
    params: CallToolRequestParams,
    relay_of_call: Option<Arc<dyn relay::CallRelay>>,
) -> Result<CallToolResult, rmcp::ServiceError> {
    use rmcp::model::{CallToolRequest, CancelledNotificationParam, ClientRequest, ServerResult};
    use rmcp::service::PeerRequestOptions;
    let calls = client.service().calls.clone();
    let number = relay::starting(&calls, relay_of_call);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match client.send_cancellable_request(request, PeerRequestOptions::no_options()).await {
        Ok(handle) => handle,
        Err(e) => {
            relay::not_started(&calls, number);
            return Err(e);
        }
    };
    let key = relay::progress_key(&handle.progress_token);
    relay::started(&calls, number, key.clone());
    /// Ends the call's entry, and cancels it upstream when dropped unanswered (a timeout).
    struct Guard<'a> {
        client: &'a Client,
        calls: relay::InFlightTable,
        key: String,
        id: Option<rmcp::model::RequestId>,
    }
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            relay::ended(&self.calls, &self.key);
            if let Some(request_id) = self.id.take() {
                let peer = self.client.peer().clone();
                tokio::spawn(async move {
                    let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(request_id), Some("timed out".into()))).await;
                });
            }
        }
    }
    let mut guard = Guard { client, calls, key, id: Some(handle.id.clone()) };
    let answer = handle.await_response().await;
    // What the server sent before its answer is handled in tasks of their own
    // (rmcp spawns one per notification), which may not have run yet: a task
    // spawned now is scheduled after them, so waiting for it lets them reach
    // this call's relay while its caller still listens (issue 22).
    let _ = tokio::spawn(async {}).await;
    guard.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// Starts or reaches the server; also returns the values it was handed
/// from the host's environment (`env` values, `headers_env` values).
async fn connect(name: &str, config: &McpServer) -> Result<(Client, Vec<String>), String> {
    let mut secrets = Vec::new();
    match config {
        McpServer::Command { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().kill_on_drop(true);
            for var in INHERITED_ENV {
                if let Some(v) = std::env::var_os(var) {
                    cmd.env(var, v);
                }
            }
            for (key, var) in env {
                let Some(v) = std::env::var_os(var) else {
                    return Err(format!("environment variable `{var}` for `{key}` of MCP server `{name}` is not set"));
                };
                if let Some(text) = v.to_str() {
                    secrets.push(text.to_string());
                }
                cmd.env(key, v);
            }
            let (transport, _stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("MCP server `{name}` could not start `{command}` ({})", e.kind()))?;
            let client =
                Upstream::new(&secrets).serve(transport).await.map_err(|_| format!("MCP server `{name}` did not complete the MCP handshake"))?;
            Ok((client, secrets))
        }
        McpServer::Url { url, headers_env } => {
            let mut headers = HashMap::new();
            let mut auth = None;
            for (header, var) in headers_env {
                let Some(value) = std::env::var(var).ok() else {
                    return Err(format!("environment variable `{var}` for header `{header}` of MCP server `{name}` is not set"));
                };
                secrets.push(value.clone());
                if header.eq_ignore_ascii_case("authorization") {
                    // rmcp sends it itself, as `Bearer <token>`.
                    auth = Some(value.strip_prefix("Bearer ").map_or(value.clone(), str::to_string));
                    continue;
                }
                let (Ok(h), Ok(v)) = (http::HeaderName::try_from(header.as_str()), http::HeaderValue::try_from(value.as_str())) else {
                    return Err(format!("header `{header}` (from `{var}`) of MCP server `{name}` is not a valid header"));
                };
                headers.insert(h, v);
            }
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
            if let Some(token) = auth {
                config = config.auth_header(token);
            }
            // reqwest is built without a crypto provider of its own: use ring
            // (as the http transport does) unless the process chose one.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            let client = reqwest::Client::builder().build().map_err(|_| format!("MCP server `{name}`: the HTTP client could not be built (TLS)"))?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let client = Upstream::new(&secrets)
                .serve(transport)
                .await
                .map_err(|_| format!("MCP server `{name}` at `{url}` did not complete the MCP handshake"))?;
            Ok((client, secrets))
        }
    }
}
