//! A governed call as an OpenTelemetry span, described as plain data.
//!
//! The core has no OpenTelemetry dependency: it describes the span a call
//! becomes ([`SpanRecord`]: name, attributes, start, duration and one child
//! per phase with its timing), following the GenAI semantic conventions
//! (`execute_tool {gen_ai.tool.name}`, `gen_ai.operation.name`,
//! `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.description`,
//! `error.type` on refusal). The runtime turns it into an OTLP span; the
//! Python and Node shims hand it to the host's own OpenTelemetry API.
//!
//! Built from the audit event, so it carries what the event carries and
//! nothing more: never arguments or outputs (the conventions make
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` opt-in; they
//! stay off).

use serde::Serialize;

use super::AuditEvent;
use crate::call::Decision;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SpanValue {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A list of strings.
    List(Vec<String>),
}

/// One phase of the call (a child span).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanPhase {
    /// `harnessweaver.decide` (steps 1–7), `harnessweaver.invoke` (step 8), `harnessweaver.output` (step 9).
    pub name: &'static str,
    /// Microseconds after the call's start.
    pub start_offset_us: u64,
    /// How long it took (µs).
    pub duration_us: u64,
}

/// The span a governed call becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanRecord {
    /// `execute_tool {tool}`.
    pub name: String,
    /// When the call started (ms since the epoch).
    pub start_ms: u64,
    /// How long the call took (µs).
    pub duration_us: u64,
    /// The attributes, in a fixed order.
    pub attributes: Vec<(&'static str, SpanValue)>,
    /// The phases that ran.
    pub phases: Vec<SpanPhase>,
    /// The refusal code, when the call was refused (the span's status is then an error).
    pub error: Option<String>,
}

/// The names this module writes, for the docs and the tests.
pub mod attr {
    /// `execute_tool`.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// The tool's name.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The call's id.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// The manifest's description.
    pub const TOOL_DESCRIPTION: &str = "gen_ai.tool.description";
    /// The refusal code.
    pub const ERROR_TYPE: &str = "error.type";
    /// `allow`, `deny` or `escalate` (a pending approval).
    pub const GUARDRAIL_VERDICT: &str = "gen_ai.guardrail.verdict.type";
    /// The step that decided (`policy`, `approval`, …).
    pub const STEP: &str = "harnessweaver.step";
    /// The refusal or pending code.
    pub const CODE: &str = "harnessweaver.code";
    /// The pending or used approval's id.
    pub const APPROVAL_ID: &str = "harnessweaver.approval.id";
    /// The run's id.
    pub const RUN_ID: &str = "harnessweaver.run.id";
    /// The principal's id.
    pub const PRINCIPAL: &str = "harnessweaver.principal";
    /// The tenant.
    pub const TENANT: &str = "harnessweaver.tenant";
    /// Names of shadow-mode rules that would have refused, comma-separated.
    pub const SHADOW_RULES: &str = "harnessweaver.policy.would_refuse";
    /// The policy version that decided: the digest of the harness and its
    /// manifests approvals are bound to (issue 24; the GenAI security
    /// proposal's `policy.version`, under this module's `gen_ai.guardrail` prefix).
    pub const POLICY_VERSION: &str = "gen_ai.guardrail.policy.version";
    /// The ids of the policy rules that decided, `layer/rule` (a list; the
    /// proposal's `policy.rule.id`).
    pub const RULE_IDS: &str = "gen_ai.guardrail.policy.rule.id";
}

impl SpanRecord {
    /// The span of the call `event` records; `description` is the tool's
    /// manifest description, `policy_version` the version of the policy that decided.
    pub fn of(event: &AuditEvent, description: Option<&str>, policy_version: Option<&str>) -> Self {
        let t = &event.timings;
        let mut attributes = vec![
            (attr::OPERATION_NAME, SpanValue::Str("execute_tool".into())),
            (attr::TOOL_NAME, SpanValue::Str(event.tool.clone())),
            (attr::TOOL_CALL_ID, SpanValue::Str(event.call_id.clone())),
        ];
        if let Some(d) = description {
            attributes.push((attr::TOOL_DESCRIPTION, SpanValue::Str(d.to_string())));
        }
        let verdict = match event.decision {
            Decision::Allowed => "allow",
            Decision::Refused => "deny",
            Decision::Pending => "escalate",
        };
        attributes.push((attr::GUARDRAIL_VERDICT, SpanValue::Str(verdict.into())));
        if let Some(v) = policy_version {
            attributes.push((attr::POLICY_VERSION, SpanValue::Str(v.to_string())));
        }
        if !event.rules.is_empty() {
            attributes.push((attr::RULE_IDS, SpanValue::List(event.rules.clone())));
        }
        if let Some(step) = event.step {
            attributes.push((attr::STEP, SpanValue::Str(step.as_str().into())));
        }
        if let Some(code) = event.code {
            attributes.push((attr::CODE, SpanValue::Str(code.as_str().into())));
        }
        let error = (event.decision == Decision::Refused).then(|| event.code.map_or("refused", |c| c.as_str()).to_string());
        if let Some(e) = &error {
            attributes.push((attr::ERROR_TYPE, SpanValue::Str(e.clone())));
        }
        if let Some(id) = &event.approval_id {
            attributes.push((attr::APPROVAL_ID, SpanValue::Str(id.clone())));
        }
        if !event.would_refuse.is_empty() {
            let names: Vec<String> = event.would_refuse.iter().map(|w| format!("{}/{}", w.layer, w.rule.as_deref().unwrap_or("default"))).collect();
            attributes.push((attr::SHADOW_RULES, SpanValue::Str(names.join(","))));
        }
        attributes.push((attr::RUN_ID, SpanValue::Str(event.run_id.clone())));
        attributes.push((attr::PRINCIPAL, SpanValue::Str(event.principal.clone())));
        if let Some(tenant) = &event.tenant {
            attributes.push((attr::TENANT, SpanValue::Str(tenant.clone())));
        }
        let mut phases = vec![SpanPhase { name: "harnessweaver.decide", start_offset_us: 0, duration_us: t.decide_us }];
        if event.decision == Decision::Allowed {
            phases.push(SpanPhase { name: "harnessweaver.invoke", start_offset_us: t.decide_us, duration_us: t.invoke_us });
            phases.push(SpanPhase { name: "harnessweaver.output", start_offset_us: t.decide_us + t.invoke_us, duration_us: t.output_us });
        }
        Self {
            name: format!("execute_tool {}", event.tool),
            start_ms: event.ts_ms,
            duration_us: t.decide_us + t.invoke_us + t.output_us,
            attributes,
            phases,
            error,
        }
    }
}
