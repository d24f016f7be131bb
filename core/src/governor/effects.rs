//! The governor's side of the effect journal (issue 21): the intent of an
//! external write recorded after step 7 and before step 8, the retry mode
//! applied to a retry of an `unknown` write, the reconcile tool asked before
//! a retry, the outcome recorded at finish, and compensation. The state
//! machine and the retry rules are [`crate::effects`]'.

use serde_json::{json, Value};

use super::{store_down, Begin, Governor, Refusal, Ticket};
use crate::call::{CallContext, Decision, InvokeOutcome, RefusalCode, Step, Transport};
use crate::codes::ArgumentCode;
use crate::effects::{self, Claim, EffectEntry, EffectState, RetryRule};
use crate::error::Error;
use crate::manifest::RetryMode;

/// A tool's effect contract as the governor reads it (external writes only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEffect {
    /// `retry_mode`.
    pub retry_mode: RetryMode,
    /// `compensation`: the inverse tool.
    pub compensation: Option<String>,
    /// `reconcile`: the tool asked whether an unknown write happened.
    pub reconcile: Option<String>,
    /// `reconcile_operation`: the tool's own process handler is asked instead.
    pub reconcile_operation: Option<String>,
}

/// The idempotency key of an external write called without one: derived
/// from the tool, the canonical args, the principal and the tenant, so a
/// repeat of the same call (after a crash, in a new run, from any language,
/// or approved again) is recognised as a retry. Not the run: a host that
/// restarts after a crash starts new runs, and an approved call resumes in
/// the run of its approval. A caller who means a second, distinct write
/// passes its own key. `None` when the args have no canonical form.
pub(super) fn derived_key(tool: &str, args: &Value, ctx: &CallContext) -> Option<String> {
    let identity = json!({"tool": tool, "args": args, "principal": ctx.principal.id, "tenant": ctx.tenant});
    let text = crate::canonical::to_string(&identity).ok()?;
    let digest = crate::digest::sha256_tagged(text.as_bytes());
    let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
    Some(format!("eff-{}", hex.get(..32).unwrap_or(hex)))
}

fn unknown_refusal(tool: &str, blocked: &EffectEntry, why: &str) -> Refusal {
    Refusal::new(
        RefusalCode::EffectUnknown,
        Step::Invoke,
        format!(
            "`{tool}` was not called: an earlier attempt with the same idempotency key (call `{}`) has no recorded outcome{why}; \
             reconcile it, or resolve it with `harnessweaver effects resolve {}`",
            blocked.call_id, blocked.call_id
        ),
    )
}

impl Governor {
    /// Records the intent of an external write before it runs, applying the
    /// retry mode against an earlier `unknown` attempt of the same key.
    pub(super) fn effect_intent(
        &self,
        effect: &ToolEffect,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
        call_id: &str,
        key: &str,
    ) -> Result<(), Refusal> {
        let now = self.clock.now_ms();
        let args_digest = crate::canonical::to_string(args).map(|t| crate::digest::sha256_tagged(t.as_bytes())).unwrap_or_default();
        let intent = EffectEntry {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            args_digest,
            idempotency_key: key.to_string(),
            retry_mode: effect.retry_mode.as_str().to_string(),
            state: EffectState::Unknown,
            principal: ctx.principal.id.clone(),
            created_ms: now,
            updated_ms: now,
            resolution: None,
            resolved_by: None,
            compensates: ctx.compensates.clone(),
            compensated_by: None,
        };
        let exclusive = effects::claim_is_exclusive(effect.retry_mode);
        let blocked = match self.journal.claim(&intent, exclusive) {
            Ok(Claim::Recorded) => return Ok(()),
            Ok(Claim::Blocked(b)) => b,
            Err(e) => return Err(store_down(Step::Invoke, &e)),
        };
        if effects::retry_rule(effect.retry_mode) != RetryRule::Reconcile {
            return Err(unknown_refusal(tool, &blocked, ""));
        }
        let Some(applied) = self.reconcile(effect, &blocked, args, ctx) else {
            return Err(unknown_refusal(tool, &blocked, " and its reconcile tool could not say what happened"));
        };
        let mut known = *blocked;
        known.state = if applied { EffectState::Succeeded } else { EffectState::Failed };
        known.resolution = Some("reconciled".into());
        known.updated_ms = now;
        self.journal.put(&known).map_err(|e| store_down(Step::Invoke, &e))?;
        if applied {
            return Err(Refusal::new(
                RefusalCode::EffectApplied,
                Step::Invoke,
                format!("`{tool}` was not called again: its reconcile tool says the write of call `{}` happened", known.call_id),
            ));
        }
        match self.journal.claim(&intent, true) {
            Ok(Claim::Recorded) => Ok(()),
            Ok(Claim::Blocked(b)) => Err(unknown_refusal(tool, &b, "")),
            Err(e) => Err(store_down(Step::Invoke, &e)),
        }
    }

