//! The MCP gateway: a harness's tools served over MCP, every call governed.
//!
//! `tools/list` gives the pinned definitions of the tools the caller could
//! ever call ([`Governor::can_ever_call`](harnessweaver_core::governor::Governor::can_ever_call),
//! and only tools whose pin holds); `tools/call` runs the nine steps through
//! the [`Runtime`] (begin, invoke, finish). Refusals and pending approvals are
//! tool results with `isError: true`, the stable code and the model-safe
//! message, also as structured content.
//!
//! Approvals: a pending call is stored with its exact arguments; once a
//! reviewer approves it (`harnessweaver approvals approve ID`, from another
//! process when the state store is shared), the client calls the same tool
//! with the same arguments again and the gateway finds the grant (same tool,
//! arguments digest, principal and tenant) and runs the call. A client may
//! also name the approval in the request's `_meta` (`harnessweaver/approval_id`).
//! See docs/gateway.md.

pub mod admission;
pub mod auth;
// Issue 22: the one tools/call path (rmcp's handler and the OAuth front).
pub mod calls;
/// `spec.gateway`, parsed with the rest of harness.yaml by the core.
pub use harnessweaver_core::gateway_spec as config;
pub mod handover;
// Issue 22: upstream requests relayed as InputRequiredResult at 2026-07-28.
pub mod held;
// Issue 22: MCP shapes for both protocol generations, content blocks.
pub mod protocol;
// Issue 22: relays (progress, logs, sampling, elicitation) and in-band approvals.
pub mod inband;
pub mod relay;
pub mod server;
/// Issue 22: `structuredContent` for tools that declare `output_schema`.
pub mod structured;
// Issue 22 item 7 and issue 24: OAuth resource server, TLS, the console mounted.
pub mod front;
pub mod oauth;
pub mod tls;

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use harnessweaver_core::canonical;
use harnessweaver_core::governor::{Begin, CallContext, CallResult, InvokeOutcome, Principal, Ticket, Transport};
use harnessweaver_core::runtime::{tool_specs, Runtime, SpecFormat};
use harnessweaver_core::sha256_tagged;
use harnessweaver_core::store::ApprovalState;

pub use config::{GatewayRun, GatewaySpec};

/// Who calls through the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// The principal.
    pub principal: Principal,
    /// The tenant.
    pub tenant: Option<String>,
}

/// Runs a native tool's handler held by the host (a Python or JS function)
/// through the host's own invoke-and-finish path (the one its `call` uses):
/// given the ticket, returns the finished result. Called from a worker
/// thread, never from the gateway's event loop.
pub type NativeInvoker = Arc<dyn Fn(Ticket) -> CallResult + Send + Sync>;

/// A host that runs whole calls itself, on its own thread (begin, its
/// handler, finish: Node, whose callbacks live on the JavaScript thread):
/// given the call's context, tool and arguments, and where the running call's
/// relays go (issue 22), returns the result as [`GatewayResult`] without
/// `waiting_on`. Called from a worker thread.
pub type CallExecutor = Arc<dyn Fn(&CallContext, &str, Value, Option<relay::RelaySink>) -> GatewayResult + Send + Sync>;

/// Where the gateway's [`Runtime`] lives: the CLI owns one; a binding lends
/// the one inside its host object.
pub trait HostRuntime: Send + Sync {
    /// The runtime.
    fn runtime(&self) -> &Runtime;
}

impl HostRuntime for Runtime {
    fn runtime(&self) -> &Runtime {
        self
    }
}

/// The meta key a client may use to name the approval its call carries.
pub const APPROVAL_META_KEY: &str = "harnessweaver/approval_id";

/// A caller's run under `spec.gateway.run: principal`: its generation (a
/// fresh run once `run_ttl` passed without a call) and its last call.
#[derive(Debug, Clone, Copy)]
struct PrincipalRun {
    generation: u64,
    last_ms: u64,
}

/// A session key, a principal id and a tenant.
type SessionCaller = (String, String, Option<String>);

