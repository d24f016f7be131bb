//! The gateway on the wire: an rmcp server handler, served over stdio or
//! over streamable HTTP behind a bearer-token check.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use harnessweaver_core::host::{ArgumentCode, Error as CoreError, Host};
use harnessweaver_core::runtime::Runtime;

use super::auth::Authenticator;
use super::front::{Front, HttpOptions};
use super::oauth::ResourceServer;
use super::{Gateway, Identity, APPROVAL_META_KEY};

/// The header naming a streamable-HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// One MCP session. Its calls' run (labels, budgets) is the caller's
/// (`spec.gateway.run: principal`, the default) or the session's own per
/// caller (`session`), chosen by [`calls`](super::calls) as for a call the
/// OAuth front answers itself.
#[derive(Clone)]
pub struct Session {
    gateway: Arc<Gateway>,
    /// The stdio client's identity; HTTP callers are identified per request.
    fixed: Option<Identity>,
    /// A stdio connection's session key (HTTP sessions are keyed by their `Mcp-Session-Id`).
    stdio_key: Option<String>,
    /// `logging/setLevel` (issue 22: relayed log messages below it are dropped).
    log_level: super::relay::LogLevel,
}

impl Session {
    /// A session of `gateway`; `fixed` is the caller of a stdio session.
    pub fn new(gateway: Arc<Gateway>, fixed: Option<Identity>) -> Self {
        let stdio_key = fixed.as_ref().map(|_| format!("stdio {}", gateway.runtime().governor().new_run_id()));
        Self { gateway, fixed, stdio_key, log_level: super::relay::LogLevel::default() }
    }

