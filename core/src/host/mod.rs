//! The host API: the one thing bindings (Python, Node, Swift) call.
//!
//! A binding converts values and runs host handlers; everything else is
//! decided here: which handlers to import and from where, the audit
//! callback rule, a call's steps and its timeout verdict, approvals and
//! their resumption, the shaping of callbacks' views and answers, the
//! cel-lite variable check, sanitizer names, the refusal classes, the
//! text of a load error, and the watchdog that interrupts a caller-thread
//! handler at its deadline.

mod callbacks;
pub mod cel;
mod classes;
mod host_fn;
mod ids;
mod kwargs;
mod load;
mod request;
mod values;
mod walk;
mod watchdog;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use crate::audit::{ApprovalDecided, AuditEvent, Timings};
pub use crate::canonical;
pub use crate::codes::{ArgumentCode, ClassExtra, ProblemCode, RefusalClass, RefusalCode};
pub use crate::digest::{definition_digest, definition_digest_canonical, tool_definition_digest};
pub use crate::error::{Error, Problem};
pub use crate::governor::{ApprovalRequest, CallContext, CallResult, Decision, Explanation, InvokeOutcome as TransportOutcome, Principal, Step};
pub use crate::manifest::Tool;
pub use crate::progress::{Progress, ProgressDrop, ProgressEvent, ProgressListener, ProgressSink};
pub use crate::runtime::SpecFormat;
pub use crate::sanitize::Counts as SanitizeCounts;
pub use crate::store::{Labels, PendingApproval};
pub use callbacks::{ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback};
pub use classes::ErrorClass;
pub use host_fn::HostFn;
pub use ids::{bind_method, call_context, id_of, named, principal_of, CONTEXT_ARGS, ID_ARGS};
pub use kwargs::Kwargs;
pub use load::{
    handler_ref_problems, handler_refusal, origin_allowed, HandlerDecl, HandlerMode, HandlerRef, HandlerResolver, HostOptions, ManifestSource,
    Resolved, TestOptions,
};
pub use request::{request, tables, ERROR_CLASSES, METHODS};
pub use values::{value_error, value_of_text};
pub use walk::{walk, HostValues, JsonValues, Kind};
pub use watchdog::{Interrupter, Watchdog};

use crate::clock::ManualClock;
use crate::governor::{Begin, Governor, InvokeOutcome, Transport};
use crate::harness::Harness;
use crate::runtime::Runtime;
use std::sync::Arc;

/// The manifest values of `spec.risk`, in order.
pub const RISKS: &[&str] = &["low", "medium", "high", "critical"];
/// The manifest values of `spec.side_effect`, in order.
pub const SIDE_EFFECTS: &[&str] = &["none", "read", "write_internal", "write_external", "destructive"];

/// A load that failed: every problem found, each with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadErrors {
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

impl LoadErrors {
    /// The code: the problem's own when there is one, else `load_error`.
    pub fn code(&self) -> &str {
        match self.problems.as_slice() {
            [one] => one.code.as_str(),
            _ => "load_error",
        }
    }

    /// The one text of a load error: `N problems found` and a line per
    /// problem with `file:line:column: path: message [code]`.
    pub fn text(&self) -> String {
        Error::Load(self.problems.clone()).to_string()
    }
}

impl From<Error> for LoadErrors {
    fn from(e: Error) -> Self {
        match e {
            Error::Load(problems) => LoadErrors { problems },
            other => LoadErrors { problems: vec![Problem::new(other.code(), other.to_string())] },
        }
    }
}

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// How a host runs one tool's handler.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostHandler {
    mode: HandlerMode,
    takes_key: bool,
    takes_progress: bool,
}

/// A harness loaded for calls, or only read ([`Host::inspect`]).
enum State {
    Loaded(Arc<Runtime>),
    Inspected(Box<Harness>),
}

/// A harness loaded for a host.
pub struct Host {
    state: State,
    handlers: HashMap<String, HostHandler>,
    clock: Option<ManualClock>,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host").field("tools", &self.tools().count()).finish()
    }
}

