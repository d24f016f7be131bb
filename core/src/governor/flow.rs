//! Step 6's provenance checks (issue 23): the origin of each sink argument,
//! `flow.tainted_arguments`, and `flow.trifecta: provenance`. The values a
//! run has seen are in [`super::runs`]; how a value is matched, in
//! [`super::provenance`].

use serde_json::Value;

use super::provenance::{is_default_sink, Origin};
use super::steps::Deciding;
use super::{Governor, Refusal, Stop, TaintedMode, ToolRuntime};
use crate::audit::SinkDigest;
use crate::call::{RefusalCode, Step};
use crate::canonical;
use crate::digest::sha256_tagged;

/// A sink argument whose value is not traceable to trusted input, or a
/// content argument (`flow.links`) that carries a link only untrusted
/// content held.
#[derive(Debug)]
pub(super) struct Doubt {
    /// The argument.
    pub name: String,
    /// Where its value (or, for a link, the link) came from.
    pub origin: Origin,
    /// `sha256:` of the value's canonical text.
    pub digest: String,
    /// A content argument with a tainted link, not a sink.
    pub link: bool,
}

/// The origin of each sink argument of one call that is not trusted, and
/// whether the tool has any sink at all.
#[derive(Debug, Default)]
pub(super) struct SinkOrigins {
    /// Untrusted sink arguments, and content arguments with a tainted link.
    pub doubtful: Vec<Doubt>,
    /// The tool declares its sinks (`flow.sinks`, even `[]`), or has arguments named like a destination.
    pub has_sinks: bool,
    /// Provenance was not looked at (no flow setting reads it).
    pub skipped: bool,
}

/// The sink arguments present in `args`.
fn sink_names<'a>(rt: &'a ToolRuntime, args: &'a Value) -> (bool, Vec<&'a str>) {
    let Some(map) = args.as_object() else { return (false, Vec::new()) };
    match &rt.sinks {
        Some(declared) => (true, declared.iter().map(String::as_str).filter(|k| map.contains_key(*k)).collect()),
        None if rt.egress.is_empty() => (false, Vec::new()),
        None => {
            let names: Vec<&str> = map.keys().map(String::as_str).filter(|k| is_default_sink(k)).collect();
            (!names.is_empty(), names)
        }
    }
}

impl Governor {
    /// Records the run's `task` as trusted input and finds where each sink
    /// argument of the call came from.
    pub(super) fn sink_origins(&self, rt: &ToolRuntime, call: &Deciding<'_>) -> SinkOrigins {
        if !self.provenance_on {
            return SinkOrigins { skipped: true, ..SinkOrigins::default() };
        }
        let (has_sinks, names) = sink_names(rt, call.args);
        self.runs.with(call.run_id, |memory, hasher| {
            if let Some(task) = &call.ctx.task {
                memory.values.add_task(hasher, task);
            }
            let mut doubtful = Vec::new();
            let digest = |value: &Value| canonical::to_string(value).map(|t| sha256_tagged(t.as_bytes())).unwrap_or_default();
            for name in names {
                let Some(value) = call.args.get(name) else { continue };
                let origin = memory.values.origin(hasher, name, value);
                if origin != Origin::Trusted {
                    doubtful.push(Doubt { name: name.to_string(), origin, digest: digest(value), link: false });
                }
            }
            for name in &rt.links {
                let Some(value) = call.args.get(name) else { continue };
                let origin = worst_text(value, &mut |t| memory.values.link_origin(hasher, t));
                if origin != Origin::Trusted {
                    doubtful.push(Doubt { name: name.clone(), origin, digest: digest(value), link: true });
                }
            }
            SinkOrigins { doubtful, has_sinks, skipped: false }
        })
    }

    /// `flow.intent`: a tool that says which words of a request ask for what
    /// it does runs only in a run whose task uses them; otherwise
    /// `flow.unrequested_actions` refuses it (`action_not_requested`), sends it
    /// to a human, or lets it run. The task is the host's (the user's request),
    /// never a tool's output, so nothing a tool returns can ask for an action.
    pub(super) fn intent(&self, rt: &ToolRuntime, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let Some(intent) = &rt.intent else { return Ok(()) };
        if intent.requested_by(call.ctx.task.as_deref()).is_some() {
            call.intent = Some("requested");
            return Ok(());
        }
        call.intent = Some("unrequested");
        let entries: Vec<String> = intent.entries().map(|e| format!("`{e}`")).collect();
        let reason = if call.ctx.task.is_some() {
            format!("the run's task asks for none of {} (`flow.intent`)", entries.join(", "))
        } else {
            "the run has no task to ask for it (`flow.intent`)".to_string()
        };
        match self.settings.unrequested_actions {
            TaintedMode::Allow => Ok(()),
            TaintedMode::Approve => {
                call.approval_reasons.push(format!("action_not_requested: {reason}"));
                call.asked_by.push("action_not_requested".into());
                Ok(())
            }
            TaintedMode::Refuse => {
                let mut r = Refusal::new(
                    RefusalCode::ActionNotRequested,
                    Step::Flow,
                    format!("`{}` does what the user's request did not ask for", call.tool),
                );
                r.reasons.push(reason);
                Err(Stop::Refused(r))
            }
        }
    }

