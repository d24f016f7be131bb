//! One `tools/call` path (issue 22). A call reaches the gateway through
//! rmcp's handler ([`Session::call_tool`](super::server::Session)) or, when
//! the OAuth front answers it itself (a token lacking a tool's scopes,
//! [`oauth::scope_check`](super::oauth::scope_check)), before rmcp sees it.
//! Both go through the functions here, so both choose the same run, admit it
//! the same way, refuse an undeclared client capability the same way and
//! shape the same MCP result:
//!
//! 1. [`CallRequest::precheck`]: what is refused before any step runs, as a
//!    JSON-RPC error (`-32021` for a client capability the tool's manifest
//!    declares and a 2026-07-28 request's `_meta` lacks);
//! 2. [`CallRequest::run`]: the caller's run (`spec.gateway.run`: the
//!    principal's, or the MCP session's), admitted when new (`spec.runs`);
//! 3. [`execute`]: the nine steps, with the call's relays;
//! 4. [`mcp_result`]: the `CallToolResult` (`resultType`, `structuredContent`).

use rmcp::model::{CallToolResult, ClientCapabilities};
use rmcp::ErrorData;
use serde_json::{json, Map, Value};

use super::relay::Relays;
use super::{Gateway, GatewayResult, GatewayRun, Identity};

/// The `_meta` key of a 2026-07-28 request's client capabilities.
pub const CAPABILITIES_META_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// One `tools/call` as the gateway needs it, whichever way it came.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The caller.
    pub who: Identity,
    /// The MCP session it belongs to (the `Mcp-Session-Id` of a 2025-11-25
    /// HTTP session, a stdio connection's own key); `None` for a stateless
    /// 2026-07-28 request.
    pub session: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// The approval the request names (`_meta` `harnessweaver/approval_id`).
    pub approval: Option<String>,
    /// A 2026-07-28 request's client capabilities (its `_meta`); `None` for a
    /// 2025-11-25 session, whose capabilities were declared at `initialize`.
    pub capabilities: Option<Value>,
}

impl CallRequest {
    /// The client capabilities the tool's manifest declares
    /// (`spec.client_capabilities`) that this 2026-07-28 request's `_meta`
    /// lacks: refused `-32021` (HTTP 400) before any step runs, since the
    /// tool's upstream may ask for them mid-call and a stateless client that
    /// did not declare them could never answer. A 2025-11-25 session is not
    /// checked here: an upstream request it cannot answer gets an error, as
    /// before.
    pub fn precheck(&self, gateway: &Gateway) -> Result<(), ErrorData> {
        let Some(declared) = &self.capabilities else { return Ok(()) };
        // A tool the caller is not offered is the governor's to refuse (as
        // unknown, disabled, ...): the refusal never says what it would need.
        let Some(tool) = gateway.runtime().tools().find(|t| t.name() == self.tool && gateway.offered(t, &self.who)) else { return Ok(()) };
        let mut missing = Map::new();
        for need in &tool.manifest().client_capabilities {
            let name = need.as_str();
            if declared.get(name).is_none_or(Value::is_null) {
                missing.insert(name.to_string(), json!({}));
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let required: ClientCapabilities =
            serde_json::from_value(Value::Object(missing)).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Err(ErrorData::missing_required_client_capability(required))
    }

    /// The call's run: the caller's (`run: principal`), the session's
    /// (`run: session`), or a run of its own for a request outside any
    /// session; a new run is admitted first. A run not admitted is the
    /// call's refusal, as a result.
    pub fn run(&self, gateway: &Gateway) -> Result<String, GatewayResult> {
        let run = match (gateway.run_scope(), &self.session) {
            (GatewayRun::Principal, _) => gateway.principal_run(&self.who),
            (GatewayRun::Session, Some(session)) => gateway.session_run(session, &self.who),
            (GatewayRun::Session, None) => {
                let run = gateway.runtime().governor().new_run_id();
                gateway.admit(&self.who, &run).map(|()| run)
            }
        };
        run.map_err(|e| super::admission::not_admitted(&self.tool, &e))
    }
}

/// The nine steps of `call` in `run`, with `approval` (the request's, or the
/// one given in band) and the call's `relay`. Blocking: call it from a
/// worker thread.
pub fn execute(gateway: &Gateway, call: &CallRequest, run: String, approval: Option<String>, relay: Option<Relays>) -> GatewayResult {
    gateway.call_relayed(&call.who, Some(run), &call.tool, call.args.clone(), approval, relay)
}

/// A whole call without relays or in-band questions (what the OAuth front
/// answers itself): precheck, run, the nine steps. Blocking.
pub fn call(gateway: &Gateway, call: &CallRequest) -> Result<GatewayResult, ErrorData> {
    call.precheck(gateway)?;
    Ok(match call.run(gateway) {
        Ok(run) => execute(gateway, call, run, call.approval.clone(), None),
        Err(refused) => refused,
    })
}

/// The MCP `CallToolResult` of a finished call: the gateway's JSON
/// ([`GatewayResult::to_mcp`]), `structuredContent` when the tool declares
/// an output schema, `resultType: "complete"`.
pub fn mcp_result(gateway: &Gateway, result: &GatewayResult) -> Result<CallToolResult, ErrorData> {
    let mut mcp = result.to_mcp();
    super::structured::attach(gateway, result, &mut mcp);
    super::protocol::call_tool_result(mcp)
}
