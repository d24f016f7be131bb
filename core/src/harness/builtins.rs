//! `spec.builtins`: the governed built-in tools a harness enables (issue 20),
//! their workspace, and the access rules the gate reads. Model and parsing
//! only; the engine (preparation, the gate, the tools) is `crate::builtins`.

use crate::check::Checker;
use crate::yaml::Node;

/// A built-in tool, by its manifest name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BuiltinTool {
    /// `read_file`.
    ReadFile,
    /// `write_file`.
    WriteFile,
    /// `edit_file`.
    EditFile,
    /// `list_dir`.
    ListDir,
    /// `search_files`.
    SearchFiles,
    /// `run_command`.
    RunCommand,
    /// `fetch`.
    Fetch,
}

impl BuiltinTool {
    /// Every built-in tool with its name, in documentation order.
    pub const ALL: &'static [(&'static str, BuiltinTool)] = &[
        ("read_file", BuiltinTool::ReadFile),
        ("write_file", BuiltinTool::WriteFile),
        ("edit_file", BuiltinTool::EditFile),
        ("list_dir", BuiltinTool::ListDir),
        ("search_files", BuiltinTool::SearchFiles),
        ("run_command", BuiltinTool::RunCommand),
        ("fetch", BuiltinTool::Fetch),
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, t)| *t == self).map_or("", |(n, _)| n)
    }

    /// The tool called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }
}

/// A capability kind a prepared call requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CapabilityKind {
    /// `filesystem.read`.
    FilesystemRead,
    /// `filesystem.write`.
    FilesystemWrite,
    /// `command.execute`.
    CommandExecute,
    /// `network`.
    Network,
}

impl CapabilityKind {
    /// Every kind with its name.
    pub const ALL: &'static [(&'static str, CapabilityKind)] = &[
        ("filesystem.read", CapabilityKind::FilesystemRead),
        ("filesystem.write", CapabilityKind::FilesystemWrite),
        ("command.execute", CapabilityKind::CommandExecute),
        ("network", CapabilityKind::Network),
    ];

    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, k)| *k == self).map_or("", |(n, _)| n)
    }
}

/// What an access rule does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessEffect {
    /// The requirement needs no approval.
    Allow,
    /// The call is refused (authoritative: no allow anywhere outweighs it).
    Deny,
}

/// One access rule (`spec.builtins.access[]`, or an accepted candidate of
/// the permission file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRule {
    /// What a match does.
    pub effect: AccessEffect,
    /// The kind it covers.
    pub kind: CapabilityKind,
    /// Path globs relative to the workspace (`docs/**`) for filesystem kinds.
    pub paths: Vec<String>,
    /// An argv prefix, token by token (`["git", "status"]`), for `command.execute`.
    pub command: Vec<String>,
    /// Origins (`https://docs.rs`) for `network`.
    pub origins: Vec<String>,
    /// Where it came from: `harness` or `permissions`.
    pub source: String,
}

/// `spec.builtins`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuiltinsSpec {
    /// The workspace directory, relative to harness.yaml.
    pub workspace: String,
    /// The tools enabled, in the order written.
    pub tools: Vec<BuiltinTool>,
    /// The access rules, in the order written.
    pub access: Vec<AccessRule>,
    /// Origins `fetch` may reach (`https://host[:port]`).
    pub egress: Vec<String>,
    /// `run_command` may run a compound command through `/bin/sh -c` (every
    /// part still passes the gate). Default false: argv only.
    pub shell: bool,
    /// `run_command` runs only under the OS sandbox: where a mechanism is
    /// missing the call is refused (`sandbox_unavailable`) instead of run
    /// unconfined. Default false: confined whenever the machine can.
    pub sandbox_required: bool,
    /// Absolute directories `read_file`, `list_dir` and `search_files` may read outside the workspace.
    pub host_reads: Vec<String>,
    /// The permission file, relative to harness.yaml (default `permissions.yaml`).
    pub permission_file: String,
}

/// The default permission file name.
pub const DEFAULT_PERMISSION_FILE: &str = "permissions.yaml";

