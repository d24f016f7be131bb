//! Steps 1–7, one function each: resolve, validate, pin, policy, limits,
//! flow, approval. Each either passes (recording what explain shows) or
//! stops the call with a refusal or a pending approval. A budget taken at
//! step 5 is given back when a later step stops the call.

use serde_json::Value;

use super::trace::Trace;
use super::{condition, expired, store_down, ArgsDigest, CallVars, Consume, Governor, InlineDecision, Refusal, Stop, ToolPlan, ToolRuntime};
use crate::call::{ApprovalRequest, CallContext, RefusalCode, Step, Transport};
use crate::harness::{Effect, TrifectaMode};
use crate::store::{Acquire, ApprovalState, Bounded, Budget, Labels, PendingApproval, Rate, RateKey};

thread_local! {
    /// The rate-limit key buffers of [`Governor::rate_limits`], kept between
    /// calls on this thread so that building a key allocates only once.
    static KEY_BUFFERS: std::cell::Cell<[String; 2]> = const { std::cell::Cell::new([String::new(), String::new()]) };
}

/// The largest key buffer kept for the next call, in bytes.
const MAX_KEPT_KEY_BYTES: usize = 1024;

/// A placeholder rate for a key buffer not in use.
const NO_RATE: Rate = Rate { count: 0, period_ms: 0 };

/// Makes `slot` the key `prefix` + `rest` at `rate`, reusing its buffer.
fn fill(slot: &mut RateKey, rate: Rate, prefix: &str, rest: &str) {
    slot.key.clear();
    slot.key.push_str(prefix);
    slot.key.push_str(rest);
    slot.rate = rate;
}

/// One call being decided: what the steps read, and what they found.
pub(super) struct Deciding<'a> {
    pub tool: &'a str,
    pub args: &'a Value,
    pub ctx: &'a CallContext,
    pub run_id: &'a str,
    pub digest: &'a ArgsDigest<'a>,
    pub now_ms: u64,
    /// Explain's per-step verdicts, shadow refusals, and the labels once read.
    pub trace: Trace,
    /// The approval this call runs under, once one covers it.
    pub approval_used: Option<String>,
    /// Why the call needs a human, gathered by policy, flow and approval.
    pub(super) approval_reasons: Vec<String>,
    /// What asked for the human, as stable keys (`rule:<layer>/<name>`,
    /// `trifecta`, `tainted_argument`, `action_not_requested`, `approval.when`, `risk`): an approval covers a call only
    /// when it was granted for at least these.
    pub(super) asked_by: Vec<String>,
    /// Step 5 took a budget for this call: give it back if the call stops.
    budget_counted: bool,
    /// A built-in tool's prepared call (issue 20).
    pub prepared: Option<std::sync::Arc<crate::builtins::Prepared>>,
    /// The candidates a built-in tool's gate offers with its approval.
    pub(super) candidates: Vec<crate::builtins::Candidate>,
    /// The sink arguments provenance refused or sent to a human, for the audit event (issue 23).
    pub(super) sinks: Vec<crate::audit::SinkDigest>,
    /// Whether the task asked for the tool's action (`flow.intent`), for the audit event.
    pub(super) intent: Option<&'static str>,
}

impl<'a> Deciding<'a> {
    pub fn new(tool: &'a str, args: &'a Value, ctx: &'a CallContext, run_id: &'a str, digest: &'a ArgsDigest<'a>, now_ms: u64, trace: Trace) -> Self {
        Self {
            tool,
            args,
            ctx,
            run_id,
            digest,
            now_ms,
            trace,
            approval_used: None,
            approval_reasons: Vec::new(),
            asked_by: Vec::new(),
            budget_counted: false,
            prepared: None,
            candidates: Vec::new(),
            sinks: Vec::new(),
            intent: None,
        }
    }
}

fn refused(code: RefusalCode, step: Step, message: impl Into<String>) -> Stop {
    Stop::Refused(Refusal::new(code, step, message))
}

