//! Compiling a loaded harness into the governor's runtime form, once.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

use super::{Governor, OutputPolicy, Rule, Settings, ToolRuntime, Transport};
use crate::cel_lite::{self, Program};
use crate::audit::{AuditSink, JsonlSink, MemorySink, NullSink};
use crate::clock::{Clock, IdSource, SystemClock};
use crate::error::{Error, Problem};
use crate::harness::{self, Harness, StateBackend};
use crate::manifest::{self, PinState, Tool, TrustLabel};
use crate::store::{MemoryStore, Rate, Store};
use crate::transport::{TransportOptions, Transports};
use crate::validate::{Constraints, SchemaValidator};

/// What a host may choose when it builds a governor.
#[derive(Default)]
pub struct GovernorOptions {
    /// The clock (default: the system's).
    pub clock: Option<Arc<dyn Clock>>,
    /// The store (default: what `spec.state` names).
    pub store: Option<Arc<dyn Store>>,
    /// The audit sink (default: what `spec.audit` names).
    pub audit: Option<Arc<dyn AuditSink>>,
    /// Deterministic ids (`run-1`, `call-1`, …) for fixtures.
    pub sequential_ids: bool,
    /// Tools registered in code, each with its manifest.
    pub extra_tools: Vec<Tool>,
    /// The sandbox worker and pool settings of the transports.
    pub transports: TransportOptions,
}

/// Compiles a condition; the loader has already reported compile errors
/// with their locations, so a failure here is a fault and fails closed.
fn compile_condition(text: &str, what: &str, problems: &mut Vec<Problem>) -> Option<Program> {
    let text = text.trim_end();
    if text.trim().is_empty() {
        return None;
    }
    match cel_lite::compile(text) {
        Ok(program) => Some(program),
        Err(e) => {
            problems.push(Problem { path: what.to_string(), ..Problem::new(e.code(), e.message().to_string()) });
            None
        }
    }
}

fn rate(r: Option<manifest::Rate>) -> Option<Rate> {
    r.map(|r| Rate { count: r.count, period_ms: r.period_ms() })
}

/// What cel-lite sees as `tool`: the manifest's decision fields.
pub fn tool_value(tool: &Tool) -> Value {
    let d = tool.describe();
    let pick = |k: &str| d.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "name": pick("name"),
        "transport": pick("transport"),
        "risk": pick("risk"),
        "side_effect": pick("side_effect"),
        "data_access": pick("data_access"),
        "egress": pick("egress"),
        "scopes": pick("scopes"),
        "tenants": pick("tenants"),
        "version": pick("version"),
        "owner": pick("owner"),
    })
}

fn runtime(tool: &Tool, problems: &mut Vec<Problem>) -> Option<ToolRuntime> {
    let m = tool.manifest();
    let validator = match SchemaValidator::compile(&m.input_schema) {
        Ok(v) => v,
        Err(message) => {
            let mut p = Problem::new("invalid_schema", message);
            p.file = tool.file().map(str::to_string);
            p.path = "spec.input_schema".into();
            problems.push(p);
            return None;
        }
    };
    let (input_constraints, output_constraints) = match &m.payload_constraints {
        Some(pc) => (Constraints::new(&pc.input), Constraints::new(&pc.output)),
        None => (Constraints::default(), Constraints::default()),
    };
    let transport = match m.transport {
        manifest::Transport::Native => Transport::Native { handler: m.handler.clone() },
        manifest::Transport::Http => Transport::Http { url: m.url.clone().unwrap_or_default() },
        manifest::Transport::Code => Transport::Code { sandbox: m.sandbox.clone().unwrap_or_default() },
        manifest::Transport::Mcp => Transport::Mcp { server: m.server.clone().unwrap_or_default() },
    };
    let sanitize = m
        .output
        .sanitize
        .iter()
        .map(|s| match s {
            manifest::Sanitizer::PiiRedact => super::sanitize::Sanitizer::PiiRedact,
            manifest::Sanitizer::StripInstructions => super::sanitize::Sanitizer::StripInstructions,
        })
        .collect();
    Some(ToolRuntime {
        name: m.name.clone(),
        enabled: m.enabled,
        tenants: m.tenants.clone(),
        validator,
        input_constraints,
        output_constraints,
        pin_mismatch: tool.pin() == PinState::Mismatched,
        digest: tool.digest().to_string(),
        scopes: m.scopes.clone(),
        per_principal: rate(m.rate_limit.as_ref().and_then(|r| r.per_principal)),
        per_tenant: rate(m.rate_limit.as_ref().and_then(|r| r.per_tenant)),
        private: m.data_access.iter().any(|d| d.starts_with("pii:")),
        egress: m.egress.clone(),
        approval_when: m.approval.as_ref().and_then(|a| compile_condition(&a.when, "spec.approval.when", problems)),
        approver_role: m.approval.as_ref().and_then(|a| a.approver_role.clone()),
        risk: manifest::risk_name(m.risk).to_string(),
        timeout_ms: m.timeout.ms,
        output: OutputPolicy {
            max_bytes: usize::try_from(tool.max_output_bytes()).unwrap_or(usize::MAX),
            sanitize,
            untrusted: m.output.label == TrustLabel::Untrusted,
        },
        transport,
        tool_value: tool_value(tool),
    })
}

