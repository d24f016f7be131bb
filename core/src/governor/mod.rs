//! The governor: every call through the nine steps.
//!
//! `begin` runs steps 1–7 and either ends the call (refused, or pending a
//! human) or hands back a [`Ticket`] to invoke; the host (or the core, for
//! transports it owns) runs the tool and gives the outcome to `finish`, which
//! runs step 9. Splitting the call there keeps the core free of any host's
//! runtime: Python threads, asyncio and Node promises all invoke the same way.
//! Every call, refused or not, writes one audit event.

mod admission;
mod approvals;
mod build;
mod builtin_steps;
mod content;
mod effects;
mod explain;
mod flow;
// Issue 22: in-band approvals and relays through the MCP gateway.
mod inband;
mod notify;
mod output;
mod provenance;
mod reconcile_op;
mod relay;
mod run_timeout;
mod runs;
mod secrets;
mod single;
mod single_sink;
mod steps;
mod task_text;
mod trace;

use serde_json::{Map, Value};
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

pub use crate::call::{
    ApprovalRequest, CallContext, CallResult, Decision, InvokeOutcome, OutputReport, Principal, RefusalCode, SecretValues, Step, Ticket, Transport,
    WouldRefuse,
};
pub use crate::harness::{Effect, TaintedMode, TrifectaMode};
pub use build::{policy_version_of, GovernorOptions};
pub use effects::ToolEffect;
pub use explain::Explanation;
pub use notify::{CleanNotification, NotificationDrop, LOG_LEVELS, NOTIFICATION_MAX_BYTES};
pub use output::{cut, truncate};
pub use provenance::DEFAULT_SINKS;
pub use relay::{relay_decision_value, RelayDenial, RelayKind};
pub use runs::MAX_HISTORY;
pub use trace::StepTrace;

use crate::audit::{AuditEvent, AuditSink, Timings};
use crate::backends::{Invoker, NoTransports};
use crate::cel_lite::{Bindings, Program};
use crate::clock::{Clock, IdSource};
use crate::digest::sha256_tagged;
use crate::store::{Labels, PendingApproval, Rate, Store};
use crate::text::cap_message;
use crate::validate::{Constraints, SchemaValidator};
use crate::{canonical, sanitize};
use steps::Deciding;
use trace::Trace;

/// Evaluates a compiled cel-lite condition: `Ok(bool)`, or `Err(reason)`
/// when it is unevaluable (a runtime error, or a value that is not a bool).
pub fn condition<B: Bindings + ?Sized>(program: &Program, vars: &B) -> Result<bool, String> {
    let verdict = program.approval_required_with(vars);
    match verdict.reason {
        Some(reason) => Err(reason),
        None => Ok(verdict.required),
    }
}

/// A harness policy rule, compiled.
#[derive(Debug)]
pub struct Rule {
    /// The rule's name (shown in reasons and audit).
    pub name: String,
    /// What a match does.
    pub effect: Effect,
    /// Tool-name globs (`*`, `?`); empty matches every tool.
    pub tools: Vec<String>,
    /// Extra condition; none matches always.
    pub when: Option<Program>,
    /// Index of its layer in [`Settings::layers`].
    pub layer: usize,
    /// Shadow mode: it records what it would refuse and refuses nothing.
    pub shadow: bool,
}

/// A policy layer as the steps read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerSettings {
    /// The layer's name.
    pub name: String,
    /// A call no allow rule of this layer matches is allowed.
    pub default_allow: bool,
    /// The layer's default deny only records (shadow mode).
    pub shadow: bool,
}

/// The output policy.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputPolicy {
    /// Cut to this many UTF-8 bytes.
    pub max_bytes: usize,
    /// Sanitizers, in order.
    pub sanitize: Vec<sanitize::Sanitizer>,
    /// The output marks the run untrusted.
    pub untrusted: bool,
    /// `content` (issue 22): which MCP content parts may pass.
    pub content: crate::manifest::ContentKinds,
}

/// Everything the governor needs of one tool, compiled once at load.
#[derive(Debug)]
pub struct ToolRuntime {
    /// The tool's name.
    pub name: String,
    /// `enabled`.
    pub enabled: bool,
    /// `tenants` (empty: all).
    pub tenants: Vec<String>,
    /// The compiled input schema.
    pub validator: SchemaValidator,
    /// Payload constraints on the input.
    pub input_constraints: Constraints,
    /// Payload constraints on the output.
    pub output_constraints: Constraints,
    /// The compiled `output_schema` (issue 22): step 9 checks the cleaned output with it.
    pub output_schema: Option<SchemaValidator>,
    /// The pin does not match the current definition.
    pub pin_mismatch: bool,
    /// The manifest carries a pin that matches.
    pub pinned: bool,
    /// The digest of the current definition.
    pub digest: String,
    /// Scopes the principal must hold.
    pub scopes: Vec<String>,
    /// `rate_limit.per_principal`.
    pub per_principal: Option<Rate>,
    /// `rate_limit.per_tenant`.
    pub per_tenant: Option<Rate>,
    /// A `pii:*` data_access: running it makes the run private.
    pub private: bool,
    /// Hosts it may send to; non-empty makes it subject to the trifecta rule.
    pub egress: Vec<String>,
    /// `flow.sinks`: the arguments that choose where data goes. Not written,
    /// a tool with egress takes the arguments named in [`DEFAULT_SINKS`].
    pub sinks: Option<Vec<String>>,
    /// `flow.links`: content arguments whose links must not come only from untrusted content.
    pub links: Vec<String>,
    /// `flow.identifies`: a sink argument and where the output names its valid values.
    pub identifies: Vec<(String, crate::manifest::ValuePath)>,
    /// `flow.identifies_when_named`: the same, for a call the task names.
    pub identifies_when_named: Vec<(String, crate::manifest::ValuePath)>,
    /// `flow.links_when_named`: the links inside the texts at these paths, for a call the task names.
    pub links_when_named: Vec<(String, crate::manifest::ValuePath)>,
    /// `flow.intent`: the words of a request that asks for what the tool does.
    pub intent: Option<crate::manifest::Intent>,
    /// `approval.when`, compiled once when the manifest was loaded.
    pub approval_when: Option<Arc<Program>>,
    /// `approval.approver_role`.
    pub approver_role: Option<String>,
    /// `approval.by` (issue 22): whether the caller may confirm in band.
    pub approval_by: crate::manifest::ApprovalBy,
    /// `risk`.
    pub risk: String,
    /// `timeout`, in ms.
    pub timeout_ms: u64,
    /// The output policy.
    pub output: OutputPolicy,
    /// The transport.
    pub transport: Transport,
    /// What cel-lite sees as `tool`.
    pub tool_value: Value,
    /// The effect contract of an external write (issue 21): its intent and
    /// outcome go to the effect journal.
    pub effect: Option<ToolEffect>,
    /// The secret handles the handler receives (issue 21).
    pub secrets: Vec<String>,
    /// `secrets_delivery: native`: a native handler receives their values.
    pub native_secrets: bool,
}

