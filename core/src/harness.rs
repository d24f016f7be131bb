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

/// Whether a rule (or a layer of rules) refuses calls or only records what it would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnforceMode {
    /// Refusals stand (the default).
    Enforce,
    /// What would be refused is recorded (`would_refuse` in audit) and the call proceeds.
    Shadow,
}

impl EnforceMode {
    /// `enforce` or `shadow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enforce => "enforce",
            Self::Shadow => "shadow",
        }
    }
}

/// A layer of policy (`spec.policy.layers[]`; the inline `spec.policy.rules`
/// are the last layer, `harness`). A call must pass every layer, so a lower
/// layer can only narrow what a higher one allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLayer {
    /// The layer's name (`managed`, `project`, …).
    pub name: String,
    /// The layer's mode (its rules' default).
    pub mode: EnforceMode,
    /// Whether a call no allow rule of this layer matches is allowed (default true).
    pub default_allow: bool,
    /// The file the layer came from, relative to harness.yaml (none: inline).
    pub file: Option<String>,
}

/// What a policy example expects of its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExampleExpect {
    /// The rule refuses (deny), or asks for approval (approve), or does not allow (allow rules).
    Refuse,
    /// The rule lets the call through.
    Allow,
}

/// One example call carried by a rule, checked when the harness loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyExample {
    /// What the rule must do with it.
    pub expect: ExampleExpect,
    /// The tool called.
    pub tool: String,
    /// The arguments.
    pub args: serde_json::Value,
    /// The principal (`{id, roles, scopes, attrs}`).
    pub principal: serde_json::Value,
    /// The tenant.
    pub tenant: Option<String>,
    /// Where the example is, for the problem when it fails.
    pub location: manifest::Location,
    /// Its field path.
    pub path: String,
}

/// One rule of a policy layer.
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
    /// Where `when` is.
    pub when_location: manifest::Location,
    /// Index of the layer in [`HarnessSpec::layers`].
    pub layer: usize,
    /// The rule's effective mode (its own, else its layer's).
    pub mode: EnforceMode,
    /// Example calls the rule must decide as stated.
    pub examples: Vec<PolicyExample>,
    /// The file holding the rule, relative to harness.yaml.
    pub file: String,
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
    /// `sqlite:<path>`: events are rows of the `audit` table of that SQLite
    /// file (relative to harness.yaml; may be the state file).
    Sqlite(String),
}

/// `spec.state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateBackend {
    /// In memory (default).
    Memory,
    /// `sqlite:<path>`.
    Sqlite(String),
    /// `redis://…` or `rediss://…` (one server), `redis+cluster://h1:p1,h2:p2`
    /// (Redis Cluster) or `redis+sentinel://s1:p1,s2:p2/<master>` (a
    /// Sentinel-managed primary).
    Redis(String),
}

/// What the governor does with a rate limit when the store cannot be reached
/// (`spec.state_options.rate_limits_on_store_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorMode {
    /// Refuse the call with `store_unavailable` (default).
    Closed,
    /// Skip the rate limit and go on (budgets, labels and approvals still
    /// fail closed).
    Open,
}

/// `spec.state_options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateOptions {
    /// `rate_limits_on_store_error`: `closed` (default) or `open`.
    pub rate_limits_on_store_error: StoreErrorMode,
    /// `run_ttl`: how long a run's labels and budgets are kept after its last
    /// change, in ms (default 24h; Redis expires them, SQLite prunes them).
    pub run_ttl_ms: u64,
    /// `busy_timeout`: how long a SQLite writer waits for the lock, and a
    /// Redis command for its reply, before the store counts as unavailable,
    /// in ms (default 5s).
    pub timeout_ms: u64,
}

impl Default for StateOptions {
    fn default() -> Self {
        Self { rate_limits_on_store_error: StoreErrorMode::Closed, run_ttl_ms: 86_400_000, timeout_ms: 5_000 }
    }
}