/// A loaded harness, served.
pub struct Gateway {
    runtime: Arc<dyn HostRuntime>,
    native: Option<NativeInvoker>,
    executor: Option<CallExecutor>,
    /// `spec.gateway.run: principal`: each caller's run, by (principal id, tenant).
    runs: Mutex<HashMap<(String, Option<String>), PrincipalRun>>,
    /// `spec.gateway.run: session`: each MCP session's run per caller, by
    /// (session key, principal id, tenant).
    session_runs: Mutex<HashMap<SessionCaller, String>>,
    /// Issue 22: 2026-07-28 calls held open while their client answers an
    /// upstream tool's requests (`InputRequiredResult`).
    held: held::Held,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("runtime", self.runtime.runtime()).field("native", &self.native.is_some()).finish()
    }
}

impl Gateway {
    /// A gateway over `runtime`. `native` runs native tools; without it
    /// (the bare CLI) native tools are hidden and their calls refused.
    pub fn new(runtime: Arc<dyn HostRuntime>, native: Option<NativeInvoker>) -> Self {
        Self { runtime, native, executor: None, runs: Mutex::new(HashMap::new()), session_runs: Mutex::new(HashMap::new()), held: held::Held::new() }
    }

    /// A gateway whose calls the host runs whole ([`CallExecutor`]); the
    /// gateway still lists tools, identifies callers and finds approvals.
    pub fn with_executor(runtime: Arc<dyn HostRuntime>, executor: CallExecutor) -> Self {
        Self {
            runtime,
            native: None,
            executor: Some(executor),
            runs: Mutex::new(HashMap::new()),
            session_runs: Mutex::new(HashMap::new()),
            held: held::Held::new(),
        }
    }

    /// What a run spans (`spec.gateway.run`).
    pub fn run_scope(&self) -> GatewayRun {
        self.runtime().harness().spec().gateway.run
    }

    /// The run of `who` under `spec.gateway.run: principal`: the same for
    /// every session and connection of this principal and tenant, and for
    /// every gateway process sharing the state store (the id is derived from
    /// the principal, the tenant and a generation, not drawn at random), until
    /// `spec.state_options.run_ttl` passes without a call here; then a fresh
    /// run (the store has dropped the old one's labels and budgets by then).
    /// A fresh run is admitted first ([`Gateway::admit`], `spec.runs`).
    pub fn principal_run(&self, who: &Identity) -> Result<String, harnessweaver_core::Error> {
        let now = self.runtime().governor().clock().now_ms();
        let ttl = self.runtime().harness().spec().state_options.run_ttl_ms;
        let key = (who.principal.id.clone(), who.tenant.clone());
        let mut runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (generation, fresh) = match runs.get(&key) {
            None => (0, true),
            Some(run) if now.saturating_sub(run.last_ms) > ttl => (run.generation + 1, true),
            Some(run) => (run.generation, false),
        };
        // Length-prefixed fields: no two (principal, tenant) pairs collide.
        let tenant = who.tenant.as_deref();
        let material = format!(
            "harnessweaver gateway run\n{}:{}\n{}\n{generation}",
            who.principal.id.len(),
            who.principal.id,
            tenant.map_or_else(|| "-".to_string(), |t| format!("{}:{t}", t.len())),
        );
        let digest = sha256_tagged(material.as_bytes());
        let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
        let run_id = format!("run_gw_{}", hex.get(..32).unwrap_or(hex));
        if fresh {
            self.admit(who, &run_id)?;
        }
        runs.insert(key, PrincipalRun { generation, last_ms: now });
        Ok(run_id)
    }

    /// The run of `who` in MCP session `session` under `spec.gateway.run:
    /// session`: one per session and caller, admitted when new.
    pub fn session_run(&self, session: &str, who: &Identity) -> Result<String, harnessweaver_core::Error> {
        let key = (session.to_string(), who.principal.id.clone(), who.tenant.clone());
        let mut runs = self.session_runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(run) = runs.get(&key) {
            return Ok(run.clone());
        }
        let run = self.runtime().governor().new_run_id();
        self.admit(who, &run)?;
        runs.insert(key, run.clone());
        Ok(run)
    }

