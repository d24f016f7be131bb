//! `harness.yaml`'s node tree into a checked [`HarnessSpec`], with the
//! manifest globs and policy layer files the loader reads next. Problems go
//! to the checker with their line, column and field path.

use std::collections::BTreeMap;

use super::model::redact_url;
use super::model::{
    ApprovalSettings, AuditSigning, AuditSink, Budgets, EnforceMode, HarnessSpec, KeySource, McpConnect, McpServer, Mode, PolicyLayer, StateBackend,
    StateOptions, StoreErrorMode, TaintedMode, ToolsSettings, TrifectaMode, ValueKind,
};
use super::policy::{parse_policy, LayerFile, ParsedPolicy};
use crate::check::{child_path, Checker, MapReader};
use crate::manifest::{self, check_header, DEFAULT_MAX_OUTPUT_BYTES, RISKS};
use crate::yaml::{Node, NodeValue, Pos};

/// The manifest globs as written: pattern, position and field path.
pub(super) type Globs = Vec<(String, Pos, String)>;

pub(super) fn parse_harness(node: &Node, cx: &mut Checker, harness_file: &str) -> Option<(HarnessSpec, Globs, Vec<LayerFile>)> {
    let mut doc = cx.map(node, "")?;
    check_header(&mut doc, cx, "Harness");
    let mut name = None;
    if let Some(meta_node) = doc.get("metadata") {
        if let Some(mut meta) = cx.map(meta_node, "metadata") {
            name = cx.opt_string(meta.get("name"), "metadata.name");
            meta.finish(cx);
        }
    }
    let spec_node = doc.require(cx, "spec");
    doc.finish(cx);
    let mut spec = cx.map(spec_node?, "spec")?;

    let mode = spec
        .get("mode")
        .and_then(|n| cx.choice(n, "spec.mode", &[("production", Mode::Production), ("test", Mode::Test)]))
        .unwrap_or(Mode::Production);

    let mut tools = ToolsSettings {
        manifests: Vec::new(),
        require_manifest: true,
        require_pins: false,
        max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        approval_by_risk: Vec::new(),
        require_lock: false,
    };
    let mut globs = Vec::new();
    if let Some(tn) = spec.require(cx, "tools") {
        if let Some(mut t) = cx.map(tn, "spec.tools") {
            if let Some(n) = t.require(cx, "manifests") {
                match &n.value {
                    NodeValue::Str(s) => globs.push((s.clone(), n.pos, "spec.tools.manifests".to_string())),
                    NodeValue::Seq(items) => {
                        for (i, item) in items.iter().enumerate() {
                            let path = format!("spec.tools.manifests[{i}]");
                            if let Some(s) = cx.string(item, &path) {
                                globs.push((s, item.pos, path));
                            }
                        }
                    }
                    _ => cx.report(
                        "wrong_type",
                        n.pos,
                        "spec.tools.manifests",
                        format!("`spec.tools.manifests` must be a list of globs, not {}", n.kind()),
                    ),
                }
            }
            tools.manifests = globs.iter().map(|g| g.0.clone()).collect();
            if let Some(n) = t.get("require_manifest") {
                tools.require_manifest = cx.boolean(n, "spec.tools.require_manifest").unwrap_or(true);
            }
            if let Some(n) = t.get("require_lock") {
                tools.require_lock = cx.boolean(n, "spec.tools.require_lock").unwrap_or(false);
            }
            if let Some(n) = t.get("require_pins") {
                tools.require_pins = cx.boolean(n, "spec.tools.require_pins").unwrap_or(false);
            }
            if let Some(n) = t.get("max_output_bytes") {
                tools.max_output_bytes = cx.positive(n, "spec.tools.max_output_bytes").unwrap_or(DEFAULT_MAX_OUTPUT_BYTES);
            }
            if let Some(n) = t.get("approval_by_risk") {
                let risks = &mut tools.approval_by_risk;
                cx.list(n, "spec.tools.approval_by_risk", "a list of risks", |cx, item, path| {
                    if let Some(r) = cx.choice(item, path, RISKS) {
                        if !risks.contains(&r) {
                            risks.push(r);
                        }
                    }
                });
            }
            t.finish(cx);
        }
    }

    let policy = match spec.get("policy") {
        Some(n) => parse_policy(n, cx, harness_file),
        None => ParsedPolicy {
            layers: vec![PolicyLayer { name: "harness".into(), mode: EnforceMode::Enforce, default_allow: true, file: None }],
            ..ParsedPolicy::default()
        },
    };
    let (layers, rules, layer_files) = (policy.layers, policy.rules, policy.files);
    let mut trifecta = TrifectaMode::Block;
    let mut tainted_arguments = TaintedMode::Refuse;
    let mut unrequested_actions = TaintedMode::Refuse;
    let mut trust_single_value = Vec::new();
    if let Some(n) = spec.get("flow") {
        if let Some(mut f) = cx.map(n, "spec.flow") {
            if let Some(t) = f.get("trifecta") {
                trifecta = cx
                    .choice(
                        t,
                        "spec.flow.trifecta",
                        &[
                            ("block", TrifectaMode::Block),
                            ("approve", TrifectaMode::Approve),
                            ("provenance", TrifectaMode::Provenance),
                            ("off", TrifectaMode::Off),
                        ],
                    )
                    .unwrap_or(TrifectaMode::Block);
            }
            if let Some(t) = f.get("tainted_arguments") {
                let modes = [("refuse", TaintedMode::Refuse), ("approve", TaintedMode::Approve), ("allow", TaintedMode::Allow)];
                tainted_arguments = cx.choice(t, "spec.flow.tainted_arguments", &modes).unwrap_or(TaintedMode::Refuse);
            }
            if let Some(t) = f.get("unrequested_actions") {
                let modes = [("refuse", TaintedMode::Refuse), ("approve", TaintedMode::Approve), ("allow", TaintedMode::Allow)];
                unrequested_actions = cx.choice(t, "spec.flow.unrequested_actions", &modes).unwrap_or(TaintedMode::Refuse);
            }
            if let Some(t) = f.get("trust_single_value") {
                trust_single_value = parse_value_kinds(t, cx);
            }
            f.finish(cx);
        }
    }
    let mut budgets = Budgets::default();
    if let Some(n) = spec.get("budgets") {
        if let Some(mut b) = cx.map(n, "spec.budgets") {
            if let Some(m) = b.get("max_tool_calls") {
                budgets.max_tool_calls = cx.count(m, "spec.budgets.max_tool_calls");
            }
            if let Some(p) = b.get("per_tool") {
                if let Some(mut per) = cx.map(p, "spec.budgets.per_tool") {
                    for (k, v) in per.all() {
                        let key = k.as_str().unwrap_or_default();
                        if let Some(c) = cx.count(v, &child_path("spec.budgets.per_tool", key)) {
                            budgets.per_tool.insert(key.to_string(), c);
                        }
                    }
                }
            }
            b.finish(cx);
        }
    }
    let approvals = spec.get("approvals").map(|n| parse_approvals(n, cx)).unwrap_or_default();
    let mut audit_sink = AuditSink::None;
    let mut audit_signing = AuditSigning::default();
    if let Some(n) = spec.get("audit") {
        if let Some(mut a) = cx.map(n, "spec.audit") {
            audit_signing = parse_audit_signing(&mut a, cx);
            if let Some(s) = a.get("sink") {
                if let Some(text) = cx.string(s, "spec.audit.sink") {
                    audit_sink = match text.as_str() {
                        "none" => AuditSink::None,
                        "callback" => AuditSink::Callback,
                        "" => {
                            cx.report("invalid_value", s.pos, "spec.audit.sink", "`spec.audit.sink` is empty".to_string());
                            AuditSink::None
                        }
                        text => match text.strip_prefix("sqlite:") {
                            Some("") => {
                                cx.report("invalid_value", s.pos, "spec.audit.sink", "`spec.audit.sink` is `sqlite:` without a path".to_string());
                                AuditSink::None
                            }
                            Some(path) => AuditSink::Sqlite(path.to_string()),
                            None => AuditSink::Jsonl(text.to_string()),
                        },
                    };
                }
            }
            a.finish(cx);
        }
    }
    let mut state = StateBackend::Memory;
    if let Some(n) = spec.get("state") {
        if let Some(text) = cx.string(n, "spec.state") {
            state = if text == "memory" {
                StateBackend::Memory
            } else if let Some(p) = text.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
                StateBackend::Sqlite(p.to_string())
            } else if ["redis://", "rediss://", "redis+cluster://", "redis+sentinel://"].iter().any(|p| text.starts_with(p)) {
                StateBackend::Redis(text)
            } else {
                cx.report(
                    "invalid_value",
                    n.pos,
                    "spec.state",
                    format!("`spec.state` is `{}`; expected `memory`, `sqlite:<path>` or `redis://…`", redact_url(&text)),
                );
                StateBackend::Memory
            };
        }
    }
    let state_options = spec.get("state_options").map(|n| parse_state_options(n, cx)).unwrap_or_default();
    let (mcp_servers, mcp_connect) = spec.get("mcp").map(|n| parse_mcp(n, cx)).unwrap_or_default();
    let gateway = spec.get("gateway").map(|n| super::gateway::parse(n, cx)).unwrap_or_default();
    let builtins = spec.get("builtins").and_then(|n| super::builtins::parse(n, cx));
    let effects = super::effects::parse_effects(spec.get("effects"), cx);
    let secrets = super::effects::parse_secrets(spec.get("secrets"), spec.get("secret_scopes"), cx);
    let runs = spec.get("runs").map(|n| super::runs::parse_runs(n, cx, "spec.runs").0);
    spec.finish(cx);
    let spec = HarnessSpec {
        name,
        mode,
        tools,
        layers,
        rules,
        trifecta,
        tainted_arguments,
        unrequested_actions,
        trust_single_value,
        budgets,
        approvals,
        audit_sink,
        audit_signing,
        state,
        state_options,
        mcp_servers,
        mcp_connect,
        gateway,
        builtins,
        effects,
        secrets,
        runs,
    };
    Some((spec, globs, layer_files))
}

