//! The http transport against a real HTTP server on 127.0.0.1
//! (tests/servers/http_fixture_server.py): headers from the environment,
//! the idempotency key, timeouts, capped bodies, redirects, statuses,
//! connection failures and test mode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod transport_support;

use std::time::Instant;

use harnessweaver_core::{CallContext, CallResult, LoadOptions, Principal, Runtime};
use serde_json::{json, Value};
use transport_support::{harness_yaml, tool_yaml, Dir, HttpServer};

fn load(name: &str, mode: &str, tools: &[(&str, String)]) -> (Dir, Runtime) {
    let mut files = vec![("harness.yaml".to_string(), harness_yaml(mode, ""))];
    for (tool, spec) in tools {
        files.push(tool_yaml(tool, spec));
    }
    let dir = Dir::new(name, files);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("load: {e}"));
    (dir, rt)
}

fn http_tool(url: &str, more: &str) -> String {
    format!("  transport: http\n  url: \"{url}\"\n{more}")
}

fn call(rt: &Runtime, tool: &str, args: Value) -> CallResult {
    let ctx = CallContext { principal: Principal::new("alice"), idempotency_key: Some("key-123".into()), ..CallContext::default() };
    rt.call(tool, args, &ctx)
}

fn refused(r: &CallResult, code: &str) {
    assert_eq!(r.code.map(|c| c.as_str()), Some(code), "{r:?}");
    assert_eq!(r.step.map(|s| s.as_str()), Some("invoke"), "{r:?}");
}

#[test]
fn posts_json_with_key_and_headers_from_the_environment() {
    let server = HttpServer::start();
    std::env::set_var("HW_TEST_HTTP_TOKEN", "Bearer s3cret-value");
    let (_d, rt) = load(
        "http-echo",
        "production",
        &[("echo", http_tool(&format!("{}/echo", server.url()), "  headers_env:\n    Authorization: HW_TEST_HTTP_TOKEN\n"))],
    );
    let r = call(&rt, "echo", json!({"order": "A-1", "n": 2}));
    assert!(r.is_allowed(), "{r:?}");
    let out = r.output.unwrap();
    assert_eq!(out["method"], "POST");
    assert_eq!(out["body"], json!({"order": "A-1", "n": 2}));
    assert_eq!(out["headers"]["idempotency-key"], "key-123");
    assert_eq!(out["headers"]["content-type"], "application/json");
    // The server echoed the secret header: step 9 masks it (issue 17, item 10).
    assert_eq!(out["headers"]["authorization"], "[SECRET]");
    assert_eq!(r.output_report.unwrap().redactions.get("secret.echoed"), Some(&1));
}

/// Issue 17 item 10: a server that reflects the `headers_env` secret, raw or
/// encoded (URL, base64, base64 inside a longer text, JSON-escaped), in a
/// format no sanitizer knows: every form reaches the model as `[SECRET]`,
/// counted in the output report; the sanitizers still run after.
#[test]
fn issue17_item10_secret_echo_masked_in_http_outputs() {
    let server = HttpServer::start();
    let secret = "k3y/With+Slash\"Quote 42";
    std::env::set_var("HW_TEST_HTTP_REFLECTED", secret);
    let more = "  headers_env:\n    X-Api-Key: HW_TEST_HTTP_REFLECTED\n  output:\n    sanitize: [pii_redact]\n";
    let (_d, rt) = load("http-reflect", "production", &[("reflect", http_tool(&format!("{}/reflect", server.url()), more))]);
    let r = call(&rt, "reflect", json!({}));
    assert!(r.is_allowed(), "{r:?}");
    let text = r.output.clone().unwrap().as_str().unwrap().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for line in &lines {
        assert!(line.contains("[SECRET]"), "{line}");
        assert!(!line.contains("Slash") && !line.contains("Quote"), "{line}");
    }
    let report = r.output_report.unwrap();
    assert_eq!(report.redactions.get("secret.echoed"), Some(&5), "{report:?}");
    // The same server without the secret: nothing to mask, nothing counted.
    std::env::set_var("HW_TEST_HTTP_REFLECTED", "");
    let r = call(&rt, "reflect", json!({}));
    assert_eq!(r.output_report.unwrap().redactions.get("secret.echoed"), None);
}

#[test]
fn a_missing_or_unsafe_header_variable_names_the_variable_never_a_value() {
    let server = HttpServer::start();
    std::env::remove_var("HW_TEST_HTTP_UNSET");
    std::env::set_var("HW_TEST_HTTP_INJECT", "token\r\nX-Evil: 1");
    let (_d, rt) = load(
        "http-env",
        "production",
        &[
            ("unset", http_tool(&format!("{}/echo", server.url()), "  headers_env:\n    X-Api-Key: HW_TEST_HTTP_UNSET\n")),
            ("inject", http_tool(&format!("{}/echo", server.url()), "  headers_env:\n    X-Api-Key: HW_TEST_HTTP_INJECT\n")),
        ],
    );
    let r = call(&rt, "unset", json!({}));
    refused(&r, "handler_error");
    assert!(r.message.contains("`HW_TEST_HTTP_UNSET`") && r.message.contains("not set"), "{}", r.message);
    let r = call(&rt, "inject", json!({}));
    refused(&r, "handler_error");
    assert!(r.message.contains("`HW_TEST_HTTP_INJECT`"), "{}", r.message);
    assert!(!r.message.contains("token") && !r.message.contains("Evil"), "{}", r.message);
}

