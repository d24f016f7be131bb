//! Relays through the gateway (issue 22): while a call runs, what its
//! upstream MCP tool sends back goes to the caller of that call only.
//!
//! The call runs on a worker thread ([`Gateway::call_relayed`]) with a
//! [`TicketRelay`] as the thread's call relay
//! ([`crate::transport::relay`]); the relay passes each event over a channel
//! to the task serving the caller's `tools/call` request ([`pump`]), which
//! sends it on that request's own peer and stream:
//!
//! - progress, as `notifications/progress` with the caller's own progress
//!   token (none sent when the caller gave none), decided by the core's
//!   progress rule (`core/src/progress.rs`);
//! - log messages, as `notifications/message`, at or above the level the
//!   session set with `logging/setLevel`, cleaned as the tool's output
//!   (`Governor::relay_log`);
//! - sampling and elicitation requests, first decided by the core
//!   ([`Governor::relay`](harnessweaver_core::governor::Governor::relay):
//!   egress under the flow rules, a refusal audited), then sent to the
//!   client as server requests when it declared the capability; the client's
//!   answer goes back upstream. Refused, or without the capability, the
//!   upstream gets an error.

use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressToken, ServerRequest};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use harnessweaver_core::governor::{RelayKind, Ticket};

use super::HostRuntime;
use crate::transport::relay::CallRelay;

/// One thing a running call sends its caller.
#[derive(Debug)]
pub enum RelayEvent {
    /// A progress notification.
    Progress {
        /// Progress so far.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// A message.
        message: Option<String>,
    },
    /// A log message (`notifications/message` params).
    Log(Value),
    /// A sampling or elicitation request the core allowed, and where its answer goes.
    Request {
        /// Sampling or elicitation.
        kind: RelayKind,
        /// The request's params.
        params: Value,
        /// The client's result, or an error for the upstream.
        reply: oneshot::Sender<Result<Value, String>>,
    },
}

/// The sending end the call's worker holds.
pub type RelaySink = mpsc::UnboundedSender<RelayEvent>;

/// What [`pump`] hands the call: where its relays go, and whether the caller
/// listens to progress (it gave a progress token).
#[derive(Debug, Clone)]
pub struct Relays {
    /// Where the call's relays go.
    pub sink: RelaySink,
    /// The caller gave a progress token.
    pub progress: bool,
}

impl Relays {
    /// The progress listener of the call (issue 22), set on its context:
    /// every report (a native handler's, a process tool's, an upstream MCP
    /// tool's) is decided by the core before it is sent here.
    pub fn listener(&self) -> Option<harnessweaver_core::progress::ProgressListener> {
        self.progress.then(|| harnessweaver_core::progress::ProgressListener(Arc::new(ProgressToCaller(self.sink.clone()))))
    }
}

/// Reports the core relayed, to the task serving the caller.
struct ProgressToCaller(RelaySink);

impl harnessweaver_core::progress::ProgressSink for ProgressToCaller {
    fn progress(&self, event: harnessweaver_core::progress::ProgressEvent) {
        let _ = self.0.send(RelayEvent::Progress { progress: event.progress, total: event.total, message: event.message });
    }
}

/// The relay of one call: its ticket (for the core's decisions) and the
/// channel to the task serving its caller.
pub struct TicketRelay {
    runtime: Arc<dyn HostRuntime>,
    ticket: Ticket,
    sink: RelaySink,
}

impl TicketRelay {
    /// The relay of `ticket`'s call, sending to `sink`.
    pub fn new(runtime: Arc<dyn HostRuntime>, ticket: Ticket, sink: RelaySink) -> Self {
        Self { runtime, ticket, sink }
    }
}

// What a tool relays is its output: decided and cleaned by the core before it
// is queued (progress by the call's progress rule, a log message by step 9
// for a notification); one that cannot be cleaned is withheld.
impl CallRelay for TicketRelay {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>, echoed: &[String]) {
        // Decided by the core like any report of the call (core/src/progress.rs:
        // masked, sanitized, ordered, bounded); what the connection handed the
        // upstream is masked first, as step 9 masks it in the result.
        let mask = harnessweaver_core::sanitize::SecretMask::new(echoed);
        let message = message.map(|m| if mask.is_empty() { m } else { mask.mask(&m).0.into_owned() });
        let _ = self.ticket.progress().report(progress, total, message.as_deref());
    }

    fn log(&self, params: Value, echoed: &[String]) {
        if let Ok(clean) = self.runtime.runtime().governor().relay_log(&self.ticket, &params, echoed) {
            let _ = self.sink.send(RelayEvent::Log(clean.params));
        }
    }

    fn request(&self, kind: RelayKind, params: Value) -> oneshot::Receiver<Result<Value, String>> {
        let (reply, answer) = oneshot::channel();
        let include_context = params.get("includeContext").and_then(Value::as_str);
        match self.runtime.runtime().governor().relay(&self.ticket, kind, include_context) {
            Err(denial) => {
                let _ = reply.send(Err(format!("[{}] {}", denial.code, denial.message)));
            }
            Ok(()) => {
                if let Err(mpsc::error::SendError(RelayEvent::Request { reply, .. })) = self.sink.send(RelayEvent::Request { kind, params, reply }) {
                    let _ = reply.send(Err("the caller is gone".into()));
                }
            }
        }
        answer
    }
}

