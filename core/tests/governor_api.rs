//! The governor through its Rust API: what fixtures cannot show in one
//! scenario (two harness versions over one store, explain's lack of side
//! effects, the JSONL audit trail, Rust closures with timeouts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use harnessweaver_core::governor::{GovernorOptions, Handler};
use harnessweaver_core::store::{MemoryStore, Store};
use harnessweaver_core::{CallContext, Decision, LoadOptions, Principal, Runtime};
use serde_json::{json, Value};

fn dir(name: &str, files: &[(&str, String)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hw-api-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    for (rel, text) in files {
        let p = d.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    d
}

fn harness(policy: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n    approval_by_risk: [high]\n{policy}")
}

fn tool(name: &str, extra: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: {name}}}\nspec:\n  handler: \"x:{name}\"\n  description: d\n{extra}")
}

fn echo() -> Handler {
    Arc::new(|args: &Value, _key: &str| Ok(json!({ "args": args })))
}

fn load(path: &Path, store: Option<Arc<dyn Store>>, handlers: &[(&str, Handler)]) -> Runtime {
    let options = LoadOptions {
        handlers: handlers.iter().map(|(n, h)| (n.to_string(), h.clone())).collect::<HashMap<_, _>>(),
        governor: GovernorOptions { store, ..GovernorOptions::default() },
        ..LoadOptions::default()
    };
    Runtime::load(path.join("harness.yaml"), options).unwrap()
}

fn bob() -> Principal {
    Principal::from_value(&json!({"id": "bob", "roles": ["finance"]})).unwrap()
}

#[test]
fn an_approval_is_void_under_another_policy_version() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let v1 = dir("v1", &[("harness.yaml", harness("")), ("tools/pay.yaml", tool("pay", "  risk: high\n"))]);
    let rt1 = load(&v1, Some(store.clone()), &[("pay", echo())]);
    let ctx = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let pending = rt1.call("pay", json!({"usd": 5}), &ctx);
    assert_eq!(pending.decision, Decision::Pending);
    let id = pending.approval.unwrap().id;
    rt1.governor().approve(&id, &bob()).unwrap();

    // The harness changes (a new rule) before the approved call runs.
    let v2 = dir(
        "v2",
        &[
            ("harness.yaml", harness("  policy:\n    rules:\n      - {name: extra, effect: allow, tools: [\"*\"]}\n")),
            ("tools/pay.yaml", tool("pay", "  risk: high\n")),
        ],
    );
    let rt2 = load(&v2, Some(store.clone()), &[("pay", echo())]);
    assert_ne!(rt1.governor().policy_version(), rt2.governor().policy_version());
    let replay = CallContext { approval_id: Some(id.clone()), ..ctx.clone() };
    let r = rt2.call("pay", json!({"usd": 5}), &replay);
    assert_eq!(r.decision, Decision::Pending, "{r:?}");
    assert!(r.reasons.iter().any(|x| x.contains("another policy version")), "{:?}", r.reasons);
    // Under the version it was granted in, it still runs, once.
    assert_eq!(rt1.call("pay", json!({"usd": 5}), &replay).decision, Decision::Allowed);
    assert_eq!(rt1.call("pay", json!({"usd": 5}), &replay).decision, Decision::Pending);
}

