//! `NativeHost` (a loaded harness) over `harnessweaver_core::host`.
//!
//! Conversion only. `call` runs steps 1–7 in the core and, in the same
//! crossing, a sync handler and the core's finish: it answers a result (an
//! external `index.js` wraps; or throws its refusal class), a promise of one (a core transport, run on
//! libuv's pool), or `[promise, remainingMs, ticket]` for a handler that
//! returned a promise, which `index.js` races against the deadline and hands
//! to `finish` (the core judges the deadline and runs step 9).
#![allow(clippy::too_many_arguments, reason = "napi functions take their JavaScript arguments one by one")]

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::{self, ThreadId};

use harnessweaver_core::host::{
    Begun, CallContext, CallResult as CoreResult, Error as CoreError, HandlerDecl, HandlerMode, Host, HostFn, HostOptions, ManifestSource, Outcome,
    Principal, RefusalClass, TestOptions, TicketCell, TicketRoute, TransportOutcome,
};
use harnessweaver_runtime::transport::TransportOptions;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::Value;

use crate::{from_js, held, hold, out, to_js, value, Held, Js, Raw};

impl Held for CoreResult {
    const TAG: sys::napi_type_tag = sys::napi_type_tag { lower: 0x6877_5f72_6573_756c, upper: 0x7420_6e6f_6465_0001 };
}

impl Held for TicketCell {
    const TAG: sys::napi_type_tag = sys::napi_type_tag { lower: 0x6877_5f74_6963_6b65, upper: 0x7420_6e6f_6465_0002 };
}

/// A JavaScript function kept for the host's life, called on its own thread only.
pub(crate) struct JsFn {
    env: sys::napi_env,
    f: sys::napi_ref,
    thread: ThreadId,
}

// SAFETY: the core calls back only from inside `call`/`finish`, on the JavaScript
// thread (a transport's finish runs in its task's `resolve`); `call` checks the thread.
unsafe impl Send for JsFn {}
unsafe impl Sync for JsFn {}

impl JsFn {
    fn new(env: sys::napi_env, f: Raw) -> Result<Arc<JsFn>> {
        Ok(Arc::new(JsFn { env, f: out!(napi_create_reference(env, f, 1))?, thread: thread::current().id() }))
    }
}

/// The audit, observe and approval callbacks (the core shapes what they get and reads the answer).
impl HostFn for JsFn {
    fn call(&self, values: &[Value]) -> std::result::Result<Value, String> {
        if thread::current().id() != self.thread {
            return Err("a call off the JavaScript thread".into());
        }
        let js = Js(self.env);
        let args = values.iter().map(|v| to_js(js, v)).collect::<Result<Vec<_>>>().map_err(|e| e.reason.clone())?;
        match out!(napi_get_reference_value(self.env, self.f)).and_then(|f| js.call(f, &args)) {
            Ok(Ok(answer)) => Ok(from_js(js, answer, 0).unwrap_or(Value::Null)),
            Ok(Err(thrown)) => Err(js.kind_of(thrown)),
            Err(e) => Err(e.reason.clone()),
        }
    }
}

/// A harness loaded by the core for calls (or only read, by `inspect`), with its tools' handlers.
#[napi]
pub struct NativeHost {
    pub(crate) inner: Arc<Host>,
    handlers: HashMap<String, Arc<JsFn>>,
}

