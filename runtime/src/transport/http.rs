//! The `http` transport: POST the arguments as JSON to the manifest's `url`.
//!
//! - Headers come from `headers_env`, read from the environment at call time
//!   (S1); a missing variable, or a value that is not a valid header value,
//!   fails the call naming the variable, never the value.
//! - `Idempotency-Key` carries the ticket's key; `Content-Type:
//!   application/json`.
//! - The ticket's timeout bounds the whole call, redirects included.
//! - Redirects within the tool's origin (scheme, host and port, the default
//!   port when none is written) are followed (at most [`MAX_REDIRECTS`],
//!   `307`/`308` re-POST the body, `301`/`302`/`303` continue as GET); a
//!   redirect to another origin (another host, the same host on another
//!   port, or another scheme) is refused (`transport_refused`) before
//!   anything, headers or body, is sent there.
//! - The response body is read with a cap ([`RESPONSE_FACTOR`] × the tool's
//!   `output.max_bytes`, at least [`RESPONSE_FLOOR`]): a larger body fails the
//!   call before it is read whole.
//! - A non-2xx status is `handler_error` with the status; a JSON response
//!   (`application/json`, `*+json`) becomes its value, anything else text.
//!   The header values sent go with it, so that step 9 masks them wherever
//!   the server echoes them (issue 17, item 10).
//! - TLS: rustls (ring) with the platform's verifier and roots.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use ureq::tls::{RootCerts, TlsConfig};

use harnessweaver_core::governor::{InvokeOutcome, Ticket};

/// Redirects followed within one origin before the call fails.
pub const MAX_REDIRECTS: u32 = 5;

/// The response cap is this many times the tool's `output.max_bytes`
/// (room for JSON that the output step cuts after sanitizing)…
pub const RESPONSE_FACTOR: u64 = 4;

/// …and never less than this, so a small `max_bytes` cuts a response rather
/// than refusing it.
pub const RESPONSE_FLOOR: u64 = 64 * 1024;

/// One http tool's settings.
#[derive(Debug, Clone)]
pub struct HttpTool {
    /// Where the arguments go.
    pub url: String,
    /// Header name → environment variable name.
    pub headers_env: BTreeMap<String, String>,
    /// Larger response bodies fail the call.
    pub max_response_bytes: u64,
}

/// The shared client (connection pool, TLS configuration), built on first use.
#[derive(Default)]
pub struct HttpClient {
    agent: OnceLock<ureq::Agent>,
}

impl HttpClient {
    pub(crate) fn agent(&self) -> &ureq::Agent {
        self.agent.get_or_init(|| {
            let tls = TlsConfig::builder().root_certs(RootCerts::PlatformVerifier).build();
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .tls_config(tls)
                .user_agent(concat!("harnessweaver/", env!("CARGO_PKG_VERSION")))
                .build()
                .new_agent()
        })
    }

