//! `harnessweaver explain`: the nine steps for one call, without invoking it.

use super::args::{Opt, Spec, JSON};
use super::ui::{harness_path, Io};
use harnessweaver_core::governor::{CallContext, Decision, Governor, Principal};
use harnessweaver_core::harness::Harness;

pub(crate) const SPEC: Spec = Spec {
    path: "explain",
    synopsis: "TOOL [--args JSON] [--principal JSON|ID] [--tenant T] [--harness FILE] [--json]",
    about: "Runs the nine steps for one call of TOOL without invoking it and without counting
it against budgets or rate limits, creating approvals or labelling a run, and
prints each step's verdict with the rule, field or expression behind it, and what
rules in shadow mode would refuse. --principal takes a JSON object
({\"id\": …, \"roles\": […], \"scopes\": […], \"attrs\": {…}}) or a bare id.
--harness defaults to ./harness.yaml. Exit 0 when the call would run, 1 when it
would be refused or wait for approval, 2 on a usage error.",
    opts: &[
        Opt::value("args", "JSON", "the call's arguments (default {})"),
        Opt::value("principal", "JSON|ID", "who calls (default the id `cli`)"),
        Opt::value("tenant", "T", "the tenant the call is for"),
        Opt::value("harness", "FILE", "the harness (default ./harness.yaml)"),
        JSON,
    ],
    positionals: &[("TOOL", true)],
};

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&SPEC, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let tool = a.pos(0).unwrap_or_default();
    let call_args: serde_json::Value = match serde_json::from_str(a.value("args").unwrap_or("{}")) {
        Ok(v) => v,
        Err(e) => return io.usage(&SPEC, &format!("`--args` is not JSON: {e}")),
    };
    let principal = match a.value("principal") {
        None => Principal::new("cli"),
        Some(text) if text.trim_start().starts_with('{') => {
            match serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| e.to_string())
                .and_then(|v| Principal::from_value(&v).map_err(|e| e.to_string()))
            {
                Ok(p) => p,
                Err(e) => return io.usage(&SPEC, &format!("`--principal`: {e}")),
            }
        }
        Some(id) => Principal::new(id),
    };
    let path = harness_path(a.value("harness"));
    let loaded = Harness::load(&path).and_then(|h| Governor::from_harness(&h, crate::governor_options()));
    let governor = match loaded {
        Ok(g) => g,
        Err(e) => {
            io.problems(&e, &path, json);
            return 1;
        }
    };
    let ctx = CallContext { principal, tenant: a.value("tenant").map(str::to_string), ..CallContext::default() };
    let explanation = governor.explain(tool, call_args, &ctx);
    if json {
        let _ = writeln!(io.out, "{}", explanation.to_value());
    } else {
        let _ = write!(io.out, "{}", explanation.to_text());
    }
    i32::from(explanation.decision != Decision::Allowed)
}
