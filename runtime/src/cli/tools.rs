//! `harnessweaver tools list|show|pin|add`: what the harness's tools are,
//! and the two edits the CLI makes to files (a manifest's pin, and a glob in
//! harness.yaml), both text edits that keep comments.

use std::path::Path;

use serde_json::{json, Value};

use super::args::{Opt, Spec, JSON};
use super::ui::{harness_path, plural, shown, Io, Paint};
use harnessweaver_core::harness::Harness;
use harnessweaver_core::manifest::{risk_name, side_effect_name, transport_name, PinState, Tool};
use harnessweaver_core::pin;

const USAGE: &str = "usage: harnessweaver tools <list|show|pin|add> [options]

  tools list [harness.yaml] [--json]                 a table: name, transport, risk, side effect, pin state
  tools show NAME [--harness FILE] [--json]          one tool's resolved manifest, schema, pin state and digest
  tools pin [harness.yaml] [--tool NAME] [--json]    write each manifest's current digest into it
  tools add MANIFEST [--harness FILE] [--json]       add the manifest's directory to tools.manifests, then pin it

run `harnessweaver tools <subcommand> --help` for more";

const LIST: Spec = Spec {
    path: "tools list",
    synopsis: "[harness.yaml] [--json]",
    about: "Loads the harness (default ./harness.yaml) and prints one row per tool: its name,
transport, risk, side effect and pin state (pinned, unpinned or mismatched).
Exit 0 when the harness loads, 1 when it does not (its problems are printed).",
    opts: &[JSON],
    positionals: &[("harness.yaml", false)],
};

const SHOW: Spec = Spec {
    path: "tools show",
    synopsis: "NAME [--harness FILE] [--json]",
    about: "Prints one tool's manifest with every default filled in (transport, risk, side
effect, scopes, tenants, rate limit, approval, output policy, …), its input
schema, its pin state and the digest of its current definition. Exit 0 when
shown, 1 when the harness does not load, 2 when no tool has that name.",
    opts: &[Opt::value("harness", "FILE", "the harness (default ./harness.yaml)"), JSON],
    positionals: &[("NAME", true)],
};

const PIN: Spec = Spec {
    path: "tools pin",
    synopsis: "[harness.yaml] [--tool NAME] [--json]",
    about: "Writes each manifest's current definition digest into its `definition_digest`,
editing only that line (or adding it under `spec:`), keeping comments, order and
formatting. Running it again changes nothing. --tool NAME pins one tool.
Exit 0 when every tool is pinned, 1 when the harness does not load or a file
cannot be edited (nothing is written while the harness has problems), 2 when
no tool has the name given.",
    opts: &[Opt::value("tool", "NAME", "pin only this tool"), JSON],
    positionals: &[("harness.yaml", false)],
};

const ADD: Spec = Spec {
    path: "tools add",
    synopsis: "MANIFEST [--harness FILE] [--json]",
    about: "Adds a manifest to the harness: puts a glob for the manifest's directory
(`dir/*.yaml`, or `*.json` for a JSON manifest) into `spec.tools.manifests`
unless a glob there already matches it, editing harness.yaml's text so comments
stay, then loads the harness and pins the tool. A missing harness.yaml is
created. The manifest must be inside the harness directory. If the harness
does not load afterwards, harness.yaml is put back as it was and the problems
are printed (exit 1). `harnessweaver add tool` (Python, npm) writes a
manifest from a function and then runs this.",
    opts: &[Opt::value("harness", "FILE", "the harness (default ./harness.yaml)"), JSON],
    positionals: &[("MANIFEST", true)],
};

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    match args {
        ["list", rest @ ..] => list(rest, io),
        ["show", rest @ ..] => show(rest, io),
        ["pin", rest @ ..] => pin(rest, io),
        ["add", rest @ ..] => add(rest, io),
        ["--help" | "-h", ..] => {
            let _ = writeln!(io.out, "{USAGE}\n\n{}", super::args::EXIT_CODES);
            0
        }
        [] => {
            let _ = writeln!(io.err, "{USAGE}");
            2
        }
        [other, ..] => {
            let _ = writeln!(io.err, "harnessweaver tools: unknown subcommand `{other}`\n\n{USAGE}");
            2
        }
    }
}

