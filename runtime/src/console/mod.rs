//! The approvals console: a web page for the people who decide approvals
//! and read the audit trail (`harnessweaver console`).
//!
//! It reads and decides the approvals in the state store the harness names
//! (SQLite or Redis, shared with the agents and gateways running elsewhere)
//! and reads the harness's audit sink (JSON Lines or SQLite). Approvers sign
//! in with the gateway's identities (`spec.gateway.http`: bearer keys or
//! JWTs); granting and denying go through the core's `Governor::approve_edited`
//! and `Governor::deny`, so `approver_role` and separation of duties hold
//! exactly as in the library. Edited arguments are checked against the tool's
//! input schema before they are granted.
//!
//! Security: a session cookie (`HttpOnly`, `SameSite=Strict`) and a CSRF
//! token every state-changing request must echo in `X-CSRF-Token`, an
//! `Origin` check, a strict `Content-Security-Policy` (scripts and styles
//! from this server only: the page, its script and the embedded Chart.js),
//! loopback by default. Arguments appear only in the detail of a pending
//! approval the signed-in approver may decide; the audit view shows digests.

mod audit_view;
mod candidates;
mod http_util;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::gateway::auth::Authenticator;
use crate::gateway::{HostRuntime, Identity};
use harnessweaver_core::governor::Governor;
use harnessweaver_core::harness::Harness;
use harnessweaver_core::store::PendingApproval;
use harnessweaver_core::{Clock as _, SystemClock};
use http_util::{asset, error, json_response, read_json, Body, Request};

/// How long a sign-in lasts.
const SESSION_MS: u64 = 8 * 3600 * 1000;
/// The session cookie's name.
const COOKIE: &str = "hw_console";

/// A refusal: the status, a code and a message.
type Fail = (http::StatusCode, String, String);

fn fail(status: http::StatusCode, code: &str, message: impl Into<String>) -> Fail {
    (status, code.to_string(), message.into())
}

/// A signed-in approver.
#[derive(Debug, Clone)]
struct Session {
    identity: Identity,
    csrf: String,
    expires_ms: u64,
}

/// The console's state: the harness, a governor over its state store, the
/// gateway's credential check, and the sessions.
pub struct Console {
    harness: Harness,
    decider: Decider,
    auth: Arc<Authenticator>,
    sessions: Mutex<HashMap<String, Session>>,
    /// Built-in tools' candidates dismissed here (issue 24).
    dismissed: candidates::Dismissed,
    /// Where it is served: `""` (its own server) or `/console` (mounted in the gateway).
    prefix: &'static str,
    /// Served over TLS: the cookie is `Secure`.
    tls: bool,
}

/// The governor that grants and denies: the console's own over the state
/// store, or (mounted in the gateway) the gateway's, so even a memory store
/// is shared.
enum Decider {
    Own(Box<Governor>),
    Gateway(Arc<dyn HostRuntime>),
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("harness", &self.harness.dir()).finish_non_exhaustive()
    }
}

impl Console {
    /// A console for `harness`, deciding through `governor` (over the harness's state store).
    pub fn new(harness: Harness, governor: Governor) -> Result<Self, String> {
        let auth = Authenticator::new(&harness.spec().gateway, harness.dir())?;
        if auth.is_empty() {
            return Err("the harness names no approver identities: add bearer keys or a JWT issuer under `spec.gateway.http` (the console signs in with the gateway's identities)".into());
        }
        let governor = candidates::with_builtins(&harness, governor)?;
        Ok(Self {
            harness,
            decider: Decider::Own(Box::new(governor)),
            dismissed: candidates::Dismissed::default(),
            auth: Arc::new(auth),
            sessions: Mutex::new(HashMap::new()),
            prefix: "",
            tls: false,
        })
    }

    /// The console mounted at `prefix` of the gateway's HTTP server: the
    /// gateway's harness, governor (and so state store) and credential check.
    pub fn mounted(host: Arc<dyn HostRuntime>, auth: Arc<Authenticator>, prefix: &'static str, tls: bool) -> Self {
        let harness = host.runtime().harness().clone();
        Self {
            harness,
            decider: Decider::Gateway(host),
            auth,
            sessions: Mutex::new(HashMap::new()),
            prefix,
            tls,
            dismissed: candidates::Dismissed::default(),
        }
    }

