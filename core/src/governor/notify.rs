//! Relayed log messages are output (issue 22): the log messages a running
//! tool sends its caller (an upstream MCP tool's `notifications/message`,
//! relayed by the gateway) reach the caller's client while the call runs, so
//! they are governed like what the tool returns: step 9 before they leave.
//! (Progress has its own rule, `crate::progress`, which treats its message
//! the same way.)
//!
//! - the values the transport handed the tool (its secret handles, an
//!   upstream's `env` and `headers_env` values) are masked as `[SECRET]`;
//! - the text (its `logger` and `data`, keys included) goes through the
//!   tool's `output.sanitize`;
//! - a message is bounded to `min(output.max_bytes, 4 KiB)` of text, cut on
//!   a character boundary (`data` that is not a string is cut as its
//!   canonical JSON text, as step 9 cuts an output);
//! - it is rebuilt from the fields a log message defines (`level`, `logger`,
//!   `data`); what an upstream adds stays behind;
//! - a tool whose output is untrusted marks the run untrusted before its
//!   text leaves, as step 9 does for its result.
//!
//! A message that cannot be cleaned is withheld, never sent as it came, and
//! audited as an event of the call (subject `relay notifications/message`):
//! the tool is unknown (`unknown_tool`), a required field is missing or
//! malformed (`invalid_output`), or the run's untrusted label could not be
//! recorded (`store_unavailable`).

use serde_json::{Map, Value};

use super::output::{cut, truncate};
use super::{Counts, Governor, ToolRuntime};
use crate::call::{RefusalCode, Step, Ticket};
use crate::sanitize;
use crate::store::Labels;

/// The most text one relayed log message carries, in UTF-8 bytes; less
/// when the tool's `output.max_bytes` is less.
pub const NOTIFICATION_MAX_BYTES: usize = 4096;

/// The log levels of MCP's `notifications/message`, lowest first.
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The MCP method of a relayed log message.
const METHOD: &str = "notifications/message";

/// A log message cleaned for the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanNotification {
    /// The params to send (`level`, `logger`, `data`).
    pub params: Value,
    /// What the secret mask and the sanitizers replaced, by kind.
    pub redactions: Counts,
    /// A text was cut to the bound.
    pub truncated: bool,
}

/// A log message withheld: a stable code and a message that never holds its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationDrop {
    /// `unknown_tool`, `invalid_output` or `store_unavailable`.
    pub code: RefusalCode,
    /// Why, safe to log.
    pub message: String,
}

impl NotificationDrop {
    fn new(code: RefusalCode, message: String) -> Self {
        Self { code, message }
    }
}

impl Governor {
    /// `params` of a log message (`notifications/message`) the call of
    /// `ticket` sends its caller, cleaned as the tool's output (see the
    /// module); `echoed` are further values the transport handed the tool,
    /// masked like its secret handles. A message that cannot be cleaned is
    /// audited as an event of the call (subject `relay
    /// notifications/message`) and comes back as the drop.
    pub fn relay_log(&self, ticket: &Ticket, params: &Value, echoed: &[String]) -> Result<CleanNotification, NotificationDrop> {
        let cleaned = self.clean_log(ticket, params, echoed);
        if let Err(drop) = &cleaned {
            self.record(self.relay_refusal(ticket, drop.code, Step::Output, METHOD));
        }
        cleaned
    }

    fn clean_log(&self, ticket: &Ticket, params: &Value, echoed: &[String]) -> Result<CleanNotification, NotificationDrop> {
        let rt = self.tools.get(ticket.tool_index).filter(|rt| rt.name == ticket.tool);
        let Some(rt) = rt else {
            return Err(NotificationDrop::new(RefusalCode::UnknownTool, format!("`{}` is not a tool of this harness", ticket.tool)));
        };
        let mut secrets: Vec<String> = ticket.secrets.values().iter().cloned().collect();
        secrets.extend(echoed.iter().filter(|s| !s.is_empty()).cloned());
        let mut clean = Cleaner { rt, mask: sanitize::SecretMask::new(&secrets), redactions: Counts::new(), truncated: false };
        let mut left = rt.output.max_bytes.min(NOTIFICATION_MAX_BYTES);
        let invalid = |what: &str| NotificationDrop::new(RefusalCode::InvalidOutput, format!("a `{METHOD}` from `{}` {what}", ticket.tool));
        let mut out = Map::new();
        let level = params.get("level").and_then(Value::as_str).filter(|l| LOG_LEVELS.contains(l));
        let level = level.ok_or_else(|| invalid("has no known `level`"))?;
        out.insert("level".into(), level.into());
        match params.get("logger") {
            None | Some(Value::Null) => {}
            Some(Value::String(logger)) => {
                out.insert("logger".into(), clean.text(logger, &mut left).into());
            }
            Some(_) => return Err(invalid("has a `logger` that is not a string")),
        }
        let data = params.get("data").ok_or_else(|| invalid("has no `data`"))?;
        out.insert("data".into(), clean.value(data, &mut left));
        // What leaves is the tool's output: an untrusted tool's text makes the
        // run untrusted now, as its result would (withheld when that cannot be recorded).
        if rt.output.untrusted && !ticket.labels.is_some_and(|l| l.untrusted) {
            self.store.add_labels(&ticket.run_id, Labels { private: false, untrusted: true }).map_err(|e| {
                NotificationDrop::new(
                    RefusalCode::StoreUnavailable,
                    format!("the run's untrusted label could not be recorded ({e}); the log message was withheld"),
                )
            })?;
        }
        Ok(CleanNotification { params: Value::Object(out), redactions: clean.redactions, truncated: clean.truncated })
    }
}

/// Step 9 for the text of one log message.
struct Cleaner<'a> {
    rt: &'a ToolRuntime,
    mask: sanitize::SecretMask,
    redactions: Counts,
    truncated: bool,
}

impl Cleaner<'_> {
    /// `value` masked and sanitized (not cut).
    fn sanitized(&mut self, value: &Value) -> Value {
        sanitize::clean(value.clone(), &self.mask, &self.rt.output.sanitize, &mut self.redactions)
    }

    /// A string, cleaned and cut to what is `left`.
    fn text(&mut self, text: &str, left: &mut usize) -> String {
        let text = match self.sanitized(&Value::String(text.to_string())) {
            Value::String(s) => s,
            // The sanitizers map a string to a string.
            other => other.to_string(),
        };
        let kept = truncate(&text, *left);
        self.truncated |= kept.len() < text.len();
        *left = left.saturating_sub(kept.len());
        kept.to_string()
    }

    /// Any JSON value, cleaned and cut to what is `left` (its canonical text, when it does not fit).
    fn value(&mut self, value: &Value, left: &mut usize) -> Value {
        let value = self.sanitized(value);
        let (value, cut_short) = cut(value, *left);
        self.truncated |= cut_short;
        *left = 0;
        value
    }
}