fn load(io: &mut Io<'_>, path: &Path, json: bool) -> Option<Harness> {
    match Harness::load(path) {
        Ok(h) => Some(h),
        Err(e) => {
            io.problems(&e, path, json);
            None
        }
    }
}

fn paint_pin(io: &Io<'_>, pin: PinState, text: &str) -> String {
    match pin {
        PinState::Pinned => io.paint(Paint::Green, text),
        PinState::Unpinned => io.paint(Paint::Yellow, text),
        PinState::Mismatched => io.paint(Paint::Red, text),
    }
}

fn row(tool: &Tool, harness: &Path) -> Value {
    let m = tool.manifest();
    json!({
        "name": tool.name(), "transport": transport_name(m.transport), "risk": risk_name(m.risk),
        "side_effect": side_effect_name(m.side_effect), "pin": tool.pin().as_str(), "digest": tool.digest(),
        "file": tool.file().map(|f| shown(harness, f)), "enabled": m.enabled,
        "confined": m.process.as_ref().map(|p| p.sandbox.required),
    })
}

/// The transport column: a process tool says whether the OS sandbox confines it.
fn transport_cell(m: &harnessweaver_core::manifest::Manifest) -> String {
    match &m.process {
        Some(p) if p.sandbox.required => "process (confined)".into(),
        Some(_) => "process (unconfined)".into(),
        None => transport_name(m.transport).to_string(),
    }
}

fn list(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&LIST, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let path = harness_path(a.pos(0));
    let Some(harness) = load(io, &path, json) else { return 1 };
    if json {
        let tools: Vec<Value> = harness.tools().iter().map(|t| row(t, &path)).collect();
        io.json(&json!({"harness": path.display().to_string(), "tools": tools}));
        return 0;
    }
    let header = ["NAME", "TRANSPORT", "RISK", "SIDE EFFECT", "PIN"];
    let rows: Vec<[String; 5]> = harness
        .tools()
        .iter()
        .map(|t| {
            let m = t.manifest();
            [
                t.name().to_string(),
                transport_cell(m),
                risk_name(m.risk).to_string(),
                side_effect_name(m.side_effect).to_string(),
                t.pin().as_str().to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: [&str; 5]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:w$}  "));
            }
        }
        s
    };
    let _ = writeln!(io.out, "{}", io.paint(Paint::Bold, &line(header)));
    for (r, t) in rows.iter().zip(harness.tools()) {
        // Pad before painting: escape codes have no width.
        let [name, transport, risk, side, pin] = r;
        let cells = line([name, transport, risk, side, ""]);
        let _ = writeln!(io.out, "{cells}{}", paint_pin(io, t.pin(), pin));
    }
    let n = rows.len();
    let _ = writeln!(io.out, "{}", io.paint(Paint::Dim, &format!("{n} tool{} in `{}`", plural(n), path.display())));
    0
}

fn show(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&SHOW, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let name = a.pos(0).unwrap_or_default();
    let path = harness_path(a.value("harness"));
    let Some(harness) = load(io, &path, json) else { return 1 };
    let Some(tool) = harness.tool(name) else {
        let _ = writeln!(io.err, "harnessweaver tools show: no tool named `{name}` in `{}`", path.display());
        return 2;
    };
    let mut described = tool.describe();
    if let Value::Object(o) = &mut described {
        o.insert("file".into(), json!(tool.file().map(|f| shown(&path, f))));
    }
    if json {
        io.json(&described);
        return 0;
    }
    let Value::Object(mut fields) = described else { return 1 };
    let width = fields.keys().map(String::len).max().unwrap_or(0) + 1;
    // What a reader looks for first, then the rest in name order.
    let first = ["name", "description", "file", "transport", "risk", "side_effect", "pin", "digest", "pinned_digest"];
    let mut ordered: Vec<(String, Value)> = first.iter().filter_map(|k| fields.remove(*k).map(|v| ((*k).to_string(), v))).collect();
    let schema = fields.remove("input_schema");
    ordered.extend(fields);
    ordered.extend(schema.map(|s| ("input_schema".to_string(), s)));
    for (key, value) in &ordered {
        let label = io.paint(Paint::Bold, &format!("{:width$}", format!("{key}:")));
        let text = match (key.as_str(), value) {
            ("pin", Value::String(s)) => paint_pin(io, tool.pin(), s),
            (_, Value::String(s)) => s.clone(),
            ("input_schema", v) => {
                let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
                format!("\n  {}", pretty.replace('\n', "\n  "))
            }
            (_, v) => v.to_string(),
        };
        let sep = if text.starts_with('\n') { "" } else { " " };
        let _ = writeln!(io.out, "{}{sep}{text}", if sep.is_empty() { label.trim_end().to_string() } else { label });
    }
    0
}

