//! `NativeHost` (a loaded harness) over `harnessweaver_core::host`.
//!
//! Conversion only: `call` runs steps 1–7 in the core and answers with the
//! result, a promise of it (a core transport, run on libuv's pool), or the
//! ticket of a JavaScript handler as `[id, tool, argsText, idempotencyKey,
//! remainingMs, secretsText]`, which `index.js` runs and hands back to `finish` (the core
//! judges the deadline and runs step 9).
#![allow(clippy::too_many_arguments, reason = "napi functions take their JavaScript arguments one by one")]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr;
use std::sync::Arc;
use std::thread::{self, ThreadId};

use harnessweaver_core::host::{
    value_error, value_of_text, ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback, AuditEvent, Begun, CallContext,
    CallResult as CoreResult, Error as CoreError, HandlerDecl, HandlerMode, Host, HostOptions, ManifestSource, Outcome, Principal, RefusalClass,
    TestOptions, Ticket, TicketRoute, TransportOutcome,
};
use harnessweaver_runtime::transport::TransportOptions;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::Value;

use crate::{answer, js_string, napi_check, throw, value};

/// The audit or approval callback of `index.js`, kept for the host's life: it
/// takes JSON text and answers a bool, or the kind of what the user's function threw.
struct JsFn {
    env: sys::napi_env,
    f: sys::napi_ref,
    thread: ThreadId,
}

// SAFETY: the core calls back only from inside `call`/`finish`, which run on
// the JavaScript thread (a transport's finish runs in its task's `resolve`);
// `call` checks the thread before any N-API call.
unsafe impl Send for JsFn {}
unsafe impl Sync for JsFn {}

impl JsFn {
    fn new(env: &Env, f: &Function<'_>) -> Result<Arc<JsFn>> {
        let mut r = ptr::null_mut();
        napi_check(unsafe { sys::napi_create_reference(env.raw(), f.raw(), 1, &mut r) }, "callback reference")?;
        Ok(Arc::new(JsFn { env: env.raw(), f: r, thread: thread::current().id() }))
    }

    /// Calls the function with `texts`: its bool, the JSON of an answer index.js wrapped as
    /// `[text]`, null for anything else, or `Err` with the kind it answered.
    fn call(&self, texts: &[String]) -> std::result::Result<Value, String> {
        if thread::current().id() != self.thread {
            return Err("a call off the JavaScript thread".into());
        }
        let argv = texts.iter().map(|t| unsafe { js_string(self.env, t) }).collect::<Result<Vec<_>>>().map_err(|e| e.reason.clone())?;
        let (env, mut f, mut recv, mut out, mut ty, mut b) = (self.env, ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), 0, false);
        let called = unsafe {
            sys::napi_get_reference_value(env, self.f, &mut f);
            sys::napi_get_undefined(env, &mut recv);
            sys::napi_call_function(env, recv, f, argv.len(), argv.as_ptr(), &mut out)
        };
        if called != sys::Status::napi_ok {
            unsafe { sys::napi_get_and_clear_last_exception(env, &mut out) };
            return Err("Error".into());
        }
        unsafe { sys::napi_typeof(env, out, &mut ty) };
        match ty {
            sys::ValueType::napi_string => Err(unsafe { String::from_napi_value(env, out) }.unwrap_or_default()),
            sys::ValueType::napi_boolean => {
                let read = unsafe { sys::napi_get_value_bool(env, out, &mut b) } == sys::Status::napi_ok;
                Ok(if read { Value::Bool(b) } else { Value::Null })
            }
            sys::ValueType::napi_object => {
                let mut first = ptr::null_mut();
                if unsafe { sys::napi_get_element(env, out, 0, &mut first) } != sys::Status::napi_ok {
                    return Ok(Value::Null);
                }
                Ok(unsafe { String::from_napi_value(env, first) }.ok().and_then(|t| value_of_text(&t).ok()).unwrap_or_default())
            }
            _ => Ok(Value::Null),
        }
    }
}

impl AuditCallback for JsFn {
    fn record(&self, event: &AuditEvent) -> std::result::Result<(), String> {
        self.call(&[serde_json::to_string(event).map_err(|e| e.to_string())?]).map(drop)
    }

    /// Issue 24: an approver's decision, to the `observe` function only, as `{"approval_decided": {...}}`.
    fn approval_decided(&self, decided: &harnessweaver_core::host::ApprovalDecided) -> std::result::Result<(), String> {
        self.call(&[serde_json::json!({ "approval_decided": decided }).to_string()]).map(drop)
    }
}

