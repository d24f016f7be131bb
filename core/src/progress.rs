//! Progress of a running call (issue 22): what a native handler (Python's
//! `progress` keyword, Node's `ctx.progress`), a process tool (its stderr
//! lines) or an upstream MCP tool (`notifications/progress`) reports while it
//! runs, decided here before it reaches whoever serves the caller.
//!
//! A report is relayed only while the call runs, in the order decided, each
//! `progress` greater than the last, at most [`MAX_REPORTS`] per call; its
//! message is treated as output of the tool: the secrets handed out for the
//! call are masked, the tool's output sanitizers run, and it is cut to
//! [`MAX_MESSAGE_BYTES`] (or the tool's `output.max_bytes` when smaller). A
//! report that breaks a rule is dropped with a [`ProgressDrop`] code; the
//! handler is never failed for it.
//!
//! The caller's side sets a [`ProgressListener`] on the call's
//! [`CallContext`](crate::CallContext) (the MCP gateway does, for a caller
//! that gave a progress token); the governor gives the ticket its
//! [`Progress`], which every transport and host handler of that call reports
//! through. Without a listener nothing is decided and nothing is kept.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

pub use crate::codes::ProgressDrop;
use crate::sanitize::{self, Sanitizer, SecretMask};

/// The longest message relayed, in UTF-8 bytes (cut on a character boundary).
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// The most reports relayed for one call.
pub const MAX_REPORTS: u32 = 1000;

/// One progress report as it leaves the core.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressEvent {
    /// Progress so far (greater than the last report's).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// The message, masked, sanitized and bounded.
    pub message: Option<String>,
}

impl ProgressEvent {
    /// `{"progress", "total"?, "message"?}`.
    pub fn to_value(&self) -> Value {
        let mut v = json!({ "progress": self.progress });
        if let Some(map) = v.as_object_mut() {
            if let Some(total) = self.total {
                map.insert("total".into(), json!(total));
            }
            if let Some(message) = &self.message {
                map.insert("message".into(), json!(message));
            }
        }
        v
    }
}

/// What the caller's side does with a call's progress. Called on the thread
/// that reported (a transport's reader, a host's handler thread): returns at once.
pub trait ProgressSink: Send + Sync {
    /// A report the core relays.
    fn progress(&self, event: ProgressEvent);
}

/// Where a call's progress goes: set on the call's context by whoever serves its caller.
#[derive(Clone)]
pub struct ProgressListener(pub Arc<dyn ProgressSink>);

impl fmt::Debug for ProgressListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressListener")
    }
}

/// The rules for one call's reports: the tool's output sanitizers, the
/// call's secret values, the bound on a message.
pub struct ProgressPolicy {
    sanitizers: Vec<Sanitizer>,
    mask: SecretMask,
    max_message_bytes: usize,
}

impl ProgressPolicy {
    /// The policy of a tool with these output `sanitizers` and `max_output_bytes`,
    /// for a call that was handed `secrets`.
    pub fn new<S: AsRef<str>>(sanitizers: &[Sanitizer], secrets: &[S], max_output_bytes: usize) -> Self {
        Self { sanitizers: sanitizers.to_vec(), mask: SecretMask::new(secrets), max_message_bytes: MAX_MESSAGE_BYTES.min(max_output_bytes) }
    }

    /// Decides one report given what was relayed so far (`state`, updated
    /// when the report is relayed).
    pub fn decide(&self, state: &mut ProgressState, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<ProgressEvent, ProgressDrop> {
        if state.ended {
            return Err(ProgressDrop::ProgressAfterEnd);
        }
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite() || t < 0.0) {
            return Err(ProgressDrop::ProgressInvalid);
        }
        if state.last.is_some_and(|last| progress <= last) {
            return Err(ProgressDrop::ProgressNotIncreasing);
        }
        if state.relayed >= MAX_REPORTS {
            return Err(ProgressDrop::ProgressLimit);
        }
        let message = message.map(|m| self.message(m));
        state.last = Some(progress);
        state.relayed += 1;
        Ok(ProgressEvent { progress, total, message })
    }

    /// A message as output of the tool: secrets masked, sanitized, cut.
    fn message(&self, text: &str) -> String {
        // A message's redactions are not counted in the call's output report.
        let value = sanitize::clean(Value::String(text.to_string()), &self.mask, &self.sanitizers, &mut std::collections::BTreeMap::new());
        let text = value.as_str().unwrap_or_default();
        crate::text::truncate(text, self.max_message_bytes).to_string()
    }
}

/// What a call has relayed so far.
#[derive(Debug, Default, Clone)]
pub struct ProgressState {
    last: Option<f64>,
    relayed: u32,
    ended: bool,
}

