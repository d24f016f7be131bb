//! `NativeHost` (a loaded harness), `NativeTicket` (a call whose handler's
//! promise is pending) and `CallResult`, over `harnessweaver_core::host`.
//!
//! Conversion only: `call` runs steps 1–7 in the core, then the JavaScript
//! handler, then the core's finish (deadline, step 9, audit event) in one
//! addon call. A handler's promise comes back as a ticket for `governor.js`
//! to race against its deadline; a core transport comes back as a promise.
#![allow(clippy::too_many_arguments, reason = "napi functions take their JavaScript arguments one by one")]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr;
use std::sync::Arc;
use std::thread::{self, ThreadId};

use harnessweaver_core::host::{
    canonical, ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback, AuditEvent, Begun, CallContext, CallResult as CoreResult,
    Error as CoreError, HandlerDecl, HandlerMode, Host, HostOptions, ManifestSource, Outcome, Principal, RefusalClass, TestOptions, Ticket,
    TicketCell, TicketRoute, TransportOutcome,
};
use harnessweaver_runtime::transport::TransportOptions;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::Value;

use crate::{convert, js_string, napi_check, string, throw, to_js, to_value, Json};

/// A JavaScript function kept for the host's life (a handler, the audit or approval callback).
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

    /// Calls the function; `Err` is what it threw, by [`error_kind`] (the exception is cleared).
    fn call(&self, argv: &[sys::napi_value]) -> std::result::Result<sys::napi_value, String> {
        if thread::current().id() != self.thread {
            return Err("a call off the JavaScript thread".into());
        }
        let (env, mut f, mut recv, mut out) = (self.env, ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        let called = unsafe {
            sys::napi_get_reference_value(env, self.f, &mut f);
            sys::napi_get_undefined(env, &mut recv);
            sys::napi_call_function(env, recv, f, argv.len(), argv.as_ptr(), &mut out)
        };
        if called == sys::Status::napi_ok {
            return Ok(out);
        }
        let mut exc = ptr::null_mut();
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut exc) };
        Err(unsafe { error_kind(env, exc) })
    }

    fn call_values(&self, args: &[Value]) -> std::result::Result<sys::napi_value, String> {
        let argv = args.iter().map(|a| unsafe { to_js(self.env, a) }).collect::<Result<Vec<_>>>().map_err(|e| e.reason.clone())?;
        self.call(&argv)
    }
}

/// What a thrown value is called: an object's `name` when it is a non-empty string, else its type.
unsafe fn error_kind(env: sys::napi_env, exc: sys::napi_value) -> String {
    let mut ty = sys::ValueType::napi_undefined;
    unsafe { sys::napi_typeof(env, exc, &mut ty) };
    let mut name = ptr::null_mut();
    if ty == sys::ValueType::napi_object && unsafe { sys::napi_get_named_property(env, exc, c"name".as_ptr(), &mut name) } == sys::Status::napi_ok {
        match unsafe { string(env, name) } {
            Ok(name) if !name.is_empty() => return name,
            _ => {}
        }
    }
    unsafe { sys::napi_get_and_clear_last_exception(env, &mut name) };
    let kind = match ty {
        sys::ValueType::napi_undefined => "undefined",
        sys::ValueType::napi_boolean => "boolean",
        sys::ValueType::napi_number => "number",
        sys::ValueType::napi_string => "string",
        sys::ValueType::napi_symbol => "symbol",
        sys::ValueType::napi_function => "function",
        sys::ValueType::napi_bigint => "bigint",
        _ => "object",
    };
    kind.into()
}

impl AuditCallback for JsFn {
    fn record(&self, event: &AuditEvent) -> std::result::Result<(), String> {
        self.call_values(&[serde_json::to_value(event).map_err(|e| e.to_string())?]).map(|_| ())
    }
}

impl ApprovalCallback for JsFn {
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer {
        match self.call_values(&[view.request(), view.approval()]) {
            Err(kind) => ApprovalAnswer::Failed { kind },
            Ok(out) => {
                let mut b = false;
                let is_bool = unsafe { sys::napi_get_value_bool(self.env, out, &mut b) } == sys::Status::napi_ok;
                ApprovalAnswer::from_bool(is_bool.then_some(b))
            }
        }
    }
}