/// Loads `harness.yaml`, reading it once: `tools` maps tool names to handlers (null: only inspect it);
/// `codeTools` are `[manifest, origin]` pairs; `audit` and `onApproval` get values; `observe` also sees
/// every audit event, beside the harness's sink (issue 24); `clockMs` and `sequentialIds` are for tests.
#[napi]
pub fn load_host(
    env: Env,
    path: String,
    tools: Option<Object>,
    code_tools: Unknown,
    audit: Option<Function<'_>>,
    on_approval: Option<Function<'_>>,
    clock_ms: Option<f64>,
    sequential_ids: Option<bool>,
    sandbox_worker: Option<String>,
    observe: Option<Function<'_>>,
) -> Result<NativeHost> {
    let js = Js(env.raw());
    let load = |e: harnessweaver_core::host::LoadErrors| js.raise(&CoreError::Load(e.problems));
    let Some(tools) = tools else {
        return Host::inspect(path.as_ref()).map_err(load).map(|h| NativeHost { inner: Arc::new(h), handlers: HashMap::new() });
    };
    let (mut handlers, mut decls) = (HashMap::new(), Vec::new());
    for name in Object::keys(&tools)? {
        let f: Unknown = tools.get_named_property(&name)?;
        let kind = js.text(js.get(js.get(f.raw(), c"constructor")?, c"name")?)?;
        let function = Some(js.text(js.get(f.raw(), c"name")?)?).filter(|n| !n.is_empty());
        let mode = if kind == "AsyncFunction" { HandlerMode::Async } else { HandlerMode::CallerThread };
        decls.push(HandlerDecl { tool: name.clone(), mode, takes_idempotency_key: true, takes_progress: true, function });
        handlers.insert(name, JsFn::new(js.0, f.raw())?);
    }
    let sources = match value(js, &code_tools)? {
        Value::Array(pairs) => pairs
            .into_iter()
            .map(|p| ManifestSource::from_host(p.get(0).cloned().unwrap_or_default(), p.get(1).and_then(Value::as_str).map(Into::into))),
        _ => return Err(Error::from_reason("codeTools must be an array")),
    };
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a test clock in ms")]
    let test = clock_ms.map(|ms| TestOptions { clock_ms: ms as u64, sequential_ids: sequential_ids.unwrap_or(false) });
    let transports = TransportOptions { sandbox_worker: sandbox_worker.filter(|p| !p.is_empty()).map(Into::into), ..TransportOptions::default() };
    let callback = |f: Option<Function<'_>>| f.map(|f| JsFn::new(js.0, f.raw())).transpose();
    let options = HostOptions {
        handlers: decls,
        code_tools: sources.collect(),
        audit: callback(audit)?.map(|a| a as _),
        observe: callback(observe)?.map(|a| a as _),
        on_approval: callback(on_approval)?.map(|a| a as _),
        test,
        backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)),
        ..HostOptions::default()
    };
    Host::load(path.as_ref(), options).map(|h| NativeHost { inner: Arc::new(h), handlers }).map_err(load)
}

/// A principal, read by the core (anything with no JSON form is none: `invalid_principal`).
fn principal(js: Js, v: &Unknown) -> Result<Principal> {
    Principal::from_value(&from_js(js, v.raw(), 0).unwrap_or(Value::Null)).map_err(|e| js.raise(&e))
}