/// Where a ticket's tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketRoute {
    /// A host handler.
    Host {
        /// How it runs.
        mode: HandlerMode,
        /// Pass it the idempotency key.
        takes_idempotency_key: bool,
    },
    /// The core's transports (http, code, mcp): [`Host::run_transport`].
    Transport,
}

/// A call that passed steps 1–7 and may run now. Bindings read it; only
/// [`Host::begin`] makes one.
#[derive(Debug)]
pub struct Ticket {
    inner: crate::governor::Ticket,
    deadline: Instant,
    route: TicketRoute,
    /// A host handler that receives its secret values (`secrets_delivery: native`).
    native_secrets: bool,
    /// A host handler that takes a progress callback (issue 22).
    takes_progress: bool,
}

impl Ticket {
    /// The tool.
    pub fn tool(&self) -> &str {
        &self.inner.tool
    }
    /// The validated arguments.
    pub fn args(&self) -> &Value {
        &self.inner.args
    }
    /// The idempotency key.
    pub fn idempotency_key(&self) -> &str {
        &self.inner.idempotency_key
    }
    /// The tool's timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.inner.timeout_ms)
    }
    /// When the handler's time is up (monotonic).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
    /// The time left: what a worker waits or a timer is set to.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
    /// Where the tool runs.
    pub fn route(&self) -> TicketRoute {
        self.route
    }
    /// The governor's ticket of the call (its id, run and tool): what a
    /// runtime relays the running call's messages for (issue 22).
    pub fn call(&self) -> &crate::governor::Ticket {
        &self.inner
    }
    /// The secret values a host handler receives, `{HANDLE: value}` (issue
    /// 21): only for a tool whose manifest opts in with `secrets_delivery:
    /// native` (a handle whose source gave nothing is absent); `None` for
    /// every other ticket. A binding hands it to the handler as is (Python:
    /// the `secrets` keyword; Node: `ctx.secrets`); step 9 masks every echo.
    pub fn secrets(&self) -> Option<Value> {
        self.native_secrets.then(|| Value::Object(self.inner.secrets().iter().map(|(h, v)| (h.to_string(), Value::from(v))).collect()))
    }
    /// The progress callback a host handler receives (issue 22): for a
    /// handler that takes one (Python: a `progress` parameter; Node: always,
    /// `ctx.progress`), `None` for every other ticket. A binding hands it over
    /// and forwards each call to [`Progress::report`], which decides (see
    /// [`crate::progress`]); it works for the whole call, even after the
    /// binding let go of the ticket, and drops what comes after the call ends.
    pub fn progress(&self) -> Option<Progress> {
        self.takes_progress.then(|| self.inner.progress().clone())
    }
}

/// A ticket held by a host object that may outlive it: it finishes once.
#[derive(Debug)]
pub struct TicketCell(Mutex<Option<Ticket>>);

impl TicketCell {
    /// Holds `ticket`.
    pub fn new(ticket: Ticket) -> Self {
        Self(Mutex::new(Some(ticket)))
    }
    /// The ticket; `ticket_used` when it has finished already.
    pub fn take(&self) -> Result<Ticket, Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take().ok_or_else(|| invalid("ticket_used", "this call has already finished"))
    }
    /// Reads the ticket while it is held.
    pub fn peek<R>(&self, f: impl FnOnce(&Ticket) -> R) -> Option<R> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(f)
    }
}

/// What [`Host::begin`] decided.
#[derive(Debug)]
pub enum Begun {
    /// Steps 1–7 passed: run it, then [`Host::finish`].
    Allowed(Ticket),
    /// A step refused; audited.
    Refused(CallResult),
    /// Waiting for a human; audited; `result.approval` is set.
    Pending(CallResult),
}

impl Outcome {
    /// A handler's value that has no JSON form, named by the JSON pointer to
    /// the part that failed and the rule it broke (`at `/n`: `integer_out_of_range``),
    /// the same in every language and never the value (issue 17, item 12).
    pub fn not_json(error: &Error) -> Outcome {
        Outcome::NotJson { reason: format!("at `{}`: `{}`", error.pointer().unwrap_or("/"), error.code()) }
    }
}

