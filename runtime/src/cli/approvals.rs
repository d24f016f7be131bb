//! `harnessweaver approvals list|approve|deny`: the approvals calls wait for,
//! in the state store harness.yaml names (shared with a running gateway).

use std::path::Path;
use std::sync::Arc;

use super::args::{Opt, Spec, JSON};
use super::gateway::principal_arg;
use super::ui::{harness_path, Io};
use harnessweaver_core::audit::NullSink;
use harnessweaver_core::governor::{Governor, Principal, Settings};
use harnessweaver_core::{IdSource, SystemClock};

use crate::store::open_store;
use harnessweaver_core::harness::{Harness, StateBackend};
use harnessweaver_core::store::PendingApproval;

const ABOUT: &str = "Lists, grants or denies the approvals calls are waiting for, in the state store
harness.yaml names (spec.state: sqlite:<file> or redis://…), so it works while a
gateway or an application runs in another process. A granted approval is used by
the next call of the same tool with the same arguments, principal and tenant.
--approver is who decides (a JSON object with roles, or a bare id; default
$USER): a tool's approver_role must be among its roles. --harness defaults to
./harness.yaml. The memory store cannot be reached from another process
(exit 1, [memory_store]). Exit 1 also for an unknown, decided or expired
approval, a missing role or an unavailable store; 2 on a usage error.";

const HARNESS: Opt = Opt::value("harness", "FILE", "the harness (default ./harness.yaml)");
const APPROVER: Opt = Opt::value("approver", "JSON|ID", "who decides (default $USER, no roles)");

pub(crate) const LIST: Spec = Spec {
    path: "approvals list",
    synopsis: "[harness.yaml] [--harness FILE] [--json]",
    about: ABOUT,
    opts: &[HARNESS, JSON],
    positionals: &[("harness.yaml", false)],
};

pub(crate) const APPROVE: Spec = Spec {
    path: "approvals approve",
    synopsis: "ID [--harness FILE] [--approver JSON|ID] [--json]",
    about: ABOUT,
    opts: &[HARNESS, APPROVER, JSON],
    positionals: &[("ID", true)],
};

pub(crate) const DENY: Spec = Spec {
    path: "approvals deny",
    synopsis: "ID [--reason TEXT] [--harness FILE] [--approver JSON|ID] [--json]",
    about: ABOUT,
    opts: &[Opt::value("reason", "TEXT", "why, for the record"), HARNESS, APPROVER, JSON],
    positionals: &[("ID", true)],
};

/// A governor over `spec.state` alone (no tools, no transports): enough to
/// list, grant and deny approvals.
pub(crate) fn approvals_governor(path: &Path, io: &mut Io<'_>, json: bool) -> Result<Governor, i32> {
    let harness = match Harness::load(path) {
        Ok(h) => h,
        Err(e) => {
            io.problems(&e, path, json);
            return Err(1);
        }
    };
    if harness.spec().state == StateBackend::Memory {
        let _ = writeln!(
            io.err,
            "harnessweaver approvals: `{}` keeps state in memory, inside the process that asked for the approval; \
             set `spec.state` to `sqlite:<file>` or `redis://…` so the gateway and this command share approvals [memory_store]",
            path.display()
        );
        return Err(1);
    }
    match open_store(&harness, false) {
        Ok(store) => {
            // The harness's approval rules hold here too (separation of duties).
            let approvals = harness.spec().approvals;
            let settings = Settings {
                allow_self_approval: approvals.allow_self_approval,
                max_open_approvals_per_principal: approvals.max_open_per_principal,
                ..Settings::default()
            };
            // With OTLP export configured, each decision's wait is recorded (issue 24).
            let sink = crate::telemetry::observe(&harness, Arc::new(NullSink));
            Ok(Governor::new(Vec::new(), Vec::new(), settings, store, Arc::new(SystemClock), IdSource::random(), sink))
        }
        Err(p) => {
            let _ = writeln!(io.err, "error: {p}");
            Err(1)
        }
    }
}

fn approval_line(a: &PendingApproval) -> String {
    let who = a.principal.get("id").and_then(serde_json::Value::as_str).unwrap_or("?");
    let tenant = a.tenant.as_deref().map(|t| format!(" tenant {t}")).unwrap_or_default();
    let role = a.approver_role.as_deref().map(|r| format!(" needs role {r};")).unwrap_or_default();
    format!("{}  {}  {}  by {who}{tenant};{role} {}", a.id, a.state.as_str(), a.tool, a.reasons.join("; "))
}

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let (spec, rest) = match args {
        ["list", rest @ ..] => (&LIST, rest),
        ["approve", rest @ ..] => (&APPROVE, rest),
        ["deny", rest @ ..] => (&DENY, rest),
        ["--help" | "-h", ..] => {
            let _ = writeln!(io.out, "{}", LIST.help());
            return 0;
        }
        [] => return io.usage(&LIST, "name a subcommand: list, approve or deny"),
        [other, ..] => return io.usage(&LIST, &format!("unknown subcommand `{other}` (list, approve or deny)")),
    };
    let a = match io.parse(spec, rest) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let listing = spec.path == LIST.path;
    let file = if listing { a.value("harness").or(a.pos(0)) } else { a.value("harness") };
    if a.pos(1).is_some() {
        return io.usage(spec, &format!("unexpected argument `{}`", a.pos(1).unwrap_or_default()));
    }
    let approver = match a.value("approver").map(principal_arg).transpose() {
        Ok(p) => p.unwrap_or_else(|| Principal::new(std::env::var("USER").unwrap_or_else(|_| "cli".into()))),
        Err(e) => return io.usage(spec, &format!("`--approver`: {e}")),
    };
    let path = harness_path(file);
    let governor = match approvals_governor(&path, io, json) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let decided = if listing {
        match governor.open_approvals() {
            Ok(list) => {
                if json {
                    io.json(&serde_json::to_value(&list).unwrap_or_default());
                } else if list.is_empty() {
                    let _ = writeln!(io.out, "approvals: none open");
                } else {
                    for a in &list {
                        let _ = writeln!(io.out, "{}", approval_line(a));
                    }
                }
                return 0;
            }
            Err(e) => Err(e),
        }
    } else if spec.path == APPROVE.path {
        governor.approve(a.pos(0).unwrap_or_default(), &approver)
    } else {
        governor.deny(a.pos(0).unwrap_or_default(), &approver.id, a.value("reason").unwrap_or("denied with harnessweaver approvals deny"))
    };
    match decided {
        Ok(a) => {
            if json {
                io.json(&serde_json::to_value(&a).unwrap_or_default());
            } else {
                let _ = writeln!(io.out, "{}", approval_line(&a));
            }
            0
        }
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver approvals: {e} [{}]", e.code());
            1
        }
    }
}
