//! Who an HTTP caller is: a bearer token checked against `spec.gateway.http.keys`,
//! or a JWT verified with `spec.gateway.http.jwt`'s key, mapped to a principal,
//! roles, scopes and tenant. No token, or one that checks against nothing,
//! is no caller: the gateway answers 401 and serves nothing.

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use harnessweaver_core::{Clock, SystemClock};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::config::{GatewaySpec, IdentitySpec, JwtSpec, KeySecret};
use super::Identity;
use harnessweaver_core::governor::Principal;
use harnessweaver_core::sha256_tagged;

/// Checks bearer credentials.
pub struct Authenticator {
    keys: Vec<(String, Identity)>,
    jwt: Option<JwtVerifier>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").field("keys", &self.keys.len()).field("jwt", &self.jwt.is_some()).finish()
    }
}

struct JwtVerifier {
    keys: VerifyingKeys,
    validation: Validation,
    spec: JwtSpec,
    /// `jwks_url`: the set is fetched again when a token names a `kid` it lacks.
    refetch: Option<Refetch>,
}

/// The key a JWT is checked with: one (a secret or a PEM public key), or a
/// JWK Set whose entry the token's `kid` names (replaced when a `jwks_url`
/// is fetched again).
enum VerifyingKeys {
    One(DecodingKey),
    Set(RwLock<Arc<KeySet>>),
}

/// A JWK Set's keys with their `kid`s.
type KeySet = Vec<(Option<String>, DecodingKey)>;

/// The least time between two fetches of a `jwks_url` that tokens with an
/// unknown `kid` cause (the fetch at start not counted): key rotation is
/// picked up without a restart, and tokens with made-up `kid`s cannot make
/// the gateway hammer the authorization server.
pub const JWKS_REFETCH_INTERVAL_MS: u64 = 30_000;

/// Re-fetching a `jwks_url` (key rotation).
struct Refetch {
    url: String,
    clock: Arc<dyn Clock>,
    /// When the last re-fetch began (on `clock`); held while one runs, so
    /// concurrent tokens wait for it instead of fetching again.
    last_ms: tokio::sync::Mutex<Option<u64>>,
    /// Fetches made, the one at start included.
    fetches: std::sync::atomic::AtomicU64,
}

/// Why a request was refused (the text goes into the 401's body; no secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError {
    /// `missing_token` or `invalid_token`.
    pub code: &'static str,
    /// A short reason.
    pub message: String,
}

impl Identity {
    /// An identity from its configured form.
    pub fn from_spec(spec: &IdentitySpec) -> Result<Identity, String> {
        let principal = Principal::from_value(&spec.principal).map_err(|e| e.to_string())?;
        Ok(Identity { principal, tenant: spec.tenant.clone() })
    }
}

impl Authenticator {
    /// Builds the checker from `spec.gateway`, reading `token_env`, `secret_env`
    /// and `public_key_file` (relative to `dir`). Errors name the setting.
    pub fn new(spec: &GatewaySpec, dir: &Path) -> Result<Authenticator, String> {
        let mut keys = Vec::new();
        for (i, k) in spec.keys.iter().enumerate() {
            let digest = match &k.secret {
                KeySecret::Sha256(d) => d.clone(),
                KeySecret::Env(name) => match std::env::var(name) {
                    Ok(token) if !token.is_empty() => sha256_tagged(token.as_bytes()),
                    _ => return Err(format!("spec.gateway.http.keys[{i}].token_env: environment variable `{name}` is not set")),
                },
            };
            let identity = Identity::from_spec(&k.identity).map_err(|e| format!("spec.gateway.http.keys[{i}]: {e}"))?;
            keys.push((digest, identity));
        }
        let jwt = match &spec.jwt {
            None => None,
            Some(j) => Some(JwtVerifier::new(j, dir)?),
        };
        Ok(Authenticator { keys, jwt })
    }

