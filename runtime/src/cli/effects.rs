//! `harnessweaver effects list|resolve|compensate` (issue 21): the effect
//! journal harness.yaml names (`spec.effects.journal: sqlite:<file>` or
//! `redis://…`), read and resolved from another process than the one that
//! made the calls; and the hidden `_effect-call` worker of the crash tests.

use std::path::Path;

use serde_json::Value;

use super::args::{Opt, Spec, JSON};
use super::gateway::principal_arg;
use super::ui::{harness_path, Io};
use harnessweaver_core::effects::{self, EffectEntry, EffectState, Journal};
use harnessweaver_core::governor::{CallContext, Principal};
use harnessweaver_core::harness::{Harness, JournalBackend};
use harnessweaver_core::runtime::LoadOptions;

const ABOUT: &str = "Lists the effect journal's entries (each external write's intent and outcome),
resolves an `unknown` one by hand (--applied if the write happened, --not-applied
if it did not: a `retry_mode: none` retry is refused until then), or compensates
a succeeded call by running its tool's `effect.compensation` through the nine
steps as --principal. The journal is the one harness.yaml names in
spec.effects.journal (sqlite:<file> or redis://…); the memory journal cannot be
reached from another process (exit 1, [memory_journal]). --harness defaults to
./harness.yaml. Exit 1 for an unknown or known entry or an unavailable journal.";

const HARNESS: Opt = Opt::value("harness", "FILE", "the harness (default ./harness.yaml)");

pub(crate) const LIST: Spec = Spec {
    path: "effects list",
    synopsis: "[harness.yaml] [--harness FILE] [--state unknown|succeeded|failed] [--json]",
    about: ABOUT,
    opts: &[HARNESS, Opt::value("state", "STATE", "only entries in this state"), JSON],
    positionals: &[("harness.yaml", false)],
};

pub(crate) const RESOLVE: Spec = Spec {
    path: "effects resolve",
    synopsis: "CALL_ID --applied|--not-applied [--by ID] [--harness FILE] [--json]",
    about: ABOUT,
    opts: &[
        Opt::flag("applied", "the write happened"),
        Opt::flag("not-applied", "the write did not happen"),
        Opt::value("by", "ID", "who resolves it (default $USER)"),
        HARNESS,
        JSON,
    ],
    positionals: &[("CALL_ID", true)],
};

pub(crate) const COMPENSATE: Spec = Spec {
    path: "effects compensate",
    synopsis: "CALL_ID --principal JSON|ID [--tenant T] [--harness FILE] [--json]",
    about: ABOUT,
    opts: &[
        Opt::value("principal", "JSON|ID", "who compensates (their own authority is checked)"),
        Opt::value("tenant", "T", "the tenant"),
        HARNESS,
        JSON,
    ],
    positionals: &[("CALL_ID", true)],
};

fn load(path: &Path, io: &mut Io<'_>, json: bool) -> Result<Harness, i32> {
    let harness = io.load_harness(path, json)?;
    if harness.spec().effects.journal == JournalBackend::Memory {
        let _ = writeln!(
            io.err,
            "harnessweaver effects: `{}` keeps its effect journal in memory, inside the process that made the calls; \
             set `spec.effects.journal` to `sqlite:<file>` or `redis://…` [memory_journal]",
            path.display()
        );
        return Err(1);
    }
    Ok(harness)
}

fn journal(harness: &Harness, io: &mut Io<'_>) -> Result<std::sync::Arc<dyn Journal>, i32> {
    crate::store::open_journal(harness).map_err(|p| {
        let _ = writeln!(io.err, "error: {p}");
        1
    })
}

fn line(e: &EffectEntry) -> String {
    let how = e.resolution.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    let link = match (&e.compensates, &e.compensated_by) {
        (Some(c), _) => format!(" compensates {c}"),
        (None, Some(c)) => format!(" compensated by {c}"),
        _ => String::new(),
    };
    format!("{}  {}{how}  {}  retry {}  by {}  key {}{link}", e.call_id, e.state.as_str(), e.tool, e.retry_mode, e.principal, e.idempotency_key)
}

fn print(io: &mut Io<'_>, json: bool, value: &Value, text: &str) {
    if json {
        io.json(value);
    } else {
        let _ = writeln!(io.out, "{text}");
    }
}

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let (spec, rest) = match args {
        ["list", rest @ ..] => (&LIST, rest),
        ["resolve", rest @ ..] => (&RESOLVE, rest),
        ["compensate", rest @ ..] => (&COMPENSATE, rest),
        ["--help" | "-h", ..] => {
            let _ = writeln!(io.out, "{}", LIST.help());
            return 0;
        }
        [] => return io.usage(&LIST, "name a subcommand: list, resolve or compensate"),
        [other, ..] => return io.usage(&LIST, &format!("unknown subcommand `{other}` (list, resolve or compensate)")),
    };
    let a = match io.parse(spec, rest) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let listing = spec.path == LIST.path;
    let path = harness_path(if listing { a.value("harness").or(a.pos(0)) } else { a.value("harness") });
    let state = match a.value("state").map(|s| EffectState::parse(s).ok_or(s)).transpose() {
        Ok(s) => s,
        Err(s) => return io.usage(spec, &format!("`--state` is `{s}`; expected unknown, succeeded or failed")),
    };
    if spec.path == COMPENSATE.path {
        return compensate(&a, &path, io, json);
    }
    let applied = match (a.flag("applied"), a.flag("not-applied")) {
        (true, false) => true,
        (false, true) => false,
        _ if listing => false,
        _ => return io.usage(spec, "say what happened: `--applied` or `--not-applied`"),
    };
    let harness = match load(&path, io, json) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let journal = match journal(&harness, io) {
        Ok(j) => j,
        Err(code) => return code,
    };
    if listing {
        return match journal.list() {
            Ok(list) => {
                let shown: Vec<&EffectEntry> = list.iter().filter(|e| state.is_none_or(|s| e.state == s)).collect();
                let text = if shown.is_empty() { "effects: none".to_string() } else { shown.iter().map(|e| line(e)).collect::<Vec<_>>().join("\n") };
                print(io, json, &effects::entries_json(&list, state), &text);
                0
            }
            Err(e) => {
                let _ = writeln!(io.err, "harnessweaver effects: {e} [store_unavailable]");
                1
            }
        };
    }
    let by = a.value("by").map(str::to_string).unwrap_or_else(|| std::env::var("USER").unwrap_or_else(|_| "cli".into()));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    match effects::resolve(&*journal, a.pos(0).unwrap_or_default(), applied, &by, now) {
        Ok(e) => {
            print(io, json, &serde_json::to_value(&e).unwrap_or_default(), &line(&e));
            0
        }
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver effects: {e} [{}]", e.code());
            1
        }
    }
}

