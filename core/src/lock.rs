//! `harness.lock` (issue 21): what was reviewed, tool by tool, so that a
//! change since can be seen. For every tool it records the definition digest,
//! the manifest file's digest and the **code identity** of its handler: for a
//! process tool the command's and its script files' SHA-256, for an MCP tool
//! the server's command or URL and the pinned definition, for an http tool its
//! URL, for a code tool its sandbox; the host adds what only it can see (a
//! Python module file and its distribution's name, version and RECORD hash; a
//! Node module file and its package version; the sandbox worker's digest).
//!
//! The lock grants nothing; it only verifies. [`compare`] reports drift per
//! tool: a handler whose code changed since review is a rug pull the
//! definition digest cannot see.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::digest::sha256_tagged;
use crate::harness::{Harness, McpServer};
use crate::manifest::{self, Tool, Transport};

/// The lock's file name, beside harness.yaml.
pub const LOCK_FILE: &str = "harness.lock";

/// The version of the lock's format.
pub const LOCK_VERSION: u32 = 1;

/// One tool as reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolLock {
    /// `sha256:` of `{name, description, input_schema}`.
    pub definition_digest: String,
    /// The manifest file, relative to harness.yaml (none: a tool registered in code).
    pub manifest_file: Option<String>,
    /// `sha256:` of the manifest file's bytes.
    pub manifest_digest: Option<String>,
    /// `native`, `http`, `code`, `mcp` or `process`.
    pub transport: String,
    /// The handler's code identity: named facts (`command_sha256`,
    /// `module_sha256`, `distribution`, `version`, `record_sha256`, …).
    pub code: BTreeMap<String, String>,
}

/// `harness.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockFile {
    /// [`LOCK_VERSION`].
    pub lock_version: u32,
    /// Every tool, by name.
    pub tools: BTreeMap<String, ToolLock>,
}

/// One difference between the lock and what is there now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// The tool.
    pub tool: String,
    /// What differs: `tool` (added or removed), `definition_digest`,
    /// `manifest_digest`, `transport` or `code.<fact>`.
    pub field: String,
    /// What the lock holds (none: absent).
    pub locked: Option<String>,
    /// What is there now (none: absent).
    pub now: Option<String>,
}

impl Drift {
    /// One line for people.
    pub fn to_text(&self) -> String {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        match self.field.as_str() {
            "tool" if self.locked.is_none() => format!("{}: not in the lock (added since it was written)", self.tool),
            "tool" => format!("{}: in the lock but gone", self.tool),
            _ => format!("{}: {} changed: locked {}, now {}", self.tool, self.field, show(&self.locked), show(&self.now)),
        }
    }
}

/// `sha256:` of a file's bytes, or none when it cannot be read.
pub fn file_digest(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| sha256_tagged(&b))
}

/// What the core can see of a tool's code without running anything.
pub fn core_identity(harness: &Harness, tool: &Tool) -> BTreeMap<String, String> {
    let m = tool.manifest();
    let mut code = BTreeMap::new();
    match m.transport {
        Transport::Native => {
            code.insert("handler".into(), m.handler.clone().unwrap_or_default());
        }
        Transport::Http => {
            code.insert("url".into(), m.url.clone().unwrap_or_default());
        }
        Transport::Code => {
            code.insert("sandbox".into(), m.sandbox.clone().unwrap_or_default());
        }
        Transport::Mcp => {
            let server = m.server.as_deref().and_then(manifest::mcp_server_name).and_then(|n| harness.spec().mcp_servers.get(n));
            let text = match server {
                Some(McpServer::Command { command, args, .. }) => format!("{command} {}", args.join(" ")),
                Some(McpServer::Url { url, .. }) => url.clone(),
                None => m.server.clone().unwrap_or_default(),
            };
            code.insert("server".into(), text);
            code.insert("pinned_definition".into(), m.definition_digest.clone().unwrap_or_default());
        }
        Transport::Builtin => {
            // A built-in tool's code is the core's own (issue 20).
            code.insert("builtin".into(), format!("harnessweaver-core {}", env!("CARGO_PKG_VERSION")));
        }
        Transport::Process => {
            if let Some(resolved) = m.process.as_ref().and_then(|p| p.resolved.as_ref()) {
                code.insert("command".into(), resolved.command.to_string_lossy().into_owned());
                code.insert("command_sha256".into(), file_digest(&resolved.command).unwrap_or_default());
                for f in &resolved.arg_files {
                    let shown = f.strip_prefix(harness.dir()).unwrap_or(f).to_string_lossy().into_owned();
                    code.insert(format!("file:{shown}"), file_digest(f).unwrap_or_default());
                }
            }
        }
    }
    code
}

