//! In-band approvals (issue 22): who may decide an approval from inside the
//! call that waits for it. A tool whose manifest says `approval.by: caller`
//! lets the caller's own user confirm it (an MCP client asks its user through
//! elicitation); every other approval stays with a reviewer holding the
//! approver role, out of band. The grant goes through the same store
//! transition as an out-of-band one, so the resumed call consumes it at
//! step 7 like any other, and the approval records the caller as its approver.

use serde_json::Value;

use super::Governor;
use crate::call::Principal;
use crate::codes::ArgumentCode;
use crate::error::Error;
use crate::manifest::ApprovalBy;
use crate::store::{ApprovalState, PendingApproval};

/// The only reason an in-band decision may cover: the manifest's own
/// condition. The trifecta, the risk, a policy rule or tainted arguments ask
/// a reviewer, whatever the manifest says.
const IN_BAND_REASONS: [&str; 1] = ["approval.when"];

fn not_in_band(message: String) -> Error {
    Error::InvalidArgument { code: ArgumentCode::ApprovalNotInBand.as_str(), message }
}

impl Governor {
    /// Whether `caller` (with `tenant`) may decide `approval` in band: its
    /// tool says `approval.by: caller`, only `approval.when` asked for it, and
    /// the call that waits is the caller's own. The error says why not
    /// (`approval_not_in_band`, `approver_not_allowed`).
    pub fn check_in_band(&self, approval: &PendingApproval, caller: &Principal, tenant: Option<&str>) -> Result<(), Error> {
        let by = self.tool(&approval.tool).map(|rt| rt.approval_by);
        if by != Some(ApprovalBy::Caller) {
            return Err(not_in_band(format!(
                "`{}` is approved by a reviewer with the approver role, out of band (`approval.by: role`)",
                approval.tool
            )));
        }
        if let Some(other) = approval.asked_by.iter().find(|k| !IN_BAND_REASONS.contains(&k.as_str())) {
            return Err(not_in_band(format!("this call of `{}` also needs a reviewer's approval (asked by `{other}`)", approval.tool)));
        }
        let own = approval.principal.get("id").and_then(Value::as_str) == Some(caller.id.as_str()) && approval.tenant.as_deref() == tenant;
        if !own {
            return Err(Error::InvalidArgument {
                code: ArgumentCode::ApproverNotAllowed.as_str(),
                message: format!("only the caller whose call of `{}` waits may confirm it in band", approval.tool),
            });
        }
        Ok(())
    }

    /// Whether approval `id` can be put to `caller` in band at all (see
    /// [`Governor::check_in_band`]); also `false` when it is not pending.
    pub fn in_band_approvable(&self, id: &str, caller: &Principal, tenant: Option<&str>) -> bool {
        self.open_approval(id).and_then(|a| self.check_in_band(&a, caller, tenant)).is_ok()
    }

    /// The caller confirms approval `id` in band: granted, with the caller
    /// as its approver; the call then resumes with the approval like one a
    /// reviewer granted.
    pub fn approve_in_band(&self, id: &str, caller: &Principal, tenant: Option<&str>) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        self.check_in_band(&approval, caller, tenant)?;
        let note = "confirmed in band by the caller";
        match self.store.transition(id, ApprovalState::Pending, ApprovalState::Approved, Some(&caller.id), Some(note)) {
            Ok(true) => {
                Ok(PendingApproval { state: ApprovalState::Approved, decided_by: Some(caller.id.clone()), note: Some(note.into()), ..approval })
            }
            Ok(false) => Err(super::approvals::not_pending(id)),
            Err(e) => Err(super::approvals::store_error(e)),
        }
    }

    /// The caller declines approval `id` in band: denied, so the resumed
    /// call is refused `approval_denied`.
    pub fn decline_in_band(&self, id: &str, caller: &Principal, tenant: Option<&str>) -> Result<PendingApproval, Error> {
        let approval = self.open_approval(id)?;
        self.check_in_band(&approval, caller, tenant)?;
        self.deny(id, &caller.id, "declined in band by the caller")
    }
}
