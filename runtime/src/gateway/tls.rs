//! TLS for `gateway mcp --http` (issue 22 item 7): rustls with ring (the
//! provider the transports already use), a certificate chain and key read
//! from PEM files, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.
//!
//! And the rule that goes with it: bearer tokens are not served over plain
//! HTTP beyond loopback unless the operator says so in so many words
//! (`--insecure-plain-http`, for a TLS-terminating proxy on the same host).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An acceptor serving the chain in `cert` with the key in `key` (PEM files;
/// `what` names the setting in errors).
pub fn acceptor(cert: &Path, key: &Path, what: (&str, &str)) -> Result<TlsAcceptor, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect)
        .map_err(|e| format!("{}: cannot read certificates from `{}`: {e}", what.0, cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: `{}` holds no PEM certificate", what.0, cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: cannot read a PEM private key from `{}`: {e}", what.1, key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}/{}: the key does not fit the certificate: {e}", what.0, what.1))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Refuses plain HTTP with bearer tokens on an address that is not loopback,
/// unless `insecure` (the operator's explicit opt-out).
pub fn check_plain_http(addr: SocketAddr, tls: bool, insecure: bool) -> Result<(), String> {
    if tls || insecure || addr.ip().is_loopback() {
        return Ok(());
    }
    Err(format!(
        "refusing to serve bearer tokens over plain HTTP on {addr}, which is not a loopback address: anyone on the path reads them. \
         Give a certificate (--tls-cert FILE --tls-key FILE, or spec.gateway.tls in harness.yaml), or listen on 127.0.0.1 behind \
         a TLS-terminating proxy; if such a proxy on this host already terminates TLS, pass --insecure-plain-http"
    ))
}

/// Serves one accepted connection with `service`, through TLS when
/// `tls` is given (a failed handshake drops the connection).
pub async fn serve_connection<S>(stream: tokio::net::TcpStream, tls: Option<TlsAcceptor>, service: S)
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let builder = hyper::server::conn::http1::Builder::new();
    match tls {
        None => {
            let _ = builder.serve_connection(TokioIo::new(stream), service).await;
        }
        Some(acceptor) => {
            // A client that never finishes its handshake does not hold the connection.
            if let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                let _ = builder.serve_connection(TokioIo::new(stream), service).await;
            }
        }
    }
}