#[napi]
impl NativeHost {
    /// The core's host method `method` with its named arguments (`Host::request`).
    #[napi(ts_args_type = "method: string, args: object", ts_return_type = "any")]
    pub fn request<'e>(&self, env: &'e Env, method: String, args: Unknown) -> Result<Unknown<'e>> {
        let js = Js(env.raw());
        crate::answer(js, self.inner.request(&method, &value(js, &args)?))
    }

    /// A call (see the module's note for what it answers); `raise`: throw a refusal. With `hold` an
    /// allowed call's ticket is answered, until `finish(ticket, 'resume')` runs it as `call` would
    /// have: the fixture runner changes the filesystem between the two (a swapped link, issue 20).
    #[napi(ts_return_type = "any")]
    pub fn call<'e>(
        &self,
        env: &'e Env,
        tool: String,
        args: Unknown,
        who: Unknown,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
        raise: bool,
        hold: Option<bool>,
    ) -> Result<Unknown<'e>> {
        let js = Js(env.raw());
        let ctx = CallContext { principal: principal(js, &who)?, tenant, task, run_id, approval_id, ..CallContext::default() };
        match self.inner.begin(&tool, value(js, &args)?, &ctx) {
            Ok(Begun::Allowed(ticket)) if hold == Some(true) => {
                Ok(js.unknown(unsafe { ToNapiValue::to_napi_value(js.0, vec![js.unknown(crate::hold(js, TicketCell::new(ticket))?)])? }))
            }
            begun => self.settle(js, begun, raise),
        }
    }

    /// Grants approval `id` as `approver` (with the approver's edited `args`, if any) and begins the approved call, as `call` does.
    #[napi(ts_args_type = "id: string, approver: unknown, args: unknown, raise: boolean", ts_return_type = "any")]
    pub fn approve_and_resume<'e>(&self, env: &'e Env, id: String, approver: Unknown, args: Unknown, raise: bool) -> Result<Unknown<'e>> {
        let js = Js(env.raw());
        let edited = Some(value(js, &args)?).filter(|a| !a.is_null());
        self.settle(js, self.inner.approve_and_resume(&id, &principal(js, &approver)?, edited), raise)
    }

    /// Ends the ticket of a handler's promise: it `returned` `value`, `threw` `value` or hit the deadline
    /// (`timeout`); or runs a held call (`resume`), answering as `call` does.
    #[napi(
        ts_args_type = "ticket: unknown, how: 'returned' | 'threw' | 'timeout' | 'resume', value: unknown, raise: boolean",
        ts_return_type = "any"
    )]
    pub fn finish<'e>(&self, env: &'e Env, ticket: Unknown, how: String, value: Unknown, raise: bool) -> Result<Unknown<'e>> {
        let js = Js(env.raw());
        let ticket = held::<TicketCell>(js, ticket.raw())?.take();
        let outcome = match how.as_str() {
            "resume" => return self.settle(js, ticket.map(Begun::Allowed), raise),
            "returned" => outcome(js, value.raw()),
            "threw" => Outcome::Failed { kind: js.kind_of(value.raw()) },
            _ => Outcome::TimedOut,
        };
        deliver(js, self.inner.finish(ticket.map_err(|e| js.raise(&e))?, outcome), raise)
    }
}

/// What a handler's value is to the core (`undefined` is null).
fn outcome(js: Js, v: Raw) -> Outcome {
    if js.type_of(v) == sys::ValueType::napi_undefined {
        return Outcome::Returned(Value::Null);
    }
    match (from_js(js, v, 0), out!(napi_is_exception_pending(js.0))) {
        (Ok(v), _) => Outcome::Returned(v),
        // A getter threw while the value was read.
        (Err(_), Ok(true)) => Outcome::Failed { kind: out!(napi_get_and_clear_last_exception(js.0)).map_or("Error".into(), |e| js.kind_of(e)) },
        (Err(e), _) => Outcome::not_json(&e),
    }
}

impl NativeHost {
    /// A begun call taken as far as the addon takes it (see the module's note).
    pub(crate) fn settle<'e>(&self, js: Js, begun: std::result::Result<Begun, CoreError>, raise: bool) -> Result<Unknown<'e>> {
        let ticket = match begun.map_err(|e| js.raise(&e))? {
            Begun::Allowed(t) => t,
            Begun::Refused(result) | Begun::Pending(result) => return deliver(js, result, raise),
        };
        if ticket.route() == TicketRoute::Transport {
            let task = AsyncTask::new(TransportTask { host: Arc::clone(&self.inner), ticket: Some(ticket), raise });
            return Ok(js.unknown(unsafe { AsyncTask::to_napi_value(js.0, task)? }));
        }
        let Some(handler) = self.handlers.get(ticket.tool()) else { return deliver(js, self.inner.finish_lost(ticket, "no handler"), raise) };
        // `invoke` (index.js) calls the handler with its context object: cheaper made in JavaScript.
        let f = out!(napi_get_reference_value(js.0, handler.f))?;
        let (key, tool, progress) = (js.string(ticket.idempotency_key())?, js.string(ticket.tool())?, progress_fn(js, ticket.progress())?);
        // The values the core hands a tool declaring `secrets_delivery: native`.
        let secrets = ticket.secrets().map(|s| to_js(js, &s)).transpose()?;
        let args = [f, to_js(js, ticket.args())?, key, tool, progress, secrets.unwrap_or(out!(napi_get_undefined(js.0))?)];
        let outcome = match js.call(js.kept(&crate::INVOKE)?, &args)? {
            Err(thrown) => Outcome::Failed { kind: js.kind_of(thrown) },
            Ok(v) if js.type_of(v) == sys::ValueType::napi_object && is_thenable(js, v)? => {
                let racing = (js.unknown(v), ticket.remaining().as_secs_f64() * 1000.0, js.unknown(hold(js, TicketCell::new(ticket))?));
                return Ok(js.unknown(unsafe { ToNapiValue::to_napi_value(js.0, racing)? }));
            }
            Ok(v) => outcome(js, v),
        };
        deliver(js, self.inner.finish(ticket, outcome), raise)
    }
}

