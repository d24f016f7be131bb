//! What `--http` serves besides the MCP endpoint, and how: TLS
//! ([`super::tls`]), the OAuth resource server's metadata and challenges
//! ([`super::oauth`]) and the approvals console at `/console/`
//! ([`crate::console`]), set up from `spec.gateway` and the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use tokio_rustls::TlsAcceptor;

use super::auth::Authenticator;
use super::oauth::ResourceServer;
use super::{Gateway, HostRuntime};
use crate::console::Console;

type Body = BoxBody<Bytes, std::convert::Infallible>;

/// Where the console is mounted.
pub const CONSOLE_PREFIX: &str = "/console";

/// Command-line choices for `--http`, over `spec.gateway`'s.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `--tls-cert`: the PEM certificate chain (with `tls_key`; overrides `spec.gateway.tls`).
    pub tls_cert: Option<PathBuf>,
    /// `--tls-key`: its PEM private key.
    pub tls_key: Option<PathBuf>,
    /// `--console`: mount the approvals console (or `spec.gateway.console: true`).
    pub console: bool,
    /// `--insecure-plain-http`: serve bearer tokens over plain HTTP off loopback.
    pub insecure_plain_http: bool,
}

/// The parts of the HTTP server beyond `/mcp`, ready to serve.
#[derive(Default)]
pub struct Front {
    /// TLS, when configured.
    pub tls: Option<TlsAcceptor>,
    /// The OAuth resource server, when `spec.gateway.oauth` is set.
    pub oauth: Option<Arc<ResourceServer>>,
    /// The console, when mounted.
    pub console: Option<Arc<Console>>,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").field("tls", &self.tls.is_some()).field("oauth", &self.oauth).field("console", &self.console.is_some()).finish()
    }
}

impl HttpOptions {
    /// Whether the server will speak TLS (flags or `spec.gateway.tls`).
    pub fn uses_tls(&self, gateway: &Gateway) -> bool {
        self.tls_cert.is_some() || gateway.runtime().harness().spec().gateway.tls.is_some()
    }

    /// The URL a client reaches `gateway`'s MCP endpoint at once bound to
    /// `addr` (`https` when TLS is on), for the line every host prints.
    pub fn mcp_url(&self, gateway: &Gateway, addr: std::net::SocketAddr) -> String {
        let scheme = if self.uses_tls(gateway) { "https" } else { "http" };
        format!("{scheme}://{addr}/mcp")
    }

    /// The acceptor, from the flags (both or neither) or `spec.gateway.tls`.
    fn acceptor(&self, gateway: &Gateway) -> Result<Option<TlsAcceptor>, String> {
        let harness = gateway.runtime().harness();
        match (&self.tls_cert, &self.tls_key, &harness.spec().gateway.tls) {
            (Some(cert), Some(key), _) => super::tls::acceptor(cert, key, ("--tls-cert", "--tls-key")).map(Some),
            (Some(_), None, _) | (None, Some(_), _) => Err("--tls-cert and --tls-key go together: give both".into()),
            (None, None, Some(spec)) => super::tls::acceptor(
                &harness.dir().join(&spec.cert_file),
                &harness.dir().join(&spec.key_file),
                ("spec.gateway.tls.cert_file", "spec.gateway.tls.key_file"),
            )
            .map(Some),
            (None, None, None) => Ok(None),
        }
    }

    /// Everything that can fail before listening on `addr`: the certificate
    /// and key, and the plain-HTTP rule.
    pub fn prepare(&self, gateway: &Gateway, addr: SocketAddr) -> Result<Option<TlsAcceptor>, String> {
        let tls = self.acceptor(gateway)?;
        super::tls::check_plain_http(addr, tls.is_some(), self.insecure_plain_http)?;
        Ok(tls)
    }

    /// The front for a server listening at `local`: the resource (its
    /// audience bound into `auth`) and the console sharing `auth`.
    pub fn front(
        &self,
        gateway: &Arc<Gateway>,
        host: Arc<dyn HostRuntime>,
        tls: Option<TlsAcceptor>,
        local: SocketAddr,
        mut auth: Authenticator,
    ) -> (Front, Arc<Authenticator>) {
        let spec = &gateway.runtime().harness().spec().gateway;
        let oauth = spec.oauth.as_ref().map(|o| Arc::new(ResourceServer::new(o, local, tls.is_some(), super::oauth::manifest_scopes(gateway))));
        if let Some(rs) = &oauth {
            auth.bind_audience(rs.resource());
        }
        let auth = Arc::new(auth);
        let console = (self.console || spec.console).then(|| Arc::new(Console::mounted(host, Arc::clone(&auth), CONSOLE_PREFIX, tls.is_some())));
        (Front { tls, oauth, console }, auth)
    }
}

impl Front {
    /// Answers a request for something other than `/mcp` (the metadata, the
    /// console), or gives it back.
    pub async fn route(&self, req: http::Request<hyper::body::Incoming>) -> Result<http::Response<Body>, http::Request<hyper::body::Incoming>> {
        let path = req.uri().path();
        if req.method() == http::Method::GET {
            if let Some(response) = self.oauth.as_ref().and_then(|o| o.metadata_response(path)) {
                return Ok(response);
            }
        }
        let Some(console) = &self.console else { return Err(req) };
        if path == CONSOLE_PREFIX {
            let mut response = http::Response::new(Full::new(Bytes::new()).boxed());
            *response.status_mut() = http::StatusCode::PERMANENT_REDIRECT;
            response.headers_mut().insert(http::header::LOCATION, http::HeaderValue::from_static("/console/"));
            return Ok(response);
        }
        if path.starts_with("/console/") {
            return Ok(Arc::clone(console).serve_mounted(req).await);
        }
        Err(req)
    }
}
