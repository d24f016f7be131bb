//! The governed built-in tools' part of the steps (issue 20): preparation
//! after step 2's schema check, the gate after step 4's policy rules, the
//! candidates an approval offers, invocation through the prepared grant,
//! and accepting a candidate into the permission file.

use std::sync::Arc;

use super::steps::Deciding;
use super::{Governor, InlineDecision, Refusal, Stop, ToolRuntime};
use crate::builtins::{Candidate, Verdict};
use crate::call::{ApprovalRequest, InvokeOutcome, Principal, RefusalCode, Step, Ticket, Transport};
use crate::codes::ArgumentCode;
use crate::error::Error;
use crate::store::PendingApproval;

impl Governor {
    /// Step 2, continued: a built-in call is prepared into requirements, or
    /// refused before any gate or prompt.
    pub(super) fn prepare_builtin(&self, rt: &ToolRuntime, call: &mut Deciding<'_>) -> Result<(), Stop> {
        if rt.transport != Transport::Builtin {
            return Ok(());
        }
        let Some(builtins) = &self.builtins else {
            return Err(Stop::Refused(Refusal::new(RefusalCode::InvalidArgs, Step::Validate, "the built-in tools are not configured")));
        };
        match builtins.prepare(call.tool, call.args) {
            Ok(prepared) => {
                call.trace.pass(Step::Validate, || {
                    prepared.requirements.iter().map(|r| format!("requires {}: {}", r.kind.as_str(), r.description)).collect()
                });
                call.prepared = Some(Arc::new(prepared));
                Ok(())
            }
            Err((code, message)) => Err(Stop::Refused(Refusal::new(code, Step::Validate, message))),
        }
    }

    /// Step 4, continued: the gate. A deny refuses (`access_denied`); a
    /// gated requirement asks for approval at step 7 with its candidates.
    pub(super) fn gate_builtin(&self, call: &mut Deciding<'_>) -> Result<(), Stop> {
        let (Some(builtins), Some(prepared)) = (&self.builtins, &call.prepared) else { return Ok(()) };
        match builtins.gate(prepared) {
            Verdict::Allow => {
                call.trace.pass(Step::Policy, || vec!["the built-in tools' gate allows every requirement".into()]);
                Ok(())
            }
            Verdict::Deny(why) => {
                let mut r = Refusal::new(RefusalCode::AccessDenied, Step::Policy, format!("access rules do not allow this call of `{}`", call.tool));
                r.reasons.push(why);
                Err(Stop::Refused(r))
            }
            Verdict::Gated { reasons, candidates } => {
                call.approval_reasons.extend(reasons);
                call.asked_by.push("access".into());
                call.candidates = candidates;
                Ok(())
            }
        }
    }

    /// Step 8 for a built-in tool: its prepared grant, re-checked and run.
    pub(super) fn invoke_builtin(&self, ticket: &Ticket) -> InvokeOutcome {
        match (&self.builtins, &ticket.prepared) {
            (Some(builtins), Some(prepared)) => builtins.invoke(prepared, ticket, &*self.transports),
            _ => InvokeOutcome::Failed { kind: "the built-in call was not prepared".into() },
        }
    }

    /// An inline approval callback accepted candidate `candidate` of the
    /// approval it was shown: when the request offers it, its rule is written
    /// to the permission file (accepted by `callback`) and the call is
    /// approved; otherwise (or when the file cannot be written) the call
    /// stays pending, and the reason is logged once.
    pub(super) fn accept_inline(&self, request: &ApprovalRequest, pending: &PendingApproval, candidate: &str) -> InlineDecision {
        let Some(chosen) = request.candidates.iter().find(|c| c.id == candidate) else {
            eprintln!(
                "harnessweaver: the approval callback accepted `{candidate}`, which approval `{}` does not offer; it stays pending",
                pending.id
            );
            return InlineDecision::Undecided;
        };
        match self.builtins.as_ref().map(|b| b.accept(chosen, "callback", &pending.id)) {
            Some(Ok(())) => InlineDecision::Approve,
            Some(Err(e)) => {
                eprintln!("harnessweaver: candidate `{candidate}` of approval `{}` could not be accepted ({e}); it stays pending", pending.id);
                InlineDecision::Undecided
            }
            None => InlineDecision::Undecided,
        }
    }

    /// The candidates `approval` offers (a built-in tool's gated call; none
    /// for other tools), for an approver's view (issue 24: the console).
    pub fn candidates_of(&self, approval: &PendingApproval) -> Vec<Candidate> {
        self.builtins.as_ref().map(|b| b.candidates(&approval.tool, &approval.args)).unwrap_or_default()
    }

    /// Accepts candidate `candidate` of pending approval `id` as `approver`:
    /// the approval is granted (the approver must be allowed to grant it) and
    /// the candidate is written to the permission file, in force at once.
    pub fn accept_candidate(&self, id: &str, candidate: &str, approver: &Principal) -> Result<(PendingApproval, Candidate), Error> {
        let bad = |message: String| Error::InvalidArgument { code: ArgumentCode::InvalidArgument.as_str(), message };
        let builtins = self.builtins.as_ref().ok_or_else(|| bad("this harness has no built-in tools".into()))?;
        let pending = self
            .store
            .approval(id)
            .ok()
            .flatten()
            .ok_or_else(|| Error::InvalidArgument { code: ArgumentCode::UnknownApproval.as_str(), message: format!("no approval `{id}`") })?;
        let chosen = builtins
            .candidates(&pending.tool, &pending.args)
            .into_iter()
            .find(|c| c.id == candidate)
            .ok_or_else(|| bad(format!("approval `{id}` offers no candidate `{candidate}`")))?;
        let granted = self.approve(id, approver)?;
        builtins.accept(&chosen, &approver.id, id)?;
        Ok((granted, chosen))
    }
}

/// The audit event's `subject` of a built-in call: what it touched, as its
/// approver saw it (a path, an argv, a method and host), never content.
pub(super) fn subject(prepared: Option<&crate::builtins::Prepared>) -> Option<String> {
    prepared.map(crate::builtins::Builtins::audit_subject)
}
