//! Reconcile through an operation of the tool itself (issue 21): a process
//! tool with `effect: {retry_mode: reconcile, reconcile_operation: NAME}` is
//! asked, before a retry of an `unknown` write, by its own handler with
//! `"operation": NAME` in the request (the question as `args`), instead of
//! a separate reconcile tool. The retry already passed steps 1–7 as this
//! tool; the question is not a call of the tool's input schema, so it is
//! invoked directly, with the tool's transport, timeout and secrets, not
//! journaled, and audited as a call of the tool.

use serde_json::Value;

use super::Governor;
use crate::call::{CallContext, Decision, Ticket};

impl Governor {
    /// Asks `tool`'s own handler, with `operation`, whether the write in
    /// `question` happened: `{"applied": bool}`; `None` when it cannot say.
    pub(super) fn reconcile_operation(&self, tool: &str, operation: &str, question: Value, ctx: &CallContext) -> Option<bool> {
        let index = *self.index.get(tool)?;
        let rt = self.tools.get(index)?;
        let secrets = self.read_secrets(rt).ok()?;
        let call_id = self.ids.next("call");
        let ticket = Ticket {
            idempotency_key: format!("reconcile-{call_id}"),
            call_id,
            run_id: ctx.run_id.clone().unwrap_or_else(|| self.ids.next("run")),
            tool: rt.name.clone(),
            args: question,
            timeout_ms: rt.timeout_ms,
            run_deadline_ms: None,
            transport: rt.transport.clone(),
            tool_index: index,
            principal: ctx.principal.id.clone(),
            tenant: ctx.tenant.clone(),
            args_digest: None,
            approval_id: None,
            original_args_digest: None,
            would_refuse: Vec::new(),
            own_run: ctx.run_id.is_none(),
            labels: None,
            ts_ms: self.clock.now_ms(),
            started: None,
            decide_us: 0,
            prepared: None,
            effect: false,
            compensates: None,
            secrets,
            operation: Some(operation.to_string()),
            rules: Vec::new(),
            sinks: Vec::new(),
            // A reconciliation is the core's own question: nobody listens to its progress.
            progress: crate::progress::Progress::default(),
            intent: None,
            trust_single: Vec::new(),
            named: false,
        };
        let outcome = self.invoke(&ticket);
        let result = self.finish(ticket, outcome);
        if result.decision != Decision::Allowed {
            return None;
        }
        result.output.as_ref().and_then(|o| o.get("applied")).and_then(Value::as_bool)
    }
}
