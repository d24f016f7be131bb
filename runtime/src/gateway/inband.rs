//! In-band approvals (issue 22): a call of a tool whose manifest says
//! `approval.by: caller` that waits for approval is put to the caller's own
//! user, when the client can ask: through `elicitation/create` (protocol
//! 2025-11-25, a server request on the call's own stream) or an
//! `InputRequiredResult` (2026-07-28: the client retries the call with the
//! user's answer and the approval id as `requestState`). Accepted, the
//! approval is granted with the caller as its approver and the call resumes
//! through the approval store like one a reviewer granted; declined, it is
//! denied and the call refused `approval_denied`. Who may decide is the
//! core's rule ([`Governor::check_in_band`](harnessweaver_core::governor::Governor::check_in_band)):
//! `approval.by: role` tools, and approvals something besides
//! `approval.when` asked for, are never decided in band, whatever a client
//! answers. A client without elicitation gets the out-of-band answer.

use rmcp::model::RequestMetaObject;
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value};

use harnessweaver_core::canonical;
use harnessweaver_core::governor::RelayKind;

use super::relay::{ask_client, client_supports};
use super::{Gateway, GatewayResult, Identity};

/// The key of the approval question in an `InputRequiredResult`'s `inputRequests`.
pub const INPUT_KEY: &str = "harnessweaver_approval";

/// The longest argument text shown to the user.
const MAX_ARGS_TEXT: usize = 2000;

impl GatewayResult {
    /// The approval this result waits for, if it is pending.
    pub fn pending_approval(&self) -> Option<String> {
        if self.status() != "pending" {
            return None;
        }
        let id = self.result.get("approval").and_then(|a| a.get("id")).and_then(Value::as_str).map(str::to_string);
        id.or_else(|| self.waiting_on.clone())
    }
}

impl Gateway {
    /// Whether approval `id` may be put to `who` in band (the core's rule).
    pub fn in_band_approvable(&self, who: &Identity, id: &str) -> bool {
        self.runtime().governor().in_band_approvable(id, &who.principal, who.tenant.as_deref())
    }

    /// The caller's answer to approval `id`: granted (`accept`) or denied.
    /// The core checks again who may decide; its error is returned.
    pub fn decide_in_band(&self, who: &Identity, id: &str, accept: bool) -> Result<(), String> {
        let governor = self.runtime().governor();
        let decided = if accept {
            governor.approve_in_band(id, &who.principal, who.tenant.as_deref())
        } else {
            governor.decline_in_band(id, &who.principal, who.tenant.as_deref())
        };
        decided.map(drop).map_err(|e| e.to_string())
    }
}

