//! Issue 21, secrets as handles, through the governor's Rust API: a secret
//! value is in the call's ticket for its transport, and nowhere else a host
//! could print or store: not in the ticket's debug form, the result, the
//! error message or the audit trail; a principal outside the scope is
//! refused before any value is read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::sync::Arc;

use harnessweaver_core::audit::MemorySink;
use harnessweaver_core::governor::{Begin, Governor, GovernorOptions, InvokeOutcome};
use harnessweaver_core::harness::Harness;
use harnessweaver_core::{CallContext, Decision, Principal};

const VALUE: &str = "sk-live-7f3a9c2e11d04b";

#[test]
fn a_secret_value_reaches_the_ticket_only() {
    let dir = std::env::temp_dir().join(format!("hw-secrets-api-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  audit: { sink: callback }\n  secrets:\n    API_KEY: { env: HW_TEST_SECRETS_API_KEY }\n  secret_scopes:\n    \"role:finance\": [API_KEY]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/pay.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: pay }\nspec:\n  handler: \"x:pay\"\n  description: Pays.\n  secrets: [API_KEY]\n  secrets_delivery: native\n",
    )
    .unwrap();
    std::env::set_var("HW_TEST_SECRETS_API_KEY", VALUE);
    let sink = Arc::new(MemorySink::new());
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let governor = Governor::from_harness(&harness, GovernorOptions { audit: Some(sink.clone()), ..GovernorOptions::default() }).unwrap();

    // Out of scope: refused at step 4, naming the handle only.
    let alice = CallContext { principal: Principal::new("alice"), ..CallContext::default() };
    let Begin::Done(refused) = governor.begin("pay", serde_json::json!({}), &alice) else { panic!("alice was not refused") };
    assert_eq!(refused.code.map(|c| c.as_str()), Some("secret_not_in_scope"));
    assert!(refused.message.contains("API_KEY") && !refused.message.contains(VALUE), "{}", refused.message);

    // In scope: the value is in the ticket for the transport, and only there.
    let bob = CallContext {
        principal: Principal::from_value(&serde_json::json!({"id": "bob", "roles": ["finance"], "scopes": [], "attrs": {}})).unwrap(),
        ..CallContext::default()
    };
    let Begin::Invoke(ticket) = governor.begin("pay", serde_json::json!({}), &bob) else { panic!("bob was refused") };
    let handed: Vec<(String, String)> = ticket.secrets().iter().map(|(h, v)| (h.to_string(), v.to_string())).collect();
    assert_eq!(handed, [("API_KEY".to_string(), VALUE.to_string())]);
    let shown = format!("{ticket:?}");
    assert!(shown.contains("API_KEY=***") && !shown.contains(VALUE), "{shown}");
    // A handler that echoes it: the output is masked (as a transport that
    // handed the values out reports them), and the audit trail never holds it.
    let outcome = InvokeOutcome::ReturnedWithSecrets { value: serde_json::json!({"echo": VALUE}), secrets: ticket.secrets().values() };
    let result = governor.finish(ticket, outcome);
    assert_eq!(result.decision, Decision::Allowed);
    let text = result.to_value().to_string();
    assert!(!text.contains(VALUE) && text.contains("[SECRET]"), "{text}");
    let audit = serde_json::to_string(&sink.events()).unwrap();
    assert_eq!(sink.events().len(), 2);
    assert!(!audit.contains(VALUE), "{audit}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A native tool that names a handle without `secrets_delivery: native`: its
/// scope is still checked, and no value is read into its ticket (the value
/// would enter the host's process); with the opt-in, it is.
#[test]
fn a_native_tool_gets_no_value_without_the_opt_in() {
    let dir = std::env::temp_dir().join(format!("hw-secrets-opt-in-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  secrets:\n    API_KEY: { env: HW_TEST_SECRETS_OPT_IN_KEY }\n",
    )
    .unwrap();
    let manifest = |name: &str, extra: &str| {
        format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{ name: {name} }}\nspec:\n  handler: \"x:{name}\"\n  description: Pays.\n  secrets: [API_KEY]\n{extra}")
    };
    std::fs::write(dir.join("tools/plain.yaml"), manifest("plain", "")).unwrap();
    std::fs::write(dir.join("tools/opted.yaml"), manifest("opted", "  secrets_delivery: native\n")).unwrap();
    std::env::set_var("HW_TEST_SECRETS_OPT_IN_KEY", VALUE);
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let governor = Governor::from_harness(&harness, GovernorOptions::default()).unwrap();
    let ctx = CallContext { principal: Principal::new("bob"), ..CallContext::default() };
    let Begin::Invoke(plain) = governor.begin("plain", serde_json::json!({}), &ctx) else { panic!("plain was refused") };
    assert!(plain.secrets().is_empty(), "{plain:?}");
    let Begin::Invoke(opted) = governor.begin("opted", serde_json::json!({}), &ctx) else { panic!("opted was refused") };
    assert_eq!(opted.secrets().iter().map(|(h, v)| (h.to_string(), v.to_string())).collect::<Vec<_>>(), [("API_KEY".to_string(), VALUE.to_string())]);
    let _ = std::fs::remove_dir_all(&dir);
}
