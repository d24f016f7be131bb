//! A manifest's YAML node tree into a checked [`Manifest`]: every field of
//! the manifest reference with its default, every problem collected with
//! its line, column and field path (parsing never stops at the first).

use std::collections::BTreeMap;

use serde_json::json;

use super::model::{
    is_valid_name, mcp_server_name, sanitizer_name, transport_name, Approval, ApprovalBy, ClientCapability, CodeLimits, Constraint, ContentKinds,
    Duration, Location, Manifest, OutputPolicy, PayloadConstraints, Rate, RateLimit, Risk, Sanitizer, SideEffect, Transport, TrustLabel, API_VERSION,
    RISKS, SANDBOXES,
};
use super::schema::check_schema;
use crate::cel_lite::Program;
use crate::check::{child_path, Checker, MapReader};
use crate::digest;
use crate::validate::SchemaValidator;
use crate::yaml::{Node, NodeValue, Pos};

/// Checks `apiVersion` and `kind` of a document mapping.
pub(crate) fn check_header(doc: &mut MapReader<'_>, cx: &mut Checker, kind: &str) {
    if let Some(n) = doc.require(cx, "apiVersion") {
        if let Some(v) = cx.string(n, "apiVersion") {
            if v != API_VERSION {
                cx.report("wrong_api_version", n.pos, "apiVersion", format!("`apiVersion` is `{v}`; this version reads `{API_VERSION}`"));
            }
        }
    }
    if let Some(n) = doc.require(cx, "kind") {
        if let Some(v) = cx.string(n, "kind") {
            if v != kind {
                cx.report("wrong_kind", n.pos, "kind", format!("`kind` is `{v}`; expected `{kind}`"));
            }
        }
    }
}

/// Compiles a cel-lite condition (`approval.when`, a policy rule's `when`)
/// at load, so a syntax error or an unknown name is a load problem pointing
/// into the file. Codes are cel-lite's (`cel_syntax`, `cel_unknown_name`, …).
/// Returns the compiled program, which the governor keeps (it is not
/// compiled again).
pub(crate) fn check_condition(cx: &mut Checker, text: &str, at: Location, path: &str) -> Option<Program> {
    if text.trim().is_empty() {
        let pos = Pos { line: at.line, column: at.column, ..Pos::default() };
        cx.report("invalid_value", pos, path, format!("`{path}` is empty"));
        return None;
    }
    // Trailing whitespace (a block scalar's final newline) is insignificant;
    // without it an "unexpected end" points at the last character, not at an
    // empty line.
    let compiled = crate::cel_lite::compile(text.trim_end());
    if let Err(e) = &compiled {
        let (line, column, note) = if at.line == 0 {
            (0, 0, format!(" (line {}, column {} of the expression)", e.line(), e.column()))
        } else if at.block {
            // A block scalar's lines all lose the same indentation.
            (at.line + e.line() - 1, at.column + e.column() - 1, String::new())
        } else {
            let (l, c) = e.position_in(at.line, at.column);
            (l, c, String::new())
        };
        let pos = Pos { line, column, ..Pos::default() };
        cx.report(e.code(), pos, path, format!("`{path}` does not compile: {}{note}", e.message()));
    }
    compiled.ok()
}

/// A manifest whose required parts are sound, with what building its tool needs.
pub(crate) struct ParsedManifest {
    /// The manifest, every default filled in.
    pub(crate) manifest: Manifest,
    /// Where `spec.input_schema` is (for a schema that cannot be pinned).
    pub(crate) schema_pos: Pos,
    /// The compiled `spec.input_schema`, when the manifest gives one.
    pub(crate) validator: Option<SchemaValidator>,
    /// The compiled `spec.output_schema` (issue 22), when the manifest gives one.
    pub(crate) output_validator: Option<SchemaValidator>,
    /// The compiled `spec.approval.when`, when the manifest has an approval.
    pub(crate) approval_when: Option<Program>,
}

