//! MCP tool annotations (`readOnlyHint`, `destructiveHint`,
//! `idempotentHint`, `openWorldHint`, `title`) derived from a manifest (issue 22).
//!
//! They come from what the manifest says the tool does, never from what an
//! upstream MCP server claims: a fronted server's own annotations are not
//! read at all, so a server calling a destructive tool read-only changes
//! nothing a client is told. Where the manifest is silent the hint takes the
//! value that assumes more risk (MCP's own defaults lean the same way).

use serde_json::{json, Map, Value};

use super::effect::{EffectField, RetryMode};
use super::model::{Manifest, SideEffect, Transport};

/// The `annotations` object of `m`'s MCP tool entry.
///
/// - `readOnlyHint`: `side_effect` is `none` or `read`.
/// - `destructiveHint` (tools that write): `side_effect: destructive`.
/// - `idempotentHint` (tools that write): the effect contract's
///   `retry_mode` is `idempotency_key` (a repeated call is deduplicated).
/// - `openWorldHint`: the tool reaches beyond the harness: it declares
///   `egress`, or is an `http` tool, or an `mcp` tool whose manifest does not
///   say `egress: []`.
/// - `title`: `metadata.title`, when given.
pub fn mcp_annotations(m: &Manifest) -> Value {
    let read_only = matches!(m.side_effect, SideEffect::None | SideEffect::Read);
    let mut o = Map::new();
    o.insert("readOnlyHint".into(), json!(read_only));
    if !read_only {
        o.insert("destructiveHint".into(), json!(m.side_effect == SideEffect::Destructive));
        let idempotent = matches!(&m.effect, EffectField::Contract(c) if c.retry_mode == RetryMode::IdempotencyKey);
        o.insert("idempotentHint".into(), json!(idempotent));
    }
    let open_world = !m.egress.is_empty() || m.transport == Transport::Http || (m.transport == Transport::Mcp && !m.egress_declared);
    o.insert("openWorldHint".into(), json!(open_world));
    if let Some(title) = &m.title {
        o.insert("title".into(), json!(title));
    }
    Value::Object(o)
}
