//! The gateway as an OAuth 2.1 resource server, as the MCP authorization
//! spec asks of an HTTP server (issue 22 item 7):
//!
//! - RFC 9728 protected resource metadata at
//!   `/.well-known/oauth-protected-resource/mcp` (the path-suffixed form for
//!   the MCP endpoint) and at `/.well-known/oauth-protected-resource`;
//! - `WWW-Authenticate: Bearer resource_metadata="…"` on every 401, so a
//!   client finds the authorization server from the refusal alone;
//! - `403` with `error="insufficient_scope", scope="…"` when a `tools/call`
//!   names a tool whose manifest `scopes` the token lacks: the call still goes
//!   through the governor (audited, refused `scope_missing` at step 4) and
//!   that refusal becomes the challenge, so the governor stays the one that
//!   decides;
//! - the audience: JWTs must name the canonical resource URI in `aud` (RFC
//!   8707), set on the [`Authenticator`](super::auth::Authenticator) by
//!   [`Authenticator::bind_audience`](super::auth::Authenticator::bind_audience).
//!
//! Tokens stop here: the caller's `Authorization` header is read into an
//! [`Identity`] and never handed to a transport, so no upstream server sees it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use serde_json::{json, Value};

use super::config::OAuthSpec;
use super::{Gateway, Identity};

type Body = BoxBody<Bytes, Infallible>;

/// The well-known path of RFC 9728's metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The largest `/mcp` request body read for the scope check (rmcp reads it whole anyway).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What the gateway publishes about itself as a protected resource.
#[derive(Debug)]
pub struct ResourceServer {
    resource: String,
    metadata_url: String,
    metadata: Value,
}

/// `scheme://authority` and the path of an absolute URI.
fn split_uri(uri: &str) -> (&str, &str) {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    match uri.get(after_scheme..).and_then(|rest| rest.find('/')) {
        Some(i) => uri.split_at(after_scheme + i),
        None => (uri, ""),
    }
}

impl ResourceServer {
    /// The resource of `spec` (or, without `resource`, the endpoint served at
    /// `local`: `https://ADDR/mcp` with TLS), advertising `scopes` unless the
    /// spec lists its own.
    pub fn new(spec: &OAuthSpec, local: SocketAddr, tls: bool, scopes: Vec<String>) -> Self {
        let resource = spec.resource.clone().unwrap_or_else(|| format!("{}://{local}/mcp", if tls { "https" } else { "http" }));
        let (origin, path) = split_uri(&resource);
        let path = path.trim_end_matches('/');
        let metadata_url = format!("{origin}{METADATA_PATH}{path}");
        let mut metadata = json!({
            "resource": resource,
            "authorization_servers": spec.authorization_servers,
            "scopes_supported": spec.scopes_supported.clone().unwrap_or(scopes),
            "bearer_methods_supported": ["header"],
        });
        if let Some(o) = metadata.as_object_mut() {
            if let Some(name) = &spec.resource_name {
                o.insert("resource_name".into(), json!(name));
            }
            if let Some(doc) = &spec.resource_documentation {
                o.insert("resource_documentation".into(), json!(doc));
            }
        }
        Self { resource, metadata_url, metadata }
    }

    /// The canonical resource URI (what a JWT's `aud` must name).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authority (`host[:port]`) of the resource, for rmcp's `Host` check.
    pub fn authority(&self) -> &str {
        let (origin, _) = split_uri(&self.resource);
        origin.split_once("://").map_or(origin, |(_, a)| a)
    }