/// Harness-wide settings the steps read.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `flow.trifecta`.
    pub trifecta: TrifectaMode,
    /// `flow.tainted_arguments`.
    pub tainted_arguments: TaintedMode,
    /// `flow.unrequested_actions`.
    pub unrequested_actions: TaintedMode,
    /// `flow.trust_single_value`.
    pub trust_single_value: Vec<crate::harness::ValueKind>,
    /// `tools.approval_by_risk`.
    pub approval_by_risk: Vec<String>,
    /// `budgets.max_tool_calls` per run.
    pub max_tool_calls: Option<u64>,
    /// `budgets.per_tool`.
    pub per_tool: HashMap<String, u64>,
    /// How long an approval stays valid, in ms.
    pub approval_ttl_ms: u64,
    /// The approver role when a tool names none.
    pub default_approver_role: Option<String>,
    /// `approvals.allow_self_approval`: the caller may grant her own call.
    pub allow_self_approval: bool,
    /// `approvals.max_open_per_principal`.
    pub max_open_approvals_per_principal: u64,
    /// The policy layers, highest first.
    pub layers: Vec<LayerSettings>,
    /// `state_options.rate_limits_on_store_error: open`: when the store
    /// cannot be reached, rate limits are skipped instead of refusing.
    pub rate_limits_fail_open: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            trifecta: TrifectaMode::Block,
            tainted_arguments: TaintedMode::Refuse,
            unrequested_actions: TaintedMode::Refuse,
            trust_single_value: Vec::new(),
            approval_by_risk: Vec::new(),
            max_tool_calls: None,
            per_tool: HashMap::new(),
            approval_ttl_ms: 3_600_000,
            default_approver_role: None,
            allow_self_approval: false,
            max_open_approvals_per_principal: crate::harness::DEFAULT_MAX_OPEN_APPROVALS,
            layers: vec![LayerSettings { name: "harness".into(), default_allow: true, shadow: false }],
            rate_limits_fail_open: false,
        }
    }
}

/// What `begin` decided.
#[derive(Debug)]
pub enum Begin {
    /// Run the tool, then call `finish`.
    Invoke(Ticket),
    /// The call ended (refused or pending); it has been audited.
    Done(CallResult),
}

/// A host function answering approvals inline.
pub type ApprovalCallback = Arc<dyn Fn(&ApprovalRequest, &PendingApproval) -> InlineDecision + Send + Sync>;

/// What an inline approval callback decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlineDecision {
    /// The call runs.
    Approve,
    /// The call is refused `approval_denied`.
    Deny,
    /// The call stays pending.
    Undecided,
    /// Accept the candidate with this id (one the request offers): its rule
    /// is written to the permission file and the call runs (issue 20).
    Accept(String),
}

/// A Rust handler: the args and the idempotency key in, a value or a failure kind out.
pub type Handler = Arc<dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync>;

/// The governor of one loaded harness.
pub struct Governor {
    tools: Vec<ToolRuntime>,
    /// Per tool (same index): what the steps would otherwise work out per call.
    plans: Vec<ToolPlan>,
    index: HashMap<String, usize, NameHash>,
    rules: Vec<Rule>,
    settings: Settings,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    ids: IdSource,
    audit: Arc<dyn AuditSink>,
    /// The sink records events (it is not the null sink): build them, and
    /// the args digest they carry, only then or while an observer listens.
    sink_on: bool,
    /// An observer's switch (issue 24), when one was given.
    listening: Option<crate::audit::Listening>,
    approval_callback: Option<ApprovalCallback>,
    unmanifested: Vec<String>,
    transports: Arc<dyn Invoker>,
    policy_version: String,
    /// The built-in tools of `spec.builtins` (issue 20).
    builtins: Option<Arc<crate::builtins::Builtins>>,
    /// Each run's values and history (issue 23).
    runs: runs::Runs,
    /// Some tool has sinks and a flow setting reads their provenance.
    provenance_on: bool,
    /// Some condition reads `run`.
    history_on: bool,
    /// The effect journal (issue 21).
    journal: Arc<dyn crate::effects::Journal>,
    /// `spec.secrets` and `spec.secret_scopes` (issue 21).
    secrets: crate::harness::SecretsSettings,
    /// The directory `file:` secret sources are relative to.
    secret_dir: std::path::PathBuf,
    /// `spec.runs` (issue 21): none admits every run.
    run_admission: Option<crate::harness::RunsSettings>,
    /// The deadlines of runs admitted with a `timeout` (issue 21).
    run_deadlines: run_timeout::RunDeadlines,
}

impl fmt::Debug for Governor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governor").field("tools", &self.index.len()).field("rules", &self.rules.len()).finish()
    }
}

/// What the steps need of one tool beyond its manifest, worked out once at
/// load instead of per call.
#[derive(Debug)]
struct ToolPlan {
    /// Indices of the rules whose tool globs cover the tool, in rule order.
    rules: Vec<usize>,
    /// `approval.when` or a covering rule has a condition: the call needs cel-lite variables.
    uses_conditions: bool,
    /// `rl/<tool>/principal/`: the per-principal rate-limit key, less the principal's id.
    principal_key: String,
    /// `rl/<tool>/tenant/`: the per-tenant rate-limit key, less the tenant.
    tenant_key: String,
    /// `approval.when` or a covering rule reads `run`.
    uses_run: bool,
}

impl ToolPlan {
    fn new(rt: &ToolRuntime, all: &[Rule]) -> Self {
        let tool = rt.name.as_str();
        let covering = |r: &Rule| r.tools.is_empty() || r.tools.iter().any(|g| glob_match(g, tool));
        let reads_run = |p: &Program| p.reads().iter().any(|r| r.parent.is_none() && r.name == "run");
        Self {
            uses_run: rt.approval_when.as_deref().is_some_and(reads_run)
                || all.iter().filter(|r| covering(r)).any(|r| r.when.as_ref().is_some_and(reads_run)),
            uses_conditions: rt.approval_when.is_some() || all.iter().filter(|r| covering(r)).any(|r| r.when.is_some()),
            rules: all.iter().enumerate().filter(|(_, r)| covering(r)).map(|(i, _)| i).collect(),
            principal_key: format!("rl/{tool}/principal/"),
            tenant_key: format!("rl/{tool}/tenant/"),
        }
    }
}