    fn identity(&self, ctx: &RequestContext<RoleServer>) -> Result<Identity, ErrorData> {
        if let Some(id) = &self.fixed {
            return Ok(id.clone());
        }
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Identity>())
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("no authenticated caller", None))
    }

    /// A governed call's answer on the wire.
    fn answer(&self, answer: super::inband::Answer) -> Result<CallToolResponse, ErrorData> {
        match answer {
            super::inband::Answer::Done(result) => Ok(super::calls::mcp_result(&self.gateway, &result)?.into()),
            super::inband::Answer::InputRequired(ask) => {
                let ask: rmcp::model::InputRequiredResult = serde_json::from_value(ask).map_err(internal)?;
                Ok(ask.into())
            }
        }
    }

    /// The session a request belongs to: the stdio connection, or the
    /// streamable-HTTP session it names (none for a stateless request).
    fn session_key(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(key) = &self.stdio_key {
            return Some(key.clone());
        }
        let parts = ctx.extensions.get::<http::request::Parts>()?;
        parts.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string)
    }
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl ServerHandler for Session {
    // Issue 22: `logging` (deprecated by SEP-2577 at 2026-07-28) for the log relay.
    #[expect(deprecated, reason = "logging is part of 2025-11-25")]
    fn get_info(&self) -> ServerConfig {
        let name = self.gateway.runtime().harness().spec().name.clone().unwrap_or_else(|| "harnessweaver".into());
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_logging().build())
            .with_server_info(Implementation::new(format!("harnessweaver gateway ({name})"), env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Every tool call is governed by harnessweaver. A refused call returns isError with a stable code; \
                 a call waiting for approval returns its approval id: call the tool again with the same arguments once it is approved.",
            )
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let who = self.identity(&context)?;
        let tools: Vec<McpTool> = serde_json::from_value(self.gateway.list(&who)).map_err(internal)?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let who = self.identity(&context)?;
        // `_meta` of the request: rmcp hands it over in the context (and
        // may leave a copy in the params).
        let approval_id = [serde_json::to_value(&context.meta).ok(), request.meta.as_ref().and_then(|m| serde_json::to_value(m).ok())]
            .into_iter()
            .flatten()
            .find_map(|m| m.get(APPROVAL_META_KEY).and_then(Value::as_str).map(str::to_string));
        let stateless = context.meta.protocol_version().is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let capabilities = if stateless {
            Some(context.meta.client_capabilities().and_then(|c| serde_json::to_value(c).ok()).unwrap_or_else(|| serde_json::json!({})))
        } else {
            None
        };
        let call = super::calls::CallRequest {
            who,
            session: self.session_key(&context),
            tool: request.name.to_string(),
            args: Value::Object(request.arguments.clone().unwrap_or_default()),
            approval: approval_id,
            capabilities,
        };
        call.precheck(&self.gateway)?;
        let responses = request.input_responses.clone().unwrap_or_default();
        // Issue 22: a 2026-07-28 retry answering what a held call's upstream asked.
        let sealed = request.request_state.as_deref().filter(|s| s.starts_with(super::held::STATE_PREFIX));
        if let (Some(capabilities), Some(state)) = (&call.capabilities, sealed) {
            let side = super::relay::CallerSide { progress_token: context.meta.get_progress_token(), log_level: Arc::clone(&self.log_level) };
            let client = super::held::Client { peer: &context.peer, side: &side, capabilities: capabilities.clone(), responses };
            let pumped = super::held::resume(Arc::clone(&self.gateway), &call, state, &client).await.map_err(internal)??;
            return self.answer(super::inband::Answer::from(pumped));
        }
        let run_id = match call.run(&self.gateway) {
            Ok(run_id) => run_id,
            Err(refused) => return Ok(super::calls::mcp_result(&self.gateway, &refused)?.into()),
        };
        // Issue 22: a 2026-07-28 retry carrying the user's in-band answer.
        let answered = request.request_state.clone().zip(request.input_responses.as_ref().and_then(|r| r.get(super::inband::INPUT_KEY)).cloned());
        let gateway = Arc::clone(&self.gateway);
        let answer = super::inband::governed_call(gateway, call, run_id, answered, responses, &context, Arc::clone(&self.log_level))
            .await
            .map_err(internal)?;
        self.answer(answer)
    }

    /// Issue 22: the tool's pinned schema, for rmcp's `Mcp-Param-*` header check.
    fn get_tool(&self, name: &str) -> Option<McpTool> {
        super::protocol::tool_definition(&self.gateway, name)
    }

    /// `logging/setLevel` (issue 22): the lowest level of relayed log messages.
    #[expect(deprecated, reason = "logging is deprecated by SEP-2577 (2026-07-28), still part of 2025-11-25")]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let rank = serde_json::to_value(request.level).map(|v| super::relay::rank(&v)).map_err(internal)?;
        *self.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(rank);
        Ok(())
    }
}

/// Serves one client over stdin and stdout until it disconnects.
pub async fn serve_stdio(gateway: Arc<Gateway>, identity: Identity) -> Result<(), String> {
    let session = Session::new(gateway, Some(identity));
    let running = session.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP initialisation failed: {e}"))?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

fn unauthorized(code: &str, message: &str, oauth: Option<&ResourceServer>) -> http::Response<Body> {
    let body = serde_json::json!({"error": code, "error_description": message}).to_string();
    let mut response = http::Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    let challenge = match (oauth, code) {
        // The MCP authorization spec: the 401 says where the resource's metadata is (RFC 9728).
        (Some(rs), "missing_token") => rs.challenge(&[]),
        (Some(rs), _) => rs.challenge(&[("error", "invalid_token"), ("error_description", message)]),
        (None, _) => format!("Bearer error=\"{}\"", if code == "missing_token" { "invalid_request" } else { "invalid_token" }),
    };
    if let Ok(v) = http::HeaderValue::from_str(&challenge) {
        headers.insert(http::header::WWW_AUTHENTICATE, v);
    }
    response
}

fn not_found() -> http::Response<Body> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"not found: the MCP endpoint is /mcp")).boxed());
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response
}

/// rmcp's answer to an unknown session, word for word: a session that is
/// someone else's looks exactly like one that does not exist.
fn session_not_found() -> http::Response<Body> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed());
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response
}

