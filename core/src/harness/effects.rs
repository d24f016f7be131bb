//! `spec.effects` (the effect journal and whether contracts are required),
//! `spec.secrets` (handles to sources) and `spec.secret_scopes` (which
//! principals may use which handles) of harness.yaml (issue 21).

use std::collections::BTreeMap;

use super::model::redact_url;
use crate::check::{child_path, Checker};
use crate::manifest::is_handle_name;
use crate::yaml::{Node, NodeValue};

/// Where the effect journal lives (`spec.effects.journal`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum JournalBackend {
    /// In memory (default): survives no crash; for tests and single processes.
    #[default]
    Memory,
    /// `sqlite:<path>`, relative to harness.yaml: survives a crash of any process of the host.
    Sqlite(String),
    /// `redis://…`: shared by several hosts.
    Redis(String),
}

/// `spec.effects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectsSettings {
    /// `require_contract` (default true): a tool that writes outside without
    /// `spec.effect` does not load (`effect_contract_missing`).
    pub require_contract: bool,
    /// `journal`.
    pub journal: JournalBackend,
}

impl Default for EffectsSettings {
    fn default() -> Self {
        Self { require_contract: true, journal: JournalBackend::Memory }
    }
}

/// Where a secret handle's value comes from (`spec.secrets.<NAME>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// `{env: VAR}`: the host's environment variable, read at each call.
    Env(String),
    /// `{file: PATH}`: a file's content (trailing newline removed), relative to harness.yaml.
    File(String),
    /// `{command: [PROGRAM, ARG…], timeout: 10s}`: what the command prints on
    /// stdout, trimmed; run at each call without a shell, in the harness's
    /// directory, within `timeout`.
    Command {
        /// The program (a bare name on the fixed search path, or a path
        /// relative to harness.yaml) and its arguments.
        argv: Vec<String>,
        /// How long it may run (default [`DEFAULT_SECRET_COMMAND_TIMEOUT_MS`]).
        timeout_ms: u64,
    },
}

/// How long a `command` secret source may run unless `timeout` says otherwise.
pub const DEFAULT_SECRET_COMMAND_TIMEOUT_MS: u64 = 10_000;

/// `spec.secrets` and `spec.secret_scopes`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecretsSettings {
    /// Handle name to source.
    pub sources: BTreeMap<String, SecretSource>,
    /// Scope key (a principal id, or `role:<role>`) to the handles it may use;
    /// `None`: no scopes are declared and every principal may use every handle.
    pub scopes: Option<BTreeMap<String, Vec<String>>>,
}

impl SecretsSettings {
    /// The handles of `needed` that a principal with `id` and `roles` may not use.
    pub fn out_of_scope<'a>(&self, needed: &'a [String], id: &str, roles: &[String]) -> Vec<&'a str> {
        let Some(scopes) = &self.scopes else { return Vec::new() };
        let allowed = |h: &str| {
            scopes.get(id).is_some_and(|l| l.iter().any(|x| x == h))
                || roles.iter().any(|r| scopes.get(&format!("role:{r}")).is_some_and(|l| l.iter().any(|x| x == h)))
        };
        needed.iter().map(String::as_str).filter(|h| !allowed(h)).collect()
    }
}

/// Parses `spec.effects`.
pub(super) fn parse_effects(node: Option<&Node>, cx: &mut Checker) -> EffectsSettings {
    let mut out = EffectsSettings::default();
    let Some(node) = node else { return out };
    let Some(mut m) = cx.map(node, "spec.effects") else { return out };
    if let Some(n) = m.get("require_contract") {
        out.require_contract = cx.boolean(n, "spec.effects.require_contract").unwrap_or(true);
    }
    if let Some(n) = m.get("journal") {
        if let Some(text) = cx.string(n, "spec.effects.journal") {
            out.journal = if text == "memory" {
                JournalBackend::Memory
            } else if let Some(p) = text.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
                JournalBackend::Sqlite(p.to_string())
            } else if ["redis://", "rediss://"].iter().any(|p| text.starts_with(p)) {
                JournalBackend::Redis(text)
            } else {
                cx.report(
                    "invalid_value",
                    n.pos,
                    "spec.effects.journal",
                    format!("`spec.effects.journal` is `{}`; expected `memory`, `sqlite:<path>` or `redis://…`", redact_url(&text)),
                );
                JournalBackend::Memory
            };
        }
    }
    m.finish(cx);
    out
}