#[test]
fn sinks_and_the_tainted_mode_are_part_of_the_policy_version() {
    // Issue 23: what decides a sink argument is part of the version an
    // approval is bound to: `flow.sinks` of a tool, `flow.tainted_arguments`.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let variant = |name: &str, flow: &str, sinks: &str| {
        let d = dir(
            name,
            &[
                ("harness.yaml", harness(&format!("  flow: {{trifecta: provenance, tainted_arguments: {flow}}}\n"))),
                ("tools/pay.yaml", tool("pay", &format!("  risk: high\n  egress: [bank]\n{sinks}"))),
            ],
        );
        load(&d, Some(store.clone()), &[("pay", echo())])
    };
    let base = variant("sinks-base", "approve", "  flow: {sinks: [iban]}\n");
    let versions = [
        base.governor().policy_version().to_string(),
        variant("sinks-more", "approve", "  flow: {sinks: [iban, memo]}\n").governor().policy_version().to_string(),
        variant("sinks-none", "approve", "  flow: {sinks: []}\n").governor().policy_version().to_string(),
        variant("sinks-default", "approve", "").governor().policy_version().to_string(),
        variant("sinks-refuse", "refuse", "  flow: {sinks: [iban]}\n").governor().policy_version().to_string(),
    ];
    for (i, a) in versions.iter().enumerate() {
        for b in versions.iter().skip(i + 1) {
            assert_ne!(a, b, "{versions:?}");
        }
    }
    // The same files give the same version.
    assert_eq!(variant("sinks-again", "approve", "  flow: {sinks: [iban]}\n").governor().policy_version(), versions[0]);

    // An approval granted while `iban` was the only sink does not cover the call once `memo` is one too.
    let ctx = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let pending = base.call("pay", json!({"iban": "DE89370400440532013000", "memo": "rent"}), &ctx);
    assert_eq!(pending.decision, Decision::Pending, "{pending:?}");
    let id = pending.approval.unwrap().id;
    base.governor().approve(&id, &bob()).unwrap();
    let replay = CallContext { approval_id: Some(id), ..ctx };
    let more = variant("sinks-more-2", "approve", "  flow: {sinks: [iban, memo]}\n");
    let r = more.call("pay", json!({"iban": "DE89370400440532013000", "memo": "rent"}), &replay);
    assert_eq!(r.decision, Decision::Pending, "{r:?}");
    assert!(r.reasons.iter().any(|x| x.contains("another policy version")), "{:?}", r.reasons);
    assert_eq!(base.call("pay", json!({"iban": "DE89370400440532013000", "memo": "rent"}), &replay).decision, Decision::Allowed);
}

#[test]
fn explain_counts_nothing_and_asks_nothing() {
    let d = dir(
        "explain",
        &[
            ("harness.yaml", harness("  budgets: {max_tool_calls: 1}\n")),
            ("tools/q.yaml", tool("q", "  rate_limit: {per_principal: 1/h}\n")),
            ("tools/pay.yaml", tool("pay", "  risk: high\n")),
        ],
    );
    let store = Arc::new(MemoryStore::new());
    let rt = load(&d, Some(store.clone()), &[("q", echo()), ("pay", echo())]);
    let ctx = rt.run(Principal::new("alice"), None, None);
    for _ in 0..5 {
        let e = rt.explain("q", json!({}), &ctx);
        assert_eq!(e.decision, Decision::Allowed, "{}", e.to_text());
        assert_eq!(rt.explain("pay", json!({}), &ctx).decision, Decision::Pending);
    }
    assert!(store.open_approvals().unwrap().is_empty(), "explain created an approval");
    assert_eq!(rt.call("q", json!({}), &ctx).decision, Decision::Allowed, "explain used up the budget or the rate");
    let text = rt.explain("q", json!({}), &ctx).to_text();
    assert!(text.contains("budgets.max_tool_calls 1 per run"), "{text}");
    assert_eq!(rt.call("q", json!({}), &ctx).code.map(|c| c.as_str()), Some("budget_exhausted"));
}

#[test]
fn jsonl_audit_trail_holds_no_args_or_outputs() {
    let d = dir(
        "audit",
        &[
            ("harness.yaml", harness("  audit: {sink: audit/events.jsonl}\n")),
            ("tools/lookup.yaml", tool("lookup", "  input_schema: {type: object, properties: {q: {type: string, maxLength: 40}}}\n")),
        ],
    );
    let leak: Handler = Arc::new(|_a: &Value, _k: &str| Ok(json!({"email": "ann.secret@example.com", "key": "sk_live_OUTPUT_SECRET"})));
    let rt = load(&d, None, &[("lookup", leak)]);
    let ctx = CallContext { principal: Principal::new("alice"), tenant: Some("acme".into()), ..CallContext::default() };
    assert!(rt.call("lookup", json!({"q": "password=hunter2-ARG-SECRET"}), &ctx).is_allowed());
    let long = "x".repeat(50) + "TOO-LONG-SECRET";
    assert_eq!(rt.call("lookup", json!({"q": long}), &ctx).code.map(|c| c.as_str()), Some("invalid_args"));
    assert_eq!(rt.call("nope", json!({"token": "NOPE-SECRET"}), &ctx).code.map(|c| c.as_str()), Some("unknown_tool"));
    let trail = fs::read_to_string(d.join("audit/events.jsonl")).unwrap();
    assert_eq!(trail.lines().count(), 3);
    for secret in ["hunter2", "ARG-SECRET", "OUTPUT_SECRET", "ann.secret", "TOO-LONG-SECRET", "NOPE-SECRET"] {
        assert!(!trail.contains(secret), "`{secret}` leaked into the audit trail");
    }
    for line in trail.lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        assert!(event["args_digest"].as_str().unwrap().starts_with("sha256:"));
        assert_eq!(event["principal"], "alice");
    }
}