#[test]
fn text_json_empty_and_bad_json_responses() {
    let server = HttpServer::start();
    let u = server.url();
    let (_d, rt) = load(
        "http-kinds",
        "production",
        &[
            ("text", http_tool(&format!("{u}/text"), "")),
            ("empty", http_tool(&format!("{u}/empty"), "")),
            ("bad", http_tool(&format!("{u}/json-bad"), "")),
        ],
    );
    assert_eq!(call(&rt, "text", json!({})).output, Some(json!("plain text")));
    let r = call(&rt, "empty", json!({}));
    assert!(r.is_allowed(), "{r:?}");
    assert_eq!(r.output, Some(Value::Null));
    let r = call(&rt, "bad", json!({}));
    refused(&r, "handler_error");
    assert!(r.message.contains("not valid JSON"), "{}", r.message);
}

#[test]
fn non_2xx_is_a_handler_error_with_the_status_and_the_run_goes_on() {
    let server = HttpServer::start();
    let u = server.url();
    let (_d, rt) = load(
        "http-status",
        "production",
        &[
            ("boom", http_tool(&format!("{u}/status/500"), "")),
            ("gone", http_tool(&format!("{u}/status/404"), "")),
            ("echo", http_tool(&format!("{u}/echo"), "")),
        ],
    );
    let r = call(&rt, "boom", json!({}));
    refused(&r, "handler_error");
    assert_eq!(r.message, "`boom` failed (http status 500)");
    refused(&call(&rt, "gone", json!({})), "handler_error");
    assert!(call(&rt, "echo", json!({})).is_allowed());
}

#[test]
fn a_slow_server_times_out_at_the_tool_timeout() {
    let server = HttpServer::start();
    let (_d, rt) = load("http-slow", "production", &[("slow", http_tool(&format!("{}/slow/3000", server.url()), "  timeout: 300ms\n"))]);
    let started = Instant::now();
    let r = call(&rt, "slow", json!({}));
    refused(&r, "timeout");
    assert!(started.elapsed().as_millis() < 2_000, "took {:?}", started.elapsed());
    let (_d2, rt2) = load("http-slow-ok", "production", &[("slow", http_tool(&format!("{}/slow/100", server.url()), "  timeout: 5s\n"))]);
    assert_eq!(call(&rt2, "slow", json!({})).output, Some(json!({"slept_ms": 100})));
}

#[test]
fn a_huge_body_is_refused_before_it_is_read_whole() {
    let server = HttpServer::start();
    let u = server.url();
    let (_d, rt) = load(
        "http-huge",
        "production",
        &[
            ("huge", http_tool(&format!("{u}/huge/40000000"), "  output: { max_bytes: 100000 }\n")),
            ("fits", http_tool(&format!("{u}/huge/300000"), "  output: { max_bytes: 100000 }\n")),
            ("small", http_tool(&format!("{u}/huge/30000"), "  output: { max_bytes: 10 }\n")),
        ],
    );
    let started = Instant::now();
    let r = call(&rt, "huge", json!({}));
    refused(&r, "handler_error");
    assert!(r.message.contains("larger than 400000 bytes"), "{}", r.message);
    assert!(started.elapsed().as_millis() < 3_000, "took {:?}", started.elapsed());
    // Under the cap (4 x max_bytes): read, then cut to max_bytes by step 9.
    let r = call(&rt, "fits", json!({}));
    assert!(r.is_allowed(), "{r:?}");
    assert_eq!(r.output.unwrap().as_str().unwrap().len(), 100_000);
    assert!(r.output_report.unwrap().truncated);
    // The cap is at least 64 KiB: a small max_bytes cuts rather than refuses.
    let r = call(&rt, "small", json!({}));
    assert_eq!(r.output, Some(json!("aaaaaaaaaa")), "{r:?}");
}

#[test]
fn same_origin_redirects_are_followed_and_other_hosts_refused() {
    let server = HttpServer::start();
    let u = server.url();
    let (_d, rt) = load(
        "http-redirect",
        "production",
        &[
            ("keep", http_tool(&format!("{u}/redirect/307/echo"), "")),
            ("see_other", http_tool(&format!("{u}/redirect/303/echo"), "")),
            ("elsewhere", http_tool(&format!("{u}/redirect-host/302/echo"), "")),
            ("looping", http_tool(&format!("{u}/redirect-loop"), "")),
        ],
    );
    let r = call(&rt, "keep", json!({"a": 1}));
    assert!(r.is_allowed(), "{r:?}");
    let out = r.output.unwrap();
    assert_eq!((out["method"].as_str(), &out["body"]), (Some("POST"), &json!({"a": 1})));
    assert_eq!(out["headers"]["idempotency-key"], "key-123");
    let r = call(&rt, "see_other", json!({"a": 1}));
    assert_eq!(r.output.unwrap()["method"], "GET");
    let r = call(&rt, "elsewhere", json!({}));
    refused(&r, "transport_refused");
    assert!(r.message.contains(&format!("another origin (`http://localhost:{}`)", server.port)), "{}", r.message);
    let r = call(&rt, "looping", json!({}));
    refused(&r, "handler_error");
    assert!(r.message.contains("more than 5 redirects"), "{}", r.message);
}

