//! The host API (`harnessweaver_core::host`) as a binding uses it: load with
//! handler declarations, a resolver and callbacks; begin/finish with the
//! deadline judged in core; approvals resumed in one call; the cel-lite
//! variable check, sanitizer names and refusal classes with one text each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use harnessweaver_core::host::cel;
use harnessweaver_core::host::{
    ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback, AuditEvent, Begun, CallContext, Decision, HandlerDecl, HandlerMode, HandlerRef,
    HandlerResolver, Host, HostOptions, Interrupter, ManifestSource, Outcome, Principal, RefusalClass, Resolved, Step, TestOptions, TicketCell,
    TicketRoute, Watchdog,
};
use serde_json::{json, Value};

fn dir(name: &str, files: &[(&str, String)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hw-host-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    for (rel, text) in files {
        let p = d.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    d.canonicalize().unwrap()
}

fn harness(extra: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n{extra}")
}

fn tool(name: &str, extra: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: {name}}}\nspec:\n  handler: \"mod_{name}:run\"\n  description: d\n{extra}")
}

fn decl(tool: &str, mode: HandlerMode) -> HandlerDecl {
    HandlerDecl { tool: tool.into(), mode, takes_idempotency_key: false, takes_progress: false, function: None }
}

fn ctx() -> CallContext {
    CallContext { principal: Principal::new("alice"), ..CallContext::default() }
}

fn load(d: &Path, handlers: Vec<HandlerDecl>) -> Host {
    Host::load(&d.join("harness.yaml"), HostOptions { handlers, ..HostOptions::default() }).unwrap()
}

fn begin(host: &Host, tool: &str, args: Value) -> harnessweaver_core::host::Ticket {
    match host.begin(tool, args, &ctx()).unwrap() {
        Begun::Allowed(t) => t,
        other => panic!("not allowed: {other:?}"),
    }
}

#[test]
fn an_outcome_after_the_deadline_ends_timeout_in_every_mode() {
    let d = dir("deadline", &[("harness.yaml", harness("")), ("tools/slow.yaml", tool("slow", "  timeout: 20ms\n"))]);
    for mode in [HandlerMode::CallerThread, HandlerMode::Abandonable, HandlerMode::Async] {
        let host = load(&d, vec![decl("slow", mode)]);
        let fast = begin(&host, "slow", json!({}));
        assert_eq!(fast.route(), TicketRoute::Host { mode, takes_idempotency_key: false });
        assert!(fast.remaining() <= Duration::from_millis(20));
        assert!(host.finish(fast, Outcome::Returned(json!("quick"))).is_allowed());
        for outcome in [Outcome::Returned(json!("late")), Outcome::Failed { kind: "Overrun".into() }] {
            let ticket = begin(&host, "slow", json!({}));
            std::thread::sleep(ticket.remaining() + Duration::from_millis(5));
            let result = host.finish(ticket, outcome);
            assert_eq!((result.decision, result.code.map(|c| c.as_str()), result.step), (Decision::Refused, Some("timeout"), Some(Step::Invoke)));
            assert_eq!(result.output, None);
        }
    }
}

#[test]
fn a_ticket_finishes_once() {
    let d = dir("once", &[("harness.yaml", harness("")), ("tools/t.yaml", tool("t", ""))]);
    let host = load(&d, vec![decl("t", HandlerMode::CallerThread)]);
    let cell = TicketCell::new(begin(&host, "t", json!({"a": 1})));
    assert_eq!(cell.peek(|t| t.args().clone()), Some(json!({"a": 1})));
    assert!(host.finish(cell.take().unwrap(), Outcome::Returned(json!(1))).is_allowed());
    assert_eq!(cell.take().unwrap_err().code(), "ticket_used");
}

#[test]
fn audit_callback_missing_is_a_located_load_problem() {
    let d = dir("audit", &[("harness.yaml", harness("  audit:\n    sink: callback\n")), ("tools/t.yaml", tool("t", ""))]);
    let err = Host::load(&d.join("harness.yaml"), HostOptions { handlers: vec![decl("t", HandlerMode::CallerThread)], ..HostOptions::default() })
        .unwrap_err();
    assert_eq!(err.code(), "audit_callback_missing");
    let p = &err.problems[0];
    assert_eq!((p.file.as_deref(), p.line, p.column, p.path.as_str()), (Some("harness.yaml"), Some(7), Some(11), "spec.audit.sink"));
    assert!(err.text().starts_with("1 problem found\n  harness.yaml:7:11: spec.audit.sink: "), "{}", err.text());

    #[derive(Default)]
    struct Events(Mutex<Vec<String>>);
    impl AuditCallback for Events {
        fn record(&self, event: &AuditEvent) -> Result<(), String> {
            self.0.lock().unwrap().push(event.tool.clone());
            Ok(())
        }
    }
    let events = Arc::new(Events::default());
    let options = HostOptions { handlers: vec![decl("t", HandlerMode::CallerThread)], audit: Some(events.clone()), ..HostOptions::default() };
    let host = Host::load(&d.join("harness.yaml"), options).unwrap();
    let ticket = begin(&host, "t", json!({}));
    host.finish(ticket, Outcome::Returned(json!(null)));
    assert_eq!(*events.0.lock().unwrap(), ["t"]);
}

