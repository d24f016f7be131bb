//! Run timeouts (issue 21): a run admitted from a `spec.runs` source with a
//! `timeout` ends at its deadline. A call that begins after it is refused at
//! step 5 (`run_expired`); a call in flight when it passes is cut as a call
//! past its own timeout is (`timeout`): its ticket's timeout is never longer
//! than what is left of the run, and `finish` withholds an outcome observed
//! after the deadline. Time is the governor's clock, so tests move a manual
//! clock instead of sleeping.
//!
//! The deadlines live in the governor (one process), bounded: at most
//! [`MAX_DEADLINES`] runs, the earliest deadline forgotten first.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::steps::Deciding;
use super::{Governor, Refusal, Stop};
use crate::call::{RefusalCode, Step};

/// Runs whose deadline is remembered at once.
pub(super) const MAX_DEADLINES: usize = 65_536;

/// Each timed run's deadline (ms since the epoch, the governor's clock).
#[derive(Debug, Default)]
pub(super) struct RunDeadlines(Mutex<HashMap<String, Deadline>>);

/// A run's deadline and its timeout, for the message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    pub at_ms: u64,
    pub timeout_ms: u64,
}

impl RunDeadlines {
    fn set(&self, run_id: &str, deadline: Deadline) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_DEADLINES {
            if let Some(first) = map.iter().min_by_key(|(_, d)| d.at_ms).map(|(k, _)| k.clone()) {
                map.remove(&first);
            }
        }
        map.insert(run_id.to_string(), deadline);
    }

    pub(super) fn get(&self, run_id: &str) -> Option<Deadline> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(run_id).copied()
    }
}

impl Governor {
    /// Starts the clock of a run admitted from a source with a `timeout`.
    pub(super) fn start_run_clock(&self, run_id: &str, timeout_ms: Option<u64>) {
        if let Some(timeout_ms) = timeout_ms {
            let at_ms = self.clock.now_ms().saturating_add(timeout_ms);
            self.run_deadlines.set(run_id, Deadline { at_ms, timeout_ms });
        }
    }

    /// Step 5, first: a call in a run past its deadline is `run_expired`.
    pub(super) fn run_in_time(&self, call: &Deciding<'_>) -> Result<(), Stop> {
        let Some(d) = call.ctx.run_id.as_deref().and_then(|r| self.run_deadlines.get(r)) else { return Ok(()) };
        if call.now_ms < d.at_ms {
            return Ok(());
        }
        let mut r = Refusal::new(
            RefusalCode::RunExpired,
            Step::Limits,
            format!("run `{}` has passed its timeout of {} ms; start a new run", call.run_id, d.timeout_ms),
        );
        r.reasons.push("spec.runs timeout".into());
        Err(Stop::Refused(r))
    }

    /// The timeout of a call beginning at `now_ms` in `run_id`: the tool's,
    /// or what is left of the run when that is less; and the run's deadline.
    pub(super) fn call_timeout(&self, run_id: Option<&str>, tool_timeout_ms: u64, now_ms: u64) -> (u64, Option<u64>) {
        match run_id.and_then(|r| self.run_deadlines.get(r)) {
            Some(d) => (tool_timeout_ms.min(d.at_ms.saturating_sub(now_ms).max(1)), Some(d.at_ms)),
            None => (tool_timeout_ms, None),
        }
    }

    /// Whether a call's outcome arrives after its run's deadline (it is then cut as `timeout`).
    pub(super) fn past_run_deadline(&self, deadline_ms: Option<u64>) -> bool {
        deadline_ms.is_some_and(|at| self.clock.now_ms() >= at)
    }
}