/// A `command` source: a non-empty list of strings, run without a shell.
fn secret_command(node: &Node, path: &str, cx: &mut Checker) -> Option<Vec<String>> {
    let argv = cx.strings(node, path)?;
    if argv.first().is_none_or(String::is_empty) || argv.iter().any(|a| a.contains('\0')) {
        cx.report(
            "invalid_value",
            node.pos,
            path,
            format!("`{path}` must be the command as a list, `[PROGRAM, ARG…]`, with a program and no NUL; it runs without a shell"),
        );
        return None;
    }
    Some(argv)
}

/// Parses `spec.secrets` and `spec.secret_scopes`; a scope naming an unmapped handle is a problem.
pub(super) fn parse_secrets(sources: Option<&Node>, scopes: Option<&Node>, cx: &mut Checker) -> SecretsSettings {
    let mut out = SecretsSettings::default();
    if let Some(node) = sources {
        if let Some(mut m) = cx.map(node, "spec.secrets") {
            for (k, v) in m.all() {
                let name = k.as_str().unwrap_or_default().to_string();
                let path = child_path("spec.secrets", &name);
                if !is_handle_name(&name) {
                    cx.report("invalid_value", k.pos, &path, format!("`{name}` is not a secret handle (letters, digits, `_`)"));
                    continue;
                }
                let Some(mut src) = cx.map(v, &path) else { continue };
                let (env, file, command) = (src.get("env"), src.get("file"), src.get("command"));
                // A source given but malformed is reported once, where it is.
                let given = [env, file, command].iter().filter(|n| n.is_some()).count();
                let env = env.and_then(|n| cx.string(n, &format!("{path}.env")));
                let file = file.and_then(|n| cx.string(n, &format!("{path}.file")));
                let command = command.and_then(|n| secret_command(n, &format!("{path}.command"), cx));
                let timeout = src.get("timeout").map(|n| (n, super::runs::duration(cx, n, &format!("{path}.timeout"))));
                src.finish(cx);
                if let (Some((n, _)), None) = (&timeout, &command) {
                    cx.report("invalid_value", n.pos, &format!("{path}.timeout"), format!("`{path}.timeout` is for a `command` source"));
                }
                match (env, file, command) {
                    (Some(var), None, None) => {
                        out.sources.insert(name, SecretSource::Env(var));
                    }
                    (None, Some(f), None) => {
                        out.sources.insert(name, SecretSource::File(f));
                    }
                    (None, None, Some(argv)) => {
                        let timeout_ms = timeout.and_then(|(_, ms)| ms).unwrap_or(DEFAULT_SECRET_COMMAND_TIMEOUT_MS);
                        out.sources.insert(name, SecretSource::Command { argv, timeout_ms });
                    }
                    _ if given == 1 => {}
                    _ => cx.report(
                        "invalid_value",
                        v.pos,
                        &path,
                        format!("`{path}` needs exactly one source: `env: VAR`, `file: PATH` or `command: [PROGRAM, ARG…]`"),
                    ),
                }
            }
        }
    }
    if let Some(node) = scopes {
        let mut map = BTreeMap::new();
        if let Some(mut m) = cx.map(node, "spec.secret_scopes") {
            for (k, v) in m.all() {
                let key = k.as_str().unwrap_or_default().to_string();
                let path = child_path("spec.secret_scopes", &key);
                let Some(handles) = cx.strings(v, &path) else { continue };
                for (i, h) in handles.iter().enumerate() {
                    if !out.sources.contains_key(h) {
                        let pos = match &v.value {
                            NodeValue::Seq(items) => items.get(i).map_or(v.pos, |n| n.pos),
                            _ => v.pos,
                        };
                        cx.report("unknown_secret", pos, &format!("{path}[{i}]"), format!("`{h}` is not a handle of `spec.secrets`"));
                    }
                }
                map.insert(key, handles);
            }
        }
        out.scopes = Some(map);
    }
    out
}
