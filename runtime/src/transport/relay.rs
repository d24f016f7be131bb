//! Relays of the call running on this thread (issue 22): what an upstream
//! MCP tool sends back while it runs (progress, log messages) and what it
//! asks of the caller's client (sampling, elicitation), handed to whoever
//! serves the caller (the MCP gateway). The gateway sets the relay around
//! [`Governor::invoke`](harnessweaver_core::governor::Governor::invoke) with
//! [`with_relay`] (or, when a host runs the call itself, [`register`]s it by
//! call id); the `mcp` transport picks it up with [`for_call`] and routes the
//! upstream's messages of that call to it only.
//!
//! Which call an upstream message belongs to: a progress notification by its
//! progress token (one per `tools/call`, exact); a sampling, elicitation or
//! roots request by the progress token its `_meta` names, when it names the
//! token of a call in flight (exact; an upstream may echo its call's token);
//! a log message, or a request naming no token (MCP gives them no call id
//! over stdio), to the one call of that connection in flight, and to nobody when there are several:
//! the log message is dropped and the request answered with an error, never
//! guessed, so no session ever sees another's messages.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use harnessweaver_core::governor::RelayKind;
use serde_json::Value;

/// What the caller's side does with a call's relays. Called from the MCP
/// transport's runtime: every method returns at once.
///
/// What a notification carries is the tool's output, and the relay has the
/// core decide it as such (progress: `core/src/progress.rs`; a log message:
/// `Governor::relay_log`); `echoed` are the values the
/// connection handed the upstream (its `env` and `headers_env` values), whose
/// echoes are masked.
pub trait CallRelay: Send + Sync {
    /// A progress notification (`progress`, `total`, `message`) of the call.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>, echoed: &[String]);
    /// A log message of the call (the `notifications/message` params: `level`, `logger`, `data`).
    fn log(&self, params: Value, echoed: &[String]);
    /// A sampling, elicitation or roots request of the call (its params): the
    /// client's result, or an error message for the upstream.
    fn request(&self, kind: RelayKind, params: Value) -> tokio::sync::oneshot::Receiver<Result<Value, String>>;
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn CallRelay>>> = const { RefCell::new(None) };
}

/// Runs `f` with `relay` as this thread's call relay (restored afterwards).
pub fn with_relay<R>(relay: Option<Arc<dyn CallRelay>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn CallRelay>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), relay));
    let _restore = Restore(previous);
    f()
}

/// The relay of the call running on this thread, if its caller set one.
pub fn current() -> Option<Arc<dyn CallRelay>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Relays by call id, for calls whose transport runs on a thread the relay's
/// owner never sees: a host that runs each call itself (Node's `serveMcp`
/// hands the call to the JavaScript thread, which runs its transport on
/// libuv's pool) registers the call's relay when the call begins.
static BY_CALL: std::sync::LazyLock<Mutex<HashMap<String, Arc<dyn CallRelay>>>> = std::sync::LazyLock::new(Mutex::default);

/// A call's relay registered by id ([`register`]); dropping it ends the registration.
#[derive(Debug)]
pub struct Registered(String);

impl Drop for Registered {
    fn drop(&mut self) {
        BY_CALL.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.0);
    }
}

/// Registers `relay` as the relay of call `call_id`, wherever its transport runs, until the guard drops.
pub fn register(call_id: &str, relay: Arc<dyn CallRelay>) -> Registered {
    BY_CALL.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(call_id.to_string(), relay);
    Registered(call_id.to_string())
}

/// The relay of call `call_id`: the one this thread runs with ([`with_relay`]), or the one registered for it.
pub fn for_call(call_id: &str) -> Option<Arc<dyn CallRelay>> {
    current().or_else(|| BY_CALL.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(call_id).cloned())
}

/// The `_meta` key an upstream request may name itself with (the key of
/// its `inputRequests` entry when the gateway asks a 2026-07-28 client).
pub const INPUT_KEY_META: &str = "harnessweaver/input_key";