/// The lock of `harness` as it is now; `host` adds the facts only the host
/// can see to each tool's code identity.
pub fn current(harness: &Harness, mut host: impl FnMut(&Tool) -> BTreeMap<String, String>) -> LockFile {
    let tools = harness
        .tools()
        .iter()
        .map(|t| {
            let mut code = core_identity(harness, t);
            code.extend(host(t));
            let file = t.file().map(str::to_string);
            let manifest_digest = t.path().and_then(file_digest);
            let lock = ToolLock {
                definition_digest: t.digest().to_string(),
                manifest_file: file,
                manifest_digest,
                transport: manifest::transport_name(t.manifest().transport).to_string(),
                code,
            };
            (t.name().to_string(), lock)
        })
        .collect();
    LockFile { lock_version: LOCK_VERSION, tools }
}

/// Every difference between `locked` and `now`, tool by tool, field by field.
/// A code fact the lock does not record is not drift when it is new (a
/// newer host that sees more), but a recorded fact that is gone or changed is.
pub fn compare(locked: &LockFile, now: &LockFile) -> Vec<Drift> {
    let mut out = Vec::new();
    let drift = |tool: &str, field: &str, locked: Option<&String>, now: Option<&String>| Drift {
        tool: tool.to_string(),
        field: field.to_string(),
        locked: locked.cloned(),
        now: now.cloned(),
    };
    for (name, l) in &locked.tools {
        let Some(n) = now.tools.get(name) else {
            out.push(drift(name, "tool", Some(name), None));
            continue;
        };
        if l.definition_digest != n.definition_digest {
            out.push(drift(name, "definition_digest", Some(&l.definition_digest), Some(&n.definition_digest)));
        }
        if l.manifest_digest != n.manifest_digest {
            out.push(drift(name, "manifest_digest", l.manifest_digest.as_ref(), n.manifest_digest.as_ref()));
        }
        if l.transport != n.transport {
            out.push(drift(name, "transport", Some(&l.transport), Some(&n.transport)));
        }
        for (fact, value) in &l.code {
            if n.code.get(fact) != Some(value) {
                out.push(drift(name, &format!("code.{fact}"), Some(value), n.code.get(fact)));
            }
        }
    }
    for name in now.tools.keys().filter(|n| !locked.tools.contains_key(*n)) {
        out.push(drift(name, "tool", None, Some(name)));
    }
    out
}

/// `spec.tools.require_lock: true` (checked when a harness is compiled):
/// every tool matches `harness.lock` in what the core can see (definition,
/// manifest file, transport and the core's code facts; the host's facts are
/// checked by `harnessweaver lock verify` and `doctor`). One `lock_drift`
/// problem per difference, or one when there is no lock.
pub fn check_required(harness: &Harness) -> Vec<crate::error::Problem> {
    use crate::error::Problem;
    if !harness.spec().tools.require_lock {
        return Vec::new();
    }
    let problem =
        |message: String| Problem { file: Some(LOCK_FILE.into()), path: "spec.tools.require_lock".into(), ..Problem::new("lock_drift", message) };
    let locked = match read(harness) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return vec![problem(format!("`spec.tools.require_lock` is true and there is no `{LOCK_FILE}`; write one with `harnessweaver lock`"))]
        }
        Err(e) => return vec![problem(e)],
    };
    let now = current(harness, |_| BTreeMap::new());
    let mut seen = locked.clone();
    for (name, t) in &mut seen.tools {
        if let Some(n) = now.tools.get(name) {
            t.code.retain(|fact, _| n.code.contains_key(fact) || fact.starts_with("file:") || fact == "command_sha256");
        }
    }
    compare(&seen, &now)
        .iter()
        .map(|d| problem(format!("{} (since `{LOCK_FILE}` was written; review it and run `harnessweaver lock`)", d.to_text())))
        .collect()
}

/// Reads `harness.lock` beside harness.yaml: none when there is no lock.
pub fn read(harness: &Harness) -> Result<Option<LockFile>, String> {
    let path = harness.dir().join(LOCK_FILE);
    match std::fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read `{LOCK_FILE}`: {e}")),
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| format!("`{LOCK_FILE}` is not a lock file: {e}")),
    }
}

/// The lock's text: pretty JSON, keys sorted (tools and facts are maps).
pub fn to_text(lock: &LockFile) -> String {
    serde_json::to_string_pretty(lock).unwrap_or_default() + "\n"
}