fn parse_audit_signing(a: &mut MapReader<'_>, cx: &mut Checker) -> AuditSigning {
    let mut signing = AuditSigning::default();
    if let Some(n) = a.get("signing_key") {
        if let Some(text) = cx.string(n, "spec.audit.signing_key") {
            signing.signing_key = match text.strip_prefix("env:") {
                Some("") => {
                    cx.report("invalid_value", n.pos, "spec.audit.signing_key", "`spec.audit.signing_key` is `env:` without a variable".to_string());
                    None
                }
                Some(var) => Some(KeySource::Env(var.to_string())),
                None if text.is_empty() => {
                    cx.report("invalid_value", n.pos, "spec.audit.signing_key", "`spec.audit.signing_key` is empty".to_string());
                    None
                }
                None => Some(KeySource::File(text)),
            };
        }
    }
    if let Some(n) = a.get("checkpoint_every") {
        signing.checkpoint_every = cx.positive(n, "spec.audit.checkpoint_every").unwrap_or(signing.checkpoint_every);
    }
    if let Some(n) = a.get("single_writer") {
        signing.single_writer = cx.boolean(n, "spec.audit.single_writer").unwrap_or(false);
    }
    signing
}

fn parse_approvals(node: &Node, cx: &mut Checker) -> ApprovalSettings {
    let mut settings = ApprovalSettings::default();
    let Some(mut m) = cx.map(node, "spec.approvals") else { return settings };
    if let Some(n) = m.get("allow_self_approval") {
        settings.allow_self_approval = cx.boolean(n, "spec.approvals.allow_self_approval").unwrap_or(false);
    }
    if let Some(n) = m.get("max_open_per_principal") {
        settings.max_open_per_principal = cx.positive(n, "spec.approvals.max_open_per_principal").unwrap_or(settings.max_open_per_principal);
    }
    m.finish(cx);
    settings
}