    /// The metadata document, when `path` is one of its two well-known paths.
    pub fn metadata_response(&self, path: &str) -> Option<http::Response<Body>> {
        let suffixed = self.metadata_url.find(METADATA_PATH).and_then(|i| self.metadata_url.get(i..)).unwrap_or(METADATA_PATH);
        if path != METADATA_PATH && path != suffixed {
            return None;
        }
        let mut response = http::Response::new(Full::new(Bytes::from(self.metadata.to_string())).boxed());
        let h = response.headers_mut();
        h.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        h.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, http::HeaderValue::from_static("*"));
        Some(response)
    }

    /// A `WWW-Authenticate` value: `Bearer` with `resource_metadata`, and
    /// the error parameters when there is an error to name (RFC 6750: none
    /// when the request carried no credentials).
    pub fn challenge(&self, params: &[(&str, &str)]) -> String {
        let mut parts: Vec<String> = params.iter().map(|(k, v)| format!("{k}=\"{}\"", quoted(v))).collect();
        parts.push(format!("resource_metadata=\"{}\"", quoted(&self.metadata_url)));
        format!("Bearer {}", parts.join(", "))
    }

    /// The 403 of a call the token lacks scopes for.
    fn insufficient_scope(&self, scopes: &[String], description: &str) -> http::Response<Body> {
        let scope = scopes.join(" ");
        let challenge = self.challenge(&[("error", "insufficient_scope"), ("scope", &scope), ("error_description", description)]);
        let body = json!({"error": "insufficient_scope", "error_description": description, "scope": scope}).to_string();
        let mut response = http::Response::new(Full::new(Bytes::from(body)).boxed());
        *response.status_mut() = http::StatusCode::FORBIDDEN;
        let h = response.headers_mut();
        h.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        if let Ok(v) = http::HeaderValue::from_str(&challenge) {
            h.insert(http::header::WWW_AUTHENTICATE, v);
        }
        response
    }
}

/// A value fit for a quoted-string: no quotes, backslashes or control characters.
fn quoted(v: &str) -> String {
    v.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}

/// Every scope a tool's manifest names, sorted (the default `scopes_supported`).
pub fn manifest_scopes(gateway: &Gateway) -> Vec<String> {
    let mut scopes: Vec<String> = gateway.runtime().tools().flat_map(|t| t.manifest().scopes.iter().cloned()).collect();
    scopes.sort();
    scopes.dedup();
    scopes
}

/// A `tools/call` in a JSON-RPC body, by `who`: its id, the call (the
/// session is the caller's to fill in), and whether it is a 2026-07-28
/// stateless request (its `_meta` names that protocol).
fn tool_call(body: &[u8], who: &Identity) -> Option<(Value, super::calls::CallRequest, bool)> {
    let msg: Value = serde_json::from_slice(body).ok()?;
    if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = msg.get("params")?;
    let name = params.get("name").and_then(Value::as_str)?.to_string();
    let args = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let meta = params.get("_meta");
    let approval = meta.and_then(|m| m.get(super::APPROVAL_META_KEY)).and_then(Value::as_str).map(str::to_string);
    let version = meta.and_then(|m| m.get("io.modelcontextprotocol/protocolVersion")).and_then(Value::as_str);
    // Protocol versions are dates: text order is their order.
    let stateless = version.is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str());
    let capabilities = stateless.then(|| meta.and_then(|m| m.get(super::calls::CAPABILITIES_META_KEY)).cloned().unwrap_or_else(|| json!({})));
    let call = super::calls::CallRequest { who: who.clone(), session: None, tool: name, args, approval, capabilities };
    Some((msg.get("id").cloned().unwrap_or(Value::Null), call, stateless))
}

/// The scopes `tool` needs that `who` lacks, for a tool that exists and is
/// enabled for the caller's tenant (anything else is the governor's to refuse
/// without a challenge).
fn lacking(gateway: &Gateway, tool: &str, who: &Identity) -> Option<Vec<String>> {
    let rt = gateway.runtime().governor().tool(tool)?;
    let tenant_ok = rt.tenants.is_empty() || who.tenant.as_ref().is_some_and(|t| rt.tenants.contains(t));
    if !rt.enabled || !tenant_ok || rt.scopes.iter().all(|s| who.principal.scopes.contains(s)) {
        return None;
    }
    Some(rt.scopes.clone())
}

/// A JSON-RPC error answer (`status`: 400 for `-32021` on the 2026-07-28 wire, as rmcp maps it).
fn rpc_error(id: Value, error: &rmcp::ErrorData, status: http::StatusCode) -> http::Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
    let mut response = http::Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// What to do with a POST to `/mcp`: pass it on (its body read and put
