//! The MCP gateway: a harness's tools served over MCP, every call governed.
//!
//! `tools/list` gives the pinned definitions of the tools the caller could
//! ever call ([`Governor::can_ever_call`](crate::governor::Governor::can_ever_call),
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

pub mod auth;
pub mod config;
pub mod server;

use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::canonical;
use crate::digest::sha256_tagged;
use crate::governor::{Begin, CallContext, CallResult, Decision, InvokeOutcome, Principal, Ticket, Transport};
use crate::runtime::{tool_specs, Runtime, SpecFormat};
use crate::store::ApprovalState;

pub use config::GatewaySpec;

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

/// A loaded harness, served.
pub struct Gateway {
    runtime: Arc<dyn HostRuntime>,
    native: Option<NativeInvoker>,
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
        Self { runtime, native }
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        self.runtime.runtime()
    }

    /// Whether `tool` is offered to `who`: it could ever be called by them,
    /// its pin holds (and, for MCP tools, the upstream still serves the
    /// pinned definition), and it can run here.
    fn offered(&self, tool: &crate::manifest::Tool, who: &Identity) -> bool {
        let governor = self.runtime().governor();
        let name = tool.name();
        let Some(rt) = governor.tool(name) else { return false };
        if rt.pin_mismatch || governor.transports().live_pin_mismatch(name).is_some() {
            return false;
        }
        if matches!(rt.transport, Transport::Native { .. }) && self.native.is_none() {
            return false;
        }
        governor.can_ever_call(name, Some(&who.principal), who.tenant.as_deref())
    }

    /// `tools/list`: MCP tool entries (`name`, `description`, `inputSchema`)
    /// from the manifests' pinned definitions.
    pub fn list(&self, who: &Identity) -> Value {
        let tools: Vec<&crate::manifest::Tool> = self.runtime().tools().filter(|t| self.offered(t, who)).collect();
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
        let mut waiting_on = None;
        let approval_id = approval_id.or_else(|| match self.matching_approval(tool, &args, who) {
            Some((id, true)) => Some(id),
            Some((id, false)) => {
                waiting_on = Some(id.clone());
                Some(id)
            }
            None => None,
        });
        let ctx = CallContext { principal: who.principal.clone(), tenant: who.tenant.clone(), run_id, approval_id, ..CallContext::default() };
        let runtime = self.runtime();
        let result = match runtime.begin(tool, args, &ctx) {
            Begin::Done(result) => result,
            Begin::Invoke(ticket) => match (&ticket.transport, &self.native) {
                (Transport::Native { .. }, Some(native)) => native(ticket),
                (Transport::Native { .. }, None) => {
                    let reason = format!("`{}` is a native tool: serve it from its host (hw.serve_mcp)", ticket.tool);
                    runtime.finish(ticket, InvokeOutcome::TransportRefused { reason })
                }
                _ => {
                    let outcome = runtime.invoke(&ticket);
                    runtime.finish(ticket, outcome)
                }
            },
        };
        GatewayResult { result, waiting_on }
    }
}

/// A call's result, with the approval it is still waiting on when the call
/// repeated one that no reviewer has decided yet.
#[derive(Debug, Clone)]
pub struct GatewayResult {
    /// What the governor decided.
    pub result: CallResult,
    /// The pending approval this call matched (not yet granted).
    pub waiting_on: Option<String>,
}

impl GatewayResult {
    /// The MCP `CallToolResult` as JSON: `content`, `isError`,
    /// `structuredContent` (refusals and pending approvals) and `_meta`.
    pub fn to_mcp(&self) -> Value {
        let r = &self.result;
        let mut meta = Map::new();
        meta.insert("call_id".into(), json!(r.call_id));
        meta.insert("run_id".into(), json!(r.run_id));
        meta.insert("decision".into(), json!(self.status()));
        let pending_id = match (&r.approval, &self.waiting_on) {
            (Some(a), _) if r.decision == Decision::Pending => Some(a.id.clone()),
            (_, Some(id)) if r.code.as_deref() == Some("approval_required") => Some(id.clone()),
            _ => None,
        };
        match (r.decision, pending_id) {
            (Decision::Allowed, _) => {
                if let Some(report) = &r.output_report {
                    meta.insert("output".into(), json!({"truncated": report.truncated, "redactions": report.redactions, "label": report.label}));
                }
                json!({
                    "content": [{"type": "text", "text": r.to_model()}],
                    "isError": false,
                    "_meta": {"harnessweaver": meta},
                })
            }
            (_, Some(id)) => {
                let expires = r.approval.as_ref().map(|a| a.expires_ms);
                let message = format!(
                    "`{}` is waiting for a human to approve it (approval {id}). Call it again with the same arguments once it is approved.",
                    r.tool
                );
                let structured = json!({
                    "status": "pending",
                    "code": "approval_required",
                    "step": "approval",
                    "approval_id": id,
                    "expires_ms": expires,
                    "message": message,
                });
                json!({
                    "content": [{"type": "text", "text": format!("[tool call waiting for approval: {id}] {message}")}],
                    "structuredContent": structured,
                    "isError": true,
                    "_meta": {"harnessweaver": meta},
                })
            }
            (_, None) => {
                let code = r.code.clone().unwrap_or_else(|| "refused".into());
                let structured = json!({
                    "status": "refused",
                    "code": code,
                    "step": r.step.map(|s| s.as_str()),
                    "message": r.message,
                    "retry_after_ms": r.retry_after_ms,
                });
                json!({
                    "content": [{"type": "text", "text": r.to_model()}],
                    "structuredContent": structured,
                    "isError": true,
                    "_meta": {"harnessweaver": meta},
                })
            }
        }
    }

    /// `allowed`, `refused` or `pending`.
    pub fn status(&self) -> &'static str {
        if self.waiting_on.is_some() && self.result.code.as_deref() == Some("approval_required") {
            return "pending";
        }
        self.result.decision.as_str()
    }
}
