//! Relays at 2026-07-28 (issue 22): the protocol has no server requests, so
//! what an upstream MCP tool asks of the caller's client mid-call
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`) goes to
//! the client as an `InputRequiredResult` answering its `tools/call`.
//!
//! The upstream call is held open meanwhile: its worker waits on the
//! relayed request's answer, and the call (worker, relay channel, the
//! requests asked) is kept here under a fresh id. The client retries the
//! `tools/call` with `inputResponses` (one per `inputRequests` key) and the
//! `requestState`; the answers go back upstream and the call goes on, to
//! its result or to the next `InputRequiredResult` (a new id and state each
//! round). Each request was decided by the core first
//! ([`Governor::relay`](harnessweaver_core::governor::Governor::relay):
//! `relay_denied` in a private untrusted run), and a request for a
//! capability the request's `_meta` does not declare is answered upstream
//! with an error, never put to the client.
//!
//! `requestState` is sealed with HMAC-SHA256 under a key drawn per gateway
//! process, over the held call's id, its expiry, a digest of the call (tool
//! and canonical arguments) and one of the caller (principal and tenant).
//! A state that fails is `-32602` with `data.reason`: `tampered` (not ours,
//! or altered), `other_caller`, `other_call`, `expired`, or `gone` (already
//! resumed, or its call ended and was dropped).
//!
//! Keys of `inputRequests`: an upstream request may name its own in its
//! `_meta` (`harnessweaver/input_key`, letters, digits, `_`, `-`, `.`);
//! otherwise `sampling_1`, `elicitation_2`, .... Answers a client sends with
//! a first call (no `requestState`) answer the requests of that name the
//! upstream then makes. Requests the upstream sends at once (within
//! [`GATHER`] of each other) are asked together.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinHandle};

use harnessweaver_core::canonical;
use harnessweaver_core::governor::RelayKind;
use harnessweaver_core::sha256_tagged;

use super::calls::CallRequest;
use super::relay::{CallerSide, RelayEvent};
use super::{Gateway, GatewayResult, Identity};

/// How every sealed `requestState` begins.
pub const STATE_PREFIX: &str = "hw1.";

/// The `_meta` key an upstream request may name its `inputRequests` key with.
pub use crate::transport::relay::INPUT_KEY_META;

/// How long a held call waits for its client's retry.
pub const HOLD_MS: u64 = 5 * 60 * 1000;

/// Requests an upstream sends within this of each other are asked together.
pub const GATHER: std::time::Duration = std::time::Duration::from_millis(50);

/// One request put to the client, waiting for its answer.
struct Asked {
    key: String,
    kind: RelayKind,
    params: Value,
    reply: oneshot::Sender<Result<Value, String>>,
}

/// A call held open while its client answers.
pub struct HeldCall {
    join: JoinHandle<GatewayResult>,
    events: mpsc::UnboundedReceiver<RelayEvent>,
    asked: Vec<Asked>,
    call_digest: String,
    caller_digest: String,
    expires_ms: u64,
    keys_used: usize,
}

/// The held calls of one gateway process, and the key their states are sealed with.
pub struct Held {
    key: [u8; 32],
    calls: Mutex<HashMap<String, HeldCall>>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").finish_non_exhaustive()
    }
}

impl Default for Held {
    fn default() -> Self {
        Self::new()
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // No randomness: a key nobody else knows is still needed; fail closed
    // to a key of the process's time and address, never a constant.
    if getrandom::fill(&mut bytes).is_err() {
        let seed = format!("{:?}{:p}", std::time::SystemTime::now(), &bytes);
        let digest = Sha256::digest(seed.as_bytes());
        for (b, d) in bytes.iter_mut().zip(digest.iter().cycle()) {
            *b = *d;
        }
    }
    bytes
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// HMAC-SHA256 (RFC 2104) with a key of at most one block (64 bytes).
fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        if let (Some(a), Some(b)) = (ipad.get_mut(i), opad.get_mut(i)) {
            *a ^= k;
            *b ^= k;
        }
    }
    let inner = Sha256::new().chain_update(ipad).chain_update(message).finalize();
    Sha256::new().chain_update(opad).chain_update(inner).finalize().into()
}

/// Equal in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a `requestState` was refused.
fn refused(reason: &str, message: &str) -> ErrorData {
    ErrorData::invalid_params(format!("requestState refused: {message}"), Some(json!({"reason": reason})))
}

fn call_digest(call: &CallRequest) -> String {
    let args = canonical::to_string(&call.args).unwrap_or_default();
    sha256_tagged(format!("{}:{}\n{args}", call.tool.len(), call.tool).as_bytes())
}

fn caller_digest(who: &Identity) -> String {
    let tenant = who.tenant.as_deref().map_or_else(|| "-".to_string(), |t| format!("{}:{t}", t.len()));
    sha256_tagged(format!("{}:{}\n{tenant}", who.principal.id.len(), who.principal.id).as_bytes())
}

impl Held {
    /// An empty table with a fresh key.
    pub fn new() -> Self {
        Self { key: random_bytes(), calls: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HeldCall>> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn seal(&self, id: &str, held: &HeldCall) -> String {
        let payload = json!({"id": id, "exp": held.expires_ms, "call": held.call_digest, "caller": held.caller_digest}).to_string();
        let payload = hex(payload.as_bytes());
        let tag = hmac(&self.key, format!("harnessweaver requestState v1\n{payload}").as_bytes());
        format!("{STATE_PREFIX}{payload}.{}", hex(&tag))
    }

    /// The held call `state` names, taken out of the table, if `state` is
    /// sealed here, for this call and caller, and not expired.
    fn open(&self, state: &str, call: &CallRequest, now_ms: u64) -> Result<HeldCall, ErrorData> {
        let tampered = || refused("tampered", "it is not one this gateway issued, or it was altered");
        let (payload_hex, tag_hex) = state.strip_prefix(STATE_PREFIX).and_then(|s| s.split_once('.')).ok_or_else(tampered)?;
        let tag = unhex(tag_hex).ok_or_else(tampered)?;
        let expected = hmac(&self.key, format!("harnessweaver requestState v1\n{payload_hex}").as_bytes());
        if !same(&tag, &expected) {
            return Err(tampered());
        }
        let payload: Value = unhex(payload_hex).and_then(|p| serde_json::from_slice(&p).ok()).ok_or_else(tampered)?;
        let field = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        if field("caller") != caller_digest(&call.who) {
            return Err(refused("other_caller", "it belongs to another caller's call"));
        }
        if field("call") != call_digest(call) {
            return Err(refused("other_call", "it belongs to another call (a different tool or arguments)"));
        }
        if payload.get("exp").and_then(Value::as_u64).unwrap_or(0) <= now_ms {
            return Err(refused("expired", "the call waited too long for its answers; call the tool again"));
        }
        let mut calls = self.lock();
        calls.retain(|_, h| h.expires_ms > now_ms);
        calls.remove(&field("id")).ok_or_else(|| refused("gone", "its call was already resumed or has ended; call the tool again"))
    }

    /// Keeps `held` until its client retries; the `InputRequiredResult` that asks.
    fn hold(&self, mut held: HeldCall, now_ms: u64) -> Value {
        let id = hex(&random_bytes::<16>());
        held.expires_ms = now_ms.saturating_add(HOLD_MS);
        let state = self.seal(&id, &held);
        let requests: Map<String, Value> =
            held.asked.iter().map(|a| (a.key.clone(), json!({"method": a.kind.method(), "params": a.params}))).collect();
        let mut calls = self.lock();
        calls.retain(|_, h| h.expires_ms > now_ms);
        calls.insert(id, held);
        json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
    }
}

/// What a held call came to this round.
#[derive(Debug)]
pub enum Pumped {
    /// Its result.
    Done(GatewayResult),
    /// The `InputRequiredResult` (JSON) asking the client.
    Ask(Value),
}

/// The client of this round: where progress and logs go, what it declared,
/// and the answers it sent.
pub struct Client<'a> {
    /// The request's peer.
    pub peer: &'a Peer<RoleServer>,
    /// Its progress token and log level.
    pub side: &'a CallerSide,
    /// Its declared capabilities (`_meta`).
    pub capabilities: Value,
    /// Its `inputResponses`.
    pub responses: BTreeMap<String, Value>,
}

/// Whether `answer` is a result of `kind`'s request.
#[expect(deprecated, reason = "sampling and roots are deprecated by SEP-2577, still part of 2026-07-28")]
fn fits(kind: RelayKind, answer: &Value) -> bool {
    let value = answer.clone();
    answer.is_object()
        && match kind {
            RelayKind::Sampling => serde_json::from_value::<rmcp::model::CreateMessageResult>(value).is_ok(),
            RelayKind::Elicitation => serde_json::from_value::<rmcp::model::ElicitResult>(value).is_ok(),
            RelayKind::Roots => serde_json::from_value::<rmcp::model::ListRootsResult>(value).is_ok(),
        }
}

/// The key of a request (its own, when it names a fit one not yet asked),
/// and its params without that name.
fn key_of(held: &mut HeldCall, kind: RelayKind, mut params: Value) -> (String, Value) {
    let named = params.get("_meta").and_then(|m| m.get(INPUT_KEY_META)).and_then(Value::as_str).map(str::to_string);
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(INPUT_KEY_META);
        if meta.is_empty() {
            params.as_object_mut().map(|p| p.remove("_meta"));
        }
    }
    held.keys_used += 1;
    let fit = |k: &String| {
        (1..=64).contains(&k.len())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && !held.asked.iter().any(|a| &a.key == k)
    };
    let key = named.filter(fit).unwrap_or_else(|| format!("{}_{}", kind.as_str(), held.keys_used));
    (key, params)
}

/// Takes one event of the call: progress and logs go to the client; a
/// request is asked (or refused, without the capability).
async fn take(held: &mut HeldCall, client: &Client<'_>, event: RelayEvent) {
    match event {
        RelayEvent::Request { kind, params, reply } => {
            if client.capabilities.get(kind.as_str()).is_none_or(Value::is_null) {
                let _ = reply.send(Err(format!("the caller's client did not declare `{}` (its request's _meta)", kind.as_str())));
                return;
            }
            let (key, params) = key_of(held, kind, params);
            held.asked.push(Asked { key, kind, params, reply });
        }
        other => super::relay::forward(client.peer, client.side, other).await,
    }
}

/// Runs the held call on: answers what it asked from the client's
/// responses, then waits for its next requests (asked together) or its end.
async fn drive(gateway: &Gateway, mut held: HeldCall, client: &Client<'_>) -> Result<Pumped, JoinError> {
    let mut responses = client.responses.clone();
    loop {
        let mut waiting = Vec::new();
        for asked in std::mem::take(&mut held.asked) {
            match responses.remove(&asked.key).filter(|answer| fits(asked.kind, answer)) {
                Some(answer) => {
                    let _ = asked.reply.send(Ok(answer));
                }
                None => waiting.push(asked),
            }
        }
        held.asked = waiting;
        // The upstream may have given up on a request (its call timed out).
        held.asked.retain(|a| !a.reply.is_closed());
        if !held.asked.is_empty() {
            let now = gateway.runtime().governor().clock().now_ms();
            return Ok(Pumped::Ask(gateway.held.hold(held, now)));
        }
        tokio::select! {
            done = &mut held.join => {
                while let Ok(event) = held.events.try_recv() {
                    match event {
                        RelayEvent::Request { reply, .. } => { let _ = reply.send(Err("the call has ended".into())); }
                        other => super::relay::forward(client.peer, client.side, other).await,
                    }
                }
                return Ok(Pumped::Done(done?));
            }
            Some(event) = held.events.recv() => {
                let asking = matches!(event, RelayEvent::Request { .. });
                take(&mut held, client, event).await;
                // What the upstream asks at once is asked together.
                if asking {
                    loop {
                        tokio::select! {
                            Some(event) = held.events.recv() => take(&mut held, client, event).await,
                            () = tokio::time::sleep(GATHER) => break,
                        }
                    }
                }
            }
        }
    }
}

/// Starts `call` in `run` (its worker relaying to the held call's channel)
/// and drives it to its result or its first question.
pub async fn start(
    gateway: Arc<Gateway>,
    call: CallRequest,
    run: String,
    approval: Option<String>,
    client: &Client<'_>,
) -> Result<Pumped, JoinError> {
    let (sink, events) = mpsc::unbounded_channel();
    let (call_digest, caller_digest) = (call_digest(&call), caller_digest(&call.who));
    let g = Arc::clone(&gateway);
    // The call's progress reaches the caller when it gave a progress token (as in `relay::pump`).
    let relays = super::relay::Relays { sink, progress: client.side.progress_token.is_some() };
    let join = tokio::task::spawn_blocking(move || super::calls::execute(&g, &call, run, approval, Some(relays)));
    let held = HeldCall { join, events, asked: Vec::new(), call_digest, caller_digest, expires_ms: 0, keys_used: 0 };
    drive(&gateway, held, client).await
}

/// A retry carrying `state`: the held call, resumed with the client's answers.
pub async fn resume(gateway: Arc<Gateway>, call: &CallRequest, state: &str, client: &Client<'_>) -> Result<Result<Pumped, ErrorData>, JoinError> {
    let now = gateway.runtime().governor().clock().now_ms();
    let held = match gateway.held.open(state, call, now) {
        Ok(held) => held,
        Err(e) => return Ok(Err(e)),
    };
    drive(&gateway, held, client).await.map(Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessweaver_core::governor::Principal;

    fn call(tool: &str, args: Value, principal: &str, tenant: Option<&str>) -> CallRequest {
        let who = Identity { principal: Principal::new(principal), tenant: tenant.map(str::to_string) };
        CallRequest { who, session: None, tool: tool.into(), args, approval: None, capabilities: Some(json!({})) }
    }

    fn held_call(of: &CallRequest) -> HeldCall {
        let join = tokio::spawn(async { GatewayResult { result: json!({}), model: String::new(), waiting_on: None } });
        let (_, events) = mpsc::unbounded_channel();
        HeldCall { join, events, asked: Vec::new(), call_digest: call_digest(of), caller_digest: caller_digest(&of.who), expires_ms: 0, keys_used: 0 }
    }

    fn reason(held: &Held, state: &str, call: &CallRequest, now: u64) -> String {
        match held.open(state, call, now) {
            Ok(_) => "opened".into(),
            Err(e) => e.data.and_then(|d| d.get("reason").and_then(Value::as_str).map(str::to_string)).unwrap_or_default(),
        }
    }

    #[tokio::test]
    async fn a_state_opens_once_for_its_call_and_caller_before_it_expires() {
        let table = Held::new();
        let mine = call("pay", json!({"amount": 5}), "alice", Some("acme"));
        let asked = table.hold(held_call(&mine), 1_000);
        let state = asked.get("requestState").and_then(Value::as_str).unwrap_or_default().to_string();
        assert!(state.starts_with(STATE_PREFIX));
        // Another tenant, principal, tool or argument, a changed byte, another
        // gateway's key, or too late: refused, and the call stays held.
        assert_eq!(reason(&table, &state, &call("pay", json!({"amount": 5}), "alice", Some("other")), 2_000), "other_caller");
        assert_eq!(reason(&table, &state, &call("pay", json!({"amount": 5}), "bob", Some("acme")), 2_000), "other_caller");
        assert_eq!(reason(&table, &state, &call("pay", json!({"amount": 6}), "alice", Some("acme")), 2_000), "other_call");
        assert_eq!(reason(&table, &state, &call("refund", json!({"amount": 5}), "alice", Some("acme")), 2_000), "other_call");
        let flipped = format!("{}{}", &state[..state.len() - 1], if state.ends_with('0') { '1' } else { '0' });
        assert_eq!(reason(&table, &flipped, &mine, 2_000), "tampered");
        assert_eq!(reason(&Held::new(), &state, &mine, 2_000), "tampered");
        assert_eq!(reason(&table, &state, &mine, 1_000 + HOLD_MS), "expired");
        assert_eq!(reason(&table, &state, &mine, 2_000), "opened");
        assert_eq!(reason(&table, &state, &mine, 2_000), "gone");
    }

    #[test]
    fn hmac_matches_rfc_4231_and_is_keyed() {
        // RFC 4231 test case 2.
        let tag = hmac(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex(&tag), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        let a = hmac(&[1u8; 32], b"m");
        assert_ne!(a, hmac(&[2u8; 32], b"m"));
        assert_ne!(a, hmac(&[1u8; 32], b"n"));
        assert!(same(&a, &hmac(&[1u8; 32], b"m")));
        assert_eq!(unhex(&hex(&a)).as_deref(), Some(&a[..]));
        assert!(unhex("abc").is_none() && unhex("zz").is_none());
    }
}
