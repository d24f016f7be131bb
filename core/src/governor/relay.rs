//! Relays (issue 22): what a running tool may ask of the caller's client.
//! An upstream MCP tool that asks the client's model for a completion
//! (`sampling/createMessage`) or the client's user for input
//! (`elicitation/create`) sends the run's data to that upstream: the
//! completion, or what the user types, goes back to it. So a relay is
//! egress, decided by step 6's rules: refused in a run that is private and
//! untrusted (the lethal trifecta) unless `flow.trifecta: off`, where the
//! asking tool counts too (its `pii:*` data access makes the run private
//! while it runs; the request is its output, untrusted unless its manifest
//! labels its output `trusted`). A sampling request that asks for the context
//! of every server (`includeContext: allServers`) is refused always: it
//! would hand one upstream what the others' tools returned. A refused relay
//! is audited (code `relay_denied`, step `flow`) and the upstream gets an error.
//! A `roots/list` request (the client's roots handed to the upstream) is
//! decided by the same rule: what the client exposes leaves for a server
//! whose run is private and untrusted.

use serde_json::{json, Value};

use super::{Governor, TrifectaMode};
use crate::audit::{AuditEvent, Timings};
use crate::call::{Decision, RefusalCode, Step, Ticket};

/// What a running tool asks the caller's client for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayKind {
    /// `sampling/createMessage`: a completion from the client's model.
    Sampling,
    /// `elicitation/create`: input from the client's user.
    Elicitation,
    /// `roots/list`: the client's roots (what it exposes, its directories).
    Roots,
}

impl RelayKind {
    /// `sampling`, `elicitation` or `roots`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sampling => "sampling",
            Self::Elicitation => "elicitation",
            Self::Roots => "roots",
        }
    }

    /// The kind named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "sampling" => Some(Self::Sampling),
            "elicitation" => Some(Self::Elicitation),
            "roots" => Some(Self::Roots),
            _ => None,
        }
    }

    /// The MCP method relayed.
    pub const fn method(self) -> &'static str {
        match self {
            Self::Sampling => "sampling/createMessage",
            Self::Elicitation => "elicitation/create",
            Self::Roots => "roots/list",
        }
    }
}

/// A refused relay: its code (`relay_denied`), a model-safe message and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayDenial {
    /// Always [`RefusalCode::RelayDenied`].
    pub code: RefusalCode,
    /// Safe to show the upstream and a model.
    pub message: String,
    /// Why, one line each.
    pub reasons: Vec<String>,
}

impl RelayDenial {
    fn new(tool: &str, kind: RelayKind, reason: String) -> Self {
        Self {
            code: RefusalCode::RelayDenied,
            message: format!("`{tool}` may not send `{}` to the caller's client: the flow rules refuse it", kind.method()),
            reasons: vec![reason],
        }
    }
}

/// A relay decision as JSON: `{"decision": "allowed"}` or `{"decision":
/// "denied", "code", "step", "message", "reasons"}`.
pub fn relay_decision_value(decision: &Result<(), RelayDenial>) -> Value {
    match decision {
        Ok(()) => json!({"decision": "allowed"}),
        Err(d) => json!({"decision": "denied", "code": d.code, "step": Step::Flow, "message": d.message, "reasons": d.reasons}),
    }
}

impl Governor {
    /// Whether `tool`, running in run `run_id`, may send a `kind` request to
    /// the caller's client. `include_context` is a sampling request's
    /// `includeContext` (`none`, `thisServer`, `allServers`).
    pub fn relay_decision(&self, tool: &str, run_id: &str, kind: RelayKind, include_context: Option<&str>) -> Result<(), RelayDenial> {
        let Some(rt) = self.tool(tool) else {
            return Err(RelayDenial::new(tool, kind, format!("no tool `{tool}`")));
        };
        if kind == RelayKind::Sampling && include_context == Some("allServers") {
            return Err(RelayDenial::new(tool, kind, "includeContext `allServers` would hand this server what other servers' tools returned".into()));
        }
        if self.settings.trifecta == TrifectaMode::Off {
            return Ok(());
        }
        let labels =
            self.store.labels(run_id).map_err(|e| RelayDenial::new(tool, kind, format!("the run's labels could not be read: {}", e.message)))?;
        let private = labels.private || rt.private;
        let untrusted = labels.untrusted || rt.output.untrusted;
        if private && untrusted {
            return Err(RelayDenial::new(
                tool,
                kind,
                format!("private + untrusted + egress: the run (with `{tool}` running) has read private data and its request is untrusted content"),
            ));
        }
        Ok(())
    }

    /// [`Governor::relay_decision`] for the call of `ticket`; a refusal is
    /// audited as an event of that call (`relay_denied`, step `flow`,
    /// subject `relay <method>`).
    pub fn relay(&self, ticket: &Ticket, kind: RelayKind, include_context: Option<&str>) -> Result<(), RelayDenial> {
        let decision = self.relay_decision(&ticket.tool, &ticket.run_id, kind, include_context);
        if decision.is_err() {
            self.record(self.relay_refusal(ticket, RefusalCode::RelayDenied, Step::Flow, kind.method()));
        }
        decision
    }

    /// The audit event of something relayed for the call of `ticket` that
    /// was refused (`code` at `step`; subject `relay <method>`).
    pub(super) fn relay_refusal(&self, ticket: &Ticket, code: RefusalCode, step: Step, method: &str) -> AuditEvent {
        AuditEvent {
            ts_ms: self.clock.now_ms(),
            call_id: ticket.call_id.clone(),
            run_id: ticket.run_id.clone(),
            tool: ticket.tool.clone(),
            principal: ticket.principal.clone(),
            tenant: ticket.tenant.clone(),
            decision: Decision::Refused,
            code: Some(code),
            step: Some(step),
            args_digest: ticket.args_digest.clone(),
            original_args_digest: None,
            approval_id: ticket.approval_id.clone(),
            redactions: None,
            truncated: None,
            would_refuse: Vec::new(),
            rules: Vec::new(),
            subject: Some(format!("relay {method}")),
            confined: None,
            sinks: Vec::new(),
            intent: None,
            timings: Timings::default(),
        }
    }
}