/// Issue 24: an observer sees every event beside the harness's sink (here
/// `none`, which alone builds no events), cannot fail a call, and the `span`
/// method turns an event's JSON form into its span record.
#[test]
fn an_observer_sees_events_beside_the_sink_and_span_describes_them() {
    let d = dir("observe", &[("harness.yaml", harness("  audit:\n    sink: none\n")), ("tools/t.yaml", tool("t", ""))]);
    #[derive(Default)]
    struct Seen(Mutex<Vec<Value>>);
    impl AuditCallback for Seen {
        fn record(&self, event: &AuditEvent) -> Result<(), String> {
            self.0.lock().unwrap().push(serde_json::to_value(event).unwrap());
            Err("TypeError".into())
        }
    }
    let seen = Arc::new(Seen::default());
    let options = HostOptions { handlers: vec![decl("t", HandlerMode::CallerThread)], observe: Some(seen.clone()), ..HostOptions::default() };
    let host = Host::load(&d.join("harness.yaml"), options).unwrap();
    let ticket = begin(&host, "t", json!({"secret": "s3cr3t-value"}));
    let result = host.finish(ticket, Outcome::Returned(json!("output-value")));
    assert_eq!(result.decision, Decision::Allowed, "the observer's failure fails no call");
    let event = seen.0.lock().unwrap().pop().unwrap();
    let span = host.request("span", &json!({ "event": event })).unwrap();
    assert_eq!(span["name"], "execute_tool t");
    let attrs: std::collections::BTreeMap<&str, &Value> =
        span["attributes"].as_array().unwrap().iter().map(|p| (p[0].as_str().unwrap(), &p[1])).collect();
    assert_eq!(attrs["gen_ai.tool.description"], "d");
    assert_eq!(attrs["gen_ai.tool.call.id"], &event["call_id"]);
    assert!(!span.to_string().contains("s3cr3t-value") && !span.to_string().contains("output-value"));
    let err = host.request("span", &json!({ "event": {"tool": "t"} })).unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
}

/// Issue 24: an observer that does not listen (its host's OpenTelemetry API
/// has no SDK) is handed no event and, with a `none` sink, no event is built;
/// turned on, it sees the next call; an approver's decision reaches it with
/// how long the approval waited, and the span names the policy version.
#[test]
fn an_observer_that_does_not_listen_gets_nothing_and_sees_approval_waits_when_it_does() {
    let approval = "  approval: {when: \"args.n > 5\"}\n  input_schema: {type: object, properties: {n: {type: number}}}\n";
    let d = dir("listen", &[("harness.yaml", harness("  audit:\n    sink: none\n")), ("tools/pay.yaml", tool("pay", approval))]);
    #[derive(Default)]
    struct Seen(Mutex<Vec<Value>>);
    impl AuditCallback for Seen {
        fn record(&self, event: &AuditEvent) -> Result<(), String> {
            self.0.lock().unwrap().push(serde_json::to_value(event).unwrap());
            Ok(())
        }
        fn approval_decided(&self, decided: &harnessweaver_core::audit::ApprovalDecided) -> Result<(), String> {
            self.0.lock().unwrap().push(json!({ "approval_decided": decided }));
            Ok(())
        }
    }
    let seen = Arc::new(Seen::default());
    let options = HostOptions {
        handlers: vec![decl("pay", HandlerMode::CallerThread)],
        observe: Some(seen.clone()),
        test: Some(TestOptions { clock_ms: 1_000, sequential_ids: true }),
        ..HostOptions::default()
    };
    let host = Host::load(&d.join("harness.yaml"), options).unwrap();
    let call = |n: u32| {
        let ticket = begin(&host, "pay", json!({ "n": n }));
        assert_eq!(host.finish(ticket, Outcome::Returned(json!("ok"))).decision, Decision::Allowed);
    };
    // On by default (a Rust host's observer listens), off when told.
    call(1);
    assert_eq!(seen.0.lock().unwrap().len(), 1);
    assert_eq!(host.request("observe", &json!({ "listening": false })).unwrap(), json!(true));
    call(2);
    let pending = match host.begin("pay", json!({ "n": 9 }), &ctx()).unwrap() {
        Begun::Pending(r) => r.approval.unwrap().id,
        other => panic!("not pending: {other:?}"),
    };
    host.request("advance_ms", &json!({ "ms": 1_500 })).unwrap();
    host.grant(&pending, &Principal::new("bob")).unwrap();
    assert_eq!(seen.0.lock().unwrap().len(), 1, "a call and a decision while off reach nothing");
    // On again: the next call and decision are seen.
    host.request("observe", &json!({ "listening": true })).unwrap();
    call(3);
    let pending = match host.begin("pay", json!({ "n": 8 }), &ctx()).unwrap() {
        Begun::Pending(r) => r.approval.unwrap().id,
        other => panic!("not pending: {other:?}"),
    };
    host.request("advance_ms", &json!({ "ms": 2_500 })).unwrap();
    host.deny(&pending, &Principal::new("bob"), "no").unwrap();
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[2]["decision"], "pending");
    let decided = &seen[3]["approval_decided"];
    assert_eq!(
        (decided["approval_id"].as_str(), decided["state"].as_str(), decided["wait_ms"].as_u64()),
        (Some(pending.as_str()), Some("denied"), Some(2_500))
    );
    let span = host.request("span", &json!({ "event": seen[1] })).unwrap();
    let version = span["attributes"].as_array().unwrap().iter().find(|p| p[0] == "gen_ai.guardrail.policy.version").unwrap()[1].clone();
    assert_eq!(version, decided["policy_version"]);
    assert!(version.as_str().unwrap().starts_with("sha256:"));
    // A host without an observer says so.
    let plain = load(&d, vec![decl("pay", HandlerMode::CallerThread)]);
    assert_eq!(plain.request("observe", &json!({ "listening": true })).unwrap(), json!(false));
}