/// Parses `spec.builtins`.
pub(super) fn parse(node: &Node, cx: &mut Checker) -> Option<BuiltinsSpec> {
    let mut b = cx.map(node, "spec.builtins")?;
    let mut spec = BuiltinsSpec { workspace: ".".into(), permission_file: DEFAULT_PERMISSION_FILE.into(), ..BuiltinsSpec::default() };
    if let Some(n) = b.require(cx, "workspace") {
        spec.workspace = cx.string(n, "spec.builtins.workspace").unwrap_or_default();
    }
    if let Some(n) = b.require(cx, "tools") {
        let tools = &mut spec.tools;
        cx.list(n, "spec.builtins.tools", "a list of built-in tool names", |cx, item, path| {
            if let Some(t) = cx.choice(item, path, BuiltinTool::ALL) {
                if !tools.contains(&t) {
                    tools.push(t);
                }
            }
        });
    }
    if let Some(n) = b.get("egress") {
        spec.egress = cx.strings(n, "spec.builtins.egress").unwrap_or_default();
        for origin in &spec.egress {
            if canonical_origin(origin).is_none() {
                cx.report(
                    "invalid_value",
                    n.pos,
                    "spec.builtins.egress",
                    format!("`{origin}` is not an origin (`https://host` or `http://host:port`)"),
                );
            }
        }
    }
    if let Some(n) = b.get("shell") {
        spec.shell = cx.boolean(n, "spec.builtins.shell").unwrap_or(false);
    }
    if let Some(n) = b.get("sandbox") {
        spec.sandbox_required = cx.choice(n, "spec.builtins.sandbox", &[("required", true), ("when_available", false)]).unwrap_or(true);
    }
    if let Some(n) = b.get("host_reads") {
        spec.host_reads = cx.strings(n, "spec.builtins.host_reads").unwrap_or_default();
        if spec.host_reads.iter().any(|p| !p.starts_with('/')) {
            cx.report("invalid_value", n.pos, "spec.builtins.host_reads", "`spec.builtins.host_reads` lists absolute directories".into());
        }
    }
    if let Some(n) = b.get("permission_file") {
        spec.permission_file = cx.string(n, "spec.builtins.permission_file").unwrap_or_else(|| DEFAULT_PERMISSION_FILE.into());
    }
    if let Some(n) = b.get("access") {
        let access = &mut spec.access;
        cx.list(n, "spec.builtins.access", "a list of access rules", |cx, item, path| {
            if let Some(rule) = parse_rule(item, cx, path, "harness") {
                access.push(rule);
            }
        });
    }
    b.finish(cx);
    Some(spec)
}

/// Parses one access rule (`{effect, kind, paths | command | origins}`).
pub(crate) fn parse_rule(node: &Node, cx: &mut Checker, path: &str, source: &str) -> Option<AccessRule> {
    let mut r = cx.map(node, path)?;
    let effect = r
        .require(cx, "effect")
        .and_then(|n| cx.choice(n, &format!("{path}.effect"), &[("allow", AccessEffect::Allow), ("deny", AccessEffect::Deny)]));
    let kind = r.require(cx, "kind").and_then(|n| cx.choice(n, &format!("{path}.kind"), CapabilityKind::ALL));
    let mut rule = AccessRule {
        effect: effect.unwrap_or(AccessEffect::Deny),
        kind: kind.unwrap_or(CapabilityKind::FilesystemRead),
        paths: Vec::new(),
        command: Vec::new(),
        origins: Vec::new(),
        source: source.into(),
    };
    let paths = r.get("paths").and_then(|n| cx.strings(n, &format!("{path}.paths")));
    let command = r.get("command").and_then(|n| cx.strings(n, &format!("{path}.command")));
    let origins = r.get("origins").and_then(|n| cx.strings(n, &format!("{path}.origins")));
    let (Some(effect), Some(kind)) = (effect, kind) else {
        r.finish(cx);
        return None;
    };
    rule.effect = effect;
    rule.kind = kind;
    let node_pos = node.pos;
    let wrong = |cx: &mut Checker, field: &str| {
        cx.report("invalid_value", node_pos, path, format!("`{path}`: a `{}` rule takes `{field}`", kind.as_str()));
    };
    match kind {
        CapabilityKind::FilesystemRead | CapabilityKind::FilesystemWrite => match paths {
            Some(p) if !p.is_empty() && command.is_none() && origins.is_none() => rule.paths = p,
            _ => wrong(cx, "paths"),
        },
        CapabilityKind::CommandExecute => match command {
            Some(c) if !c.is_empty() && paths.is_none() && origins.is_none() => rule.command = c,
            _ => wrong(cx, "command"),
        },
        CapabilityKind::Network => match origins {
            Some(o) if !o.is_empty() && paths.is_none() && command.is_none() => {
                if let Some(bad) = o.iter().find(|o| canonical_origin(o).is_none()) {
                    cx.report("invalid_value", node_pos, path, format!("`{path}`: `{bad}` is not an origin"));
                }
                rule.origins = o;
            }
            _ => wrong(cx, "origins"),
        },
    }
    r.finish(cx);
    Some(rule)
}

