//! `serveMcp`: the runtime crate's MCP gateway serving a loaded harness whose
//! native tools are JavaScript functions.
//!
//! The gateway runs on its own thread; the audit and approval callbacks and
//! the handlers live on the JavaScript thread, so each `tools/call` is handed
//! over whole: `next()` (a task on libuv's pool) resolves with the call on the
//! JavaScript thread, which runs it as `call` does and hands the result back
//! with `reply(id, result)`.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_core::host::{host_failure, CallResult as CoreResult, Error as CoreError};
use harnessweaver_runtime::gateway::server::{serve_harness, ServeError};
use harnessweaver_runtime::gateway::{CallExecutor, Gateway, GatewayResult};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};

use super::host::{principal, CallResult, NativeHost};
use super::{throw, Json};

/// One call handed to JavaScript, and where its result goes.
pub struct Handover {
    call: Value,
    reply: Sender<CoreResult>,
}

/// Where each handed-over call's result goes, by id.
type Replies = Arc<Mutex<HashMap<u32, Sender<CoreResult>>>>;

/// A running gateway (native side); `serveMcp` in `governor.js` drives it.
#[napi]
pub struct NativeGateway {
    calls: Arc<Mutex<Receiver<Handover>>>,
    replies: Replies,
    next_id: Cell<u32>,
}

/// Starts serving `host`'s harness over MCP on a thread of its own: stdio
/// (as `principal`/`tenant`, else `spec.gateway.stdio`) or, with
/// `http: "127.0.0.1:PORT"`, streamable HTTP checked against `spec.gateway.http`.
#[napi(ts_args_type = "host: NativeHost, http?: string | null, principal?: unknown, tenant?: string | null")]
pub fn serve_mcp(env: Env, host: &NativeHost, http: Option<String>, who: Option<Unknown<'_>>, tenant: Option<String>) -> Result<NativeGateway> {
    let bad = |code, message: String| throw(&env, &CoreError::InvalidArgument { code, message });
    let who = who.filter(|p| !matches!(p.get_type(), Ok(ValueType::Undefined | ValueType::Null))).map(|p| principal(&env, &p)).transpose()?;
    let http = match http {
        Some(text) => {
            Some(text.parse::<SocketAddr>().map_err(|_| bad("invalid_argument", format!("http `{text}` is not an address like 127.0.0.1:8080")))?)
        }
        None => None,
    };
    let runtime = host
        .inner
        .runtime()
        .ok_or_else(|| bad("not_loaded_for_calls", "this harness was opened with inspect() and cannot take calls; use load()".into()))?;
    let (tx, rx) = channel::<Handover>();
    let tx = Mutex::new(tx);
    let executor: CallExecutor = Arc::new(move |ctx, tool, args| {
        let call = json!({"tool": tool, "args": args, "principal": ctx.principal.to_value(), "tenant": ctx.tenant, "task": ctx.task,
            "runId": ctx.run_id, "approvalId": ctx.approval_id});
        let (reply, answer) = channel();
        let sent = tx.lock().unwrap_or_else(PoisonError::into_inner).send(Handover { call, reply });
        let result = match sent.map(|()| answer.recv()) {
            Ok(Ok(result)) => result,
            _ => host_failure(tool, "the JavaScript host dropped the call"),
        };
        GatewayResult::new(&result, None)
    });
    let gateway = Arc::new(Gateway::with_executor(runtime, executor));
    let spawned = std::thread::Builder::new().name("harnessweaver-gateway".into()).spawn(move || {
        let served = serve_harness(gateway, http, who, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at http://{addr}/mcp"));
        if let Err(ServeError::Usage(m) | ServeError::Failed(m)) = served {
            eprintln!("harnessweaver gateway: {m}");
        }
        // Dropping the gateway closes the channel: `next()` resolves null.
    });
    spawned.map_err(|e| bad("gateway_failed", format!("cannot start the gateway thread: {e}")))?;
    Ok(NativeGateway { calls: Arc::new(Mutex::new(rx)), replies: Arc::default(), next_id: Cell::new(0) })
}

/// `next()`'s task: waits on libuv's pool for the next call.
pub struct NextTask {
    calls: Arc<Mutex<Receiver<Handover>>>,
    replies: Replies,
    id: u32,
}

impl Task for NextTask {
    type Output = Option<Handover>;
    type JsValue = Option<Json>;

    fn compute(&mut self) -> Result<Option<Handover>> {
        Ok(self.calls.lock().unwrap_or_else(PoisonError::into_inner).recv().ok())
    }

    fn resolve(&mut self, _env: Env, output: Option<Handover>) -> Result<Option<Json>> {
        let Some(Handover { mut call, reply }) = output else { return Ok(None) };
        self.replies.lock().unwrap_or_else(PoisonError::into_inner).insert(self.id, reply);
        if let Some(map) = call.as_object_mut() {
            map.insert("id".into(), json!(self.id));
        }
        Ok(Some(Json(call)))
    }
}

#[napi]
impl NativeGateway {
    /// The next call to run (`{id, tool, args, principal, tenant, task, runId,
    /// approvalId}`), or null once the gateway has stopped.
    #[napi(ts_return_type = "Promise<Record<string, any> | null>")]
    pub fn next(&self) -> AsyncTask<NextTask> {
        let id = self.next_id.get().wrapping_add(1);
        self.next_id.set(id);
        AsyncTask::new(NextTask { calls: Arc::clone(&self.calls), replies: Arc::clone(&self.replies), id })
    }

    /// Hands back call `id`'s result; none (the host failed to run it) ends it `handler_error`.
    #[napi(ts_args_type = "id: number, result?: CallResult | null")]
    pub fn reply(&self, id: u32, result: Option<&CallResult>) {
        if let Some(sender) = self.replies.lock().unwrap_or_else(PoisonError::into_inner).remove(&id) {
            if let Some(r) = result {
                let _ = sender.send(r.inner.clone());
            }
        }
    }
}
