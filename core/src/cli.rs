//! The `harnessweaver` command line, shared by the Rust binary, the Python
//! console script and the npm bin.
//!
//! Commands: `doctor [harness.yaml]`, `tools pin [harness.yaml] [--tool NAME]`
//! and `explain TOOL [--harness …] [--args …] [--principal …] [--tenant …] [--json]`.
//! Exit codes: 0 clean, 1 problems found, 2 usage error. Output is plain text.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::governor::{CallContext, Decision, Governor, GovernorOptions, Principal};
use crate::harness::Harness;
use crate::manifest::{PinState, Tool};
use crate::pin;

const USAGE: &str = "usage: harnessweaver <command> [options]

commands:
  doctor [harness.yaml]                     load the harness and every manifest; report every problem
  tools pin [harness.yaml] [--tool NAME]    write each manifest's current definition digest into it
  explain TOOL [--args JSON] [--principal JSON|ID] [--tenant T] [--harness FILE] [--json]
                                            run the nine steps without invoking anything; print each verdict

exit codes: 0 clean, 1 problems found, 2 usage error
run `harnessweaver <command> --help` for more";

const DOCTOR_HELP: &str = "usage: harnessweaver doctor [harness.yaml]

Loads harness.yaml (default ./harness.yaml; a directory means the harness.yaml in
it) and every manifest it names, and prints every problem as file:line:column.
Fails (exit 1) on any problem or a mismatched pin; warns about unpinned manifests
and prints the digest to pin. Exit 0 when clean.";

const EXPLAIN_HELP: &str = "usage: harnessweaver explain TOOL [--args JSON] [--principal JSON|ID] [--tenant T] [--harness FILE] [--json]