    /// `flow.tainted_arguments`: a sink argument whose value came only from
    /// untrusted content is refused (`tainted_argument`), or sent to approval.
    pub(super) fn tainted_arguments(&self, sinks: &SinkOrigins, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let tainted = || sinks.doubtful.iter().filter(|d| d.origin == Origin::Tainted);
        let reasons: Vec<String> = tainted().map(reason).collect();
        if reasons.is_empty() {
            return Ok(());
        }
        if self.settings.tainted_arguments != TaintedMode::Allow {
            mark(call, tainted());
        }
        match self.settings.tainted_arguments {
            TaintedMode::Allow => Ok(()),
            TaintedMode::Approve => {
                call.approval_reasons.extend(reasons.into_iter().map(|r| format!("tainted_argument: {r}")));
                call.asked_by.push("tainted_argument".into());
                Ok(())
            }
            TaintedMode::Refuse => {
                let mut r = Refusal::new(
                    RefusalCode::TaintedArgument,
                    Step::Flow,
                    if tainted().all(|d| d.link) {
                        format!("an argument of `{}` carries a link that came only from untrusted content", call.tool)
                    } else {
                        format!("an argument of `{}` that chooses where data goes came only from untrusted content", call.tool)
                    },
                );
                r.reasons = reasons;
                Err(Stop::Refused(r))
            }
        }
    }

    /// `flow.trifecta: provenance` in a private, untrusted run: the call may
    /// send data out when every sink argument is traceable to trusted input.
    /// A tool with egress and no sink argument is refused as under `block`.
    pub(super) fn trifecta_provenance(&self, sinks: &SinkOrigins, call: &mut Deciding<'_>) -> Result<(), Stop> {
        if sinks.has_sinks && sinks.doubtful.is_empty() && !sinks.skipped {
            return Ok(());
        }
        let reasons: Vec<String> = if sinks.has_sinks {
            mark(call, sinks.doubtful.iter());
            sinks.doubtful.iter().map(reason).collect()
        } else {
            vec!["private + untrusted + egress, and no sink argument to trace".into()]
        };
        if self.settings.tainted_arguments == TaintedMode::Approve {
            call.approval_reasons.extend(reasons.into_iter().map(|r| format!("trifecta: {r}")));
            call.asked_by.push("trifecta".into());
            return Ok(());
        }
        let mut r = Refusal::new(
            RefusalCode::Trifecta,
            Step::Flow,
            format!(
                "`{}` sends data out of a run that read private data and saw untrusted content, to a destination not traceable to trusted input",
                call.tool
            ),
        );
        r.reasons = reasons;
        Err(Stop::Refused(r))
    }

    /// cel-lite's `run` for a call of `run_id`.
    pub(super) fn run_value(&self, run_id: &str) -> Value {
        self.runs.with(run_id, |memory, _| memory.to_value())
    }
}

/// Notes the sink arguments that stop the call (or send it to a human) for
/// its audit event, each once.
fn mark<'s>(call: &mut Deciding<'_>, doubtful: impl Iterator<Item = &'s Doubt>) {
    for d in doubtful {
        if !call.sinks.iter().any(|s| s.argument == d.name) {
            let origin = match (d.link, d.origin) {
                (true, Origin::Tainted) => "tainted_link",
                (true, _) => "untraced_link",
                (false, o) => o.as_str(),
            };
            call.sinks.push(SinkDigest { argument: d.name.clone(), origin: origin.to_string(), digest: d.digest.clone() });
        }
    }
}

/// A reason naming the argument and its value's digest (never the value).
fn reason(d: &Doubt) -> String {
    if d.link && d.origin == Origin::Tainted {
        format!("argument `{}` ({}) carries a link that came only from untrusted content", d.name, d.digest)
    } else if d.link {
        format!("argument `{}` ({}) carries a link not traceable to trusted input", d.name, d.digest)
    } else {
        format!("argument `{}` ({}) {}", d.name, d.digest, d.origin.describe())
    }
}

/// The least trusted origin `f` gives a string in `value`.
fn worst_text(value: &Value, f: &mut impl FnMut(&str) -> Origin) -> Origin {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().map(|v| worst_text(v, f)).max().unwrap_or(Origin::Trusted),
        Value::Object(map) => map.values().map(|v| worst_text(v, f)).max().unwrap_or(Origin::Trusted),
        _ => Origin::Trusted,
    }
}