/// The hasher of the tool-name index: FNV-1a, several times cheaper than
/// SipHash on short names. The index is built once at load and never grows,
/// so keyed hashing (against flooding by inserted keys) buys nothing there.
type NameHash = std::hash::BuildHasherDefault<Fnv1a>;

/// FNV-1a, 64-bit.
#[derive(Debug)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A refusal in the making: code, step, message, reasons.
struct Refusal {
    code: RefusalCode,
    step: Step,
    message: String,
    reasons: Vec<String>,
    retry_after_ms: Option<u64>,
}

impl Refusal {
    fn new(code: RefusalCode, step: Step, message: impl Into<String>) -> Self {
        Self { code, step, message: message.into(), reasons: Vec::new(), retry_after_ms: None }
    }
}

fn store_down(step: Step, e: &crate::store::StoreError) -> Refusal {
    Refusal::new(RefusalCode::StoreUnavailable, step, format!("the state store is unavailable ({e}); the call was not made"))
}

impl Governor {
    /// A governor over `tools` with `rules` and `settings`, keeping state in
    /// `store`, reading time from `clock`, writing to `audit`.
    pub fn new(
        tools: Vec<ToolRuntime>,
        rules: Vec<Rule>,
        settings: Settings,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        ids: IdSource,
        audit: Arc<dyn AuditSink>,
    ) -> Self {
        let index = tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let plans: Vec<ToolPlan> = tools.iter().map(|t| ToolPlan::new(t, &rules)).collect();
        let sink_on = !audit.is_null();
        let provenance_on = tools.iter().any(|t| t.sinks.as_ref().map_or(!t.egress.is_empty(), |s| !s.is_empty()) || !t.links.is_empty())
            && (settings.trifecta == TrifectaMode::Provenance || settings.tainted_arguments != TaintedMode::Allow);
        let history_on = plans.iter().any(|p| p.uses_run);
        Self {
            tools,
            plans,
            index,
            rules,
            settings,
            store,
            clock,
            ids,
            audit,
            sink_on,
            listening: None,
            approval_callback: None,
            unmanifested: Vec::new(),
            transports: Arc::new(NoTransports),
            policy_version: String::new(),
            builtins: None,
            runs: runs::Runs::default(),
            provenance_on,
            history_on,
            journal: Arc::new(crate::effects::MemoryJournal::new()),
            secrets: crate::harness::SecretsSettings::default(),
            secret_dir: std::path::PathBuf::new(),
            run_admission: None,
            run_deadlines: run_timeout::RunDeadlines::default(),
        }
    }

    /// Sets the effect journal (issue 21).
    pub fn set_journal(&mut self, journal: Arc<dyn crate::effects::Journal>) {
        self.journal = journal;
    }

    /// Sets the secret sources and scopes (issue 21).
    pub fn set_secrets(&mut self, secrets: crate::harness::SecretsSettings, dir: std::path::PathBuf) {
        self.secrets = secrets;
        self.secret_dir = dir;
    }

    /// Names that have a handler but no manifest: calling one is refused
    /// with `no_manifest` (S2) rather than `unknown_tool`.
    pub fn set_unmanifested(&mut self, names: Vec<String>) {
        self.unmanifested = names;
    }

    /// Sets the policy version: a digest of the loaded harness and manifests.
    /// Approvals remember it; one granted under another version is void.
    pub fn set_policy_version(&mut self, version: String) {
        self.policy_version = version;
    }

    /// The policy version approvals are bound to.
    pub fn policy_version(&self) -> &str {
        &self.policy_version
    }

    /// Sets the host callback that may decide approvals inline.
    pub fn set_approval_callback(&mut self, callback: Option<ApprovalCallback>) {
        self.approval_callback = callback;
    }

    /// Sets the built-in tools (`spec.builtins`).
    pub fn set_builtins(&mut self, builtins: Option<Arc<crate::builtins::Builtins>>) {
        self.builtins = builtins;
    }

    /// Sets the transports (http, code, mcp) the core invokes itself.
    pub fn set_transports(&mut self, transports: Arc<dyn Invoker>) {
        self.transports = transports;
    }

    /// The transports (for `doctor`'s live MCP check).
    pub fn transports(&self) -> &dyn Invoker {
        &*self.transports
    }

    /// Step 8 for the transports the core owns (http, code, mcp): runs the
    /// ticket's tool and returns the outcome for [`Governor::finish`].
    /// Blocking, bounded by the ticket's timeout, callable from any thread
    /// and many at once (see [`crate::transport`]). A native ticket comes back
    /// as a failure: its handler lives with the host.
    pub fn invoke(&self, ticket: &Ticket) -> InvokeOutcome {
        if ticket.transport == Transport::Builtin {
            return self.invoke_builtin(ticket);
        }
        self.transports.invoke(ticket)
    }

    /// Replaces the audit sink.
    pub fn set_audit_sink(&mut self, audit: Arc<dyn AuditSink>) {
        self.sink_on = !audit.is_null();
        self.audit = audit;
        self.listening = None;
    }

    /// The switch of the observer the audit sink carries (issue 24; set by
    /// [`Governor::from_harness`] with the observer).
    pub fn set_listening(&mut self, listening: Option<crate::audit::Listening>) {
        self.listening = listening;
    }

    /// Turns the observer's events on or off from the next call; false when
    /// there is no observer (issue 24: a host's OpenTelemetry shim, as its
    /// tracer provider comes and goes).
    pub fn observe(&self, on: bool) -> bool {
        self.listening.as_ref().map(|l| l.set(on)).is_some()
    }