/// How long a call's entry outlives its answer, until the next call of the
/// connection starts. rmcp hands each notification to a task of its own, so
/// a log message the server sent just before its answer may be handled just
/// after it: the ended call still takes it. A call that starts forgets the
/// ended ones (so calls one after another each get their own messages); a
/// message of an ended call handled after that is the one window where
/// attribution could err, as narrow as a task's scheduling delay.
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// One call of the connection.
struct Entry {
    /// The call's relay (`None`: the caller relays nothing).
    relay: Option<Arc<dyn CallRelay>>,
    /// When its answer came.
    ended: Option<std::time::Instant>,
}

/// The calls in flight on one upstream connection.
#[derive(Default)]
pub struct InFlight {
    /// Progress token → the call.
    calls: HashMap<String, Entry>,
    /// Calls being sent, whose token is not known yet (by a number of their
    /// own), with their relays: a message without a call id sent before the
    /// sender learns the token still reaches the only call.
    starting: Vec<(u64, Option<Arc<dyn CallRelay>>)>,
    /// The number of the next call sent.
    next: u64,
    /// Progress that came for a token not yet known while calls were being
    /// sent: the server may answer before the sender learns its token. Handed
    /// to the call when it is; bounded by [`EARLY_MAX`] and forgotten when no
    /// call is starting.
    early: Vec<(String, Progress)>,
    /// The values the connection handed the server (its `env` or
    /// `headers_env` values): masked in what it relays.
    echoed: Arc<[String]>,
    /// Counts the calls whose send ended ([`started`], [`not_started`]): a
    /// request naming a token not known yet waits on it (see
    /// [`Upstream::attribute`]).
    sent: Sent,
}

/// A counter that can be waited on for its next change.
struct Sent(tokio::sync::watch::Sender<u64>);

impl Default for Sent {
    fn default() -> Self {
        Self(tokio::sync::watch::Sender::new(0))
    }
}

