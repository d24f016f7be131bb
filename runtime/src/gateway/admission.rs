//! Run admission for the gateway (issue 21): a caller's run through the
//! gateway starts as a `gateway` run of `spec.runs`, checked like the
//! bindings' `api` runs (the source listed and enabled, `max_runs_per_day`
//! per principal, the run's `timeout`). The core decides
//! ([`Governor::admit_run_id`](harnessweaver_core::governor::Governor::admit_run_id));
//! this only turns a refusal into the call's tool result.

use serde_json::json;

use harnessweaver_core::error::Error as CoreError;

use super::{Gateway, GatewayResult, Identity};

/// The source gateway runs come from in `spec.runs`.
pub const GATEWAY_SOURCE: &str = "gateway";

impl Gateway {
    /// Admits `run_id`, a new run of `who` (its first call, or the first after
    /// `run_ttl`): `run_not_admitted` otherwise.
    pub fn admit(&self, who: &Identity, run_id: &str) -> Result<(), CoreError> {
        self.runtime().governor().admit_run_id(GATEWAY_SOURCE, Some(&who.principal), run_id)
    }
}

/// The tool result of a call whose run was not admitted: refused with the
/// error's code and message, before any step ran (no call id, no audit event).
pub fn not_admitted(tool: &str, error: &CoreError) -> GatewayResult {
    let (code, message) = (error.code(), error.to_string());
    GatewayResult {
        result: json!({
            "decision": "refused",
            "code": code,
            "step": null,
            "message": message,
            "tool": tool,
            "call_id": null,
            "run_id": null,
        }),
        model: format!("[tool call refused: {code}] {message}"),
        waiting_on: None,
    }
}