/// `effects compensate`: the inverse tool through the nine steps (a native
/// inverse tool needs its host: exit 3).
fn compensate(a: &super::args::Args, path: &Path, io: &mut Io<'_>, json: bool) -> i32 {
    let principal = match a.value("principal").map(principal_arg) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return io.usage(&COMPENSATE, &format!("`--principal`: {e}")),
        None => return io.usage(&COMPENSATE, "`--principal` is required: compensation runs with its authority"),
    };
    let runtime = match crate::load(path, LoadOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            io.problems(&e, path, json);
            return 1;
        }
    };
    let ctx = CallContext { principal, tenant: a.value("tenant").map(str::to_string), ..CallContext::default() };
    let governor = runtime.governor();
    let (tool, args, ctx) = match governor.compensation(a.pos(0).unwrap_or_default(), &ctx) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver effects: {e} [{}]", e.code());
            return 1;
        }
    };
    let result = runtime.call(&tool, args, &ctx);
    let text = format!("{} {} {}", result.call_id, result.decision.as_str(), result.code.map_or("", |c| c.as_str()));
    print(io, json, &result.to_value(), &text);
    i32::from(result.decision != harnessweaver_core::governor::Decision::Allowed)
}

/// `_effect-call --harness FILE --tool T --args JSON --principal ID`: one
/// governed call through the full runtime, its result as one JSON line (the
/// worker the crash tests kill between intent and outcome).
pub(crate) fn worker(args: &[&str], io: &mut Io<'_>) -> i32 {
    let get = |key: &str| args.iter().position(|a| *a == key).and_then(|i| args.get(i + 1)).copied();
    let (Some(path), Some(tool), Some(call_args), Some(principal)) = (get("--harness"), get("--tool"), get("--args"), get("--principal")) else {
        let _ = writeln!(io.err, "usage: harnessweaver _effect-call --harness FILE --tool T --args JSON --principal ID");
        return 2;
    };
    let Ok(call_args) = serde_json::from_str::<Value>(call_args) else {
        let _ = writeln!(io.err, "harnessweaver _effect-call: `--args` is not JSON");
        return 2;
    };
    let runtime = match crate::load(Path::new(path), LoadOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.err, "{e}");
            return 1;
        }
    };
    let ctx = CallContext { principal: Principal::new(principal), ..CallContext::default() };
    let result = runtime.call(tool, call_args, &ctx);
    let _ = writeln!(io.out, "{}", result.to_value());
    0
}