impl ApprovalCallback for JsFn {
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer {
        match self.call(&[view.request().to_string(), view.approval().to_string()]) {
            Err(kind) => ApprovalAnswer::Failed { kind },
            Ok(answer) => ApprovalAnswer::from_value(&answer),
        }
    }
}

/// A harness loaded by the core for calls (or only read, by `inspectHost`).
#[napi]
pub struct NativeHost {
    pub(crate) inner: Arc<Host>,
    /// The tickets of handlers `index.js` is running, by id.
    tickets: RefCell<HashMap<u32, Ticket>>,
    /// Tickets `call` holds (`hold`) until `resumeHeld`, by id (tests).
    held: RefCell<HashMap<u32, Ticket>>,
    last_id: Cell<u32>,
    /// The last principal read, with its text (a caller's calls mostly pass one principal).
    last_principal: RefCell<Option<(String, Principal)>>,
}

impl NativeHost {
    fn new(inner: Host) -> Self {
        NativeHost {
            inner: Arc::new(inner),
            tickets: RefCell::default(),
            held: RefCell::default(),
            last_id: Cell::new(0),
            last_principal: RefCell::default(),
        }
    }
}

/// Loads `harness.yaml`, reading it once: `handlers` are `[tool, isAsync]`;
/// `codeTools` is the JSON text of `[manifest, origin]` pairs; `audit` and
/// `onApproval` take JSON text; `clockMs` and `sequentialIds` are for tests;
/// `observe` also sees every audit event, beside the harness's sink (issue 24).
#[napi(
    ts_args_type = "path: string, handlers: Array<[string, boolean, string | null]>, codeTools: string, audit?: ((event: string) => unknown) | null, onApproval?: ((request: string, approval: string) => unknown) | null, clockMs?: number | null, sequentialIds?: boolean | null, sandboxWorker?: string | null, observe?: ((event: string) => unknown) | null"
)]
pub fn load_host(
    env: Env,
    path: String,
    handlers: Vec<(String, bool, Option<String>)>,
    code_tools: String,
    audit: Option<Function<'_>>,
    on_approval: Option<Function<'_>>,
    clock_ms: Option<f64>,
    sequential_ids: Option<bool>,
    sandbox_worker: Option<String>,
    observe: Option<Function<'_>>,
) -> Result<NativeHost> {
    let decls = handlers.into_iter().map(|(tool, is_async, function)| {
        let mode = if is_async { HandlerMode::Async } else { HandlerMode::CallerThread };
        HandlerDecl { tool, mode, takes_idempotency_key: true, takes_progress: true, function }
    });
    let sources = match value(&env, &code_tools)? {
        Value::Array(pairs) => pairs.into_iter().map(|pair| match pair {
            Value::Array(mut pair) if pair.len() == 2 => {
                let origin = pair.pop().and_then(|o| o.as_str().map(str::to_string));
                ManifestSource::from_host(pair.pop().unwrap_or_default(), origin)
            }
            other => ManifestSource::from_host(other, None),
        }),
        _ => return Err(Error::from_reason("codeTools must be the JSON text of an array")),
    };
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a test clock in ms")]
    let test = clock_ms.map(|ms| TestOptions { clock_ms: ms as u64, sequential_ids: sequential_ids.unwrap_or(false) });
    let transports = TransportOptions { sandbox_worker: sandbox_worker.filter(|p| !p.is_empty()).map(Into::into), ..TransportOptions::default() };
    let options = HostOptions {
        handlers: decls.collect(),
        code_tools: sources.collect(),
        audit: audit.map(|f| JsFn::new(&env, &f)).transpose()?.map(|a| a as _),
        observe: observe.map(|f| JsFn::new(&env, &f)).transpose()?.map(|a| a as _),
        on_approval: on_approval.map(|f| JsFn::new(&env, &f)).transpose()?.map(|a| a as _),
        test,
        backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)),
        ..HostOptions::default()
    };
    Host::load(path.as_ref(), options).map(NativeHost::new).map_err(|e| throw(&env, &CoreError::Load(e.problems)))
}

