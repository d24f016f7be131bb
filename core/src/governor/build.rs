//! Compiling a loaded harness into the governor's runtime form, once.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

use super::{Governor, LayerSettings, OutputPolicy, Rule, Settings, ToolRuntime, Transport};
use crate::audit::{AuditSink, JsonlSink, MemorySink, NullSink};
use crate::backends::{Backends, CoreBackends};
use crate::cel_lite::{self, Program};
use crate::clock::{Clock, IdSource, SystemClock};
use crate::error::{Error, Problem};
use crate::harness::{self, EnforceMode, ExampleExpect, Harness};
use crate::manifest::{self, PinState, Tool, TrustLabel};
use crate::store::{MemoryStore, Rate, Store};
use crate::validate::Constraints;

/// What a host may choose when it builds a governor.
#[derive(Default)]
pub struct GovernorOptions {
    /// The clock (default: the system's).
    pub clock: Option<Arc<dyn Clock>>,
    /// The store (default: what `spec.state` names).
    pub store: Option<Arc<dyn Store>>,
    /// The audit sink (default: what `spec.audit` names).
    pub audit: Option<Arc<dyn AuditSink>>,
    /// Also sees every event, beside the audit sink; its failures are ignored
    /// (issue 24: spans for a host's OpenTelemetry API).
    pub observer: Option<Arc<dyn AuditSink>>,
    /// Deterministic ids (`run-1`, `call-1`, …) for fixtures.
    pub sequential_ids: bool,
    /// Tools registered in code, each with its manifest.
    pub extra_tools: Vec<Tool>,
    /// What opens stores, SQLite audit sinks and transports (default:
    /// [`CoreBackends`], the memory store and native tools only).
    pub backends: Option<Arc<dyn Backends>>,
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

/// What cel-lite sees as `tool`: the manifest's decision fields (the same
/// values [`Tool::describe`] gives them).
fn tool_value(m: &manifest::Manifest) -> Value {
    let strings = |v: &[String]| Value::Array(v.iter().map(|s| Value::String(s.clone())).collect());
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let mut o = serde_json::Map::new();
    o.insert("name".into(), Value::String(m.name.clone()));
    o.insert("transport".into(), Value::from(manifest::transport_name(m.transport)));
    o.insert("risk".into(), Value::from(manifest::risk_name(m.risk)));
    o.insert("side_effect".into(), Value::from(manifest::side_effect_name(m.side_effect)));
    o.insert("data_access".into(), strings(&m.data_access));
    o.insert("egress".into(), strings(&m.egress));
    o.insert("scopes".into(), strings(&m.scopes));
    o.insert("tenants".into(), strings(&m.tenants));
    o.insert("version".into(), text(&m.version));
    o.insert("owner".into(), text(&m.owner));
    Value::Object(o)
}

fn runtime(tool: &Tool, problems: &mut Vec<Problem>) -> ToolRuntime {
    let m = tool.manifest();
    // The schema compiled when the manifest was loaded (shared, not
    // compiled again or looked up by its text).
    let validator = tool.validator().clone();
    let (input_constraints, output_constraints) = match &m.payload_constraints {
        Some(pc) => (Constraints::new(&pc.input), Constraints::new(&pc.output)),
        None => (Constraints::default(), Constraints::default()),
    };
    let transport = match m.transport {
        manifest::Transport::Native => Transport::Native { handler: m.handler.as_deref().map(Arc::from) },
        manifest::Transport::Http => Transport::Http { url: Arc::from(m.url.as_deref().unwrap_or_default()) },
        manifest::Transport::Code => Transport::Code { sandbox: Arc::from(m.sandbox.as_deref().unwrap_or_default()) },
        manifest::Transport::Mcp => Transport::Mcp { server: Arc::from(m.server.as_deref().unwrap_or_default()) },
        manifest::Transport::Process => Transport::Process {
            command: m.process.as_ref().map(|p| p.command.clone()).unwrap_or_default(),
            confined: m.process.as_ref().is_some_and(|p| p.sandbox.required),
        },
        manifest::Transport::Builtin => Transport::Builtin,
    };
    let sanitize = m.output.sanitize.clone();
    ToolRuntime {
        name: m.name.clone(),
        enabled: m.enabled,
        tenants: m.tenants.clone(),
        validator,
        input_constraints,
        output_constraints,
        output_schema: tool.output_validator().cloned(),
        pin_mismatch: tool.pin() == PinState::Mismatched,
        pinned: tool.pin() == PinState::Pinned,
        digest: tool.digest().to_string(),
        scopes: m.scopes.clone(),
        per_principal: rate(m.rate_limit.as_ref().and_then(|r| r.per_principal)),
        per_tenant: rate(m.rate_limit.as_ref().and_then(|r| r.per_tenant)),
        private: m.data_access.iter().any(|d| d.starts_with("pii:")),
        egress: effective_egress(m),
        sinks: m.sinks.clone(),
        links: m.links.clone().unwrap_or_default(),
        intent: m.intent.as_deref().and_then(|e| manifest::Intent::compile(e).ok()),
        identifies: m.identifies.iter().filter_map(|(arg, path)| Some((arg.clone(), manifest::ValuePath::parse(path)?))).collect(),
        identifies_when_named: m
            .identifies_when_named
            .iter()
            .filter_map(|(arg, path)| Some((arg.clone(), manifest::ValuePath::parse(path)?)))
            .collect(),
        links_when_named: m.links_when_named.iter().filter_map(|(arg, path)| Some((arg.clone(), manifest::ValuePath::parse(path)?))).collect(),
        approval_when: approval_program(tool, problems),
        approver_role: m.approval.as_ref().and_then(|a| a.approver_role.clone()),
        approval_by: m.approval.as_ref().map(|a| a.by).unwrap_or_default(),
        risk: manifest::risk_name(m.risk).to_string(),
        timeout_ms: m.timeout.ms,
        output: OutputPolicy {
            max_bytes: usize::try_from(tool.max_output_bytes()).unwrap_or(usize::MAX),
            sanitize,
            untrusted: m.output.label == TrustLabel::Untrusted,
            content: m.output.content,
        },
        transport,
        tool_value: tool_value(m),
        effect: match &m.effect {
            manifest::EffectField::Contract(c) if c.kind == manifest::EffectKind::ExternalWrite => Some(super::ToolEffect {
                retry_mode: c.retry_mode,
                compensation: c.compensation.clone(),
                reconcile: c.reconcile.clone(),
                reconcile_operation: c.reconcile_operation.clone(),
            }),
            _ => None,
        },
        secrets: m.secrets.clone(),
        native_secrets: m.native_secrets,
    }
}

/// The effect contracts of the tools (issue 21): a tool registered in code
/// that writes outside needs one too, and the compensation and reconcile
/// tools a contract names must exist (a reconcile tool must be one the core
/// reaches itself: it is asked before a retry, inside the call).
fn check_effects(harness: &Harness, all: &[&Tool], problems: &mut Vec<Problem>) {
    let located = |tool: &Tool, code: &str, path: &str, message: String| Problem {
        file: tool.file().map(str::to_string),
        path: path.to_string(),
        ..Problem::new(code, message)
    };
    for tool in all {
        let m = tool.manifest();
        if tool.file().is_none()
            && harness.spec().effects.require_contract
            && manifest::needs_contract(m.side_effect)
            && m.effect == manifest::EffectField::Absent
        {
            problems.push(located(
                tool,
                "effect_contract_missing",
                "spec.effect",
                manifest::missing_contract_message(&m.name, manifest::side_effect_name(m.side_effect)),
            ));
        }
        let manifest::EffectField::Contract(c) = &m.effect else { continue };
        if c.reconcile_operation.is_some() && m.transport != manifest::Transport::Process {
            let path = "spec.effect.reconcile_operation";
            problems.push(located(
                tool,
                "invalid_value",
                path,
                format!(
                    "`{path}` of `{}` asks the tool's own handler; only a process tool has operations (name a reconcile tool with `reconcile`)",
                    m.name
                ),
            ));
        }
        for (path, name, needs_core) in [("spec.effect.compensation", &c.compensation, false), ("spec.effect.reconcile", &c.reconcile, true)] {
            let Some(name) = name else { continue };
            match all.iter().find(|t| t.name() == name.as_str()) {
                None => problems.push(located(tool, "unknown_effect_tool", path, format!("`{path}` of `{}` names `{name}`, which no manifest declares", m.name))),
                Some(t) if needs_core && t.manifest().transport == manifest::Transport::Native => problems.push(located(
                    tool,
                    "unknown_effect_tool",
                    path,
                    format!("`{path}` of `{}` names native tool `{name}`; a reconcile tool must be a process, http, mcp or code tool, which the core asks itself", m.name),
                )),
                Some(_) => {}
            }
        }
    }
}

/// `approval.when`, compiled when the manifest was checked (not again
/// here). A tool is built only from a manifest whose condition compiled, so
/// a missing program is a fault: the load fails closed.
fn approval_program(tool: &Tool, problems: &mut Vec<Problem>) -> Option<Arc<Program>> {
    let approval = tool.manifest().approval.as_ref()?;
    let program = tool.approval_program().cloned();
    if program.is_none() {
        problems.push(Problem {
            path: "spec.approval.when".to_string(),
            ..Problem::new("cel_syntax", format!("`spec.approval.when` of `{}` was not compiled: `{}`", tool.name(), approval.when))
        });
    }
    program
}

/// The hosts a call may send data to: `egress`, plus the host of an http
/// tool's `url` (its arguments go there whether or not `egress` says so, so
/// the trifecta rule must see it; issue 10, trifecta evasions), plus the
/// server of an MCP tool (`mcp://NAME`: its arguments go to another party)
/// unless the manifest says explicitly that it sends nothing out with
/// `egress: []` (issue 17, item 5).
fn effective_egress(m: &manifest::Manifest) -> Vec<String> {
    let mut egress = m.egress.clone();
    if m.transport == manifest::Transport::Mcp && !(m.egress_declared && m.egress.is_empty()) {
        let server = m.server.clone().unwrap_or_else(|| "mcp".to_string());
        if !egress.contains(&server) {
            egress.push(server);
        }
    }
    if m.transport == manifest::Transport::Http {
        if let Some(url) = &m.url {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let host = if host.is_empty() { url.as_str() } else { host };
            if !egress.iter().any(|e| e == host) {
                egress.push(host.to_string());
            }
        }
    }
    egress
}

impl Governor {
    /// Compiles `harness` (and any tools registered in code) into a governor.
    pub fn from_harness(harness: &Harness, options: GovernorOptions) -> Result<Governor, Error> {
        crate::validate::with_compile_cache(|| Self::build(harness, options))
    }

