//! `spec.gateway` in harness.yaml: who the MCP gateway's callers are.
//!
//! ```yaml
//! spec:
//!   gateway:
//!     run: principal               # or session: what one run (labels, budgets) spans
//!     stdio:                       # the identity of the one stdio client
//!       principal: {id: desktop, roles: [support], scopes: [orders:read]}
//!       tenant: acme
//!     http:
//!       keys:                      # bearer tokens (never the token itself)
//!         - token_sha256: "sha256:…"   # or token_env: NAME_OF_ENV_VAR
//!           principal: {id: alice, roles: [finance], scopes: [payments:write]}
//!           tenant: acme
//!       jwt:                       # or JWTs signed by your identity provider
//!         algorithm: RS256         # HS256/384/512, RS256/384/512, PS256/384/512, ES256/384, EdDSA
//!         public_key_file: keys/idp.pem   # RS*, PS*, ES*, EdDSA (PEM, relative to harness.yaml)
//!         jwks_file: keys/idp.jwks.json   # or a JWK Set: the token's `kid` picks the key
//!         jwks_url: https://idp.example/jwks.json  # or the JWK Set fetched at start
//!         secret_env: HW_JWT_SECRET       # HS*: the variable holding the shared secret
//!         issuer: https://idp.example     # required and checked when given
//!         audience: harnessweaver         # required and checked when given
//!         claims: {principal: sub, roles: roles, scopes: scope, tenant: tenant}
//! ```

use serde_json::Value;

pub use super::gateway_http::{OAuthSpec, TlsSpec};
use crate::call::Principal;
use crate::check::Checker;
use crate::yaml::{Node, NodeValue};

/// A principal and tenant, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySpec {
    /// The principal as a mapping (`{id, roles, scopes, attrs}`), already checked.
    pub principal: Value,
    /// The tenant, if any.
    pub tenant: Option<String>,
}

/// How a bearer key is known without writing it into the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySecret {
    /// `token_sha256`: the SHA-256 of the token, `sha256:<hex>`.
    Sha256(String),
    /// `token_env`: the environment variable that holds the token.
    Env(String),
}

/// One entry of `spec.gateway.http.keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    /// The token.
    pub secret: KeySecret,
    /// Who presents it.
    pub identity: IdentitySpec,
}

/// `spec.gateway.http.jwt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSpec {
    /// The one algorithm accepted (`alg` of any other value is refused).
    pub algorithm: String,
    /// `secret_env`: the variable holding an HS* secret.
    pub secret_env: Option<String>,
    /// `public_key_file`: a PEM public key for RS*, PS*, ES* and EdDSA, relative to harness.yaml.
    pub public_key_file: Option<String>,
    /// `jwks_file`: a JSON Web Key Set (RFC 7517) for RS*, PS*, ES* and EdDSA, relative to
    /// harness.yaml; the token's `kid` picks the key (issue 22 item 7).
    pub jwks_file: Option<String>,
    /// `jwks_url`: the authorization server's JWK Set (`https://`, or `http://` to a loopback
    /// host), fetched when the gateway starts (issue 22 item 7).
    pub jwks_url: Option<String>,
    /// `issuer`: the `iss` a token must carry.
    pub issuer: Option<String>,
    /// `audience`: the `aud` a token must carry.
    pub audience: Option<String>,
    /// `leeway`: seconds of clock skew allowed on `exp`/`nbf` (default 30).
    pub leeway_s: u64,
    /// The claim holding the principal id (default `sub`).
    pub principal_claim: String,
    /// The claim holding roles: a list, or a space-separated string (default `roles`).
    pub roles_claim: String,
    /// The claim holding scopes (default `scope`; OAuth's space-separated string, or a list).
    pub scopes_claim: String,
    /// The claim holding the tenant (default `tenant`).
    pub tenant_claim: String,
}

/// `spec.gateway.run`: what one run of gateway calls spans (its labels and
/// budgets, so the trifecta rule's memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayRun {
    /// One run per principal and tenant, across MCP sessions, connections and
    /// gateway processes, kept while it is used (`spec.state_options.run_ttl`
    /// after its last call). The default: a new session does not wash labels.
    #[default]
    Principal,
    /// One run per MCP session (per caller within it).
    Session,
}