impl Governor {
    /// Compiles `harness` (and any tools registered in code) into a governor.
    pub fn from_harness(harness: &Harness, options: GovernorOptions) -> Result<Governor, Error> {
        let spec = harness.spec();
        let mut problems = Vec::new();
        let mut tools = Vec::new();
        let mut names: HashMap<String, ()> = HashMap::new();
        for tool in harness.tools().iter().chain(options.extra_tools.iter()) {
            if names.insert(tool.name().to_string(), ()).is_some() {
                let mut p = Problem::new("duplicate_tool", format!("tool `{}` is defined twice (a manifest file and code)", tool.name()));
                p.file = tool.file().map(str::to_string);
                p.path = "metadata.name".into();
                problems.push(p);
                continue;
            }
            if let Some(rt) = runtime(tool, &mut problems) {
                tools.push(rt);
            }
        }
        let rules = spec
            .rules
            .iter()
            .map(|r| Rule {
                name: r.name.clone(),
                effect: r.effect,
                tools: r.tools.clone(),
                when: compile_condition(&r.when, "spec.policy.rules.when", &mut problems),
            })
            .collect();
        let store: Arc<dyn Store> = match (options.store, &spec.state) {
            (Some(store), _) => store,
            (None, StateBackend::Memory) => Arc::new(MemoryStore::new()),
            (None, other) => {
                let which = match other {
                    StateBackend::Sqlite(_) => "sqlite",
                    _ => "redis",
                };
                problems.push(Problem {
                    path: "spec.state".into(),
                    file: Some("harness.yaml".into()),
                    ..Problem::new("state_unavailable", format!("the `{which}` state backend is not available in this build"))
                });
                Arc::new(MemoryStore::new())
            }
        };
        let audit: Arc<dyn AuditSink> = match (options.audit, &spec.audit_sink) {
            (Some(audit), _) => audit,
            (None, harness::AuditSink::None) => Arc::new(NullSink),
            (None, harness::AuditSink::Callback) => Arc::new(MemorySink::new()),
            (None, harness::AuditSink::Jsonl(path)) => match JsonlSink::open(harness.dir().join(path)) {
                Ok(sink) => Arc::new(sink),
                Err(e) => {
                    problems.push(Problem { path: "spec.audit.sink".into(), ..Problem::new("io_error", e.to_string()) });
                    Arc::new(NullSink)
                }
            },
        };
        if !problems.is_empty() {
            return Err(Error::Load(problems));
        }
        // Last, so a harness with other problems does not start MCP servers.
        let (transports, transport_problems) =
            Transports::build(spec, harness.tools().iter().chain(options.extra_tools.iter()), &options.transports);
        if !transport_problems.is_empty() {
            return Err(Error::Load(transport_problems));
        }
        let settings = Settings {
            trifecta: spec.trifecta,
            approval_by_risk: spec.tools.approval_by_risk.iter().map(|r| manifest::risk_name(*r).to_string()).collect(),
            max_tool_calls: spec.budgets.max_tool_calls,
            per_tool: spec.budgets.per_tool.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            ..Settings::default()
        };
        let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let ids = if options.sequential_ids { IdSource::sequential() } else { IdSource::random() };
        let mut governor = Governor::new(tools, rules, settings, store, clock, ids, audit);
        governor.set_transports(transports);
        Ok(governor)
    }
}
