//! `serveMcp`: the runtime crate's MCP gateway serving a loaded harness whose
//! native tools are JavaScript functions.
//!
//! The gateway runs on its own thread; the callbacks and handlers live on the
//! JavaScript thread, so each `tools/call` is handed over whole: `next()` (a
//! task on libuv's pool) resolves with a `GatewayCall` on the JavaScript
//! thread, which runs it as `call` does and answers with `reply(result)`.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_core::host::{host_failure, CallResult as CoreResult, Error as CoreError};
use harnessweaver_runtime::gateway::server::{serve_harness, ServeError};
use harnessweaver_runtime::gateway::{CallExecutor, Gateway, GatewayResult};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};

use super::host::{given, principal, CallResult, NativeHost};
use super::{throw, Json};

/// A running gateway (native side); `serveMcp` in `governor.js` drives it.
#[napi]
pub struct NativeGateway {
    calls: Arc<Mutex<Receiver<GatewayCall>>>,
}

/// One `tools/call` handed to JavaScript, and where its result goes.
#[napi]
pub struct GatewayCall {
    call: Value,
    reply: Cell<Option<Sender<CoreResult>>>,
}

/// Starts serving `host`'s harness over MCP on a thread of its own: stdio
/// (as `principal`/`tenant`, else `spec.gateway.stdio`) or, with
/// `http: "127.0.0.1:PORT"`, streamable HTTP checked against `spec.gateway.http`.
#[napi(ts_args_type = "host: NativeHost, http?: string | null, principal?: unknown, tenant?: string | null")]
pub fn serve_mcp(env: Env, host: &NativeHost, http: Option<String>, who: Option<Unknown<'_>>, tenant: Option<String>) -> Result<NativeGateway> {
    let bad = |code, message: String| throw(&env, &CoreError::InvalidArgument { code, message });
    let who = given(who).map(|p| principal(&env, &p)).transpose()?;
    let address = |text: String| {
        text.parse::<SocketAddr>().map_err(|_| bad("invalid_argument", format!("http `{text}` is not an address like 127.0.0.1:8080")))
    };
    let http = http.map(address).transpose()?;
    let runtime = host
        .inner
        .runtime()
        .ok_or_else(|| bad("not_loaded_for_calls", "this harness was opened with inspect() and cannot take calls; use load()".into()))?;
    let (tx, rx) = channel::<GatewayCall>();
    let tx = Mutex::new(tx);
    let executor: CallExecutor = Arc::new(move |ctx, tool, args| {
        let call = json!({"tool": tool, "args": args, "principal": ctx.principal.to_value(), "tenant": ctx.tenant, "task": ctx.task,
            "runId": ctx.run_id, "approvalId": ctx.approval_id});
        let (reply, answer) = channel();
        let sent = tx.lock().unwrap_or_else(PoisonError::into_inner).send(GatewayCall { call, reply: Cell::new(Some(reply)) });
        // No answer (the call object was dropped unanswered): the host failed to run it.
        let result = sent.ok().and_then(|()| answer.recv().ok());
        GatewayResult::new(&result.unwrap_or_else(|| host_failure(tool, "the JavaScript host dropped the call")), None)
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
    Ok(NativeGateway { calls: Arc::new(Mutex::new(rx)) })
}

/// `next()`'s task: waits on libuv's pool for the next call.
pub struct NextTask(Arc<Mutex<Receiver<GatewayCall>>>);

impl Task for NextTask {
    type Output = Option<GatewayCall>;
    type JsValue = Option<GatewayCall>;

    fn compute(&mut self) -> Result<Option<GatewayCall>> {
        Ok(self.0.lock().unwrap_or_else(PoisonError::into_inner).recv().ok())
    }

    fn resolve(&mut self, _env: Env, call: Option<GatewayCall>) -> Result<Option<GatewayCall>> {
        Ok(call)
    }
}

#[napi]
impl NativeGateway {
    /// The next call to run, or null once the gateway has stopped.
    #[napi(ts_return_type = "Promise<GatewayCall | null>")]
    pub fn next(&self) -> AsyncTask<NextTask> {
        AsyncTask::new(NextTask(Arc::clone(&self.calls)))
    }
}

#[napi]
impl GatewayCall {
    /// `{tool, args, principal, tenant, task, runId, approvalId}`.
    #[napi(getter, ts_return_type = "Record<string, any>")]
    pub fn call(&self) -> Json {
        Json(self.call.clone())
    }

    /// Hands back the call's result; none (the host failed to run it) ends it `handler_error`.
    #[napi(ts_args_type = "result?: CallResult | null")]
    pub fn reply(&self, result: Option<&CallResult>) {
        if let (Some(sender), Some(r)) = (self.reply.take(), result) {
            let _ = sender.send(r.inner.clone());
        }
    }
}