/// back), or answer it here. A `tools/call` of a tool whose scopes the
/// caller lacks runs through the governor ([`calls::call`](super::calls::call),
/// the path rmcp's handler takes: same run, admission, capability check and
/// result); its `scope_missing` refusal is answered `403
/// insufficient_scope`, any other outcome (an earlier step refused) as the
/// JSON-RPC answer the client expects. `session`: the MCP session the
/// request names (already checked to be the caller's).
pub async fn scope_check(
    server: &ResourceServer,
    gateway: &Arc<Gateway>,
    who: &Identity,
    session: Option<&str>,
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Request<Body>, http::Response<Body>> {
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let mut response = http::Response::new(Full::new(Bytes::from_static(b"the request body is too large")).boxed());
            *response.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            return Err(response);
        }
    };
    let call = tool_call(&bytes, who).and_then(|c| lacking(gateway, &c.1.tool, who).map(|scopes| (c, scopes)));
    let Some(((id, mut call, stateless), scopes)) = call else {
        return Ok(http::Request::from_parts(parts, Full::new(bytes).boxed()));
    };
    call.session = session.map(str::to_string);
    let gw = Arc::clone(gateway);
    let Ok(answer) = tokio::task::spawn_blocking(move || super::calls::call(&gw, &call)).await else {
        let mut response = http::Response::new(Full::new(Bytes::from_static(b"the call failed")).boxed());
        *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        return Err(response);
    };
    let result = match answer {
        Ok(result) => result,
        Err(error) => {
            let status = if stateless && error.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
                http::StatusCode::BAD_REQUEST
            } else {
                http::StatusCode::OK
            };
            return Err(rpc_error(id, &error, status));
        }
    };
    if result.result.get("code").and_then(Value::as_str) == Some("scope_missing") {
        let message = result.result.get("message").and_then(Value::as_str).unwrap_or("the token lacks a scope this tool needs");
        return Err(server.insufficient_scope(&scopes, message));
    }
    // The same result rmcp's handler gives (`resultType`, `structuredContent`).
    let answer = match super::calls::mcp_result(gateway, &result) {
        Ok(mcp) => json!({"jsonrpc": "2.0", "id": id, "result": mcp}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    };
    let mut response = http::Response::new(Full::new(Bytes::from(answer.to_string())).boxed());
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Err(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(resource: Option<&str>) -> OAuthSpec {
        OAuthSpec {
            resource: resource.map(str::to_string),
            authorization_servers: vec!["https://idp.example".into()],
            scopes_supported: None,
            resource_name: Some("test".into()),
            resource_documentation: None,
        }
    }

    #[test]
    fn metadata_sits_at_the_path_suffixed_and_root_well_known_uris() {
        let local = SocketAddr::from(([127, 0, 0, 1], 8443));
        let rs = ResourceServer::new(&spec(None), local, true, vec!["a:b".into()]);
        assert_eq!(rs.resource(), "https://127.0.0.1:8443/mcp");
        assert_eq!(rs.authority(), "127.0.0.1:8443");
        assert!(rs.metadata_response("/.well-known/oauth-protected-resource/mcp").is_some());
        assert!(rs.metadata_response("/.well-known/oauth-protected-resource").is_some());
        assert!(rs.metadata_response("/.well-known/oauth-protected-resource/other").is_none());
        assert_eq!(
            rs.challenge(&[("error", "invalid_token")]),
            "Bearer error=\"invalid_token\", resource_metadata=\"https://127.0.0.1:8443/.well-known/oauth-protected-resource/mcp\""
        );
        let configured = ResourceServer::new(&spec(Some("https://gw.example/tools/mcp")), local, true, vec![]);
        assert_eq!(configured.authority(), "gw.example");
        assert!(configured.metadata_response("/.well-known/oauth-protected-resource/tools/mcp").is_some());
        // A quote in a parameter cannot end the quoted-string early.
        assert!(!configured.challenge(&[("error_description", "a \"b\" c")]).contains("\"b\""));
    }
}
