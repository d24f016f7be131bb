//! Run admission (issue 21): a run starts only from a source `spec.runs`
//! lists and enables, and at most `max_runs_per_day` times per principal
//! (a per-day bucket in the state store, so processes and hosts sharing the
//! store share the count). Without `spec.runs` every run is admitted.

use super::Governor;
use crate::call::Principal;
use crate::codes::ArgumentCode;
use crate::error::Error;
use crate::store::{Acquire, Rate, RateKey};

const DAY_MS: u64 = 86_400_000;

fn not_admitted(message: String) -> Error {
    Error::InvalidArgument { code: ArgumentCode::RunNotAdmitted.as_str(), message }
}

impl Governor {
    /// Sets `spec.runs` (after the policy layers narrowed it).
    pub fn set_runs(&mut self, runs: Option<crate::harness::RunsSettings>) {
        self.run_admission = runs;
    }

    /// A new run from `source` (`api`, `gateway` or a named trigger) for
    /// `principal`, or `run_not_admitted`. Without a principal the per-day
    /// count cannot be kept, so a source with `max_runs_per_day` needs one.
    /// A source with a `timeout` starts the run's clock.
    pub fn admit_run(&self, source: &str, principal: Option<&Principal>) -> Result<String, Error> {
        self.admission(source, principal)?;
        let run_id = self.new_run_id();
        self.start_run_clock(&run_id, self.run_timeout_ms(source));
        Ok(run_id)
    }

    /// Admits a run whose id the caller chose (the gateway derives a
    /// caller's run id from the principal): the same checks and clock as
    /// [`Governor::admit_run`].
    pub fn admit_run_id(&self, source: &str, principal: Option<&Principal>, run_id: &str) -> Result<(), Error> {
        self.admission(source, principal)?;
        self.start_run_clock(run_id, self.run_timeout_ms(source));
        Ok(())
    }

    /// The checks of admission: the source listed and enabled, the principal's day count.
    fn admission(&self, source: &str, principal: Option<&Principal>) -> Result<(), Error> {
        if let Some(why) = crate::harness::run_refusal(self.run_admission.as_ref(), source) {
            return Err(not_admitted(why));
        }
        let limit = self.run_admission.as_ref().and_then(|r| r.sources.get(source)).and_then(|s| s.max_runs_per_day);
        if let Some(count) = limit {
            let Some(p) = principal else {
                return Err(not_admitted(format!("runs from `{source}` are limited per principal per day; start the run with a principal")));
            };
            let key = RateKey { key: format!("runs/{source}/{}", p.id), rate: Rate { count, period_ms: DAY_MS } };
            match self.store.acquire(std::slice::from_ref(&key), self.clock.now_ms()) {
                Ok(Acquire::Allowed) => {}
                Ok(Acquire::Limited { retry_after_ms, .. }) => {
                    return Err(not_admitted(format!(
                        "principal `{}` has started {count} runs from `{source}` today (`max_runs_per_day`); the next is admitted in {retry_after_ms} ms",
                        p.id
                    )));
                }
                Err(e) => return Err(Error::InvalidArgument { code: ArgumentCode::StoreUnavailable.as_str(), message: e.message }),
            }
        }
        Ok(())
    }

    /// The timeout of runs from `source`, in ms, when `spec.runs` sets one.
    pub fn run_timeout_ms(&self, source: &str) -> Option<u64> {
        self.run_admission.as_ref()?.sources.get(source)?.timeout_ms
    }
}