/// `url` with any password replaced by `***` (for describe, errors and logs).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                // `redis://secret@host` carries the password alone.
                format!("{scheme}://***@{host}{tail}")
            }
        }
        None => url.to_string(),
    }
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
    /// The policy layers, highest first; the last is `harness` (the inline `spec.policy.rules`).
    pub layers: Vec<PolicyLayer>,
    /// Every layer's rules, in layer order.
    pub rules: Vec<PolicyRule>,
    /// `spec.flow.trifecta`.
    pub trifecta: TrifectaMode,
    /// `spec.budgets`.
    pub budgets: Budgets,
    /// `spec.audit.sink`.
    pub audit_sink: AuditSink,
    /// `spec.state`.
    pub state: StateBackend,
    /// `spec.state_options`.
    pub state_options: StateOptions,
    /// `spec.mcp.servers`.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// `spec.mcp.connect`.
    pub mcp_connect: McpConnect,
    /// `spec.gateway`: the MCP gateway's callers (see docs/gateway.md).
    pub gateway: crate::gateway_spec::GatewaySpec,
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
        // Manifests that share an input schema share its compiled form.
        crate::validate::with_compile_cache(|| Self::load_uncached(path.as_ref(), crate::parallel::parallelism()))
    }

    /// Loads with manifests checked on up to `threads` threads.
    fn load_uncached(given: &Path, threads: usize) -> Result<Harness, Error> {
        let joined;
        let path = if given.is_dir() {
            joined = given.join("harness.yaml");
            joined.as_path()
        } else {
            given
        };
        let file_name = path.file_name().map_or_else(|| "harness.yaml".to_string(), |n| n.to_string_lossy().into_owned());
        let mut cx = Checker::new(Some(file_name.clone()));
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
        let spec = parse_harness(&node, &mut cx, &file_name);
        let mut problems = cx.take_sorted();
        let Some((mut spec, globs, layer_files)) = spec else {
            return Err(Error::Load(manifest::nonempty(problems)));
        };
        for lf in layer_files {
            problems.append(&mut load_layer_file(&dir, &lf, &file_name, &mut spec));
        }
        let myself = path.canonicalize().ok();
        let files = expand_globs(&dir, &globs, &mut cx, myself.as_deref());
        problems.append(&mut cx.take_sorted());

        let mut tools: Vec<Tool> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        // Read, parse and check every manifest (in parallel for many); then,
        // in file order, find duplicate names and collect the problems, so
        // the result is the same as checking the files one after another.
        for checked in crate::parallel::map_in_order(&files, threads, |f| check_manifest_file(&dir, f, &spec)) {
            let CheckedFile { rel, mut mcx, name, tool } = checked;
            let mut duplicate = false;
            // Duplicates are found by the written name, even when the
            // manifest has other problems.
            if let Some((name, pos)) = name {
                if let Some(first) = seen.get(&name) {
                    duplicate = true;
                    let mut dup = Checker::new(Some(rel.clone()));
                    dup.report("duplicate_tool", pos, "metadata.name", format!("tool `{name}` is defined in both `{first}` and `{rel}`"));
                    // Reported before the manifest's own problems, as when checked in turn.
                    dup.problems.append(&mut mcx.problems);
                    mcx.problems = dup.problems;
                } else {
                    seen.insert(name, rel.clone());
                }
            }
            if let Some((t, clean)) = tool {
                if clean && !duplicate {
                    tools.push(t);
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
                json!({
                    "name": r.name, "effect": effect, "tools": r.tools, "when": r.when,
                    "layer": s.layers.get(r.layer).map(|l| l.name.clone()), "mode": r.mode.as_str(),
                    "examples": r.examples.len(), "file": r.file,
                })
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
                TrifectaMode::Off => "off",
            }},
            "budgets": {"max_tool_calls": s.budgets.max_tool_calls, "per_tool": s.budgets.per_tool},
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
        })
    }
}

/// An mcp tool's `server: mcp://NAME` must name a server of `spec.mcp.servers`.
/// One manifest file, read, parsed and checked on its own.
struct CheckedFile {
    /// The file relative to the harness directory.
    rel: String,
    /// Its problems, but not `duplicate_tool` (found afterwards, in file order).
    mcx: Checker,
    /// The written `metadata.name` when it is a valid name, with its position.
    name: Option<(String, Pos)>,
    /// The tool, and whether the manifest had no problem before it was built.
    tool: Option<(Tool, bool)>,
}