    fn build(harness: &Harness, options: GovernorOptions) -> Result<Governor, Error> {
        let spec = harness.spec();
        let mut problems = Vec::new();
        let mut tools = Vec::new();
        let mut names: HashMap<String, ()> = HashMap::new();
        let mut keys: HashMap<String, &Tool> = HashMap::new();
        // Runtimes are built in parallel for many tools, then taken in
        // order (a duplicate's runtime is dropped, as if never built).
        let all: Vec<&Tool> = harness.tools().iter().chain(options.extra_tools.iter()).collect();
        let built = crate::parallel::map_in_order(&all, crate::parallel::parallelism(), |tool| {
            let mut own = Vec::new();
            let rt = runtime(tool, &mut own);
            (rt, own)
        });
        for (tool, (rt, mut own)) in all.iter().zip(built) {
            if names.insert(tool.name().to_string(), ()).is_some() {
                let mut p = Problem::new("duplicate_tool", format!("tool `{}` is defined twice (a manifest file and code)", tool.name()));
                p.file = tool.file().map(str::to_string);
                p.path = "metadata.name".into();
                problems.push(p);
                continue;
            }
            // Two names a model cannot tell apart (issue 17 item 13); the
            // manifest files were compared with each other at load.
            let key = crate::manifest::confusable_key(tool.name());
            if let Some(other) = keys.get(&key) {
                let (here, there) = (tool.file().unwrap_or("code"), other.file().unwrap_or("code"));
                let mut p = Problem::new("confusable_tool", harness::confusable_message(tool.name(), here, other.name(), there));
                p.file = tool.file().map(str::to_string);
                p.path = "metadata.name".into();
                problems.push(p);
                continue;
            }
            keys.insert(key, tool);
            problems.append(&mut own);
            tools.push(rt);
        }
        let rules = spec
            .rules
            .iter()
            .map(|r| Rule {
                name: r.name.clone(),
                effect: r.effect,
                tools: r.tools.clone(),
                when: compile_condition(&r.when, "spec.policy.rules.when", &mut problems),
                layer: r.layer,
                shadow: r.mode == EnforceMode::Shadow,
            })
            .collect::<Vec<Rule>>();
        check_examples(&spec.rules, &rules, &tools, harness, &mut problems);
        check_effects(harness, &all, &mut problems);
        problems.extend(crate::lock::check_required(harness));
        let state_options = spec.state_options;
        let backends: Arc<dyn Backends> = options.backends.unwrap_or_else(|| Arc::new(CoreBackends));
        let store: Arc<dyn Store> = match options.store {
            Some(store) => store,
            None => match backends.open_store(harness, options.clock.is_some()) {
                Ok(store) => store,
                Err(problem) => {
                    problems.push(*problem);
                    Arc::new(MemoryStore::new())
                }
            },
        };
        let audit: Arc<dyn AuditSink> = match (options.audit, &spec.audit_sink) {
            (Some(audit), _) => audit,
            (None, harness::AuditSink::None) => Arc::new(NullSink),
            (None, harness::AuditSink::Callback) => Arc::new(MemorySink::new()),
            (None, harness::AuditSink::Jsonl(path)) => match crate::audit::signing_key(harness).and_then(|key| {
                JsonlSink::open_with(harness.dir().join(path), key, spec.audit_signing.checkpoint_every, spec.audit_signing.single_writer)
            }) {
                Ok(sink) => Arc::new(sink),
                Err(crate::error::Error::Load(found)) => {
                    problems.extend(found.into_iter().map(|p| Problem { path: "spec.audit.sink".into(), ..p }));
                    Arc::new(NullSink)
                }
                Err(e) => {
                    problems.push(Problem { path: "spec.audit.sink".into(), ..Problem::new("io_error", e.to_string()) });
                    Arc::new(NullSink)
                }
            },
            (None, harness::AuditSink::Sqlite(path)) => match backends.open_sqlite_audit(harness, path) {
                Ok(sink) => sink,
                Err(problem) => {
                    problems.push(*problem);
                    Arc::new(NullSink)
                }
            },
        };
        let builtins = match crate::builtins::Builtins::new(harness) {
            Ok(b) => b.map(Arc::new),
            Err(p) => {
                problems.push(p);
                None
            }
        };
        let audit = backends.observe(harness, audit);
        // An observer listens from the start; its host may turn it off (issue 24).
        let listening = options.observer.as_ref().map(|_| crate::audit::Listening::new(true));
        let audit = match (options.observer, &listening) {
            (Some(observer), Some(l)) => Arc::new(crate::audit::Observed { sink: audit, observer, listening: l.clone() }) as Arc<dyn AuditSink>,
            _ => audit,
        };
        let journal = match backends.open_journal(harness) {
            Ok(journal) => Some(journal),
            Err(problem) => {
                problems.push(*problem);
                None
            }
        };
        if !problems.is_empty() {
            return Err(Error::Load(problems));
        }
        // Last, so a harness with other problems does not start MCP servers.
        let (transports, transport_problems) = backends.transports(harness, &all);
        if !transport_problems.is_empty() {
            return Err(Error::Load(transport_problems));
        }
        let settings = Settings {
            trifecta: spec.trifecta,
            tainted_arguments: spec.tainted_arguments,
            unrequested_actions: spec.unrequested_actions,
            trust_single_value: spec.trust_single_value.clone(),
            approval_by_risk: spec.tools.approval_by_risk.iter().map(|r| manifest::risk_name(*r).to_string()).collect(),
            max_tool_calls: spec.budgets.max_tool_calls,
            per_tool: spec.budgets.per_tool.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            rate_limits_fail_open: state_options.rate_limits_on_store_error == harness::StoreErrorMode::Open,
            allow_self_approval: spec.approvals.allow_self_approval,
            max_open_approvals_per_principal: spec.approvals.max_open_per_principal,
            layers: spec
                .layers
                .iter()
                .map(|l| LayerSettings { name: l.name.clone(), default_allow: l.default_allow, shadow: l.mode == EnforceMode::Shadow })
                .collect(),
            ..Settings::default()
        };
        let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let ids = if options.sequential_ids { IdSource::sequential() } else { IdSource::random() };
        let mut governor = Governor::new(tools, rules, settings, store, clock, ids, audit);
        governor.set_listening(listening);
        governor.set_policy_version(policy_version(harness, &all));
        governor.set_transports(transports);
        governor.set_builtins(builtins);
        if let Some(journal) = journal {
            governor.set_journal(journal);
        }
        governor.set_secrets(spec.secrets.clone(), harness.dir().to_path_buf());
        governor.set_runs(spec.runs.clone());
        Ok(governor)
    }
}

/// The policy version of `harness` alone (no tools registered in code): what
/// a governor built from it binds approvals to, for an exporter that labels
/// spans with it (issue 24).
pub fn policy_version_of(harness: &Harness) -> String {
    let tools: Vec<&Tool> = harness.tools().iter().collect();
    policy_version(harness, &tools)
}

/// A digest of everything that decides: the harness settings and every
/// tool's full description ([`Tool::describe`]). Approvals are bound to it.
/// `tools` are the harness's tools and the tools registered in code, in order.
fn policy_version(harness: &Harness, tools: &[&Tool]) -> String {
    // The canonical text of `{"harness": …, "tools": [...]}` ("harness"
    // sorts first), hashed a piece at a time instead of built whole; a value
    // with no canonical form makes it the digest of empty text, as before.
    // The tools' texts are written in parallel, a slice at a time, and
    // hashed in order.
    use sha2::{Digest as _, Sha256};
    const SLICE: usize = 64;
    let slices: Vec<&[&Tool]> = tools.chunks(SLICE).collect();
    let texts = crate::parallel::map_in_order(&slices, crate::parallel::parallelism(), |slice| {
        let mut text = String::with_capacity(slice.len() * 1024);
        for (i, tool) in slice.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            // The canonical text of `tool.describe()`, written without building it.
            tool.write_description(&mut text, 2)?;
        }
        Ok::<String, crate::error::Error>(text)
    });
    let mut head = String::from("{\"harness\":");
    if crate::canonical::write_value(&mut head, &harness.describe(), 1).is_err() {
        return crate::digest::sha256_tagged(b"");
    }
    head.push_str(",\"tools\":[");
    let mut hasher = Sha256::new();
    hasher.update(head.as_bytes());
    for (i, text) in texts.into_iter().enumerate() {
        let Ok(text) = text else { return crate::digest::sha256_tagged(b"") };
        if i > 0 {
            hasher.update(b",");
        }
        hasher.update(text.as_bytes());
    }
    hasher.update(b"]}");
    crate::digest::hex_tagged(&hasher.finalize())
}