/// Reads `harness.yaml` and its manifests only: calls fail `not_loaded_for_calls`.
#[napi]
pub fn inspect_host(env: Env, path: String) -> Result<NativeHost> {
    Host::inspect(path.as_ref()).map(NativeHost::new).map_err(|e| throw(&env, &CoreError::Load(e.problems)))
}

#[napi]
impl NativeHost {
    /// The core's host method `method` with its named arguments (`Host::request`); JSON text in and out.
    #[napi]
    pub fn request(&self, env: Env, method: String, args: String) -> Result<String> {
        answer(&env, self.inner.request(&method, &value(&env, &args)?))
    }

    /// Steps 1–7 of a call (values as JSON text): see the module's note for what it answers.
    /// With `hold`, an allowed call's ticket (whatever its route) is held and its id
    /// answered, until `resumeHeld` runs it as `call` would have: the fixture runner
    /// changes the filesystem between the two (a swapped link, issue 20).
    #[napi(
        ts_args_type = "tool: string, args: string, principal: string, tenant?: string | null, task?: string | null, runId?: string | null, approvalId?: string | null, hold?: boolean | null",
        ts_return_type = "unknown"
    )]
    pub fn call<'e>(
        &self,
        env: &'e Env,
        tool: String,
        args: String,
        principal: String,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
        hold: Option<bool>,
    ) -> Result<Unknown<'e>> {
        let ctx = CallContext { principal: self.principal(env, principal)?, tenant, task, run_id, approval_id, ..CallContext::default() };
        match self.inner.begin(&tool, value(env, &args)?, &ctx) {
            Ok(Begun::Allowed(ticket)) if hold == Some(true) => {
                let id = self.last_id.get().wrapping_add(1);
                self.last_id.set(id);
                self.held.borrow_mut().insert(id, ticket);
                let raw = env.raw();
                Ok(unsafe { Unknown::from_raw_unchecked(raw, ToNapiValue::to_napi_value(raw, id)?) })
            }
            begun => self.settle(env, begun),
        }
    }

    /// Runs the call `call` held (`hold`), answering as `call` does.
    #[napi(ts_return_type = "unknown")]
    pub fn resume_held<'e>(&self, env: &'e Env, id: u32) -> Result<Unknown<'e>> {
        let ticket = self.held.borrow_mut().remove(&id).ok_or_else(|| Error::from_reason("no call is held with this id"))?;
        self.settle(env, Ok(Begun::Allowed(ticket)))
    }

    /// A principal from its JSON text: the last one read from the same text, or read now.
    fn principal(&self, env: &Env, text: String) -> Result<Principal> {
        if let Some((_, known)) = self.last_principal.borrow().as_ref().filter(|(t, _)| *t == text) {
            return Ok(known.clone());
        }
        let read = Principal::from_value(&value(env, &text)?).map_err(|e| throw(env, &e))?;
        *self.last_principal.borrow_mut() = Some((text, read.clone()));
        Ok(read)
    }

    /// A begun call taken as far as the addon takes it (see `call`).
    pub(crate) fn settle<'e>(&self, env: &'e Env, begun: std::result::Result<Begun, CoreError>) -> Result<Unknown<'e>> {
        let raw = env.raw();
        let ticket = match begun.map_err(|e| throw(env, &e))? {
            Begun::Allowed(t) => t,
            Begun::Refused(inner) | Begun::Pending(inner) => return result(env, inner),
        };
        let out = if ticket.route() == TicketRoute::Transport {
            let task = AsyncTask::new(TransportTask { host: Arc::clone(&self.inner), ticket: Some(ticket) });
            unsafe { AsyncTask::to_napi_value(raw, task)? }
        } else {
            let id = self.last_id.get().wrapping_add(1);
            self.last_id.set(id);
            let ms = ticket.remaining().as_secs_f64() * 1000.0;
            let secrets = ticket.secrets().map(|s| s.to_string());
            let parts = (id, ticket.tool().to_string(), ticket.args().to_string(), ticket.idempotency_key().to_string(), ms, secrets);
            self.tickets.borrow_mut().insert(id, ticket);
            unsafe { ToNapiValue::to_napi_value(raw, parts)? }
        };
        Ok(unsafe { Unknown::from_raw_unchecked(raw, out) })
    }

    /// Ends ticket `id`: its handler `returned` (`text`: the value's JSON text), gave a
    /// value with no JSON form (`invalid`; `text`: `[kind, detail, path]`), `threw`
    /// (`text`: what it threw, by name) or hit the deadline (`timeout`).
    #[napi(ts_args_type = "id: number, how: 'returned' | 'invalid' | 'threw' | 'timeout', text: string | null", ts_return_type = "unknown")]
    pub fn finish(&self, id: u32, how: String, text: Option<String>) -> Result<External<CoreResult>> {
        let ticket = self.tickets.borrow_mut().remove(&id).ok_or_else(|| Error::from_reason("this call has already finished"))?;
        let text = text.unwrap_or_default();
        let outcome = match how.as_str() {
            "returned" => value_of_text(&text).map_or_else(|e| Outcome::not_json(&e), Outcome::Returned),
            "invalid" => {
                let p = value_of_text(&text).unwrap_or_default();
                let at = |i: usize| p.get(i).and_then(Value::as_str).unwrap_or_default();
                Outcome::not_json(&value_error(at(0), at(1), p.get(2).and_then(Value::as_array).map_or(&[], Vec::as_slice)))
            }
            "threw" => Outcome::Failed { kind: text },
            _ => Outcome::TimedOut,
        };
        Ok(External::new(self.inner.finish(ticket, outcome)))
    }

    /// `ctx.progress(progress, total, message)` of ticket `id`'s handler (issue 22): to the core, which
    /// decides what reaches the caller; nothing once the call has finished.
    #[napi(ts_args_type = "id: number, progress: number, total?: number | null, message?: string | null")]
    pub fn progress(&self, id: u32, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(p) = self.tickets.borrow().get(&id).and_then(|t| t.progress()) {
            let _ = p.report(progress, total, message.as_deref());
        }
    }

    /// Grants approval `id` as `approver` (JSON text, with the approver's
    /// edited args' text, if any) and begins the approved call, as `call` does.
    #[napi(ts_args_type = "id: string, approver: string, args?: string | null", ts_return_type = "unknown")]
    pub fn approve_and_resume<'e>(&self, env: &'e Env, id: String, approver: String, args: Option<String>) -> Result<Unknown<'e>> {
        let approver = Principal::from_value(&value(env, &approver)?).map_err(|e| throw(env, &e))?;
        let edited = args.map(|a| value(env, &a)).transpose()?;
        self.settle(env, self.inner.approve_and_resume(&id, &approver, edited))
    }
}

