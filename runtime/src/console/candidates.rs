//! The built-in tools' "always allow" candidates in the console (issues 20
//! and 24): a pending approval of a gated built-in call offers candidates
//! (`always allow writes under src/`, …); an approver who may decide the
//! approval accepts one (the core's `Governor::accept_candidate`: the approval
//! is granted and the rule appended to the permission file the harness names,
//! exactly as `h.accept_candidate` does) or dismisses it (this console stops
//! offering it for that approval; nothing is written). Both are state changes
//! behind the same session, CSRF token and `Origin` check as approving.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::{fail, Fail, Session};
use harnessweaver_core::builtins::Builtins;
use harnessweaver_core::governor::Governor;
use harnessweaver_core::harness::Harness;
use harnessweaver_core::store::PendingApproval;

/// Candidates an approver dismissed, per approval, for this console's life.
#[derive(Debug, Default)]
pub(super) struct Dismissed(Mutex<HashSet<(String, String)>>);

/// `governor` with the harness's built-in tools, which compute the candidates
/// and hold the permission file (none when the harness enables no built-in tool).
pub(super) fn with_builtins(harness: &Harness, mut governor: Governor) -> Result<Governor, String> {
    let builtins = Builtins::new(harness).map_err(|p| p.to_string())?;
    governor.set_builtins(builtins.map(Arc::new));
    Ok(governor)
}

/// The candidates `approval` offers that no approver dismissed here.
pub(super) fn offered(governor: &Governor, dismissed: &Dismissed, approval: &PendingApproval) -> Value {
    let gone = dismissed.0.lock().unwrap_or_else(PoisonError::into_inner);
    let list: Vec<Value> = governor
        .candidates_of(approval)
        .into_iter()
        .filter(|c| !gone.contains(&(approval.id.clone(), c.id.clone())))
        .map(|c| json!({"id": c.id, "kind": c.kind, "description": c.description}))
        .collect();
    Value::Array(list)
}

/// The candidate id a request names.
fn named(body: &Value) -> Result<&str, Fail> {
    body.get("candidate")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| fail(http::StatusCode::UNPROCESSABLE_ENTITY, "invalid_argument", "name the candidate (`candidate`)"))
}

/// Accepts candidate `body.candidate` of approval `id` as the signed-in approver.
pub(super) fn accept(
    governor: &Governor,
    session: &Session,
    id: &str,
    body: &Value,
    refused: impl Fn(harnessweaver_core::Error) -> Fail,
) -> Result<Value, Fail> {
    let candidate = named(body)?;
    let (approval, chosen) = governor.accept_candidate(id, candidate, &session.identity.principal).map_err(refused)?;
    Ok(json!({"id": approval.id, "state": approval.state.as_str(), "decided_by": approval.decided_by, "candidate": chosen}))
}

/// Dismisses candidate `body.candidate` of approval `id`: only an approver who
/// may decide the approval, and only a candidate it offers.
pub(super) fn dismiss(governor: &Governor, dismissed: &Dismissed, session: &Session, id: &str, body: &Value) -> Result<Value, Fail> {
    let candidate = named(body)?;
    let open = governor.open_approvals().map_err(|e| fail(http::StatusCode::SERVICE_UNAVAILABLE, e.code(), e.to_string()))?;
    let Some(approval) = open.into_iter().find(|a| a.id == id) else {
        return Err(fail(http::StatusCode::NOT_FOUND, "unknown_approval", format!("no open approval `{id}`")));
    };
    if let Some(role) = approval.approver_role.as_deref() {
        if !session.identity.principal.has_role(role) {
            return Err(fail(http::StatusCode::FORBIDDEN, "approver_not_allowed", format!("dismissing needs role `{role}`")));
        }
    }
    if !governor.candidates_of(&approval).iter().any(|c| c.id == candidate) {
        return Err(fail(http::StatusCode::UNPROCESSABLE_ENTITY, "invalid_argument", format!("approval `{id}` offers no candidate `{candidate}`")));
    }
    dismissed.0.lock().unwrap_or_else(PoisonError::into_inner).insert((id.to_string(), candidate.to_string()));
    Ok(json!({"id": id, "dismissed": candidate}))
}