fn pin(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&PIN, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let path = harness_path(a.pos(0));
    let harness = match Harness::load_to_pin(&path) {
        Ok(h) => h,
        Err(e) => {
            io.problems(&e, &path, json);
            if !json {
                let _ = writeln!(io.out, "tools pin: fix the problems above first; nothing was written");
            }
            return 1;
        }
    };
    let tools: Vec<&Tool> = match a.value("tool") {
        Some(name) => match harness.tool(name) {
            Some(t) => vec![t],
            None => {
                let _ = writeln!(io.err, "harnessweaver tools pin: no tool named `{name}` in `{}`", path.display());
                return 2;
            }
        },
        None => harness.tools().iter().collect(),
    };
    let (mut changed, mut failed) = (0usize, 0usize);
    let mut results = Vec::new();
    for tool in &tools {
        let file = shown(&path, tool.file().unwrap_or_default());
        let (result, error) = if tool.pin() == PinState::Pinned {
            ("unchanged", None)
        } else {
            match pin::pin_file(tool) {
                Ok(()) => {
                    changed += 1;
                    ("pinned", None)
                }
                Err(e) => {
                    failed += 1;
                    ("error", Some(e.to_string()))
                }
            }
        };
        if !json {
            let line = match (result, &error) {
                ("unchanged", _) => format!("unchanged: {file}: tool `{}` is already pinned", tool.name()),
                ("pinned", _) => format!("{}: {file}: tool `{}` at {}", io.paint(Paint::Green, "pinned"), tool.name(), tool.digest()),
                (_, e) => format!("{}: {file}: tool `{}`: {}", io.paint(Paint::Red, "error"), tool.name(), e.as_deref().unwrap_or_default()),
            };
            let _ = writeln!(io.out, "{line}");
        }
        results.push(json!({"name": tool.name(), "file": file, "result": result, "digest": tool.digest(), "error": error}));
    }
    if json {
        io.json(&json!({"ok": failed == 0, "harness": path.display().to_string(), "tools": results, "changed": changed}));
    } else if failed == 0 && changed == 0 {
        let _ = writeln!(io.out, "tools pin: every tool already pinned; nothing changed");
    } else if failed == 0 {
        let _ = writeln!(io.out, "tools pin: {changed} manifest{} updated", plural(changed));
    }
    i32::from(failed > 0)
}

/// A minimal harness.yaml for `tools add` in a directory without one.
const NEW_HARNESS: &str = "# Written by `harnessweaver tools add`; see docs/harness.md for every setting.
apiVersion: harnessweaver/v1
kind: Harness
spec:
  tools:
    manifests: []
";

