//! `serveMcp`: the runtime crate's MCP gateway serving a loaded harness whose
//! native tools are JavaScript functions.
//!
//! The gateway runs on its own thread and hands each `tools/call` over whole
//! (`harnessweaver_runtime::gateway::handover`): `next()` (a task on libuv's
//! pool) resolves with a `GatewayCall` on the JavaScript thread, which
//! `index.js` begins and runs as `call` does and answers with `reply(result)`.

use std::cell::RefCell;
use std::sync::Arc;

use harnessweaver_core::host::{CallResult as CoreResult, Error as CoreError, Principal};
use harnessweaver_runtime::gateway::handover::{serve_handed_over, HandOver, HandedCall};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::host::NativeHost;
use crate::{value, Js};

/// A running gateway (native side); `serveMcp` in `index.js` drives it.
#[napi]
pub struct NativeGateway(Arc<HandOver>);

/// One `tools/call` handed to JavaScript, and where its result goes.
#[napi]
pub struct GatewayCall(RefCell<Option<HandedCall>>);

/// Starts serving `host`'s harness over MCP on a thread of its own: stdio (as `principal`
/// and `tenant`, else `spec.gateway.stdio`) or, with `http: "127.0.0.1:PORT"`, streamable
/// HTTP checked against `spec.gateway.http`.
#[napi(ts_args_type = "host: NativeHost, http: string | null, principal: unknown, tenant: string | null")]
pub fn serve_mcp(env: Env, host: &NativeHost, http: Option<String>, who: Unknown, tenant: Option<String>) -> Result<NativeGateway> {
    let js = Js(env.raw());
    let who = Some(value(js, &who)?).filter(|p| !p.is_null()).map(|p| Principal::from_value(&p)).transpose().map_err(|e| js.raise(&e))?;
    let calls = serve_handed_over(&host.inner, http.as_deref(), who, tenant).map_err(|e| js.raise(&e))?;
    Ok(NativeGateway(Arc::new(calls)))
}

/// `next()`'s task: waits on libuv's pool for the next call.
pub struct NextTask(Arc<HandOver>);

impl Task for NextTask {
    type Output = Option<HandedCall>;
    type JsValue = Option<GatewayCall>;

    fn compute(&mut self) -> Result<Option<HandedCall>> {
        Ok(self.0.next())
    }

    fn resolve(&mut self, _env: Env, call: Option<HandedCall>) -> Result<Option<GatewayCall>> {
        Ok(call.map(|c| GatewayCall(RefCell::new(Some(c)))))
    }
}

#[napi]
impl NativeGateway {
    /// The next call to run, or null once the gateway has stopped.
    #[napi(ts_return_type = "Promise<GatewayCall | null>")]
    pub fn next(&self) -> AsyncTask<NextTask> {
        AsyncTask::new(NextTask(Arc::clone(&self.0)))
    }
}

#[napi]
impl GatewayCall {
    /// Begins the call on `host` (the harness served) as `NativeHost.call` does, with the gateway's caller and run.
    #[napi(ts_args_type = "host: NativeHost", ts_return_type = "any")]
    pub fn begin<'e>(&self, env: &'e Env, host: &NativeHost) -> Result<Unknown<'e>> {
        let begun = self.0.borrow().as_ref().map(|c| c.begin(&host.inner));
        let gone = || Err(CoreError::Io { message: "this call was answered already".into() });
        host.settle(Js(env.raw()), begun.unwrap_or_else(gone), false)
    }

    /// Hands back the call's result; none (the host failed to run it) ends it `handler_error`.
    #[napi(ts_args_type = "result?: unknown")]
    pub fn reply(&self, env: Env, result: Option<Unknown>) -> Result<()> {
        let result = result.map(|r| crate::held::<CoreResult>(Js(env.raw()), r.raw())).transpose()?;
        if let Some(call) = self.0.borrow_mut().take() {
            call.reply(result.cloned());
        }
        Ok(())
    }
}
