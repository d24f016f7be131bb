//! The fields of a `process` tool: `command`, `args`, `cwd`, `env`,
//! `max_payload_bytes` and the `sandbox` mapping with its grants and paths.
//! Only the text is checked here; the files they name are checked against
//! the harness directory when a harness loads (`crate::harness`).

use std::collections::BTreeMap;

use super::model::{Grant, ProcessSandbox, ProcessSpec, Transport, DEFAULT_MAX_PAYLOAD_BYTES};
use crate::check::{child_path, Checker, MapReader};
use crate::yaml::Node;

/// The process fields other than `sandbox` (which code tools also use, as a name).
const PROCESS_FIELDS: &[&str] = &["command", "args", "cwd", "env", "max_payload_bytes"];

/// The sandbox profiles: `default` (bubblewrap's namespaces only where
/// Landlock and seccomp do not suffice) and `namespaces` (always; issue 19).
const PROFILES: &[(&str, &str)] = &[("default", "default"), ("namespaces", "namespaces")];

/// Reads the process fields of `spec`: required and checked for a process
/// tool, refused (`forbidden_field`) for any other. `known`: the transport
/// was recognised (with an unknown one, nothing is required or refused).
pub(crate) fn parse_process(cx: &mut Checker, spec: &mut MapReader<'_>, known: bool, transport: Transport) -> Option<ProcessSpec> {
    if transport != Transport::Process {
        if known {
            for key in PROCESS_FIELDS {
                if spec.get(key).is_some() {
                    let pos = spec.key_node(key).map_or(spec.node.pos, |k| k.pos);
                    let path = format!("spec.{key}");
                    cx.report("forbidden_field", pos, &path, format!("`{path}` is only for `process` tools"));
                }
            }
        } else {
            for key in PROCESS_FIELDS {
                let _ = spec.get(key);
            }
        }
        return None;
    }
    let command = spec.require(cx, "command").and_then(|n| command(cx, n));
    let args = spec.get("args").and_then(|n| cx.strings(n, "spec.args")).unwrap_or_default();
    let cwd = spec.get("cwd").and_then(|n| cx.string(n, "spec.cwd")).unwrap_or_else(|| ".".to_string());
    let env = spec.get("env").map(|n| env_map(cx, n)).unwrap_or_default();
    let max_payload_bytes = spec.get("max_payload_bytes").and_then(|n| cx.positive(n, "spec.max_payload_bytes")).unwrap_or(DEFAULT_MAX_PAYLOAD_BYTES);
    let sandbox = spec.get("sandbox").map(|n| sandbox(cx, n)).unwrap_or_default();
    Some(ProcessSpec { command: command?, args, cwd, env, max_payload_bytes, sandbox, resolved: None })
}

/// An absolute path or a bare name; never a relative path with a `/`, which
/// would depend on the directory the host runs in.
fn command(cx: &mut Checker, node: &Node) -> Option<String> {
    let text = cx.string(node, "spec.command")?;
    if text.trim().is_empty() || text.contains('\0') {
        cx.report("invalid_value", node.pos, "spec.command", "`spec.command` is empty".to_string());
        return None;
    }
    if !text.starts_with('/') && text.contains('/') {
        cx.report(
            "invalid_value",
            node.pos,
            "spec.command",
            format!("`spec.command` must be an absolute path or a bare name found on the fixed search path, not the relative path `{text}`"),
        );
        return None;
    }
    Some(text)
}

/// `env`: handler variable → host variable, both names, never values.
fn env_map(cx: &mut Checker, node: &Node) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(mut m) = cx.map(node, "spec.env") else { return out };
    for (k, v) in m.all() {
        let Some(key) = k.as_str() else {
            cx.report("wrong_type", k.pos, "spec.env", "variable names must be strings".to_string());
            continue;
        };
        let path = child_path("spec.env", key);
        if !is_env_name(key) {
            cx.report("invalid_value", k.pos, &path, format!("`{key}` is not a variable name (letters, digits, `_`)"));
            continue;
        }
        if let Some(var) = cx.string(v, &path) {
            if is_env_name(&var) {
                out.insert(key.to_string(), var);
            } else {
                cx.report(
                    "invalid_value",
                    v.pos,
                    &path,
                    format!("`{path}` must name a host environment variable (letters, digits, `_`), not hold a value"),
                );
            }
        }
    }
    out
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `sandbox`: `required`, `profile`, `grants` and the path lists, each list
/// needing its grant.
fn sandbox(cx: &mut Checker, node: &Node) -> ProcessSandbox {
    let mut out = ProcessSandbox { profile: "default".into(), ..ProcessSandbox::default() };
    let Some(mut m) = cx.map(node, "spec.sandbox") else { return out };
    if let Some(n) = m.get("required") {
        out.required = cx.boolean(n, "spec.sandbox.required").unwrap_or(false);
    }
    if let Some(n) = m.get("profile") {
        if let Some(profile) = cx.choice(n, "spec.sandbox.profile", PROFILES) {
            out.profile = profile.to_string();
        }
    }
    if let Some(n) = m.get("grants") {
        let grants = &mut out.grants;
        cx.list(n, "spec.sandbox.grants", "a list of grants", |cx, item, path| {
            let Some(text) = cx.string(item, path) else { return };
            match Grant::ALL.iter().find(|(name, _)| *name == text) {
                None => {
                    let names: Vec<&str> = Grant::ALL.iter().map(|(n, _)| *n).collect();
                    cx.report("unknown_grant", item.pos, path, format!("`{text}` is not a grant; the grants are `{}`", names.join("`, `")));
                }
                Some((_, g)) if grants.contains(g) => cx.report("invalid_value", item.pos, path, format!("`{text}` is listed twice")),
                Some((_, g)) => grants.push(*g),
            }
        });
    }
    let needs = [
        ("read_paths", Some(Grant::FilesystemRead)),
        ("write_paths", Some(Grant::FilesystemWrite)),
        ("code_paths", None),
        ("local_sockets", Some(Grant::NetworkLocal)),
    ];
    for (key, grant) in needs {
        let path = format!("spec.sandbox.{key}");
        let Some(n) = m.get(key) else { continue };
        let Some(list) = cx.strings(n, &path) else { continue };
        if let Some(g) = grant {
            if !list.is_empty() && !out.grants.contains(&g) {
                cx.report("grant_missing", n.pos, &path, format!("`{path}` needs the `{}` grant in `spec.sandbox.grants`", g.as_str()));
            }
        }
        if let Some((i, _)) = list.iter().enumerate().find(|(_, p)| p.trim().is_empty()) {
            cx.report("invalid_value", n.pos, &format!("{path}[{i}]"), format!("`{path}[{i}]` is empty"));
        }
        match key {
            "read_paths" => out.read_paths = list,
            "write_paths" => out.write_paths = list,
            "code_paths" => out.code_paths = list,
            _ => out.local_sockets = list,
        }
    }
    m.finish(cx);
    out
}