fn parse_state_options(node: &Node, cx: &mut Checker) -> StateOptions {
    let mut options = StateOptions::default();
    let Some(mut m) = cx.map(node, "spec.state_options") else { return options };
    if let Some(n) = m.get("rate_limits_on_store_error") {
        options.rate_limits_on_store_error = cx
            .choice(n, "spec.state_options.rate_limits_on_store_error", &[("closed", StoreErrorMode::Closed), ("open", StoreErrorMode::Open)])
            .unwrap_or(StoreErrorMode::Closed);
    }
    for (key, slot) in [("run_ttl", &mut options.run_ttl_ms), ("timeout", &mut options.timeout_ms)] {
        let Some(n) = m.get(key) else { continue };
        let path = format!("spec.state_options.{key}");
        let text = match &n.value {
            NodeValue::Str(s) => s.clone(),
            _ => {
                cx.report("wrong_type", n.pos, &path, format!("`{path}` must be a duration like `30s`, not {}", n.kind()));
                continue;
            }
        };
        match manifest::Duration::parse(&text) {
            Some(d) => *slot = d.ms,
            None => cx.report(
                "invalid_duration",
                n.pos,
                &path,
                format!("`{path}` is `{text}`; write a whole number greater than 0 and a unit: `500ms`, `30s`, `2m` or `1h`"),
            ),
        }
    }
    m.finish(cx);
    options
}