/// Checks every rule's examples: a rule whose examples it does not decide
/// as stated does not load. Evaluated on the example call alone (tool glob
/// and `when`), with empty run labels.
fn check_examples(specs: &[harness::PolicyRule], rules: &[Rule], tools: &[ToolRuntime], harness: &Harness, problems: &mut Vec<Problem>) {
    for (spec, rule) in specs.iter().zip(rules) {
        for ex in &spec.examples {
            let located = |code: &str, message: String| Problem {
                file: Some(spec.file.clone()),
                line: Some(ex.location.line).filter(|l| *l > 0),
                column: Some(ex.location.column).filter(|c| *c > 0),
                path: ex.path.clone(),
                ..Problem::new(code, message)
            };
            let tool_value = tools.iter().find(|t| t.name == ex.tool).map(|t| t.tool_value.clone()).unwrap_or_else(|| json!({"name": ex.tool}));
            if !harness.tools().iter().any(|t| t.name() == ex.tool) {
                problems.push(located(
                    "policy_example_failed",
                    format!("example of rule `{}` calls `{}`, which no manifest declares", spec.name, ex.tool),
                ));
                continue;
            }
            let tenant = ex.tenant.clone().map_or(Value::Null, Value::String);
            let labels = json!({"private": false, "untrusted": false});
            let run = json!({"calls": [], "size": 0, "counts": {}});
            let vars = cel_lite::Vars {
                principal: Some(&ex.principal),
                tenant: Some(&tenant),
                task: Some(&Value::Null),
                tool: Some(&tool_value),
                args: Some(&ex.args),
                labels: Some(&labels),
                run: Some(&run),
            };
            let covers = rule.tools.is_empty() || rule.tools.iter().any(|g| super::glob_match(g, &ex.tool));
            let matched = covers
                && match &rule.when {
                    None => true,
                    // Unevaluable counts as a match for deny and approve (fail closed), not for allow.
                    Some(p) => super::condition(p, &vars).unwrap_or(rule.effect != harness::Effect::Allow),
                };
            let refuses = match rule.effect {
                harness::Effect::Allow => !matched,
                harness::Effect::Deny | harness::Effect::Approve => matched,
            };
            let want_refuse = ex.expect == ExampleExpect::Refuse;
            if refuses != want_refuse {
                let (want, got) = if want_refuse { ("refuse", "lets it through") } else { ("allow", "refuses it") };
                problems.push(located(
                    "policy_example_failed",
                    format!("rule `{}` should {want} its example call of `{}`, but it {got}", spec.name, ex.tool),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy version as it was computed before it was streamed from
    /// the tools: the canonical text of `{"harness": …, "tools": [describe()…]}`,
    /// or of nothing.
    fn whole_text_digest(harness: &Harness, tools: &[&Tool]) -> String {
        let described: Vec<Value> = tools.iter().map(|t| t.describe()).collect();
        let whole = json!({"harness": harness.describe(), "tools": described});
        crate::digest::sha256_tagged(crate::canonical::to_string(&whole).unwrap_or_default().as_bytes())
    }

    /// Every harness under fixtures/ and examples/ that loads.
    fn loadable_harnesses() -> Vec<Harness> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = Vec::new();
        let mut dirs = vec![root.join("fixtures"), root.join("examples")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() && !path.ends_with("node_modules") {
                    dirs.push(path);
                } else if path.file_name().is_some_and(|n| n == "harness.yaml") {
                    if let Ok(h) = Harness::load(&path) {
                        found.push(h);
                    }
                }
            }
        }
        found
    }

    #[test]
    fn the_policy_version_is_the_digest_of_every_description() {
        let harnesses = loadable_harnesses();
        assert!(harnesses.len() >= 5, "{} harnesses", harnesses.len());
        let mut tools_seen = 0;
        for harness in &harnesses {
            let tools: Vec<&Tool> = harness.tools().iter().collect();
            tools_seen += tools.len();
            assert_eq!(policy_version(harness, &tools), whole_text_digest(harness, &tools), "{}", harness.dir().display());
            // In another order, and repeated.
            let more: Vec<&Tool> = tools.iter().rev().cycle().take(tools.len() * 3).copied().collect();
            assert_eq!(policy_version(harness, &more), whole_text_digest(harness, &more));
        }
        assert!(tools_seen >= 10, "{tools_seen} tools");
        // Enough tools for their texts to be written on several threads.
        let harness = harnesses.iter().find(|h| h.tools().len() >= 2).unwrap();
        let n = crate::parallel::PARALLEL_MIN_ITEMS * 64 + 7;
        let many: Vec<&Tool> = harness.tools().iter().cycle().take(n).collect();
        assert_eq!(policy_version(harness, &many), whole_text_digest(harness, &many));
    }

    #[test]
    fn a_description_with_no_canonical_form_makes_the_digest_of_nothing() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/load/harness_full");
        let harness = Harness::load(&dir).unwrap();
        let ok = Tool::from_manifest_value(
            &json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "ok"}, "spec": {"handler": "m:f"}}),
            "ok",
        )
        .unwrap();
        // An integer beyond 2^53 has no canonical form.
        let big = Tool::from_manifest_value(
            &json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "big"},
                    "spec": {"handler": "m:f", "output": {"max_bytes": 9_007_199_254_740_993u64}}}),
            "big",
        )
        .unwrap();
        for tools in [vec![&ok, &big], vec![&big, &ok], vec![&ok; 300].into_iter().chain([&big]).collect()] {
            assert_eq!(policy_version(&harness, &tools), crate::digest::sha256_tagged(b""));
            assert_eq!(policy_version(&harness, &tools), whole_text_digest(&harness, &tools));
        }
        // Written on several threads, one of which meets it.
        let mut many = vec![&ok; crate::parallel::PARALLEL_MIN_ITEMS * 64 + 7];
        many[2000] = &big;
        assert_eq!(policy_version(&harness, &many), crate::digest::sha256_tagged(b""));
        many[2000] = &ok;
        assert_ne!(policy_version(&harness, &many), crate::digest::sha256_tagged(b""));
    }
}
