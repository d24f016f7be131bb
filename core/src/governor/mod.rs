//! The governor: every call through the nine steps.
//!
//! `begin` runs steps 1–7 and either ends the call (refused, or pending a
//! human) or hands back a [`Ticket`] to invoke; the host (or the core, for
//! transports it owns) runs the tool and gives the outcome to `finish`, which
//! runs step 9. Splitting the call there keeps the core free of any host's
//! runtime: Python threads, asyncio and Node promises all invoke the same way.
//! Every call, refused or not, writes one audit event.

mod build;
mod output;

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

pub use build::GovernorOptions;
pub use crate::harness::{Effect, TrifectaMode};
pub use output::{cut, truncate};
pub use crate::call::{
    ApprovalRequest, CallContext, CallResult, Decision, InvokeOutcome, OutputReport, Principal, RefusalCode, Step, Ticket, Transport, WouldRefuse,
};

use crate::audit::{AuditEvent, AuditSink, Timings};
use crate::clock::{Clock, IdSource};
use crate::digest::sha256_tagged;
use crate::codes::ArgumentCode;
use crate::error::Error;
use crate::store::{Acquire, ApprovalState, Budget, Labels, PendingApproval, Rate, RateKey, Store};
use crate::validate::{Constraints, SchemaValidator};
use crate::{canonical, sanitize};
use crate::cel_lite::{Bindings, Program};
use std::cell::OnceCell;
use crate::backends::{Invoker, NoTransports};


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
    /// `approval.when`.
    pub approval_when: Option<Program>,
    /// `approval.approver_role`.
    pub approver_role: Option<String>,
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
}

/// Harness-wide settings the steps read.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `flow.trifecta`.
    pub trifecta: TrifectaMode,
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
            approval_by_risk: Vec::new(),
            max_tool_calls: None,
            per_tool: HashMap::new(),
            approval_ttl_ms: 3_600_000,
            default_approver_role: None,
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

/// A host function answering approvals inline: `Some(true)` approves,
/// `Some(false)` denies, `None` leaves the call pending.
pub type ApprovalCallback = Arc<dyn Fn(&ApprovalRequest, &PendingApproval) -> Option<bool> + Send + Sync>;

/// A Rust handler: the args and the idempotency key in, a value or a failure kind out.
pub type Handler = Arc<dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync>;

/// The governor of one loaded harness.
pub struct Governor {
    tools: Vec<ToolRuntime>,
    /// Per tool (same index): what the steps would otherwise work out per call.
    plans: Vec<ToolPlan>,
    index: HashMap<String, usize>,
    rules: Vec<Rule>,
    settings: Settings,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    ids: IdSource,
    audit: Arc<dyn AuditSink>,
    /// The sink records events (it is not the null sink): build them, and
    /// the args digest they carry, only then.
    audit_on: bool,
    approval_callback: Option<ApprovalCallback>,
    unmanifested: Vec<String>,
    transports: Arc<dyn Invoker>,
    policy_version: String,
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
}

