//! A governed call in a loop, for instruction counts under callgrind
//! (`make profile-governor`): `profile_call N` runs N calls of the
//! decision-path benchmark's tool (steps 1-9, 1 KB output); the per-call
//! cost is the difference between two counts divided by the difference in N.
//! `profile_call load PATH` loads the harness at PATH once and prints the
//! time taken (`make profile-load` profiles a load of generated manifests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "profiling code")]

use harnessweaver_core::governor::{Begin, InvokeOutcome};
use harnessweaver_core::{definition_digest, LoadOptions, Principal, Runtime};
use serde_json::{json, Value};
use std::hint::black_box;

fn output_1kb() -> Value {
    let items: Vec<Value> = (0..9)
        .map(|i| json!({"id": format!("ref_{i:04}"), "status": "succeeded", "amount_usd": 12.5 + f64::from(i), "note": "refund issued to the original payment method"}))
        .collect();
    json!({"order_id": "A-1234", "refunds": items, "currency": "USD"})
}

fn main() {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some("load") {
        let path = argv.next().expect("profile_call load PATH");
        let started = std::time::Instant::now();
        let rt = Runtime::load(&path, LoadOptions::default()).unwrap();
        println!("loaded {} tools in {:.1} ms", rt.harness().tools().len(), started.elapsed().as_secs_f64() * 1e3);
        return;
    }
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("hw-profile-call-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    let schema = json!({
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"},
            "amount_usd": {"type": "number", "minimum": 0},
            "reason": {"type": "string", "maxLength": 500},
            "notify": {"type": "boolean"}
        },
        "required": ["order_id", "amount_usd"],
        "additionalProperties": false
    });
    let description = "Refund part or all of a payment.";
    let manifest = json!({
        "apiVersion": "harnessweaver/v1", "kind": "Tool",
        "metadata": {"name": "refund_payment", "version": "2.1.0", "owner": "payments-team"},
        "spec": {
            "transport": "native", "handler": "bench:refund", "description": description,
            "input_schema": schema, "definition_digest": definition_digest("refund_payment", description, &schema).unwrap(),
            "side_effect": "write_external", "risk": "high",
            "data_access": ["pii:customer"], "egress": ["payments.internal"],
            "scopes": ["payments:refund"],
            "rate_limit": {"per_principal": "1000000000/s", "per_tenant": "1000000000/s"},
            "approval": {"when": "args.amount_usd > 100000 && !('finance' in principal.roles)", "approver_role": "finance"},
            "output": {"max_bytes": 20000, "label": "trusted"},
            "timeout": "30s"
        }
    });
    std::fs::write(dir.join("tools/refund_payment.json"), manifest.to_string()).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.json\"]\n  policy:\n    rules:\n      - {name: no-deletes, effect: deny, tools: [\"delete_*\"]}\n",
    )
    .unwrap();
    let rt = Runtime::load(dir.join("harness.yaml"), LoadOptions { host_handlers: vec!["refund_payment".into()], ..LoadOptions::default() }).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let principal = Principal::from_value(&json!({"id": "agent-7", "roles": ["support"], "scopes": ["payments:refund"]})).unwrap();
    let ctx = rt.run(principal, Some("acme".into()), None);
    let args = json!({"order_id": "A-1234", "amount_usd": 42.5, "reason": "duplicate charge", "notify": true});
    let out = output_1kb();
    for _ in 0..n {
        let ticket = match rt.governor().begin("refund_payment", args.clone(), &ctx) {
            Begin::Invoke(t) => t,
            Begin::Done(r) => panic!("refused: {r:?}"),
        };
        let result = rt.governor().finish(ticket, InvokeOutcome::Returned(out.clone()));
        assert!(result.is_allowed());
        black_box(result);
    }
}