/// `scheme://host:port` (lowercase, the scheme's default port written out)
/// of an http or https URL or origin; `None` for any other scheme or a URL
/// with credentials.
pub fn canonical_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        let (h, after) = stripped.split_once(']')?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':')) {
        return None;
    }
    let port: u16 = match port {
        None | Some("") => default_port,
        Some(p) => p.parse().ok()?,
    };
    Some(format!("{scheme}://{}:{port}", host.to_ascii_lowercase()))
}

/// The shipped manifest of each built-in tool (pinned: a change to a name,
/// description or schema without a new digest fails the load).
const MANIFESTS: &[(BuiltinTool, &str)] = &[
    (BuiltinTool::ReadFile, include_str!("builtin_manifests/read_file.json")),
    (BuiltinTool::WriteFile, include_str!("builtin_manifests/write_file.json")),
    (BuiltinTool::EditFile, include_str!("builtin_manifests/edit_file.json")),
    (BuiltinTool::ListDir, include_str!("builtin_manifests/list_dir.json")),
    (BuiltinTool::SearchFiles, include_str!("builtin_manifests/search_files.json")),
    (BuiltinTool::RunCommand, include_str!("builtin_manifests/run_command.json")),
    (BuiltinTool::Fetch, include_str!("builtin_manifests/fetch.json")),
];

/// The tools `spec.builtins` enables, from their shipped manifests, and the
/// problems of the section that need the harness directory (a workspace
/// that is not a directory).
pub(super) fn shipped_tools(
    spec: &BuiltinsSpec,
    dir: &std::path::Path,
    max_output_bytes: u64,
) -> (Vec<crate::manifest::Tool>, Vec<crate::error::Problem>) {
    let mut problems = Vec::new();
    let problem = |code: &str, path: &str, message: String| crate::error::Problem {
        path: path.into(),
        file: Some("harness.yaml".into()),
        ..crate::error::Problem::new(code, message)
    };
    if !dir.join(&spec.workspace).is_dir() {
        problems.push(problem(
            "path_not_found",
            "spec.builtins.workspace",
            format!("`spec.builtins.workspace` `{}` is not a directory", spec.workspace),
        ));
    }
    let mut tools = Vec::new();
    for (tool, text) in MANIFESTS.iter().filter(|(t, _)| spec.tools.contains(t)) {
        let origin = format!("builtin:{}", tool.name());
        match crate::manifest::Tool::from_manifest_text(text, &origin) {
            Ok(t) if t.pin() == crate::manifest::PinState::Pinned => {
                let egress = if *tool == BuiltinTool::Fetch { spec.egress.clone() } else { Vec::new() };
                tools.push(t.into_builtin(egress, max_output_bytes));
            }
            Ok(_) => {
                problems.push(problem("invalid_digest", "spec.builtins.tools", format!("the shipped manifest of `{}` is not pinned", tool.name())))
            }
            Err(e) => problems.push(problem(
                "invalid_value",
                "spec.builtins.tools",
                format!("the shipped manifest of `{}` does not load: {e}", tool.name()),
            )),
        }
    }
    (tools, problems)
}