/// Parses and checks a manifest document. Returns the manifest when the
/// required parts are sound; problems go to `cx`.
pub(crate) fn parse_manifest(node: &Node, cx: &mut Checker) -> Option<ParsedManifest> {
    let mut doc = cx.map(node, "")?;
    check_header(&mut doc, cx, "Tool");
    let before = cx.problems.len();

    // metadata
    let mut name = None;
    let mut version = None;
    let mut owner = None;
    let mut title = None;
    if let Some(meta_node) = doc.require(cx, "metadata") {
        if let Some(mut meta) = cx.map(meta_node, "metadata") {
            if let Some(n) = meta.require(cx, "name") {
                if let Some(s) = cx.string(n, "metadata.name") {
                    if is_valid_name(&s) {
                        name = Some(s);
                    } else {
                        cx.report(
                            "invalid_name",
                            n.pos,
                            "metadata.name",
                            format!("tool name `{s}` may hold only ASCII letters, digits, `_`, `.` and `-`, and may not start with a digit"),
                        );
                    }
                }
            }
            version = meta_string_or_number(cx, meta.get("version"), "metadata.version");
            owner = cx.opt_string(meta.get("owner"), "metadata.owner");
            title = cx.opt_string(meta.get("title"), "metadata.title");
            meta.finish(cx);
        }
    }

    let spec_node = doc.get("spec");
    doc.finish(cx);
    let empty = Node { value: NodeValue::Map(Vec::new()), pos: node.pos };
    let spec_node = spec_node.unwrap_or(&empty);
    let mut spec = cx.map(spec_node, "spec")?;

    let chosen = match spec.get("transport") {
        None => Some(Transport::Native),
        Some(n) => cx.choice(
            n,
            "spec.transport",
            &[
                ("native", Transport::Native),
                ("http", Transport::Http),
                ("code", Transport::Code),
                ("mcp", Transport::Mcp),
                ("process", Transport::Process),
            ],
        ),
    };
    // With an unknown transport, which fields belong is unknown too: read
    // them without requiring or refusing any.
    let known = chosen.is_some();
    let transport = chosen.unwrap_or(Transport::Native);
    let description = spec.get("description").and_then(|n| cx.string(n, "spec.description")).unwrap_or_default();
    let (input_schema, validator, schema_pos) = match spec.get("input_schema") {
        None => (json!({"type": "object"}), None, spec_node.pos),
        Some(n) => match check_schema(n, "input_schema", cx) {
            Some((schema, compiled)) => (schema, Some(compiled), n.pos),
            None => (json!({"type": "object"}), None, n.pos),
        },
    };
    // Issue 22: the shape of the tool's output (MCP `outputSchema`), checked at step 9.
    let (output_schema, output_validator) = match spec.get("output_schema").and_then(|n| check_schema(n, "output_schema", cx)) {
        Some((schema, compiled)) => (Some(schema), Some(compiled)),
        None => (None, None),
    };
    let definition_digest = match spec.get("definition_digest") {
        None => None,
        Some(n) => cx.string(n, "spec.definition_digest").and_then(|d| {
            if digest::is_well_formed(&d) {
                Some(d)
            } else {
                cx.report(
                    "invalid_digest",
                    n.pos,
                    "spec.definition_digest",
                    "`spec.definition_digest` must be `sha256:` and 64 lowercase hex digits".to_string(),
                );
                None
            }
        }),
    };

    // Transport-specific fields.
    let handler = field_for(cx, &mut spec, "handler", known, transport, &[Transport::Native], Some("missing_handler"));
    let url = field_for(cx, &mut spec, "url", known, transport, &[Transport::Http], Some("missing_url"));
    let server = field_for(cx, &mut spec, "server", known, transport, &[Transport::Mcp], Some("missing_field"));
    // A process tool's `sandbox` is a mapping, read with its other fields.
    let process = super::process::parse_process(cx, &mut spec, known, transport);
    let sandbox = if transport == Transport::Process && known {
        None
    } else {
        field_for(cx, &mut spec, "sandbox", known, transport, &[Transport::Code], Some("missing_field"))
    };
    if let (Some(srv), Some(n)) = (&server, spec.get("server")) {
        if mcp_server_name(srv).is_none() {
            cx.report(
                "invalid_value",
                n.pos,
                "spec.server",
                format!("`spec.server` must be `mcp://NAME`, naming a server of `spec.mcp.servers`, not `{srv}`"),
            );
        }
    }
    if let (Some(sb), Some(n)) = (&sandbox, spec.get("sandbox")) {
        if !SANDBOXES.contains(&sb.as_str()) {
            cx.report(
                "unknown_sandbox",
                n.pos,
                "spec.sandbox",
                format!("`spec.sandbox` is `{sb}`; the sandboxes are `monty` (short for `monty.sandbox`)"),
            );
        }
    }
    if let (Some(u), Some(n)) = (&url, spec.get("url")) {
        if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() <= "https://".len() {
            cx.report("invalid_value", n.pos, "spec.url", format!("`spec.url` must be an http:// or https:// URL, not `{u}`"));
        }
    }
    if let (Some(h), Some(n)) = (&handler, spec.get("handler")) {
        if h.trim().is_empty() {
            cx.report("missing_handler", n.pos, "spec.handler", "`spec.handler` is empty".to_string());
        }
    }

    let mut headers_env = BTreeMap::new();
    if let Some(n) = spec.get("headers_env") {
        if let Some(mut m) = cx.map(n, "spec.headers_env") {
            for (k, v) in m.all() {
                let Some(key) = k.as_str() else {
                    cx.report("wrong_type", k.pos, "spec.headers_env", "header names must be strings".to_string());
                    continue;
                };
                let path = child_path("spec.headers_env", key);
                if let Some(var) = cx.string(v, &path) {
                    if !is_env_name(&var) {
                        cx.report(
                            "invalid_value",
                            v.pos,
                            &path,
                            format!("`{path}` must name an environment variable (letters, digits, `_`), not hold a value"),
                        );
                    }
                    headers_env.insert(key.to_string(), var);
                }
            }
        }
    }
    let code_arg = spec.get("code_arg").and_then(|n| cx.string(n, "spec.code_arg")).unwrap_or_else(|| "code".to_string());
    let limits = spec.get("limits").map(|n| parse_limits(n, cx)).unwrap_or_default();
    let timeout = spec.get("timeout").and_then(|n| duration(cx, n, "spec.timeout")).unwrap_or(Duration { ms: 30_000 });
    let side_effect = spec
        .get("side_effect")
        .and_then(|n| {
            cx.choice(
                n,
                "spec.side_effect",
                &[
                    ("none", SideEffect::None),
                    ("read", SideEffect::Read),
                    ("write_internal", SideEffect::WriteInternal),
                    ("write_external", SideEffect::WriteExternal),
                    ("destructive", SideEffect::Destructive),
                ],
            )
        })
        .unwrap_or(SideEffect::None);
    let risk = spec.get("risk").and_then(|n| cx.choice(n, "spec.risk", RISKS)).unwrap_or(Risk::Low);
    let egress_declared = spec.get("egress").is_some();
    let mut list = |cx: &mut Checker, key: &'static str| {
        let path = format!("spec.{key}");
        spec.get(key).and_then(|n| cx.strings(n, &path)).unwrap_or_default()
    };
    let data_access = list(cx, "data_access");
    let egress = list(cx, "egress");
    let scopes = list(cx, "scopes");
    let tenants = list(cx, "tenants");
    let Flow { sinks, links, identifies, identifies_when_named, links_when_named, intent } =
        spec.get("flow").map(|n| parse_flow(n, cx)).unwrap_or_default();
    let enabled = spec.get("enabled").and_then(|n| cx.boolean(n, "spec.enabled")).unwrap_or(true);
    let rate_limit = spec.get("rate_limit").and_then(|n| parse_rate_limit(n, cx));
    let (approval, approval_when) = match spec.get("approval").and_then(|n| parse_approval(n, cx)) {
        Some((approval, program)) => (Some(approval), program),
        None => (None, None),
    };
    let output = parse_output(spec.get("output"), cx);
    let payload_constraints = spec.get("payload_constraints").and_then(|n| parse_payload_constraints(n, cx));
    let effect = super::effect::parse_effect(spec.get_raw("effect"), cx);
    let secrets = super::effect::parse_secrets(spec.get("secrets"), cx);
    let native_secrets = super::effect::parse_secrets_delivery(spec.get("secrets_delivery"), transport, cx);
    let client_capabilities = parse_client_capabilities(cx, &mut spec, known, transport);
    spec.finish(cx);

    if cx.problems.len() > before {
        return None;
    }
    let manifest = Manifest {
        name: name?,
        version,
        owner,
        title,
        transport,
        description,
        input_schema,
        output_schema,
        definition_digest,
        handler,
        url,
        headers_env,
        server,
        sandbox,
        code_arg,
        limits,
        timeout,
        side_effect,
        risk,
        data_access,
        egress,
        egress_declared,
        sinks,
        links,
        identifies,
        identifies_when_named,
        links_when_named,
        intent,
        scopes,
        tenants,
        enabled,
        rate_limit,
        approval,
        output,
        payload_constraints,
        process,
        effect,
        secrets,
        native_secrets,
        client_capabilities,
    };
    Some(ParsedManifest { manifest, schema_pos, validator, output_validator, approval_when })
}