impl Sent {
    fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A progress notification's `progress`, `total` and `message`.
type Progress = (f64, Option<f64>, Option<String>);

/// How long a request naming a call's token waits, in all, for the calls
/// being sent to learn their tokens ([`Upstream::attribute`]).
pub const TOKEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// At most this many early progress notifications are kept per connection.
pub const EARLY_MAX: usize = 256;

impl InFlight {
    /// Forgets the calls that ended more than [`LINGER`] ago.
    fn prune(&mut self) {
        let now = std::time::Instant::now();
        self.calls.retain(|_, e| e.ended.is_none_or(|at| now.duration_since(at) < LINGER));
    }
}

/// The shared table of one connection's calls.
pub type InFlightTable = Arc<Mutex<InFlight>>;

fn lock(table: &InFlightTable) -> std::sync::MutexGuard<'_, InFlight> {
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A call about to be sent, relaying to `relay`: known before its token is,
/// so no message is attributed to another call meanwhile, and a log message
/// the server sends before the request's send has returned still reaches it.
/// Returns the number [`started`] and [`not_started`] take.
pub fn starting(table: &InFlightTable, relay: Option<Arc<dyn CallRelay>>) -> u64 {
    let mut t = lock(table);
    t.calls.retain(|_, e| e.ended.is_none());
    let number = t.next;
    t.next = t.next.wrapping_add(1);
    t.starting.push((number, relay));
    number
}

/// The call sent as `number` has `token`.
pub fn started(table: &InFlightTable, number: u64, token: String) {
    let mut t = lock(table);
    let at = t.starting.iter().position(|(n, _)| *n == number);
    let relay = at.and_then(|i| t.starting.remove(i).1);
    t.calls.retain(|_, e| e.ended.is_none());
    let (early, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut t.early).into_iter().partition(|(k, _)| *k == token);
    t.early = if t.starting.is_empty() { Vec::new() } else { rest };
    t.calls.insert(token, Entry { relay: relay.clone(), ended: None });
    t.sent.bump();
    let echoed = Arc::clone(&t.echoed);
    drop(t);
    if let Some(relay) = relay {
        for (_, (progress, total, message)) in early {
            relay.progress(progress, total, message, &echoed);
        }
    }
}

/// The call `number` could not be sent.
pub fn not_started(table: &InFlightTable, number: u64) {
    let mut t = lock(table);
    t.starting.retain(|(n, _)| *n != number);
    if t.starting.is_empty() {
        t.early.clear();
    }
    t.sent.bump();
}

/// Hands a progress notification to the call of its token; one for a token
/// not known yet, while a call is being sent, waits for [`started`].
fn progress(table: &InFlightTable, token: String, progress: Progress) {
    let mut t = lock(table);
    if let Some(entry) = t.calls.get(&token) {
        let (relay, echoed) = (entry.relay.clone(), Arc::clone(&t.echoed));
        drop(t);
        if let Some(relay) = relay {
            relay.progress(progress.0, progress.1, progress.2, &echoed);
        }
    } else if !t.starting.is_empty() && t.early.len() < EARLY_MAX {
        t.early.push((token, progress));
    }
}

/// The call of `token` got its answer (its entry lingers, see [`LINGER`]).
pub fn ended(table: &InFlightTable, token: &str) {
    let mut t = lock(table);
    if let Some(entry) = t.calls.get_mut(token) {
        entry.ended = Some(std::time::Instant::now());
    }
    t.prune();
}

/// Who an upstream message without a call id belongs to.
pub enum Attribution {
    /// The only call in flight, which relays.
    Call(Arc<dyn CallRelay>),
    /// No call in flight, or the only one relays nothing.
    Nobody,
    /// Several calls are in flight: the message cannot be attributed.
    Several,
}

/// The call of the connection a message without a call id belongs to.
pub fn sole(table: &InFlightTable) -> Attribution {
    let mut t = lock(table);
    t.prune();
    if t.calls.len() + t.starting.len() > 1 {
        return Attribution::Several;
    }
    let relay = t.calls.values().next().map(|e| &e.relay).or_else(|| t.starting.first().map(|(_, r)| r));
    match relay.cloned().flatten() {
        Some(relay) => Attribution::Call(relay),
        None => Attribution::Nobody,
    }
}

/// The client side of one upstream connection: declares sampling and
/// elicitation to the server and routes what it sends during a call to that
/// call's relay.
#[derive(Clone)]
pub struct Upstream {
    /// The connection's calls in flight.
    pub calls: InFlightTable,
}

impl Upstream {
    /// A client for a new connection with its own table, which handed the
    /// server `echoed` (masked in what it relays).
    pub fn new(echoed: &[String]) -> Self {
        Self { calls: Arc::new(Mutex::new(InFlight { echoed: echoed.into(), ..InFlight::default() })) }
    }

    /// The call a request of the upstream belongs to: the call in flight
    /// whose progress token its `_meta` names (exact), else the only call of
    /// the connection in flight.
    /// The call a request belongs to: the one its progress token names, or
    /// the only one in flight. A request may come before the sender of its
    /// call has learnt the call's token (the server answered faster than the
    /// send returned): while calls are being sent, it waits for each to be
    /// known (at most [`TOKEN_WAIT`] in all) rather than be taken for a
    /// message of several calls.
    async fn attribute(&self, meta: &rmcp::model::RequestMetaObject) -> Attribution {
        if let Some(token) = meta.get_progress_token().map(|token| token_text(&token)) {
            let deadline = tokio::time::Instant::now() + TOKEN_WAIT;
            loop {
                let mut sent = {
                    let t = lock(&self.calls);
                    if let Some(entry) = t.calls.get(&token) {
                        return entry.relay.clone().map_or(Attribution::Nobody, Attribution::Call);
                    }
                    if t.starting.is_empty() {
                        break;
                    }
                    // Subscribed under the lock: a send that ends after it wakes this.
                    t.sent.0.subscribe()
                };
                if tokio::time::timeout_at(deadline, sent.changed()).await.is_err() {
                    break;
                }
            }
        }
        sole(&self.calls)
    }