/// Who opened each streamable-HTTP session (principal id, tenant): a
/// request naming a session is served only for that caller. A session id this
/// table does not know is refused too (fail closed), so the table and rmcp's
/// session manager never disagree in the caller's favour.
#[derive(Default)]
struct SessionOwners {
    owners: Mutex<HashMap<String, (String, Option<String>)>>,
    /// Prune ended sessions once the table reaches this size (doubles as it grows).
    prune_at: Mutex<usize>,
}

impl SessionOwners {
    fn key(who: &Identity) -> (String, Option<String>) {
        (who.principal.id.clone(), who.tenant.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Option<String>)>> {
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `who` may use session `id`.
    fn allows(&self, id: &str, who: &Identity) -> bool {
        self.lock().get(id).is_some_and(|owner| *owner == Self::key(who))
    }

    fn insert(&self, id: String, who: &Identity) {
        self.lock().insert(id, Self::key(who));
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Drops the sessions rmcp no longer has (closed by the client, or timed
    /// out), when the table has grown past its mark.
    async fn prune(&self, manager: &LocalSessionManager, gateway: &Gateway) {
        use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
        let ids: Vec<String> = {
            let owners = self.lock();
            let mut mark = self.prune_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if owners.len() < (*mark).max(256) {
                return;
            }
            *mark = owners.len() * 2;
            owners.keys().cloned().collect()
        };
        for id in ids {
            let sid: SessionId = id.as_str().into();
            if !manager.has_session(&sid).await.unwrap_or(true) {
                self.remove(&id);
                gateway.forget_session(&id);
            }
        }
        let mut mark = self.prune_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *mark = (self.lock().len() * 2).max(256);
    }
}

/// Binds `addr` (port 0 picks a free port) and returns the listener and the
/// address it got.
pub async fn bind(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), String> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    Ok((listener, local))
}

/// Serves streamable HTTP at `/mcp` on `listener` until the process ends.
/// Every request must carry a bearer token `auth` accepts; others get 401.
/// `front`: TLS, the OAuth metadata and scope challenges, the console.
pub async fn serve_http(gateway: Arc<Gateway>, auth: Arc<Authenticator>, listener: tokio::net::TcpListener, front: Front) -> Result<(), String> {
    let factory_gateway = Arc::clone(&gateway);
    let manager = Arc::new(LocalSessionManager::default());
    let mut config = StreamableHttpServerConfig::default();
    // The configured resource's host passes rmcp's DNS-rebinding check too.
    config.allowed_hosts.extend(front.oauth.as_ref().map(|o| o.authority().to_string()));
    let service = StreamableHttpService::new(move || Ok(Session::new(Arc::clone(&factory_gateway), None)), Arc::clone(&manager), config);
    let front = Arc::new(front);
    let owners = Arc::new(SessionOwners::default());
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("harnessweaver gateway: accept failed: {e}");
                continue;
            }
        };
        let service = service.clone();
        let auth = Arc::clone(&auth);
        let owners = Arc::clone(&owners);
        let manager = Arc::clone(&manager);
        let (front, gateway) = (Arc::clone(&front), Arc::clone(&gateway));
        let tls = front.tls.clone();
        tokio::spawn(async move {
            let handler = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let service = service.clone();
                let auth = Arc::clone(&auth);
                let owners = Arc::clone(&owners);
                let manager = Arc::clone(&manager);
                let (front, gateway) = (Arc::clone(&front), Arc::clone(&gateway));
                async move {
                    let req = match front.route(req).await {
                        Ok(response) => return Ok::<_, Infallible>(response),
                        Err(req) => req,
                    };
                    if req.uri().path() != "/mcp" {
                        return Ok::<_, Infallible>(not_found());
                    }
                    let header = req.headers().get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
                    let identity = match auth.authenticate(header).await {
                        Ok(identity) => identity,
                        Err(e) => return Ok(unauthorized(e.code, &e.message, front.oauth.as_deref())),
                    };
                    // A session belongs to the caller who opened it: anyone
                    // else naming it (POST, GET, DELETE) gets rmcp's 404.
                    let session = req.headers().get(SESSION_HEADER).map(|v| v.to_str().map(str::to_string));
                    let session = match session {
                        None => None,
                        Some(Ok(id)) if owners.allows(&id, &identity) => Some(id),
                        Some(_) => return Ok(session_not_found()),
                    };
                    let deleting = req.method() == http::Method::DELETE;
                    // OAuth: a call the token lacks scopes for is a 403 challenge (oauth.rs).
                    let mut req = match (&front.oauth, req.method() == http::Method::POST) {
                        (Some(rs), true) => match super::oauth::scope_check(rs, &gateway, &identity, session.as_deref(), req).await {
                            Ok(req) => req.map(http_body_util::Either::Right),
                            Err(response) => return Ok(response),
                        },
                        _ => req.map(http_body_util::Either::Left),
                    };
                    req.extensions_mut().insert(identity.clone());
                    let response = service.handle(req).await;
                    match session {
                        // A new session (initialize): its owner is this caller.
                        None => {
                            if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
                                owners.insert(id.to_string(), &identity);
                                owners.prune(&manager, &gateway).await;
                            }
                        }
                        Some(id) if deleting && response.status().is_success() => {
                            owners.remove(&id);
                            gateway.forget_session(&id);
                        }
                        Some(_) => {}
                    }
                    Ok(response)
                }
            });
            super::tls::serve_connection(stream, tls, handler).await;
        });
    }
}