    /// Measures the re-fetch interval of a `jwks_url` on `clock` (tests);
    /// the system clock otherwise.
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        if let Some(r) = self.jwt.as_mut().and_then(|v| v.refetch.as_mut()) {
            r.clock = clock;
        }
    }

    /// How many times the `jwks_url` was fetched (at start, and again for
    /// tokens naming an unknown `kid`); 0 without one.
    pub fn jwks_fetches(&self) -> u64 {
        let refetch = self.jwt.as_ref().and_then(|v| v.refetch.as_ref());
        refetch.map_or(0, |r| r.fetches.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// [`Authenticator::check`], and when the token is a JWT naming a `kid`
    /// the `jwks_url`'s set lacks, the set fetched again first (at most once
    /// per [`JWKS_REFETCH_INTERVAL_MS`]; concurrent requests wait for the
    /// fetch under way) so a rotated key is accepted without a restart.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Identity, AuthError> {
        let checked = self.check(authorization);
        let (Err(_), Some(v), Some(token)) = (&checked, &self.jwt, authorization.and_then(bearer)) else { return checked };
        if v.refetch_for(token).await {
            self.check(authorization)
        } else {
            checked
        }
    }

    /// Binds JWTs to this resource (RFC 8707, the MCP authorization spec):
    /// from now on a JWT's `aud` must name `resource` (or the configured
    /// `jwt.audience`), and a JWT without `aud` is refused.
    pub fn bind_audience(&mut self, resource: &str) {
        if let Some(v) = &mut self.jwt {
            let mut accepted = vec![resource.to_string()];
            accepted.extend(v.spec.audience.iter().cloned());
            v.validation.set_audience(&accepted);
            v.validation.validate_aud = true;
            v.validation.required_spec_claims.insert("aud".into());
        }
    }

    /// Whether any credential is configured (without one every request is refused).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.jwt.is_none()
    }

    /// The caller behind an `Authorization` header value.
    pub fn check(&self, authorization: Option<&str>) -> Result<Identity, AuthError> {
        let Some(header) = authorization else {
            return Err(AuthError { code: "missing_token", message: "send `Authorization: Bearer <token>`".into() });
        };
        let Some(token) = bearer(header) else {
            return Err(AuthError { code: "invalid_token", message: "the Authorization header is not `Bearer <token>`".into() });
        };
        let digest = sha256_tagged(token.as_bytes());
        if let Some((_, identity)) = self.keys.iter().find(|(d, _)| constant_time_eq(d.as_bytes(), digest.as_bytes())) {
            return Ok(identity.clone());
        }
        match &self.jwt {
            // Three dot-separated parts: try it as a JWT.
            Some(v) if token.split('.').count() == 3 => v.verify(token),
            _ => Err(AuthError { code: "invalid_token", message: "the token matches no configured key".into() }),
        }
    }
}

/// The keys of a JWK Set (RFC 7517), with their `kid`s; `what` names its source in errors.
fn jwk_set(text: &str, what: &str) -> Result<Vec<(Option<String>, DecodingKey)>, String> {
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_str(text).map_err(|e| format!("{what} is not a JWK Set: {e}"))?;
    let mut keys = Vec::new();
    for (i, jwk) in set.keys.iter().enumerate() {
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("{what}: key {i} cannot verify: {e}"))?;
        keys.push((jwk.common.key_id.clone(), key));
    }
    if keys.is_empty() {
        return Err(format!("{what} holds no key"));
    }
    Ok(keys)
}

/// The JWK Set at `url`: `https://` (the platform's roots), or `http://` to a
/// loopback host; no redirects; at most 1 MiB; 10 seconds.
fn fetch_jwks(url: &str) -> Result<String, String> {
    let host = url.strip_prefix("http://").map(|rest| rest.split(['/', '?']).next().unwrap_or_default());
    let loopback = host.is_some_and(|h| {
        let name = h.rsplit_once(':').map_or(h, |(n, _)| n).trim_matches(['[', ']']);
        name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    });
    if !url.starts_with("https://") && !loopback {
        return Err(format!("`{url}` is not an https:// URL (http:// only to a loopback host)"));
    }
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build();
    let agent =
        ureq::Agent::config_builder().max_redirects(0).tls_config(tls).timeout_global(Some(std::time::Duration::from_secs(10))).build().new_agent();
    let mut response = agent.get(url).call().map_err(|e| format!("cannot fetch `{url}`: {e}"))?;
    response.body_mut().with_config().limit(1024 * 1024).read_to_string().map_err(|e| format!("cannot read `{url}`: {e}"))
}