/// `spec.gateway`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GatewaySpec {
    /// `run`: what a run spans (default `principal`).
    pub run: GatewayRun,
    /// `stdio`: the stdio client's identity.
    pub stdio: Option<IdentitySpec>,
    /// `http.keys`.
    pub keys: Vec<KeySpec>,
    /// `http.jwt`.
    pub jwt: Option<JwtSpec>,
    // Issue 22 item 7 and issue 24 (gateway_http.rs): OAuth resource server, TLS, console.
    /// `oauth`: the gateway as an OAuth 2.1 resource server.
    pub oauth: Option<OAuthSpec>,
    /// `tls`: the certificate and key `--http` serves with.
    pub tls: Option<TlsSpec>,
    /// `console`: serve the approvals console at `/console/` of `--http`.
    pub console: bool,
}

/// The algorithms `jwt.algorithm` accepts.
pub const JWT_ALGORITHMS: &[&str] = &["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];

/// Reads `spec.gateway`, reporting problems with their positions.
pub(crate) fn parse(node: &Node, cx: &mut Checker) -> GatewaySpec {
    let mut spec = GatewaySpec::default();
    let Some(mut g) = cx.map(node, "spec.gateway") else { return spec };
    if let Some(run) =
        g.get("run").and_then(|n| cx.choice(n, "spec.gateway.run", &[("principal", GatewayRun::Principal), ("session", GatewayRun::Session)]))
    {
        spec.run = run;
    }
    if let Some(n) = g.get("stdio") {
        spec.stdio = identity(n, cx, "spec.gateway.stdio", &[]);
    }
    if let Some(n) = g.get("http") {
        if let Some(mut h) = cx.map(n, "spec.gateway.http") {
            if let Some(keys) = h.get("keys") {
                cx.list(keys, "spec.gateway.http.keys", "a list", |cx, item, path| spec.keys.extend(key(item, cx, path)));
            }
            if let Some(j) = h.get("jwt") {
                spec.jwt = jwt(j, cx);
            }
            h.finish(cx);
        }
    }
    // Issue 22 item 7 and issue 24: OAuth resource server, TLS, console.
    let oauth = g.get("oauth");
    spec.oauth = oauth.and_then(|n| super::gateway_http::oauth(n, cx));
    spec.tls = g.get("tls").and_then(|n| super::gateway_http::tls(n, cx));
    spec.console = g.get("console").and_then(|n| cx.boolean(n, "spec.gateway.console")).unwrap_or(false);
    if oauth.is_some() && spec.jwt.is_none() {
        cx.report(
            "missing_field",
            node.pos,
            "spec.gateway.http.jwt",
            "`spec.gateway.oauth` needs `spec.gateway.http.jwt`: the key that verifies the authorization server's tokens".into(),
        );
    }
    g.finish(cx);
    spec
}

/// `{principal, tenant}` (plus the `extra` keys the caller reads itself).
fn identity(node: &Node, cx: &mut Checker, path: &str, extra: &[&'static str]) -> Option<IdentitySpec> {
    let mut m = cx.map(node, path)?;
    for key in extra {
        let _ = m.get_raw(key);
    }
    let principal_node = m.require(cx, "principal");
    let tenant = cx.opt_string(m.get("tenant"), &format!("{path}.tenant"));
    m.finish(cx);
    let principal_node = principal_node?;
    let ppath = format!("{path}.principal");
    let value = match &principal_node.value {
        // A bare string is the principal's id.
        NodeValue::Str(id) => serde_json::json!({"id": id}),
        _ => match principal_node.to_json() {
            Ok(v) => v,
            Err((pos, message)) => {
                cx.report("invalid_value", pos, &ppath, message);
                return None;
            }
        },
    };
    match Principal::from_value(&value) {
        Ok(p) => Some(IdentitySpec { principal: p.to_value(), tenant }),
        Err(e) => {
            cx.report(e.code(), principal_node.pos, &ppath, e.to_string());
            None
        }
    }
}

fn key(node: &Node, cx: &mut Checker, path: &str) -> Option<KeySpec> {
    let identity = identity(node, cx, path, &["token_sha256", "token_env"]);
    let NodeValue::Map(_) = &node.value else { return None };
    let sha = node.get("token_sha256").and_then(|n| cx.string(n, &format!("{path}.token_sha256")));
    let env = node.get("token_env").and_then(|n| cx.string(n, &format!("{path}.token_env")));
    let secret = match (sha, env) {
        (Some(s), None) => {
            let hex = s.strip_prefix("sha256:").unwrap_or_default();
            if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                cx.report(
                    "invalid_value",
                    node.get("token_sha256").map_or(node.pos, |n| n.pos),
                    &format!("{path}.token_sha256"),
                    "`token_sha256` must be `sha256:` and 64 hex digits (the SHA-256 of the token; \
                     `printf %s \"$TOKEN\" | sha256sum`)"
                        .into(),
                );
                return None;
            }
            KeySecret::Sha256(format!("sha256:{}", hex.to_ascii_lowercase()))
        }
        (None, Some(e)) => KeySecret::Env(e),
        (Some(_), Some(_)) => {
            cx.report("invalid_value", node.pos, path, format!("`{path}` takes `token_sha256` or `token_env`, not both"));
            return None;
        }
        (None, None) => {
            cx.report("missing_field", node.pos, &format!("{path}.token_sha256"), format!("`{path}` needs `token_sha256` or `token_env`"));
            return None;
        }
    };
    Some(KeySpec { secret, identity: identity? })
}

fn jwt(node: &Node, cx: &mut Checker) -> Option<JwtSpec> {
    let path = "spec.gateway.http.jwt";
    let mut m = cx.map(node, path)?;
    let alg_node = m.require(cx, "algorithm");
    let algorithm = alg_node.and_then(|n| cx.string(n, &format!("{path}.algorithm")));
    let secret_env = cx.opt_string(m.get("secret_env"), &format!("{path}.secret_env"));
    let public_key_file = cx.opt_string(m.get("public_key_file"), &format!("{path}.public_key_file"));
    let jwks_file = cx.opt_string(m.get("jwks_file"), &format!("{path}.jwks_file"));
    let jwks_url = cx.opt_string(m.get("jwks_url"), &format!("{path}.jwks_url"));
    let issuer = cx.opt_string(m.get("issuer"), &format!("{path}.issuer"));
    let audience = cx.opt_string(m.get("audience"), &format!("{path}.audience"));
    let leeway_s = m.get("leeway").and_then(|n| cx.count(n, &format!("{path}.leeway"))).unwrap_or(30);
    let mut claims = ["sub".to_string(), "roles".to_string(), "scope".to_string(), "tenant".to_string()];
    if let Some(c) = m.get("claims") {
        if let Some(mut cm) = cx.map(c, &format!("{path}.claims")) {
            for (slot, name) in claims.iter_mut().zip(["principal", "roles", "scopes", "tenant"]) {
                if let Some(v) = cm.get(name).and_then(|n| cx.string(n, &format!("{path}.claims.{name}"))) {
                    *slot = v;
                }
            }
            cm.finish(cx);
        }
    }
    m.finish(cx);
    let algorithm = algorithm?;
    let pos = alg_node.map_or(node.pos, |n| n.pos);
    if !JWT_ALGORITHMS.contains(&algorithm.as_str()) {
        cx.report(
            "invalid_value",
            pos,
            &format!("{path}.algorithm"),
            format!("`{path}.algorithm` is `{algorithm}`; expected one of {}", JWT_ALGORITHMS.join(", ")),
        );
        return None;
    }
    let hmac = algorithm.starts_with("HS");
    let keys = [public_key_file.is_some(), jwks_file.is_some(), jwks_url.is_some()].into_iter().filter(|k| *k).count();
    match (hmac, secret_env.is_some(), keys) {
        (true, true, 0) | (false, false, 1) => {}
        (true, _, _) => {
            cx.report(
                "invalid_value",
                node.pos,
                path,
                format!("`{algorithm}` needs `secret_env` (and no `public_key_file`, `jwks_file` or `jwks_url`)"),
            );
            return None;
        }
        (false, _, _) => {
            cx.report(
                "invalid_value",
                node.pos,
                path,
                format!("`{algorithm}` needs one of `public_key_file`, `jwks_file` and `jwks_url` (and no `secret_env`)"),
            );
            return None;
        }
    }
    let [principal_claim, roles_claim, scopes_claim, tenant_claim] = claims;
    Some(JwtSpec {
        algorithm,
        secret_env,
        public_key_file,
        jwks_file,
        jwks_url,
        issuer,
        audience,
        leeway_s,
        principal_claim,
        roles_claim,
        scopes_claim,
        tenant_claim,
    })
}