struct Resolver {
    roots: Vec<PathBuf>,
    origins: Vec<(String, Option<PathBuf>)>,
    asked: Vec<String>,
    /// Attribute names that are modules (as Python's `os` is an attribute of a module importing it).
    modules: Vec<&'static str>,
}

impl HandlerResolver for Resolver {
    fn package_roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }
    fn resolve(&mut self, r: &HandlerRef<'_>) -> Result<Resolved, String> {
        self.asked.push(format!("{}:{}", r.module, r.attrs.join(".")));
        match self.origins.iter().find(|(m, _)| m == r.module) {
            Some((_, origin)) => {
                let modules_in_path = (1..=r.attrs.len())
                    .filter(|&n| r.attrs.get(n - 1).is_some_and(|a| self.modules.contains(&a.as_str())))
                    .map(|n| r.attrs[..n].join("."))
                    .collect();
                Ok(Resolved { origin: origin.clone(), modules_in_path, mode: HandlerMode::Async, takes_idempotency_key: true, takes_progress: false })
            }
            None => Err(format!("ModuleNotFoundError: no module named `{}`", r.module)),
        }
    }
}

#[test]
fn handler_refs_resolve_through_the_host_with_the_origin_checked_in_core() {
    let d = dir(
        "refs",
        &[
            ("harness.yaml", harness("")),
            ("tools/local.yaml", tool("local", "")),
            ("tools/pkg.yaml", tool("pkg", "")),
            ("tools/stdlib.yaml", tool("stdlib", "")),
            ("tools/builtin.yaml", tool("builtin", "")),
            ("tools/missing.yaml", tool("missing", "")),
            ("tools/given.yaml", tool("given", "")),
            ("mod_local.py", String::new()),
        ],
    );
    let site = dir("refs-site", &[("mod_pkg.py", String::new())]);
    let elsewhere = dir("refs-elsewhere", &[("mod_stdlib.py", String::new())]);
    let mut resolver = Resolver {
        roots: vec![site.clone()],
        origins: vec![
            ("mod_local".into(), Some(d.join("mod_local.py"))),
            ("mod_pkg".into(), Some(site.join("mod_pkg.py"))),
            ("mod_stdlib".into(), Some(elsewhere.join("mod_stdlib.py"))),
            ("mod_builtin".into(), None),
        ],
        asked: Vec::new(),
        modules: Vec::new(),
    };
    let options = HostOptions { handlers: vec![decl("given", HandlerMode::CallerThread)], resolver: Some(&mut resolver), ..HostOptions::default() };
    let err = Host::load(&d.join("harness.yaml"), options).unwrap_err();
    let mut got: Vec<(String, String, Option<usize>)> =
        err.problems.iter().map(|p| (p.file.clone().unwrap(), p.code.as_str().to_string(), p.line)).collect();
    got.sort();
    let want = |f: &str| (format!("tools/{f}.yaml"), "handler_import_failed".to_string(), Some(5));
    assert_eq!(got, vec![want("builtin"), want("missing"), want("stdlib")]);
    assert!(err.text().contains("outside the harness directory and installed packages"), "{}", err.text());
    assert!(err.text().contains("no module named `mod_missing`"));
    // The tool given a function is never imported.
    assert!(!resolver.asked.contains(&"mod_given:run".to_string()));

    // Without the refused ones, the resolved handlers carry their mode.
    for f in ["builtin", "missing", "stdlib"] {
        fs::remove_file(d.join(format!("tools/{f}.yaml"))).unwrap();
    }
    let options = HostOptions { handlers: vec![decl("given", HandlerMode::CallerThread)], resolver: Some(&mut resolver), ..HostOptions::default() };
    let host = Host::load(&d.join("harness.yaml"), options).unwrap();
    assert_eq!(begin(&host, "pkg", json!({})).route(), TicketRoute::Host { mode: HandlerMode::Async, takes_idempotency_key: true });
}

