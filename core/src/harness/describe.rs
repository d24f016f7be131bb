//! The harness settings as one JSON object (`harnessweaver doctor`, the
//! bindings' `describe`, and the governor's policy version).

use serde_json::{json, Value};

use super::model::redact_url;
use super::model::{AuditSink, Effect, Harness, McpConnect, McpServer, Mode, StateBackend, StoreErrorMode, TaintedMode, TrifectaMode};
use crate::manifest;

impl Harness {
    /// The harness settings as one JSON object, defaults filled in (the
    /// tools are not included: see [`Tool::describe`]).
    pub fn describe(&self) -> Value {
        let s = &self.spec;
        let rules: Vec<Value> = s
            .rules
            .iter()
            .map(|r| {
                let effect = match r.effect {
                    Effect::Allow => "allow",
                    Effect::Deny => "deny",
                    Effect::Approve => "approve",
                };
                json!({
                    "name": r.name, "effect": effect, "tools": r.tools, "when": r.when,
                    "layer": s.layers.get(r.layer).map(|l| l.name.clone()), "mode": r.mode.as_str(),
                    "examples": r.examples.len(), "file": r.file,
                })
            })
            .collect();
        let servers: serde_json::Map<String, Value> = s
            .mcp_servers
            .iter()
            .map(|(name, server)| {
                let v = match server {
                    McpServer::Command { command, args, env } => json!({"command": command, "args": args, "env": env}),
                    McpServer::Url { url, headers_env } => json!({"url": url, "headers_env": headers_env}),
                };
                (name.clone(), v)
            })
            .collect();
        let mut described = json!({
            "name": s.name,
            "mode": match s.mode { Mode::Production => "production", Mode::Test => "test" },
            "tools": {
                "manifests": s.tools.manifests,
                "require_manifest": s.tools.require_manifest,
                "require_pins": s.tools.require_pins,
                "max_output_bytes": s.tools.max_output_bytes,
                "approval_by_risk": s.tools.approval_by_risk.iter().map(|r| manifest::risk_name(*r)).collect::<Vec<_>>(),
            },
            "policy": {
                "layers": s.layers.iter().map(|l| json!({
                    "name": l.name, "mode": l.mode.as_str(),
                    "default": if l.default_allow { "allow" } else { "deny" }, "file": l.file,
                })).collect::<Vec<_>>(),
                "rules": rules,
            },
            "flow": {"trifecta": match s.trifecta {
                TrifectaMode::Block => "block",
                TrifectaMode::Approve => "approve",
                TrifectaMode::Provenance => "provenance",
                TrifectaMode::Off => "off",
            }, "tainted_arguments": mode(s.tainted_arguments)},
            "budgets": {"max_tool_calls": s.budgets.max_tool_calls, "per_tool": s.budgets.per_tool},
            "approvals": {
                "allow_self_approval": s.approvals.allow_self_approval,
                "max_open_per_principal": s.approvals.max_open_per_principal,
            },
            "audit": {"sink": match &s.audit_sink {
                AuditSink::None => "none".to_string(),
                AuditSink::Callback => "callback".to_string(),
                AuditSink::Jsonl(path) => path.clone(),
                AuditSink::Sqlite(path) => format!("sqlite:{path}"),
            }},
            "state": match &s.state {
                StateBackend::Memory => "memory".to_string(),
                StateBackend::Sqlite(path) => format!("sqlite:{path}"),
                StateBackend::Redis(url) => redact_url(url),
            },
            "state_options": {
                "rate_limits_on_store_error": match s.state_options.rate_limits_on_store_error {
                    StoreErrorMode::Closed => "closed",
                    StoreErrorMode::Open => "open",
                },
                "run_ttl_ms": s.state_options.run_ttl_ms,
                "timeout_ms": s.state_options.timeout_ms,
            },
            "mcp": {"connect": match s.mcp_connect { McpConnect::Eager => "eager", McpConnect::Lazy => "lazy" }, "servers": servers},
        });
        // Written only when not the default (`refuse`), so harnesses that never
        // set it keep the policy version they had before issue 23's intent.
        if s.unrequested_actions != TaintedMode::Refuse {
            if let Some(flow) = described.get_mut("flow").and_then(Value::as_object_mut) {
                flow.insert("unrequested_actions".into(), mode(s.unrequested_actions).into());
            }
        }
        // The same: written only when set.
        if !s.trust_single_value.is_empty() {
            if let Some(flow) = described.get_mut("flow").and_then(Value::as_object_mut) {
                let kinds: Vec<&str> = s.trust_single_value.iter().map(|k| k.as_str()).collect();
                flow.insert("trust_single_value".into(), kinds.into());
            }
        }
        described
    }
}

/// A `refuse` / `approve` / `allow` setting as written.
fn mode(m: TaintedMode) -> &'static str {
    match m {
        TaintedMode::Refuse => "refuse",
        TaintedMode::Approve => "approve",
        TaintedMode::Allow => "allow",
    }
}