    /// Forgets the runs of a session that ended.
    pub fn forget_session(&self, session: &str) {
        self.session_runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|(s, _, _), _| s != session);
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        self.runtime.runtime()
    }

    /// Whether `tool` is offered to `who`: it could ever be called by them,
    /// its pin holds (and, for MCP tools, the upstream still serves the
    /// pinned definition), and it can run here.
    fn offered(&self, tool: &harnessweaver_core::manifest::Tool, who: &Identity) -> bool {
        let governor = self.runtime().governor();
        let name = tool.name();
        let Some(rt) = governor.tool(name) else { return false };
        if rt.pin_mismatch || governor.transports().live_pin_mismatch(name).is_some() {
            return false;
        }
        if matches!(rt.transport, Transport::Native { .. }) && self.native.is_none() && self.executor.is_none() {
            return false;
        }
        governor.can_ever_call(name, Some(&who.principal), who.tenant.as_deref())
    }

    /// `tools/list`: MCP tool entries (`name`, `description`, `inputSchema`)
    /// from the manifests' pinned definitions.
    pub fn list(&self, who: &Identity) -> Value {
        let tools: Vec<&harnessweaver_core::manifest::Tool> = self.runtime().tools().filter(|t| self.offered(t, who)).collect();
        tool_specs(tools.into_iter(), SpecFormat::Mcp)
    }

    /// An open approval for exactly this call (tool, args digest, principal,
    /// tenant), not expired: its id and whether it is granted.
    fn matching_approval(&self, tool: &str, args: &Value, who: &Identity) -> Option<(String, bool)> {
        let digest = sha256_tagged(canonical::to_string(args).ok()?.as_bytes());
        let now = self.runtime().governor().clock().now_ms();
        let open = self.runtime().governor().open_approvals().ok()?;
        let mine = open.into_iter().filter(|a| {
            a.tool == tool
                && a.args_digest == digest
                && a.principal.get("id").and_then(Value::as_str) == Some(who.principal.id.as_str())
                && a.tenant == who.tenant
                && a.expires_ms > now
        });
        // A grant first; otherwise the oldest one still waiting.
        let mut waiting: Option<(u64, String)> = None;
        for a in mine {
            match a.state {
                ApprovalState::Approved => return Some((a.id, true)),
                ApprovalState::Pending if waiting.as_ref().is_none_or(|(t, _)| a.created_ms < *t) => waiting = Some((a.created_ms, a.id)),
                _ => {}
            }
        }
        waiting.map(|(_, id)| (id, false))
    }

    /// `tools/call`: the nine steps. Blocking (transports and host handlers
    /// run here); call it from a worker thread.
    pub fn call(&self, who: &Identity, run_id: Option<String>, tool: &str, args: Value, approval_id: Option<String>) -> GatewayResult {
        self.call_relayed(who, run_id, tool, args, approval_id, None)
    }

    /// [`Gateway::call`], relaying what the running tool sends its caller to
    /// `relay` (issue 22, [`relay`]).
    pub fn call_relayed(
        &self,
        who: &Identity,
        run_id: Option<String>,
        tool: &str,
        args: Value,
        approval_id: Option<String>,
        relay: Option<relay::Relays>,
    ) -> GatewayResult {
        let mut waiting_on = None;
        let approval_id = approval_id.or_else(|| match self.matching_approval(tool, &args, who) {
            Some((id, true)) => Some(id),
            Some((id, false)) => {
                waiting_on = Some(id.clone());
                Some(id)
            }
            None => None,
        });
        // Issue 22: the call's progress (any transport, any host handler) reaches this caller only.
        let progress = relay.as_ref().and_then(relay::Relays::listener);
        let ctx =
            CallContext { principal: who.principal.clone(), tenant: who.tenant.clone(), run_id, approval_id, progress, ..CallContext::default() };
        if let Some(executor) = &self.executor {
            return GatewayResult { waiting_on, ..executor(&ctx, tool, args, relay.map(|r| r.sink)) };
        }
        let runtime = self.runtime();
        let result = match runtime.begin(tool, args, &ctx) {
            Begin::Done(result) => result,
            Begin::Invoke(ticket) => match (&ticket.transport, &self.native) {
                (Transport::Native { .. }, Some(native)) => native(ticket),
                (Transport::Native { .. }, None) => {
                    let reason =
                        format!("`{}` is a native tool: serve it from its host (hw.serve_mcp in Python, serveMcp in TypeScript)", ticket.tool);
                    runtime.finish(ticket, InvokeOutcome::TransportRefused { reason })
                }
                _ => {
                    let relay = relay.map(|r| Arc::new(relay::TicketRelay::new(Arc::clone(&self.runtime), ticket.clone(), r.sink)) as _);
                    let outcome = crate::transport::relay::with_relay(relay, || runtime.invoke(&ticket));
                    runtime.finish(ticket, outcome)
                }
            },
        };
        GatewayResult::new(&result, waiting_on)
    }
}

