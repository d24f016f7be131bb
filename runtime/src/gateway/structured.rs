//! `structuredContent` (issue 22): a tool whose manifest declares
//! `output_schema` is listed with it as `outputSchema`, and an allowed call
//! returns its output as `structuredContent` beside the text block (the
//! same output as JSON text, as the MCP specification asks). Step 9 already
//! refused an output that does not meet the schema
//! (`output_schema_mismatch`), after the sanitizers and the cut: what is sent
//! here is the cleaned output, never the upstream's raw structured content.

use serde_json::Value;

use super::{Gateway, GatewayResult};

/// Adds `structuredContent` to `mcp` (the MCP `CallToolResult` of `result`)
/// when the call was allowed and its tool declares an output schema.
pub fn attach(gateway: &Gateway, result: &GatewayResult, mcp: &mut Value) {
    if result.status() != "allowed" {
        return;
    }
    let Some(name) = result.result.get("tool").and_then(Value::as_str) else { return };
    if !gateway.runtime().tools().any(|t| t.name() == name && t.manifest().output_schema.is_some()) {
        return;
    }
    let (Some(output), Some(o)) = (result.result.get("output").filter(|v| v.is_object()), mcp.as_object_mut()) else { return };
    o.insert("structuredContent".into(), output.clone());
}
