//! The decision-path benchmark's harness and output, shared by
//! `benches/governor.rs` (criterion) and `examples/profile_call.rs`
//! (callgrind), so both measure the same tool.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use harnessweaver_core::definition_digest;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Writes the harness (`refund_payment`, and `refund_sanitized` with both
/// sanitizers on its output) into a temporary directory and returns it.
pub fn harness_dir() -> PathBuf {
    harness_dir_named("")
}

/// [`harness_dir`] in a directory of its own, for a second harness beside the first.
pub fn harness_dir_named(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hw-bench-governor-{}{name}", std::process::id()));
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
    let digest = definition_digest("refund_payment", description, &schema).unwrap();
    let manifest = json!({
        "apiVersion": "harnessweaver/v1", "kind": "Tool",
        "metadata": {"name": "refund_payment", "version": "2.1.0", "owner": "payments-team"},
        "spec": {
            "transport": "native", "handler": "bench:refund", "description": description,
            "input_schema": schema, "definition_digest": digest,
            "side_effect": "write_external", "risk": "high",
            "data_access": ["pii:customer"], "egress": ["payments.internal"],
            "scopes": ["payments:refund"],
            "rate_limit": {"per_principal": "1000000000/s", "per_tenant": "1000000000/s"},
            "approval": {"when": "args.amount_usd > 100000 && !('finance' in principal.roles)", "approver_role": "finance"},
            "output": {"max_bytes": 20000, "label": "trusted"},
            "timeout": "30s"
        }
    });
    std::fs::write(dir.join("tools/refund_payment.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    // The same tool with both sanitizers on its output.
    let mut sanitized = manifest.clone();
    sanitized["metadata"]["name"] = json!("refund_sanitized");
    sanitized["spec"]["definition_digest"] = json!(definition_digest("refund_sanitized", description, &schema).unwrap());
    sanitized["spec"]["output"]["sanitize"] = json!(["pii_redact", "strip_instructions"]);
    std::fs::write(dir.join("tools/refund_sanitized.json"), serde_json::to_string_pretty(&sanitized).unwrap()).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  effects:\n    require_contract: false\n  tools:\n    manifests: [\"tools/*.json\"]\n  policy:\n    rules:\n      - {name: no-deletes, effect: deny, tools: [\"delete_*\"]}\n",
    )
    .unwrap();
    dir
}

/// A realistic 1 KB tool result.
pub fn output_1kb() -> Value {
    let items: Vec<Value> = (0..9)
        .map(|i| json!({"id": format!("ref_{i:04}"), "status": "succeeded", "amount_usd": 12.5 + f64::from(i), "note": "refund issued to the original payment method"}))
        .collect();
    json!({"order_id": "A-1234", "refunds": items, "currency": "USD"})
}

/// [`output_1kb`] with ids and amounts of its own for call `n`.
#[allow(dead_code, reason = "used by examples/profile_call.rs only")]
pub fn output_1kb_numbered(n: usize) -> Value {
    let items: Vec<Value> = (0..9)
        .map(|i| json!({"id": format!("ref_{n:06}_{i}"), "status": "succeeded", "amount_usd": 12.5 + (n * 9 + i) as f64, "note": "refund issued to the original payment method"}))
        .collect();
    json!({"order_id": "A-1234", "refunds": items, "currency": "USD"})
}

/// Names an audit sink in the harness of [`harness_dir`] (`spec.audit.sink`,
/// e.g. `audit.jsonl`, a JSON Lines file beside it).
pub fn with_audit_sink(dir: &std::path::Path, sink: &str) {
    let path = dir.join("harness.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}  audit:\n    sink: \"{sink}\"\n")).unwrap();
}

/// An audit sink that hands each event to a Rust closure (what a host's
/// callback sink does, without the language crossing).
#[derive(Debug, Default)]
pub struct CallbackSink(pub std::sync::atomic::AtomicUsize);

impl harnessweaver_core::audit::AuditSink for CallbackSink {
    fn record(&self, event: &harnessweaver_core::audit::AuditEvent) -> Result<(), harnessweaver_core::Error> {
        self.0.fetch_add(std::hint::black_box(event).call_id.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}