/// `ctx.progress(n, total, message)` (issue 22): each report goes to the core, which decides what
/// reaches the caller; a no-op (`index.js`'s `noProgress`) when nobody listens.
fn progress_fn(js: Js, progress: Option<harnessweaver_core::host::Progress>) -> Result<Raw> {
    let Some(progress) = progress.filter(harnessweaver_core::host::Progress::listened) else {
        return js.kept(&crate::NO_PROGRESS);
    };
    let env = Env::from_raw(js.0);
    let f = env.create_function_from_closure::<Unknown, (), _>("progress", move |cx: FunctionCallContext| {
        let n = cx.get::<f64>(0).unwrap_or(f64::NAN);
        let total = cx.get::<Option<f64>>(1).ok().flatten();
        let message = cx.get::<Option<String>>(2).ok().flatten();
        // A dropped report is never the handler's error.
        let _ = progress.report(n, total, message.as_deref());
        Ok(())
    })?;
    Ok(f.raw())
}

/// Whether `v` is a promise, or an object with a `then` function.
fn is_thenable(js: Js, v: Raw) -> Result<bool> {
    Ok(out!(napi_is_promise(js.0, v))? || js.type_of(js.get(v, c"then")?) == sys::ValueType::napi_function)
}

/// A property of a call's result (`CallResult::PROPERTIES`), or its `toModel` text or `toJSON` form:
/// `index.js`'s `CallResult` holds the result as an external (cheaper to make than a class instance).
#[napi(ts_args_type = "result: unknown, what: string", ts_return_type = "any")]
pub fn result<'e>(env: &'e Env, result: Unknown, what: String) -> Result<Unknown<'e>> {
    let js = Js(env.raw());
    let result = held::<CoreResult>(js, result.raw())?;
    let value = match what.as_str() {
        "toModel" => return js.string(&result.to_model()).map(|v| js.unknown(v)),
        "toJSON" => result.to_value(),
        name => result.field(name).unwrap_or(Value::Null),
    };
    Ok(js.unknown(to_js(js, &value)?))
}

/// A call's result as an external, or with `raise` its refusal class (`RefusalClass::of`) to throw.
fn deliver<'e>(js: Js, result: CoreResult, raise: bool) -> Result<Unknown<'e>> {
    let class = RefusalClass::of(result.decision, result.step).filter(|_| raise);
    let inner = hold(js, result)?;
    match class {
        Some(class) => Err(Error::from_unknown_without_coercion(js.unknown(js.new_of(class.name(), &[js.new_of("CallResult", &[inner])?])?))),
        None => Ok(js.unknown(inner)),
    }
}

/// A core transport's call on libuv's thread pool.
pub struct TransportTask {
    host: Arc<Host>,
    ticket: Option<harnessweaver_core::host::Ticket>,
    raise: bool,
}

impl Task for TransportTask {
    type Output = TransportOutcome;
    type JsValue = Unknown<'static>;

    fn compute(&mut self) -> Result<TransportOutcome> {
        let ticket = self.ticket.as_ref().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        Ok(self.host.run_transport(ticket))
    }

    fn resolve(&mut self, env: Env, outcome: TransportOutcome) -> Result<Unknown<'static>> {
        let ticket = self.ticket.take().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        deliver(Js(env.raw()), self.host.finish_transport(ticket, outcome), self.raise)
    }
}