#[test]
fn tools_registered_in_code_and_inspect() {
    let d = dir("code", &[("harness.yaml", harness("")), ("tools/t.yaml", tool("t", ""))]);
    let code = ManifestSource::Value {
        value: json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "greet"},
                      "spec": {"description": "d", "handler": "x:y"}}),
        origin: ManifestSource::DEFAULT_ORIGIN.into(),
    };
    let options = HostOptions {
        handlers: vec![decl("t", HandlerMode::CallerThread), decl("greet", HandlerMode::CallerThread)],
        code_tools: vec![code],
        ..HostOptions::default()
    };
    let host = Host::load(&d.join("harness.yaml"), options).unwrap();
    assert_eq!(host.tools().map(|t| t.name()).collect::<Vec<_>>(), ["t", "greet"]);
    let unhandled = Host::load(&d.join("harness.yaml"), HostOptions::default()).unwrap_err();
    assert_eq!(unhandled.code(), "handler_not_registered");
    let inspected = Host::inspect(&d).unwrap();
    assert_eq!(inspected.tools().count(), 1);
    assert_eq!(inspected.begin("t", json!({}), &ctx()).unwrap_err().code(), "not_loaded_for_calls");
    assert_eq!(host.advance_clock(1).unwrap_err().code(), "no_test_clock");
}

struct Answer(ApprovalAnswer, Mutex<Vec<Value>>);

impl ApprovalCallback for Answer {
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer {
        self.1.lock().unwrap().push(view.approval());
        self.0.clone()
    }
}

#[test]
fn approvals_resume_in_one_call_and_callbacks_see_no_state() {
    let approval = "  risk: high\n  approval: {when: \"true\", approver_role: finance}\n  input_schema: {type: object, properties: {n: {type: number, maximum: 10}}}\n";
    let d = dir("approve", &[("harness.yaml", harness("")), ("tools/pay.yaml", tool("pay", approval))]);
    let bob = Principal::from_value(&json!({"id": "bob", "roles": ["finance"]})).unwrap();
    let host = Host::load(
        &d.join("harness.yaml"),
        HostOptions {
            handlers: vec![decl("pay", HandlerMode::CallerThread)],
            test: Some(TestOptions { clock_ms: 1, sequential_ids: true }),
            ..HostOptions::default()
        },
    )
    .unwrap();
    let pending = |n: i64| match host.begin("pay", json!({"n": n}), &ctx()).unwrap() {
        Begun::Pending(r) => r.approval.unwrap().id,
        other => panic!("{other:?}"),
    };
    let id = pending(5);
    assert_eq!(host.approvals().unwrap().len(), 1);
    // An edit past the schema is refused at step 2 after approval.
    match host.approve_and_resume(&id, &bob, Some(json!({"n": 50}))).unwrap() {
        Begun::Refused(r) => assert_eq!(r.code.map(|c| c.as_str()), Some("invalid_args")),
        other => panic!("{other:?}"),
    }
    let id = pending(5);
    let Begun::Allowed(ticket) = host.approve_and_resume(&id, &bob, Some(json!({"n": 3}))).unwrap() else { panic!() };
    assert_eq!(ticket.args(), &json!({"n": 3}));
    assert!(host.finish(ticket, Outcome::Returned(json!("paid"))).is_allowed());
    let id = pending(5);
    assert_eq!(host.deny(&id, &bob, "no").unwrap().state.as_str(), "denied");
    assert_eq!(host.approve_and_resume(&id, &bob, None).unwrap_err().code(), "approval_not_pending");

    for (answer, decision) in [
        (ApprovalAnswer::Approve, Decision::Allowed),
        (ApprovalAnswer::Deny, Decision::Refused),
        (ApprovalAnswer::from_bool(None), Decision::Pending),
        (ApprovalAnswer::Failed { kind: "ValueError".into() }, Decision::Pending),
    ] {
        let cb = Arc::new(Answer(answer, Mutex::new(Vec::new())));
        let options = HostOptions { handlers: vec![decl("pay", HandlerMode::CallerThread)], on_approval: Some(cb.clone()), ..HostOptions::default() };
        let host = Host::load(&d.join("harness.yaml"), options).unwrap();
        let got = match host.begin("pay", json!({"n": 1}), &ctx()).unwrap() {
            Begun::Allowed(t) => host.finish(t, Outcome::Returned(json!(1))).decision,
            Begun::Refused(r) | Begun::Pending(r) => r.decision,
        };
        assert_eq!(got, decision);
        let seen = cb.1.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].get("state").is_none() && seen[0].get("tool") == Some(&json!("pay")), "{}", seen[0]);
    }
}

