//! Deciding approvals outside a call: grant (as asked, or with arguments
//! the approver edited), deny, and list the open ones. Consuming an approval
//! inside a call is step 7 (`steps.rs`).

use serde_json::Value;

use super::Governor;
use crate::audit::ApprovalDecided;
use crate::call::Principal;
use crate::canonical;
use crate::codes::ArgumentCode;
use crate::digest::sha256_tagged;
use crate::error::Error;
use crate::store::{ApprovalState, PendingApproval, StoreError};

impl Governor {
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
                return Err(Error::InvalidArgument {
                    code: ArgumentCode::ApproverNotAllowed.as_str(),
                    message: format!("approving `{}` needs role `{role}`", approval.tool),
                });
            }
        }
        // Separation of duties: the principal whose call waits does not
        // grant it, whatever roles she holds, unless the harness says so.
        if !self.settings.allow_self_approval && approval.principal.get("id").and_then(Value::as_str) == Some(approver.id.as_str()) {
            return Err(Error::InvalidArgument {
                code: ArgumentCode::ApproverNotAllowed.as_str(),
                message: format!("`{}` cannot approve this call of `{}`: it is their own (another principal must)", approver.id, approval.tool),
            });
        }
        let Some(args) = edited_args else {
            return match self.store.transition(id, ApprovalState::Pending, ApprovalState::Approved, Some(&approver.id), None) {
                Ok(true) => {
                    self.decided(&approval, ApprovalState::Approved);
                    Ok(PendingApproval { state: ApprovalState::Approved, decided_by: Some(approver.id.clone()), ..approval })
                }
                Ok(false) => Err(not_pending(id)),
                Err(e) => Err(store_error(e)),
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
            ..approval.clone()
        };
        let replaced = format!("replaced by `{}` with edited arguments", edited.id);
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Used, Some(&approver.id), Some(&replaced)) {
            Ok(true) => self.decided(&approval, ApprovalState::Approved),
            Ok(false) => return Err(not_pending(id)),
            Err(e) => return Err(store_error(e)),
        }
        self.store.put_approval(&edited).map_err(store_error)?;
        Ok(edited)
    }

    /// Tells the audit sink (and an observer) how long `approval` waited
    /// for its decision (issue 24: the approval-wait metric).
    fn decided(&self, approval: &PendingApproval, state: ApprovalState) {
        let now = self.clock.now_ms();
        self.audit.approval_decided(&ApprovalDecided {
            ts_ms: now,
            approval_id: approval.id.clone(),
            tool: approval.tool.clone(),
            tenant: approval.tenant.clone(),
            state: state.as_str().to_string(),
            wait_ms: now.saturating_sub(approval.created_ms),
            policy_version: approval.policy_version.clone(),
        });
    }

    /// Checks arguments an approver edited against the tool's input schema
    /// (step 2's validator) before they are granted: an approver's typo is
    /// refused now, with where and which keyword, not when the call re-runs.
    pub fn check_edited_args(tool: &crate::manifest::Tool, args: &Value) -> Result<(), Error> {
        let invalid = |message: String| Error::InvalidArgument { code: ArgumentCode::InvalidArgs.as_str(), message };
        if !args.is_object() {
            return Err(invalid("edited arguments must be an object".into()));
        }
        canonical::to_string(args).map_err(|e| invalid(format!("edited arguments: {e}")))?;
        match tool.validator().check(args) {
            Some(v) => Err(invalid(format!("edited {}", v.message()))),
            None => Ok(()),
        }
    }

    /// Denies a pending approval with a reason for the record.
    pub fn deny(&self, id: &str, by: &str, reason: &str) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Denied, Some(by), Some(reason)) {
            Ok(true) => {
                self.decided(&approval, ApprovalState::Denied);
                Ok(PendingApproval { state: ApprovalState::Denied, decided_by: Some(by.to_string()), note: Some(reason.to_string()), ..approval })
            }
            Ok(false) => Err(not_pending(id)),
            Err(e) => Err(store_error(e)),
        }
    }

    pub(super) fn open_approval(&self, id: &str) -> Result<PendingApproval, Error> {
        let approval = self
            .store
            .approval(id)
            .map_err(store_error)?
            .ok_or_else(|| Error::InvalidArgument { code: ArgumentCode::UnknownApproval.as_str(), message: format!("no approval `{id}`") })?;
        if approval.state != ApprovalState::Pending {
            return Err(not_pending(id));
        }
        if self.clock.now_ms() >= approval.expires_ms {
            return Err(Error::InvalidArgument { code: ArgumentCode::ApprovalExpired.as_str(), message: format!("approval `{id}` has expired") });
        }
        Ok(approval)
    }

    /// Approvals waiting for a human or granted and not yet used; expired
    /// ones are not listed.
    pub fn open_approvals(&self) -> Result<Vec<PendingApproval>, Error> {
        let now = self.clock.now_ms();
        let mut open = self.store.open_approvals().map_err(store_error)?;
        open.retain(|a| a.expires_ms > now);
        Ok(open)
    }
}

pub(super) fn not_pending(id: &str) -> Error {
    Error::InvalidArgument {
        code: ArgumentCode::ApprovalNotPending.as_str(),
        message: format!("approval `{id}` is not pending (already decided or used)"),
    }
}

pub(super) fn store_error(e: StoreError) -> Error {
    Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message }
}
