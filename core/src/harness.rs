//! The harness (`harness.yaml`, `kind: Harness`) and loading it with its
//! manifests. Every problem in the harness file and in every manifest is
//! collected before the load fails, each with its file (relative to the
//! harness directory, `/` separators), line, column and field path.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use crate::check::{child_path, Checker, MapReader};
use crate::error::{Error, Problem};
use crate::manifest::{self, check_header, parse_manifest, parse_text, Risk, Tool, DEFAULT_MAX_OUTPUT_BYTES, RISKS};
use crate::yaml::{Node, NodeValue, Pos};

/// `spec.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The default.
    Production,
    /// Test mode: the http transport refuses to call out (R14).
    Test,
}

/// `spec.tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsSettings {
    /// Globs relative to harness.yaml naming the manifest files.
    pub manifests: Vec<String>,
    /// Every tool, including tools registered in code, needs a manifest (default true).
    pub require_manifest: bool,
    /// The default `output.max_bytes` (default 100000).
    pub max_output_bytes: u64,
    /// Risks whose calls always need approval.
    pub approval_by_risk: Vec<Risk>,
}

/// The effect of a policy rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Allow the call.
    Allow,
    /// Refuse the call (authoritative).
    Deny,
    /// Send the call to approval.
    Approve,
}

/// One rule of `spec.policy.rules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// The rule's name (in decisions and audit events).
    pub name: String,
    /// What a match does.
    pub effect: Effect,
    /// Tool name globs the rule covers (default: all, `*`).
    pub tools: Vec<String>,
    /// A cel-lite condition (default `true`), compiled by cel-lite.
    pub when: String,
    /// Where `when` is in harness.yaml.
    pub when_location: manifest::Location,
}

/// `spec.flow.trifecta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrifectaMode {
    /// Refuse the call (default).
    Block,
    /// Send it to approval.
    Approve,
    /// No check.
    Off,
}

/// `spec.budgets`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budgets {
    /// Tool calls allowed per run.
    pub max_tool_calls: Option<u64>,
    /// Calls allowed per run, by tool name.
    pub per_tool: BTreeMap<String, u64>,
}

/// `spec.audit.sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSink {
    /// No audit trail (default).
    None,
    /// Events go to a host callback.
    Callback,
    /// Events are appended to a JSON Lines file (relative to harness.yaml).
    Jsonl(String),
}

/// `spec.state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateBackend {
    /// In memory (default).
    Memory,
    /// `sqlite:<path>`.
    Sqlite(String),
    /// `redis://…` or `rediss://…`.
    Redis(String),
}

/// One MCP server of `spec.mcp.servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServer {
    /// A server started as a process speaking stdio.
    Command {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables for it: name to the name of the variable holding the value.
        env: BTreeMap<String, String>,
    },
    /// A server reached over HTTP.
    Url {
        /// Where.
        url: String,
        /// Header name to environment variable name.
        headers_env: BTreeMap<String, String>,
    },
}

/// `spec.mcp.connect`: when the MCP servers of mcp tools are connected and
/// their served definitions checked against the manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpConnect {
    /// When the harness loads (default): an unreachable server is a load error.
    #[default]
    Eager,
    /// At the first call of one of the server's tools.
    Lazy,
}

/// The harness file's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessSpec {
    /// `metadata.name`, when given.
    pub name: Option<String>,
    /// `spec.mode`.
    pub mode: Mode,
    /// `spec.tools`.
    pub tools: ToolsSettings,
    /// `spec.policy.rules`.
    pub rules: Vec<PolicyRule>,
    /// `spec.flow.trifecta`.
    pub trifecta: TrifectaMode,
    /// `spec.budgets`.
    pub budgets: Budgets,
    /// `spec.audit.sink`.
    pub audit_sink: AuditSink,
    /// `spec.state`.
    pub state: StateBackend,
    /// `spec.mcp.servers`.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// `spec.mcp.connect`.
    pub mcp_connect: McpConnect,
}

/// A loaded harness: its settings and every tool's manifest.
#[derive(Debug, Clone)]
pub struct Harness {
    spec: HarnessSpec,
    dir: PathBuf,
    tools: Vec<Tool>,
}

/// The file name of `path` relative to `base`, with `/` separators.
fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