/// Reads, parses and checks one manifest file (all but the duplicate check).
fn check_manifest_file(dir: &Path, file: &Path, spec: &HarnessSpec) -> CheckedFile {
    let rel = relative(dir, file);
    let mut mcx = Checker::new(Some(rel.clone()));
    let mut name = None;
    let mut tool = None;
    match std::fs::read_to_string(file) {
        Err(e) => mcx.report("io_error", Pos::default(), "", format!("cannot read `{rel}`: {}", io_reason(&e))),
        Ok(text) => {
            let is_json = file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
            match parse_text(&text, is_json) {
                Err(p) => mcx.extend(p),
                Ok(node) => {
                    let name_node = node.get("metadata").and_then(|m| m.get("name"));
                    if let Some(name_node) = name_node {
                        if let Some(written) = name_node.as_str().filter(|n| manifest::is_valid_name(n)) {
                            name = Some((written.to_string(), name_node.pos));
                        }
                    }
                    if let Some((m, schema_pos)) = parse_manifest(&node, &mut mcx) {
                        check_mcp_server(&m, &node, spec, &mut mcx);
                        let clean = mcx.problems.is_empty();
                        tool = Tool::build(m, Some(rel.clone()), Some(file.to_path_buf()), spec.tools.max_output_bytes, &mut mcx, schema_pos)
                            .map(|t| (t, clean));
                    }
                }
            }
        }
    }
    CheckedFile { rel, mcx, name, tool }
}