    /// Whether this call builds an audit event: the sink records events, or
    /// an observer listens. One load per check when nobody listens.
    #[inline]
    fn audit_on(&self) -> bool {
        self.sink_on || self.listening.as_ref().is_some_and(crate::audit::Listening::get)
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The compiled tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolRuntime> {
        self.index.get(name).and_then(|&i| self.tools.get(i))
    }

    /// A new run id.
    pub fn new_run_id(&self) -> String {
        self.ids.next("run")
    }

    /// Steps 1–7: the call ends here (refused, or pending a human, and
    /// audited) or comes back as a ticket to invoke.
    pub fn begin(&self, tool: &str, args: Value, ctx: &CallContext) -> Begin {
        let started = self.stopwatch();
        let ts_ms = self.clock.now_ms();
        let call_id = self.ids.next("call");
        let run_id = ctx.run_id.clone().unwrap_or_else(|| self.ids.next("run"));
        let digest = ArgsDigest::new(&args, self.audit_on());
        let mut call = Deciding::new(tool, &args, ctx, &run_id, &digest, ts_ms, Trace { keep_rules: self.audit_on(), ..Trace::default() });
        let decided = self.decide(&mut call);
        let Deciding { trace, approval_used, prepared, sinks, intent, .. } = call;
        let found = Decided {
            prepared,
            call_id,
            run_id,
            args_digest: digest.into_inner(),
            approval_id: approval_used,
            ts_ms,
            decide_us: self.elapsed_us(started),
            would_refuse: trace.shadow,
            labels: trace.labels,
            rules: trace.rules,
            sinks,
            intent,
        };
        match decided {
            Ok(index) => self.ticket(index, tool, args, ctx, found, started),
            Err(Stop::Refused(refusal)) => {
                let result = self.end_refused(refusal, tool, ctx, found);
                if ctx.run_id.is_none() {
                    self.end_run(&result.run_id);
                }
                Begin::Done(result)
            }
            Err(Stop::Pending(request)) => {
                let result = self.end_pending(*request, tool, ctx, found);
                if ctx.run_id.is_none() {
                    self.end_run(&result.run_id);
                }
                Begin::Done(result)
            }
        }
    }

    /// The ticket of a call that passed steps 1–7. Running a tool that reads
    /// personal data makes the run private (S3) before it runs.
    fn ticket(&self, index: usize, tool: &str, args: Value, ctx: &CallContext, mut found: Decided, started: Option<Instant>) -> Begin {
        let Some(rt) = self.tools.get(index) else {
            let refusal = Refusal::new(RefusalCode::UnknownTool, Step::Resolve, format!("no tool named `{tool}`"));
            return Begin::Done(self.end_refused(refusal, tool, ctx, found));
        };
        if rt.private {
            match self.store.add_labels(&found.run_id, Labels { private: true, untrusted: false }) {
                Ok(labels) => found.labels = Some(labels),
                Err(e) => return Begin::Done(self.end_refused(store_down(Step::Invoke, &e), tool, ctx, found)),
            }
        }
        let derived = || rt.effect.as_ref().and_then(|_| effects::derived_key(&rt.name, &args, ctx));
        let idempotency_key =
            ctx.idempotency_key.clone().or_else(derived).unwrap_or_else(|| concat("idem-", found.approval_id.as_deref().unwrap_or(&found.call_id)));
        // Read before the intent: a secret that cannot be read leaves no journal entry.
        let secrets = match self.read_secrets(rt) {
            Ok(secrets) => secrets,
            Err(refusal) => return Begin::Done(self.end_refused(refusal, tool, ctx, found)),
        };
        if let Some(effect) = &rt.effect {
            if let Err(refusal) = self.effect_intent(effect, &rt.name, &args, ctx, &found.call_id, &idempotency_key) {
                return Begin::Done(self.end_refused(refusal, tool, ctx, found));
            }
        }
        let (timeout_ms, run_deadline_ms) = self.call_timeout(ctx.run_id.as_deref(), rt.timeout_ms, found.ts_ms);
        // Issue 22: a report's message is output of the tool (its sanitizers, the secrets masked).
        let progress = crate::progress::Progress::new(ctx.progress.as_ref(), || {
            crate::progress::ProgressPolicy::new(&rt.output.sanitize, &secrets.values(), rt.output.max_bytes)
        });
        let (trust_single, named) = self.named_call(rt, ctx.task.as_deref(), &args);
        Begin::Invoke(Ticket {
            rules: found.rules,
            call_id: found.call_id,
            run_id: found.run_id,
            tool: rt.name.clone(),
            args,
            idempotency_key,
            timeout_ms,
            run_deadline_ms,
            transport: rt.transport.clone(),
            tool_index: index,
            // Only the audit event reads these two.
            principal: if self.audit_on() { ctx.principal.id.clone() } else { String::new() },
            tenant: if self.audit_on() { ctx.tenant.clone() } else { None },
            args_digest: found.args_digest,
            approval_id: found.approval_id,
            original_args_digest: ctx.original_args_digest.clone(),
            would_refuse: found.would_refuse,
            own_run: ctx.run_id.is_none(),
            labels: found.labels,
            ts_ms: found.ts_ms,
            started,
            decide_us: found.decide_us,
            prepared: found.prepared,
            effect: rt.effect.is_some(),
            compensates: ctx.compensates.clone(),
            secrets,
            operation: None,
            sinks: found.sinks,
            progress,
            intent: found.intent,
            trust_single,
            named,
        })
    }

    /// The result (and audit event) of a call a step refused.
    fn end_refused(&self, refusal: Refusal, tool: &str, ctx: &CallContext, found: Decided) -> CallResult {
        let refusal = shown(refusal);
        let labels = found.labels.unwrap_or_else(|| self.store.labels(&found.run_id).unwrap_or_default());
        let result = CallResult {
            decision: Decision::Refused,
            code: Some(refusal.code),
            step: Some(refusal.step),
            message: refusal.message,
            // The name the caller gave, cut short: it reaches the audit event.
            tool: capped(tool),
            call_id: found.call_id,
            run_id: found.run_id,
            output: None,
            output_report: None,
            approval: None,
            retry_after_ms: refusal.retry_after_ms,
            reasons: refusal.reasons,
            labels,
            would_refuse: found.would_refuse,
        };
        let timings = Timings { decide_us: found.decide_us, ..Timings::default() };
        let subject = builtin_steps::subject(found.prepared.as_deref());
        let event = EventParts {
            args_digest: found.args_digest,
            approval_id: found.approval_id,
            ts_ms: found.ts_ms,
            timings,
            subject,
            rules: found.rules,
            sinks: found.sinks,
            intent: found.intent,
        };
        self.audit_result(&result, ctx, event);
        self.remember(&result, None);
        result
    }

    /// The result (and audit event) of a call that waits for a human.
    fn end_pending(&self, request: ApprovalRequest, tool: &str, ctx: &CallContext, found: Decided) -> CallResult {
        let labels = found.labels.unwrap_or_else(|| self.store.labels(&found.run_id).unwrap_or_default());
        let result = CallResult {
            decision: Decision::Pending,
            code: Some(RefusalCode::ApprovalRequired),
            step: Some(Step::Approval),
            message: format!("`{tool}` needs approval by a human before it runs; approval id `{}`", request.id),
            tool: capped(tool),
            call_id: found.call_id,
            run_id: found.run_id,
            output: None,
            output_report: None,
            reasons: request.reasons.iter().cloned().map(cap_message).collect(),
            approval: Some(request),
            retry_after_ms: None,
            labels,
            would_refuse: found.would_refuse,
        };
        let event = EventParts {
            args_digest: found.args_digest,
            approval_id: result.approval.as_ref().map(|a| a.id.clone()),
            ts_ms: found.ts_ms,
            timings: Timings { decide_us: found.decide_us, ..Timings::default() },
            subject: builtin_steps::subject(found.prepared.as_deref()),
            rules: found.rules,
            sinks: found.sinks,
            intent: found.intent,
        };
        self.audit_result(&result, ctx, event);
        self.remember(&result, None);
        result
    }

    /// Steps 8 (the outcome) and 9, then the audit event.
    pub fn finish(&self, ticket: Ticket, outcome: InvokeOutcome) -> CallResult {
        // Issue 22: nothing the call reports from now on reaches its caller.
        ticket.progress.end();
        let invoke_us = self.elapsed_us(ticket.started).saturating_sub(ticket.decide_us);
        let output_started = self.stopwatch();
        let Some(rt) = self.tools.get(ticket.tool_index) else {
            return self.finish_refused(ticket, Refusal::new(RefusalCode::UnknownTool, Step::Resolve, "the tool is gone"), invoke_us, 0);
        };
        if self.past_run_deadline(ticket.run_deadline_ms) {
            // Cut like a call past its own timeout: the outcome is withheld.
            self.effect_outcome(&ticket, &InvokeOutcome::TimedOut);
            let message = format!("the run's timeout passed while `{}` ran; its outcome was withheld", ticket.tool);
            return self.finish_refused(ticket, Refusal::new(RefusalCode::Timeout, Step::Invoke, message), invoke_us, 0);
        }
        self.effect_outcome(&ticket, &outcome);
        let returned = match invoke_verdict(&ticket, outcome) {
            Ok(returned) => returned,
            Err(refusal) => return self.finish_refused(ticket, refusal, invoke_us, 0),
        };
        match self.output(rt, &ticket, returned) {
            Ok(shaped) => self.finish_allowed(ticket, rt, shaped, invoke_us, output_started),
            Err(refusal) => self.finish_refused(ticket, refusal, invoke_us, self.elapsed_us(output_started)),
        }
    }

    /// Step 9: the masking of the secrets handed out for the call, the
    /// output constraints, the sanitizers, the cut to `max_bytes`, and the
    /// run's label.
    fn output(&self, rt: &ToolRuntime, ticket: &Ticket, returned: Returned) -> Result<Shaped, Refusal> {
        let Returned { value, secrets, content } = returned;
        // Before anything reads the output: an echoed secret is masked
        // whatever format the upstream chose (issue 17, item 10).
        let (value, mut redactions) = match secrets.map(|s| sanitize::SecretMask::new(&s[..])).filter(|m| !m.is_empty()) {
            Some(mask) => {
                let (value, report) = sanitize::mask_secrets(&value, &mask);
                (value, report.counts.as_map().clone())
            }
            None => (value, Counts::new()),
        };
        if let Some(v) = rt.output_constraints.check(&value) {
            let at = if v.pointer.is_empty() { "/" } else { v.pointer.as_str() };
            let message = format!("the output of `{}` at `{at}` fails `{}`", ticket.tool, v.keyword);
            return Err(Refusal::new(RefusalCode::InvalidOutput, Step::Output, message));
        }
        // Content parts: each sanitized, kept or dropped on its own (issue 22).
        let (value, truncated, content) = if content {
            let (value, truncated, report) = content::govern(value, &rt.output, &mut redactions);
            (value, truncated, Some(report))
        } else {
            let value = sanitize::apply_counting(value, &rt.output.sanitize, &mut redactions);
            let (value, truncated) = cut(value, rt.output.max_bytes);
            (value, truncated, None)
        };
        // Issue 22: what leaves is what the schema promised (sent as `structuredContent`).
        if let Some(v) = rt.output_schema.as_ref().and_then(|schema| schema.check(&value)) {
            let at = if v.pointer.is_empty() { "/" } else { v.pointer.as_str() };
            let message = format!("the output of `{}` at `{at}` does not meet its output_schema (`{}`)", ticket.tool, v.keyword);
            return Err(Refusal::new(RefusalCode::OutputSchemaMismatch, Step::Output, message));
        }
        if self.provenance_on {
            self.runs.with(&ticket.run_id, |m, hasher| {
                m.values.add_output(hasher, !rt.output.untrusted, &value, &ticket.args);
                if ticket.named {
                    single::add_named(&mut m.values, hasher, rt, &value);
                }
                for key in &single::singles(&ticket.trust_single, &value) {
                    m.values.trust_key(hasher, key);
                }
                for (arg, path) in &rt.identifies {
                    path.each(&value, &mut |s| m.values.add_identifier(hasher, arg, s));
                }
            });
        }
        let mut labels = ticket.labels.unwrap_or_else(|| self.store.labels(&ticket.run_id).unwrap_or_default());
        if rt.output.untrusted {
            // Withhold an output whose label could not be recorded: the run
            // would forget it saw untrusted content.
            labels = self.store.add_labels(&ticket.run_id, Labels { private: false, untrusted: true }).map_err(|e| store_down(Step::Output, &e))?;
        }
        Ok(Shaped { value, redactions, truncated, labels, content })
    }

    /// The result (and audit event) of a call that ran and passed step 9.
    fn finish_allowed(&self, ticket: Ticket, rt: &ToolRuntime, shaped: Shaped, invoke_us: u64, output_started: Option<Instant>) -> CallResult {
        let Shaped { value, redactions, truncated, labels, content } = shaped;
        if self.audit_on() {
            let timings = Timings { decide_us: ticket.decide_us, invoke_us, output_us: self.elapsed_us(output_started) };
            self.record(AuditEvent {
                ts_ms: ticket.ts_ms,
                call_id: ticket.call_id.clone(),
                run_id: ticket.run_id.clone(),
                tool: ticket.tool.clone(),
                principal: ticket.principal,
                tenant: ticket.tenant,
                decision: Decision::Allowed,
                code: None,
                step: None,
                args_digest: ticket.args_digest,
                original_args_digest: ticket.original_args_digest,
                approval_id: ticket.approval_id,
                redactions: Some(redactions.clone()),
                truncated: Some(truncated),
                would_refuse: ticket.would_refuse.clone(),
                rules: ticket.rules,
                subject: builtin_steps::subject(ticket.prepared.as_deref()),
                confined: ticket.transport.confined(),
                sinks: ticket.sinks,
                intent: ticket.intent.map(str::to_string),
                timings,
            });
        }
        let report = OutputReport { truncated, redactions, label: report_label(rt.output.untrusted), content };
        let result = CallResult {
            decision: Decision::Allowed,
            code: None,
            step: None,
            message: String::new(),
            tool: ticket.tool,
            call_id: ticket.call_id,
            run_id: ticket.run_id,
            output: Some(value),
            output_report: Some(report),
            approval: None,
            retry_after_ms: None,
            reasons: Vec::new(),
            labels,
            would_refuse: ticket.would_refuse,
        };
        self.remember(&result, Some(report_label(rt.output.untrusted)));
        if ticket.own_run {
            self.end_run(&result.run_id);
        }
        result
    }

    /// Ends a run the call itself started: its store state and its memory.
    fn end_run(&self, run_id: &str) {
        let _ = self.store.end_run(run_id);
        self.runs.end(run_id);
    }

    /// Adds a call that ended to its run's history, when a condition reads it.
    fn remember(&self, result: &CallResult, label: Option<&'static str>) {
        if self.history_on {
            let private = self.tool(&result.tool).is_some_and(|t| t.private);
            self.runs.with(&result.run_id, |m, _| m.remember(&result.tool, result.decision, label, private));
        }
    }

    /// `; did you mean `x`?` for the callable tool nearest to the unknown
    /// name `tool`: only tools this caller could ever call are offered, so
    /// the hint shows no more than its tool list does.
    pub(crate) fn nearest_callable(&self, tool: &str, ctx: &CallContext) -> String {
        let mut names: Vec<&str> =
            self.index.keys().map(String::as_str).filter(|n| self.can_ever_call(n, Some(&ctx.principal), ctx.tenant.as_deref())).collect();
        // The index is a hash map: sorted, a tie goes to the same name every time.
        names.sort_unstable();
        crate::suggest::hint(tool, names)
    }

    /// Whether `principal` in `tenant` could ever call `tool`: it exists, is
    /// enabled for the tenant, the principal holds its scopes, and no
    /// unconditional enforced deny (or a layer's default deny with no allow
    /// rule for it) stands in the way. Tools that fail are hidden from models.
    pub fn can_ever_call(&self, tool: &str, principal: Option<&Principal>, tenant: Option<&str>) -> bool {
        let Some(rt) = self.tool(tool) else { return false };
        if !rt.enabled || (!rt.tenants.is_empty() && !tenant.is_some_and(|t| rt.tenants.iter().any(|x| x == t))) {
            return false;
        }
        if let Some(p) = principal {
            if !rt.scopes.iter().all(|s| p.scopes.contains(s)) {
                return false;
            }
        }
        let covers = |r: &Rule| r.tools.is_empty() || r.tools.iter().any(|g| glob_match(g, tool));
        let unconditional = |r: &Rule| r.when.as_ref().is_none_or(|p| p.source().trim() == "true");
        for (li, layer) in self.settings.layers.iter().enumerate() {
            let in_layer = || self.rules.iter().filter(move |r| r.layer == li && !r.shadow && covers(r));
            if in_layer().any(|r| r.effect == Effect::Deny && unconditional(r)) {
                return false;
            }
            if !layer.default_allow && !layer.shadow && !in_layer().any(|r| r.effect == Effect::Allow) {
                return false;
            }
        }
        true
    }

    fn finish_refused(&self, ticket: Ticket, refusal: Refusal, invoke_us: u64, output_us: u64) -> CallResult {
        let refusal = shown(refusal);
        let labels = ticket.labels.unwrap_or_else(|| self.store.labels(&ticket.run_id).unwrap_or_default());
        let result = CallResult {
            decision: Decision::Refused,
            code: Some(refusal.code),
            step: Some(refusal.step),
            message: refusal.message,
            tool: ticket.tool.clone(),
            call_id: ticket.call_id.clone(),
            run_id: ticket.run_id.clone(),
            output: None,
            output_report: None,
            approval: None,
            retry_after_ms: None,
            reasons: refusal.reasons,
            labels,
            would_refuse: ticket.would_refuse.clone(),
        };
        self.record(AuditEvent {
            ts_ms: ticket.ts_ms,
            call_id: ticket.call_id,
            run_id: ticket.run_id,
            tool: ticket.tool,
            principal: ticket.principal,
            tenant: ticket.tenant,
            decision: Decision::Refused,
            code: result.code,
            step: result.step,
            args_digest: ticket.args_digest,
            original_args_digest: ticket.original_args_digest,
            approval_id: ticket.approval_id,
            redactions: None,
            truncated: None,
            confined: ticket.transport.confined(),
            would_refuse: ticket.would_refuse,
            rules: ticket.rules,
            subject: builtin_steps::subject(ticket.prepared.as_deref()),
            sinks: ticket.sinks,
            intent: ticket.intent.map(str::to_string),
            timings: Timings { decide_us: ticket.decide_us, invoke_us, output_us },
        });
        self.remember(&result, None);
        if ticket.own_run {
            self.end_run(&result.run_id);
        }
        result
    }

    /// The audit event of a call steps 1–7 ended (refused or pending).
    fn audit_result(&self, result: &CallResult, ctx: &CallContext, parts: EventParts) {
        let EventParts { args_digest, approval_id, ts_ms, timings, subject, rules, sinks, intent } = parts;
        self.record(AuditEvent {
            ts_ms,
            call_id: result.call_id.clone(),
            run_id: result.run_id.clone(),
            tool: result.tool.clone(),
            principal: ctx.principal.id.clone(),
            tenant: ctx.tenant.clone(),
            decision: result.decision,
            code: result.code,
            step: result.step,
            args_digest,
            original_args_digest: ctx.original_args_digest.clone(),
            approval_id,
            redactions: None,
            truncated: None,
            would_refuse: result.would_refuse.clone(),
            rules,
            subject,
            confined: None,
            sinks,
            intent: intent.map(str::to_string),
            timings,
        });
    }

    /// Now, for the audit event's timings; `None` when no event is recorded
    /// (reading the clock is a cost on every call).
    fn stopwatch(&self) -> Option<Instant> {
        self.audit_on().then(Instant::now)
    }

    /// Microseconds since `since` (0 when the stopwatch was not started).
    fn elapsed_us(&self, since: Option<Instant>) -> u64 {
        since.map_or(0, micros)
    }

    fn record(&self, mut event: AuditEvent) {
        if !self.audit_on() {
            return;
        }
        // Every caller string of the event, cut short in one place (issue
        // 17, item 14): a 10 MB principal id or run id makes no 10 MB line.
        for field in [&mut event.tool, &mut event.principal, &mut event.run_id, &mut event.call_id] {
            cap_in_place(field);
        }
        for field in [&mut event.tenant, &mut event.approval_id].into_iter().flatten() {
            cap_in_place(field);
        }
        if let Err(e) = self.audit.record(&event) {
            // The decision stands; the failure to record it must be visible.
            eprintln!("harnessweaver: audit sink failed: {e}");
        }
    }

    /// A whole call with Rust handlers: steps 1–7, then a native tool's
    /// handler on a worker thread bounded by the tool's timeout (an
    /// overrunning handler is abandoned) or [`Governor::invoke`] for the
    /// other transports, then step 9.
    pub fn call(&self, tool: &str, args: Value, ctx: &CallContext, handlers: &HashMap<String, Handler>) -> CallResult {
        let ticket = match self.begin(tool, args, ctx) {
            Begin::Done(result) => return result,
            Begin::Invoke(ticket) => ticket,
        };
        let outcome = match (&ticket.transport, handlers.get(&ticket.tool)) {
            (Transport::Native { .. }, None) => InvokeOutcome::Failed { kind: "no handler registered".into() },
            (Transport::Native { .. }, Some(handler)) => {
                run_with_timeout(handler.clone(), ticket.args.clone(), ticket.idempotency_key.clone(), ticket.timeout_ms)
            }
            _ => self.invoke(&ticket),
        };
        self.finish(ticket, outcome)
    }
}

/// The call's args digest (`sha256:` of the canonical args), computed at
/// most once and only when something needs it: an audit sink that records
/// events (then at once), or an approval the call asks for or consumes.
/// Whether the args have a canonical form at all is always known.
struct ArgsDigest<'a> {
    args: &'a Value,
    portable: bool,
    digest: OnceCell<Option<String>>,
}