Runs the nine steps for one call of TOOL without invoking it and without counting
it against budgets or rate limits, creating approvals or labelling a run, and
prints each step's verdict with the rule, field or expression behind it, and what
rules in shadow mode would refuse. --principal takes a JSON object
({\"id\": …, \"roles\": […], \"scopes\": […], \"attrs\": {…}}) or a bare id.
--harness defaults to ./harness.yaml. Exit 0 when the call would run, 1 when it
would be refused or wait for approval, 2 on a usage error.";

const PIN_HELP: &str = "usage: harnessweaver tools pin [harness.yaml] [--tool NAME]

Writes each manifest's current definition digest into its `definition_digest`,
editing only that line (or adding it under `spec:`), keeping comments, order and
formatting. Running it again changes nothing. --tool NAME pins one tool.";

/// Runs the command line with `args` (without the program name) and returns
/// the exit code: 0 clean, 1 problems found, 2 usage error.
pub fn run(args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(args, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`] writing to the given streams (for tests and bindings).
pub fn run_with(args: &[String], out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => {
            let _ = writeln!(err, "{USAGE}");
            2
        }
        ["--help" | "-h" | "help", ..] => {
            let _ = writeln!(out, "{USAGE}");
            0
        }
        ["--version" | "-V", ..] => {
            let _ = writeln!(out, "harnessweaver {}", env!("CARGO_PKG_VERSION"));
            0
        }
        ["doctor", rest @ ..] => doctor(rest, out, err),
        ["tools", "pin", rest @ ..] => tools_pin(rest, out, err),
        ["explain", rest @ ..] => explain(rest, out, err),
        // Hidden: the worker of the multi-process store tests and benchmark.
        ["_stress-limit", rest @ ..] => crate::store::stress::run(rest, out, err),
        ["tools", "--help" | "-h"] | ["tools"] => {
            let _ = writeln!(out, "usage: harnessweaver tools pin [harness.yaml] [--tool NAME]");
            if args.len() == 1 {
                return 2;
            }
            0
        }
        [cmd, ..] => {
            let _ = writeln!(err, "harnessweaver: unknown command `{cmd}`\n\n{USAGE}");
            2
        }
    }
}

fn harness_path(arg: Option<&str>) -> PathBuf {
    let path = PathBuf::from(arg.unwrap_or("harness.yaml"));
    // A directory stands for its harness.yaml (and files print beside it).
    if path.is_dir() {
        path.join("harness.yaml")
    } else {
        path
    }
}

/// Prints `path` for a file relative to the harness directory, as the user
/// named that directory.
fn shown(harness: &Path, file: &str) -> String {
    match harness.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => format!("{}/{file}", parent.display()),
        None => file.to_string(),
    }
}

fn print_problems(e: &Error, harness: &Path, out: &mut dyn std::io::Write) {
    let problems = e.problems();
    for p in problems {
        let mut p = p.clone();
        if let Some(file) = &p.file {
            p.file = Some(shown(harness, file));
        }
        let _ = writeln!(out, "error: {p}");
    }
    if problems.is_empty() {
        let _ = writeln!(out, "error: {e}");
    }
}

fn doctor(args: &[&str], out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let mut file = None;
    for a in args {
        match *a {
            "--help" | "-h" => {
                let _ = writeln!(out, "{DOCTOR_HELP}");
                return 0;
            }
            s if s.starts_with('-') => {
                let _ = writeln!(err, "harnessweaver doctor: unknown option `{s}`\n\n{DOCTOR_HELP}");
                return 2;
            }
            s if file.is_none() => file = Some(s),
            s => {
                let _ = writeln!(err, "harnessweaver doctor: unexpected argument `{s}`\n\n{DOCTOR_HELP}");
                return 2;
            }
        }
    }
    let path = harness_path(file);
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => {
            print_problems(&e, &path, out);
            let n = e.problems().len().max(1);
            let _ = writeln!(out, "doctor: {n} problem{} in `{}`", plural(n), path.display());
            return 1;
        }
    };
    let mut failed = 0usize;
    let mut warned = 0usize;
    for tool in harness.tools() {
        let file = shown(&path, tool.file().unwrap_or_default());
        match tool.pin() {
            PinState::Pinned => {
                let _ = writeln!(out, "ok: {file}: tool `{}` is pinned", tool.name());
            }
            PinState::Mismatched => {
                failed += 1;
                let _ = writeln!(
                    out,
                    "error: {file}: tool `{}`: definition_digest does not match the definition; every call is refused \
                     (current digest {}); review the change, then run `harnessweaver tools pin` [digest_mismatch]",
                    tool.name(),
                    tool.digest()
                );
            }
            PinState::Unpinned => {
                warned += 1;
                let _ = writeln!(
                    out,
                    "warning: {file}: tool `{}` is not pinned; add `definition_digest: \"{}\"` under `spec:` \
                     or run `harnessweaver tools pin`",
                    tool.name(),
                    tool.digest()
                );
            }
        }
    }
    for (i, layer) in harness.spec().layers.iter().enumerate() {
        let rules = harness.spec().rules.iter().filter(|r| r.layer == i).count();
        if rules == 0 && layer.name == "harness" && layer.default_allow {
            continue;
        }
        let from = layer.file.as_deref().map_or_else(|| "inline".to_string(), |f| shown(&path, f));
        let default = if layer.default_allow { "allow" } else { "deny" };
        let _ = writeln!(
            out,
            "policy: layer `{}` ({}, default {default}, {from}): {rules} rule{}",
            layer.name,
            layer.mode.as_str(),
            plural(rules)
        );
    }
    for line in crate::transport::environment_warnings(&harness) {
        let _ = writeln!(out, "warning: {line}");
    }
    let governor = match Governor::from_harness(&harness, GovernorOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            print_problems(&e, &path, out);
            let n = e.problems().len().max(1);
            let _ = writeln!(out, "doctor: {n} problem{} in `{}`", plural(n), path.display());
            return 1;
        }
    };
    // MCP tools: what the server serves now must match the manifest (the rug pull).
    for tool in harness.tools() {
        if let Some(why) = governor.transports().live_pin_mismatch(tool.name()) {
            failed += 1;
            let file = shown(&path, tool.file().unwrap_or_default());
            let _ = writeln!(out, "error: {file}: tool `{}`: {why}; every call is refused [digest_mismatch]", tool.name());
        }
    }
    let n = harness.tools().len();
    if failed > 0 {
        let _ = writeln!(out, "doctor: {n} tool{} loaded; {failed} mismatched pin{}", plural(n), plural(failed));
        return 1;
    }
    let _ = writeln!(
        out,
        "doctor: {n} tool{} loaded; {warned} unpinned; no problems",
        plural(n),
    );
    0
}