    fn governor(&self) -> &Governor {
        match &self.decider {
            Decider::Own(g) => g,
            Decider::Gateway(host) => host.runtime().governor(),
        }
    }

    /// Serves a request for `prefix/…` of the gateway (the security headers included).
    pub async fn serve_mounted(self: Arc<Self>, mut req: Request) -> http::Response<Body> {
        let stripped = req.uri().path_and_query().map(|pq| pq.as_str().strip_prefix(self.prefix).unwrap_or(pq.as_str()).to_string());
        match stripped.as_deref().map(str::parse::<http::Uri>) {
            Some(Ok(uri)) => *req.uri_mut() = uri,
            _ => return http_util::secure(error(http::StatusCode::BAD_REQUEST, "bad_request", "a path the console cannot read")),
        }
        http_util::secure(self.handle(req).await)
    }

    fn session(&self, req: &Request) -> Option<Session> {
        let id = http_util::cookie(req, COOKIE)?;
        let now = SystemClock.now_ms();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, s| s.expires_ms > now);
        sessions.get(&id).cloned()
    }

    /// Serves one request.
    async fn handle(self: Arc<Self>, req: Request) -> http::Response<Body> {
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        if method == http::Method::GET {
            if let Some(response) = asset(&path) {
                return response;
            }
        }
        // Every state change: same origin only (a browser always sends Origin on a cross-site POST).
        if method == http::Method::POST && !http_util::same_origin(&req) {
            return error(http::StatusCode::FORBIDDEN, "bad_origin", "cross-origin requests are refused");
        }
        match (method.as_str(), path.as_str()) {
            ("POST", "/api/login") => self.login(req).await,
            ("POST", "/api/logout") => self.with_session(req, true, |c, s, _| c.logout(&s)).await,
            ("GET", "/api/me") => self.with_session(req, false, |_, s, _| Ok(me(&s))).await,
            ("GET", "/api/approvals") => self.with_session(req, false, |c, s, _| c.approvals(&s)).await,
            ("GET", "/api/audit") => self.with_session(req, false, |c, _, q| c.audit(q.as_deref())).await,
            ("POST", p) if p.starts_with("/api/approvals/") => {
                let rest = p.trim_start_matches("/api/approvals/").to_string();
                let Some((id, action)) = rest.split_once('/').map(|(a, b)| (a.to_string(), b.to_string())) else {
                    return error(http::StatusCode::NOT_FOUND, "not_found", "no such page");
                };
                let body = match read_json(req).await {
                    Ok((r, body)) => (r, body),
                    Err(response) => return response,
                };
                self.decide(body.0, &id, &action, body.1).await
            }
            _ => error(http::StatusCode::NOT_FOUND, "not_found", "no such page"),
        }
    }

    /// Runs `f` (blocking: the store may be SQLite or Redis) for a signed-in approver; `csrf`: the request must carry the session's token.
    async fn with_session(
        self: Arc<Self>,
        req: Request,
        csrf: bool,
        f: impl FnOnce(&Console, Session, Option<String>) -> Result<Value, Fail> + Send + 'static,
    ) -> http::Response<Body> {
        let Some(session) = self.session(&req) else {
            return error(http::StatusCode::UNAUTHORIZED, "signed_out", "sign in first");
        };
        if csrf && http_util::header(&req, "x-csrf-token").as_deref() != Some(session.csrf.as_str()) {
            return error(http::StatusCode::FORBIDDEN, "bad_csrf", "the request lacks this session's CSRF token");
        }
        let query = req.uri().query().map(str::to_string);
        let console = Arc::clone(&self);
        match tokio::task::spawn_blocking(move || f(&console, session, query)).await {
            Ok(Ok(value)) => json_response(http::StatusCode::OK, &value),
            Ok(Err((status, code, message))) => error(status, &code, &message),
            Err(_) => error(http::StatusCode::INTERNAL_SERVER_ERROR, "internal", "the request failed"),
        }
    }

    async fn login(self: Arc<Self>, req: Request) -> http::Response<Body> {
        let (_, body) = match read_json(req).await {
            Ok(r) => r,
            Err(response) => return response,
        };
        let token = body.get("token").and_then(Value::as_str).unwrap_or_default();
        let identity = match self.auth.authenticate(Some(&format!("Bearer {token}"))).await {
            Ok(identity) => identity,
            Err(e) => return error(http::StatusCode::UNAUTHORIZED, e.code, &e.message),
        };
        let (Some(id), Some(csrf)) = (http_util::random_token(), http_util::random_token()) else {
            return error(http::StatusCode::INTERNAL_SERVER_ERROR, "internal", "no randomness for a session");
        };
        let session = Session { identity, csrf, expires_ms: SystemClock.now_ms() + SESSION_MS };
        let value = me(&session);
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), session);
        let mut response = json_response(http::StatusCode::OK, &value);
        let secure = if self.tls { "; Secure" } else { "" };
        let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path={}/; Max-Age={}{secure}", self.prefix, SESSION_MS / 1000);
        if let Ok(v) = http::HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(http::header::SET_COOKIE, v);
        }
        response
    }

    fn logout(&self, session: &Session) -> Result<Value, Fail> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).retain(|_, s| s.csrf != session.csrf);
        Ok(json!({"ok": true}))
    }

    /// Open approvals; the arguments only of those this approver may decide.
    fn approvals(&self, session: &Session) -> Result<Value, Fail> {
        let list = self.governor().open_approvals().map_err(|e| fail(http::StatusCode::SERVICE_UNAVAILABLE, e.code(), e.to_string()))?;
        let me = &session.identity.principal;
        let items: Vec<Value> = list
            .iter()
            .map(|a| {
                let entitled = a.approver_role.as_deref().is_none_or(|r| me.has_role(r));
                let mut v = approval_json(a, entitled, self.harness.tool(&a.tool).map(|t| t.manifest().description.as_str()));
                if let (true, Some(o)) = (entitled, v.as_object_mut()) {
                    o.insert("candidates".into(), candidates::offered(self.governor(), &self.dismissed, a));
                }
                v
            })
            .collect();
        Ok(json!({"approvals": items, "now_ms": SystemClock.now_ms()}))
    }

    fn audit(&self, query: Option<&str>) -> Result<Value, Fail> {
        audit_view::query(&self.harness, query.unwrap_or_default()).map_err(|e| fail(http::StatusCode::SERVICE_UNAVAILABLE, "audit_unavailable", e))
    }

    /// Approve (as asked, or with edited arguments) or deny.
    async fn decide(self: Arc<Self>, req_parts: http::request::Parts, id: &str, action: &str, body: Value) -> http::Response<Body> {
        let Some(session) = http_util::cookie_of(&req_parts.headers, COOKIE).and_then(|sid| {
            let now = SystemClock.now_ms();
            self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(&sid).filter(|s| s.expires_ms > now).cloned()
        }) else {
            return error(http::StatusCode::UNAUTHORIZED, "signed_out", "sign in first");
        };
        let sent = req_parts.headers.get("x-csrf-token").and_then(|v| v.to_str().ok());
        if sent != Some(session.csrf.as_str()) {
            return error(http::StatusCode::FORBIDDEN, "bad_csrf", "the request lacks this session's CSRF token");
        }
        let (id, action) = (id.to_string(), action.to_string());
        let console = Arc::clone(&self);
        let decided = tokio::task::spawn_blocking(move || console.decide_blocking(&session, &id, &action, &body)).await;
        match decided {
            Ok(Ok(value)) => json_response(http::StatusCode::OK, &value),
            Ok(Err((status, code, message))) => error(status, &code, &message),
            Err(_) => error(http::StatusCode::INTERNAL_SERVER_ERROR, "internal", "the request failed"),
        }
    }

    fn decide_blocking(&self, session: &Session, id: &str, action: &str, body: &Value) -> Result<Value, Fail> {
        let refused = |e: harnessweaver_core::Error| {
            let status = match e.code() {
                "approver_not_allowed" => http::StatusCode::FORBIDDEN,
                "unknown_approval" => http::StatusCode::NOT_FOUND,
                "store_unavailable" => http::StatusCode::SERVICE_UNAVAILABLE,
                _ => http::StatusCode::CONFLICT,
            };
            fail(status, e.code(), e.to_string())
        };
        let me = &session.identity.principal;
        let decided = match action {
            "approve" => {
                let edited = body.get("args").filter(|v| !v.is_null()).cloned();
                if let Some(args) = &edited {
                    let approval = self.governor().open_approvals().map_err(refused)?.into_iter().find(|a| a.id == id);
                    let tool = approval.as_ref().and_then(|a| self.harness.tool(&a.tool));
                    if let Some(tool) = tool {
                        Governor::check_edited_args(tool, args).map_err(|e| fail(http::StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string()))?;
                    }
                }
                self.governor().approve_edited(id, me, edited).map_err(refused)?
            }
            "deny" => {
                let reason = body.get("reason").and_then(Value::as_str).map(str::trim).filter(|r| !r.is_empty());
                let Some(reason) = reason else {
                    return Err(fail(http::StatusCode::UNPROCESSABLE_ENTITY, "reason_required", "say why the call is denied"));
                };
                // The same role rule as approving: deny only what you may decide.
                let open = self.governor().open_approvals().map_err(refused)?;
                if let Some(role) = open.iter().find(|a| a.id == id).and_then(|a| a.approver_role.as_deref()) {
                    if !me.has_role(role) {
                        return Err(fail(http::StatusCode::FORBIDDEN, "approver_not_allowed", format!("denying needs role `{role}`")));
                    }
                }
                self.governor().deny(id, &me.id, reason).map_err(refused)?
            }
            // Issue 24: a built-in tool's "always allow" candidates.
            "accept_candidate" => return candidates::accept(self.governor(), session, id, body, refused),
            "dismiss_candidate" => return candidates::dismiss(self.governor(), &self.dismissed, session, id, body),
            _ => return Err(fail(http::StatusCode::NOT_FOUND, "not_found", "approve, deny, accept_candidate or dismiss_candidate")),
        };
        Ok(approval_json(&decided, true, None))
    }
}