impl ProgressState {
    /// The call ended: later reports are dropped.
    pub fn end(&mut self) {
        self.ended = true;
    }
}

struct Channel {
    listener: ProgressListener,
    policy: ProgressPolicy,
    state: Mutex<ProgressState>,
}

/// A running call's progress channel, carried by its ticket; clones share it.
/// Every report goes through [`Progress::report`].
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<Channel>>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Progress").field(&self.listened()).finish()
    }
}

impl Progress {
    /// The channel of a call whose caller listens (`listener`), with the tool's `policy`.
    pub(crate) fn new(listener: Option<&ProgressListener>, policy: impl FnOnce() -> ProgressPolicy) -> Self {
        Self(listener.map(|l| Arc::new(Channel { listener: l.clone(), policy: policy(), state: Mutex::new(ProgressState::default()) })))
    }

    /// Whether anyone listens (a transport may skip reading progress otherwise).
    pub fn listened(&self) -> bool {
        self.0.is_some()
    }

    /// Reports progress: relayed to the caller when the core allows it
    /// (see the module), in the order decided; otherwise dropped with the reason.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), ProgressDrop> {
        let Some(channel) = &self.0 else { return Err(ProgressDrop::ProgressNotListened) };
        // Held while sending, so the listener gets the reports in the order decided.
        let mut state = channel.state.lock().unwrap_or_else(PoisonError::into_inner);
        let event = channel.policy.decide(&mut state, progress, total, message)?;
        channel.listener.0.progress(event);
        Ok(())
    }

    /// The call ended: what is reported from now on is dropped.
    pub(crate) fn end(&self) {
        if let Some(channel) = &self.0 {
            channel.state.lock().unwrap_or_else(PoisonError::into_inner).end();
        }
    }
}

/// [`ProgressPolicy::decide`] over a list of reports (`{"progress", "total"?,
/// "message"?}`, or `"end"`: the call ends there), as `progress_decision` of
/// the host API answers it in every language: `{"events": [{"relayed":
/// {...}} | {"dropped": code} | {"ended": true}]}`.
pub fn decide_all(policy: &ProgressPolicy, reports: &[Value]) -> Value {
    let mut state = ProgressState::default();
    let events: Vec<Value> = reports
        .iter()
        .map(|report| {
            if report.as_str() == Some("end") {
                state.end();
                return json!({"ended": true});
            }
            // A number that is none (a string, null) is not finite: `progress_invalid`.
            let progress = report.get("progress").and_then(Value::as_f64).unwrap_or(f64::NAN);
            let total = match report.get("total") {
                None | Some(Value::Null) => None,
                Some(t) => Some(t.as_f64().unwrap_or(f64::NAN)),
            };
            let message = report.get("message").and_then(Value::as_str);
            match policy.decide(&mut state, progress, total, message) {
                Ok(event) => json!({"relayed": event.to_value()}),
                Err(code) => json!({"dropped": code.as_str()}),
            }
        })
        .collect();
    json!({ "events": events })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Mutex<Vec<ProgressEvent>>);
    impl ProgressSink for Collect {
        fn progress(&self, event: ProgressEvent) {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).push(event);
        }
    }

    #[test]
    fn relays_increasing_reports_until_the_call_ends() {
        let sink = Arc::new(Collect(Mutex::new(Vec::new())));
        let listener = ProgressListener(sink.clone());
        let progress = Progress::new(Some(&listener), || ProgressPolicy::new(&[Sanitizer::PiiRedact], &["s3cr3t-value"], 10_000));
        assert_eq!(progress.report(1.0, Some(3.0), Some("mail bob@example.com, key s3cr3t-value")), Ok(()));
        assert_eq!(progress.report(1.0, None, None), Err(ProgressDrop::ProgressNotIncreasing));
        assert_eq!(progress.report(f64::NAN, None, None), Err(ProgressDrop::ProgressInvalid));
        progress.clone().end();
        assert_eq!(progress.report(2.0, None, None), Err(ProgressDrop::ProgressAfterEnd));
        let got = sink.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(got.len(), 1);
        let message = got[0].message.clone().unwrap_or_default();
        assert!(!message.contains("bob@example.com") && !message.contains("s3cr3t-value"), "{message}");
        assert_eq!(Progress::default().report(1.0, None, None), Err(ProgressDrop::ProgressNotListened));
    }

    #[test]
    fn a_message_is_cut_on_a_character_boundary() {
        let policy = ProgressPolicy::new::<&str>(&[], &[], 5);
        let event = policy.decide(&mut ProgressState::default(), 0.0, None, Some("héllo wörld")).unwrap_or_else(|c| panic!("{c:?}"));
        assert_eq!(event.message.as_deref(), Some("héll"));
    }
}