impl<'a> ArgsDigest<'a> {
    fn new(args: &'a Value, now: bool) -> Self {
        if now {
            let digest = canonical::to_string(args).ok().map(|text| sha256_tagged(text.as_bytes()));
            Self { args, portable: digest.is_some(), digest: OnceCell::from(digest) }
        } else {
            Self { args, portable: canonical::check(args).is_ok(), digest: OnceCell::new() }
        }
    }

    fn get(&self) -> Option<&str> {
        self.digest
            .get_or_init(|| {
                if !self.portable {
                    return None;
                }
                canonical::to_string(self.args).ok().map(|text| sha256_tagged(text.as_bytes()))
            })
            .as_deref()
    }

    fn into_inner(self) -> Option<String> {
        self.digest.into_inner().flatten()
    }
}

/// cel-lite's variables for one call; `principal`, `tenant`, `task` and
/// `labels` become JSON only when an expression reads them.
struct CallVars<'a> {
    ctx: &'a CallContext,
    tool: &'a Value,
    args: &'a Value,
    labels: Labels,
    principal_value: OnceCell<Value>,
    tenant_value: OnceCell<Value>,
    task_value: OnceCell<Value>,
    labels_value: OnceCell<Value>,
    /// `run`: the run's history, when a condition reads it.
    run_value: Option<Value>,
}

