//! `serveMcp`: the core's MCP gateway serving a loaded harness whose native
//! tools are JavaScript functions.
//!
//! The gateway runs on its own thread. The Node binding calls its audit and
//! approval callbacks, and keeps its tickets, on the JavaScript thread only,
//! so each `tools/call` is handed over whole: `next()` (an async task on
//! libuv's pool) resolves with the call on the JavaScript thread, where
//! `governor.js` runs it as `call` does (begin, the handler, finish) and
//! hands the finished result back with `reply(id, text)`.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_runtime::gateway::server::{serve_harness, ServeError};
use harnessweaver_runtime::gateway::{CallExecutor, Gateway, GatewayResult};
use harnessweaver_core::Error as CoreError;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};

use super::governor::{principal, NativeRuntime};
use super::throw;

/// One call handed to JavaScript, and where its result goes.
pub struct Handover {
    call: Value,
    reply: Sender<String>,
}

/// A running gateway (native side); `serveMcp` in `governor.js` drives it.
#[napi]
pub struct NativeGateway {
    calls: Arc<Mutex<Receiver<Handover>>>,
    replies: Replies,
    next_id: Cell<u32>,
}

/// Where each handed-over call's result goes, by id.
type Replies = Arc<Mutex<HashMap<u32, Sender<String>>>>;

/// The finished result `governor.js` hands back: the addon's `R<json>\n<model text>`.
fn parse_ended(text: &str) -> Option<GatewayResult> {
    let body = text.strip_prefix('R')?;
    let (json_text, model) = body.split_once('\n').unwrap_or((body, ""));
    let result: Value = serde_json::from_str(json_text).ok()?;
    Some(GatewayResult { result, model: model.to_string(), waiting_on: None })
}

fn failed(tool: &str, message: &str) -> GatewayResult {
    let result = json!({"decision": "refused", "code": "handler_error", "step": "invoke", "message": message, "tool": tool});
    GatewayResult { model: format!("[tool call refused: handler_error] {message}"), result, waiting_on: None }
}

/// Starts serving `runtime`'s harness over MCP on a thread of its own: stdio
/// (as `principal`/`tenant`, else `spec.gateway.stdio`) or, with
/// `http: "127.0.0.1:PORT"`, streamable HTTP checked against
/// `spec.gateway.http`. `governor.js` then takes calls with `next()`.
#[napi(ts_args_type = "runtime: NativeRuntime, http?: string | null, principal?: unknown, tenant?: string | null")]
pub fn serve_mcp(env: Env, runtime: &NativeRuntime, http: Option<String>, principal_value: Option<Unknown<'_>>, tenant: Option<String>) -> Result<NativeGateway> {
    let bad = |message: String| throw(&env, &CoreError::InvalidArgument { code: "invalid_argument", message });
    let who = match principal_value {
        Some(p) if !matches!(p.get_type()?, ValueType::Undefined | ValueType::Null) => Some(principal(&env, &p)?),
        _ => None,
    };
    let http = match http {
        Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| bad(format!("http `{text}` is not an address like 127.0.0.1:8080")))?),
        None => None,
    };
    let (tx, rx) = channel::<Handover>();
    let tx = Mutex::new(tx);
    let executor: CallExecutor = Arc::new(move |ctx, tool, args| {
        let call = json!({
            "tool": tool,
            "args": args,
            "principal": ctx.principal.to_value(),
            "tenant": ctx.tenant,
            "runId": ctx.run_id,
            "approvalId": ctx.approval_id,
        });
        let (reply, answer) = channel();
        let sent = tx.lock().unwrap_or_else(PoisonError::into_inner).send(Handover { call, reply });
        if sent.is_err() {
            return failed(tool, "the JavaScript host stopped taking calls");
        }
        match answer.recv() {
            Ok(text) => parse_ended(&text).unwrap_or_else(|| failed(tool, "the JavaScript host answered something else than a finished call")),
            Err(_) => failed(tool, "the JavaScript host dropped the call"),
        }
    });
    let gateway = Arc::new(Gateway::with_executor(runtime.inner.clone(), executor));
    let spawned = std::thread::Builder::new().name("harnessweaver-gateway".into()).spawn(move || {
        let served = serve_harness(gateway, http, who, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at http://{addr}/mcp"));
        match served {
            Ok(()) => {}
            Err(ServeError::Usage(m) | ServeError::Failed(m)) => eprintln!("harnessweaver gateway: {m}"),
        }
        // Dropping the gateway closes the channel: `next()` resolves null.
    });
    if let Err(e) = spawned {
        return Err(bad(format!("cannot start the gateway thread: {e}")));
    }
    Ok(NativeGateway { calls: Arc::new(Mutex::new(rx)), replies: Arc::new(Mutex::new(HashMap::new())), next_id: Cell::new(0) })
}

/// `next()`'s task: waits on libuv's pool for the next call; resolves with
/// it as JSON text with its id, or null once the gateway has stopped.
pub struct NextTask {
    calls: Arc<Mutex<Receiver<Handover>>>,
    replies: Replies,
    id: u32,
}

impl Task for NextTask {
    type Output = Option<Handover>;
    type JsValue = Option<String>;

    fn compute(&mut self) -> Result<Option<Handover>> {
        Ok(self.calls.lock().unwrap_or_else(PoisonError::into_inner).recv().ok())
    }

    fn resolve(&mut self, _env: Env, output: Option<Handover>) -> Result<Option<String>> {
        let Some(handover) = output else { return Ok(None) };
        self.replies.lock().unwrap_or_else(PoisonError::into_inner).insert(self.id, handover.reply);
        let mut call = handover.call;
        if let Some(map) = call.as_object_mut() {
            map.insert("id".into(), json!(self.id));
        }
        Ok(Some(call.to_string()))
    }
}

#[napi]
impl NativeGateway {
    /// The next call to run, as JSON text (`{id, tool, args, principal,
    /// tenant, runId, approvalId}`), or null once the gateway has stopped.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next(&self) -> AsyncTask<NextTask> {
        let id = self.next_id.get().wrapping_add(1);
        self.next_id.set(id);
        AsyncTask::new(NextTask { calls: Arc::clone(&self.calls), replies: Arc::clone(&self.replies), id })
    }

    /// Hands back call `id`'s finished result (the `R…` text of `begin`/`finish*`).
    #[napi]
    pub fn reply(&self, id: u32, text: String) {
        if let Some(sender) = self.replies.lock().unwrap_or_else(PoisonError::into_inner).remove(&id) {
            let _ = sender.send(text);
        }
    }
}
