//! The permission file: accepted "always allow" candidates, a policy layer
//! in the harness directory that people read and review like any policy
//! file (YAML, one rule per entry, a comment saying who accepted it and for
//! which approval). It only ever holds allows that the gate weighs after
//! every deny, so it never widens a deny of harness.yaml or a managed layer.

use std::io::Write;
use std::path::Path;

use crate::check::Checker;
use crate::error::{Error, Problem};
use crate::harness::builtins::{parse_rule, AccessEffect, AccessRule, CapabilityKind};

const HEADER: &str = "# harnessweaver permission file: accepted \"always allow\" candidates of the built-in tools.
# A policy layer: review changes like any policy file. Every deny of harness.yaml
# (spec.builtins.access) and of the policy layers is weighed first, so nothing
# here can widen a deny. Remove an entry to withdraw it.
apiVersion: harnessweaver/v1
kind: Permissions
rules:
";

/// The rules of the permission file at `path` (none when it does not exist).
pub fn read(path: &Path) -> Result<Vec<AccessRule>, Problem> {
    let file = path.file_name().map_or_else(|| "permissions.yaml".to_string(), |n| n.to_string_lossy().into_owned());
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Problem { file: Some(file), ..Problem::new("io_error", format!("cannot read the permission file ({})", e.kind())) }),
    };
    let node = crate::yaml::parse_yaml(&text)
        .map_err(|p| p.into_iter().next().unwrap_or_else(|| Problem::new("yaml_syntax", "the permission file is not valid YAML")))?;
    let mut cx = Checker::new(Some(file));
    let mut rules = Vec::new();
    if let Some(mut doc) = cx.map(&node, "") {
        crate::manifest::check_header(&mut doc, &mut cx, "Permissions");
        if let Some(list) = doc.get("rules") {
            cx.list(list, "rules", "a list of access rules", |cx, item, path| {
                if let Some(rule) = parse_rule(item, cx, path, "permissions") {
                    rules.push(rule);
                }
            });
        }
        doc.finish(&mut cx);
    }
    match cx.take_sorted().into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(rules),
    }
}

fn quoted(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| serde_json::to_string(s).unwrap_or_default()).collect();
    format!("[{}]", parts.join(", "))
}

/// Appends `rule` (an allow) to the permission file, creating it with its header.
pub fn append(path: &Path, rule: &AccessRule, description: &str, accepted_by: &str, approval_id: &str) -> Result<(), Error> {
    if rule.effect != AccessEffect::Allow {
        return Err(Error::value("invalid_value", "only allow rules are accepted into the permission file"));
    }
    let field = match rule.kind {
        CapabilityKind::FilesystemRead | CapabilityKind::FilesystemWrite => format!("paths: {}", quoted(&rule.paths)),
        CapabilityKind::CommandExecute => format!("command: {}", quoted(&rule.command)),
        CapabilityKind::Network => format!("origins: {}", quoted(&rule.origins)),
    };
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let entry = format!(
        "  # {} (accepted by {} for approval {})\n  - effect: allow\n    kind: {}\n    {field}\n",
        one_line(description),
        one_line(accepted_by),
        one_line(approval_id),
        rule.kind.as_str()
    );
    let fresh = !path.exists();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::Io { message: format!("cannot write the permission file ({})", e.kind()) })?;
    let text = if fresh { format!("{HEADER}{entry}") } else { entry };
    file.write_all(text.as_bytes()).map_err(|e| Error::Io { message: format!("cannot write the permission file ({})", e.kind()) })
}