fn meta_string_or_number(cx: &mut Checker, node: Option<&Node>, path: &str) -> Option<String> {
    let n = node?;
    match &n.value {
        NodeValue::Str(s) => Some(s.clone()),
        NodeValue::Int(i) => Some(i.to_string()),
        _ => {
            cx.report("wrong_type", n.pos, path, format!("`{path}` must be a string, not {} (quote it, like \"2.1.0\")", n.kind()));
            None
        }
    }
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads a field only some transports use: required for them (reporting
/// `missing_code`), refused (`forbidden_field`) for the others. `handler`
/// and `url` are tolerated elsewhere only where the seed allows (never).
fn field_for(
    cx: &mut Checker,
    spec: &mut MapReader<'_>,
    key: &'static str,
    known: bool,
    transport: Transport,
    for_transports: &[Transport],
    missing_code: Option<&str>,
) -> Option<String> {
    let path = format!("spec.{key}");
    let node = spec.get(key);
    let wanted = for_transports.contains(&transport);
    if !known {
        return node.and_then(|n| cx.string(n, &path));
    }
    match node {
        Some(n) if !wanted => {
            let name = transport_name(transport);
            let owners: Vec<&str> = for_transports.iter().map(|t| transport_name(*t)).collect();
            let k = spec.key_node(key).map_or(n.pos, |k| k.pos);
            cx.report(
                "forbidden_field",
                k,
                &path,
                format!("`{path}` is only for `{}` tools; this tool's transport is `{name}`", owners.join("`, `")),
            );
            None
        }
        Some(n) => cx.string(n, &path),
        None => {
            if wanted {
                if let Some(code) = missing_code {
                    cx.report(code, spec.node.pos, &path, format!("{} `{}` tool needs `{path}`", article(transport), transport_name(transport)));
                }
            }
            None
        }
    }
}

fn article(t: Transport) -> &'static str {
    match t {
        Transport::Native | Transport::Code | Transport::Process | Transport::Builtin => "a",
        Transport::Http | Transport::Mcp => "an",
    }
}

fn duration(cx: &mut Checker, node: &Node, path: &str) -> Option<Duration> {
    let text = match &node.value {
        NodeValue::Str(s) => s.clone(),
        NodeValue::Int(i) => i.to_string(),
        NodeValue::Float(f) => f.to_string(),
        _ => {
            cx.report("wrong_type", node.pos, path, format!("`{path}` must be a duration like `30s`, not {}", node.kind()));
            return None;
        }
    };
    let parsed = Duration::parse(&text);
    if parsed.is_none() {
        cx.report(
            "invalid_duration",
            node.pos,
            path,
            format!("`{path}` is `{text}`; write a whole number greater than 0 and a unit: `500ms`, `30s`, `2m` or `1h`"),
        );
    }
    parsed
}

fn parse_limits(node: &Node, cx: &mut Checker) -> CodeLimits {
    let mut limits = CodeLimits::default();
    if let Some(mut m) = cx.map(node, "spec.limits") {
        if let Some(n) = m.get("timeout") {
            if let Some(d) = duration(cx, n, "spec.limits.timeout") {
                limits.timeout = d;
            }
        }
        if let Some(n) = m.get("max_memory_mb") {
            if let Some(v) = cx.positive(n, "spec.limits.max_memory_mb") {
                limits.max_memory_mb = v;
            }
        }
        if let Some(n) = m.get("max_output_bytes") {
            if let Some(v) = cx.positive(n, "spec.limits.max_output_bytes") {
                limits.max_output_bytes = v;
            }
        }
        m.finish(cx);
    }
    limits
}

fn parse_rate_limit(node: &Node, cx: &mut Checker) -> Option<RateLimit> {
    let mut m = cx.map(node, "spec.rate_limit")?;
    let mut rate = |cx: &mut Checker, key: &'static str| -> Option<Rate> {
        let path = format!("spec.rate_limit.{key}");
        let n = m.get(key)?;
        let text = match &n.value {
            NodeValue::Str(s) => s.clone(),
            _ => {
                cx.report("wrong_type", n.pos, &path, format!("`{path}` must be a rate like `10/m`, not {}", n.kind()));
                return None;
            }
        };
        let r = Rate::parse(&text);
        if r.is_none() {
            cx.report(
                "invalid_rate_limit",
                n.pos,
                &path,
                format!("`{path}` is `{text}`; write `<count>/<s|m|h|d>` with a count greater than 0, like `10/m`"),
            );
        }
        r
    };
    let per_principal = rate(cx, "per_principal");
    let per_tenant = rate(cx, "per_tenant");
    m.finish(cx);
    Some(RateLimit { per_principal, per_tenant })
}