/// The token of an `Authorization: Bearer <token>` header value.
fn bearer(header: &str) -> Option<&str> {
    match header.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => Some(token.trim()),
        _ => None,
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl JwtVerifier {
    fn new(spec: &JwtSpec, dir: &Path) -> Result<JwtVerifier, String> {
        let at = "spec.gateway.http.jwt";
        let algorithm: Algorithm = spec.algorithm.parse().map_err(|_| format!("{at}.algorithm: unknown algorithm `{}`", spec.algorithm))?;
        let mut refetch = None;
        let key = if let Some(name) = &spec.secret_env {
            match std::env::var(name) {
                Ok(secret) if !secret.is_empty() => VerifyingKeys::One(DecodingKey::from_secret(secret.as_bytes())),
                _ => return Err(format!("{at}.secret_env: environment variable `{name}` is not set")),
            }
        } else if let Some(file) = &spec.jwks_file {
            let at = format!("{at}.jwks_file");
            let text = std::fs::read_to_string(dir.join(file)).map_err(|e| format!("{at}: cannot read `{file}`: {e}"))?;
            VerifyingKeys::Set(RwLock::new(Arc::new(jwk_set(&text, &format!("{at}: `{file}`"))?)))
        } else if let Some(url) = &spec.jwks_url {
            let at = format!("{at}.jwks_url");
            let set = jwk_set(&fetch_jwks(url).map_err(|e| format!("{at}: {e}"))?, &format!("{at}: `{url}`"))?;
            refetch = Some(Refetch {
                url: url.clone(),
                clock: Arc::new(SystemClock),
                last_ms: tokio::sync::Mutex::new(None),
                fetches: std::sync::atomic::AtomicU64::new(1),
            });
            VerifyingKeys::Set(RwLock::new(Arc::new(set)))
        } else {
            let file = spec.public_key_file.as_deref().unwrap_or_default();
            let pem = std::fs::read(dir.join(file)).map_err(|e| format!("{at}.public_key_file: cannot read `{file}`: {e}"))?;
            let parsed = match spec.algorithm.get(..2) {
                Some("RS" | "PS") => DecodingKey::from_rsa_pem(&pem),
                Some("ES") => DecodingKey::from_ec_pem(&pem),
                _ => DecodingKey::from_ed_pem(&pem),
            };
            VerifyingKeys::One(parsed.map_err(|e| format!("{at}.public_key_file: `{file}` is not a {} public key in PEM: {e}", spec.algorithm))?)
        };
        let mut validation = Validation::new(algorithm);
        validation.leeway = spec.leeway_s;
        // `exp` always; `iss` and `aud` whenever they are configured: a token
        // without a configured claim is refused, not waved through (jsonwebtoken
        // checks a claim's value only when the token carries it).
        let mut required = vec!["exp"];
        match &spec.issuer {
            Some(iss) => {
                validation.set_issuer(&[iss]);
                required.push("iss");
            }
            None => validation.iss = None,
        }
        match &spec.audience {
            Some(aud) => {
                validation.set_audience(&[aud]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        // A token not yet valid (`nbf` past now + leeway) is refused.
        validation.validate_nbf = true;
        Ok(JwtVerifier { keys: key, validation, spec: spec.clone(), refetch })
    }

    /// Fetches the `jwks_url` again for `token`, whose `kid` the set lacked,
    /// unless a re-fetch began less than [`JWKS_REFETCH_INTERVAL_MS`] ago;
    /// true when the set now holds that `kid`. A fetch that fails, or gives
    /// no usable set, keeps the keys there were.
    async fn refetch_for(&self, token: &str) -> bool {
        let (Some(r), VerifyingKeys::Set(set)) = (&self.refetch, &self.keys) else { return false };
        let Some(kid) = jsonwebtoken::decode_header(token).ok().and_then(|h| h.kid) else { return false };
        let knows = |kid: &str| set.read().unwrap_or_else(PoisonError::into_inner).iter().any(|(k, _)| k.as_deref() == Some(kid));
        // A known `kid`: the token failed for another reason.
        if knows(&kid) {
            return false;
        }
        let mut last = r.last_ms.lock().await;
        // Another request's fetch, which this one waited for, may have brought it.
        if knows(&kid) {
            return true;
        }
        let now = r.clock.now_ms();
        if last.is_some_and(|at| now < at.saturating_add(JWKS_REFETCH_INTERVAL_MS)) {
            return false;
        }
        *last = Some(now);
        r.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let url = r.url.clone();
        let fetched = tokio::task::spawn_blocking(move || fetch_jwks(&url).and_then(|text| jwk_set(&text, &format!("`{url}`")))).await;
        match fetched {
            Ok(Ok(keys)) => *set.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys),
            Ok(Err(e)) => eprintln!("harnessweaver gateway: spec.gateway.http.jwt.jwks_url: fetching the key set again failed, the keys stay: {e}"),
            Err(_) => return false,
        }
        knows(&kid)
    }

    fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let bad = |message: String| AuthError { code: "invalid_token", message };
        // The set as it is now (a re-fetch replaces it whole).
        let set: Arc<KeySet>;
        let key = match &self.keys {
            VerifyingKeys::One(key) => key,
            VerifyingKeys::Set(current) => {
                set = Arc::clone(&current.read().unwrap_or_else(PoisonError::into_inner));
                let kid = jsonwebtoken::decode_header(token).map_err(|e| bad(format!("the JWT was refused: {e}")))?.kid;
                // The `kid` named, or the set's only key when the token names none.
                let found = match &kid {
                    Some(kid) => set.iter().find(|(k, _)| k.as_deref() == Some(kid.as_str())),
                    None if set.len() == 1 => set.first(),
                    None => None,
                };
                &found.ok_or_else(|| bad("the JWT's `kid` names no key of the configured key set".into()))?.1
            }
        };
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &self.validation).map_err(|e| bad(format!("the JWT was refused: {e}")))?;
        let claims = data.claims;
        let id = match claims.get(&self.spec.principal_claim) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(bad(format!("the JWT has no `{}` claim naming the principal", self.spec.principal_claim))),
        };
        let list = |name: &str| -> Vec<String> {
            match claims.get(name) {
                Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                _ => Vec::new(),
            }
        };
        let tenant = claims.get(&self.spec.tenant_claim).and_then(Value::as_str).map(str::to_string);
        let principal = Principal { id, roles: list(&self.spec.roles_claim), scopes: list(&self.spec.scopes_claim), attrs: Map::new() };
        Ok(Identity { principal, tenant })
    }
}