fn check_mcp_server(m: &manifest::Manifest, node: &Node, spec: &HarnessSpec, cx: &mut Checker) {
    if m.transport != manifest::Transport::Mcp {
        return;
    }
    let Some(server) = &m.server else { return };
    let known = crate::manifest::mcp_server_name(server).is_some_and(|n| spec.mcp_servers.contains_key(n));
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

/// Reads one policy layer file into `spec`, returning its problems.
fn load_layer_file(dir: &Path, lf: &LayerFile, harness_file: &str, spec: &mut HarnessSpec) -> Vec<Problem> {
    let mut hcx = Checker::new(Some(harness_file.to_string()));
    let target = dir.join(&lf.file);
    let escapes = Path::new(&lf.file).is_absolute() || Path::new(&lf.file).components().any(|c| matches!(c, Component::ParentDir));
    let canonical = target.canonicalize();
    match (&canonical, escapes) {
        (_, true) => hcx.report("path_escape", lf.pos, &lf.path, format!("`{}` must stay inside the harness directory", lf.file)),
        (Ok(c), false) if !c.starts_with(dir) => {
            hcx.report("path_escape", lf.pos, &lf.path, format!("`{}` leads outside the harness directory", lf.file));
        }
        (Err(e), false) => hcx.report("io_error", lf.pos, &lf.path, format!("cannot read `{}`: {}", lf.file, io_reason(e))),
        (Ok(c), false) => {
            let rel = relative(dir, c);
            let mut fcx = Checker::new(Some(rel.clone()));
            match std::fs::read_to_string(c) {
                Err(e) => fcx.report("io_error", Pos::default(), "", format!("cannot read `{rel}`: {}", io_reason(&e))),
                Ok(text) => match parse_text(&text, rel.ends_with(".json")) {
                    Err(p) => fcx.extend(p),
                    Ok(node) => {
                        if let Some(layer) = spec.layers.get_mut(lf.layer) {
                            let mut rules = Vec::new();
                            parse_layer_file(&node, &mut fcx, layer, lf.layer, &rel, &mut rules);
                            // Keep the rules in layer order.
                            let at = spec.rules.iter().position(|r| r.layer > lf.layer).unwrap_or(spec.rules.len());
                            spec.rules.splice(at..at, rules);
                        }
                    }
                },
            }
            return fcx.take_sorted();
        }
    }
    hcx.take_sorted()
}

fn parse_harness(node: &Node, cx: &mut Checker, harness_file: &str) -> Option<(HarnessSpec, Globs, Vec<LayerFile>)> {
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

    let policy = match spec.get("policy") {
        Some(n) => parse_policy(n, cx, harness_file),
        None => ParsedPolicy {
            layers: vec![PolicyLayer { name: "harness".into(), mode: EnforceMode::Enforce, default_allow: true, file: None }],
            ..ParsedPolicy::default()
        },
    };
    let (layers, rules, layer_files) = (policy.layers, policy.rules, policy.files);
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
    let gateway = spec.get("gateway").map(|n| crate::gateway_spec::parse(n, cx)).unwrap_or_default();
    spec.finish(cx);
    let spec =
        HarnessSpec { name, mode, tools, layers, rules, trifecta, budgets, audit_sink, state, state_options, mcp_servers, mcp_connect, gateway };
    Some((spec, globs, layer_files))
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

/// A policy layer whose rules live in another file, read after harness.yaml.
pub(crate) struct LayerFile {
    layer: usize,
    file: String,
    pos: Pos,
    path: String,
}

/// What `spec.policy` holds: the layers, the inline rules, and layer files to read.
#[derive(Default)]
pub(crate) struct ParsedPolicy {
    layers: Vec<PolicyLayer>,
    rules: Vec<PolicyRule>,
    files: Vec<LayerFile>,
}

const MODES: &[(&str, EnforceMode)] = &[("enforce", EnforceMode::Enforce), ("shadow", EnforceMode::Shadow)];
const DEFAULTS: &[(&str, bool)] = &[("allow", true), ("deny", false)];

fn parse_policy(node: &Node, cx: &mut Checker, harness_file: &str) -> ParsedPolicy {
    let mut out = ParsedPolicy::default();
    let Some(mut p) = cx.map(node, "spec.policy") else {
        out.layers.push(PolicyLayer { name: "harness".into(), mode: EnforceMode::Enforce, default_allow: true, file: None });
        return out;
    };
    let mode = p.get("mode").and_then(|n| cx.choice(n, "spec.policy.mode", MODES)).unwrap_or(EnforceMode::Enforce);
    let default_allow = p.get("default").and_then(|n| cx.choice(n, "spec.policy.default", DEFAULTS)).unwrap_or(true);
    if let Some(n) = p.get("layers") {
        match &n.value {
            NodeValue::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("spec.policy.layers[{i}]");
                    let Some(mut l) = cx.map(item, &path) else { continue };
                    let name = l.require(cx, "name").and_then(|n| cx.string(n, &format!("{path}.name")));
                    let lmode = l.get("mode").and_then(|n| cx.choice(n, &format!("{path}.mode"), MODES)).unwrap_or(mode);
                    let ldefault = l.get("default").and_then(|n| cx.choice(n, &format!("{path}.default"), DEFAULTS)).unwrap_or(true);
                    let file = l.get("file").and_then(|n| cx.string(n, &format!("{path}.file")).map(|f| (f, n.pos)));
                    let rules_node = l.get("rules");
                    l.finish(cx);
                    let Some(name) = name else { continue };
                    if name == "harness" || out.layers.iter().any(|x| x.name == name) {
                        cx.report("invalid_value", item.pos, &format!("{path}.name"), format!("policy layer `{name}` is named twice (`harness` is the inline rules)"));
                        continue;
                    }
                    let index = out.layers.len();
                    out.layers.push(PolicyLayer { name, mode: lmode, default_allow: ldefault, file: file.as_ref().map(|(f, _)| f.clone()) });
                    match (file, rules_node) {
                        (Some(_), Some(r)) => cx.report("forbidden_field", r.pos, &format!("{path}.rules"), format!("`{path}` names a `file`; its rules go there")),
                        (Some((file, pos)), None) => out.files.push(LayerFile { layer: index, file, pos, path: format!("{path}.file") }),
                        (None, Some(r)) => parse_rules(r, cx, &format!("{path}.rules"), index, lmode, harness_file, &mut out.rules),
                        (None, None) => {}
                    }
                }
            }
            _ => cx.report("wrong_type", n.pos, "spec.policy.layers", format!("`spec.policy.layers` must be a list, not {}", n.kind())),
        }
    }
    let harness_layer = out.layers.len();
    out.layers.push(PolicyLayer { name: "harness".into(), mode, default_allow, file: None });
    if let Some(n) = p.get("rules") {
        parse_rules(n, cx, "spec.policy.rules", harness_layer, mode, harness_file, &mut out.rules);
    }
    p.finish(cx);
    out
}

