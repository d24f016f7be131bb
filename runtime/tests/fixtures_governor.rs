//! Runs every scenario of fixtures/governor/ and fixtures/builtins/ (the
//! governed built-in tools, with their `fs`, `file` and `accept` steps)
//! through the core's host API,
//! invoking handlers the way a binding does (begin, invoke, finish): a
//! `sleep_ms` handler runs on the calling thread (`HandlerMode::CallerThread`,
//! judged against the deadline when it returns), the others on a thread that
//! is abandoned at the deadline (`HandlerMode::Abandonable`). Python and Node
//! run the same scenarios and must agree byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod transport_support;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harnessweaver_core::governor::{run_with_timeout, Handler, InvokeOutcome};
use harnessweaver_core::host::{
    self, AuditCallback, AuditEvent, Begun, CallContext, CallResult, HandlerDecl, HandlerMode, Host, HostOptions, JsonValues, Outcome, Principal,
    SpecFormat, TestOptions, TicketRoute,
};
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::{json, Value};

/// The scenarios of fixtures/<area>/ (governor; builtins, issue 20; effects, issue 21: the effect journal,
/// compensation and secret handles, in the same shape).
fn scenarios(area: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(area);
    let mut files: Vec<PathBuf> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

/// `want` matches `got`: objects by their keys in `want` (recursively),
/// arrays item by item with the same length, anything else equal.
fn matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w.iter().all(|(k, v)| matches(v, g.get(k).unwrap_or(&Value::Null))),
        (Value::Array(w), Value::Array(g)) => w.len() == g.len() && w.iter().zip(g).all(|(a, b)| matches(a, b)),
        _ => want == got,
    }
}

/// A host method's named arguments, with principal names (`principal`, `by`) replaced by the principals.
fn request_args(args: &Value, principals: &Value) -> Value {
    let mut args = args.clone();
    for key in ["principal", "by"] {
        if let Some(name) = args.get(key).and_then(Value::as_str).map(str::to_string) {
            args[key] = principals[name.as_str()].clone();
        }
    }
    args
}

/// Scenarios that fail today, each with the reason. Kept empty when possible.
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

fn handler_for(behaviour: &Value) -> Handler {
    let b = behaviour.clone();
    Arc::new(move |args: &Value, key: &str| -> Result<Value, String> {
        if let Some(ms) = b.get("sleeps_ms").or_else(|| b.get("sleep_ms")).and_then(Value::as_u64) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        if let Some(kind) = b.get("raises").and_then(Value::as_str) {
            return Err(kind.to_string());
        }
        if b.get("echo").is_some() {
            return Ok(json!({ "args": args }));
        }
        if b.get("returns_key").is_some() {
            return Ok(json!({ "idempotency_key": key }));
        }
        if let Some(r) = b.get("returns_repeat") {
            return Ok(Value::String(r["text"].as_str().unwrap().repeat(r["times"].as_u64().unwrap() as usize)));
        }
        Ok(b.get("returns").cloned().unwrap_or(Value::Null))
    })
}

/// Collects audit events, as a host's audit function would.
#[derive(Default)]
struct Events(Mutex<Vec<AuditEvent>>);

impl AuditCallback for Events {
    fn record(&self, event: &AuditEvent) -> Result<(), String> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

struct Ctx {
    host: Host,
    behaviours: HashMap<String, Value>,
    handlers: HashMap<String, Handler>,
}

impl Ctx {
    fn invoke(&self, begun: Begun) -> CallResult {
        let ticket = match begun {
            Begun::Refused(result) | Begun::Pending(result) => return result,
            Begun::Allowed(t) => t,
        };
        let TicketRoute::Host { mode, .. } = ticket.route() else {
            let outcome = self.host.run_transport(&ticket);
            return self.host.finish_transport(ticket, outcome);
        };
        let behaviour = &self.behaviours[ticket.tool()];
        let handler = self.handlers[ticket.tool()].clone();
        let outcome = if behaviour.get("uses_secrets").is_some() {
            // What the handler received (`secrets_delivery: native`): each value's length, and the values (step 9 masks them).
            let secrets = ticket.secrets().unwrap_or(Value::Null);
            let lengths: serde_json::Map<String, Value> =
                secrets.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), json!(v.as_str().unwrap().len()))).collect();
            Outcome::Returned(json!({"lengths": lengths, "echo": secrets}))
        } else if behaviour.get("unserializable").is_some() {
            // A Rust runner stands in for a host object with no JSON form.
            Outcome::not_json(&harnessweaver_core::error::Error::value("unsupported_type", "a host object"))
        } else if mode == HandlerMode::CallerThread {
            match handler(ticket.args(), ticket.idempotency_key()) {
                Ok(v) => Outcome::Returned(v),
                Err(kind) => Outcome::Failed { kind },
            }
        } else {
            let ms = u64::try_from(ticket.remaining().as_millis()).unwrap();
            match run_with_timeout(handler, ticket.args().clone(), ticket.idempotency_key().to_string(), ms) {
                InvokeOutcome::Returned(v) => Outcome::Returned(v),
                InvokeOutcome::Failed { kind } => Outcome::Failed { kind },
                InvokeOutcome::TimedOut => Outcome::TimedOut,
                other => panic!("a handler thread gave {other:?}"),
            }
        };
        self.host.finish(ticket, outcome)
    }
}