/// How to serve.
#[derive(Debug)]
pub enum Serve {
    /// One client on stdin/stdout, as this caller.
    Stdio(Identity),
    /// Streamable HTTP on this address, callers checked by `auth`.
    Http {
        /// Where to listen (port 0: any free port).
        addr: SocketAddr,
        /// The bearer-token check.
        auth: Box<Authenticator>,
        /// TLS, console and the plain-HTTP opt-out.
        options: HttpOptions,
    },
}

/// Serves `gateway` on its own tokio runtime until the stdio client
/// disconnects (HTTP: until the process ends). `on_bound` hears the HTTP
/// address once listening.
pub fn run(gateway: Arc<Gateway>, how: Serve, on_bound: &mut dyn FnMut(SocketAddr)) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("harnessweaver-gateway")
        .build()
        .map_err(|e| format!("cannot start the gateway's runtime: {e}"))?;
    // The last reference is dropped here, outside the runtime: the runtime's
    // MCP transport owns a tokio runtime of its own, which cannot be dropped
    // from inside an async context.
    let keep = Arc::clone(&gateway);
    let served = match how {
        Serve::Stdio(identity) => rt.block_on(serve_stdio(gateway, identity)),
        Serve::Http { addr, auth, options } => match options.prepare(&gateway, addr) {
            Ok(tls) => match rt.block_on(bind(addr)) {
                Ok((listener, local)) => {
                    let host: Arc<dyn super::HostRuntime> = Arc::new(GatewayHost(Arc::clone(&gateway)));
                    let (front, auth) = options.front(&gateway, host, tls, local, *auth);
                    on_bound(local);
                    rt.block_on(serve_http(gateway, auth, listener, front))
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        },
    };
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    drop(keep);
    served
}

/// Why [`serve_harness`] did not serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeError {
    /// The caller must say more (no stdio identity): a usage error.
    Usage(String),
    /// Configuration or the server failed.
    Failed(String),
}