#[test]
fn cel_variables_are_checked_with_one_message() {
    assert!(cel::check_key("args").is_ok());
    let err = cel::check_key("argz").unwrap_err();
    assert_eq!(err.code(), "invalid_vars");
    assert_eq!(err.to_string(), "unknown variable `argz`; expressions can use `principal`, `tenant`, `task`, `tool`, `args`, `labels`, `run`");
    let long = "x".repeat(100);
    assert!(cel::check_key(&long).unwrap_err().to_string().contains(&format!("`{}…`", "x".repeat(40))));
    assert_eq!(cel::not_a_mapping("list").code(), "invalid_vars");
    let program = cel::compile("args.n > 1").unwrap();
    for (text, code) in [("[1]", "invalid_vars"), ("\"x\"", "invalid_vars"), ("{", "invalid_json"), (r#"{"argz": 1}"#, "invalid_vars")] {
        assert_eq!(cel::gather_json(&program, text).unwrap_err().code(), code, "{text}");
    }
    let parts = cel::gather_json(&program, r#" {"args": {"n": 2, "skip": [1, {"a": "}"}]}, "tenant": 1e999} "#).unwrap();
    assert_eq!(program.evaluate_parts(&parts), cel::CelOutcome::Value(json!(true)));
    let p = cel::to_problem(&cel::compile("args.").unwrap_err());
    assert_eq!((p.code.as_str(), p.line), ("cel_syntax", Some(1)));
}

/// Only the parts an expression reads are converted: JSON text nested beyond
/// the parser's limit, or a number beyond f64, is refused only where read.
#[test]
fn cel_gathers_only_what_an_expression_reads() {
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let text = format!(r#"{{"args": {{"a": {{"b": 5, "c": {deep}}}, "d": 1e999, "a": {{"b": 6, "c": 0}}}}, "tenant": {deep}}}"#);
    let value = |expr: &str| cel::compile(expr).map(|p| cel::gather_json(&p, &text).map(|parts| p.evaluate_parts(&parts))).unwrap();
    // The last of repeated keys counts, as in a full parse.
    assert_eq!(value("args.a.b == 6 && args.a.c == 0").unwrap(), cel::CelOutcome::Value(json!(true)));
    assert_eq!(value("has(args.a) && !has(args.e)").unwrap(), cel::CelOutcome::Value(json!(true)));
    assert_eq!(value("size(tenant)").unwrap_err().code(), "nesting_too_deep");
    assert_eq!(value("args.d").unwrap_err().code(), "invalid_json");
    assert_eq!(value("size(args)").unwrap_err().code(), "nesting_too_deep");
}

#[test]
fn sanitize_names_and_refusal_classes() {
    let (out, counts) = harnessweaver_core::host::sanitize(&json!("mail a@b.example"), &["pii_redact"]).unwrap();
    assert_eq!(out, json!("mail [EMAIL]"));
    assert_eq!(counts.iter().collect::<Vec<_>>(), [("EMAIL", 1)]);
    assert_eq!(harnessweaver_core::host::sanitize(&json!(1), &["nope"]).unwrap_err().code(), "unknown_sanitizer");

    assert_eq!(RefusalClass::ALL[0], RefusalClass::ToolBlocked);
    for c in RefusalClass::ALL {
        if let Some(parent) = c.parent() {
            assert!(RefusalClass::ALL.iter().position(|x| *x == parent) < RefusalClass::ALL.iter().position(|x| x == c));
        }
    }
    assert_eq!(RefusalClass::of(Decision::Allowed, None), None);
    assert_eq!(RefusalClass::of(Decision::Pending, Some(Step::Approval)), Some(RefusalClass::ApprovalRequired));
    assert_eq!(RefusalClass::of(Decision::Refused, Some(Step::Approval)), Some(RefusalClass::ApprovalDenied));
    assert_eq!(RefusalClass::of(Decision::Refused, Some(Step::Limits)).map(RefusalClass::name), Some("LimitExceeded"));
    assert_eq!(RefusalClass::of(Decision::Refused, None), Some(RefusalClass::ToolBlocked));
    for risk in harnessweaver_core::host::RISKS {
        let text =
            format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: t}}\nspec: {{description: d, handler: \"x:y\", risk: {risk}}}\n");
        harnessweaver_core::Tool::from_manifest_text(&text, "t.yaml").unwrap();
    }
    for effect in harnessweaver_core::host::SIDE_EFFECTS {
        let text = format!(
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: t}}\nspec: {{description: d, handler: \"x:y\", side_effect: {effect}}}\n"
        );
        harnessweaver_core::Tool::from_manifest_text(&text, "t.yaml").unwrap();
    }
}

/// A host whose interrupts and withdrawals are sent down a channel.
struct Recorder {
    hold: Mutex<()>,
    sent: Mutex<mpsc::Sender<(&'static str, u64)>>,
}

impl Interrupter for Recorder {
    fn hold(&self, f: &mut dyn FnMut()) {
        let _held = self.hold.lock().unwrap();
        f();
    }
    fn interrupt(&self, thread: u64) {
        self.sent.lock().unwrap().send(("interrupt", thread)).unwrap();
    }
    fn withdraw(&self, thread: u64) {
        self.sent.lock().unwrap().send(("withdraw", thread)).unwrap();
    }
}

#[test]
fn watchdog_interrupts_only_the_overrunning_thread_and_withdraws_on_unwatch() {
    let (tx, rx) = mpsc::channel();
    let dog = Watchdog::new(Recorder { hold: Mutex::new(()), sent: Mutex::new(tx) });
    let later = dog.watch(1, Instant::now() + Duration::from_secs(3600));
    // Registered after a far deadline, an earlier one wakes the watchdog.
    let overrun = dog.watch(2, Instant::now());
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)).unwrap(), ("interrupt", 2));
    assert!(dog.unwatch(overrun), "the overrunning call was interrupted");
    assert_eq!(rx.try_recv().unwrap(), ("withdraw", 2), "unwatch withdraws an interrupt not yet delivered");
    assert!(!dog.unwatch(later), "a call within its deadline is not interrupted");
    assert!(rx.try_recv().is_err(), "nothing else was interrupted or withdrawn");
    assert!(!dog.unwatch(later), "a watch ends once");
}