impl ToolPlan {
    fn new(rt: &ToolRuntime, all: &[Rule]) -> Self {
        let tool = rt.name.as_str();
        let covering = |r: &Rule| r.tools.is_empty() || r.tools.iter().any(|g| glob_match(g, tool));
        Self {
            uses_conditions: rt.approval_when.is_some() || all.iter().filter(|r| covering(r)).any(|r| r.when.is_some()),
            rules: all.iter().enumerate().filter(|(_, r)| covering(r)).map(|(i, _)| i).collect(),
            principal_key: format!("rl/{tool}/principal/"),
            tenant_key: format!("rl/{tool}/tenant/"),
        }
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
        let plans = tools.iter().map(|t| ToolPlan::new(t, &rules)).collect();
        let audit_on = !audit.is_null();
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
            audit_on,
            approval_callback: None,
            unmanifested: Vec::new(),
            transports: Arc::new(NoTransports),
            policy_version: String::new(),
        }
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
        self.transports.invoke(ticket)
    }

    /// Replaces the audit sink.
    pub fn set_audit_sink(&mut self, audit: Arc<dyn AuditSink>) {
        self.audit_on = !audit.is_null();
        self.audit = audit;
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

    /// Steps 1–7.
    pub fn begin(&self, tool: &str, args: Value, ctx: &CallContext) -> Begin {
        let started = Instant::now();
        let ts_ms = self.clock.now_ms();
        let call_id = self.ids.next("call");
        let run_id = ctx.run_id.clone().unwrap_or_else(|| self.ids.next("run"));
        let mut approval_used = None;
        let mut trace = Trace::default();
        let digest = ArgsDigest::new(&args, self.audit_on);
        let decided = self.decide(tool, &args, ctx, &run_id, &digest, ts_ms, &mut approval_used, &mut trace);
        let args_digest = digest.into_inner();
        let shadow = trace.shadow;
        let mut known_labels = trace.labels;
        let decide_us = micros(started);
        match decided {
            Ok(index) => {
                let Some(rt) = self.tools.get(index) else {
                    return Begin::Done(self.end_refused(
                        Refusal::new(RefusalCode::UnknownTool, Step::Resolve, format!("no tool named `{tool}`")),
                        tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us, shadow, known_labels,
                    ));
                };
                // S3: running a tool that reads personal data makes the run private.
                if rt.private {
                    match self.store.add_labels(&run_id, Labels { private: true, untrusted: false }) {
                        Ok(labels) => known_labels = Some(labels),
                        Err(e) => {
                            return Begin::Done(self.end_refused(
                                store_down(Step::Invoke, &e), tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us, shadow,
                                known_labels,
                            ));
                        }
                    }
                }
                let idempotency_key = ctx.idempotency_key.clone().unwrap_or_else(|| {
                    concat("idem-", approval_used.as_deref().unwrap_or(&call_id))
                });
                Begin::Invoke(Ticket {
                    call_id,
                    run_id,
                    tool: rt.name.clone(),
                    args,
                    idempotency_key,
                    timeout_ms: rt.timeout_ms,
                    transport: rt.transport.clone(),
                    tool_index: index,
                    principal: ctx.principal.id.clone(),
                    tenant: ctx.tenant.clone(),
                    args_digest,
                    approval_id: approval_used,
                    original_args_digest: ctx.original_args_digest.clone(),
                    would_refuse: shadow,
                    own_run: ctx.run_id.is_none(),
                    labels: known_labels,
                    ts_ms,
                    started,
                    decide_us,
                })
            }
            Err(Stop::Refused(refusal)) => {
                let result =
                    self.end_refused(refusal, tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us, shadow, known_labels);
                if ctx.run_id.is_none() {
                    let _ = self.store.end_run(&run_id);
                }
                Begin::Done(result)
            }
            Err(Stop::Pending(request)) => {
                let labels = known_labels.unwrap_or_else(|| self.store.labels(&run_id).unwrap_or_default());
                let result = CallResult {
                    decision: Decision::Pending,
                    code: Some(RefusalCode::ApprovalRequired),
                    step: Some(Step::Approval),
                    message: format!("`{tool}` needs approval by a human before it runs; approval id `{}`", request.id),
                    tool: tool.to_string(),
                    call_id: call_id.clone(),
                    run_id: run_id.clone(),
                    output: None,
                    output_report: None,
                    reasons: request.reasons.clone(),
                    approval: Some(*request),
                    retry_after_ms: None,
                    labels,
                    would_refuse: shadow,
                };
                self.audit_result(&result, ctx, args_digest, ts_ms, Timings { decide_us, ..Timings::default() });
                if ctx.run_id.is_none() {
                    let _ = self.store.end_run(&run_id);
                }
                Begin::Done(result)
            }
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one call's identity, threaded through once")]
    fn end_refused(
        &self,
        refusal: Refusal,
        tool: &str,
        call_id: &str,
        run_id: &str,
        ctx: &CallContext,
        args_digest: Option<String>,
        approval_id: Option<String>,
        ts_ms: u64,
        decide_us: u64,
        would_refuse: Vec<WouldRefuse>,
        known_labels: Option<Labels>,
    ) -> CallResult {
        let labels = known_labels.unwrap_or_else(|| self.store.labels(run_id).unwrap_or_default());
        let result = CallResult {
            decision: Decision::Refused,
            code: Some(refusal.code),
            step: Some(refusal.step),
            message: refusal.message,
            tool: tool.to_string(),
            call_id: call_id.to_string(),
            run_id: run_id.to_string(),
            output: None,
            output_report: None,
            approval: None,
            retry_after_ms: refusal.retry_after_ms,
            reasons: refusal.reasons,
            labels,
            would_refuse,
        };
        self.audit_result_with_approval(&result, ctx, args_digest, approval_id, ts_ms, Timings { decide_us, ..Timings::default() });
        result
    }

    #[expect(clippy::too_many_arguments, reason = "the steps need the whole call")]
    fn decide(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
        run_id: &str,
        digest: &ArgsDigest<'_>,
        now_ms: u64,
        approval_used: &mut Option<String>,
        trace: &mut Trace,
    ) -> Result<usize, Stop> {
        // 1 resolve
        let Some(&index) = self.index.get(tool) else {
            if self.unmanifested.iter().any(|n| n == tool) {
                return Err(Stop::Refused(Refusal::new(RefusalCode::NoManifest, Step::Resolve, format!("`{tool}` has no manifest and cannot run"))));
            }
            return Err(Stop::Refused(Refusal::new(RefusalCode::UnknownTool, Step::Resolve, format!("no tool named `{tool}`"))));
        };
        let (Some(rt), Some(plan)) = (self.tools.get(index), self.plans.get(index)) else {
            return Err(Stop::Refused(Refusal::new(RefusalCode::NoManifest, Step::Resolve, format!("`{tool}` has no manifest"))));
        };
        if !rt.enabled {
            return Err(Stop::Refused(Refusal::new(RefusalCode::ToolDisabled, Step::Resolve, format!("`{tool}` is disabled"))));
        }
        if !rt.tenants.is_empty() && !ctx.tenant.as_ref().is_some_and(|t| rt.tenants.iter().any(|x| x == t)) {
            let which = ctx.tenant.as_deref().map_or_else(|| "calls without a tenant".to_string(), |t| format!("tenant `{t}`"));
            return Err(Stop::Refused(Refusal::new(RefusalCode::TenantNotEnabled, Step::Resolve, format!("`{tool}` is not enabled for {which}"))));
        }

        trace.pass(Step::Resolve, || {
            let tenants = if rt.tenants.is_empty() { "all tenants".to_string() } else { format!("tenants `{}`", rt.tenants.join("`, `")) };
            vec![format!("`{tool}` has a manifest, is enabled, and is enabled for {tenants}")]
        });

        // 2 validate
        if !digest.portable {
            return Err(Stop::Refused(Refusal::new(RefusalCode::InvalidArgs, Step::Validate, "arguments have no portable JSON form")));
        }
        if !args.is_object() {
            return Err(Stop::Refused(Refusal::new(RefusalCode::InvalidArgs, Step::Validate, "arguments must be an object")));
        }
        if let Some(v) = rt.validator.check(args).or_else(|| rt.input_constraints.check(args)) {
            let mut r = Refusal::new(RefusalCode::InvalidArgs, Step::Validate, v.message());
            r.reasons.push(format!("{} {}", v.pointer, v.keyword));
            return Err(Stop::Refused(r));
        }

        trace.pass(Step::Validate, || {
            vec![format!(
                "arguments match the input schema and {} payload constraint(s)",
                rt.input_constraints.items.len()
            )]
        });

        // 3 pin
        if rt.pin_mismatch {
            return Err(Stop::Refused(Refusal::new(RefusalCode::DigestMismatch,
                Step::Pin,
                format!("`{tool}` changed since it was pinned; it is blocked until the change is reviewed and re-pinned"),
            )));
        }
        // An MCP tool is also checked against what its server serves now.
        if matches!(rt.transport, Transport::Mcp { .. }) {
            if let Some(why) = self.transports.live_pin_mismatch(tool) {
                let mut r = Refusal::new(RefusalCode::DigestMismatch,
                    Step::Pin,
                    format!("`{tool}` as its MCP server serves it differs from its manifest; it is blocked until the change is reviewed and re-pinned"),
                );
                r.reasons.push(why);
                return Err(Stop::Refused(r));
            }
        }

        trace.pass(Step::Pin, || {
            if rt.pinned {
                vec![format!("definition digest `{}` matches its pin", rt.digest)]
            } else {
                vec![format!("definition digest `{}` is not pinned (doctor warns)", rt.digest)]
            }
        });

        // 4 policy
        let missing: Vec<&str> = rt.scopes.iter().filter(|s| !ctx.principal.scopes.contains(s)).map(String::as_str).collect();
        if !missing.is_empty() {
            let mut r = Refusal::new(RefusalCode::ScopeMissing, Step::Policy, format!("`{tool}` needs scope `{}`", missing.join("`, `")));
            r.reasons = missing.iter().map(|s| format!("scope {s}")).collect();
            return Err(Stop::Refused(r));
        }
        let uses_conditions = plan.uses_conditions;
        // Labels decide only through a condition or the trifecta (egress);
        // otherwise they are read later with the rate limit, in the same
        // round trip where the store allows it.
        let labels_decide = uses_conditions || !rt.egress.is_empty() || trace.dry;
        let labels = if labels_decide {
            match self.store.labels(run_id) {
                Ok(labels) => {
                    trace.labels = Some(labels);
                    labels
                }
                Err(e) => return Err(Stop::Refused(store_down(Step::Policy, &e))),
            }
        } else {
            Labels::default()
        };
        let vars = CallVars::new(ctx, &rt.tool_value, args, labels);
        let mut approval_reasons = Vec::new();
        // Explain's notes on the policy step; a real call makes none.
        let dry = trace.dry;
        let mut policy_notes = Vec::new();
        if dry && !rt.scopes.is_empty() {
            policy_notes.push(format!("principal holds scope `{}`", rt.scopes.join("`, `")));
        }
        for (li, layer) in self.settings.layers.iter().enumerate() {
            let named = |rule: &str| {
                if layer.name == "harness" {
                    format!("policy rule `{rule}`")
                } else {
                    format!("layer `{}`: policy rule `{rule}`", layer.name)
                }
            };
            let mut allowed = false;
            for rule in plan.rules.iter().filter_map(|&i| self.rules.get(i)).filter(|r| r.layer == li) {
                let matched = match &rule.when {
                    None => Ok(true),
                    Some(program) => condition(program, &vars),
                };
                let label = || match &matched {
                    Ok(_) => named(&rule.name),
                    Err(why) => format!("{} (unevaluable: {why})", named(&rule.name)),
                };
                match (rule.effect, &matched) {
                    // Fail closed: a deny whose condition cannot be evaluated denies.
                    (Effect::Deny, Ok(true) | Err(_)) => {
                        if rule.shadow {
                            trace.would_refuse(RefusalCode::PolicyDenied, Step::Policy, &layer.name, Some(&rule.name));
                            if dry {
                                policy_notes.push(format!("{} (deny, shadow) would refuse", label()));
                            }
                        } else {
                            let mut r = Refusal::new(RefusalCode::PolicyDenied, Step::Policy, format!("policy does not allow `{tool}` here"));
                            r.reasons.push(label());
                            return Err(Stop::Refused(r));
                        }
                    }
                    (Effect::Allow, Ok(true)) => {
                        // In a shadow layer its allow rules count toward what
                        // the layer would do; a lone shadow allow rule in an
                        // enforced layer allows nothing yet.
                        if rule.shadow && !layer.shadow {
                            if dry {
                                policy_notes.push(format!("{} (allow, shadow) matches", label()));
                            }
                        } else {
                            allowed = true;
                            if dry {
                                policy_notes.push(format!("{} allows", label()));
                            }
                        }
                    }
                    (Effect::Approve, Ok(true) | Err(_)) => {
                        if rule.shadow {
                            trace.would_refuse(RefusalCode::ApprovalRequired, Step::Approval, &layer.name, Some(&rule.name));
                            if dry {
                                policy_notes.push(format!("{} (approve, shadow) would ask for approval", label()));
                            }
                        } else {
                            approval_reasons.push(label());
                        }
                    }
                    (_, Ok(false)) | (Effect::Allow, Err(_)) => {
                        if dry {
                            policy_notes.push(format!("{} does not match", label()));
                        }
                    }
                }
            }
            if !allowed && !layer.default_allow {
                if layer.shadow {
                    trace.would_refuse(RefusalCode::PolicyDenied, Step::Policy, &layer.name, None);
                    if dry {
                        policy_notes.push(format!("layer `{}` (shadow): no rule allows `{tool}`, would refuse", layer.name));
                    }
                } else {
                    let mut r = Refusal::new(RefusalCode::PolicyDenied, Step::Policy, format!("no policy rule allows `{tool}`"));
                    r.reasons.push(format!("layer `{}`: default deny", layer.name));
                    return Err(Stop::Refused(r));
                }
            }
        }
        trace.pass(Step::Policy, || policy_notes);

        // 5 limits
        let max_tool = self.settings.per_tool.get(tool).copied();
        if trace.dry {
            trace.pass(Step::Limits, || {
                let mut notes = Vec::new();
                if let Some(n) = self.settings.max_tool_calls {
                    notes.push(format!("budgets.max_tool_calls {n} per run"));
                }
                if let Some(n) = max_tool {
                    notes.push(format!("budgets.per_tool `{tool}` {n} per run"));
                }
                if let Some(r) = rt.per_principal {
                    notes.push(format!("rate_limit.per_principal {} per {} ms", r.count, r.period_ms));
                }
                if let Some(r) = rt.per_tenant {
                    notes.push(format!("rate_limit.per_tenant {} per {} ms", r.count, r.period_ms));
                }
                notes.push("explain counts nothing against budgets or rate limits".into());
                notes
            });
        }
        let budget_counted = !trace.dry && (self.settings.max_tool_calls.is_some() || max_tool.is_some());
        if budget_counted {
            match self.store.take_budget(run_id, tool, self.settings.max_tool_calls, max_tool) {
                Ok(Budget::Taken) => {}
                Ok(Budget::RunExhausted { limit }) => {
                    return Err(Stop::Refused(Refusal::new(RefusalCode::BudgetExhausted, Step::Limits, format!("this run has used its {limit} tool calls"))));
                }
                Ok(Budget::ToolExhausted { limit }) => {
                    return Err(Stop::Refused(Refusal::new(RefusalCode::BudgetExhausted, Step::Limits, format!("this run has used its {limit} calls of `{tool}`"))));
                }
                Err(e) => return Err(Stop::Refused(store_down(Step::Limits, &e))),
            }
        }
        let release = |stop: Stop| -> Stop {
            if budget_counted {
                let _ = self.store.release_budget(run_id, tool);
            }
            stop
        };
        let mut keys = Vec::with_capacity(2);
        if let Some(rate) = rt.per_principal {
            keys.push(RateKey { key: concat(&plan.principal_key, &ctx.principal.id), rate });
        }
        if let (Some(rate), Some(tenant)) = (rt.per_tenant, &ctx.tenant) {
            keys.push(RateKey { key: concat(&plan.tenant_key, tenant), rate });
        }
        if !keys.is_empty() && !trace.dry {
            let acquired = self.store.acquire_with_labels(&keys, now_ms, run_id).map(|(acquire, labels)| {
                trace.labels = trace.labels.or(labels);
                acquire
            });
            match acquired {
                Ok(Acquire::Allowed) => {}
                Ok(Acquire::Limited { index, retry_after_ms }) => {
                    let per = if keys.get(index).is_some_and(|k| k.key.contains("/tenant/")) { "tenant" } else { "principal" };
                    let mut r = Refusal::new(RefusalCode::RateLimited, Step::Limits, format!("`{tool}` is rate limited per {per}"));
                    r.retry_after_ms = Some(retry_after_ms);
                    r.reasons.push(format!("rate_limit.per_{per}"));
                    return Err(release(Stop::Refused(r)));
                }
                // The harness chose availability over the limit.
                Err(_) if self.settings.rate_limits_fail_open => {}
                Err(e) => return Err(release(Stop::Refused(store_down(Step::Limits, &e)))),
            }
        }

        // 6 flow
        trace.pass(Step::Flow, || {
            let egress = if rt.egress.is_empty() { "no egress".to_string() } else { format!("egress to `{}`", rt.egress.join("`, `")) };
            vec![format!("run labels: private={}, untrusted={}; the tool has {egress}", labels.private, labels.untrusted)]
        });
        if !rt.egress.is_empty() && labels.private && labels.untrusted {
            match self.settings.trifecta {
                TrifectaMode::Block => {
                    let mut r = Refusal::new(RefusalCode::Trifecta,
                        Step::Flow,
                        format!("`{tool}` sends data out, and this run has read private data and seen untrusted content"),
                    );
                    r.reasons.push("private + untrusted + egress".into());
                    return Err(release(Stop::Refused(r)));
                }
                TrifectaMode::Approve => approval_reasons.push("trifecta: private and untrusted run sending data out".into()),
                TrifectaMode::Off => {}
            }
        }

        // 7 approval
        if let Some(program) = &rt.approval_when {
            match condition(program, &vars) {
                Ok(true) => approval_reasons.push(format!("approval.when `{}` is true", program.source())),
                Ok(false) => {}
                Err(why) => approval_reasons.push(format!("approval.when `{}` could not be evaluated: {why}", program.source())),
            }
        }
        if self.settings.approval_by_risk.contains(&rt.risk) {
            approval_reasons.push(format!("risk `{}` requires approval", rt.risk));
        }
        if approval_reasons.is_empty() {
            trace.pass(Step::Approval, || vec!["no approval needed".into()]);
            return Ok(index);
        }
        // Approvals are bound to the digest: computed here when the audit
        // sink did not already need it.
        let Some(args_digest) = digest.get() else {
            return Err(release(Stop::Refused(Refusal::new(RefusalCode::InvalidArgs, Step::Validate, "arguments have no portable JSON form"))));
        };
        let approver_role = rt.approver_role.clone().or_else(|| self.settings.default_approver_role.clone());
        if let Some(id) = &ctx.approval_id {
            match self.consume_approval(id, tool, args_digest, ctx, now_ms, trace.dry) {
                Consume::Granted => {
                    *approval_used = Some(id.clone());
                    trace.pass(Step::Approval, || vec![format!("approval `{id}` covers this exact call")]);
                    return Ok(index);
                }
                Consume::Refuse(refusal) => return Err(release(Stop::Refused(refusal))),
                Consume::Ask(reason) => approval_reasons.push(reason),
            }
        }
        if trace.dry {
            return Err(Stop::Pending(Box::new(ApprovalRequest {
                id: String::new(),
                tool: tool.to_string(),
                args_digest: args_digest.to_string(),
                approver_role,
                reasons: approval_reasons,
                expires_ms: now_ms.saturating_add(self.settings.approval_ttl_ms),
            })));
        }
        let pending = PendingApproval {
            id: self.ids.next("apr"),
            tool: tool.to_string(),
            args: args.clone(),
            args_digest: args_digest.to_string(),
            principal: ctx.principal.to_value(),
            tenant: ctx.tenant.clone(),
            task: ctx.task.clone(),
            run_id: run_id.to_string(),
            approver_role: approver_role.clone(),
            reasons: approval_reasons.clone(),
            created_ms: now_ms,
            expires_ms: now_ms.saturating_add(self.settings.approval_ttl_ms),
            state: ApprovalState::Pending,
            decided_by: None,
            note: None,
            policy_version: self.policy_version.clone(),
            original_args_digest: None,
        };
        if let Err(e) = self.store.put_approval(&pending) {
            return Err(release(Stop::Refused(store_down(Step::Approval, &e))));
        }
        let request = ApprovalRequest {
            id: pending.id.clone(),
            tool: tool.to_string(),
            args_digest: args_digest.to_string(),
            approver_role,
            reasons: approval_reasons,
            expires_ms: pending.expires_ms,
        };
        if let Some(callback) = &self.approval_callback {
            match callback(&request, &pending) {
                Some(true) => {
                    let ok = self.store.transition(&pending.id, ApprovalState::Pending, ApprovalState::Used, Some("callback"), None);
                    if matches!(ok, Ok(true)) {
                        *approval_used = Some(pending.id);
                        return Ok(index);
                    }
                }
                Some(false) => {
                    let _ = self.store.transition(&pending.id, ApprovalState::Pending, ApprovalState::Denied, Some("callback"), None);
                    let mut r = Refusal::new(RefusalCode::ApprovalDenied, Step::Approval, format!("a reviewer denied this call of `{tool}`"));
                    r.reasons = request.reasons;
                    return Err(release(Stop::Refused(r)));
                }
                None => {}
            }
        }
        // The call does not run now; it will be counted when it runs.
        Err(release(Stop::Pending(Box::new(request))))
    }

    /// Consumes an approval for this exact call (in a dry run, only checks it).
    fn consume_approval(&self, id: &str, tool: &str, args_digest: &str, ctx: &CallContext, now_ms: u64, dry: bool) -> Consume {
        let approval = match self.store.approval(id) {
            Ok(Some(a)) => a,
            Ok(None) => return Consume::Ask(format!("approval `{id}` does not exist")),
            Err(e) => return Consume::Refuse(store_down(Step::Approval, &e)),
        };
        let same_call = approval.tool == tool
            && approval.args_digest == args_digest
            && approval.principal.get("id").and_then(Value::as_str) == Some(ctx.principal.id.as_str())
            && approval.tenant == ctx.tenant;
        if !same_call {
            return Consume::Ask(format!("approval `{id}` does not cover this exact call"));
        }
        match approval.state {
            ApprovalState::Denied => {
                let mut r = Refusal::new(RefusalCode::ApprovalDenied, Step::Approval, format!("a reviewer denied this call of `{tool}`"));
                r.reasons.extend(approval.note.map(|n| format!("note: {n}")));
                Consume::Refuse(r)
            }
            ApprovalState::Used => Consume::Ask(format!("approval `{id}` does not cover this exact call")),
            ApprovalState::Pending if now_ms >= approval.expires_ms => Consume::Refuse(expired(id, tool)),
            ApprovalState::Pending => {
                Consume::Refuse(Refusal::new(RefusalCode::ApprovalRequired, Step::Approval, format!("approval `{id}` has not been granted yet")))
            }
            // A change of harness or manifests since the grant voids it.
            ApprovalState::Approved if approval.policy_version != self.policy_version => {
                Consume::Ask(format!("approval `{id}` was granted under another policy version"))
            }
            // Approvals time out to deny.
            ApprovalState::Approved if now_ms >= approval.expires_ms => {
                if !dry {
                    let _ = self.store.transition(id, ApprovalState::Approved, ApprovalState::Denied, None, Some("expired"));
                }
                Consume::Refuse(expired(id, tool))
            }
            ApprovalState::Approved if dry => Consume::Granted,
            ApprovalState::Approved => match self.store.transition(id, ApprovalState::Approved, ApprovalState::Used, None, None) {
                Ok(true) => Consume::Granted,
                Ok(false) => Consume::Ask(format!("approval `{id}` does not cover this exact call")),
                Err(e) => Consume::Refuse(store_down(Step::Approval, &e)),
            },
        }
    }

    /// Grants a pending approval. The approver must hold the approver role;
    /// an expired or already decided approval cannot be granted. Returns the
    /// approval, whose `tool`, `args` and context re-issue the call.
    pub fn approve(&self, id: &str, approver: &Principal) -> Result<PendingApproval, Error> {
        self.approve_edited(id, approver, None)
    }

    /// Grants a pending approval, optionally with arguments the approver
    /// edited. An edited grant becomes a new approval bound to the edited
    /// arguments (the original is used up); the call it re-issues is checked
    /// again from the start, and its audit event carries both digests.
    pub fn approve_edited(&self, id: &str, approver: &Principal, edited_args: Option<Value>) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        if let Some(role) = &approval.approver_role {
            if !approver.has_role(role) {
                return Err(Error::InvalidArgument { code: ArgumentCode::ApproverNotAllowed.as_str(),
                    message: format!("approving `{}` needs role `{role}`", approval.tool),
                });
            }
        }
        let store_err = |e: crate::store::StoreError| Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message };
        let Some(args) = edited_args else {
            return match self.store.transition(id, ApprovalState::Pending, ApprovalState::Approved, Some(&approver.id), None) {
                Ok(true) => Ok(PendingApproval { state: ApprovalState::Approved, decided_by: Some(approver.id.clone()), ..approval }),
                Ok(false) => Err(not_pending(id)),
                Err(e) => Err(store_err(e)),
            };
        };
        let text = canonical::to_string(&args)
            .map_err(|e| Error::InvalidArgument { code: ArgumentCode::InvalidArgs.as_str(), message: format!("edited arguments: {e}") })?;
        let edited = PendingApproval {
            id: self.ids.next("apr"),
            args_digest: sha256_tagged(text.as_bytes()),
            args,
            state: ApprovalState::Approved,
            decided_by: Some(approver.id.clone()),
            note: Some(format!("arguments edited by the approver of `{id}`")),
            original_args_digest: Some(approval.args_digest.clone()),
            ..approval
        };
        let replaced = format!("replaced by `{}` with edited arguments", edited.id);
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Used, Some(&approver.id), Some(&replaced)) {
            Ok(true) => {}
            Ok(false) => return Err(not_pending(id)),
            Err(e) => return Err(store_err(e)),
        }
        self.store.put_approval(&edited).map_err(store_err)?;
        Ok(edited)
    }

    /// Runs steps 1–9 without invoking anything and without counting,
    /// labelling, asking or consuming: each step's verdict and the rule, field
    /// or expression behind it.
    pub fn explain(&self, tool: &str, args: Value, ctx: &CallContext) -> Explanation {
        let now_ms = self.clock.now_ms();
        let run_id = ctx.run_id.clone().unwrap_or_default();
        let digest = ArgsDigest::new(&args, false);
        let mut trace = Trace { dry: true, ..Trace::default() };
        let mut used = None;
        let decided = self.decide(tool, &args, ctx, &run_id, &digest, now_ms, &mut used, &mut trace);
        let (decision, code, step, message, reasons) = match decided {
            Ok(index) => {
                trace.steps.push(StepTrace { step: Step::Invoke, verdict: "skip", code: None, details: vec!["explain does not invoke the tool".into()] });
                if let Some(rt) = self.tools.get(index) {
                    let sanitize: Vec<&str> = rt.output.sanitize.iter().map(|s| s.as_str()).collect();
                    let label = if rt.output.untrusted { "untrusted" } else { "trusted" };
                    trace.steps.push(StepTrace {
                        step: Step::Output,
                        verdict: "pass",
                        code: None,
                        details: vec![format!("sanitize [{}], max_bytes {}, label {label}", sanitize.join(", "), rt.output.max_bytes)],
                    });
                }
                (Decision::Allowed, None, None, format!("`{tool}` would run"), Vec::new())
            }
            Err(Stop::Refused(r)) => {
                let mut details = vec![r.message.clone()];
                details.extend(r.reasons.iter().cloned());
                trace.steps.push(StepTrace { step: r.step, verdict: "refuse", code: Some(r.code), details });
                (Decision::Refused, Some(r.code), Some(r.step), r.message, r.reasons)
            }
            Err(Stop::Pending(request)) => {
                trace.steps.push(StepTrace {
                    step: Step::Approval,
                    verdict: "pending",
                    code: Some(RefusalCode::ApprovalRequired),
                    details: request.reasons.clone(),
                });
                let message = format!("`{tool}` would wait for approval by a human");
                (Decision::Pending, Some(RefusalCode::ApprovalRequired), Some(Step::Approval), message, request.reasons)
            }
        };
        Explanation { tool: tool.to_string(), decision, code, step, message, reasons, steps: trace.steps, would_refuse: trace.shadow }
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

    /// Denies a pending approval with a reason for the record.
    pub fn deny(&self, id: &str, by: &str, reason: &str) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Denied, Some(by), Some(reason)) {
            Ok(true) => Ok(PendingApproval { state: ApprovalState::Denied, decided_by: Some(by.to_string()), note: Some(reason.to_string()), ..approval }),
            Ok(false) => Err(not_pending(id)),
            Err(e) => Err(Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message }),
        }
    }

    fn open_approval(&self, id: &str) -> Result<PendingApproval, Error> {
        let approval = self
            .store
            .approval(id)
            .map_err(|e| Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message })?
            .ok_or_else(|| Error::InvalidArgument { code: ArgumentCode::UnknownApproval.as_str(), message: format!("no approval `{id}`") })?;
        if approval.state != ApprovalState::Pending {
            return Err(not_pending(id));
        }
        if self.clock.now_ms() >= approval.expires_ms {
            return Err(Error::InvalidArgument { code: ArgumentCode::ApprovalExpired.as_str(), message: format!("approval `{id}` has expired") });
        }
        Ok(approval)
    }

    /// Approvals waiting for a human or granted and not yet used.
    pub fn open_approvals(&self) -> Result<Vec<PendingApproval>, Error> {
        self.store.open_approvals().map_err(|e| Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message })
    }

    /// Steps 8 (the outcome) and 9, then the audit event.
    pub fn finish(&self, ticket: Ticket, outcome: InvokeOutcome) -> CallResult {
        let invoke_us = micros(ticket.started).saturating_sub(ticket.decide_us);
        let output_started = Instant::now();
        let Some(rt) = self.tools.get(ticket.tool_index) else {
            return self.finish_refused(ticket, Refusal::new(RefusalCode::UnknownTool, Step::Resolve, "the tool is gone"), invoke_us, 0);
        };
        let value = match outcome {
            InvokeOutcome::Returned(value) => value,
            InvokeOutcome::Failed { kind } => {
                let r = Refusal::new(RefusalCode::HandlerError, Step::Invoke, format!("`{}` failed ({kind})", ticket.tool));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::TimedOut => {
                let r = Refusal::new(RefusalCode::Timeout, Step::Invoke, format!("`{}` took longer than {} ms and was abandoned", ticket.tool, ticket.timeout_ms));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::NotJson { reason } => {
                // The host's reason varies by language; it goes to the host's
                // log, never into the result, so every language agrees.
                eprintln!("harnessweaver: `{}` returned a value with no JSON form: {reason}", ticket.tool);
                let r = Refusal::new(RefusalCode::HandlerError, Step::Invoke, format!("`{}` returned a value with no JSON form", ticket.tool));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::TransportRefused { reason } => {
                let r = Refusal::new(RefusalCode::TransportRefused, Step::Invoke, reason);
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::SandboxError { message } => {
                let r = Refusal::new(RefusalCode::SandboxError, Step::Invoke, message);
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
        };
        if let Some(v) = rt.output_constraints.check(&value) {
            let at = if v.pointer.is_empty() { "/" } else { v.pointer.as_str() };
            let r = Refusal::new(RefusalCode::InvalidOutput, Step::Output, format!("the output of `{}` at `{at}` fails `{}`", ticket.tool, v.keyword));
            return self.finish_refused(ticket, r, invoke_us, micros(output_started));
        }
        // No sanitizer: the value is already what step 9 would rebuild (an
        // object's keys come out in the same sorted order), so skip the copy.
        let (value, redactions) = if rt.output.sanitize.is_empty() {
            (value, Counts::new())
        } else {
            let (value, report) = sanitize::apply(&value, &rt.output.sanitize);
            (value, report.counts.as_map().clone())
        };
        let (value, truncated) = cut(value, rt.output.max_bytes);
        let mut labels = ticket.labels.unwrap_or_else(|| self.store.labels(&ticket.run_id).unwrap_or_default());
        if rt.output.untrusted {
            match self.store.add_labels(&ticket.run_id, Labels { private: false, untrusted: true }) {
                Ok(l) => labels = l,
                Err(e) => {
                    // Withhold an output whose label could not be recorded:
                    // the run would forget it saw untrusted content.
                    return self.finish_refused(ticket, store_down(Step::Output, &e), invoke_us, micros(output_started));
                }
            }
        }
        if self.audit_on {
            let timings = Timings { decide_us: ticket.decide_us, invoke_us, output_us: micros(output_started) };
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
                timings,
            });
        }
        let report = OutputReport {
            truncated,
            redactions,
            label: if rt.output.untrusted { "untrusted" } else { "trusted" }.to_string(),
        };
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
        if ticket.own_run {
            let _ = self.store.end_run(&result.run_id);
        }
        result
    }

    fn finish_refused(&self, ticket: Ticket, refusal: Refusal, invoke_us: u64, output_us: u64) -> CallResult {
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
            code: result.code.clone(),
            step: result.step,
            args_digest: ticket.args_digest,
            original_args_digest: ticket.original_args_digest,
            approval_id: ticket.approval_id,
            redactions: None,
            truncated: None,
            would_refuse: ticket.would_refuse,
            timings: Timings { decide_us: ticket.decide_us, invoke_us, output_us },
        });
        if ticket.own_run {
            let _ = self.store.end_run(&result.run_id);
        }
        result
    }

    fn audit_result(&self, result: &CallResult, ctx: &CallContext, args_digest: Option<String>, ts_ms: u64, timings: Timings) {
        let approval_id = result.approval.as_ref().map(|a| a.id.clone());
        self.audit_result_with_approval(result, ctx, args_digest, approval_id, ts_ms, timings);
    }

    fn audit_result_with_approval(
        &self,
        result: &CallResult,
        ctx: &CallContext,
        args_digest: Option<String>,
        approval_id: Option<String>,
        ts_ms: u64,
        timings: Timings,
    ) {
        self.record(AuditEvent {
            ts_ms,
            call_id: result.call_id.clone(),
            run_id: result.run_id.clone(),
            tool: result.tool.clone(),
            principal: ctx.principal.id.clone(),
            tenant: ctx.tenant.clone(),
            decision: result.decision,
            code: result.code.clone(),
            step: result.step,
            args_digest,
            original_args_digest: ctx.original_args_digest.clone(),
            approval_id,
            redactions: None,
            truncated: None,
            would_refuse: result.would_refuse.clone(),
            timings,
        });
    }

    fn record(&self, event: AuditEvent) {
        if !self.audit_on {
            return;
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
            _ => None,
        }
    }
}

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