/// What `server` was asked so far (its `/seen` route).
fn seen(server: &HttpServer) -> Vec<Value> {
    let mut response = ureq::get(&format!("{}/seen", server.url())).call().unwrap();
    let value: Value = serde_json::from_slice(&response.body_mut().read_to_vec().unwrap()).unwrap();
    value.as_array().unwrap().clone()
}

/// Issue 17 item 9: an origin is scheme + host + port. A 307 from one
/// loopback server to another on a different port (the same host) is
/// `transport_refused`, and the second server never sees the request (so
/// never the `headers_env` secret nor the re-POSTed body); a redirect within
/// the origin still re-POSTs the body with the secret.
#[test]
fn redirect_to_other_port_is_refused() {
    let (a, b) = (HttpServer::start(), HttpServer::start());
    std::env::set_var("HW_TEST_HTTP_REDIRECT_SECRET", "Bearer redirect-s3cret");
    let secret = "  headers_env:\n    Authorization: HW_TEST_HTTP_REDIRECT_SECRET\n";
    let (_d, rt) = load(
        "http-redirect-port",
        "production",
        &[
            ("other_port", http_tool(&format!("{}/redirect-port/307/{}/echo", a.url(), b.port), secret)),
            ("other_port_get", http_tool(&format!("{}/redirect-port/302/{}/echo", a.url(), b.port), secret)),
            ("same_origin", http_tool(&format!("{}/redirect/307/echo", a.url()), secret)),
        ],
    );
    for tool in ["other_port", "other_port_get"] {
        let r = call(&rt, tool, json!({"card": "4111"}));
        refused(&r, "transport_refused");
        assert!(r.message.contains(&format!("another origin (`http://127.0.0.1:{}`)", b.port)), "{}", r.message);
        assert!(!r.message.contains("s3cret"), "{}", r.message);
    }
    assert_eq!(seen(&b), Vec::<Value>::new(), "the other port got a request");

    let r = call(&rt, "same_origin", json!({"card": "4111"}));
    assert!(r.is_allowed(), "{r:?}");
    let out = r.output.unwrap();
    assert_eq!((out["method"].as_str(), &out["body"]), (Some("POST"), &json!({"card": "4111"})));
    // The server got the secret; its echo reaches the model masked (item 10).
    assert_eq!(out["headers"]["authorization"], "[SECRET]");
    // A: the three first requests, and the same-origin redirect's target.
    let got = seen(&a);
    let paths: Vec<String> = got.iter().map(|r| r["path"].as_str().unwrap().to_string()).collect();
    assert_eq!(paths.last().map(String::as_str), Some("/echo"), "{paths:?}");
    assert_eq!(got.last().unwrap()["headers"]["authorization"], "Bearer redirect-s3cret");
    assert_eq!(seen(&b), Vec::<Value>::new());
}

#[test]
fn connection_refused_is_a_handler_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_d, rt) = load("http-refused", "production", &[("down", http_tool(&format!("http://127.0.0.1:{port}/echo"), ""))]);
    let r = call(&rt, "down", json!({}));
    refused(&r, "handler_error");
    assert_eq!(r.message, "`down` failed (connection refused)");
}

#[test]
fn test_mode_refuses_to_call_out() {
    let server = HttpServer::start();
    let (_d, rt) = load("http-test-mode", "test", &[("echo", http_tool(&format!("{}/echo", server.url()), ""))]);
    let r = call(&rt, "echo", json!({}));
    refused(&r, "transport_refused");
    assert!(r.message.contains("test mode"), "{}", r.message);
}

#[test]
fn doctor_warns_about_header_variables_that_are_not_set() {
    std::env::remove_var("HW_TEST_DOCTOR_UNSET");
    std::env::set_var("HW_TEST_DOCTOR_SET", "do-not-print-me");
    let (dir, _rt) = load(
        "http-doctor",
        "production",
        &[("echo", http_tool("http://127.0.0.1:9/echo", "  headers_env:\n    X-Api-Key: HW_TEST_DOCTOR_UNSET\n    X-Tenant: HW_TEST_DOCTOR_SET\n"))],
    );
    let args: Vec<String> = ["doctor".to_string(), dir.harness().to_string_lossy().into_owned()].to_vec();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = harnessweaver_runtime::cli::run_with(&args, &mut out, &mut err);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("environment variable `HW_TEST_DOCTOR_UNSET` for header `X-Api-Key` is not set"), "{out}");
    assert!(!out.contains("HW_TEST_DOCTOR_SET") && !out.contains("do-not-print-me"), "{out}");
}