#[test]
fn issue17_item13_a_tool_in_code_confusable_with_a_manifest_is_a_load_error() {
    let d = dir("confusable", &[("harness.yaml", harness("")), ("tools/t.yaml", tool("refund_payment", ""))]);
    let code = |name: &str| ManifestSource::Value {
        value: json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": name}, "spec": {"description": "d", "handler": "x:y"}}),
        origin: "app.py".into(),
    };
    let options = |name: &str| HostOptions {
        handlers: vec![decl("refund_payment", HandlerMode::CallerThread), decl(name, HandlerMode::CallerThread)],
        code_tools: vec![code(name)],
        ..HostOptions::default()
    };
    let err = Host::load(&d.join("harness.yaml"), options("Refund_Payment")).expect_err("a confusable tool in code loaded");
    assert_eq!(err.problems.len(), 1, "{}", err.text());
    let p = &err.problems[0];
    assert_eq!((p.code.as_str(), p.file.as_deref(), p.path.as_str()), ("confusable_tool", Some("app.py"), "metadata.name"));
    assert!(p.message.contains("`Refund_Payment` in `app.py`") && p.message.contains("`refund_payment` in `tools/t.yaml`"), "{}", p.message);
    // A distinct name given in code loads and is callable.
    let host = Host::load(&d.join("harness.yaml"), options("refund_status")).unwrap();
    assert_eq!(host.tools().map(|t| t.name()).collect::<Vec<_>>(), ["refund_payment", "refund_status"]);
}