impl Governor {
    /// Steps 1–7: the tool's index when the call may run.
    pub(super) fn decide(&self, call: &mut Deciding<'_>) -> Result<usize, Stop> {
        let index = self.resolve(call)?;
        let (Some(rt), Some(plan)) = (self.tools.get(index), self.plans.get(index)) else {
            return Err(refused(RefusalCode::NoManifest, Step::Resolve, format!("`{}` has no manifest", call.tool)));
        };
        self.validate(rt, call)?;
        self.prepare_builtin(rt, call)?;
        self.pin(rt, call)?;
        let labels = self.decisive_labels(rt, plan, call)?;
        let mut vars = CallVars::new(call.ctx, &rt.tool_value, call.args, labels);
        if plan.uses_run {
            vars.run_value = Some(self.run_value(call.run_id));
        }
        self.policy(rt, plan, &vars, call)?;
        self.gate_builtin(call)?;
        self.limits(rt, plan, call)?;
        let after_limits = self.flow(rt, labels, call).and_then(|()| self.approval(rt, &vars, call));
        after_limits.map(|()| index).map_err(|stop| self.release(call, stop))
    }

    /// Gives back the budget step 5 took when the call stops after it.
    fn release(&self, call: &Deciding<'_>, stop: Stop) -> Stop {
        if call.budget_counted {
            let _ = self.store.release_budget(call.run_id, call.tool);
        }
        stop
    }

    /// Step 1: the tool exists, has a manifest, is enabled for the tenant.
    fn resolve(&self, call: &mut Deciding<'_>) -> Result<usize, Stop> {
        let (tool, ctx) = (call.tool, call.ctx);
        // A name longer than any tool may have is unknown without a lookup,
        // and is echoed cut short (issue 17, item 14).
        if tool.len() > super::MAX_TOOL_NAME_BYTES {
            return Err(refused(RefusalCode::UnknownTool, Step::Resolve, format!("no tool named `{}`", super::capped(tool))));
        }
        let Some(&index) = self.index.get(tool) else {
            if self.unmanifested.iter().any(|n| n == tool) {
                return Err(refused(RefusalCode::NoManifest, Step::Resolve, format!("`{tool}` has no manifest and cannot run")));
            }
            let hint = self.nearest_callable(tool, ctx);
            return Err(refused(RefusalCode::UnknownTool, Step::Resolve, format!("no tool named `{tool}`{hint}")));
        };
        let Some(rt) = self.tools.get(index) else {
            return Err(refused(RefusalCode::NoManifest, Step::Resolve, format!("`{tool}` has no manifest")));
        };
        if !rt.enabled {
            return Err(refused(RefusalCode::ToolDisabled, Step::Resolve, format!("`{tool}` is disabled")));
        }
        if !rt.tenants.is_empty() && !ctx.tenant.as_ref().is_some_and(|t| rt.tenants.iter().any(|x| x == t)) {
            let which = ctx.tenant.as_deref().map_or_else(|| "calls without a tenant".to_string(), |t| format!("tenant `{t}`"));
            return Err(refused(RefusalCode::TenantNotEnabled, Step::Resolve, format!("`{tool}` is not enabled for {which}")));
        }
        call.trace.pass(Step::Resolve, || {
            let tenants = if rt.tenants.is_empty() { "all tenants".to_string() } else { format!("tenants `{}`", rt.tenants.join("`, `")) };
            vec![format!("`{tool}` has a manifest, is enabled, and is enabled for {tenants}")]
        });
        Ok(index)
    }

    /// Step 2: the arguments against the schema and the payload constraints.
    fn validate(&self, rt: &ToolRuntime, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let args = call.args;
        if !call.digest.portable {
            return Err(refused(RefusalCode::InvalidArgs, Step::Validate, "arguments have no portable JSON form"));
        }
        if !args.is_object() {
            return Err(refused(RefusalCode::InvalidArgs, Step::Validate, "arguments must be an object"));
        }
        if let Some(v) = rt.validator.check(args).or_else(|| rt.input_constraints.check(args)) {
            let mut r = Refusal::new(RefusalCode::InvalidArgs, Step::Validate, v.message());
            r.reasons.push(format!("{} {}", v.at(), v.keyword));
            return Err(Stop::Refused(r));
        }
        call.trace.pass(Step::Validate, || {
            vec![format!("arguments match the input schema and {} payload constraint(s)", rt.input_constraints.items.len())]
        });
        Ok(())
    }

