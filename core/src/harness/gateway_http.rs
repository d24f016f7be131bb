//! `spec.gateway`'s HTTP serving settings (issue 22 item 7, issue 24): the
//! gateway as an OAuth 2.1 resource server (`oauth`), TLS for `--http`
//! (`tls`) and the approvals console mounted at `/console/` (`console`).
//!
//! ```yaml
//! spec:
//!   gateway:
//!     oauth:                                   # RFC 9728 metadata, audience-bound tokens
//!       resource: https://gw.example/mcp       # the canonical URI of the MCP endpoint (default: the served address)
//!       authorization_servers: [https://idp.example]
//!       scopes_supported: [orders:read]        # default: every scope a tool's manifest names
//!       resource_name: Example gateway         # optional, shown by clients
//!     tls:                                     # PEM files, relative to harness.yaml
//!       cert_file: tls/gateway.crt             # the certificate chain, leaf first
//!       key_file: tls/gateway.key              # its private key (PKCS#8, PKCS#1 or SEC1)
//!     console: true                            # serve the approvals console at /console/
//! ```
//!
//! Only parsing lives here; the runtime's `gateway::oauth` and
//! `gateway::tls` act on it.

use crate::check::Checker;
use crate::yaml::Node;

/// `spec.gateway.oauth`: what the gateway says about itself as a protected
/// resource, and the audience its JWTs must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSpec {
    /// `resource`: the canonical URI of the MCP endpoint (`https://host/mcp`);
    /// `None`: the address served (`https://ADDR/mcp` with TLS, `http://…` without).
    pub resource: Option<String>,
    /// `authorization_servers`: the issuers a client may get tokens from (one at least).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`; `None`: every scope a tool's manifest names.
    pub scopes_supported: Option<Vec<String>>,
    /// `resource_name`: a human-readable name.
    pub resource_name: Option<String>,
    /// `resource_documentation`: a page about the gateway.
    pub resource_documentation: Option<String>,
}

/// `spec.gateway.tls`: the certificate and key `--http` serves with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSpec {
    /// `cert_file`: PEM certificates, leaf first (relative to harness.yaml).
    pub cert_file: String,
    /// `key_file`: the PEM private key (relative to harness.yaml).
    pub key_file: String,
}

/// An absolute `https://` URI (or `http://` to a loopback host), without fragment.
fn check_uri(cx: &mut Checker, node: &Node, path: &str, text: &str) -> bool {
    let rest = text.strip_prefix("https://").or_else(|| text.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?']).next().unwrap_or_default()).unwrap_or_default();
    if rest.is_none() || host.is_empty() || text.contains('#') || text.chars().any(char::is_whitespace) {
        cx.report("invalid_value", node.pos, path, format!("`{path}` must be an absolute https:// (or http://) URI without a fragment"));
        return false;
    }
    true
}

/// Reads `spec.gateway.oauth`.
pub(crate) fn oauth(node: &Node, cx: &mut Checker) -> Option<OAuthSpec> {
    let path = "spec.gateway.oauth";
    let mut m = cx.map(node, path)?;
    let resource_node = m.get("resource");
    let resource = cx.opt_string(resource_node, &format!("{path}.resource"));
    let servers_node = m.require(cx, "authorization_servers");
    let servers = servers_node.and_then(|n| cx.strings(n, &format!("{path}.authorization_servers")));
    let scopes_supported = m.get("scopes_supported").and_then(|n| cx.strings(n, &format!("{path}.scopes_supported")));
    let resource_name = cx.opt_string(m.get("resource_name"), &format!("{path}.resource_name"));
    let doc_node = m.get("resource_documentation");
    let resource_documentation = cx.opt_string(doc_node, &format!("{path}.resource_documentation"));
    m.finish(cx);
    let mut ok = true;
    if let (Some(r), Some(n)) = (&resource, resource_node) {
        ok &= check_uri(cx, n, &format!("{path}.resource"), r);
    }
    if let (Some(d), Some(n)) = (&resource_documentation, doc_node) {
        ok &= check_uri(cx, n, &format!("{path}.resource_documentation"), d);
    }
    let servers = servers?;
    let at = format!("{path}.authorization_servers");
    if servers.is_empty() {
        cx.report(
            "invalid_value",
            servers_node.map_or(node.pos, |n| n.pos),
            &at,
            format!("`{at}` names no server: list the issuer clients get tokens from"),
        );
        return None;
    }
    for s in &servers {
        ok &= check_uri(cx, servers_node.unwrap_or(node), &at, s);
    }
    ok.then_some(OAuthSpec { resource, authorization_servers: servers, scopes_supported, resource_name, resource_documentation })
}

/// Reads `spec.gateway.tls`.
pub(crate) fn tls(node: &Node, cx: &mut Checker) -> Option<TlsSpec> {
    let path = "spec.gateway.tls";
    let mut m = cx.map(node, path)?;
    let cert = m.require(cx, "cert_file").and_then(|n| cx.string(n, &format!("{path}.cert_file")));
    let key = m.require(cx, "key_file").and_then(|n| cx.string(n, &format!("{path}.key_file")));
    m.finish(cx);
    Some(TlsSpec { cert_file: cert?, key_file: key? })
}