fn env_map(cx: &mut Checker, node: Option<&Node>, path: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(n) = node else { return out };
    let Some(mut m) = cx.map(n, path) else { return out };
    for (k, v) in m.all() {
        let key = k.as_str().unwrap_or_default().to_string();
        if let Some(s) = cx.string(v, &child_path(path, &key)) {
            out.insert(key, s);
        }
    }
    out
}

fn parse_mcp(node: &Node, cx: &mut Checker) -> (BTreeMap<String, McpServer>, McpConnect) {
    let mut servers = BTreeMap::new();
    let Some(mut m) = cx.map(node, "spec.mcp") else { return (servers, McpConnect::Eager) };
    let connect = m
        .get("connect")
        .and_then(|n| cx.choice(n, "spec.mcp.connect", &[("eager", McpConnect::Eager), ("lazy", McpConnect::Lazy)]))
        .unwrap_or_default();
    if let Some(s) = m.get("servers") {
        if let Some(mut list) = cx.map(s, "spec.mcp.servers") {
            for (k, v) in list.all() {
                let name = k.as_str().unwrap_or_default().to_string();
                let path = child_path("spec.mcp.servers", &name);
                let Some(mut r) = cx.map(v, &path) else { continue };
                let server = parse_mcp_server(&mut r, cx, &path);
                r.finish(cx);
                if let Some(server) = server {
                    servers.insert(name, server);
                }
            }
        }
    }
    m.finish(cx);
    (servers, connect)
}

fn parse_mcp_server(r: &mut MapReader<'_>, cx: &mut Checker, path: &str) -> Option<McpServer> {
    let command = r.get("command");
    let url = r.get("url");
    match (command, url) {
        (Some(c), None) => {
            let command = cx.string(c, &format!("{path}.command"))?;
            let args = r.get("args").and_then(|n| cx.strings(n, &format!("{path}.args"))).unwrap_or_default();
            let env = env_map(cx, r.get("env"), &format!("{path}.env"));
            if let Some(h) = r.key_node("headers_env") {
                cx.report("forbidden_field", h.pos, &format!("{path}.headers_env"), "`headers_env` is only for url servers".to_string());
                let _ = r.get("headers_env");
            }
            Some(McpServer::Command { command, args, env })
        }
        (None, Some(u)) => {
            let url = cx.string(u, &format!("{path}.url"))?;
            let headers_env = env_map(cx, r.get("headers_env"), &format!("{path}.headers_env"));
            for key in ["args", "env"] {
                if let Some(h) = r.key_node(key) {
                    cx.report("forbidden_field", h.pos, &format!("{path}.{key}"), format!("`{key}` is only for command servers"));
                    let _ = r.get(key);
                }
            }
            Some(McpServer::Url { url, headers_env })
        }
        (Some(_), Some(u)) => {
            cx.report("forbidden_field", u.pos, &format!("{path}.url"), format!("`{path}` names both `command` and `url`; pick one"));
            None
        }
        (None, None) => {
            for key in ["args", "env", "headers_env"] {
                let _ = r.get_raw(key);
            }
            cx.report("missing_field", r.node.pos, &format!("{path}.command"), format!("`{path}` needs `command` or `url`"));
            None
        }
    }
}

/// `spec.flow.trust_single_value`: a list of value kinds, each once.
fn parse_value_kinds(node: &Node, cx: &mut Checker) -> Vec<ValueKind> {
    let kinds = [("email", ValueKind::Email), ("url", ValueKind::Url), ("iban", ValueKind::Iban)];
    let mut out = Vec::new();
    cx.list(node, "spec.flow.trust_single_value", "a list of value kinds", |cx, item, path| {
        if let Some(k) = cx.choice(item, path, &kinds) {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    });
    out.sort_unstable();
    out
}