/// A call's result on its way to JavaScript: an external the `result*` functions
/// read (cheaper to make than a class instance; `index.js` wraps it).
fn result(env: &Env, inner: CoreResult) -> Result<Unknown<'_>> {
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), External::to_napi_value(env.raw(), External::new(inner))?) })
}

/// The JSON text of one field of a call's result (`CallResult::FIELDS`), or of the whole result's JSON form for none.
#[napi(ts_args_type = "result: unknown, name: string | null")]
pub fn result_field(result: &External<CoreResult>, name: Option<String>) -> String {
    match name {
        Some(name) => result.field(&name).unwrap_or(Value::Null),
        None => result.to_value(),
    }
    .to_string()
}

/// The name of the refusal class a result raises; null when the call ran.
#[napi(ts_args_type = "result: unknown")]
pub fn result_refusal(result: &External<CoreResult>) -> Option<&'static str> {
    RefusalClass::of(result.decision, result.step).map(RefusalClass::name)
}

/// The text to hand back to the model.
#[napi(ts_args_type = "result: unknown")]
pub fn result_to_model(result: &External<CoreResult>) -> String {
    result.to_model()
}

/// A core transport's call on libuv's thread pool.
pub struct TransportTask {
    host: Arc<Host>,
    ticket: Option<Ticket>,
}

impl Task for TransportTask {
    type Output = TransportOutcome;
    type JsValue = Finished;

    fn compute(&mut self) -> Result<TransportOutcome> {
        let ticket = self.ticket.as_ref().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        Ok(self.host.run_transport(ticket))
    }

    fn resolve(&mut self, _env: Env, outcome: TransportOutcome) -> Result<Finished> {
        let ticket = self.ticket.take().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        Ok(Finished(External::new(self.host.finish_transport(ticket, outcome))))
    }
}

/// A transport's result (napi-rs needs a task's value to name its type).
pub struct Finished(External<CoreResult>);

impl TypeName for Finished {
    fn type_name() -> &'static str {
        "External"
    }

    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl ToNapiValue for Finished {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        unsafe { External::to_napi_value(env, val.0) }
    }
}