/// Every key of `want` must equal the same key of `got` (a subset compare).
fn check_subset(want: &Value, got: &Value, what: &str) {
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(got.get(k).unwrap_or(&Value::Null), v, "{what}: `{k}` differs; got {got}");
    }
}

fn run_scenario(path: &Path) {
    let dir = std::env::temp_dir().join(format!("hw-gov-{}-{}", std::process::id(), path.file_stem().unwrap().to_string_lossy()));
    // `{{dir}}`: the scenario's directory, absolute (a `host_reads` root, a path in an expectation).
    let text = fs::read_to_string(path).unwrap().replace("{{dir}}", dir.to_str().unwrap());
    let case: Value = serde_json::from_str(&text).unwrap();
    let _ = fs::remove_dir_all(&dir);
    // `servers: {"http": "fixture-http"}`: the shared test server, its base URL for `{{http}}`.
    let http = case.get("servers").and_then(|s| s.get("http")).map(|_| transport_support::HttpServer::start());
    // `env`: variables the harness reads (`headers_env`), set before the load.
    for (var, value) in case.get("env").and_then(Value::as_object).into_iter().flatten() {
        std::env::set_var(var, value.as_str().unwrap());
    }
    for (rel, text) in case["files"].as_object().unwrap() {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut text = text.as_str().unwrap().to_string();
        if let Some(server) = &http {
            text = text.replace("{{http}}", &server.url());
        }
        fs::write(p, text).unwrap();
    }
    // `symlinks`: link → target (as written, relative to the link's directory).
    for (rel, to) in case.get("symlinks").and_then(Value::as_object).into_iter().flatten() {
        std::os::unix::fs::symlink(to.as_str().unwrap(), dir.join(rel)).unwrap();
    }
    let transports = TransportOptions {
        sandbox_worker: case.get("sandbox").and_then(Value::as_bool).unwrap_or(false).then(transport_support::sandbox_worker),
        ..TransportOptions::default()
    };
    let audit = Arc::new(Events::default());
    let behaviours: HashMap<String, Value> = case["handlers"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let handlers: HashMap<String, Handler> = behaviours.iter().map(|(k, v)| (k.clone(), handler_for(v))).collect();
    let decls = behaviours
        .iter()
        .map(|(tool, b)| HandlerDecl {
            tool: tool.clone(),
            mode: if b.get("sleep_ms").is_some() { HandlerMode::CallerThread } else { HandlerMode::Abandonable },
            takes_idempotency_key: true,
            takes_progress: false,
            function: None,
        })
        .collect();
    let options = HostOptions {
        handlers: decls,
        audit: Some(audit.clone()),
        test: Some(TestOptions { clock_ms: case["start_ms"].as_u64().unwrap(), sequential_ids: true }),
        backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)),
        ..HostOptions::default()
    };
    let loaded = Host::load(&dir.join("harness.yaml"), options);
    if let Some(want) = case.get("load_problems") {
        let err = loaded.err().unwrap_or_else(|| panic!("{}: expected the load to fail", path.display()));
        let got: Vec<Value> = err.problems.iter().map(|p| serde_json::to_value(p).unwrap()).collect();
        let want = want.as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{}: problems {got:?}", path.display());
        for (w, g) in want.iter().zip(&got) {
            check_subset(w, g, &format!("{} load problem", path.display()));
        }
        let _ = fs::remove_dir_all(&dir);
        return;
    }
    let host = loaded.unwrap_or_else(|e| panic!("{}: load failed: {e}", path.display()));
    let cx = Ctx { host, behaviours, handlers };
    let principals = &case["principals"];
    let principal = |name: &Value| Principal::from_value(&principals[name.as_str().unwrap()]).unwrap();
    let mut runs: HashMap<String, String> = HashMap::new();
    let mut last_approval: Option<String> = None;
    let mut last_result: Option<Value> = None;
    for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
        let what = format!("{} step {i}", path.display());
        if let Some(ms) = step.get("advance_ms").and_then(Value::as_u64) {
            cx.host.advance_clock(ms).unwrap();
            continue;
        }
        if let Some(ops) = step.get("fs").and_then(Value::as_array) {
            fs_ops(&dir, ops);
            continue;
        }
        if let Some(rel) = step.get("file").and_then(Value::as_str) {
            check_file(&dir.join(rel), &step["expect"], &what);
            continue;
        }
        if let Some(name) = step.get("run").filter(|_| step.get("call").is_none()) {
            // `h.run(principal=…)`: an `api` run for the principal; `expect.error` when it is not admitted.
            match (cx.host.start_run("api", Some(&principal(&step["principal"]))), step.get("expect")) {
                (Ok(id), None) => drop(runs.insert(name.as_str().unwrap().to_string(), id)),
                (Ok(id), Some(want)) => panic!("{what}: run `{id}` started; expected {want}"),
                (Err(e), want) => assert_eq!(want.and_then(|w| w.get("error")).and_then(Value::as_str), Some(e.code()), "{what}: {e}"),
            }
            continue;
        }
        let approval_ref = |r: &Value| -> String {
            match r.as_str().unwrap() {
                "last" => last_approval.clone().expect("no approval yet"),
                // The pending call's result as a host holds it: the core reads its approval's id.
                "last_result" => host::id_of(&JsonValues, last_result.as_ref().expect("no approval yet"), "id").unwrap().unwrap(),
                other => other.to_string(),
            }
        };
        let result: Result<CallResult, (String, Value)> = if let Some(tool) = step.get("call").and_then(Value::as_str) {
            let ctx = CallContext {
                principal: principal(&step["principal"]),
                tenant: step.get("tenant").and_then(Value::as_str).map(str::to_string),
                task: step.get("task").and_then(Value::as_str).map(str::to_string),
                run_id: step.get("run").and_then(Value::as_str).map(|r| runs[r].clone()),
                approval_id: step.get("approval").map(approval_ref),
                ..CallContext::default()
            };
            let begun = cx.host.begin(tool, step["args"].clone(), &ctx).unwrap();
            // `after_begin`: filesystem changes and clock moves between steps 1–7 and the invocation.
            for op in step.get("after_begin").and_then(Value::as_array).into_iter().flatten() {
                match op.get("advance_ms").and_then(Value::as_u64) {
                    Some(ms) => cx.host.advance_clock(ms).unwrap(),
                    None => fs_ops(&dir, std::slice::from_ref(op)),
                }
            }
            Ok(cx.invoke(begun))
        } else if let Some(tool) = step.get("explain").and_then(Value::as_str) {
            let ctx = CallContext {
                principal: principal(&step["principal"]),
                tenant: step.get("tenant").and_then(Value::as_str).map(str::to_string),
                run_id: step.get("run").and_then(Value::as_str).map(|r| runs[r].clone()),
                ..CallContext::default()
            };
            Err((String::new(), cx.host.explain(tool, step["args"].clone(), &ctx).unwrap()))
        } else if let Some(format) = step.get("tool_specs").and_then(Value::as_str) {
            let p = step.get("principal").map(principal);
            let specs = cx.host.tool_specs(SpecFormat::parse(format).unwrap(), p.as_ref(), step.get("tenant").and_then(Value::as_str)).unwrap();
            Err((String::new(), json!({ "specs": specs })))
        } else if let Some(method) = step.get("request").and_then(Value::as_str) {
            let args = request_args(&step["args"], principals);
            let answer = cx.host.request(method, &args);
            let expect = &step["expect"];
            match answer {
                Ok(value) => assert!(matches(&expect["value"], &value), "{what}: expected {expect}, got {value}"),
                Err(e) => assert_eq!(expect.get("error").and_then(Value::as_str), Some(e.code()), "{what}: {e}"),
            }
            continue;
        } else if let Some(id) = step.get("approve") {
            match cx.host.approve_and_resume(&approval_ref(id), &principal(&step["approver"]), step.get("args").cloned()) {
                Ok(begun) => Ok(cx.invoke(begun)),
                Err(e) => Err((e.code().to_string(), Value::Null)),
            }
        } else if let Some(id) = step.get("approve_only") {
            match cx.host.grant(&approval_ref(id), &principal(&step["approver"])) {
                Ok(a) => Err((String::new(), json!({ "state": a.state.as_str() }))),
                Err(e) => Err((e.code().to_string(), Value::Null)),
            }
        } else if let Some(id) = step.get("accept") {
            let args = json!({"id": approval_ref(id), "candidate": step["candidate"], "approver": principals[step["approver"].as_str().unwrap()]});
            match cx.host.request("accept_candidate", &args) {
                Ok(v) => Err((String::new(), v)),
                Err(e) => Err((e.code().to_string(), Value::Null)),
            }
        } else if let Some(id) = step.get("deny") {
            match cx.host.deny(&approval_ref(id), &Principal::new(step["by"].as_str().unwrap()), step["reason"].as_str().unwrap()) {
                Ok(a) => Err((String::new(), json!({ "state": a.state.as_str() }))),
                Err(e) => Err((e.code().to_string(), Value::Null)),
            }
        } else {
            panic!("{what}: unknown step {step}");
        };
        let expect = &step["expect"];
        match result {
            Ok(result) => {
                assert!(expect.get("error").is_none(), "{what}: expected error {expect}, got {result:?}");
                let got = result.to_value();
                if let Some(a) = &result.approval {
                    (last_approval, last_result) = (Some(a.id.clone()), Some(result.to_value()));
                }
                let mut want = expect.clone();
                let want_approval = want.as_object_mut().unwrap().remove("approval");
                check_subset(&want, &got, &what);
                if let Some(wa) = want_approval {
                    check_subset(&wa, &got["approval"], &what);
                }
            }
            Err((code, value)) if code.is_empty() => check_subset(expect, &value, &what),
            Err((code, _)) => assert_eq!(expect.get("error").and_then(Value::as_str), Some(code.as_str()), "{what}"),
        }
    }
    if let Some(want) = case.get("audit") {
        let events = audit.0.lock().unwrap().clone();
        let want = want.as_array().unwrap();
        assert_eq!(events.len(), want.len(), "{}: audit event count", path.display());
        for (w, e) in want.iter().zip(events) {
            check_subset(w, &serde_json::to_value(e).unwrap(), &format!("{} audit", path.display()));
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// The `fs` step: changes made between calls (paths relative to the scenario directory).
fn fs_ops(dir: &Path, ops: &[Value]) {
    for op in ops {
        if let Some(rel) = op.get("write").and_then(Value::as_str) {
            fs::write(dir.join(rel), op["text"].as_str().unwrap()).unwrap();
        } else if let Some(rel) = op.get("rename").and_then(Value::as_str) {
            fs::rename(dir.join(rel), dir.join(op["to"].as_str().unwrap())).unwrap();
        } else if let Some(rel) = op.get("symlink").and_then(Value::as_str) {
            std::os::unix::fs::symlink(op["to"].as_str().unwrap(), dir.join(rel)).unwrap();
        } else if let Some(rel) = op.get("remove").and_then(Value::as_str) {
            fs::remove_file(dir.join(rel)).unwrap();
        } else {
            panic!("unknown fs op {op}");
        }
    }
}

/// The `file` step: `{"text"}` exactly, `{"exists": false}`, `{"contains": [...]}`, `{"lacks": [...]}`.
fn check_file(path: &Path, expect: &Value, what: &str) {
    let text = fs::read_to_string(path).ok();
    if let Some(exists) = expect.get("exists").and_then(Value::as_bool) {
        assert_eq!(text.is_some(), exists, "{what}: {} exists", path.display());
    }
    if let Some(want) = expect.get("text").and_then(Value::as_str) {
        assert_eq!(text.as_deref(), Some(want), "{what}: {}", path.display());
    }
    for part in expect.get("contains").and_then(Value::as_array).into_iter().flatten() {
        assert!(text.as_deref().unwrap_or_default().contains(part.as_str().unwrap()), "{what}: {} lacks {part}: {text:?}", path.display());
    }
    for part in expect.get("lacks").and_then(Value::as_array).into_iter().flatten() {
        assert!(!text.as_deref().unwrap_or_default().contains(part.as_str().unwrap()), "{what}: {} holds {part}", path.display());
    }
}

#[test]
fn governor_scenarios() {
    run_area("governor");
}

#[test]
fn builtins_scenarios() {
    run_area("builtins");
}

#[test]
fn effects_scenarios() {
    run_area("effects");
}

fn run_area(area: &str) {
    let mut failures = Vec::new();
    let mut passed = 0;
    for path in scenarios(area) {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let outcome = std::panic::catch_unwind(|| run_scenario(&path));
        let expected = EXPECTED_FAILURES.iter().any(|(n, _)| *n == name);
        match (outcome, expected) {
            (Ok(()), false) => passed += 1,
            (Ok(()), true) => failures.push(format!("{name}: passes but is listed as an expected failure")),
            (Err(_), true) => {}
            (Err(e), false) => failures.push(format!("{name}: {}", e.downcast_ref::<String>().cloned().unwrap_or_default())),
        }
    }
    eprintln!("{area} fixtures: {passed} passed, {} expected failures", EXPECTED_FAILURES.len());
    assert!(failures.is_empty(), "{area} scenarios failed:\n{}", failures.join("\n"));
}