/// What one step found, as `explain` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTrace {
    /// The step.
    pub step: Step,
    /// `pass`, `refuse`, `pending` or `skip`.
    pub verdict: &'static str,
    /// The code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The rules, fields and expressions behind the verdict.
    pub details: Vec<String>,
}

/// Collects explain's per-step verdicts and shadow-mode would-refusals.
#[derive(Debug, Default)]
struct Trace {
    dry: bool,
    steps: Vec<StepTrace>,
    shadow: Vec<WouldRefuse>,
    /// The run's labels once read (at the policy step, or with the rate
    /// limit in the same round trip); results reuse them instead of asking
    /// the store again.
    labels: Option<Labels>,
}

impl Trace {
    fn pass(&mut self, step: Step, details: impl FnOnce() -> Vec<String>) {
        if self.dry {
            self.steps.push(StepTrace { step, verdict: "pass", code: None, details: details() });
        }
    }

    fn would_refuse(&mut self, code: RefusalCode, step: Step, layer: &str, rule: Option<&str>) {
        self.shadow.push(WouldRefuse { code, step, layer: layer.to_string(), rule: rule.map(str::to_string) });
    }
}

/// What `explain` found: each step's verdict and the decision a call would get.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The tool.
    pub tool: String,
    /// What the call would get.
    pub decision: Decision,
    /// The code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The step that would decide.
    pub step: Option<Step>,
    /// The message the call would carry.
    pub message: String,
    /// Why.
    pub reasons: Vec<String>,
    /// Each step in order, up to the one that decides.
    pub steps: Vec<StepTrace>,
    /// What shadow-mode rules would refuse.
    pub would_refuse: Vec<WouldRefuse>,
}

impl Explanation {
    /// The explanation as one JSON object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A readable text, one line per step.
    pub fn to_text(&self) -> String {
        let mut out = format!("explain `{}`: {}", self.tool, self.decision.as_str());
        if let (Some(code), Some(step)) = (&self.code, self.step) {
            out.push_str(&format!(" ({code} at step {} {})", step.number(), step.as_str()));
        }
        out.push('\n');
        for s in &self.steps {
            out.push_str(&format!("  {}. {:<9} {}", s.step.number(), s.step.as_str(), s.verdict));
            if let Some(code) = &s.code {
                out.push_str(&format!(" [{code}]"));
            }
            out.push('\n');
            for d in &s.details {
                out.push_str(&format!("       - {d}\n"));
            }
        }
        for w in &self.would_refuse {
            let rule = w.rule.as_deref().map_or_else(|| "default deny".to_string(), |r| format!("rule `{r}`"));
            out.push_str(&format!("  shadow: layer `{}` {rule} would refuse with {}\n", w.layer, w.code));
        }
        out
    }
}

fn not_pending(id: &str) -> Error {
    Error::InvalidArgument { code: ArgumentCode::ApprovalNotPending.as_str(), message: format!("approval `{id}` is not pending (already decided or used)") }
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
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
