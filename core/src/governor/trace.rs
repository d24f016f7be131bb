//! What the steps record as they decide: each step's verdict (for
//! explain) and the shadow-mode would-refusals and labels a real call keeps.

use serde::Serialize;

use crate::call::{RefusalCode, Step, WouldRefuse};
use crate::store::Labels;

/// What one step found, as `explain` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTrace {
    /// The step.
    pub step: Step,
    /// `pass`, `refuse`, `pending` or `skip`.
    pub verdict: &'static str,
    /// The code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The rules, fields and expressions behind the verdict.
    pub details: Vec<String>,
}

/// Collects explain's per-step verdicts and shadow-mode would-refusals.
#[derive(Debug, Default)]
pub(super) struct Trace {
    /// Explain: record every step's verdict, and change nothing.
    pub dry: bool,
    pub steps: Vec<StepTrace>,
    /// What shadow-mode rules and layers would have refused.
    pub shadow: Vec<WouldRefuse>,
    /// The run's labels once read (at the policy step, or with the rate
    /// limit in the same round trip); results reuse them instead of asking
    /// the store again.
    pub labels: Option<Labels>,
    /// Keep the ids of the policy rules that decide (issue 24: the audit
    /// event and its span name them), only when an event will be built.
    pub keep_rules: bool,
    /// The policy rules that decided, as `layer/rule` (`layer/default` for a
    /// layer's default deny).
    pub rules: Vec<String>,
}

impl Trace {
    pub fn pass(&mut self, step: Step, details: impl FnOnce() -> Vec<String>) {
        if self.dry {
            self.steps.push(StepTrace { step, verdict: "pass", code: None, details: details() });
        }
    }

    pub fn decided_by(&mut self, layer: &str, rule: Option<&str>) {
        if self.keep_rules {
            self.rules.push(format!("{layer}/{}", rule.unwrap_or("default")));
        }
    }

    pub fn would_refuse(&mut self, code: RefusalCode, step: Step, layer: &str, rule: Option<&str>) {
        self.shadow.push(WouldRefuse { code, step, layer: layer.to_string(), rule: rule.map(str::to_string) });
    }
}
