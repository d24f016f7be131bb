//! `harnessweaver doctor`: load the harness and every manifest, report every
//! problem with its place, the pin state of every tool and the policy layers.

use serde_json::{json, Value};

use super::args::{Spec, JSON};
use super::python_handlers::{self, Checked};
use super::ui::{harness_path, plural, problems_json, shown, Io, Paint};
use harnessweaver_core::governor::Governor;
use harnessweaver_core::harness::Harness;
use harnessweaver_core::manifest::PinState;

pub(crate) const SPEC: Spec = Spec {
    path: "doctor",
    synopsis: "[harness.yaml] [--json]",
    about: "Loads harness.yaml (default ./harness.yaml; a directory means the harness.yaml in
it) and every manifest it names, and prints every problem as file:line:column.
Fails (exit 1) on any problem, a mismatched pin, a Python handler that does not
import (checked in a child Python when run from the Python package) or a missing
sandbox worker for code tools; warns about unpinned manifests, prints the
digest to pin and how to require pins. Exit 0 when clean.",
    opts: &[JSON],
    positionals: &[("harness.yaml", false)],
};

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&SPEC, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let path = harness_path(a.pos(0));
    let fail_load = |io: &mut Io<'_>, e: &harnessweaver_core::error::Error| {
        io.problems(e, &path, json);
        if !json {
            let n = e.problems().len().max(1);
            let _ = writeln!(io.out, "doctor: {n} problem{} in `{}`", plural(n), path.display());
        }
        1
    };
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => return fail_load(io, &e),
    };
    let governor = match Governor::from_harness(&harness, crate::governor_options()) {
        Ok(g) => g,
        Err(e) => return fail_load(io, &e),
    };
    let mut tools = Vec::new();
    let (mut failed, mut warned) = (0usize, 0usize);
    let mut lines = Vec::new();
    let mut live_lines = Vec::new();
    for tool in harness.tools() {
        let file = shown(&path, tool.file().unwrap_or_default());
        // MCP tools: what the server serves now must match the manifest (the rug pull).
        let live = governor.transports().live_pin_mismatch(tool.name());
        if let Some(why) = &live {
            failed += 1;
            live_lines.push(format!(
                "{}: {file}: tool `{}`: {why}; every call is refused [digest_mismatch]",
                io.paint(Paint::Red, "error"),
                tool.name()
            ));
        }
        match tool.pin() {
            PinState::Pinned => lines.push(format!("{}: {file}: tool `{}` is pinned", io.paint(Paint::Green, "ok"), tool.name())),
            PinState::Mismatched => {
                failed += 1;
                lines.push(format!(
                    "{}: {file}: tool `{}`: definition_digest does not match the definition; every call is refused \
                     (current digest {}); review the change, then run `harnessweaver tools pin` [digest_mismatch]",
                    io.paint(Paint::Red, "error"),
                    tool.name(),
                    tool.digest()
                ));
            }
            PinState::Unpinned => {
                warned += 1;
                lines.push(format!(
                    "{}: {file}: tool `{}` is not pinned; add `definition_digest: \"{}\"` under `spec:` \
                     or run `harnessweaver tools pin`",
                    io.paint(Paint::Yellow, "warning"),
                    tool.name(),
                    tool.digest()
                ));
            }
        }
        tools.push(json!({
            "name": tool.name(), "file": file, "pin": tool.pin().as_str(), "digest": tool.digest(),
            "live_mismatch": live,
        }));
    }
    let mut layers = Vec::new();
    for (i, layer) in harness.spec().layers.iter().enumerate() {
        let rules = harness.spec().rules.iter().filter(|r| r.layer == i).count();
        if rules == 0 && layer.name == "harness" && layer.default_allow {
            continue;
        }
        let from = layer.file.as_deref().map_or_else(|| "inline".to_string(), |f| shown(&path, f));
        let default = if layer.default_allow { "allow" } else { "deny" };
        lines.push(format!("policy: layer `{}` ({}, default {default}, {from}): {rules} rule{}", layer.name, layer.mode.as_str(), plural(rules)));
        layers.push(json!({"name": layer.name, "mode": layer.mode.as_str(), "default": default, "from": from, "rules": rules}));
    }
    if warned > 0 && !harness.spec().tools.require_pins {
        lines.push(format!(
            "{}: to refuse unpinned tools at load, set `require_pins: true` under `spec.tools:` in harness.yaml",
            io.paint(Paint::Yellow, "hint")
        ));
    }
    // Python handlers import in a child Python, as load() would import them.
    let mut handler_problems = Vec::new();
    let mut warnings = crate::transport::environment_warnings(&harness);
    match python_handlers::check(&harness) {
        Checked::Skipped => {}
        Checked::Done(problems) => handler_problems = problems,
        Checked::Unavailable(why) => warnings.push(format!("the Python handlers were not checked: {why}")),
    }
    failed += handler_problems.len();
    let handler_error = harnessweaver_core::Error::Load(handler_problems);
    for line in &warnings {
        lines.push(format!("{}: {line}", io.paint(Paint::Yellow, "warning")));
    }
    lines.extend(live_lines);
    if !handler_error.problems().is_empty() {
        let label = io.paint(Paint::Red, "error");
        for p in handler_error.problems() {
            let mut p = p.clone();
            p.file = p.file.map(|f| shown(&path, &f));
            lines.push(format!("{label}: {p}"));
        }
    }
    // Every code tool's call would fail: a problem, not a warning.
    let missing_worker = crate::transport::missing_worker(&harness);
    if let Some(why) = &missing_worker {
        failed += 1;
        lines.push(format!("{}: code tools: {why} [sandbox_error]", io.paint(Paint::Red, "error")));
    }
    // harness.lock (issue 21): a handler whose code changed since review.
    let drift = match super::lock::drift(&harness, &super::lock::default_python()) {
        Ok(d) => d.unwrap_or_default(),
        Err(e) => vec![harnessweaver_core::lock::Drift { tool: "harness.lock".into(), field: e, locked: None, now: None }],
    };
    for d in &drift {
        lines.push(format!("{}: lock drift: {} [lock_drift]", io.paint(Paint::Red, "error"), d.to_text()));
    }
    let n = harness.tools().len();
    if json {
        let problems = if handler_error.problems().is_empty() { Value::Array(Vec::new()) } else { problems_json(&handler_error, &path) };
        io.json(&json!({
            "ok": failed == 0 && drift.is_empty(), "harness": path.display().to_string(), "problems": problems,
            "tools": tools, "mismatched": failed - usize::from(missing_worker.is_some()) - handler_error.problems().len(), "unpinned": warned, "layers": layers,
            "warnings": warnings, "missing_worker": missing_worker, "lock_drift": drift,
        }));
        return i32::from(failed > 0 || !drift.is_empty());
    }
    for line in lines {
        let _ = writeln!(io.out, "{line}");
    }
    if failed > 0 || !drift.is_empty() {
        let imports = handler_error.problems().len();
        let mismatched = failed - usize::from(missing_worker.is_some()) - imports;
        let worker = if missing_worker.is_some() { "; the sandbox worker is missing" } else { "" };
        let handlers = if imports > 0 { format!("; {imports} handler{} failed to import", plural(imports)) } else { String::new() };
        let locked = if drift.is_empty() { String::new() } else { format!("; {} difference{} from harness.lock", drift.len(), plural(drift.len())) };
        let _ = writeln!(io.out, "doctor: {n} tool{} loaded; {mismatched} mismatched pin{}{handlers}{worker}{locked}", plural(n), plural(mismatched));
        return 1;
    }
    let _ = writeln!(io.out, "doctor: {n} tool{} loaded; {warned} unpinned; no problems", plural(n));
    0
}