    /// Step 3: the definition digest matches its pin; an MCP tool is also
    /// checked against what its server serves now.
    fn pin(&self, rt: &ToolRuntime, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let tool = call.tool;
        if rt.pin_mismatch {
            return Err(refused(
                RefusalCode::DigestMismatch,
                Step::Pin,
                format!("`{tool}` changed since it was pinned; it is blocked until the change is reviewed and re-pinned"),
            ));
        }
        if matches!(rt.transport, Transport::Mcp { .. }) {
            if let Some(why) = self.transports.live_pin_mismatch(tool) {
                let mut r = Refusal::new(
                    RefusalCode::DigestMismatch,
                    Step::Pin,
                    format!(
                        "`{tool}` as its MCP server serves it differs from its manifest; it is blocked until the change is reviewed and re-pinned"
                    ),
                );
                r.reasons.push(why);
                return Err(Stop::Refused(r));
            }
        }
        call.trace.pass(Step::Pin, || {
            if rt.pinned {
                vec![format!("definition digest `{}` matches its pin", rt.digest)]
            } else {
                vec![format!("definition digest `{}` is not pinned (doctor warns)", rt.digest)]
            }
        });
        Ok(())
    }

    /// The run's labels, read now (at step 4) only when they decide: through
    /// a condition or the trifecta (egress). Otherwise they are read later
    /// with the rate limit, in the same round trip where the store allows it.
    fn decisive_labels(&self, rt: &ToolRuntime, plan: &ToolPlan, call: &mut Deciding<'_>) -> Result<Labels, Stop> {
        if !(plan.uses_conditions || !rt.egress.is_empty() || call.trace.dry) {
            return Ok(Labels::default());
        }
        match self.store.labels(call.run_id) {
            Ok(labels) => {
                call.trace.labels = Some(labels);
                Ok(labels)
            }
            Err(e) => Err(Stop::Refused(store_down(Step::Policy, &e))),
        }
    }

