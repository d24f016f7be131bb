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
mod types;

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

pub use build::GovernorOptions;
pub use crate::harness::{Effect, TrifectaMode};
pub use output::{cut, truncate};
pub use types::{ApprovalRequest, CallContext, CallResult, Decision, OutputReport, Principal, Step};

use crate::audit::{AuditEvent, AuditSink, Timings};
use crate::clock::{Clock, IdSource};
use crate::digest::sha256_tagged;
use crate::error::Error;
use crate::store::{Acquire, ApprovalState, Budget, Labels, PendingApproval, Rate, RateKey, Store};
use crate::validate::{Constraints, SchemaValidator};
use crate::canonical;
use crate::cel_lite::{Program, Vars};
use crate::transport::Transports;

/// TODO(merge): replaced by crate::sanitize when the sanitizers land.
mod sanitize {
    use serde_json::Value;
    use std::collections::BTreeMap;
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Sanitizer {
        PiiRedact,
        StripInstructions,
    }
    pub fn apply(value: &Value, _s: &[Sanitizer]) -> (Value, BTreeMap<String, u64>) {
        (value.clone(), BTreeMap::new())
    }
}

/// Evaluates a compiled cel-lite condition: `Ok(bool)`, or `Err(reason)`
/// when it is unevaluable (a runtime error, or a value that is not a bool).
pub fn condition(program: &Program, vars: &Vars<'_>) -> Result<bool, String> {
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
}

/// How a tool is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A host function, invoked by the binding.
    Native { handler: Option<String> },
    /// POST to a URL.
    Http { url: String },
    /// Code in a sandbox.
    Code { sandbox: String },
    /// An MCP server's tool.
    Mcp { server: String },
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
    /// `policy.default`: whether a call no allow rule matches is allowed
    /// (true unless the harness says `deny`).
    pub default_allow: bool,
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
            default_allow: true,
        }
    }
}

/// A call that passed steps 1–7 and may now run.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The call's id.
    pub call_id: String,
    /// The run's id.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// The validated arguments.
    pub args: Value,
    /// The key handlers and services use to recognise a retried call.
    pub idempotency_key: String,
    /// How long the tool may take, in ms.
    pub timeout_ms: u64,
    /// How to reach it.
    pub transport: Transport,
    tool_index: usize,
    principal: String,
    tenant: Option<String>,
    args_digest: Option<String>,
    approval_id: Option<String>,
    ts_ms: u64,
    started: Instant,
    decide_us: u64,
}

/// What happened when the tool was invoked.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeOutcome {
    /// The tool returned this value.
    Returned(Value),
    /// The tool raised or failed; `kind` is a short, safe name (an exception class).
    Failed { kind: String },
    /// The tool overran its timeout and was abandoned.
    TimedOut,
    /// The tool returned something with no JSON form.
    NotJson { reason: String },
    /// The transport refused to reach the tool (test mode, policy).
    TransportRefused { reason: String },
    /// The sandbox reported an error (a safe, Python-style message).
    SandboxError { message: String },
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
    index: HashMap<String, usize>,
    rules: Vec<Rule>,
    settings: Settings,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    ids: IdSource,
    audit: Arc<dyn AuditSink>,
    approval_callback: Option<ApprovalCallback>,
    unmanifested: Vec<String>,
    transports: Arc<Transports>,
}

impl fmt::Debug for Governor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governor").field("tools", &self.index.len()).field("rules", &self.rules.len()).finish()
    }
}

/// A refusal in the making: code, step, message, reasons.
struct Refusal {
    code: &'static str,
    step: Step,
    message: String,
    reasons: Vec<String>,
    retry_after_ms: Option<u64>,
}

impl Refusal {
    fn new(code: &'static str, step: Step, message: impl Into<String>) -> Self {
        Self { code, step, message: message.into(), reasons: Vec::new(), retry_after_ms: None }
    }
}