    /// Asks the reconcile tool (through the nine steps, as the caller)
    /// whether `blocked` happened: `{"applied": bool}`. `None` when it
    /// cannot answer (refused, failed, native, or no boolean).
    fn reconcile(&self, effect: &ToolEffect, blocked: &EffectEntry, args: &Value, ctx: &CallContext) -> Option<bool> {
        let question = json!({"call_id": blocked.call_id, "idempotency_key": blocked.idempotency_key, "tool": blocked.tool, "args": args});
        if let Some(operation) = &effect.reconcile_operation {
            return self.reconcile_operation(&blocked.tool, operation, question, ctx);
        }
        let tool = effect.reconcile.as_deref()?;
        let ask = CallContext { idempotency_key: None, compensates: None, approval_id: None, ..ctx.clone() };
        let ticket = match self.begin(tool, question, &ask) {
            Begin::Invoke(t) => t,
            Begin::Done(_) => return None,
        };
        if matches!(ticket.transport, Transport::Native { .. }) {
            // Checked at load; a native reconcile tool's handler lives with the host.
            let _ = self.finish(ticket, InvokeOutcome::Failed { kind: "a reconcile tool must be reached by the core".into() });
            return None;
        }
        let outcome = self.invoke(&ticket);
        let result = self.finish(ticket, outcome);
        if result.decision != Decision::Allowed {
            return None;
        }
        result.output.as_ref().and_then(|o| o.get("applied")).and_then(Value::as_bool)
    }

    /// Records the outcome of an external write (a timeout leaves it
    /// `unknown`), and links a succeeded compensation to the call it compensates.
    pub(super) fn effect_outcome(&self, ticket: &Ticket, outcome: &InvokeOutcome) {
        if !ticket.effect && ticket.compensates.is_none() {
            return;
        }
        let Some(state) = effects::state_after(outcome) else { return };
        let now = self.clock.now_ms();
        let mut recorded = Ok(());
        if ticket.effect {
            recorded = self.journal.get(&ticket.call_id).and_then(|entry| match entry {
                Some(mut entry) => {
                    entry.state = state;
                    entry.resolution = Some("outcome".into());
                    entry.updated_ms = now;
                    self.journal.put(&entry)
                }
                None => Ok(()),
            });
        }
        if let (EffectState::Succeeded, Some(original), Ok(())) = (state, &ticket.compensates, &recorded) {
            recorded = self.journal.get(original).and_then(|entry| match entry {
                Some(mut o) => {
                    o.compensated_by = Some(ticket.call_id.clone());
                    o.updated_ms = now;
                    self.journal.put(&o)
                }
                None => Ok(()),
            });
        }
        if let Err(e) = recorded {
            // The entry stays `unknown`, the safe side: a retry is refused or reconciled.
            eprintln!("harnessweaver: the effect journal could not record the outcome of `{}`: {e}", ticket.call_id);
        }
    }

    /// The journal's entries, oldest first.
    pub fn effects(&self) -> Result<Vec<EffectEntry>, Error> {
        self.journal.list().map_err(|e| Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message })
    }

    /// Resolves an `unknown` entry by hand.
    pub fn resolve_effect(&self, call_id: &str, applied: bool, by: &str) -> Result<EffectEntry, Error> {
        effects::resolve(&*self.journal, call_id, applied, by, self.clock.now_ms())
    }

    /// The call that compensates `call_id`: its inverse tool, arguments
    /// (`{call_id, idempotency_key, tool}` of the original) and context. The
    /// call itself goes through all nine steps with the caller's authority.
    pub fn compensation(&self, call_id: &str, ctx: &CallContext) -> Result<(String, Value, CallContext), Error> {
        let invalid = |code: ArgumentCode, message: String| Error::InvalidArgument { code: code.as_str(), message };
        let entry = self
            .journal
            .get(call_id)
            .map_err(|e| invalid(ArgumentCode::StoreUnavailable, e.message))?
            .ok_or_else(|| invalid(ArgumentCode::UnknownEffect, format!("the effect journal holds no call `{call_id}`")))?;
        let inverse = self.tool(&entry.tool).and_then(|t| t.effect.as_ref()).and_then(|e| e.compensation.clone());
        let Some(inverse) = inverse else {
            return Err(invalid(ArgumentCode::EffectNotResolvable, format!("`{}` declares no `effect.compensation`", entry.tool)));
        };
        if entry.state != EffectState::Succeeded || entry.compensated_by.is_some() {
            let why = if entry.compensated_by.is_some() { "compensated already".to_string() } else { format!("`{}`", entry.state.as_str()) };
            return Err(invalid(ArgumentCode::EffectNotResolvable, format!("call `{call_id}` is {why}; only a succeeded write is compensated")));
        }
        let args = json!({"call_id": entry.call_id, "idempotency_key": entry.idempotency_key, "tool": entry.tool});
        let ctx = CallContext {
            compensates: Some(entry.call_id.clone()),
            idempotency_key: Some(format!("comp-{}", entry.idempotency_key)),
            approval_id: None,
            ..ctx.clone()
        };
        Ok((inverse, args, ctx))
    }
}