/// A principal: a handle from `principalHandle`, or an object.
pub(crate) fn principal(env: &Env, value: &Unknown<'_>) -> Result<Principal> {
    if value.get_type()? == ValueType::External {
        if let Ok(p) = unsafe { <External<Principal> as FromNapiRef>::from_napi_ref(env.raw(), value.raw()) } {
            return Ok(Principal::clone(p));
        }
    }
    // Anything with no JSON form is no principal: the core words the refusal.
    let v = unsafe { to_value(env.raw(), value.raw(), 0) }.unwrap_or(Value::Null);
    Principal::from_value(&v).map_err(|e| throw(env, &e))
}

/// An optional argument: `undefined` and `null` are none.
pub(crate) fn given<'a>(value: Option<Unknown<'a>>) -> Option<Unknown<'a>> {
    value.filter(|v| !matches!(v.get_type(), Ok(ValueType::Undefined | ValueType::Null)))
}

/// A harness loaded by the core for calls (or only read, by `inspectHost`).
#[napi]
pub struct NativeHost {
    pub(crate) inner: Arc<Host>,
    handlers: HashMap<String, Arc<JsFn>>,
    last_principal: RefCell<Option<(String, Principal)>>,
}

/// A call whose handler returned a promise: `pending` (that promise) and
/// `remainingMs` are own properties; `finish` ends it once.
#[napi]
pub struct NativeTicket {
    cell: TicketCell,
}

/// Loads `harness.yaml`, reading it once: `handlers` are `[tool, function,
/// isAsync]`; `codeTools` are `[manifest, origin]` pairs; `clockMs` and
/// `sequentialIds` are for tests.
#[napi(
    ts_args_type = "path: string, handlers: Array<[string, Function, boolean]>, codeTools: Array<[unknown, string]>, audit?: ((event: Record<string, unknown>) => unknown) | null, onApproval?: ((request: Record<string, unknown>, approval: Record<string, unknown>) => unknown) | null, clockMs?: number | null, sequentialIds?: boolean | null, sandboxWorker?: string | null"
)]
pub fn load_host(
    env: Env,
    path: String,
    handlers: Vec<(String, Function<'_>, bool)>,
    code_tools: Vec<(Unknown<'_>, String)>,
    audit: Option<Function<'_>>,
    on_approval: Option<Function<'_>>,
    clock_ms: Option<f64>,
    sequential_ids: Option<bool>,
    sandbox_worker: Option<String>,
) -> Result<NativeHost> {
    let decls = handlers.iter().map(|(tool, f, is_async)| {
        let mode = if *is_async { HandlerMode::Async } else { HandlerMode::CallerThread };
        HandlerDecl { tool: tool.clone(), mode, takes_idempotency_key: true, function: f.name().ok() }
    });
    let sources = code_tools.iter().map(|(manifest, origin)| Ok(ManifestSource::from_host(convert(&env, manifest)?, Some(origin.clone()))));
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a test clock in ms")]
    let test = clock_ms.map(|ms| TestOptions { clock_ms: ms as u64, sequential_ids: sequential_ids.unwrap_or(false) });
    let transports = TransportOptions { sandbox_worker: sandbox_worker.filter(|p| !p.is_empty()).map(Into::into), ..TransportOptions::default() };
    let options = HostOptions {
        handlers: decls.collect(),
        code_tools: sources.collect::<Result<_>>()?,
        audit: audit.map(|f| JsFn::new(&env, &f)).transpose()?.map(|a| a as _),
        on_approval: on_approval.map(|f| JsFn::new(&env, &f)).transpose()?.map(|a| a as _),
        test,
        backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)),
        ..HostOptions::default()
    };
    let host = Host::load(path.as_ref(), options).map_err(|e| throw(&env, &CoreError::Load(e.problems)))?;
    let handlers = handlers.iter().map(|(tool, f, _)| Ok((tool.clone(), JsFn::new(&env, f)?))).collect::<Result<_>>()?;
    Ok(NativeHost { inner: Arc::new(host), handlers, last_principal: RefCell::default() })
}

/// Reads `harness.yaml` and its manifests only: calls fail `not_loaded_for_calls`.
#[napi]
pub fn inspect_host(env: Env, path: String) -> Result<NativeHost> {
    let host = Host::inspect(path.as_ref()).map_err(|e| throw(&env, &CoreError::Load(e.problems)))?;
    Ok(NativeHost { inner: Arc::new(host), handlers: HashMap::new(), last_principal: RefCell::default() })
}

#[napi]
impl NativeHost {
    /// The core's host method `method` with its named arguments (`Host::request`).
    #[napi(ts_args_type = "method: string, args: Record<string, unknown>", ts_return_type = "any")]
    pub fn request(&self, env: Env, method: String, args: Unknown<'_>) -> Result<Json> {
        self.inner.request(&method, &convert(&env, &args)?).map(Json).map_err(|e| throw(&env, &e))
    }