fn explain(args: &[&str], out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let usage = |err: &mut dyn std::io::Write, what: String| {
        let _ = writeln!(err, "harnessweaver explain: {what}\n\n{EXPLAIN_HELP}");
        2
    };
    let (mut tool, mut harness, mut call_args, mut principal, mut tenant, mut json) = (None, None, None, None, None, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--help" | "-h" => {
                let _ = writeln!(out, "{EXPLAIN_HELP}");
                return 0;
            }
            "--json" => json = true,
            "--harness" | "--args" | "--principal" | "--tenant" => {
                let Some(v) = it.next() else { return usage(err, format!("`{a}` needs a value")) };
                match *a {
                    "--harness" => harness = Some(*v),
                    "--args" => call_args = Some(*v),
                    "--principal" => principal = Some(*v),
                    _ => tenant = Some((*v).to_string()),
                }
            }
            s if s.starts_with('-') => return usage(err, format!("unknown option `{s}`")),
            s if tool.is_none() => tool = Some(s),
            s => return usage(err, format!("unexpected argument `{s}`")),
        }
    }
    let Some(tool) = tool else { return usage(err, "name the tool to explain".into()) };
    let call_args: serde_json::Value = match serde_json::from_str(call_args.unwrap_or("{}")) {
        Ok(v) => v,
        Err(e) => return usage(err, format!("`--args` is not JSON: {e}")),
    };
    let principal = match principal {
        None => Principal::new("cli"),
        Some(text) if text.trim_start().starts_with('{') => {
            match serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string()).and_then(|v| Principal::from_value(&v).map_err(|e| e.to_string())) {
                Ok(p) => p,
                Err(e) => return usage(err, format!("`--principal`: {e}")),
            }
        }
        Some(id) => Principal::new(id),
    };
    let path = harness_path(harness);
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => {
            print_problems(&e, &path, out);
            return 1;
        }
    };
    let governor = match Governor::from_harness(&harness, GovernorOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            print_problems(&e, &path, out);
            return 1;
        }
    };
    let ctx = CallContext { principal, tenant, ..CallContext::default() };
    let explanation = governor.explain(tool, call_args, &ctx);
    if json {
        let _ = writeln!(out, "{}", explanation.to_value());
    } else {
        let _ = write!(out, "{}", explanation.to_text());
    }
    i32::from(explanation.decision != Decision::Allowed)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn tools_pin(args: &[&str], out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let mut file = None;
    let mut only: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--help" | "-h" => {
                let _ = writeln!(out, "{PIN_HELP}");
                return 0;
            }
            "--tool" => match it.next() {
                Some(name) => only = Some(name),
                None => {
                    let _ = writeln!(err, "harnessweaver tools pin: `--tool` needs a tool name\n\n{PIN_HELP}");
                    return 2;
                }
            },
            s if s.starts_with("--tool=") => only = s.strip_prefix("--tool="),
            s if s.starts_with('-') => {
                let _ = writeln!(err, "harnessweaver tools pin: unknown option `{s}`\n\n{PIN_HELP}");
                return 2;
            }
            s if file.is_none() => file = Some(s),
            s => {
                let _ = writeln!(err, "harnessweaver tools pin: unexpected argument `{s}`\n\n{PIN_HELP}");
                return 2;
            }
        }
    }
    let path = harness_path(file);
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => {
            print_problems(&e, &path, out);
            let _ = writeln!(out, "tools pin: fix the problems above first; nothing was written");
            return 1;
        }
    };
    let tools: Vec<&Tool> = match only {
        Some(name) => match harness.tool(name) {
            Some(t) => vec![t],
            None => {
                let _ = writeln!(err, "harnessweaver tools pin: no tool named `{name}` in `{}`", path.display());
                return 2;
            }
        },
        None => harness.tools().iter().collect(),
    };
    let mut changed = 0usize;
    let mut failed = 0usize;
    for tool in &tools {
        let file = shown(&path, tool.file().unwrap_or_default());
        if tool.pin() == PinState::Pinned {
            let _ = writeln!(out, "unchanged: {file}: tool `{}` is already pinned", tool.name());
            continue;
        }
        match pin::pin_file(tool) {
            Ok(()) => {
                changed += 1;
                let _ = writeln!(out, "pinned: {file}: tool `{}` at {}", tool.name(), tool.digest());
            }
            Err(e) => {
                failed += 1;
                let _ = writeln!(out, "error: {file}: tool `{}`: {e}", tool.name());
            }
        }
    }
    if failed > 0 {
        return 1;
    }
    if changed == 0 {
        let _ = writeln!(out, "tools pin: every tool already pinned; nothing changed");
    } else {
        let _ = writeln!(out, "tools pin: {changed} manifest{} updated", plural(changed));
    }
    let _ = out.flush();
    0
}