    /// One call: POST, follow same-origin redirects, read the capped body.
    pub fn invoke(&self, tool: &HttpTool, ticket: &Ticket) -> InvokeOutcome {
        let headers = match headers(tool) {
            Ok(h) => h,
            Err(kind) => return InvokeOutcome::Failed { kind },
        };
        let body = match serde_json::to_vec(&ticket.args) {
            Ok(b) => b,
            Err(_) => return InvokeOutcome::Failed { kind: "the arguments have no JSON form".into() },
        };
        let deadline = Instant::now() + Duration::from_millis(ticket.timeout_ms);
        let mut url = tool.url.clone();
        let mut post = true;
        let Some(first) = Origin::parse(&url) else {
            return InvokeOutcome::Failed { kind: "the tool's url is not a valid http or https URL".into() };
        };
        for _hop in 0..=MAX_REDIRECTS {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return InvokeOutcome::TimedOut;
            }
            let sent = if post {
                let mut req = self.agent().post(&url).config().timeout_global(Some(remaining)).build();
                req = req.header("Content-Type", "application/json").header("Idempotency-Key", &ticket.idempotency_key);
                req = req.header("Accept", "application/json, text/*;q=0.9, */*;q=0.1");
                for (name, value) in &headers {
                    req = req.header(name.as_str(), value.as_str());
                }
                req.send(&body[..])
            } else {
                let mut req = self.agent().get(&url).config().timeout_global(Some(remaining)).build();
                req = req.header("Idempotency-Key", &ticket.idempotency_key);
                req = req.header("Accept", "application/json, text/*;q=0.9, */*;q=0.1");
                for (name, value) in &headers {
                    req = req.header(name.as_str(), value.as_str());
                }
                req.call()
            };
            let mut response = match sent {
                Ok(r) => r,
                Err(e) => return failure(&e),
            };
            let status = response.status().as_u16();
            if (300..400).contains(&status) && status != 304 {
                let Some(location) = response.headers().get("location").and_then(|v| v.to_str().ok()) else {
                    return InvokeOutcome::Failed { kind: format!("http status {status} without a location") };
                };
                let Some(next) = resolve(&url, location) else {
                    return InvokeOutcome::Failed { kind: format!("http status {status} with an invalid location") };
                };
                let Some(next_origin) = Origin::parse(&next) else {
                    return InvokeOutcome::Failed { kind: format!("http status {status} with an invalid location") };
                };
                // The headers (secrets from `headers_env`) and the body go
                // only to the origin the manifest names: another host, the
                // same host on another port, or another scheme is refused.
                if first != next_origin {
                    return InvokeOutcome::TransportRefused {
                        reason: format!(
                            "`{}` was redirected to another origin (`{next_origin}`); the http transport follows redirects only within `{first}`",
                            ticket.tool
                        ),
                    };
                }
                if matches!(status, 301..=303) {
                    post = false;
                }
                url = next;
                continue;
            }
            if !(200..300).contains(&status) {
                return InvokeOutcome::Failed { kind: format!("http status {status}") };
            }
            let is_json = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(|ct| ct.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
                .is_some_and(|mime| mime == "application/json" || mime.ends_with("+json"));
            let bytes = match response.body_mut().with_config().limit(tool.max_response_bytes).read_to_vec() {
                Ok(b) => b,
                Err(ureq::Error::BodyExceedsLimit(_)) => {
                    return InvokeOutcome::Failed { kind: format!("the response is larger than {} bytes", tool.max_response_bytes) };
                }
                Err(e) => return failure(&e),
            };
            if bytes.is_empty() {
                return InvokeOutcome::Returned(Value::Null);
            }
            let value = if is_json {
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v) => v,
                    Err(_) => return InvokeOutcome::Failed { kind: "the response says JSON but is not valid JSON".into() },
                }
            } else {
                Value::String(String::from_utf8_lossy(&bytes).into_owned())
            };
            return returned(value, &headers);
        }
        InvokeOutcome::Failed { kind: format!("more than {MAX_REDIRECTS} redirects") }
    }
}

/// The response's value, with the header values sent (the `headers_env`
/// secrets) for step 9 to mask should the server echo them.
fn returned(value: Value, headers: &[(String, String)]) -> InvokeOutcome {
    if headers.is_empty() {
        return InvokeOutcome::Returned(value);
    }
    InvokeOutcome::ReturnedWithSecrets { value, secrets: headers.iter().map(|(_, v)| v.clone()).collect() }
}

/// The headers of `headers_env`, read now. Errors name the variable only.
fn headers(tool: &HttpTool) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(tool.headers_env.len());
    for (name, var) in &tool.headers_env {
        let Some(value) = std::env::var_os(var) else {
            return Err(format!("environment variable `{var}` for header `{name}` is not set"));
        };
        let Some(value) = value.to_str().map(str::to_string) else {
            return Err(format!("environment variable `{var}` for header `{name}` is not valid UTF-8"));
        };
        // Refuse anything that could end the header early (CR, LF) or that
        // HTTP forbids in a value, rather than let it reach the wire.
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(format!("environment variable `{var}` for header `{name}` holds characters a header value may not contain"));
        }
        out.push((name.clone(), value));
    }
    Ok(out)
}