    /// A call through the nine steps: its result (`resultField` reads it), a
    /// `NativeTicket` when the handler returned a promise, or a promise of the
    /// result for a tool on the core's transports (http, code, mcp; run on
    /// libuv's pool). `argsText` and `principalText` are their values'
    /// `JSON.stringify` text when exact (see `definitionDigest`).
    #[napi(
        ts_args_type = "tool: string, args: unknown, argsText: string | null, principal: unknown, principalText: string | null, tenant?: string | null, task?: string | null, runId?: string | null, approvalId?: string | null",
        ts_return_type = "unknown"
    )]
    pub fn call<'e>(
        &self,
        env: &'e Env,
        tool: Unknown<'_>,
        args: Unknown<'_>,
        args_text: Option<String>,
        p: Unknown<'_>,
        principal_text: Option<String>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
    ) -> Result<Unknown<'e>> {
        let tool = unsafe { string(env.raw(), tool.raw()) }.map_err(|e| throw(env, &e))?;
        let args = match args_text.as_deref().and_then(canonical::value_of_double_json) {
            Some(args) => args,
            None => convert(env, &args)?,
        };
        let ctx = CallContext { principal: self.principal_of(env, &p, principal_text)?, tenant, task, run_id, approval_id, ..CallContext::default() };
        self.settle(env, self.inner.begin(&tool, args, &ctx))
    }

    /// A call's principal: a handle, the last one read from the same text
    /// (a caller's calls mostly pass one principal), or converted now.
    fn principal_of(&self, env: &Env, p: &Unknown<'_>, text: Option<String>) -> Result<Principal> {
        let Some(text) = text.filter(|_| !matches!(p.get_type(), Ok(ValueType::External))) else { return principal(env, p) };
        if let Some((_, known)) = self.last_principal.borrow().as_ref().filter(|(t, _)| *t == text) {
            return Ok(known.clone());
        }
        let Some(value) = canonical::value_of_double_json(&text) else { return principal(env, p) };
        let read = Principal::from_value(&value).map_err(|e| throw(env, &e))?;
        *self.last_principal.borrow_mut() = Some((text, read.clone()));
        Ok(read)
    }

    /// A begun call taken as far as it goes now (see `call`).
    pub(crate) fn settle<'e>(&self, env: &'e Env, begun: std::result::Result<Begun, CoreError>) -> Result<Unknown<'e>> {
        let raw = env.raw();
        let ticket = match begun.map_err(|e| throw(env, &e))? {
            Begun::Allowed(t) => t,
            Begun::Refused(inner) | Begun::Pending(inner) => return result(env, inner),
        };
        let handler = match ticket.route() {
            TicketRoute::Transport => {
                let task = AsyncTask::new(TransportTask { host: Arc::clone(&self.inner), ticket: Some(ticket) });
                return Ok(unsafe { Unknown::from_raw_unchecked(raw, AsyncTask::to_napi_value(raw, task)?) });
            }
            TicketRoute::Host { .. } => match self.handlers.get(ticket.tool()) {
                Some(f) => f,
                None => return result(env, self.inner.finish_lost(ticket, "no handler")),
            },
        };
        let context = unsafe { handler_context(raw, &ticket)? };
        let outcome = match handler.call(&[unsafe { to_js(raw, ticket.args())? }, context]) {
            Err(kind) => Outcome::Failed { kind },
            Ok(value) if unsafe { is_thenable(raw, value) } => {
                let remaining = ticket.remaining().as_secs_f64() * 1000.0;
                let instance = NativeTicket { cell: TicketCell::new(ticket) }.into_instance(env)?;
                let mut ms = ptr::null_mut();
                napi_check(unsafe { sys::napi_create_double(raw, remaining, &mut ms) }, "remainingMs")?;
                napi_check(unsafe { sys::napi_set_named_property(raw, instance.raw(), c"remainingMs".as_ptr(), ms) }, "remainingMs")?;
                napi_check(unsafe { sys::napi_set_named_property(raw, instance.raw(), c"pending".as_ptr(), value) }, "pending")?;
                return Ok(unsafe { Unknown::from_raw_unchecked(raw, instance.raw()) });
            }
            Ok(value) => unsafe { returned(raw, value) },
        };
        result(env, self.inner.finish(ticket, outcome))
    }

    /// Ends a ticket's call: its promise resolved to `value` (`how`:
    /// `returned`), rejected with it (`threw`), or hit the deadline (`timeout`).
    #[napi(ts_args_type = "ticket: NativeTicket, value: unknown, how: 'returned' | 'threw' | 'timeout'", ts_return_type = "unknown")]
    pub fn finish(&self, env: Env, ticket: &NativeTicket, value: Unknown<'_>, how: String) -> Result<Finished> {
        let ticket = ticket.cell.take().map_err(|e| throw(&env, &e))?;
        let outcome = match how.as_str() {
            "returned" => unsafe { returned(env.raw(), value.raw()) },
            "threw" => Outcome::Failed { kind: unsafe { error_kind(env.raw(), value.raw()) } },
            _ => Outcome::TimedOut,
        };
        Ok(Finished(self.inner.finish(ticket, outcome)))
    }

    /// Grants approval `id` as `approver` (with the approver's edited args,
    /// if any) and runs the approved call from step 1, as `call` does.
    #[napi(ts_args_type = "id: string, approver: unknown, args?: unknown", ts_return_type = "unknown")]
    pub fn approve_and_resume<'e>(&self, env: &'e Env, id: String, approver: Unknown<'_>, args: Option<Unknown<'_>>) -> Result<Unknown<'e>> {
        let approver = principal(env, &approver)?;
        let edited = given(args).map(|a| convert(env, &a)).transpose()?;
        self.settle(env, self.inner.approve_and_resume(&id, &approver, edited))
    }

    /// `principal` converted once: a handle a run's calls pass instead of the object.
    #[napi(ts_args_type = "principal: unknown", ts_return_type = "unknown")]
    pub fn principal_handle(&self, env: Env, p: Unknown<'_>) -> Result<External<Principal>> {
        Ok(External::new(principal(&env, &p)?))
    }
}