fn parse_approval(node: &Node, cx: &mut Checker) -> Option<(Approval, Option<Program>)> {
    let mut m = cx.map(node, "spec.approval")?;
    let (when, when_location) = match m.get("when") {
        None => (Some("true".to_string()), Location::from(node.pos)),
        Some(n) => match &n.value {
            NodeValue::Bool(b) => (Some(b.to_string()), Location::from(n.pos)),
            _ => (cx.string(n, "spec.approval.when"), Location::from(n.pos)),
        },
    };
    let approver_role = cx.opt_string(m.get("approver_role"), "spec.approval.approver_role");
    let by_choices = [("role", ApprovalBy::Role), ("caller", ApprovalBy::Caller)];
    let by = m.get("by").and_then(|n| cx.choice(n, "spec.approval.by", &by_choices)).unwrap_or_default();
    m.finish(cx);
    let program = when.as_deref().and_then(|text| check_condition(cx, text, when_location, "spec.approval.when"));
    let when = when.unwrap_or_default();
    let approval = Approval { when, when_location, approver_role, by };
    Some((approval, program))
}

/// `spec.flow` (issue 23).
#[derive(Default)]
struct Flow {
    sinks: Option<Vec<String>>,
    links: Option<Vec<String>>,
    identifies: BTreeMap<String, String>,
    identifies_when_named: BTreeMap<String, String>,
    links_when_named: BTreeMap<String, String>,
    intent: Option<Vec<String>>,
}