fn store_down(step: Step, e: &crate::store::StoreError) -> Refusal {
    Refusal::new("store_unavailable", step, format!("the state store is unavailable ({e}); the call was not made"))
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
        Self {
            tools,
            index,
            rules,
            settings,
            store,
            clock,
            ids,
            audit,
            approval_callback: None,
            unmanifested: Vec::new(),
            transports: Arc::new(Transports::default()),
        }
    }

    /// Names that have a handler but no manifest: calling one is refused
    /// with `no_manifest` (S2) rather than `unknown_tool`.
    pub fn set_unmanifested(&mut self, names: Vec<String>) {
        self.unmanifested = names;
    }

    /// Sets the host callback that may decide approvals inline.
    pub fn set_approval_callback(&mut self, callback: Option<ApprovalCallback>) {
        self.approval_callback = callback;
    }

    /// Sets the transports (http, code, mcp) the core invokes itself.
    pub fn set_transports(&mut self, transports: Transports) {
        self.transports = Arc::new(transports);
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
        let args_digest = canonical::to_string(&args).ok().map(|text| sha256_tagged(text.as_bytes()));
        let mut approval_used = None;
        let decided = self.decide(tool, &args, ctx, &run_id, args_digest.as_deref(), ts_ms, &mut approval_used);
        let decide_us = micros(started);
        match decided {
            Ok(index) => {
                let Some(rt) = self.tools.get(index) else {
                    return Begin::Done(self.end_refused(
                        Refusal::new("unknown_tool", Step::Resolve, format!("no tool named `{tool}`")),
                        tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us,
                    ));
                };
                // S3: running a tool that reads personal data makes the run private.
                if rt.private {
                    if let Err(e) = self.store.add_labels(&run_id, Labels { private: true, untrusted: false }) {
                        return Begin::Done(self.end_refused(
                            store_down(Step::Invoke, &e), tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us,
                        ));
                    }
                }
                let idempotency_key = ctx.idempotency_key.clone().unwrap_or_else(|| match &approval_used {
                    Some(id) => format!("idem-{id}"),
                    None => format!("idem-{call_id}"),
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
                    ts_ms,
                    started,
                    decide_us,
                })
            }
            Err(Stop::Refused(refusal)) => Begin::Done(self.end_refused(
                refusal, tool, &call_id, &run_id, ctx, args_digest, approval_used, ts_ms, decide_us,
            )),
            Err(Stop::Pending(request)) => {
                let labels = self.store.labels(&run_id).unwrap_or_default();
                let result = CallResult {
                    decision: Decision::Pending,
                    code: Some("approval_required".into()),
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
                };
                self.audit_result(&result, ctx, args_digest, ts_ms, Timings { decide_us, ..Timings::default() });
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
    ) -> CallResult {
        let labels = self.store.labels(run_id).unwrap_or_default();
        let result = CallResult {
            decision: Decision::Refused,
            code: Some(refusal.code.to_string()),
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
        };
        let mut event_digest = args_digest;
        if result.step == Some(Step::Resolve) && result.code.as_deref() == Some("unknown_tool") {
            // Nothing was validated; still a digest, never the args.
            event_digest = event_digest.or(None);
        }
        self.audit_result_with_approval(&result, ctx, event_digest, approval_id, ts_ms, Timings { decide_us, ..Timings::default() });
        result
    }

    #[expect(clippy::too_many_arguments, reason = "the steps need the whole call")]
    fn decide(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
        run_id: &str,
        args_digest: Option<&str>,
        now_ms: u64,
        approval_used: &mut Option<String>,
    ) -> Result<usize, Stop> {
        // 1 resolve
        let Some(&index) = self.index.get(tool) else {
            if self.unmanifested.iter().any(|n| n == tool) {
                return Err(Stop::Refused(Refusal::new("no_manifest", Step::Resolve, format!("`{tool}` has no manifest and cannot run"))));
            }
            return Err(Stop::Refused(Refusal::new("unknown_tool", Step::Resolve, format!("no tool named `{tool}`"))));
        };
        let Some(rt) = self.tools.get(index) else {
            return Err(Stop::Refused(Refusal::new("no_manifest", Step::Resolve, format!("`{tool}` has no manifest"))));
        };
        if !rt.enabled {
            return Err(Stop::Refused(Refusal::new("tool_disabled", Step::Resolve, format!("`{tool}` is disabled"))));
        }
        if !rt.tenants.is_empty() && !ctx.tenant.as_ref().is_some_and(|t| rt.tenants.iter().any(|x| x == t)) {
            let which = ctx.tenant.as_deref().map_or_else(|| "calls without a tenant".to_string(), |t| format!("tenant `{t}`"));
            return Err(Stop::Refused(Refusal::new("tenant_not_enabled", Step::Resolve, format!("`{tool}` is not enabled for {which}"))));
        }

        // 2 validate
        let Some(args_digest) = args_digest else {
            return Err(Stop::Refused(Refusal::new("invalid_args", Step::Validate, "arguments have no portable JSON form")));
        };
        if !args.is_object() {
            return Err(Stop::Refused(Refusal::new("invalid_args", Step::Validate, "arguments must be an object")));
        }
        if let Some(v) = rt.validator.check(args).or_else(|| rt.input_constraints.check(args)) {
            let mut r = Refusal::new("invalid_args", Step::Validate, v.message());
            r.reasons.push(format!("{} {}", v.pointer, v.keyword));
            return Err(Stop::Refused(r));
        }

        // 3 pin
        if rt.pin_mismatch {
            return Err(Stop::Refused(Refusal::new(
                "digest_mismatch",
                Step::Pin,
                format!("`{tool}` changed since it was pinned; it is blocked until the change is reviewed and re-pinned"),
            )));
        }
        // An MCP tool is also checked against what its server serves now.
        if matches!(rt.transport, Transport::Mcp { .. }) {
            if let Some(why) = self.transports.live_pin_mismatch(tool) {
                let mut r = Refusal::new(
                    "digest_mismatch",
                    Step::Pin,
                    format!("`{tool}` as its MCP server serves it differs from its manifest; it is blocked until the change is reviewed and re-pinned"),
                );
                r.reasons.push(why);
                return Err(Stop::Refused(r));
            }
        }

        // 4 policy
        let missing: Vec<&str> = rt.scopes.iter().filter(|s| !ctx.principal.scopes.contains(s)).map(String::as_str).collect();
        if !missing.is_empty() {
            let mut r = Refusal::new("scope_missing", Step::Policy, format!("`{tool}` needs scope `{}`", missing.join("`, `")));
            r.reasons = missing.iter().map(|s| format!("scope {s}")).collect();
            return Err(Stop::Refused(r));
        }
        let labels = self.store.labels(run_id).map_err(|e| Stop::Refused(store_down(Step::Policy, &e)))?;
        let applies = |r: &&Rule| r.tools.is_empty() || r.tools.iter().any(|g| glob_match(g, tool));
        // The variables cost allocations; build them only for a condition.
        let uses_conditions = rt.approval_when.is_some() || self.rules.iter().filter(applies).any(|r| r.when.is_some());
        let (principal_value, tenant_value, task_value, labels_value) = if uses_conditions {
            (
                ctx.principal.to_value(),
                ctx.tenant.clone().map_or(Value::Null, Value::String),
                ctx.task.clone().map_or(Value::Null, Value::String),
                labels_to_value(labels),
            )
        } else {
            (Value::Null, Value::Null, Value::Null, Value::Null)
        };
        let vars = Vars {
            principal: Some(&principal_value),
            tenant: Some(&tenant_value),
            task: Some(&task_value),
            tool: Some(&rt.tool_value),
            args: Some(args),
            labels: Some(&labels_value),
        };
        let mut approval_reasons = Vec::new();
        let mut allowed_by_rule = false;
        let mut deny: Option<String> = None;
        for rule in self.rules.iter().filter(applies) {
            let matched = match &rule.when {
                None => Ok(true),
                Some(program) => condition(program, &vars),
            };
            match (rule.effect, matched) {
                // Fail closed: a deny whose condition cannot be evaluated denies.
                (Effect::Deny, Ok(true)) => deny = Some(format!("policy rule `{}`", rule.name)),
                (Effect::Deny, Err(why)) => deny = Some(format!("policy rule `{}` (unevaluable: {why})", rule.name)),
                (Effect::Allow, Ok(true)) => allowed_by_rule = true,
                (Effect::Approve, Ok(true)) => approval_reasons.push(format!("policy rule `{}`", rule.name)),
                (Effect::Approve, Err(why)) => approval_reasons.push(format!("policy rule `{}` (unevaluable: {why})", rule.name)),
                _ => {}
            }
            if deny.is_some() {
                break;
            }
        }
        if let Some(reason) = deny {
            let mut r = Refusal::new("policy_denied", Step::Policy, format!("policy does not allow `{tool}` here"));
            r.reasons.push(reason);
            return Err(Stop::Refused(r));
        }
        if !allowed_by_rule && !self.settings.default_allow {
            let mut r = Refusal::new("policy_denied", Step::Policy, format!("no policy rule allows `{tool}`"));
            r.reasons.push("policy.default deny".into());
            return Err(Stop::Refused(r));
        }

        // 5 limits
        let max_tool = self.settings.per_tool.get(tool).copied();
        let budget_counted = self.settings.max_tool_calls.is_some() || max_tool.is_some();
        if budget_counted {
            match self.store.take_budget(run_id, tool, self.settings.max_tool_calls, max_tool) {
                Ok(Budget::Taken) => {}
                Ok(Budget::RunExhausted { limit }) => {
                    return Err(Stop::Refused(Refusal::new("budget_exhausted", Step::Limits, format!("this run has used its {limit} tool calls"))));
                }
                Ok(Budget::ToolExhausted { limit }) => {
                    return Err(Stop::Refused(Refusal::new("budget_exhausted", Step::Limits, format!("this run has used its {limit} calls of `{tool}`"))));
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
            keys.push(RateKey { key: format!("rl/{tool}/principal/{}", ctx.principal.id), rate });
        }
        if let (Some(rate), Some(tenant)) = (rt.per_tenant, &ctx.tenant) {
            keys.push(RateKey { key: format!("rl/{tool}/tenant/{tenant}"), rate });
        }
        if !keys.is_empty() {
            match self.store.acquire(&keys, now_ms) {
                Ok(Acquire::Allowed) => {}
                Ok(Acquire::Limited { index, retry_after_ms }) => {
                    let per = if keys.get(index).is_some_and(|k| k.key.contains("/tenant/")) { "tenant" } else { "principal" };
                    let mut r = Refusal::new("rate_limited", Step::Limits, format!("`{tool}` is rate limited per {per}"));
                    r.retry_after_ms = Some(retry_after_ms);
                    r.reasons.push(format!("rate_limit.per_{per}"));
                    return Err(release(Stop::Refused(r)));
                }
                Err(e) => return Err(release(Stop::Refused(store_down(Step::Limits, &e)))),
            }
        }

        // 6 flow
        if !rt.egress.is_empty() && labels.private && labels.untrusted {
            match self.settings.trifecta {
                TrifectaMode::Block => {
                    let mut r = Refusal::new(
                        "trifecta",
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
            return Ok(index);
        }
        let approver_role = rt.approver_role.clone().or_else(|| self.settings.default_approver_role.clone());
        if let Some(id) = &ctx.approval_id {
            match self.consume_approval(id, tool, args_digest, ctx, now_ms) {
                Ok(()) => {
                    *approval_used = Some(id.clone());
                    return Ok(index);
                }
                Err(Some(refusal)) => return Err(release(Stop::Refused(refusal))),
                Err(None) => approval_reasons.push(format!("approval `{id}` does not cover this exact call")),
            }
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
                    let mut r = Refusal::new("approval_denied", Step::Approval, format!("a reviewer denied this call of `{tool}`"));
                    r.reasons = request.reasons;
                    return Err(release(Stop::Refused(r)));
                }
                None => {}
            }
        }
        // The call does not run now; it will be counted when it runs.
        Err(release(Stop::Pending(Box::new(request))))
    }

    /// Consumes an approval for this exact call. `Err(None)`: the approval
    /// does not cover the call (ask again); `Err(Some)`: refuse outright.
    fn consume_approval(&self, id: &str, tool: &str, args_digest: &str, ctx: &CallContext, now_ms: u64) -> Result<(), Option<Refusal>> {
        let approval = match self.store.approval(id) {
            Ok(Some(a)) => a,
            Ok(None) => return Err(None),
            Err(e) => return Err(Some(store_down(Step::Approval, &e))),
        };
        let same_call = approval.tool == tool
            && approval.args_digest == args_digest
            && approval.principal.get("id").and_then(Value::as_str) == Some(ctx.principal.id.as_str())
            && approval.tenant == ctx.tenant;
        if !same_call {
            return Err(None);
        }
        match approval.state {
            ApprovalState::Denied => {
                let mut r = Refusal::new("approval_denied", Step::Approval, format!("a reviewer denied this call of `{tool}`"));
                r.reasons.extend(approval.note.map(|n| format!("note: {n}")));
                Err(Some(r))
            }
            ApprovalState::Used => Err(None),
            ApprovalState::Pending => {
                Err(Some(Refusal::new("approval_required", Step::Approval, format!("approval `{id}` has not been granted yet"))))
            }
            ApprovalState::Approved if now_ms >= approval.expires_ms => Err(None),
            ApprovalState::Approved => match self.store.transition(id, ApprovalState::Approved, ApprovalState::Used, None, None) {
                Ok(true) => Ok(()),
                Ok(false) => Err(None),
                Err(e) => Err(Some(store_down(Step::Approval, &e))),
            },
        }
    }

    /// Grants a pending approval. The approver must hold the approver role;
    /// an expired or already decided approval cannot be granted. Returns the
    /// approval, whose `tool`, `args` and context re-issue the call.
    pub fn approve(&self, id: &str, approver: &Principal) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        if let Some(role) = &approval.approver_role {
            if !approver.has_role(role) {
                return Err(Error::InvalidArgument {
                    code: "approver_not_allowed",
                    message: format!("approving `{}` needs role `{role}`", approval.tool),
                });
            }
        }
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Approved, Some(&approver.id), None) {
            Ok(true) => Ok(PendingApproval { state: ApprovalState::Approved, decided_by: Some(approver.id.clone()), ..approval }),
            Ok(false) => Err(not_pending(id)),
            Err(e) => Err(Error::InvalidArgument { code: "store_unavailable", message: e.message }),
        }
    }

    /// Denies a pending approval with a reason for the record.
    pub fn deny(&self, id: &str, by: &str, reason: &str) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Denied, Some(by), Some(reason)) {
            Ok(true) => Ok(PendingApproval { state: ApprovalState::Denied, decided_by: Some(by.to_string()), note: Some(reason.to_string()), ..approval }),
            Ok(false) => Err(not_pending(id)),
            Err(e) => Err(Error::InvalidArgument { code: "store_unavailable", message: e.message }),
        }
    }

    fn open_approval(&self, id: &str) -> Result<PendingApproval, Error> {
        let approval = self
            .store
            .approval(id)
            .map_err(|e| Error::InvalidArgument { code: "store_unavailable", message: e.message })?
            .ok_or_else(|| Error::InvalidArgument { code: "unknown_approval", message: format!("no approval `{id}`") })?;
        if approval.state != ApprovalState::Pending {
            return Err(not_pending(id));
        }
        if self.clock.now_ms() >= approval.expires_ms {
            return Err(Error::InvalidArgument { code: "approval_expired", message: format!("approval `{id}` has expired") });
        }
        Ok(approval)
    }

    /// Approvals waiting for a human or granted and not yet used.
    pub fn open_approvals(&self) -> Result<Vec<PendingApproval>, Error> {
        self.store.open_approvals().map_err(|e| Error::InvalidArgument { code: "store_unavailable", message: e.message })
    }

    /// Steps 8 (the outcome) and 9, then the audit event.
    pub fn finish(&self, ticket: Ticket, outcome: InvokeOutcome) -> CallResult {
        let invoke_us = micros(ticket.started).saturating_sub(ticket.decide_us);
        let output_started = Instant::now();
        let Some(rt) = self.tools.get(ticket.tool_index) else {
            return self.finish_refused(ticket, Refusal::new("unknown_tool", Step::Resolve, "the tool is gone"), invoke_us, 0);
        };
        let value = match outcome {
            InvokeOutcome::Returned(value) => value,
            InvokeOutcome::Failed { kind } => {
                let r = Refusal::new("handler_error", Step::Invoke, format!("`{}` failed ({kind})", ticket.tool));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::TimedOut => {
                let r = Refusal::new("timeout", Step::Invoke, format!("`{}` took longer than {} ms and was abandoned", ticket.tool, ticket.timeout_ms));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::NotJson { reason } => {
                // The host's reason varies by language; it goes to the host's
                // log, never into the result, so every language agrees.
                eprintln!("harnessweaver: `{}` returned a value with no JSON form: {reason}", ticket.tool);
                let r = Refusal::new("handler_error", Step::Invoke, format!("`{}` returned a value with no JSON form", ticket.tool));
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::TransportRefused { reason } => {
                let r = Refusal::new("transport_refused", Step::Invoke, reason);
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
            InvokeOutcome::SandboxError { message } => {
                let r = Refusal::new("sandbox_error", Step::Invoke, message);
                return self.finish_refused(ticket, r, invoke_us, 0);
            }
        };
        if let Some(v) = rt.output_constraints.check(&value) {
            let at = if v.pointer.is_empty() { "/" } else { v.pointer.as_str() };
            let r = Refusal::new("invalid_output", Step::Output, format!("the output of `{}` at `{at}` fails `{}`", ticket.tool, v.keyword));
            return self.finish_refused(ticket, r, invoke_us, micros(output_started));
        }
        let (value, redactions) = sanitize::apply(&value, &rt.output.sanitize);
        let (value, truncated) = cut(value, rt.output.max_bytes);
        let mut labels = self.store.labels(&ticket.run_id).unwrap_or_default();
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
        let report = OutputReport {
            truncated,
            redactions: redactions.clone(),
            label: if rt.output.untrusted { "untrusted" } else { "trusted" }.to_string(),
        };
        let result = CallResult {
            decision: Decision::Allowed,
            code: None,
            step: None,
            message: String::new(),
            tool: ticket.tool.clone(),
            call_id: ticket.call_id.clone(),
            run_id: ticket.run_id.clone(),
            output: Some(value),
            output_report: Some(report),
            approval: None,
            retry_after_ms: None,
            reasons: Vec::new(),
            labels,
        };
        let timings = Timings { decide_us: ticket.decide_us, invoke_us, output_us: micros(output_started) };
        self.record(AuditEvent {
            ts_ms: ticket.ts_ms,
            call_id: ticket.call_id,
            run_id: ticket.run_id,
            tool: ticket.tool,
            principal: ticket.principal,
            tenant: ticket.tenant,
            decision: Decision::Allowed,
            code: None,
            step: None,
            args_digest: ticket.args_digest,
            approval_id: ticket.approval_id,
            redactions: Some(redactions),
            truncated: Some(truncated),
            timings,
        });
        result
    }

    fn finish_refused(&self, ticket: Ticket, refusal: Refusal, invoke_us: u64, output_us: u64) -> CallResult {
        let labels = self.store.labels(&ticket.run_id).unwrap_or_default();
        let result = CallResult {
            decision: Decision::Refused,
            code: Some(refusal.code.to_string()),
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
            approval_id: ticket.approval_id,
            redactions: None,
            truncated: None,
            timings: Timings { decide_us: ticket.decide_us, invoke_us, output_us },
        });
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
            approval_id,
            redactions: None,
            truncated: None,
            timings,
        });
    }

    fn record(&self, event: AuditEvent) {
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

enum Stop {
    Refused(Refusal),
    Pending(Box<ApprovalRequest>),
}

fn not_pending(id: &str) -> Error {
    Error::InvalidArgument { code: "approval_not_pending", message: format!("approval `{id}` is not pending (already decided or used)") }
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