    async fn relay_request(&self, kind: RelayKind, mut params: Value, meta: &rmcp::model::RequestMetaObject) -> Result<Value, rmcp::ErrorData> {
        let relay = match self.attribute(meta).await {
            Attribution::Call(relay) => relay,
            Attribution::Nobody => return Err(rmcp::ErrorData::invalid_request(format!("`{}` is not relayed for this call", kind.method()), None)),
            Attribution::Several => {
                return Err(rmcp::ErrorData::invalid_request(
                    format!("`{}` refused: several calls are running on this connection and the request names none of them", kind.method()),
                    None,
                ))
            }
        };
        // The name the upstream gave its request (the gateway's
        // `inputRequests` key at 2026-07-28) rides in the params' `_meta`.
        if let (Some(key), Some(p)) = (meta.get(INPUT_KEY_META), params.as_object_mut()) {
            let slot = p.entry("_meta").or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(m) = slot.as_object_mut() {
                m.insert(INPUT_KEY_META.into(), key.clone());
            }
        }
        match relay.request(kind, params).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(rmcp::ErrorData::invalid_request(message, None)),
            Err(_) => Err(rmcp::ErrorData::internal_error("the call ended before its client answered", None)),
        }
    }
}

impl Upstream {
    /// [`Upstream::relay_request`] from and to the SDK's types.
    async fn relay_typed<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        kind: RelayKind,
        params: P,
        context: &rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<R, rmcp::ErrorData> {
        let params = serde_json::to_value(params).map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let value = self.relay_request(kind, params, &context.meta).await?;
        serde_json::from_value(value)
            .map_err(|_| rmcp::ErrorData::internal_error(format!("the client's answer to `{}` has the wrong shape", kind.method()), None))
    }
}

impl Default for Upstream {
    fn default() -> Self {
        Self::new(&[])
    }
}

fn token_text(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(&token.0).unwrap_or_default()
}

/// The text of a progress token as [`InFlight`] keys it.
pub fn progress_key(token: &rmcp::model::ProgressToken) -> String {
    token_text(token)
}