/// What a host handler did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It returned this value.
    Returned(Value),
    /// It returned something with no JSON form.
    NotJson {
        /// Where and which rule (from [`Outcome::not_json`]): never the value.
        reason: String,
    },
    /// It raised or threw `kind` (the exception class or error name).
    Failed {
        /// The exception class or error name.
        kind: String,
    },
    /// The host abandoned it at the deadline.
    TimedOut,
}

fn invalid(code: &'static str, message: impl Into<String>) -> Error {
    Error::InvalidArgument { code, message: message.into() }
}

impl Host {
    fn gov(&self) -> Result<&Governor, Error> {
        self.governor().ok_or_else(|| invalid("not_loaded_for_calls", "this harness was opened with inspect() and cannot take calls; use load()"))
    }

    fn governor(&self) -> Option<&Governor> {
        match &self.state {
            State::Loaded(r) => Some(r.governor()),
            State::Inspected(_) => None,
        }
    }

    /// The harness.
    pub fn harness(&self) -> &Harness {
        match &self.state {
            State::Loaded(r) => r.harness(),
            State::Inspected(h) => h,
        }
    }

    /// The runtime of a harness loaded for calls (the MCP gateway serves it).
    pub fn runtime(&self) -> Option<Arc<Runtime>> {
        match &self.state {
            State::Loaded(r) => Some(r.clone()),
            State::Inspected(_) => None,
        }
    }