fn add(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&ADD, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let manifest = Path::new(a.pos(0).unwrap_or_default());
    let path = harness_path(a.value("harness"));
    let fail = |io: &mut Io<'_>, message: String| {
        if json {
            io.json(&json!({"ok": false, "problems": [{"code": "io_error", "message": message}]}));
        } else {
            let _ = writeln!(io.out, "{}: {message}", io.paint(Paint::Red, "error"));
        }
        1
    };
    // The manifest must load on its own first (its problems point into it).
    let text = match std::fs::read_to_string(manifest) {
        Ok(t) => t,
        Err(e) => return fail(io, format!("cannot read `{}`: {e}", manifest.display())),
    };
    let tool = match Tool::from_manifest_text(&text, &manifest.display().to_string()) {
        Ok(t) => t,
        Err(e) => {
            io.problems(&e, Path::new(""), json);
            return 1;
        }
    };
    let created = !path.exists();
    let old = if created {
        NEW_HARNESS.to_string()
    } else {
        match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return fail(io, format!("cannot read `{}`: {e}", path.display())),
        }
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let relative = match (dir.canonicalize(), manifest.canonicalize()) {
        (Ok(d), Ok(m)) => m.strip_prefix(&d).map(Path::to_path_buf).ok(),
        _ => None,
    };
    let Some(relative) = relative else {
        return fail(io, format!("`{}` is not inside the harness directory `{}`", manifest.display(), dir.display()));
    };
    let ext = relative.extension().and_then(|e| e.to_str()).unwrap_or("yaml");
    let rel_dir = relative.parent().map(|p| p.to_string_lossy().replace('\\', "/")).unwrap_or_default();
    let glob = if rel_dir.is_empty() { format!("*.{ext}") } else { format!("{rel_dir}/*.{ext}") };
    let rel_text = relative.to_string_lossy().replace('\\', "/");
    let already = harnessweaver_core::parse_yaml(&old).ok().and_then(|root| {
        let globs = root.get("spec")?.get("tools")?.get("manifests")?.to_json().ok()?;
        let globs: Vec<String> = match globs {
            Value::String(s) => vec![s],
            Value::Array(v) => v.into_iter().filter_map(|g| g.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
        globs.iter().find(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches(&rel_text))).cloned()
    });
    let new = match &already {
        Some(_) => old.clone(),
        None => match pin::add_manifest_glob(&old, &glob) {
            Ok(t) => t,
            Err(e) => return fail(io, format!("{}: {e}", path.display())),
        },
    };
    let changed = created || new != old;
    if changed {
        if let Err(e) = std::fs::write(&path, &new) {
            return fail(io, format!("cannot write `{}`: {e}", path.display()));
        }
    }
    let restore = || {
        if created {
            let _ = std::fs::remove_file(&path);
        } else if changed {
            let _ = std::fs::write(&path, &old);
        }
    };
    let harness = match Harness::load_to_pin(&path) {
        Ok(h) => h,
        Err(e) => {
            restore();
            io.problems(&e, &path, json);
            if !json {
                let _ = writeln!(io.out, "tools add: the harness does not load with `{glob}`; `{}` is unchanged", path.display());
            }
            return 1;
        }
    };
    let Some(loaded) = harness.tool(tool.name()) else {
        restore();
        return fail(io, format!("the harness does not load tool `{}` from `{}`", tool.name(), manifest.display()));
    };
    let pinned = loaded.pin() == PinState::Pinned;
    if !pinned {
        if let Err(e) = pin::pin_file(loaded) {
            return fail(io, format!("{}: tool `{}`: {e}", shown(&path, loaded.file().unwrap_or_default()), tool.name()));
        }
    }
    let glob_used = already.unwrap_or(glob);
    if json {
        io.json(&json!({
            "ok": true, "harness": path.display().to_string(), "harness_created": created, "harness_changed": changed,
            "glob": glob_used, "tool": tool.name(), "manifest": shown(&path, &rel_text), "pin": "pinned", "digest": loaded.digest(),
        }));
        return 0;
    }
    let verb = if created {
        "created"
    } else if changed {
        "updated"
    } else {
        "unchanged"
    };
    let _ = writeln!(io.out, "{verb}: {}: tools.manifests has `{glob_used}`", path.display());
    let what = if pinned { "already pinned" } else { "pinned" };
    let _ =
        writeln!(io.out, "{}: {}: tool `{}` {what} at {}", io.paint(Paint::Green, "added"), shown(&path, &rel_text), tool.name(), loaded.digest());
    0
}