// Sampling and logging are deprecated by SEP-2577 (2026-07-28), still what
// 2025-11-25 servers send.
#[expect(deprecated, reason = "relaying 2025-11-25 sampling and logging")]
impl rmcp::ClientHandler for Upstream {
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.relay_typed(RelayKind::Sampling, params, &context).await
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.relay_typed(RelayKind::Elicitation, params, &context).await
    }

    /// Issue 22: relayed like sampling during a call; outside any call (a
    /// server asking at start-up) the gateway has no roots: an empty list.
    async fn list_roots(&self, context: rmcp::service::RequestContext<rmcp::RoleClient>) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        if matches!(self.attribute(&context.meta).await, Attribution::Nobody) {
            return Ok(rmcp::model::ListRootsResult::default());
        }
        self.relay_typed(RelayKind::Roots, serde_json::json!({}), &context).await
    }

    async fn on_progress(&self, params: rmcp::model::ProgressNotificationParam, _context: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        progress(&self.calls, token_text(&params.progress_token), (params.progress, params.total, params.message));
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        if let Attribution::Call(relay) = sole(&self.calls) {
            if let Ok(value) = serde_json::to_value(params) {
                let echoed = Arc::clone(&lock(&self.calls).echoed);
                relay.log(value, &echoed);
            }
        }
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        // Declared so upstream tools may ask; each request is decided per
        // call (the caller's client, the flow rules) and may be refused.
        if let Ok(caps) = serde_json::from_value(serde_json::json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {}})) {
            info.capabilities = caps;
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<f64>>);

    impl CallRelay for Recorder {
        fn progress(&self, progress: f64, _total: Option<f64>, _message: Option<String>, _echoed: &[String]) {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(progress);
        }
        fn log(&self, _params: Value, _echoed: &[String]) {}
        fn request(&self, _kind: RelayKind, _params: Value) -> tokio::sync::oneshot::Receiver<Result<Value, String>> {
            tokio::sync::oneshot::channel().1
        }
    }

    fn seen(recorder: &Recorder) -> Vec<f64> {
        recorder.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A request's `_meta` naming progress token `n`.
    fn naming(n: i64) -> rmcp::model::RequestMetaObject {
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(n)));
        meta
    }

    /// Which recorder an attribution reached (by a progress report through it).
    fn reached(attribution: Attribution, value: f64) -> bool {
        match attribution {
            Attribution::Call(relay) => {
                relay.progress(value, None, None, &[]);
                true
            }
            Attribution::Nobody | Attribution::Several => false,
        }
    }

    #[tokio::test]
    async fn a_request_naming_a_call_whose_send_has_not_returned_waits_for_it() {
        // Another call is in flight (a held call, say) while this one is being sent,
        // and the server asks before the send has returned the call's token.
        let upstream = Upstream::new(&[]);
        let (other, mine) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        let first = starting(&upstream.calls, Some(other.clone()));
        started(&upstream.calls, first, "0".into());
        let second = starting(&upstream.calls, Some(mine.clone()));
        let asking = upstream.clone();
        let waiter = tokio::spawn(async move { asking.attribute(&naming(1)).await });
        tokio::task::yield_now().await;
        started(&upstream.calls, second, "1".into());
        assert!(reached(waiter.await.unwrap_or(Attribution::Nobody), 3.0));
        assert_eq!((seen(&mine), seen(&other)), (vec![3.0], vec![]));
        // With no call being sent, an unknown token is no call's: the only-call rule decides.
        assert!(matches!(upstream.attribute(&naming(9)).await, Attribution::Several));
    }

    #[test]
    fn progress_that_comes_before_the_sender_knows_its_token_reaches_the_call() {
        let table: InFlightTable = Arc::default();
        let (a, b) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        let first = starting(&table, Some(a.clone()));
        let second = starting(&table, Some(b.clone()));
        progress(&table, "1".into(), (1.0, Some(2.0), None));
        progress(&table, "2".into(), (7.0, None, None));
        started(&table, first, "1".into());
        progress(&table, "1".into(), (2.0, Some(2.0), None));
        assert_eq!(seen(&a), vec![1.0, 2.0]);
        started(&table, second, "2".into());
        assert_eq!(seen(&b), vec![7.0]);
    }

    #[test]
    fn a_message_without_a_call_id_sent_while_the_only_call_is_being_sent_reaches_it() {
        let table: InFlightTable = Arc::default();
        let a = Arc::new(Recorder::default());
        let number = starting(&table, Some(a.clone()));
        assert!(matches!(sole(&table), Attribution::Call(r) if Arc::ptr_eq(&r, &(a.clone() as Arc<dyn CallRelay>))));
        // A second call being sent: nobody can be named.
        let other = starting(&table, None);
        assert!(matches!(sole(&table), Attribution::Several));
        not_started(&table, other);
        started(&table, number, "1".into());
        assert!(matches!(sole(&table), Attribution::Call(_)));
    }

    #[test]
    fn progress_of_an_unknown_token_with_no_call_starting_is_dropped() {
        let table: InFlightTable = Arc::default();
        let a = Arc::new(Recorder::default());
        progress(&table, "1".into(), (1.0, None, None));
        let number = starting(&table, Some(a.clone()));
        started(&table, number, "1".into());
        assert!(seen(&a).is_empty());
    }
}