    /// Every tool: the harness's manifests, then tools registered in code.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> + Clone {
        let extra = match &self.state {
            State::Loaded(r) => r.extra_tools(),
            State::Inspected(_) => &[],
        };
        self.harness().tools().iter().chain(extra.iter())
    }

    /// The directory holding harness.yaml.
    pub fn harness_dir(&self) -> &Path {
        self.harness().dir()
    }

    /// The harness settings, defaults filled in.
    pub fn describe(&self) -> Value {
        self.harness().describe()
    }

    fn begun(&self, begin: Begin) -> Begun {
        match begin {
            Begin::Done(result) if result.decision == Decision::Pending => Begun::Pending(result),
            Begin::Done(result) => Begun::Refused(result),
            Begin::Invoke(inner) => Begun::Allowed(self.ticket(inner)),
        }
    }

    /// A ticket the runtime crate's gateway began on its own (it runs
    /// steps 1–7 itself and hands native tools to the host): the host's
    /// ticket, its deadline counted from now.
    pub fn adopt(&self, ticket: crate::governor::Ticket) -> Ticket {
        self.ticket(ticket)
    }

    fn ticket(&self, inner: crate::governor::Ticket) -> Ticket {
        let takes_progress = self.handlers.get(&inner.tool).is_some_and(|h| h.takes_progress);
        let route = match (&inner.transport, self.handlers.get(&inner.tool)) {
            (Transport::Native { .. }, Some(h)) => TicketRoute::Host { mode: h.mode, takes_idempotency_key: h.takes_key },
            // A native tool always has a handler (checked at load);
            // should one be missing, the host reports it failed.
            (Transport::Native { .. }, None) => TicketRoute::Host { mode: HandlerMode::CallerThread, takes_idempotency_key: false },
            _ => TicketRoute::Transport,
        };
        let deadline = Instant::now() + Duration::from_millis(inner.timeout_ms);
        let native_secrets =
            matches!(route, TicketRoute::Host { .. }) && self.governor().and_then(|g| g.tool(&inner.tool)).is_some_and(|t| t.native_secrets);
        Ticket { inner, deadline, route, native_secrets, takes_progress: takes_progress && matches!(route, TicketRoute::Host { .. }) }
    }

    /// Steps 1–7.
    pub fn begin(&self, tool: &str, args: Value, ctx: &CallContext) -> Result<Begun, Error> {
        let governor = self.gov()?;
        Ok(self.begun(governor.begin(tool, args, ctx)))
    }

    /// Steps 8 (the verdict) and 9 for a host handler's outcome. An outcome
    /// observed after the ticket's deadline ends `timeout` (output withheld),
    /// whatever the handler's mode or language.
    pub fn finish(&self, ticket: Ticket, outcome: Outcome) -> CallResult {
        let late = Instant::now() > ticket.deadline;
        let outcome = match outcome {
            _ if late => InvokeOutcome::TimedOut,
            // The values the handler received: step 9 masks every echo of them.
            Outcome::Returned(value) if ticket.native_secrets && !ticket.inner.secrets().is_empty() => {
                InvokeOutcome::ReturnedWithSecrets { value, secrets: ticket.inner.secrets().values() }
            }
            Outcome::Returned(v) => InvokeOutcome::Returned(v),
            Outcome::NotJson { reason } => InvokeOutcome::NotJson { reason },
            Outcome::Failed { kind } => InvokeOutcome::Failed { kind },
            Outcome::TimedOut => InvokeOutcome::TimedOut,
        };
        self.finish_inner(ticket, outcome)
    }

    fn finish_inner(&self, ticket: Ticket, outcome: InvokeOutcome) -> CallResult {
        match self.governor() {
            Some(g) => g.finish(ticket.inner, outcome),
            // No governor, no ticket: unreachable, and harmless.
            None => CallResult {
                call_id: ticket.inner.call_id,
                run_id: ticket.inner.run_id,
                ..host_failure(&ticket.inner.tool, "this harness cannot take calls")
            },
        }
    }

    /// Step 8 for a [`TicketRoute::Transport`] ticket: blocking, bounded by
    /// the tool's timeout; call it off the host's main thread.
    pub fn run_transport(&self, ticket: &Ticket) -> TransportOutcome {
        match self.governor() {
            Some(g) => g.invoke(&ticket.inner),
            None => TransportOutcome::Failed { kind: "not loaded for calls".into() },
        }
    }

    /// Steps 8 and 9 for a transport's outcome (the transport enforced the timeout).
    pub fn finish_transport(&self, ticket: Ticket, outcome: TransportOutcome) -> CallResult {
        self.finish_inner(ticket, outcome)
    }

    /// A ticket the host lost (its handler object could not be made, or the
    /// host's invoke path answered garbage): ends `handler_error`, audited.
    pub fn finish_lost(&self, ticket: Ticket, kind: &str) -> CallResult {
        self.finish_inner(ticket, InvokeOutcome::Failed { kind: kind.to_string() })
    }

    /// Grants approval `id` as `approver` (with the approver's edited args,
    /// if any) and begins the approved call from step 1.
    pub fn approve_and_resume(&self, id: &str, approver: &Principal, edited: Option<Value>) -> Result<Begun, Error> {
        let governor = self.gov()?;
        let approval = governor.approve_edited(id, approver, edited)?;
        let (tool, args, ctx) = crate::runtime::resume(&approval)?;
        Ok(self.begun(governor.begin(&tool, args, &ctx)))
    }

    /// Grants approval `id` without running the call.
    pub fn grant(&self, id: &str, approver: &Principal) -> Result<PendingApproval, Error> {
        self.gov()?.approve(id, approver)
    }

    /// Denies approval `id`.
    pub fn deny(&self, id: &str, by: &Principal, reason: &str) -> Result<PendingApproval, Error> {
        self.gov()?.deny(id, &by.id, reason)
    }

    /// Approvals pending, or granted and not yet used.
    pub fn approvals(&self) -> Result<Vec<PendingApproval>, Error> {
        self.gov()?.open_approvals()
    }

    /// A new run id.
    pub fn new_run(&self) -> Result<String, Error> {
        self.start_run("api", None)
    }

    /// A new run from `source` for `principal`, admitted by `spec.runs`
    /// (`run_not_admitted` otherwise; issue 21).
    pub fn start_run(&self, source: &str, principal: Option<&Principal>) -> Result<String, Error> {
        self.gov()?.admit_run(source, principal)
    }

    /// The labels of run `run_id`.
    pub fn labels(&self, run_id: &str) -> Result<Labels, Error> {
        self.gov()?.store().labels(run_id).map_err(|e| invalid("store_unavailable", e.message))
    }

    /// Each step's verdict for this call, without running anything; the
    /// value has the readable form under `"text"`.
    pub fn explain(&self, tool: &str, args: Value, ctx: &CallContext) -> Result<Value, Error> {
        let explanation = self.gov()?.explain(tool, args, ctx);
        let mut value = explanation.to_value();
        if let Some(map) = value.as_object_mut() {
            map.insert("text".into(), Value::String(explanation.to_text()));
        }
        Ok(value)
    }

    /// The tools as a model API takes them, leaving out tools this principal
    /// and tenant can never call.
    pub fn tool_specs(&self, format: SpecFormat, principal: Option<&Principal>, tenant: Option<&str>) -> Result<Value, Error> {
        let governor = self.gov()?;
        let callable = self.tools().filter(|t| governor.can_ever_call(t.name(), principal, tenant));
        Ok(crate::runtime::tool_specs(callable, format))
    }

    /// The effect journal's entries, oldest first (issue 21).
    pub fn effects(&self) -> Result<Vec<crate::effects::EffectEntry>, Error> {
        self.gov()?.effects()
    }

    /// Resolves an `unknown` effect by hand: `applied` says whether the write happened.
    pub fn resolve_effect(&self, call_id: &str, applied: bool, by: &str) -> Result<crate::effects::EffectEntry, Error> {
        self.gov()?.resolve_effect(call_id, applied, by)
    }

    /// Begins the compensation of `call_id`: its inverse tool through steps
    /// 1–7 with `ctx`'s authority, linked to the original in the journal.
    pub fn compensate(&self, call_id: &str, ctx: &CallContext) -> Result<Begun, Error> {
        let governor = self.gov()?;
        let (tool, args, ctx) = governor.compensation(call_id, ctx)?;
        Ok(self.begun(governor.begin(&tool, args, &ctx)))
    }

    /// The whole compensation of `call_id` when its inverse tool is one the
    /// core reaches (process, http, mcp, code); a native inverse tool is run
    /// by the host through [`Host::compensate`].
    pub fn compensate_through_core(&self, call_id: &str, ctx: &CallContext) -> Result<CallResult, Error> {
        let governor = self.gov()?;
        let (tool, _, _) = governor.compensation(call_id, ctx)?;
        if self.handlers.contains_key(&tool) {
            return Err(invalid(
                "invalid_argument",
                format!("`{tool}` is a native tool: its host runs the compensation (`compensate` of the host API)"),
            ));
        }
        match self.compensate(call_id, ctx)? {
            Begun::Refused(result) | Begun::Pending(result) => Ok(result),
            Begun::Allowed(ticket) => {
                let outcome = self.run_transport(&ticket);
                Ok(self.finish_transport(ticket, outcome))
            }
        }
    }

    /// Moves the test clock forward; `no_test_clock` without one.
    pub fn advance_clock(&self, ms: u64) -> Result<(), Error> {
        self.gov()?;
        match &self.clock {
            Some(c) => {
                c.advance_ms(ms);
                Ok(())
            }
            None => Err(invalid("no_test_clock", "this harness reads the system clock")),
        }
    }
}