/// The elicitation that asks the caller's user to confirm the call.
pub fn question(tool: &str, args: &Value, result: &GatewayResult, id: &str) -> Value {
    let mut args_text = canonical::to_string(args).unwrap_or_default();
    if args_text.len() > MAX_ARGS_TEXT {
        let mut end = MAX_ARGS_TEXT;
        while !args_text.is_char_boundary(end) {
            end -= 1;
        }
        args_text.truncate(end);
        args_text.push('…');
    }
    let reasons: Vec<&str> = result
        .result
        .get("approval")
        .and_then(|a| a.get("reasons"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut message = format!("Allow the tool `{tool}` to run with these arguments?\n{args_text}");
    if !reasons.is_empty() {
        message.push_str(&format!("\nWhy it asks: {}", reasons.join("; ")));
    }
    message.push_str(&format!("\n(approval {id}: accept to run it once, decline to refuse it)"));
    json!({"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {}}})
}

/// The user's decision in an elicitation result: `Some(true)` accept,
/// `Some(false)` decline, `None` cancel or anything else (left pending).
pub fn decision(result: &Value) -> Option<bool> {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => Some(true),
        Some("decline") => Some(false),
        _ => None,
    }
}

/// Whether the caller's client can be asked: it declared elicitation (at
/// initialize, or in the request's `_meta` under 2026-07-28).
pub fn can_ask(peer: &Peer<RoleServer>, meta: &RequestMetaObject) -> bool {
    client_supports(peer, RelayKind::Elicitation) || meta.client_capabilities().is_some_and(|c| c.elicitation.is_some())
}

/// 2025-11-25: asks the caller's user now, on `peer`: `Some(accept)` once
/// the user decided, `None` when the client cannot ask or the user cancelled.
pub async fn ask_now(peer: &Peer<RoleServer>, question: Value) -> Option<bool> {
    let answer = ask_client(peer, RelayKind::Elicitation, question).await.ok()?;
    decision(&answer)
}

/// 2026-07-28: the `InputRequiredResult` that asks the question; the client
/// retries the call with the answer under [`INPUT_KEY`] and `requestState`.
pub fn input_required(question: Value, id: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": question}},
        "requestState": id,
    })
}

/// What a governed `tools/call` answers.
#[derive(Debug)]
pub enum Answer {
    /// The call's result.
    Done(GatewayResult),
    /// 2026-07-28: the user must answer first (an `InputRequiredResult` as JSON).
    InputRequired(Value),
}

impl From<super::held::Pumped> for Answer {
    fn from(pumped: super::held::Pumped) -> Self {
        match pumped {
            super::held::Pumped::Done(result) => Self::Done(result),
            super::held::Pumped::Ask(ask) => Self::InputRequired(ask),
        }
    }
}

/// One `tools/call` from the caller: the user's in-band answer to an earlier
/// question first (2026-07-28 retries), then the call with its relays, then,
/// when it waits for an approval the caller may give, the question.
pub async fn governed_call(
    gateway: std::sync::Arc<Gateway>,
    call: super::calls::CallRequest,
    run_id: String,
    answered: Option<(String, Value)>,
    responses: std::collections::BTreeMap<String, Value>,
    context: &rmcp::service::RequestContext<RoleServer>,
    log_level: super::relay::LogLevel,
) -> Result<Answer, tokio::task::JoinError> {
    let peer = &context.peer;
    let side = super::relay::CallerSide { progress_token: context.meta.get_progress_token(), log_level };
    let blocking = |f: Box<dyn FnOnce() -> bool + Send>| tokio::task::spawn_blocking(f);
    let who = call.who.clone();
    let mut approval_id = call.approval.clone();
    if let Some((id, answer)) = answered {
        if let Some(accept) = decision(&answer) {
            let (g, w, i) = (std::sync::Arc::clone(&gateway), who.clone(), id.clone());
            // A decision the core refuses (another's call, a `role` tool) leaves the call to ask again.
            if blocking(Box::new(move || g.decide_in_band(&w, &i, accept).is_ok())).await? {
                approval_id = Some(id);
            }
        }
    }
    let run = |approval_id: Option<String>| {
        let (g, c, r) = (std::sync::Arc::clone(&gateway), call.clone(), run_id.clone());
        super::relay::pump(peer, &side, move |sink| super::calls::execute(&g, &c, r, approval_id, Some(sink)))
    };
    // 2026-07-28 (the request's `_meta` declares its capabilities): what the
    // upstream asks goes to the client as an InputRequiredResult (held.rs).
    let result = match &call.capabilities {
        Some(capabilities) => {
            let client = super::held::Client { peer, side: &side, capabilities: capabilities.clone(), responses };
            match super::held::start(std::sync::Arc::clone(&gateway), call.clone(), run_id.clone(), approval_id, &client).await? {
                super::held::Pumped::Done(result) => result,
                super::held::Pumped::Ask(ask) => return Ok(Answer::InputRequired(ask)),
            }
        }
        None => run(approval_id).await?,
    };
    let Some(id) = result.pending_approval() else { return Ok(Answer::Done(result)) };
    let (g, w, i) = (std::sync::Arc::clone(&gateway), who.clone(), id.clone());
    if !can_ask(peer, &context.meta) || !blocking(Box::new(move || g.in_band_approvable(&w, &i))).await? {
        return Ok(Answer::Done(result));
    }
    let question = question(&call.tool, &call.args, &result, &id);
    if context.protocol_version().is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28) {
        return Ok(Answer::InputRequired(input_required(question, &id)));
    }
    let Some(accept) = ask_now(peer, question).await else { return Ok(Answer::Done(result)) };
    let (g, w, i) = (std::sync::Arc::clone(&gateway), who.clone(), id.clone());
    if !blocking(Box::new(move || g.decide_in_band(&w, &i, accept).is_ok())).await? {
        return Ok(Answer::Done(result));
    }
    Ok(Answer::Done(run(Some(id)).await?))
}