/// `spec.flow`: `sinks`, the argument names that choose where data goes;
/// `links`, the content arguments whose links are checked; `identifies`, the
/// output's values that name valid values of a sink argument; `intent`, the
/// words of a request that asks for what the tool does.
fn parse_flow(node: &Node, cx: &mut Checker) -> Flow {
    let Some(mut m) = cx.map(node, "spec.flow") else { return Flow::default() };
    let sinks = m.get("sinks").and_then(|n| cx.strings(n, "spec.flow.sinks"));
    let links = m.get("links").and_then(|n| cx.strings(n, "spec.flow.links"));
    let identifies = m.get("identifies").map(|n| parse_identifies(n, cx, "spec.flow.identifies")).unwrap_or_default();
    let identifies_when_named =
        m.get("identifies_when_named").map(|n| parse_identifies(n, cx, "spec.flow.identifies_when_named")).unwrap_or_default();
    let links_when_named = m.get("links_when_named").map(|n| parse_identifies(n, cx, "spec.flow.links_when_named")).unwrap_or_default();
    let mut intent = None;
    if let Some(n) = m.get("intent") {
        if let Some(entries) = cx.strings(n, "spec.flow.intent") {
            match super::Intent::compile(&entries) {
                Ok(_) => intent = Some(entries),
                Err(why) => cx.report("invalid_value", n.pos, "spec.flow.intent", why),
            }
        }
    }
    m.finish(cx);
    Flow { sinks, links, identifies, identifies_when_named, links_when_named, intent }
}