/// Reads a layer file (`kind: Policy`, `spec: {mode, default, rules}`);
/// its problems are reported against that file.
fn parse_layer_file(node: &Node, cx: &mut Checker, layer: &mut PolicyLayer, index: usize, file: &str, rules: &mut Vec<PolicyRule>) {
    let Some(mut doc) = cx.map(node, "") else { return };
    check_header(&mut doc, cx, "Policy");
    if let Some(meta) = doc.get("metadata") {
        if let Some(mut m) = cx.map(meta, "metadata") {
            let _ = cx.opt_string(m.get("name"), "metadata.name");
            m.finish(cx);
        }
    }
    let spec = doc.require(cx, "spec");
    doc.finish(cx);
    let Some(mut sp) = spec.and_then(|n| cx.map(n, "spec")) else { return };
    if let Some(m) = sp.get("mode").and_then(|n| cx.choice(n, "spec.mode", MODES)) {
        layer.mode = m;
    }
    if let Some(d) = sp.get("default").and_then(|n| cx.choice(n, "spec.default", DEFAULTS)) {
        layer.default_allow = d;
    }
    if let Some(r) = sp.get("rules") {
        parse_rules(r, cx, "spec.rules", index, layer.mode, file, rules);
    }
    sp.finish(cx);
}

fn parse_rules(n: &Node, cx: &mut Checker, base: &str, layer: usize, layer_mode: EnforceMode, file: &str, rules: &mut Vec<PolicyRule>) {
    let NodeValue::Seq(items) = &n.value else {
        cx.report("wrong_type", n.pos, base, format!("`{base}` must be a list, not {}", n.kind()));
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("{base}[{i}]");
        let Some(mut r) = cx.map(item, &path) else { continue };
        let name = r.require(cx, "name").and_then(|n| cx.string(n, &format!("{path}.name")));
        let effect = r.require(cx, "effect").and_then(|n| {
            cx.choice(n, &format!("{path}.effect"), &[("allow", Effect::Allow), ("deny", Effect::Deny), ("approve", Effect::Approve)])
        });
        let tools = r.get("tools").and_then(|n| cx.strings(n, &format!("{path}.tools"))).unwrap_or_else(|| vec!["*".to_string()]);
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
        let mode = r.get("mode").and_then(|n| cx.choice(n, &format!("{path}.mode"), MODES)).unwrap_or(layer_mode);
        let examples = r.get("examples").map(|n| parse_examples(n, cx, &format!("{path}.examples"))).unwrap_or_default();
        r.finish(cx);
        if let Some(text) = &when {
            manifest::check_condition(cx, text, loc.into(), &format!("{path}.when"));
        }
        let when = when.unwrap_or_default();
        if let (Some(name), Some(effect)) = (name, effect) {
            rules.push(PolicyRule { name, effect, tools, when, when_location: loc.into(), layer, mode, examples, file: file.to_string() });
        }
    }
}