impl Harness {
    /// Loads `harness.yaml` and every manifest it names, reporting every problem at once.
    /// A directory stands for the `harness.yaml` inside it.
    pub fn load(path: impl AsRef<Path>) -> Result<Harness, Error> {
        let given = path.as_ref();
        let joined;
        let path = if given.is_dir() {
            joined = given.join("harness.yaml");
            joined.as_path()
        } else {
            given
        };
        let file_name = path.file_name().map_or_else(|| "harness.yaml".to_string(), |n| n.to_string_lossy().into_owned());
        let mut cx = Checker::new(Some(file_name));
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                cx.report("io_error", Pos::default(), "", format!("cannot read `{}`: {}", path.display(), io_reason(&e)));
                return Err(Error::Load(cx.problems));
            }
        };
        let dir = match path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }).map(Path::canonicalize) {
            Some(Ok(d)) => d,
            _ => {
                cx.report("io_error", Pos::default(), "", format!("cannot resolve the directory of `{}`", path.display()));
                return Err(Error::Load(cx.problems));
            }
        };
        let node = match manifest::parse_text(&text, false) {
            Ok(n) => n,
            Err(problems) => {
                cx.extend(problems);
                return Err(Error::Load(cx.problems));
            }
        };
        let spec = parse_harness(&node, &mut cx);
        let mut problems = cx.take_sorted();
        let Some((spec, globs)) = spec else {
            return Err(Error::Load(manifest::nonempty(problems)));
        };
        let myself = path.canonicalize().ok();
        let files = expand_globs(&dir, &globs, &mut cx, myself.as_deref());
        problems.append(&mut cx.take_sorted());

        let mut tools: Vec<Tool> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        for file in files {
            let rel = relative(&dir, &file);
            let mut mcx = Checker::new(Some(rel.clone()));
            match std::fs::read_to_string(&file) {
                Err(e) => mcx.report("io_error", Pos::default(), "", format!("cannot read `{rel}`: {}", io_reason(&e))),
                Ok(text) => {
                    let is_json = file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
                    match parse_text(&text, is_json) {
                        Err(p) => mcx.extend(p),
                        Ok(node) => {
                            // Duplicates are found by the written name, even
                            // when the manifest has other problems.
                            let name_node = node.get("metadata").and_then(|m| m.get("name"));
                            let written = name_node.and_then(Node::as_str).filter(|n| manifest::is_valid_name(n));
                            let mut duplicate = false;
                            if let (Some(name), Some(name_node)) = (written, name_node) {
                                if let Some(first) = seen.get(name) {
                                    duplicate = true;
                                    mcx.report(
                                        "duplicate_tool",
                                        name_node.pos,
                                        "metadata.name",
                                        format!("tool `{name}` is defined in both `{first}` and `{rel}`"),
                                    );
                                } else {
                                    seen.insert(name.to_string(), rel.clone());
                                }
                            }
                            if let Some((m, schema_pos)) = parse_manifest(&node, &mut mcx) {
                                check_mcp_server(&m, &node, &spec, &mut mcx);
                                let clean = mcx.problems.is_empty() && !duplicate;
                                if let Some(t) = Tool::build(
                                    m,
                                    Some(rel.clone()),
                                    Some(file.clone()),
                                    spec.tools.max_output_bytes,
                                    &mut mcx,
                                    schema_pos,
                                ) {
                                    if clean {
                                        tools.push(t);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            problems.append(&mut mcx.take_sorted());
        }
        if !problems.is_empty() {
            return Err(Error::Load(problems));
        }
        Ok(Harness { spec, dir, tools })
    }

    /// The tools, in the order their manifests were found.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The harness file's settings.
    pub fn spec(&self) -> &HarnessSpec {
        &self.spec
    }

    /// The directory holding harness.yaml (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The harness settings as one JSON object, defaults filled in (the
    /// tools are not included: see [`Tool::describe`]).
    pub fn describe(&self) -> serde_json::Value {
        use serde_json::json;
        let s = &self.spec;
        let rules: Vec<serde_json::Value> = s
            .rules
            .iter()
            .map(|r| {
                let effect = match r.effect {
                    Effect::Allow => "allow",
                    Effect::Deny => "deny",
                    Effect::Approve => "approve",
                };
                json!({"name": r.name, "effect": effect, "tools": r.tools, "when": r.when})
            })
            .collect();
        let servers: serde_json::Map<String, serde_json::Value> = s
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
        json!({
            "name": s.name,
            "mode": match s.mode { Mode::Production => "production", Mode::Test => "test" },
            "tools": {
                "manifests": s.tools.manifests,
                "require_manifest": s.tools.require_manifest,
                "max_output_bytes": s.tools.max_output_bytes,
                "approval_by_risk": s.tools.approval_by_risk.iter().map(|r| manifest::risk_name(*r)).collect::<Vec<_>>(),
            },
            "policy": {"rules": rules},
            "flow": {"trifecta": match s.trifecta {
                TrifectaMode::Block => "block",
                TrifectaMode::Approve => "approve",
                TrifectaMode::Off => "off",
            }},
            "budgets": {"max_tool_calls": s.budgets.max_tool_calls, "per_tool": s.budgets.per_tool},
            "audit": {"sink": match &s.audit_sink {
                AuditSink::None => "none".to_string(),
                AuditSink::Callback => "callback".to_string(),
                AuditSink::Jsonl(path) => path.clone(),
            }},
            "state": match &s.state {
                StateBackend::Memory => "memory".to_string(),
                StateBackend::Sqlite(path) => format!("sqlite:{path}"),
                StateBackend::Redis(url) => url.clone(),
            },
            "mcp": {"connect": match s.mcp_connect { McpConnect::Eager => "eager", McpConnect::Lazy => "lazy" }, "servers": servers},
        })
    }
}

/// An mcp tool's `server: mcp://NAME` must name a server of `spec.mcp.servers`.
fn check_mcp_server(m: &manifest::Manifest, node: &Node, spec: &HarnessSpec, cx: &mut Checker) {
    if m.transport != manifest::Transport::Mcp {
        return;
    }
    let Some(server) = &m.server else { return };
    let known = crate::transport::mcp::server_name(server).is_some_and(|n| spec.mcp_servers.contains_key(n));
    if !known {
        let pos = node.get("spec").and_then(|s| s.get("server")).map_or(node.pos, |n| n.pos);
        let declared: Vec<&str> = spec.mcp_servers.keys().map(String::as_str).collect();
        let hint = if declared.is_empty() { "none is declared".to_string() } else { format!("declared: `{}`", declared.join("`, `")) };
        cx.report("unknown_mcp_server", pos, "spec.server", format!("`{server}` names no server of `spec.mcp.servers` in harness.yaml ({hint})"));
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string().to_lowercase(),
    }
}

/// Expands the manifest globs; each match must stay inside `dir` after
/// symlinks are resolved. Returns canonical file paths, each once, in glob
/// order, leaving out the harness file itself.
fn expand_globs(dir: &Path, globs: &[(String, Pos, String)], cx: &mut Checker, harness: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut seen = HashSet::new();
    for (pattern, pos, path) in globs {
        let p = Path::new(pattern);
        if p.is_absolute() || p.components().any(|c| matches!(c, Component::Prefix(_) | Component::RootDir)) {
            cx.report("path_escape", *pos, path, format!("`{pattern}` must be relative to the harness directory"));
            continue;
        }
        let escaped_full = glob::Pattern::escape(&dir.to_string_lossy());
        let query = format!("{escaped_full}/{pattern}");
        let entries = match glob::glob_with(&query, glob::MatchOptions { require_literal_leading_dot: true, ..Default::default() }) {
            Ok(e) => e,
            Err(e) => {
                cx.report("invalid_value", *pos, path, format!("`{pattern}` is not a valid glob: {}", e.msg));
                continue;
            }
        };
        let mut matched = 0usize;
        let mut escaped = false;
        for entry in entries {
            let Ok(found) = entry else { continue };
            let canonical = match found.canonicalize() {
                Ok(c) => c,
                Err(_) => continue,
            };
            if !canonical.starts_with(dir) {
                if !escaped {
                    let shown = relative(dir, &found);
                    let how = if found.is_symlink() { "a link that leads" } else { "a file" };
                    cx.report(
                        "path_escape",
                        *pos,
                        path,
                        format!("`{pattern}` matches `{shown}`, {how} outside the harness directory"),
                    );
                }
                escaped = true;
                continue;
            }
            // Directories are not manifests, and `*.yaml` beside harness.yaml
            // should not read harness.yaml as a tool.
            if !canonical.is_file() || Some(canonical.as_path()) == harness {
                continue;
            }
            matched += 1;
            if seen.insert(canonical.clone()) {
                files.push(canonical);
            }
        }
        if matched == 0 && !escaped {
            cx.report("glob_no_match", *pos, path, format!("`{pattern}` matches no manifest file"));
        }
    }
    files
}

type Globs = Vec<(String, Pos, String)>;

fn parse_harness(node: &Node, cx: &mut Checker) -> Option<(HarnessSpec, Globs)> {
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
        max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        approval_by_risk: Vec::new(),
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
            if let Some(n) = t.get("max_output_bytes") {
                tools.max_output_bytes = cx.positive(n, "spec.tools.max_output_bytes").unwrap_or(DEFAULT_MAX_OUTPUT_BYTES);
            }
            if let Some(n) = t.get("approval_by_risk") {
                match &n.value {
                    NodeValue::Seq(items) => {
                        for (i, item) in items.iter().enumerate() {
                            if let Some(r) = cx.choice(item, &format!("spec.tools.approval_by_risk[{i}]"), RISKS) {
                                if !tools.approval_by_risk.contains(&r) {
                                    tools.approval_by_risk.push(r);
                                }
                            }
                        }
                    }
                    _ => cx.report(
                        "wrong_type",
                        n.pos,
                        "spec.tools.approval_by_risk",
                        format!("`spec.tools.approval_by_risk` must be a list of risks, not {}", n.kind()),
                    ),
                }
            }
            t.finish(cx);
        }
    }

    let rules = spec.get("policy").map(|n| parse_policy(n, cx)).unwrap_or_default();
    let mut trifecta = TrifectaMode::Block;
    if let Some(n) = spec.get("flow") {
        if let Some(mut f) = cx.map(n, "spec.flow") {
            if let Some(t) = f.get("trifecta") {
                trifecta = cx
                    .choice(
                        t,
                        "spec.flow.trifecta",
                        &[("block", TrifectaMode::Block), ("approve", TrifectaMode::Approve), ("off", TrifectaMode::Off)],
                    )
                    .unwrap_or(TrifectaMode::Block);
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
    let mut audit_sink = AuditSink::None;
    if let Some(n) = spec.get("audit") {
        if let Some(mut a) = cx.map(n, "spec.audit") {
            if let Some(s) = a.get("sink") {
                if let Some(text) = cx.string(s, "spec.audit.sink") {
                    audit_sink = match text.as_str() {
                        "none" => AuditSink::None,
                        "callback" => AuditSink::Callback,
                        "" => {
                            cx.report("invalid_value", s.pos, "spec.audit.sink", "`spec.audit.sink` is empty".to_string());
                            AuditSink::None
                        }
                        path => AuditSink::Jsonl(path.to_string()),
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
            } else if text.starts_with("redis://") || text.starts_with("rediss://") {
                StateBackend::Redis(text)
            } else {
                cx.report(
                    "invalid_value",
                    n.pos,
                    "spec.state",
                    format!("`spec.state` is `{text}`; expected `memory`, `sqlite:<path>` or `redis://…`"),
                );
                StateBackend::Memory
            };
        }
    }
    let (mcp_servers, mcp_connect) = spec.get("mcp").map(|n| parse_mcp(n, cx)).unwrap_or_default();
    spec.finish(cx);
    let spec = HarnessSpec { name, mode, tools, rules, trifecta, budgets, audit_sink, state, mcp_servers, mcp_connect };
    Some((spec, globs))
}

fn parse_policy(node: &Node, cx: &mut Checker) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    let Some(mut p) = cx.map(node, "spec.policy") else { return rules };
    if let Some(n) = p.get("rules") {
        match &n.value {
            NodeValue::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("spec.policy.rules[{i}]");
                    let Some(mut r) = cx.map(item, &path) else { continue };
                    let name = r.require(cx, "name").and_then(|n| cx.string(n, &format!("{path}.name")));
                    let effect = r.require(cx, "effect").and_then(|n| {
                        cx.choice(
                            n,
                            &format!("{path}.effect"),
                            &[("allow", Effect::Allow), ("deny", Effect::Deny), ("approve", Effect::Approve)],
                        )
                    });
                    let tools = r
                        .get("tools")
                        .and_then(|n| cx.strings(n, &format!("{path}.tools")))
                        .unwrap_or_else(|| vec!["*".to_string()]);
                    for t in &tools {
                        if glob::Pattern::new(t).is_err() {
                            let pos = r.get("tools").map_or(item.pos, |n| n.pos);
                            cx.report("invalid_value", pos, &format!("{path}.tools"), format!("`{t}` is not a valid glob"));
                        }
                    }
                    let (when, loc) = match r.get("when") {
                        None => (Some("true".to_string()), item.pos),
                        Some(n) => match n.value {
                            NodeValue::Bool(b) => (Some(b.to_string()), n.pos),
                            _ => (cx.string(n, &format!("{path}.when")), n.pos),
                        },
                    };
                    r.finish(cx);
                    if let Some(text) = &when {
                        manifest::check_condition(cx, text, loc.into(), &format!("{path}.when"));
                    }
                    let when = when.unwrap_or_default();
                    if let (Some(name), Some(effect)) = (name, effect) {
                        rules.push(PolicyRule { name, effect, tools, when, when_location: loc.into() });
                    }
                }
            }
            _ => cx.report(
                "wrong_type",
                n.pos,
                "spec.policy.rules",
                format!("`spec.policy.rules` must be a list, not {}", n.kind()),
            ),
        }
    }
    p.finish(cx);
    rules
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

/// Loads a harness and returns its problems, never failing: for tools.
pub fn problems_of(path: &Path) -> Vec<Problem> {
    match Harness::load(path) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems().to_vec(),
    }
}