impl<'a> CallVars<'a> {
    fn new(ctx: &'a CallContext, tool: &'a Value, args: &'a Value, labels: Labels) -> Self {
        Self {
            ctx,
            tool,
            args,
            labels,
            principal_value: OnceCell::new(),
            tenant_value: OnceCell::new(),
            task_value: OnceCell::new(),
            labels_value: OnceCell::new(),
            run_value: None,
        }
    }
}

impl Bindings for CallVars<'_> {
    fn binding(&self, name: &str) -> Option<&Value> {
        let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
        match name {
            "principal" => Some(self.principal_value.get_or_init(|| self.ctx.principal.to_value())),
            "tenant" => Some(self.tenant_value.get_or_init(|| text(&self.ctx.tenant))),
            "task" => Some(self.task_value.get_or_init(|| text(&self.ctx.task))),
            "tool" => Some(self.tool),
            "args" => Some(self.args),
            "labels" => Some(self.labels_value.get_or_init(|| labels_to_value(self.labels))),
            "run" => Some(self.run_value.as_ref().unwrap_or(&EMPTY_RUN)),
            _ => None,
        }
    }
}

/// `run` of a call no condition reads it for, or outside a run (policy examples).
static EMPTY_RUN: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| runs::RunMemory::default().to_value());

/// `a` then `b`, in one allocation.
fn concat(a: &str, b: &str) -> String {
    let mut out = String::with_capacity(a.len() + b.len());
    out.push_str(a);
    out.push_str(b);
    out
}

