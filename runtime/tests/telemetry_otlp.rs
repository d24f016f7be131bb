//! OpenTelemetry export (issue 24): `harnessweaver gateway mcp --stdio` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set sends each governed call as an
//! `execute_tool {tool}` span (GenAI semantic conventions) over OTLP/HTTP to a
//! receiver this test starts on 127.0.0.1, which also serves the http tool the
//! allowed call reaches. Without the variable nothing is sent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};

/// Requests received: (path, body).
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An HTTP/1.1 server on 127.0.0.1: OTLP at /v1/*, the tool at /refund.
fn receiver() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let keep = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = Arc::clone(&keep);
            std::thread::spawn(move || serve(stream, &seen));
        }
    });
    (url, seen)
}

fn serve(stream: TcpStream, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        let (kind, answer) = if path.starts_with("/v1/") {
            seen.lock().unwrap().push((path, body));
            ("application/x-protobuf", Vec::new())
        } else {
            ("application/json", br#"{"refunded": true}"#.to_vec())
        };
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n", answer.len());
        out.write_all(head.as_bytes()).unwrap();
        out.write_all(&answer).unwrap();
    }
}

fn harness(tool_url: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hw-otel-{}-{}", std::process::id(), tool_url.len() + rand_suffix()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  state: sqlite:state.db\n  policy:\n    rules:\n      - {name: refunds, effect: allow, tools: [refund]}\n  tools:\n    manifests: [tools/*.yaml]\n  gateway:\n    stdio:\n      principal: {id: agent}\n      tenant: acme\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/refund.yaml"),
        format!(
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: refund}}\nspec:\n  transport: http\n  url: \"{tool_url}/refund\"\n  description: Refund an order.\n  input_schema: {{type: object, properties: {{amount: {{type: integer}}, card: {{type: string}}}}, required: [amount]}}\n  approval: {{when: \"args.amount > 100\"}}\n"
        ),
    )
    .unwrap();
    let pin = Command::new(env!("CARGO_BIN_EXE_harnessweaver")).args(["tools", "pin"]).arg(dir.join("harness.yaml")).output().unwrap();
    assert!(pin.status.success(), "{}", String::from_utf8_lossy(&pin.stdout));
    dir
}

fn rand_suffix() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

/// Three calls over stdio (allowed, refused, waiting for approval), then the client leaves.
fn run_gateway(dir: &std::path::Path, env: &[(&str, &str)]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
        .args(["gateway", "mcp"])
        .arg(dir.join("harness.yaml"))
        .arg("--stdio")
        .envs(env.iter().copied())
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let send = |stdin: &mut std::process::ChildStdin, v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let _ = lines.next().unwrap().unwrap();
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let calls = [json!({"amount": 20, "card": "4111111111111111"}), json!({"amount": "twenty"}), json!({"amount": 500})];
    for (i, args) in calls.iter().enumerate() {
        send(&mut stdin, json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "refund", "arguments": args}}));
        let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], i + 1, "{answer}");
    }
    // The client leaves: the gateway ends, flushing its exporters.
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

fn attrs(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(Any::IntValue(i)) => i.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), v)
        })
        .collect()
}

#[test]
fn the_gateway_exports_each_call_as_an_execute_tool_span() {
    let (url, seen) = receiver();
    let dir = harness(&url);
    run_gateway(&dir, &[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()), ("OTEL_SERVICE_NAME", "otel-test")]);
    let seen = seen.lock().unwrap().clone();
    let traces: Vec<&Vec<u8>> = seen.iter().filter(|(p, _)| p == "/v1/traces").map(|(_, b)| b).collect();
    assert!(!traces.is_empty(), "no trace export: {:?}", seen.iter().map(|(p, _)| p).collect::<Vec<_>>());
    let spans: Vec<Span> = traces
        .iter()
        .flat_map(|b| ExportTraceServiceRequest::decode(b.as_slice()).unwrap().resource_spans)
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    let calls: Vec<&Span> = spans.iter().filter(|s| s.name == "execute_tool refund").collect();
    assert_eq!(calls.len(), 3, "{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let verdicts: Vec<String> = calls.iter().map(|s| attrs(s)["gen_ai.guardrail.verdict.type"].clone()).collect();
    assert_eq!(verdicts, ["allow", "deny", "escalate"]);
    let allowed = attrs(calls[0]);
    assert_eq!(allowed["gen_ai.operation.name"], "execute_tool");
    assert_eq!(allowed["gen_ai.tool.name"], "refund");
    assert_eq!(allowed["gen_ai.tool.description"], "Refund an order.");
    assert!(allowed["gen_ai.tool.call.id"].len() > 4);
    assert!(allowed["gen_ai.guardrail.policy.version"].starts_with("sha256:"), "the policy version that decided");
    let rule_ids = calls[0].attributes.iter().find(|kv| kv.key == "gen_ai.guardrail.policy.rule.id").and_then(|kv| kv.value.as_ref()?.value.as_ref());
    let Some(Any::ArrayValue(ids)) = rule_ids else { panic!("no rule ids: {rule_ids:?}") };
    let ids: Vec<_> = ids.values.iter().map(|v| v.value.clone()).collect();
    assert_eq!(ids, [Some(Any::StringValue("harness/refunds".into()))], "the rule that allowed the call");
    assert!(!allowed.contains_key("error.type"));
    let refused = attrs(calls[1]);
    assert_eq!((refused["error.type"].as_str(), refused["harnessweaver.step"].as_str()), ("invalid_args", "validate"));
    assert_eq!(calls[1].status.as_ref().unwrap().code, 2, "status ERROR");
    assert_eq!(attrs(calls[2])["harnessweaver.code"], "approval_required");
    // One child per phase: decide, invoke and output for the call that ran; decide alone for the others.
    let children = |parent: &Span| -> Vec<String> {
        let mut names: Vec<String> = spans.iter().filter(|s| s.parent_span_id == parent.span_id).map(|s| s.name.clone()).collect();
        names.sort();
        names
    };
    assert_eq!(children(calls[0]), ["harnessweaver.decide", "harnessweaver.invoke", "harnessweaver.output"]);
    assert_eq!(children(calls[1]), ["harnessweaver.decide"]);
    // Never arguments: the card number and the amounts appear nowhere in what was exported.
    for (_, body) in &seen {
        let text = String::from_utf8_lossy(body);
        assert!(!text.contains("4111111111111111") && !text.contains("twenty"), "an argument was exported");
    }
    // Metrics went out too.
    assert!(seen.iter().any(|(p, _)| p == "/v1/metrics"), "no metrics export");
    assert_eq!(approval_waits(&seen), Vec::<(String, u64)>::new(), "no approval decided yet");

    // An approver grants the pending call from another process (the store is
    // shared): that process exports how long the approval waited.
    let (url2, seen2) = receiver();
    let cli = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_harnessweaver")).args(args).envs(env.iter().copied()).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let harness_yaml = dir.join("harness.yaml");
    let harness_yaml = harness_yaml.to_str().unwrap();
    let open: Value = serde_json::from_slice(&cli(&["approvals", "list", harness_yaml, "--json"], &[])).unwrap();
    let id = open[0]["id"].as_str().unwrap().to_string();
    cli(&["approvals", "approve", &id, "--harness", harness_yaml, "--approver", "reviewer"], &[("OTEL_EXPORTER_OTLP_ENDPOINT", url2.as_str())]);
    let seen2 = seen2.lock().unwrap().clone();
    assert_eq!(approval_waits(&seen2), vec![("approved".to_string(), 1)], "one wait, of the approved call");
}

/// The `harnessweaver.approval.wait` histogram in `seen`: (state, count) as
/// of the last export (the exporter's temporality is cumulative).
fn approval_waits(seen: &[(String, Vec<u8>)]) -> Vec<(String, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for (_, body) in seen.iter().filter(|(p, _)| p == "/v1/metrics") {
        let request = ExportMetricsServiceRequest::decode(body.as_slice()).unwrap();
        for metric in request.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics) {
            if metric.name != "harnessweaver.approval.wait" {
                continue;
            }
            let Some(Data::Histogram(h)) = &metric.data else { panic!("not a histogram: {metric:?}") };
            for point in &h.data_points {
                let state = point
                    .attributes
                    .iter()
                    .find(|kv| kv.key == "harnessweaver.approval.state")
                    .and_then(|kv| kv.value.as_ref())
                    .and_then(|v| v.value.as_ref());
                let Some(Any::StringValue(state)) = state else { panic!("no state: {point:?}") };
                assert!(point.sum.is_some_and(|s| s >= 0.0));
                out.insert(state.clone(), point.count);
            }
        }
    }
    out.into_iter().collect()
}

#[test]
fn without_the_variable_nothing_is_sent() {
    let (url, seen) = receiver();
    let dir = harness(&url);
    run_gateway(&dir, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]);
    assert!(seen.lock().unwrap().is_empty());
}
