//! The console's HTTP plumbing: embedded assets, JSON bodies and answers,
//! cookies, the same-origin check and the security headers on every answer.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use serde_json::Value;

/// A response body.
pub(super) type Body = BoxBody<Bytes, std::convert::Infallible>;
/// A request.
pub(super) type Request = http::Request<hyper::body::Incoming>;

/// The largest JSON body accepted.
const MAX_BODY: usize = 64 * 1024;

/// Scripts, styles, images and requests from this server only; no frames, no plugins, no inline script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
/// Chart.js 4.5.1 (MIT, assets/chart.js-LICENSE.md), embedded: no CDN.
const CHART_JS: &str = include_str!("assets/chart.umd.min.js");

/// An embedded asset, or `None`.
pub(super) fn asset(path: &str) -> Option<http::Response<Body>> {
    let (body, kind) = match path {
        "/" | "/index.html" => (INDEX, "text/html; charset=utf-8"),
        "/static/app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "/static/app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "/static/chart.umd.min.js" => (CHART_JS, "text/javascript; charset=utf-8"),
        _ => return None,
    };
    let mut response = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(kind));
    Some(response)
}

/// Adds the security headers.
pub(super) fn secure(mut response: http::Response<Body>) -> http::Response<Body> {
    let h = response.headers_mut();
    h.insert(http::header::CONTENT_SECURITY_POLICY, http::HeaderValue::from_static(CSP));
    h.insert(http::header::X_CONTENT_TYPE_OPTIONS, http::HeaderValue::from_static("nosniff"));
    h.insert(http::header::X_FRAME_OPTIONS, http::HeaderValue::from_static("DENY"));
    h.insert(http::header::REFERRER_POLICY, http::HeaderValue::from_static("no-referrer"));
    h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

/// A JSON answer.
pub(super) fn json_response(status: http::StatusCode, value: &Value) -> http::Response<Body> {
    let mut response = http::Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// A refusal as JSON: `{"error": code, "message": …}`.
pub(super) fn error(status: http::StatusCode, code: &str, message: &str) -> http::Response<Body> {
    json_response(status, &serde_json::json!({"error": code, "message": message}))
}

/// The request's head and its JSON body (only `application/json`, at most 64 KiB: a form post from another site cannot send one).
pub(super) async fn read_json(req: Request) -> Result<(http::request::Parts, Value), http::Response<Body>> {
    let (parts, body) = req.into_parts();
    let is_json = parts.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return Err(error(http::StatusCode::UNSUPPORTED_MEDIA_TYPE, "bad_request", "send `Content-Type: application/json`"));
    }
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Err(error(http::StatusCode::PAYLOAD_TOO_LARGE, "bad_request", "the body is too large")),
    };
    let value = serde_json::from_slice(&bytes).map_err(|_| error(http::StatusCode::BAD_REQUEST, "bad_request", "the body is not JSON"))?;
    Ok((parts, value))
}

/// A header's value as text.
pub(super) fn header(req: &Request, name: &str) -> Option<String> {
    req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// The value of cookie `name`.
pub(super) fn cookie(req: &Request, name: &str) -> Option<String> {
    cookie_of(req.headers(), name)
}

/// The value of cookie `name` in `headers`.
pub(super) fn cookie_of(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers.get_all(http::header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// A POST from this server's own page: its `Origin` (always sent by a browser on a POST) names the `Host` it was sent to.
pub(super) fn same_origin(req: &Request) -> bool {
    let host = req.headers().get(http::header::HOST).and_then(|v| v.to_str().ok());
    match (req.headers().get(http::header::ORIGIN).and_then(|v| v.to_str().ok()), host) {
        (Some(origin), Some(host)) => origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host),
        // Not a browser (no Origin): the CSRF token still has to match.
        (None, _) => true,
        (Some(_), None) => false,
    }
}

/// 32 random bytes as hex.
pub(super) fn random_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