enum Stop {
    Refused(Refusal),
    Pending(Box<ApprovalRequest>),
}

enum Consume {
    Granted,
    Ask(String),
    Refuse(Refusal),
}

fn expired(id: &str, tool: &str) -> Refusal {
    Refusal::new(RefusalCode::ApprovalExpired, Step::Approval, format!("approval `{id}` for `{tool}` expired before the call ran"))
}

/// The longest tool name a call may give, in bytes; a longer one is
/// `unknown_tool` at once.
pub(crate) const MAX_TOOL_NAME_BYTES: usize = 256;

/// `s` cut short for a message or an audit event (issue 17, item 14).
pub(crate) fn capped(s: &str) -> String {
    crate::text::capped(s).into_owned()
}

/// Whatever caller strings a refusal's message and reasons echo (ids, a
/// tenant, a handler's error kind, a transport's reason, an approver's
/// note), cut short in one place before it reaches a result (issue 17,
/// item 14).
fn shown(mut refusal: Refusal) -> Refusal {
    refusal.message = cap_message(refusal.message);
    refusal.reasons = refusal.reasons.into_iter().map(cap_message).collect();
    refusal
}

/// What a tool returned, with the secrets its transport handed out for the
/// call (none for host handlers and the code transport).
struct Returned {
    value: Value,
    secrets: Option<Arc<[String]>>,
    /// `value` is a list of MCP content parts (issue 22).
    content: bool,
}