#[test]
fn issue17_item1_handler_origin_an_attribute_path_through_a_module_is_refused_in_core() {
    // `pkg:os.system`: the module `pkg` is an installed package, but the path
    // goes through the module `os` it imported; `pkg:shell` is a re-export of
    // a built-in (no file); `pkg:run` is the package's own function.
    let d = dir(
        "through",
        &[
            ("harness.yaml", harness("")),
            ("tools/a.yaml", tool("a", "").replace("mod_a:run", "mod_pkg:os.system")),
            ("tools/b.yaml", tool("b", "").replace("mod_b:run", "mod_pkg:shell")),
            ("tools/c.yaml", tool("c", "").replace("mod_c:run", "mod_pkg:run")),
        ],
    );
    let site = dir("through-site", &[("mod_pkg.py", String::new())]);
    let mut resolver = Resolver {
        roots: vec![site.clone()],
        origins: vec![("mod_pkg".into(), Some(site.join("mod_pkg.py")))],
        asked: Vec::new(),
        modules: vec!["os"],
    };
    // The fake host reports `shell` as built in.
    struct Builtin<'a>(&'a mut Resolver);
    impl HandlerResolver for Builtin<'_> {
        fn package_roots(&self) -> Vec<PathBuf> {
            self.0.package_roots()
        }
        fn resolve(&mut self, r: &HandlerRef<'_>) -> Result<Resolved, String> {
            let mut found = self.0.resolve(r)?;
            if r.attrs.join(".") == "shell" {
                found.origin = None;
            }
            Ok(found)
        }
    }
    let mut host = Builtin(&mut resolver);
    let err = Host::load(&d.join("harness.yaml"), HostOptions { resolver: Some(&mut host), ..HostOptions::default() }).unwrap_err();
    let got: Vec<(&str, &str)> = err.problems.iter().map(|p| (p.file.as_deref().unwrap(), p.code.as_str())).collect();
    assert_eq!(got, [("tools/a.yaml", "handler_import_failed"), ("tools/b.yaml", "handler_import_failed")], "{}", err.text());
    assert!(err.problems[0].message.contains("reaches the module `os`"), "{}", err.text());
    assert!(err.problems[1].message.contains("built into Python"), "{}", err.text());
    // The package's own function loads.
    fs::remove_file(d.join("tools/a.yaml")).unwrap();
    fs::remove_file(d.join("tools/b.yaml")).unwrap();
    let host = Host::load(&d.join("harness.yaml"), HostOptions { resolver: Some(&mut resolver), ..HostOptions::default() }).unwrap();
    assert_eq!(begin(&host, "c", json!({})).route(), TicketRoute::Host { mode: HandlerMode::Async, takes_idempotency_key: true });
}

#[test]
fn field_tables_are_the_json_forms_a_binding_shows() {
    let pay = "  risk: high\n  approval: {when: \"true\"}\n";
    let d = dir("fields", &[("harness.yaml", harness("")), ("tools/echo.yaml", tool("echo", "")), ("tools/pay.yaml", tool("pay", pay))]);
    let host = load(&d, vec![decl("echo", HandlerMode::CallerThread), decl("pay", HandlerMode::CallerThread)]);
    let allowed = host.finish(begin(&host, "echo", json!({})), Outcome::Returned(json!({"a": [1, "b"]})));
    let Begun::Pending(pending) = host.begin("pay", json!({}), &ctx()).unwrap() else { panic!("not pending") };
    for result in [allowed, pending] {
        let whole = result.to_value();
        for name in harnessweaver_core::host::CallResult::FIELDS {
            let empty = json!([]);
            let want = whole.get(name).unwrap_or(if name == "would_refuse" { &empty } else { &Value::Null });
            assert_eq!(result.field(name).as_ref(), Some(want), "{name}");
        }
        assert_eq!(result.field("allowed"), Some(json!(result.is_allowed())));
        assert_eq!(result.field("no_such_field"), None);
    }
    let p = Principal::from_value(&json!({"id": "a", "roles": ["r"], "attrs": {"t": 1}})).unwrap();
    let shown = p.to_value();
    let mut names: Vec<&str> = shown.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, {
        let mut f = Principal::FIELDS;
        f.sort_unstable();
        f
    });
    let problem = harnessweaver_core::host::Problem::new("unknown_field", "m");
    let shown = problem.to_value();
    assert!(harnessweaver_core::host::Problem::FIELDS.iter().all(|f| shown.get(f).is_some()));
    assert_eq!(shown, json!({"code": "unknown_field", "message": "m", "file": null, "line": null, "column": null, "path": ""}));
    assert_eq!(Principal::from_value(&Value::Null).unwrap_err().to_string(), "a call needs a principal (a mapping with `id`, or a Principal)");
}