fn parse_examples(node: &Node, cx: &mut Checker, base: &str) -> Vec<PolicyExample> {
    let mut out = Vec::new();
    let Some(mut m) = cx.map(node, base) else { return out };
    for (key, expect) in [("refuse", ExampleExpect::Refuse), ("allow", ExampleExpect::Allow)] {
        let Some(list) = m.get(key) else { continue };
        let NodeValue::Seq(items) = &list.value else {
            cx.report("wrong_type", list.pos, &format!("{base}.{key}"), format!("`{base}.{key}` must be a list of calls"));
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let path = format!("{base}.{key}[{i}]");
            let Some(mut c) = cx.map(item, &path) else { continue };
            let tool = c.require(cx, "tool").and_then(|n| cx.string(n, &format!("{path}.tool")));
            let mut json_of = |field: &str, default: serde_json::Value, cx: &mut Checker| match c.get(field) {
                None => Some(default),
                Some(n) => match n.to_json() {
                    Ok(v) => Some(v),
                    Err((pos, message)) => {
                        cx.report("invalid_value", pos, &format!("{path}.{field}"), message);
                        None
                    }
                },
            };
            let args = json_of("args", serde_json::json!({}), cx);
            let principal = json_of("principal", serde_json::json!({"id": "example"}), cx);
            let tenant = c.get("tenant").and_then(|n| cx.string(n, &format!("{path}.tenant")));
            c.finish(cx);
            if let (Some(tool), Some(args), Some(principal)) = (tool, args, principal) {
                out.push(PolicyExample { expect, tool, args, principal, tenant, location: item.pos.into(), path: path.clone() });
            }
        }
    }
    m.finish(cx);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A harness of `n` manifests, some with problems (syntax, bad fields,
    /// duplicate names, a wrong pin) when `broken`.
    fn write_harness(root: &Path, n: usize, broken: bool) -> PathBuf {
        let _ = std::fs::remove_dir_all(root);
        std::fs::create_dir_all(root.join("tools")).unwrap();
        let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^R-[0-9]+$"}}});
        for i in 0..n {
            // Every 7th broken manifest repeats an earlier one's name.
            let name = if broken && i % 7 == 6 { format!("tool_{:04}", i / 2) } else { format!("tool_{i:04}") };
            let description = format!("Tool number {i}.");
            let digest = crate::digest::definition_digest(&name, &description, &schema).unwrap();
            let digest = if broken && i % 11 == 3 { digest.replace('a', "b").replace('0', "1") } else { digest };
            let risk = if broken && i % 13 == 5 { "extreme" } else { "medium" };
            let mut text = format!(
                "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{ name: {name}, version: 1.0.0, owner: team }}\nspec:\n  definition_digest: \"{digest}\"\n  transport: http\n  url: https://svc.internal/{name}\n  description: {description}\n  input_schema: {schema}\n  side_effect: read\n  risk: {risk}\n  approval: {{ when: \"args.id == 'R-{i}'\" }}\n  timeout: 10s\n"
            );
            if broken && i % 17 == 9 {
                text.push_str("  bogus: [1, 2\n");
            }
            if broken && i % 19 == 4 {
                text.push_str("  approval_extra: 1\n  timeout: 5s\n");
            }
            std::fs::write(root.join("tools").join(format!("m{i:04}.yaml")), text).unwrap();
        }
        let harness = root.join("harness.yaml");
        std::fs::write(&harness, "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: test\n  tools:\n    manifests: [\"tools/*.yaml\"]\n").unwrap();
        harness
    }

    #[test]
    fn manifests_checked_in_parallel_load_as_one_after_another() {
        let root = std::env::temp_dir().join(format!("hw-parallel-load-{}", std::process::id()));
        let n = crate::parallel::PARALLEL_MIN_ITEMS * 2 + 5;
        let clean = write_harness(&root, n, false);
        let one = Harness::load_uncached(&clean, 1).unwrap();
        let many = Harness::load_uncached(&clean, 4).unwrap();
        assert_eq!(one.tools().len(), n);
        let summary = |h: &Harness| h.tools().iter().map(|t| (t.name().to_string(), t.file().map(str::to_string), t.digest().to_string())).collect::<Vec<_>>();
        assert_eq!(summary(&one), summary(&many));

        let broken = write_harness(&root, n, true);
        let one = Harness::load_uncached(&broken, 1).unwrap_err().problems().to_vec();
        let many = Harness::load_uncached(&broken, 3).unwrap_err().problems().to_vec();
        let _ = std::fs::remove_dir_all(&root);
        let codes: HashSet<&str> = one.iter().map(|p| p.code.as_str()).collect();
        assert!(codes.contains("duplicate_tool") && codes.contains("yaml_syntax") && codes.len() >= 4, "{codes:?}");
        assert_eq!(format!("{one:?}"), format!("{many:?}"));
    }
}