/// Cuts `s` short in place when it is longer than a message may echo.
fn cap_in_place(s: &mut String) {
    if let std::borrow::Cow::Owned(short) = crate::text::capped(s) {
        *s = short;
    }
}

/// Step 8's verdict on what the invocation gave: the value, or the refusal.
fn invoke_verdict(ticket: &Ticket, outcome: InvokeOutcome) -> Result<Returned, Refusal> {
    let tool = &ticket.tool;
    match outcome {
        InvokeOutcome::Returned(value) => Ok(Returned { value, secrets: None, content: false }),
        InvokeOutcome::ReturnedWithSecrets { value, secrets } => Ok(Returned { value, secrets: Some(secrets), content: false }),
        InvokeOutcome::Content { parts, secrets } => Ok(Returned { value: Value::Array(parts), secrets, content: true }),
        // The one way in for what hosts and transports say of a failure:
        // a kind of any length is cut short here (issue 17, item 14).
        InvokeOutcome::Failed { kind } => {
            Err(Refusal::new(RefusalCode::HandlerError, Step::Invoke, format!("`{tool}` failed ({})", crate::text::capped(&kind))))
        }
        InvokeOutcome::TimedOut => {
            Err(Refusal::new(RefusalCode::Timeout, Step::Invoke, format!("`{tool}` took longer than {} ms and was abandoned", ticket.timeout_ms)))
        }
        // The reason names where and which rule (host::Outcome::not_json),
        // never the value, and nothing goes to stderr (issue 17, item 12).
        InvokeOutcome::NotJson { reason } => {
            Err(Refusal::new(RefusalCode::HandlerError, Step::Invoke, format!("`{tool}` returned a value with no JSON form ({reason})")))
        }
        InvokeOutcome::TransportRefused { reason } => Err(Refusal::new(RefusalCode::TransportRefused, Step::Invoke, reason)),
        InvokeOutcome::SandboxError { message } => Err(Refusal::new(RefusalCode::SandboxError, Step::Invoke, message)),
        InvokeOutcome::SandboxUnavailable { message } => Err(Refusal::new(RefusalCode::SandboxUnavailable, Step::Invoke, message)),
        InvokeOutcome::SandboxUnsupportedPolicy { message } => Err(Refusal::new(RefusalCode::SandboxUnsupportedPolicy, Step::Invoke, message)),
        InvokeOutcome::Refused { code, message } => Err(Refusal::new(code, code.step().unwrap_or(Step::Invoke), message)),
    }
}

/// A decided call's identity and what its steps found, for its ticket,
/// result and audit event.
struct Decided {
    prepared: Option<Arc<crate::builtins::Prepared>>,
    call_id: String,
    run_id: String,
    args_digest: Option<String>,
    approval_id: Option<String>,
    ts_ms: u64,
    decide_us: u64,
    would_refuse: Vec<WouldRefuse>,
    labels: Option<Labels>,
    rules: Vec<String>,
    sinks: Vec<crate::audit::SinkDigest>,
    /// `requested` / `unrequested` for a tool with `flow.intent` (issue 23).
    intent: Option<&'static str>,
}

/// The parts of a refused or pending call's audit event that the result does not hold.
struct EventParts {
    args_digest: Option<String>,
    approval_id: Option<String>,
    ts_ms: u64,
    timings: Timings,
    subject: Option<String>,
    rules: Vec<String>,
    sinks: Vec<crate::audit::SinkDigest>,
    /// `requested` / `unrequested` for a tool with `flow.intent` (issue 23).
    intent: Option<&'static str>,
}

/// `value` through the sanitizers, their redactions added to `redactions`.
/// What step 9 made of an output.
struct Shaped {
    value: Value,
    redactions: Counts,
    truncated: bool,
    labels: Labels,
    content: Option<crate::call::ContentReport>,
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// An output's label as the result reports it.
fn report_label(untrusted: bool) -> &'static str {
    if untrusted {
        "untrusted"
    } else {
        "trusted"
    }
}

/// `{private, untrusted}` as cel-lite's `labels`.
pub fn labels_to_value(labels: Labels) -> Value {
    let mut map = Map::new();
    map.insert("private".into(), Value::Bool(labels.private));
    map.insert("untrusted".into(), Value::Bool(labels.untrusted));
    Value::Object(map)
}

/// Runs a Rust handler on its own thread and waits at most `timeout_ms`.
pub fn run_with_timeout(handler: Handler, args: Value, key: String, timeout_ms: u64) -> InvokeOutcome {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("harnessweaver-handler".into()).spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&args, &key)));
        let _ = tx.send(result);
    });
    if spawned.is_err() {
        return InvokeOutcome::Failed { kind: "could not start a handler thread".into() };
    }
    match rx.recv_timeout(std::time::Duration::from_millis(timeout_ms)) {
        Ok(Ok(Ok(value))) => InvokeOutcome::Returned(value),
        Ok(Ok(Err(kind))) => InvokeOutcome::Failed { kind },
        Ok(Err(_)) => InvokeOutcome::Failed { kind: "panic".into() },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => InvokeOutcome::TimedOut,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => InvokeOutcome::Failed { kind: "handler thread ended".into() },
    }
}

/// Glob match on tool names: `*` any run of characters, `?` one character.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some(pi);
                mark = ni;
                pi += 1;
            }
            Some(&c) if c == '?' || Some(&c) == n.get(ni) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some(s) => {
                    pi = s + 1;
                    mark += 1;
                    ni = mark;
                }
                None => return false,
            },
        }
    }
    p.get(pi..).unwrap_or_default().iter().all(|&c| c == '*')
}

/// Redaction counts as an ordered map, for reports.
pub type Counts = BTreeMap<String, u64>;

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("*", "refund_payment"));
        assert!(glob_match("refund_*", "refund_payment"));
        assert!(glob_match("*_payment", "refund_payment"));
        assert!(glob_match("re?und*", "refund_payment"));
        assert!(!glob_match("send_*", "refund_payment"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
    }
}