/// What a binding's `serve_mcp` checks before serving a loaded host: the
/// runtime of a harness loaded for calls (`not_loaded_for_calls` for one
/// opened with inspect) and the `http` address (`invalid_argument` unless it
/// reads like `127.0.0.1:8080`).
pub fn host_target(host: &Host, http: Option<&str>) -> Result<(Arc<Runtime>, Option<SocketAddr>), CoreError> {
    let bad = |code: ArgumentCode, message: String| CoreError::InvalidArgument { code: code.as_str(), message };
    let address =
        |text: &str| text.parse().map_err(|_| bad(ArgumentCode::InvalidArgument, format!("http `{text}` is not an address like 127.0.0.1:8080")));
    let http = http.map(address).transpose()?;
    let message = "this harness was opened with inspect() and cannot take calls; use load()";
    Ok((host.runtime().ok_or_else(|| bad(ArgumentCode::NotLoadedForCalls, message.into()))?, http))
}

impl From<ServeError> for CoreError {
    /// A usage error is `invalid_argument`, anything else `gateway_failed`.
    fn from(e: ServeError) -> Self {
        let (code, message) = match e {
            ServeError::Usage(m) => (ArgumentCode::InvalidArgument, m),
            ServeError::Failed(m) => (ArgumentCode::GatewayFailed, m),
        };
        CoreError::InvalidArgument { code: code.as_str(), message }
    }
}

/// Serves `gateway` as its harness's `spec.gateway` says: over HTTP at
/// `http` (callers checked against `spec.gateway.http`), or over stdio as
/// `principal`/`tenant` (each overriding `spec.gateway.stdio`). Blocks until
/// the stdio client disconnects (HTTP: until the process ends). What the CLI
/// and the bindings' `serve_mcp` run.
pub fn serve_harness(
    gateway: Arc<Gateway>,
    http: Option<SocketAddr>,
    principal: Option<harnessweaver_core::governor::Principal>,
    tenant: Option<String>,
    on_bound: &mut dyn FnMut(SocketAddr),
) -> Result<(), ServeError> {
    serve_harness_with(gateway, http, principal, tenant, HttpOptions::default(), on_bound)
}

/// [`serve_harness`] with the command line's `--http` choices (TLS files,
/// console, the plain-HTTP opt-out) over `spec.gateway`'s.
pub fn serve_harness_with(
    gateway: Arc<Gateway>,
    http: Option<SocketAddr>,
    principal: Option<harnessweaver_core::governor::Principal>,
    tenant: Option<String>,
    options: HttpOptions,
    on_bound: &mut dyn FnMut(SocketAddr),
) -> Result<(), ServeError> {
    let harness = gateway.runtime().harness();
    let spec = &harness.spec().gateway;
    let how = match http {
        Some(addr) => {
            let auth = Authenticator::new(spec, harness.dir()).map_err(ServeError::Failed)?;
            if auth.is_empty() {
                return Err(ServeError::Failed(
                    "serving HTTP needs credentials: add spec.gateway.http.keys or spec.gateway.http.jwt to harness.yaml (see docs/gateway.md)"
                        .into(),
                ));
            }
            Serve::Http { addr, auth: Box::new(auth), options }
        }
        None => {
            let configured = match spec.stdio.as_ref().map(Identity::from_spec).transpose() {
                Ok(c) => c,
                Err(e) => return Err(ServeError::Failed(format!("spec.gateway.stdio: {e}"))),
            };
            let identity = match (principal, configured) {
                (Some(p), configured) => Identity { principal: p, tenant: tenant.or(configured.and_then(|c| c.tenant)) },
                (None, Some(c)) => Identity { principal: c.principal, tenant: tenant.or(c.tenant) },
                (None, None) => {
                    return Err(ServeError::Usage(
                        "stdio needs a caller: set spec.gateway.stdio.principal in harness.yaml or pass a principal".into(),
                    ))
                }
            };
            Serve::Stdio(identity)
        }
    };
    run(gateway, how, on_bound).map_err(ServeError::Failed)
}

/// The gateway's runtime lent to the console mounted beside it.
struct GatewayHost(Arc<Gateway>);

impl super::HostRuntime for GatewayHost {
    fn runtime(&self) -> &Runtime {
        self.0.runtime()
    }
}