/// A call a host lost before any ticket existed (a gateway hand-over to the
/// host's thread that failed): refused `handler_error` at step 8, with the
/// model-safe `message`; no ids, no audit event (no call began).
pub fn host_failure(tool: &str, message: &str) -> CallResult {
    CallResult {
        decision: Decision::Refused,
        code: Some(RefusalCode::HandlerError),
        step: Some(Step::Invoke),
        message: message.to_string(),
        tool: tool.to_string(),
        call_id: String::new(),
        run_id: String::new(),
        output: None,
        output_report: None,
        approval: None,
        retry_after_ms: None,
        reasons: Vec::new(),
        labels: Labels::default(),
        would_refuse: Vec::new(),
    }
}

/// Runs the named sanitizers on every string and key of `value`;
/// `unknown_sanitizer` for a name that is none.
pub fn sanitize(value: &Value, names: &[impl AsRef<str>]) -> Result<(Value, SanitizeCounts), Error> {
    let chosen = names
        .iter()
        .map(|n| {
            let n = n.as_ref();
            crate::sanitize::Sanitizer::from_name(n)
                .ok_or_else(|| invalid("unknown_sanitizer", format!("unknown sanitizer `{n}` (expected pii_redact or strip_instructions)")))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let (out, report) = crate::sanitize::apply(value, &chosen);
    Ok((out, report.counts))
}

/// One manifest's description (a tool registered in code, checked alone).
pub fn describe_manifest(source: &ManifestSource) -> Result<Value, LoadErrors> {
    Ok(source.to_tool()?.describe())
}