/// A session's `logging/setLevel`, as the rank of the lowest level relayed
/// (none set: every level is).
pub type LogLevel = Arc<Mutex<Option<usize>>>;

/// The rank of a log level (`debug` 0 … `emergency` 7); unknown is `debug`.
pub fn rank(level: &Value) -> usize {
    const ORDER: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
    level.as_str().and_then(|l| ORDER.iter().position(|o| *o == l)).unwrap_or(0)
}

fn min_rank(level: &LogLevel) -> usize {
    level.lock().unwrap_or_else(std::sync::PoisonError::into_inner).unwrap_or(0)
}

/// What the caller's client can be sent.
#[derive(Debug, Clone, Default)]
pub struct CallerSide {
    /// The progress token of the caller's request.
    pub progress_token: Option<ProgressToken>,
    /// The session's log level.
    pub log_level: LogLevel,
}

/// Whether the client of `peer` declared `kind`'s capability.
pub fn client_supports(peer: &Peer<RoleServer>, kind: RelayKind) -> bool {
    let Some(info) = peer.peer_info() else { return false };
    match kind {
        RelayKind::Sampling => info.capabilities.sampling.is_some(),
        RelayKind::Elicitation => info.capabilities.elicitation.is_some(),
        RelayKind::Roots => info.capabilities.roots.is_some(),
    }
}

/// Sends one allowed request to the client and returns its result as JSON.
pub async fn ask_client(peer: &Peer<RoleServer>, kind: RelayKind, params: Value) -> Result<Value, String> {
    if !client_supports(peer, kind) {
        return Err(format!("the caller's client does not support `{}`", kind.method()));
    }
    let request: ServerRequest = serde_json::from_value(json!({"method": kind.method(), "params": params}))
        .map_err(|e| format!("`{}` params are not valid: {e}", kind.method()))?;
    match peer.send_request(request).await {
        Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
        Err(rmcp::ServiceError::McpError(e)) => Err(format!("the caller's client answered an error: {}", e.message)),
        Err(e) => Err(format!("the caller's client did not answer: {e}")),
    }
}

/// Forwards one event to the caller.
#[expect(deprecated, reason = "logging is deprecated by SEP-2577 (2026-07-28), still part of 2025-11-25")]
pub(super) async fn forward(peer: &Peer<RoleServer>, side: &CallerSide, event: RelayEvent) {
    match event {
        RelayEvent::Progress { progress, total, message } => {
            let Some(token) = &side.progress_token else { return };
            let params = json!({"progressToken": token, "progress": progress, "total": total, "message": message});
            if let Ok(params) = serde_json::from_value(strip_nulls(params)) {
                let _ = peer.notify_progress(params).await;
            }
        }
        RelayEvent::Log(params) => {
            if rank(params.get("level").unwrap_or(&Value::Null)) < min_rank(&side.log_level) {
                return;
            }
            if let Ok(params) = serde_json::from_value(params) {
                let _ = peer.notify_logging_message(params).await;
            }
        }
        RelayEvent::Request { kind, params, mut reply } => {
            // The upstream may give up (its call timed out) before the client answers.
            let answer = tokio::select! {
                answer = ask_client(peer, kind, params) => answer,
                () = reply.closed() => return,
            };
            let _ = reply.send(answer);
        }
    }
}

fn strip_nulls(mut value: Value) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.retain(|_, v| !v.is_null());
    }
    value
}

/// Runs `work` (the call, on a worker thread) while forwarding what it relays
/// to the caller on `peer`, from this task (so a streamable-HTTP server puts
/// it on the stream of the caller's own request); returns the call's answer.
pub async fn pump<T: Send + 'static>(
    peer: &Peer<RoleServer>,
    side: &CallerSide,
    work: impl FnOnce(Relays) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let (sink, mut events) = mpsc::unbounded_channel();
    let relays = Relays { sink, progress: side.progress_token.is_some() };
    let mut join = tokio::task::spawn_blocking(move || work(relays));
    loop {
        tokio::select! {
            done = &mut join => {
                // What the call relayed before it ended still goes out, in order.
                while let Ok(event) = events.try_recv() {
                    forward(peer, side, event).await;
                }
                return done;
            }
            Some(event) = events.recv() => forward(peer, side, event).await,
        }
    }
}
