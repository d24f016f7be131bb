//! The gateway's answers in MCP's shapes, for both protocol generations
//! (issue 22).
//!
//! rmcp 3.11 serves both on one endpoint and picks per request: a client that
//! sends `initialize` gets the 2025-11-25 session (streamable HTTP with
//! `Mcp-Session-Id`), one that sends `server/discover` or a request whose
//! `_meta` carries `io.modelcontextprotocol/protocolVersion: 2026-07-28`
//! (and its `clientCapabilities`) is served statelessly; rmcp checks the
//! per-request `_meta`, the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers (and `Mcp-Param-*` against the tool's schema, which
//! [`tool_definition`] supplies), answers `ttlMs`/`cacheScope` on lists,
//! and strips `resultType` for peers on the older protocol. What is left
//! here is what only the gateway knows: every tool result says
//! `resultType: "complete"` (refusals and pending approvals included), and
//! an MCP tool's governed content parts go out as their own blocks.

use rmcp::model::{CallToolResult, ResultType, Tool as McpTool};
use rmcp::ErrorData;
use serde_json::{json, Value};

use harnessweaver_core::runtime::{tool_specs, SpecFormat};

use super::Gateway;

/// A `CallToolResult` from the gateway's JSON (`GatewayResult::to_mcp`),
/// with `resultType: "complete"`, which the 2026-07-28 protocol requires
/// on every result (rmcp leaves it out for older peers).
pub fn call_tool_result(mcp: Value) -> Result<CallToolResult, ErrorData> {
    let mut result: CallToolResult = serde_json::from_value(mcp).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    result.result_type = Some(ResultType::COMPLETE);
    Ok(result)
}

/// The content blocks of an allowed call: the parts step 9 kept when the
/// tool answered MCP content (`output_report.content`), else one text
/// block with the model text. A result whose every part was dropped says so
/// in a text block (what, and why; never what it held).
pub fn content_blocks(result: &Value, model: &str) -> Value {
    let Some(report) = result.get("output_report").and_then(|r| r.get("content")).filter(|c| c.is_object()) else {
        return json!([{"type": "text", "text": model}]);
    };
    match result.get("output") {
        Some(Value::Array(parts)) if !parts.is_empty() => Value::Array(parts.clone()),
        _ => {
            let dropped: Vec<String> = report
                .get("dropped")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|d| {
                    format!("{} ({})", d.get("type").and_then(Value::as_str).unwrap_or("?"), d.get("code").and_then(Value::as_str).unwrap_or("?"))
                })
                .collect();
            json!([{"type": "text", "text": format!("[the tool's content was left out: {}]", dropped.join(", "))}])
        }
    }
}

/// The pinned definition of `name` as an MCP tool, whoever asks: rmcp reads
/// its `inputSchema` to check `Mcp-Param-*` headers against a call's
/// arguments (SEP-2243). Whether the caller may see or call it is decided
/// by `tools/list` and `tools/call`, not here.
pub fn tool_definition(gateway: &Gateway, name: &str) -> Option<McpTool> {
    let tool = gateway.runtime().tools().find(|t| t.name() == name)?;
    let spec = tool_specs(std::iter::once(tool), SpecFormat::Mcp);
    serde_json::from_value(spec.get(0)?.clone()).ok()
}
