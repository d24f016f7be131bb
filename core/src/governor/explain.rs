//! Explain: steps 1–9 of a call without invoking, counting, labelling,
//! asking or consuming anything, and what each step found. The steps record
//! into a [`Trace`] as they go; a real call's trace keeps only the
//! shadow-mode would-refusals and the labels read.

use serde::Serialize;
use serde_json::Value;

use super::steps::Deciding;
use super::trace::{StepTrace, Trace};
use super::{ArgsDigest, Governor, Stop};
use crate::call::{CallContext, Decision, RefusalCode, Step, WouldRefuse};

impl Governor {
    /// Runs steps 1–9 without invoking anything and without counting,
    /// labelling, asking or consuming: each step's verdict and the rule, field
    /// or expression behind it.
    pub fn explain(&self, tool: &str, args: Value, ctx: &CallContext) -> Explanation {
        let now_ms = self.clock.now_ms();
        let run_id = ctx.run_id.clone().unwrap_or_default();
        let digest = ArgsDigest::new(&args, false);
        let mut call = Deciding::new(tool, &args, ctx, &run_id, &digest, now_ms, Trace { dry: true, ..Trace::default() });
        let decided = self.decide(&mut call);
        let mut trace = call.trace;
        let (decision, code, step, message, reasons) = match decided {
            Ok(index) => {
                trace.steps.push(StepTrace {
                    step: Step::Invoke,
                    verdict: "skip",
                    code: None,
                    details: vec!["explain does not invoke the tool".into()],
                });
                if let Some(rt) = self.tools.get(index) {
                    let sanitize: Vec<&str> = rt.output.sanitize.iter().map(|s| s.as_str()).collect();
                    let label = if rt.output.untrusted { "untrusted" } else { "trusted" };
                    trace.steps.push(StepTrace {
                        step: Step::Output,
                        verdict: "pass",
                        code: None,
                        details: vec![format!("sanitize [{}], max_bytes {}, label {label}", sanitize.join(", "), rt.output.max_bytes)],
                    });
                }
                (Decision::Allowed, None, None, format!("`{tool}` would run"), Vec::new())
            }
            Err(Stop::Refused(r)) => {
                let r = super::shown(r);
                let mut details = vec![r.message.clone()];
                details.extend(r.reasons.iter().cloned());
                trace.steps.push(StepTrace { step: r.step, verdict: "refuse", code: Some(r.code), details });
                (Decision::Refused, Some(r.code), Some(r.step), r.message, r.reasons)
            }
            Err(Stop::Pending(request)) => {
                trace.steps.push(StepTrace {
                    step: Step::Approval,
                    verdict: "pending",
                    code: Some(RefusalCode::ApprovalRequired),
                    details: request.reasons.clone(),
                });
                let message = format!("`{tool}` would wait for approval by a human");
                (Decision::Pending, Some(RefusalCode::ApprovalRequired), Some(Step::Approval), message, request.reasons)
            }
        };
        Explanation { tool: super::capped(tool), decision, code, step, message, reasons, steps: trace.steps, would_refuse: trace.shadow }
    }
}

/// What `explain` found: each step's verdict and the decision a call would get.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The tool.
    pub tool: String,
    /// What the call would get.
    pub decision: Decision,
    /// The code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The step that would decide.
    pub step: Option<Step>,
    /// The message the call would carry.
    pub message: String,
    /// Why.
    pub reasons: Vec<String>,
    /// Each step in order, up to the one that decides.
    pub steps: Vec<StepTrace>,
    /// What shadow-mode rules would refuse.
    pub would_refuse: Vec<WouldRefuse>,
}

impl Explanation {
    /// The explanation as one JSON object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A readable text, one line per step.
    pub fn to_text(&self) -> String {
        let mut out = format!("explain `{}`: {}", self.tool, self.decision.as_str());
        if let (Some(code), Some(step)) = (&self.code, self.step) {
            out.push_str(&format!(" ({code} at step {} {})", step.number(), step.as_str()));
        }
        out.push('\n');
        for s in &self.steps {
            out.push_str(&format!("  {}. {:<9} {}", s.step.number(), s.step.as_str(), s.verdict));
            if let Some(code) = &s.code {
                out.push_str(&format!(" [{code}]"));
            }
            out.push('\n');
            for d in &s.details {
                out.push_str(&format!("       - {d}\n"));
            }
        }
        for w in &self.would_refuse {
            let rule = w.rule.as_deref().map_or_else(|| "default deny".to_string(), |r| format!("rule `{r}`"));
            out.push_str(&format!("  shadow: layer `{}` {rule} would refuse with {}\n", w.layer, w.code));
        }
        out
    }
}
