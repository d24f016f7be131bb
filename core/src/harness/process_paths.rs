//! The files a `process` tool names, checked against the harness directory
//! when the harness loads: the command exists and is executable (a bare name
//! is found once on the fixed search path and recorded), `cwd` stays inside
//! the harness directory, sandbox paths exist where they must and do not
//! climb out of it. The resolved absolute paths are kept in the manifest for
//! the runtime, which never resolves them again.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::check::Checker;
use crate::manifest::{Manifest, ResolvedProcess, COMMAND_SEARCH_PATH};
use crate::yaml::{Node, NodeValue, Pos};

/// Checks and resolves the paths of a process tool; does nothing for other
/// tools. `node` is the manifest document (for positions).
pub(super) fn resolve_process(m: &mut Manifest, node: &Node, dir: &Path, cx: &mut Checker) {
    let Some(p) = m.process.as_mut() else { return };
    let before = cx.problems.len();
    let spec = node.get("spec");
    let pos_of = |key: &str| spec.and_then(|s| s.get(key)).map_or(node.pos, |n| n.pos);
    let sandbox = spec.and_then(|s| s.get("sandbox"));
    let item_pos = |key: &str, i: usize| {
        let list = sandbox.and_then(|s| s.get(key));
        match list.map(|l| &l.value) {
            Some(NodeValue::Seq(items)) => items.get(i).map_or(node.pos, |n| n.pos),
            _ => list.map_or(node.pos, |n| n.pos),
        }
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());

    let command = resolve_command(&p.command, pos_of("command"), cx);

    let cwd = match inside(&dir, &dir, &p.cwd) {
        Err(why) => {
            cx.report("path_escape", pos_of("cwd"), "spec.cwd", format!("`spec.cwd` `{}` {why}", p.cwd));
            None
        }
        Ok(c) => match c.canonicalize() {
            Ok(c) if c.is_dir() && c.starts_with(&dir) => Some(c),
            Ok(c) if !c.starts_with(&dir) => {
                cx.report("path_escape", pos_of("cwd"), "spec.cwd", format!("`spec.cwd` `{}` leaves the harness directory through a symlink", p.cwd));
                None
            }
            _ => {
                cx.report("path_not_found", pos_of("cwd"), "spec.cwd", format!("`spec.cwd` `{}` is not a directory of the harness", p.cwd));
                None
            }
        },
    };
    let Some(cwd) = cwd else { return };

    // The handler script: the first of `args` that names a file, when it is
    // a file of the harness; readable under the sandbox. Only the first, so
    // a path passed as data in a later argument grants nothing.
    let script = p.args.iter().find_map(|a| cwd.join(a).canonicalize().ok().filter(|f| f.is_file()));
    let arg_files = script.filter(|f| f.starts_with(&dir)).into_iter().collect::<Vec<_>>();

    let sb = &p.sandbox;
    let mut lists: Vec<Vec<PathBuf>> = Vec::new();
    for (key, entries, must_exist) in [
        ("read_paths", &sb.read_paths, true),
        ("write_paths", &sb.write_paths, true),
        ("code_paths", &sb.code_paths, true),
        ("local_sockets", &sb.local_sockets, false),
    ] {
        let mut out = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let path = format!("spec.sandbox.{key}[{i}]");
            let at = item_pos(key, i);
            let joined = match inside(&dir, &cwd, entry) {
                Ok(j) => j,
                Err(why) => {
                    cx.report("path_escape", at, &path, format!("`{path}` `{entry}` {why}"));
                    continue;
                }
            };
            if !must_exist {
                out.push(joined);
                continue;
            }
            match joined.canonicalize() {
                Err(_) => cx.report("path_not_found", at, &path, format!("`{path}` `{entry}` does not exist (create it before loading)")),
                Ok(real) if !Path::new(entry).is_absolute() && !real.starts_with(&dir) => {
                    cx.report("path_escape", at, &path, format!("`{path}` `{entry}` leaves the harness directory through a symlink"));
                }
                Ok(real) if key == "code_paths" && !real.is_file() => {
                    cx.report("invalid_value", at, &path, format!("`{path}` `{entry}` must name a file, not a directory"));
                }
                Ok(real) => out.push(real),
            }
        }
        lists.push(out);
    }
    if cx.problems.len() > before {
        return;
    }
    let (Some(command), [read_paths, write_paths, code_paths, local_sockets]) = (command, <[Vec<PathBuf>; 4]>::try_from(lists).unwrap_or_default())
    else {
        return;
    };
    p.resolved = Some(ResolvedProcess { command, cwd, arg_files, read_paths, write_paths, code_paths, local_sockets });
}

/// `entry` joined to `base` (when relative), refused when a relative entry
/// climbs above the harness directory `dir` with `..`.
fn inside(dir: &Path, base: &Path, entry: &str) -> Result<PathBuf, &'static str> {
    let p = Path::new(entry);
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    let mut out = base.to_path_buf();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() || !out.starts_with(dir) {
                    return Err("climbs out of the harness directory");
                }
            }
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err("must be relative"),
        }
    }
    if out.starts_with(dir) {
        Ok(out)
    } else {
        Err("climbs out of the harness directory")
    }
}

/// The executable `command` names: an absolute path as written, or a bare
/// name found on [`COMMAND_SEARCH_PATH`] (the host's `PATH` is never read).
fn resolve_command(command: &str, pos: Pos, cx: &mut Checker) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = if command.starts_with('/') {
        vec![PathBuf::from(command)]
    } else {
        COMMAND_SEARCH_PATH.iter().map(|d| Path::new(d).join(command)).collect()
    };
    let mut not_executable = None;
    for c in candidates {
        match std::fs::metadata(&c) {
            Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => return Some(c),
            Ok(_) => not_executable = Some(c),
            Err(_) => {}
        }
    }
    match not_executable {
        Some(c) => {
            cx.report("command_not_executable", pos, "spec.command", format!("`spec.command` `{}` is not an executable file", c.to_string_lossy()))
        }
        None if command.starts_with('/') => cx.report("command_not_found", pos, "spec.command", format!("`spec.command` `{command}` does not exist")),
        None => cx.report(
            "command_not_found",
            pos,
            "spec.command",
            format!("`spec.command` `{command}` is not on the search path `{}` (give an absolute path)", COMMAND_SEARCH_PATH.join(":")),
        ),
    }
    None
}