#[test]
fn request_answers_each_method_from_named_arguments_and_names_what_is_wrong() {
    use harnessweaver_core::host::{request, tables};
    assert_eq!(request("tables", &json!({})).unwrap(), tables());
    assert_eq!(tables()["refusalClasses"][0]["parent"], Value::Null);
    let unknown = request("nope", &json!({})).unwrap_err();
    assert!(format!("{unknown}").contains("unknown host method `nope`"), "{unknown}");
    let positional = request("tables", &json!([])).unwrap_err();
    assert!(format!("{positional}").contains("object of named arguments"), "{positional}");
    let clean = request("sanitize", &json!({"value": "write to jane.doe@example.com", "sanitizers": ["pii_redact"]})).unwrap();
    assert!(!clean["value"].as_str().unwrap().contains("jane.doe"), "{clean}");
    let d = dir("request", &[("harness.yaml", harness("")), ("tools/echo.yaml", tool("echo", ""))]);
    let host = load(&d, vec![decl("echo", HandlerMode::CallerThread)]);
    assert_eq!(host.request("describe_tools", &json!({})).unwrap()[0]["name"], "echo");
    // Every method the bindings build from the table is one the host answers (issues 20/21 added
    // effects, resolve_effect, compensate, accept_candidate): none is an unknown host method.
    for (name, _) in harnessweaver_core::host::METHODS {
        if let Err(e) = host.request(name, &json!({})) {
            assert!(!format!("{e}").contains("unknown host method"), "{name}: {e}");
        }
    }
    assert_eq!(tables()["contractSideEffects"], json!(["write_external", "destructive"]));
    let missing = host.request("labels", &json!({})).unwrap_err();
    assert!(format!("{missing}").contains("`run_id` is required"), "{missing}");
    let typed = host.request("deny", &json!({"id": "x", "by": {"id": "a"}, "reason": 5})).unwrap_err();
    assert!(format!("{typed}").contains("`reason` must be a string"), "{typed}");
    assert!(host.request("new_run", &json!({})).unwrap().is_string());
    let unknown = host.request("nope", &json!({})).unwrap_err();
    assert!(format!("{unknown}").contains("unknown host method `nope`"), "{unknown}");
}

fn load_problems(d: &Path, handlers: Vec<HandlerDecl>) -> Vec<(String, String, Option<usize>)> {
    let err = Host::load(&d.join("harness.yaml"), HostOptions { handlers, ..HostOptions::default() }).unwrap_err();
    err.problems.iter().map(|p| (p.code.as_str().to_string(), p.message.clone(), p.line)).collect()
}

#[test]
fn issue18_item5_a_handler_ref_that_is_a_typo_of_the_function_given_fails_the_load() {
    let files = |handler: &str| {
        let manifest = format!(
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: refund_payment}}\nspec:\n  handler: \"{handler}\"\n  description: d\n"
        );
        dir("mismatch", &[("harness.yaml", harness("")), ("tools/refund.yaml", manifest)])
    };
    let given = |function: &str| vec![HandlerDecl { function: Some(function.into()), ..decl("refund_payment", HandlerMode::Async) }];
    // A typo of the function's name: refused where the ref is written.
    let d = files("payments:refundPaymnt");
    let problems = load_problems(&d, given("refundPayment"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    let (code, message, line) = &problems[0];
    assert_eq!((code.as_str(), *line), ("handler_mismatch", Some(5)));
    assert_eq!(
        message,
        "`spec.handler` of `refund_payment` names `refundPaymnt`, but the function given to load() for it is `refundPayment`; did you mean `refundPayment`?"
    );
    let d = files("tools.ts#refund_paymnt");
    assert_eq!(load_problems(&d, given("refund_payment"))[0].0, "handler_mismatch");
    // The same load passes when the ref names the function, a bound one, the tool, or another name entirely
    // (a function made by a factory), and when the host gives no name.
    for (handler, function) in [
        ("payments:refundPayment", "refundPayment"),
        ("payments:refundPayment", "bound refundPayment"),
        ("tools.ts#refund_payment", "handle"),
        ("payments:refundPaymnt", "makeHandler"),
        ("payments:refundPaymnt", ""),
    ] {
        let d = files(handler);
        Host::load(&d.join("harness.yaml"), HostOptions { handlers: given(function), ..HostOptions::default() })
            .unwrap_or_else(|e| panic!("{handler} / {function}: {:?}", e.problems));
    }
    let d = files("payments:refundPaymnt");
    load(&d, vec![decl("refund_payment", HandlerMode::Async)]);
}

#[test]
fn issue18_item5_a_handler_under_a_mistyped_name_is_named_on_both_sides() {
    let d = dir("typo-key", &[("harness.yaml", harness("")), ("tools/refund.yaml", tool("refund_payment", ""))]);
    let problems = load_problems(&d, vec![decl("refund_paymnet", HandlerMode::Async)]);
    let messages: Vec<&str> = problems.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(
        messages,
        [
            "native tool `refund_payment` has no handler; pass one to load() (a handler is registered as `refund_paymnet`)",
            "a handler is registered for `refund_paymnet` but no manifest declares it (tools.require_manifest); did you mean `refund_payment`?",
        ]
    );
    // Names not near each other get no hint.
    let problems = load_problems(&d, vec![decl("ship_order", HandlerMode::Async)]);
    assert!(problems.iter().all(|p| !p.1.contains("did you mean") && !p.1.contains("registered as")), "{problems:?}");
}