fn result(env: &Env, inner: CoreResult) -> Result<Unknown<'_>> {
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), Finished::to_napi_value(env.raw(), Finished(inner))?) })
}

/// A call's result on its way to JavaScript: an external the `result*`
/// functions read (cheaper to make than a class instance; `index.js` wraps it).
pub struct Finished(CoreResult);

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
        unsafe { External::to_napi_value(env, External::new(val.0)) }
    }
}

/// A handler's return value as the core takes it (`undefined` is null, as in Python).
unsafe fn returned(env: sys::napi_env, value: sys::napi_value) -> Outcome {
    let mut ty = sys::ValueType::napi_undefined;
    unsafe { sys::napi_typeof(env, value, &mut ty) };
    if ty == sys::ValueType::napi_undefined {
        return Outcome::Returned(Value::Null);
    }
    match unsafe { to_value(env, value, 0) } {
        Ok(v) => Outcome::Returned(v),
        Err(e) => Outcome::not_json(&e),
    }
}

unsafe fn is_thenable(env: sys::napi_env, value: sys::napi_value) -> bool {
    let (mut ty, mut then) = (sys::ValueType::napi_undefined, ptr::null_mut());
    unsafe { sys::napi_typeof(env, value, &mut ty) };
    if ty != sys::ValueType::napi_object && ty != sys::ValueType::napi_function {
        return false;
    }
    if unsafe { sys::napi_get_named_property(env, value, c"then".as_ptr(), &mut then) } != sys::Status::napi_ok {
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut then) };
        return false;
    }
    unsafe { sys::napi_typeof(env, then, &mut ty) };
    ty == sys::ValueType::napi_function
}

/// The handler's second argument: `{ idempotencyKey, tool }`.
unsafe fn handler_context(env: sys::napi_env, ticket: &Ticket) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    napi_check(unsafe { sys::napi_create_object(env, &mut out) }, "object")?;
    let key = unsafe { js_string(env, ticket.idempotency_key())? };
    napi_check(unsafe { sys::napi_set_named_property(env, out, c"idempotencyKey".as_ptr(), key) }, "idempotencyKey")?;
    let tool = unsafe { js_string(env, ticket.tool())? };
    napi_check(unsafe { sys::napi_set_named_property(env, out, c"tool".as_ptr(), tool) }, "tool")?;
    Ok(out)
}

/// One field of a call's result (`CallResult::FIELDS`), or the whole result's JSON form for none.
#[napi(ts_args_type = "result: unknown, name: string | null", ts_return_type = "any")]
pub fn result_field(result: &External<CoreResult>, name: Option<String>) -> Json {
    Json(match name {
        Some(name) => result.field(&name).unwrap_or(Value::Null),
        None => result.to_value(),
    })
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
        Ok(Finished(self.host.finish_transport(ticket, outcome)))
    }
}