fn me(session: &Session) -> Value {
    let p = &session.identity.principal;
    json!({"principal": p.id, "roles": p.roles, "tenant": session.identity.tenant, "csrf": session.csrf})
}

/// An approval as the page shows it; `entitled`: the approver may decide it (and see its arguments).
fn approval_json(a: &PendingApproval, entitled: bool, description: Option<&str>) -> Value {
    let caller = a.principal.get("id").cloned().unwrap_or(Value::Null);
    let mut v = json!({
        "id": a.id,
        "tool": a.tool,
        "description": description,
        "caller": caller,
        "tenant": a.tenant,
        "run_id": a.run_id,
        "reasons": a.reasons,
        "approver_role": a.approver_role,
        "policy_version": a.policy_version,
        "state": a.state.as_str(),
        "created_ms": a.created_ms,
        "expires_ms": a.expires_ms,
        "args_digest": a.args_digest,
        "original_args_digest": a.original_args_digest,
        "decided_by": a.decided_by,
        "entitled": entitled,
    });
    if let (true, Some(o)) = (entitled, v.as_object_mut()) {
        o.insert("args".into(), a.args.clone());
    }
    v
}

/// Serves `console` on `addr` until the process ends; `on_bound` hears the address.
pub fn serve(console: Console, addr: SocketAddr, on_bound: &mut dyn FnMut(SocketAddr)) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("harnessweaver-console")
        .build()
        .map_err(|e| format!("cannot start the console's runtime: {e}"))?;
    let console = Arc::new(console);
    rt.block_on(async move {
        let (listener, local) = crate::gateway::server::bind(addr).await?;
        on_bound(local);
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let console = Arc::clone(&console);
            tokio::spawn(async move {
                let handler = service_fn(move |req| {
                    let console = Arc::clone(&console);
                    async move { Ok::<_, Infallible>(http_util::secure(console.handle(req).await)) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler).await;
            });
        }
    })
}