/// A map of sink argument → output path (`spec.flow.identifies`,
/// `spec.flow.identifies_when_named`).
fn parse_identifies(n: &Node, cx: &mut Checker, at: &str) -> BTreeMap<String, String> {
    let mut identifies = BTreeMap::new();
    if let Some(mut ids) = cx.map(n, at) {
        for (k, v) in ids.all() {
            let Some(arg) = k.as_str() else {
                cx.report("wrong_type", k.pos, at, "argument names must be strings".to_string());
                continue;
            };
            let path = child_path(at, arg);
            let Some(text) = cx.string(v, &path) else { continue };
            if super::ValuePath::parse(&text).is_none() {
                cx.report(
                    "invalid_value",
                    v.pos,
                    &path,
                    format!("`{path}` must be a path such as `$[*]` or `$[*].sender` (`$`, then `.field` or `[*]`, and last `~` for the keys of an object), not `{text}`"),
                );
                continue;
            }
            identifies.insert(arg.to_string(), text);
        }
    }
    identifies
}

/// `spec.client_capabilities` (issue 22): a list of `sampling`,
/// `elicitation`, `roots`, for mcp tools only (`forbidden_field` on others).
fn parse_client_capabilities(cx: &mut Checker, spec: &mut MapReader<'_>, known: bool, transport: Transport) -> Vec<ClientCapability> {
    const PATH: &str = "spec.client_capabilities";
    let mut out = Vec::new();
    let Some(node) = spec.get("client_capabilities") else { return out };
    if known && transport != Transport::Mcp {
        let at = spec.key_node("client_capabilities").map_or(node.pos, |k| k.pos);
        let message = format!(
            "`{PATH}` is only for `mcp` tools (what their upstream server may ask of the client); this tool's transport is `{}`",
            transport_name(transport)
        );
        cx.report("forbidden_field", at, PATH, message);
        return out;
    }
    cx.list(node, PATH, "a list of `sampling`, `elicitation`, `roots`", |cx, item, path| {
        if let Some(c) = cx.choice(item, path, &ClientCapability::ALL) {
            if out.contains(&c) {
                cx.report("invalid_value", item.pos, path, format!("`{}` is listed twice", c.as_str()));
            } else {
                out.push(c);
            }
        }
    });
    out.sort();
    out
}