    /// Step 4: scopes, then each policy layer's rules (deny is authoritative;
    /// shadow rules only record) and its default.
    fn policy(&self, rt: &ToolRuntime, plan: &ToolPlan, vars: &CallVars<'_>, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let (tool, ctx) = (call.tool, call.ctx);
        let missing: Vec<&str> = rt.scopes.iter().filter(|s| !ctx.principal.scopes.contains(s)).map(String::as_str).collect();
        if !missing.is_empty() {
            let mut r = Refusal::new(RefusalCode::ScopeMissing, Step::Policy, format!("`{tool}` needs scope `{}`", missing.join("`, `")));
            r.reasons = missing.iter().map(|s| format!("scope {s}")).collect();
            return Err(Stop::Refused(r));
        }
        self.secret_scope(rt, call)?;
        // Explain's notes on the policy step; a real call makes none.
        let dry = call.trace.dry;
        let mut notes = Vec::new();
        if dry && !rt.scopes.is_empty() {
            notes.push(format!("principal holds scope `{}`", rt.scopes.join("`, `")));
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
                    Some(program) => condition(program, vars),
                };
                let label = || match &matched {
                    Ok(_) => named(&rule.name),
                    Err(why) => format!("{} (unevaluable: {why})", named(&rule.name)),
                };
                match (rule.effect, &matched) {
                    // Fail closed: a deny whose condition cannot be evaluated denies.
                    (Effect::Deny, Ok(true) | Err(_)) => {
                        if rule.shadow {
                            call.trace.would_refuse(RefusalCode::PolicyDenied, Step::Policy, &layer.name, Some(&rule.name));
                            if dry {
                                notes.push(format!("{} (deny, shadow) would refuse", label()));
                            }
                        } else {
                            call.trace.decided_by(&layer.name, Some(&rule.name));
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
                                notes.push(format!("{} (allow, shadow) matches", label()));
                            }
                        } else {
                            allowed = true;
                            call.trace.decided_by(&layer.name, Some(&rule.name));
                            if dry {
                                notes.push(format!("{} allows", label()));
                            }
                        }
                    }
                    (Effect::Approve, Ok(true) | Err(_)) => {
                        if rule.shadow {
                            call.trace.would_refuse(RefusalCode::ApprovalRequired, Step::Approval, &layer.name, Some(&rule.name));
                            if dry {
                                notes.push(format!("{} (approve, shadow) would ask for approval", label()));
                            }
                        } else {
                            call.approval_reasons.push(label());
                            call.asked_by.push(format!("rule:{}/{}", layer.name, rule.name));
                            call.trace.decided_by(&layer.name, Some(&rule.name));
                        }
                    }
                    (_, Ok(false)) | (Effect::Allow, Err(_)) => {
                        if dry {
                            notes.push(format!("{} does not match", label()));
                        }
                    }
                }
            }
            if !allowed && !layer.default_allow {
                if layer.shadow {
                    call.trace.would_refuse(RefusalCode::PolicyDenied, Step::Policy, &layer.name, None);
                    if dry {
                        notes.push(format!("layer `{}` (shadow): no rule allows `{tool}`, would refuse", layer.name));
                    }
                } else {
                    call.trace.decided_by(&layer.name, None);
                    let mut r = Refusal::new(RefusalCode::PolicyDenied, Step::Policy, format!("no policy rule allows `{tool}`"));
                    r.reasons.push(format!("layer `{}`: default deny", layer.name));
                    return Err(Stop::Refused(r));
                }
            }
        }
        call.trace.pass(Step::Policy, || notes);
        Ok(())
    }

    /// Step 5: the run budgets, then the rate limits (explain counts nothing).
    fn limits(&self, rt: &ToolRuntime, plan: &ToolPlan, call: &mut Deciding<'_>) -> Result<(), Stop> {
        self.run_in_time(call)?;
        let tool = call.tool;
        let max_tool = self.settings.per_tool.get(tool).copied();
        if call.trace.dry {
            call.trace.pass(Step::Limits, || {
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
            return Ok(());
        }
        if self.settings.max_tool_calls.is_some() || max_tool.is_some() {
            match self.store.take_budget(call.run_id, tool, self.settings.max_tool_calls, max_tool) {
                Ok(Budget::Taken) => call.budget_counted = true,
                Ok(Budget::RunExhausted { limit }) => {
                    return Err(refused(RefusalCode::BudgetExhausted, Step::Limits, format!("this run has used its {limit} tool calls")));
                }
                Ok(Budget::ToolExhausted { limit }) => {
                    return Err(refused(RefusalCode::BudgetExhausted, Step::Limits, format!("this run has used its {limit} calls of `{tool}`")));
                }
                Err(e) => return Err(Stop::Refused(store_down(Step::Limits, &e))),
            }
        }
        self.rate_limits(rt, plan, call).map_err(|stop| self.release(call, stop))
    }

    /// Step 5's rate limits, per principal and per tenant, in one store round
    /// trip that also brings the run's labels when they were not read yet.
    fn rate_limits(&self, rt: &ToolRuntime, plan: &ToolPlan, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let ctx = call.ctx;
        let tenant = ctx.tenant.as_deref().and_then(|tenant| rt.per_tenant.map(|rate| (rate, tenant)));
        if rt.per_principal.is_none() && tenant.is_none() {
            return Ok(());
        }
        // At most two keys, in order (per principal, per tenant), written into
        // buffers this thread reuses call after call: this runs on every call,
        // and a key is a fresh string only the first time.
        let [mut principal_key, mut tenant_key] = KEY_BUFFERS.take().map(|key| RateKey { key, rate: NO_RATE });
        if let Some(rate) = rt.per_principal {
            fill(&mut principal_key, rate, &plan.principal_key, &ctx.principal.id);
        }
        if let Some((rate, tenant)) = tenant {
            fill(&mut tenant_key, rate, &plan.tenant_key, tenant);
        }
        let keys = [principal_key, tenant_key];
        let has_principal = rt.per_principal.is_some();
        let in_use = match (has_principal, tenant.is_some()) {
            (true, true) => keys.get(..),
            (true, false) => keys.get(..1),
            _ => keys.get(1..),
        };
        let acquired = self.store.acquire_with_labels(in_use.unwrap_or_default(), call.now_ms, call.run_id);
        // A buffer grown past a usual key (a very long principal id) is not kept.
        KEY_BUFFERS.set(keys.map(|k| if k.key.capacity() > MAX_KEPT_KEY_BYTES { String::new() } else { k.key }));
        let acquired = acquired.map(|(acquire, labels)| {
            call.trace.labels = call.trace.labels.or(labels);
            acquire
        });
        match acquired {
            Ok(Acquire::Allowed) => Ok(()),
            Ok(Acquire::Limited { index, retry_after_ms }) => {
                let per = if has_principal && index == 0 { "principal" } else { "tenant" };
                let mut r = Refusal::new(RefusalCode::RateLimited, Step::Limits, format!("`{}` is rate limited per {per}", call.tool));
                r.retry_after_ms = Some(retry_after_ms);
                r.reasons.push(format!("rate_limit.per_{per}"));
                Err(Stop::Refused(r))
            }
            // The harness chose availability over the limit.
            Err(_) if self.settings.rate_limits_fail_open => Ok(()),
            Err(e) => Err(Stop::Refused(store_down(Step::Limits, &e))),
        }
    }

    /// Step 6: a sink argument whose value came only from untrusted content
    /// (`flow.tainted_arguments`), then the lethal trifecta (private +
    /// untrusted + egress): refused, sent to approval under `flow.trifecta:
    /// approve`, or under `provenance` allowed when every sink argument is
    /// traceable to trusted input (issue 23, `flow.rs`).
    fn flow(&self, rt: &ToolRuntime, labels: Labels, call: &mut Deciding<'_>) -> Result<(), Stop> {
        call.trace.pass(Step::Flow, || {
            let egress = if rt.egress.is_empty() { "no egress".to_string() } else { format!("egress to `{}`", rt.egress.join("`, `")) };
            vec![format!("run labels: private={}, untrusted={}; the tool has {egress}", labels.private, labels.untrusted)]
        });
        self.intent(rt, call)?;
        let sinks = self.sink_origins(rt, call);
        self.tainted_arguments(&sinks, call)?;
        if rt.egress.is_empty() || !labels.private || !labels.untrusted {
            return Ok(());
        }
        match self.settings.trifecta {
            TrifectaMode::Provenance => self.trifecta_provenance(&sinks, call),
            TrifectaMode::Block => {
                let mut r = Refusal::new(
                    RefusalCode::Trifecta,
                    Step::Flow,
                    format!("`{}` sends data out, and this run has read private data and seen untrusted content", call.tool),
                );
                r.reasons.push("private + untrusted + egress".into());
                Err(Stop::Refused(r))
            }
            TrifectaMode::Approve => {
                call.approval_reasons.push("trifecta: private and untrusted run sending data out".into());
                call.asked_by.push("trifecta".into());
                Ok(())
            }
            TrifectaMode::Off => Ok(()),
        }
    }

    /// Step 7: whether a human must approve (`approval.when`, the risk, an
    /// `approve` rule, the trifecta); if so, an approval that covers this
    /// exact call lets it run, otherwise it waits for one.
    fn approval(&self, rt: &ToolRuntime, vars: &CallVars<'_>, call: &mut Deciding<'_>) -> Result<(), Stop> {
        if let Some(program) = &rt.approval_when {
            let reason = match condition(program, vars) {
                Ok(true) => Some(format!("approval.when `{}` is true", program.source())),
                Ok(false) => None,
                Err(why) => Some(format!("approval.when `{}` could not be evaluated: {why}", program.source())),
            };
            if let Some(reason) = reason {
                call.approval_reasons.push(reason);
                call.asked_by.push("approval.when".into());
            }
        }
        if self.settings.approval_by_risk.contains(&rt.risk) {
            call.approval_reasons.push(format!("risk `{}` requires approval", rt.risk));
            call.asked_by.push("risk".into());
        }
        if call.approval_reasons.is_empty() {
            call.trace.pass(Step::Approval, || vec!["no approval needed".into()]);
            return Ok(());
        }
        // Approvals are bound to the digest: computed here when the audit
        // sink did not already need it.
        let Some(args_digest) = call.digest.get() else {
            return Err(refused(RefusalCode::InvalidArgs, Step::Validate, "arguments have no portable JSON form"));
        };
        if let Some(id) = &call.ctx.approval_id {
            match self.consume_approval(id, call.tool, args_digest, &call.asked_by, call.ctx, call.now_ms, call.trace.dry) {
                Consume::Granted => {
                    call.approval_used = Some(id.clone());
                    call.trace.pass(Step::Approval, || vec![format!("approval `{id}` covers this exact call")]);
                    return Ok(());
                }
                Consume::Refuse(refusal) => return Err(Stop::Refused(refusal)),
                Consume::Ask(reason) => call.approval_reasons.push(reason),
            }
        }
        let approver_role = rt.approver_role.clone().or_else(|| self.settings.default_approver_role.clone());
        let request = ApprovalRequest {
            id: String::new(),
            tool: call.tool.to_string(),
            args_digest: args_digest.to_string(),
            approver_role,
            reasons: std::mem::take(&mut call.approval_reasons),
            expires_ms: call.now_ms.saturating_add(self.settings.approval_ttl_ms),
            candidates: std::mem::take(&mut call.candidates),
        };
        if call.trace.dry {
            return Err(Stop::Pending(Box::new(request)));
        }
        self.ask_approval(request, call)
    }

    /// Records a pending approval and lets the host's approval callback, if
    /// any, decide it inline. The call waits (and will be counted when it
    /// runs) unless the callback approves.
    fn ask_approval(&self, mut request: ApprovalRequest, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let ctx = call.ctx;
        request.id = self.ids.next("apr");
        let pending = PendingApproval {
            id: request.id.clone(),
            tool: request.tool.clone(),
            args: call.args.clone(),
            args_digest: request.args_digest.clone(),
            principal: ctx.principal.to_value(),
            tenant: ctx.tenant.clone(),
            task: ctx.task.clone(),
            run_id: call.run_id.to_string(),
            approver_role: request.approver_role.clone(),
            reasons: request.reasons.clone(),
            created_ms: call.now_ms,
            expires_ms: request.expires_ms,
            state: ApprovalState::Pending,
            decided_by: None,
            note: None,
            policy_version: self.policy_version.clone(),
            original_args_digest: None,
            asked_by: std::mem::take(&mut call.asked_by),
        };
        // Expired approvals go; a principal's open ones are bounded, so
        // undecided calls cannot fill the store. The count and the put are
        // one step of the store: racing asks cannot pass the limit together.
        let limit = self.settings.max_open_approvals_per_principal;
        match self.store.put_approval_bounded(&pending, limit, call.now_ms) {
            Ok(Bounded::Put { .. }) => {}
            Ok(Bounded::Full { open }) => {
                let mut r = Refusal::new(
                    RefusalCode::ApprovalLimit,
                    Step::Approval,
                    format!("this principal already has {open} approvals waiting (the limit is {limit}); decide or let some expire before asking for more"),
                );
                r.reasons = std::mem::take(&mut request.reasons);
                return Err(Stop::Refused(r));
            }
            Err(e) => return Err(Stop::Refused(store_down(Step::Approval, &e))),
        }
        let Some(callback) = &self.approval_callback else {
            return Err(Stop::Pending(Box::new(request)));
        };
        let decision = match callback(&request, &pending) {
            InlineDecision::Accept(candidate) => self.accept_inline(&request, &pending, &candidate),
            other => other,
        };
        match decision {
            InlineDecision::Approve | InlineDecision::Accept(_) => {
                let ok = self.store.transition(&pending.id, ApprovalState::Pending, ApprovalState::Used, Some("callback"), None);
                if matches!(ok, Ok(true)) {
                    call.approval_used = Some(pending.id);
                    return Ok(());
                }
                Err(Stop::Pending(Box::new(request)))
            }
            InlineDecision::Deny => {
                let _ = self.store.transition(&pending.id, ApprovalState::Pending, ApprovalState::Denied, Some("callback"), None);
                let mut r = Refusal::new(RefusalCode::ApprovalDenied, Step::Approval, format!("a reviewer denied this call of `{}`", call.tool));
                r.reasons = request.reasons;
                Err(Stop::Refused(r))
            }
            InlineDecision::Undecided => Err(Stop::Pending(Box::new(request))),
        }
    }

    /// Consumes an approval for this exact call (in a dry run, only checks it).
    #[expect(clippy::too_many_arguments, reason = "the call's parts, borrowed; a struct for one private call site adds nothing")]
    fn consume_approval(&self, id: &str, tool: &str, args_digest: &str, asked_by: &[String], ctx: &CallContext, now_ms: u64, dry: bool) -> Consume {
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
                r.reasons.extend(approval.note.map(|n| format!("note: `{n}`")));
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
            // An approval covers the reasons it was asked for: a call that now
            // needs a human for more (the trifecta, another rule) asks again.
            ApprovalState::Approved if asked_by.iter().any(|k| !approval.asked_by.contains(k)) => {
                let grown: Vec<&str> = asked_by.iter().filter(|k| !approval.asked_by.contains(k)).map(String::as_str).collect();
                Consume::Ask(format!("approval `{id}` was granted before `{}` asked for approval", grown.join("`, `")))
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
}