/// A call's result as the host hands it over: the `CallResult` as JSON
/// ([`CallResult::to_value`]) and its model text ([`CallResult::to_model`]),
/// with the approval it is still waiting on when the call repeated one that
/// no reviewer has decided yet.
#[derive(Debug, Clone)]
pub struct GatewayResult {
    /// What the governor decided, as JSON.
    pub result: Value,
    /// The text for the model.
    pub model: String,
    /// The pending approval this call matched (not yet granted).
    pub waiting_on: Option<String>,
}

impl GatewayResult {
    /// From a result the core made here.
    pub fn new(result: &CallResult, waiting_on: Option<String>) -> Self {
        Self { result: result.to_value(), model: result.to_model(), waiting_on }
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.result.get(key).and_then(Value::as_str)
    }

    /// The MCP `CallToolResult` as JSON: `content`, `isError`,
    /// `structuredContent` (refusals and pending approvals) and `_meta`.
    pub fn to_mcp(&self) -> Value {
        let r = &self.result;
        let mut meta = Map::new();
        meta.insert("call_id".into(), r.get("call_id").cloned().unwrap_or(Value::Null));
        meta.insert("run_id".into(), r.get("run_id").cloned().unwrap_or(Value::Null));
        meta.insert("decision".into(), json!(self.status()));
        let approval = r.get("approval").filter(|a| a.is_object());
        let pending_id = match (approval.and_then(|a| a.get("id")).and_then(Value::as_str), &self.waiting_on) {
            (Some(id), _) if self.field("decision") == Some("pending") => Some(id.to_string()),
            (_, Some(id)) if self.field("code") == Some("approval_required") => Some(id.clone()),
            _ => None,
        };
        if self.field("decision") == Some("allowed") {
            if let Some(report) = r.get("output_report").filter(|o| o.is_object()) {
                meta.insert("output".into(), report.clone());
            }
            return json!({
                "content": protocol::content_blocks(r, &self.model),
                "isError": false,
                "_meta": {"harnessweaver": meta},
            });
        }
        if let Some(id) = pending_id {
            let expires = approval.and_then(|a| a.get("expires_ms")).cloned().unwrap_or(Value::Null);
            let message = format!(
                "`{}` is waiting for a human to approve it (approval {id}). Call it again with the same arguments once it is approved.",
                self.field("tool").unwrap_or_default()
            );
            let structured = json!({
                "status": "pending",
                "code": "approval_required",
                "step": "approval",
                "approval_id": id,
                "expires_ms": expires,
                "message": message,
            });
            return json!({
                "content": [{"type": "text", "text": format!("[tool call waiting for approval: {id}] {message}")}],
                "structuredContent": structured,
                "isError": true,
                "_meta": {"harnessweaver": meta},
            });
        }
        let structured = json!({
            "status": "refused",
            "code": self.field("code").unwrap_or("refused"),
            "step": r.get("step").cloned().unwrap_or(Value::Null),
            "message": r.get("message").cloned().unwrap_or(Value::Null),
            "retry_after_ms": r.get("retry_after_ms").cloned().unwrap_or(Value::Null),
        });
        json!({
            "content": [{"type": "text", "text": self.model}],
            "structuredContent": structured,
            "isError": true,
            "_meta": {"harnessweaver": meta},
        })
    }

    /// `allowed`, `refused` or `pending`.
    pub fn status(&self) -> &'static str {
        match (self.field("decision"), self.field("code")) {
            (Some("allowed"), _) => "allowed",
            (Some("pending"), _) => "pending",
            (_, Some("approval_required")) if self.waiting_on.is_some() => "pending",
            _ => "refused",
        }
    }
}