fn parse_output(node: Option<&Node>, cx: &mut Checker) -> OutputPolicy {
    let mut out = OutputPolicy { max_bytes: None, sanitize: Vec::new(), label: TrustLabel::Untrusted, content: ContentKinds::Any };
    let Some(node) = node else { return out };
    let Some(mut m) = cx.map(node, "spec.output") else { return out };
    if let Some(n) = m.get("max_bytes") {
        out.max_bytes = cx.positive(n, "spec.output.max_bytes");
    }
    if let Some(n) = m.get("sanitize") {
        let sanitize = &mut out.sanitize;
        cx.list(n, "spec.output.sanitize", "a list", |cx, item, path| {
            if let Some(s) = cx.choice(item, path, &[("pii_redact", Sanitizer::PiiRedact), ("strip_instructions", Sanitizer::StripInstructions)]) {
                if sanitize.contains(&s) {
                    cx.report("invalid_value", item.pos, path, format!("`{}` is listed twice", sanitizer_name(s)));
                } else {
                    sanitize.push(s);
                }
            }
        });
    }
    if let Some(n) = m.get("label") {
        if let Some(l) = cx.choice(n, "spec.output.label", &[("untrusted", TrustLabel::Untrusted), ("trusted", TrustLabel::Trusted)]) {
            out.label = l;
        }
    }
    if let Some(n) = m.get("content") {
        if let Some(c) = cx.choice(n, "spec.output.content", &[("any", ContentKinds::Any), ("text_only", ContentKinds::TextOnly)]) {
            out.content = c;
        }
    }
    m.finish(cx);
    out
}

fn parse_payload_constraints(node: &Node, cx: &mut Checker) -> Option<PayloadConstraints> {
    let mut m = cx.map(node, "spec.payload_constraints")?;
    let mut pc = PayloadConstraints::default();
    for (key, target) in [("input", &mut pc.input), ("output", &mut pc.output)] {
        let path = format!("spec.payload_constraints.{key}");
        let Some(n) = m.get(key) else { continue };
        let Some(mut paths) = cx.map(n, &path) else { continue };
        for (k, v) in paths.all() {
            let Some(p) = k.as_str() else {
                cx.report("wrong_type", k.pos, &path, "constraint paths must be strings".to_string());
                continue;
            };
            let cpath = child_path(&path, p);
            if let Some(c) = parse_constraint(v, cx, &cpath) {
                target.insert(p.to_string(), c);
            }
        }
    }
    m.finish(cx);
    Some(pc)
}

fn parse_constraint(node: &Node, cx: &mut Checker, path: &str) -> Option<Constraint> {
    let mut m = cx.map(node, path)?;
    let mut c = Constraint::default();
    let p = |k: &str| format!("{path}.{k}");
    if let Some(n) = m.get("non_empty") {
        c.non_empty = cx.boolean(n, &p("non_empty"));
    }
    if let Some(n) = m.get("max_length") {
        c.max_length = cx.count(n, &p("max_length"));
    }
    if let Some(n) = m.get("min") {
        c.min = cx.number(n, &p("min"));
    }
    if let Some(n) = m.get("max") {
        c.max = cx.number(n, &p("max"));
    }
    if let Some(n) = m.get("allowed_values") {
        match &n.value {
            NodeValue::Seq(items) => {
                let mut values = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match (&item.value, item.to_json()) {
                        (NodeValue::Seq(_) | NodeValue::Map(_), _) | (_, Err(_)) => cx.report(
                            "wrong_type",
                            item.pos,
                            &format!("{path}.allowed_values[{i}]"),
                            "allowed values must be strings, numbers, booleans or null".to_string(),
                        ),
                        (_, Ok(v)) => values.push(v),
                    }
                }
                c.allowed_values = Some(values);
            }
            _ => cx.report("wrong_type", n.pos, &p("allowed_values"), format!("`{}` must be a list, not {}", p("allowed_values"), n.kind())),
        }
    }
    if let Some(n) = m.get("min_items") {
        c.min_items = cx.count(n, &p("min_items"));
    }
    if let Some(n) = m.get("max_items") {
        c.max_items = cx.count(n, &p("max_items"));
    }
    if let (Some(lo), Some(hi)) = (c.min, c.max) {
        if lo > hi {
            cx.report("invalid_value", node.pos, path, format!("`{path}` has `min` greater than `max`"));
        }
    }
    if let (Some(lo), Some(hi)) = (c.min_items, c.max_items) {
        if lo > hi {
            cx.report("invalid_value", node.pos, path, format!("`{path}` has `min_items` greater than `max_items`"));
        }
    }
    m.finish(cx);
    Some(c)
}