#[test]
fn rust_closures_with_timeouts_and_failures() {
    let d = dir(
        "closures",
        &[
            ("harness.yaml", harness("")),
            ("tools/slow.yaml", tool("slow", "  timeout: 50ms\n")),
            ("tools/fail.yaml", tool("fail", "")),
            ("tools/ok.yaml", tool("ok", "")),
        ],
    );
    let slow: Handler = Arc::new(|_a: &Value, _k: &str| {
        std::thread::sleep(std::time::Duration::from_secs(2));
        Ok(json!(1))
    });
    let fail: Handler = Arc::new(|_a: &Value, _k: &str| Err("IoError".into()));
    let rt = load(&d, None, &[("slow", slow), ("fail", fail), ("ok", echo())]);
    let ctx = rt.run(Principal::new("alice"), None, None);
    assert_eq!(rt.call("slow", json!({}), &ctx).code.map(|c| c.as_str()), Some("timeout"));
    let failed = rt.call("fail", json!({}), &ctx);
    assert_eq!((failed.code.map(|c| c.as_str()), failed.message.as_str()), (Some("handler_error"), "`fail` failed (IoError)"));
    assert!(failed.to_model().starts_with("[tool call refused: handler_error]"));
    let ok = rt.call("ok", json!({"a": 1}), &ctx);
    assert_eq!(ok.to_model(), r#"{"args":{"a":1}}"#);
}

#[test]
fn a_native_tool_without_a_handler_does_not_load() {
    let d = dir("nohandler", &[("harness.yaml", harness("")), ("tools/a.yaml", tool("a", ""))]);
    let err = Runtime::load(d.join("harness.yaml"), LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "handler_not_registered");
}

#[test]
fn calls_outside_a_run_leave_no_state_behind() {
    let d = dir(
        "ephemeral",
        &[("harness.yaml", harness("  budgets: {max_tool_calls: 5}\n")), ("tools/pii.yaml", tool("pii", "  data_access: [\"pii:customer\"]\n"))],
    );
    let store = Arc::new(MemoryStore::new());
    let rt = load(&d, Some(store.clone()), &[("pii", echo())]);
    let ctx = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let mut runs = Vec::new();
    for _ in 0..50 {
        let r = rt.call("pii", json!({}), &ctx);
        assert!(r.is_allowed());
        // The result still shows what the call's own run saw.
        assert!(r.labels.private);
        runs.push(r.run_id);
    }
    for run in &runs {
        assert_eq!(store.labels(run).unwrap(), harnessweaver_core::store::Labels::default(), "run `{run}` kept its labels");
    }
    // An explicit run keeps its labels and budget across calls.
    let run = rt.run(Principal::new("alice"), None, None);
    assert!(rt.call("pii", json!({}), &run).is_allowed());
    assert!(store.labels(run.run_id.as_deref().unwrap()).unwrap().private);
}

/// Issue 17, item 7: an approval binds the reasons it was asked for. Granted
/// in a clean run (the risk asked), it does not cover the same call once the
/// run is private and untrusted and the trifecta asks too (`flow.trifecta:
/// approve`); a new approval, asked for both, does.
#[test]
fn an_approval_does_not_cover_a_call_whose_reasons_grew() {
    let d = dir(
        "reasons-grew",
        &[
            ("harness.yaml", harness("  flow: {trifecta: approve}\n")),
            ("tools/read.yaml", tool("read_customer", "  data_access: [\"pii:email\"]\n  output: {label: untrusted}\n")),
            ("tools/send.yaml", tool("send_email", "  risk: high\n  egress: [mail.example.com]\n")),
        ],
    );
    let rt = load(&d, None, &[("read_customer", echo()), ("send_email", echo())]);
    let ctx = rt.run(Principal::new("alice"), None, None);
    let first = rt.call("send_email", json!({"to": "x"}), &ctx);
    assert_eq!(first.decision, Decision::Pending, "{first:?}");
    let id = first.approval.unwrap().id;
    rt.governor().approve(&id, &bob()).unwrap();
    // The run becomes private and untrusted: now the trifecta asks as well.
    assert_eq!(rt.call("read_customer", json!({}), &ctx).decision, Decision::Allowed);
    let with = CallContext { approval_id: Some(id.clone()), ..ctx.clone() };
    let again = rt.call("send_email", json!({"to": "x"}), &with);
    assert_eq!(again.decision, Decision::Pending, "{again:?}");
    assert!(again.reasons.iter().any(|r| r.contains("before `trifecta` asked")), "{:?}", again.reasons);
    // A new approval asked for both reasons covers the call.
    let second = again.approval.unwrap().id;
    assert_ne!(second, id);
    rt.governor().approve(&second, &bob()).unwrap();
    let with = CallContext { approval_id: Some(second), ..ctx.clone() };
    assert_eq!(rt.call("send_email", json!({"to": "x"}), &with).decision, Decision::Allowed);
}

/// Issue 17, item 11: an expired approval is not listed, and the memory
/// store drops it when the next approval is asked for.
#[test]
fn expired_approvals_are_not_listed_and_are_dropped() {
    struct Manual(std::sync::atomic::AtomicU64);
    impl harnessweaver_core::Clock for Manual {
        fn now_ms(&self) -> u64 {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }
    let d = dir("expiry-listing", &[("harness.yaml", harness("")), ("tools/pay.yaml", tool("pay", "  risk: high\n"))]);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let clock = Arc::new(Manual(std::sync::atomic::AtomicU64::new(1_700_000_000_000)));
    let options = LoadOptions {
        handlers: HashMap::from([("pay".to_string(), echo())]),
        governor: GovernorOptions { store: Some(store.clone()), clock: Some(clock.clone()), ..GovernorOptions::default() },
        ..LoadOptions::default()
    };
    let rt = Runtime::load(d.join("harness.yaml"), options).unwrap();
    let ctx = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let first = rt.call("pay", json!({"usd": 1}), &ctx).approval.unwrap().id;
    assert_eq!(rt.governor().open_approvals().unwrap().len(), 1);
    clock.0.fetch_add(3_600_000, std::sync::atomic::Ordering::SeqCst);
    assert!(rt.governor().open_approvals().unwrap().is_empty(), "an expired approval is still listed");
    let second = rt.call("pay", json!({"usd": 2}), &ctx).approval.unwrap().id;
    assert_eq!(store.approval(&first).unwrap(), None, "the expired approval was kept");
    let listed: Vec<String> = rt.governor().open_approvals().unwrap().into_iter().map(|a| a.id).collect();
    assert_eq!(listed, [second]);
}

/// Issue 17, item 14: a 10,000,000-character tool name is `unknown_tool`,
/// and neither the message nor the result (whose tool name the audit event
/// carries) holds more than 200 characters of it.
#[test]
fn a_huge_tool_name_is_unknown_and_cut_short_in_messages() {
    let d = dir("huge-name", &[("harness.yaml", harness("")), ("tools/pay.yaml", tool("pay", ""))]);
    let rt = load(&d, None, &[("pay", echo())]);
    let ctx = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let name = "a".repeat(10_000_000);
    let r = rt.call(&name, json!({}), &ctx);
    assert_eq!(r.code.map(|c| c.as_str()), Some("unknown_tool"));
    assert!(r.message.len() < 300, "message of {} bytes", r.message.len());
    assert!(r.message.ends_with("…`"), "{}", r.message);
    assert!(r.tool.chars().count() <= 201, "tool of {} chars", r.tool.len());
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.len() < 2_000, "result of {} bytes", text.len());
}

/// Issue 17 item 14 (the rest): every caller string a refusal, an error or an
/// audit event echoes (principal and run ids, a tenant, an approval id, a
/// handler's failure kind, an approver's note) is cut to 200 characters with
/// an ellipsis in one place, whatever step or host produced it.
#[test]
fn issue17_item14_caller_strings_are_capped_in_messages_and_audit() {
    use harnessweaver_core::audit::MemorySink;
    let d = dir(
        "huge-strings",
        &[
            ("harness.yaml", harness("")),
            ("tools/pay.yaml", tool("pay", "  risk: high\n")),
            ("tools/acme.yaml", tool("acme", "  tenants: [acme]\n")),
            ("tools/boom.yaml", tool("boom", "")),
        ],
    );
    let huge = |c: &str| c.repeat(1_000_000);
    let kind = huge("K");
    let boom: Handler = Arc::new(move |_: &Value, _: &str| Err(kind.clone()));
    let sink = Arc::new(MemorySink::new());
    let options = LoadOptions {
        handlers: [("pay", echo()), ("acme", echo()), ("boom", boom)].into_iter().map(|(n, h)| (n.to_string(), h)).collect(),
        governor: GovernorOptions { audit: Some(sink.clone()), ..GovernorOptions::default() },
        ..LoadOptions::default()
    };
    let rt = Runtime::load(d.join("harness.yaml"), options).unwrap();
    let ctx = CallContext {
        principal: Principal::new(huge("p")),
        run_id: Some(huge("r")),
        tenant: Some(huge("t")),
        approval_id: Some(huge("a")),
        ..CallContext::default()
    };
    let short = |what: &str, s: &str| assert!(s.chars().count() <= 2_001, "{what}: {} chars", s.len());
    let results = [rt.call("acme", json!({}), &ctx), rt.call("boom", json!({}), &ctx), rt.call("pay", json!({}), &ctx)];
    assert_eq!(
        results.iter().map(|r| r.code.map(|c| c.as_str())).collect::<Vec<_>>(),
        [Some("tenant_not_enabled"), Some("handler_error"), Some("approval_required")]
    );
    for r in &results {
        short("message", &r.message);
        for reason in &r.reasons {
            short("reason", reason);
            for c in ["a", "K"] {
                assert!(!reason.contains(&c.repeat(201)), "reason: {} chars", reason.len());
            }
        }
        for c in ["t", "K"] {
            assert!(!r.message.contains(&c.repeat(201)), "message: {} chars", r.message.len());
        }
    }
    assert!(results[0].message.contains(&format!("tenant `{}…`", "t".repeat(200))), "{}", &results[0].message[..300]);
    assert!(
        results[2].reasons.iter().any(|x| x.contains(&format!("approval `{}…` does not exist", "a".repeat(200)))),
        "{:?}",
        results[2].reasons.len()
    );
    // An approver's note on a denial is echoed in the next call's reasons: cut too.
    let alice = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let pending = rt.call("pay", json!({"usd": 1}), &alice);
    let id = pending.approval.unwrap().id;
    rt.governor().deny(&id, "bob", &huge("n")).unwrap();
    let denied = rt.call("pay", json!({"usd": 1}), &CallContext { approval_id: Some(id), ..alice });
    assert_eq!(denied.code.map(|c| c.as_str()), Some("approval_denied"));
    assert!(denied.reasons.iter().all(|x| x.chars().count() < 300), "{:?}", denied.reasons.iter().map(String::len).collect::<Vec<_>>());
    // Errors too: an unknown approval id of a million characters.
    let err = rt.governor().approve(&huge("z"), &bob()).unwrap_err().to_string();
    assert!(err.chars().count() < 300, "error of {} chars", err.len());
    // And the audit trail: every event's caller strings are cut.
    let events = sink.events();
    assert!(events.len() >= 4);
    for e in &events {
        let line = serde_json::to_string(e).unwrap();
        assert!(line.len() < 2_000, "an audit line of {} bytes", line.len());
    }
    assert_eq!(events[0].principal, format!("{}…", "p".repeat(200)));
    assert_eq!(events[0].run_id, format!("{}…", "r".repeat(200)));
}