fn failure(e: &ureq::Error) -> InvokeOutcome {
    use std::io::ErrorKind;
    let kind = match e {
        ureq::Error::Timeout(_) => return InvokeOutcome::TimedOut,
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => return InvokeOutcome::TimedOut,
        ureq::Error::Io(io) if io.kind() == ErrorKind::ConnectionRefused => "connection refused".to_string(),
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::UnexpectedEof) => {
            "the connection was closed".to_string()
        }
        ureq::Error::Io(_) => "network error".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::Tls(_) => "tls error".to_string(),
        ureq::Error::BadUri(_) => "invalid url".to_string(),
        ureq::Error::Http(_) => "invalid request header".to_string(),
        ureq::Error::Protocol(_) => "the server broke the http protocol".to_string(),
        ureq::Error::BodyExceedsLimit(n) => format!("the response is larger than {n} bytes"),
        _ => "http error".to_string(),
    };
    InvokeOutcome::Failed { kind }
}

/// Scheme, host and port of a URL (the scheme's default port when none is
/// written): a redirect is followed only when all three stay the same.
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", if self.https { "https" } else { "http" }, self.host, self.port)
    }
}

impl Origin {
    fn parse(url: &str) -> Option<Origin> {
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return None;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = if authority.starts_with('[') {
            let (h, rest) = authority.split_once(']')?;
            (format!("{h}]"), rest.strip_prefix(':'))
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return None;
        }
        let port = match port {
            None | Some("") => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(p) => p.parse().ok()?,
        };
        Some(Origin { https, host: host.to_ascii_lowercase(), port })
    }
}

/// Resolves a `Location` against the URL that answered it.
pub(crate) fn resolve(base: &str, location: &str) -> Option<String> {
    let location = location.trim();
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(location.to_string());
    }
    let scheme_end = base.find("://")? + 3;
    let scheme = base.get(..scheme_end)?;
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{scheme}{rest}"));
    }
    let after = base.get(scheme_end..)?;
    let path_start = after.find(['/', '?', '#']).map_or(base.len(), |i| scheme_end + i);
    let origin = base.get(..path_start)?;
    if location.starts_with('/') {
        return Some(format!("{origin}{location}"));
    }
    let path = base.get(path_start..)?.split(['?', '#']).next().unwrap_or_default();
    let dir = path.rfind('/').and_then(|i| path.get(..=i)).unwrap_or("/");
    Some(format!("{origin}{dir}{location}"))
}

#[cfg(test)]
mod tests {
    use super::{resolve, Origin};

    #[test]
    fn locations_resolve_against_the_base() {
        assert_eq!(resolve("http://a:1/x/y?q", "/z").as_deref(), Some("http://a:1/z"));
        assert_eq!(resolve("http://a:1/x/y?q", "z").as_deref(), Some("http://a:1/x/z"));
        assert_eq!(resolve("http://a:1", "z").as_deref(), Some("http://a:1/z"));
        assert_eq!(resolve("https://a/x", "//b/c").as_deref(), Some("https://b/c"));
        assert_eq!(resolve("https://a/x", "http://b/c").as_deref(), Some("http://b/c"));
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        let a = Origin::parse("http://Example.com:80/x").unwrap();
        assert_eq!(a, Origin::parse("http://example.com/y").unwrap());
        assert_ne!(a, Origin::parse("https://example.com/y").unwrap());
        assert_ne!(a, Origin::parse("http://example.com:8080/y").unwrap());
        assert_ne!(a, Origin::parse("http://user@evil.example/").unwrap());
        assert_eq!(Origin::parse("https://a.example").unwrap(), Origin::parse("https://a.example:443/").unwrap());
        let v6 = Origin::parse("http://[::1]:8080/").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("[::1]", 8080));
        assert_eq!(Origin::parse("http://[::1]/").unwrap().port, 80);
        assert_eq!(Origin::parse("http://a.example:99999/"), None);
        assert_eq!(v6.to_string(), "http://[::1]:8080");
    }
}
