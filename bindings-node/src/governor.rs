//! The governor for Node hosts: a loaded runtime and its calls.
//!
//! The core runs steps 1–7 in `begin` and 9 in `finish`; `governor.js`
//! invokes the JavaScript handler in between (with the timeout). Everything
//! here converts values and hands them on: no decision about a call is made
//! in this file.
//!
//! The core calls the audit sink and the approval callback synchronously from
//! inside `begin`/`finish`, which run on the JavaScript thread; the functions
//! are reached through a thread-local that holds the current `napi_env` for
//! the duration of each core call.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr;
use std::sync::Arc;

use harnessweaver_core::audit::{AuditEvent, AuditSink};
use harnessweaver_core::clock::ManualClock;
use harnessweaver_core::governor::{ApprovalRequest, Begin, GovernorOptions, InvokeOutcome, Ticket};
use harnessweaver_core::runtime::{resume, SpecFormat};
use harnessweaver_core::store::PendingApproval;
use harnessweaver_runtime::transport::TransportOptions;
use harnessweaver_core::{CallContext, CallResult, Error as CoreError, LoadOptions, Principal, Runtime, Tool};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{json, Value};

use super::{throw, to_js, to_value, Json};

fn invalid(code: &'static str, message: impl Into<String>) -> CoreError {
    CoreError::InvalidArgument { code, message: message.into() }
}

/// The host functions of the runtime whose core call is in progress.
#[derive(Clone, Copy)]
struct Current {
    env: sys::napi_env,
    audit: sys::napi_ref,
    approval: sys::napi_ref,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Calls the JavaScript function behind `reference` with `args`; `None` when
/// it throws (the exception is cleared: a host callback never breaks a call).
unsafe fn call_js(env: sys::napi_env, reference: sys::napi_ref, args: &[Value]) -> Option<sys::napi_value> {
    let mut f = ptr::null_mut();
    if unsafe { sys::napi_get_reference_value(env, reference, &mut f) } != sys::Status::napi_ok || f.is_null() {
        return None;
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        argv.push(unsafe { to_js(env, a) }.ok()?);
    }
    let mut recv = ptr::null_mut();
    unsafe { sys::napi_get_undefined(env, &mut recv) };
    let mut out = ptr::null_mut();
    let status = unsafe { sys::napi_call_function(env, recv, f, argv.len(), argv.as_ptr(), &mut out) };
    if status != sys::Status::napi_ok {
        let mut exc = ptr::null_mut();
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut exc) };
        return None;
    }
    Some(out)
}

/// Audit events to the `audit` function given to `load` (as plain objects).
#[derive(Debug)]
struct CallbackSink;

impl AuditSink for CallbackSink {
    fn record(&self, event: &AuditEvent) -> std::result::Result<(), CoreError> {
        let Some(cur) = CURRENT.with(|c| *c.borrow()) else {
            return Err(CoreError::Io { message: "audit callback called outside a call".into() });
        };
        if cur.audit.is_null() {
            return Ok(());
        }
        let value = serde_json::to_value(event).map_err(|e| CoreError::Io { message: format!("audit event: {e}") })?;
        match unsafe { call_js(cur.env, cur.audit, &[value]) } {
            Some(_) => Ok(()),
            None => Err(CoreError::Io { message: "the audit callback threw".into() }),
        }
    }
}

fn approval_answer(request: &ApprovalRequest, pending: &PendingApproval) -> Option<bool> {
    let cur = CURRENT.with(|c| *c.borrow())?;
    if cur.approval.is_null() {
        return None;
    }
    let request = serde_json::to_value(request).ok()?;
    let mut pending = serde_json::to_value(pending).ok()?;
    if let Some(map) = pending.as_object_mut() {
        map.remove("state");
    }
    let out = unsafe { call_js(cur.env, cur.approval, &[request, pending]) }?;
    let mut ty = 0;
    unsafe { sys::napi_typeof(cur.env, out, &mut ty) };
    if ty != sys::ValueType::napi_boolean {
        return None;
    }
    let mut b = false;
    unsafe { sys::napi_get_value_bool(cur.env, out, &mut b) };
    Some(b)
}

/// What `begin` and `finish*` hand JavaScript, as one string (one crossing,
/// one `JSON.parse`, instead of an object built property by property):
/// `R<result JSON>\n<text for the model>` for a call that has ended, or
/// `T<ticket JSON>` (`{ticket, tool, args, idempotency_key, timeout_ms}`) for
/// one whose handler JavaScript now invokes.
fn ended(result: &CallResult) -> String {
    let mut out = String::from("R");
    out.push_str(&serde_json::to_string(result).unwrap_or_default());
    out.push('\n');
    out.push_str(&result.to_model());
    out
}

/// `T{"ticket","tool","args","idempotency_key","timeout_ms"}`, written
/// straight from the ticket (no copy of the args into a new JSON value).
fn ticket_text(n: u32, ticket: &Ticket) -> String {
    let mut out = String::with_capacity(96 + ticket.tool.len() + ticket.idempotency_key.len());
    out.push_str("T{\"ticket\":");
    out.push_str(&n.to_string());
    out.push_str(",\"tool\":");
    out.push_str(&serde_json::to_string(&ticket.tool).unwrap_or_default());
    out.push_str(",\"args\":");
    out.push_str(&serde_json::to_string(&ticket.args).unwrap_or_else(|_| "null".into()));
    out.push_str(",\"idempotency_key\":");
    out.push_str(&serde_json::to_string(&ticket.idempotency_key).unwrap_or_default());
    out.push_str(",\"timeout_ms\":");
    out.push_str(&ticket.timeout_ms.to_string());
    out.push('}');
    out
}

/// A loaded harness with its governor (native side); `governor.js` wraps it.
#[napi]
pub struct NativeRuntime {
    pub(crate) inner: Arc<Runtime>,
    clock: Option<ManualClock>,
    audit: sys::napi_ref,
    approval: sys::napi_ref,
    /// Calls between `begin` and `finish*`, by ticket number.
    tickets: RefCell<HashMap<u32, Ticket>>,
    next_ticket: Cell<u32>,
}

fn reference(env: &Env, f: Option<Unknown<'_>>, what: &str) -> Result<sys::napi_ref> {
    let Some(f) = f else { return Ok(ptr::null_mut()) };
    match f.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(ptr::null_mut()),
        ValueType::Function => {}
        _ => return Err(throw(env, &invalid("invalid_options", format!("`{what}` must be a function")))),
    }
    let mut r = ptr::null_mut();
    // Kept for the runtime's life (one reference per loaded harness).
    let status = unsafe { sys::napi_create_reference(env.raw(), f.value().value, 1, &mut r) };
    if status != sys::Status::napi_ok {
        return Err(Error::from_reason("could not keep a reference to a callback"));
    }
    Ok(r)
}

pub(crate) fn principal(env: &Env, value: &Unknown<'_>) -> Result<Principal> {
    // A handle from `principalHandle` (a run's principal, converted once).
    if value.get_type()? == ValueType::External {
        let handle = unsafe { <External<Principal> as FromNapiRef>::from_napi_ref(env.raw(), value.value().value) };
        return match handle {
            Ok(p) => Ok(Principal::clone(p)),
            Err(_) => Err(throw(env, &invalid("invalid_principal", "a principal is an object with `id`, `roles`, `scopes` and `attrs`"))),
        };
    }
    let v = unsafe { to_value(env.raw(), value.value().value, 0) }
        .map_err(|_| throw(env, &invalid("invalid_principal", "a principal is an object with `id`, `roles`, `scopes` and `attrs`")))?;
    Principal::from_value(&v).map_err(|e| throw(env, &e))
}

/// Loads a harness for calls. `handlers` names the native tools whose
/// functions JavaScript holds; `codeTools` are `[manifest, origin]` pairs of
/// tools registered in code; `audit(event)` receives each audit event;
/// `onApproval(request, approval)` may answer approvals inline (a boolean).
/// `clockMs` and `sequentialIds` are for tests.
#[napi(ts_args_type = "path: string, handlers: string[], codeTools: Array<[unknown, string]>, audit?: ((event: Record<string, unknown>) => unknown) | null, onApproval?: ((request: Record<string, unknown>, approval: Record<string, unknown>) => unknown) | null, clockMs?: number | null, sequentialIds?: boolean | null, sandboxWorker?: string | null")]
#[expect(clippy::too_many_arguments, reason = "load's options, flattened")]
pub fn load_runtime(
    env: Env,
    path: String,
    handlers: Vec<String>,
    code_tools: Vec<Unknown<'_>>,
    audit: Option<Unknown<'_>>,
    on_approval: Option<Unknown<'_>>,
    clock_ms: Option<f64>,
    sequential_ids: Option<bool>,
    sandbox_worker: Option<String>,
) -> Result<NativeRuntime> {
    let mut extra = Vec::new();
    for pair in code_tools {
        let pair = unsafe { to_value(env.raw(), pair.value().value, 0) }.map_err(|e| throw(&env, &e))?;
        let (manifest, origin) = match pair.as_array().map(Vec::as_slice) {
            Some([m, Value::String(o)]) => (m.clone(), o.clone()),
            _ => return Err(throw(&env, &invalid("invalid_tools", "code tools are [manifest, origin] pairs"))),
        };
        let tool = match &manifest {
            Value::String(text) => Tool::from_manifest_text(text, &origin),
            other => Tool::from_manifest_value(other, &origin),
        };
        extra.push(tool.map_err(|e| throw(&env, &e))?);
    }
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a test clock in ms")]
    let clock = clock_ms.map(|ms| ManualClock::new(ms as u64));
    let sandbox_worker = sandbox_worker.filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
    let audit = reference(&env, audit, "audit")?;
    let approval = reference(&env, on_approval, "onApproval")?;
    let has_audit = !audit.is_null();
    let options = LoadOptions {
        host_handlers: handlers,
        governor: GovernorOptions {
            clock: clock.clone().map(|c| Arc::new(c) as _),
            audit: if has_audit { Some(Arc::new(CallbackSink)) } else { None },
            sequential_ids: sequential_ids.unwrap_or(false),
            extra_tools: extra,
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions { sandbox_worker, ..TransportOptions::default() })),
            ..GovernorOptions::default()
        },
        ..LoadOptions::default()
    };
    let mut inner = harnessweaver_runtime::load(&path, options).map_err(|e| throw(&env, &e))?;
    if !has_audit && matches!(inner.harness().spec().audit_sink, harnessweaver_core::harness::AuditSink::Callback) {
        let e = invalid("audit_callback_missing", "harness.yaml sends audit events to a callback (`audit.sink: callback`); pass `audit` to load()");
        return Err(throw(&env, &e));
    }
    if !approval.is_null() {
        inner.set_approval_callback(Some(Arc::new(approval_answer)));
    }
    Ok(NativeRuntime { inner: Arc::new(inner), clock, audit, approval, tickets: RefCell::new(HashMap::new()), next_ticket: Cell::new(0) })
}

#[napi]
impl NativeRuntime {
    /// Runs `f` with this runtime's callbacks reachable by the core.
    fn with_callbacks<T>(&self, env: &Env, f: impl FnOnce() -> T) -> T {
        with_callbacks(env, Callbacks { audit: self.audit, approval: self.approval }, f)
    }

    /// Steps 1–7: the call's result (refused or pending) or a ticket to invoke (see [`ended`]).
    #[napi(ts_args_type = "tool: string, args: unknown, principal: unknown, tenant?: string | null, task?: string | null, runId?: string | null, approvalId?: string | null")]
    #[expect(clippy::too_many_arguments, reason = "a call's context, flattened")]
    pub fn begin(
        &self,
        env: Env,
        tool: String,
        args: Unknown<'_>,
        principal_value: Unknown<'_>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
    ) -> Result<String> {
        let args = unsafe { to_value(env.raw(), args.value().value, 0) }.map_err(|e| throw(&env, &e))?;
        let ctx = CallContext { principal: principal(&env, &principal_value)?, tenant, task, run_id, approval_id, ..CallContext::default() };
        let begin = self.with_callbacks(&env, || self.inner.begin(&tool, args, &ctx));
        Ok(self.begun(begin))
    }

    fn begun(&self, begin: Begin) -> String {
        match begin {
            Begin::Done(result) => ended(&result),
            Begin::Invoke(ticket) => {
                let n = self.next_ticket.get().wrapping_add(1);
                self.next_ticket.set(n);
                let head = ticket_text(n, &ticket);
                self.tickets.borrow_mut().insert(n, ticket);
                head
            }
        }
    }

    /// Step 9 for a handler that returned `value` (a value with no JSON form ends `handler_error`).
    #[napi(ts_args_type = "ticket: number, value: unknown")]
    pub fn finish_returned(&self, env: Env, ticket: u32, value: Unknown<'_>) -> Result<String> {
        let outcome = match unsafe { to_value(env.raw(), value.value().value, 0) } {
            Ok(v) => InvokeOutcome::Returned(v),
            Err(e) => InvokeOutcome::NotJson { reason: e.to_string() },
        };
        self.finish(&env, ticket, outcome)
    }

    /// Steps 8 and 9 for a tool whose transport the core owns (http, code,
    /// mcp): the blocking invoke runs on libuv's thread pool, never on the
    /// event loop; step 9 and the audit event follow on the JavaScript thread.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn finish_transport(&self, env: Env, ticket: u32) -> Result<AsyncTask<TransportTask>> {
        let Some(ticket) = self.tickets.borrow_mut().remove(&ticket) else {
            return Err(throw(&env, &invalid("ticket_used", "this call has already finished")));
        };
        Ok(AsyncTask::new(TransportTask {
            runtime: self.inner.clone(),
            ticket: Some(ticket),
            callbacks: Callbacks { audit: self.audit, approval: self.approval },
        }))
    }

    /// Ends a call whose handler threw `kind` (the error's `name`).
    #[napi]
    pub fn finish_failed(&self, env: Env, ticket: u32, kind: String) -> Result<String> {
        self.finish(&env, ticket, InvokeOutcome::Failed { kind })
    }

    /// Ends a call whose handler overran its timeout and was abandoned.
    #[napi]
    pub fn finish_timed_out(&self, env: Env, ticket: u32) -> Result<String> {
        self.finish(&env, ticket, InvokeOutcome::TimedOut)
    }

    fn finish(&self, env: &Env, ticket: u32, outcome: InvokeOutcome) -> Result<String> {
        let Some(ticket) = self.tickets.borrow_mut().remove(&ticket) else {
            return Err(throw(env, &invalid("ticket_used", "this call has already finished")));
        };
        let result = self.with_callbacks(env, || self.inner.finish(ticket, outcome));
        Ok(ended(&result))
    }

    /// `principal` converted once, as a handle every call of a run passes
    /// instead of the object (refused as `invalid_principal` like any call's).
    #[napi(ts_args_type = "principal: unknown", ts_return_type = "unknown")]
    pub fn principal_handle(&self, env: Env, principal_value: Unknown<'_>) -> Result<External<Principal>> {
        Ok(External::new(principal(&env, &principal_value)?))
    }

    /// A new run id.
    #[napi]
    pub fn new_run(&self) -> String {
        self.inner.governor().new_run_id()
    }

    /// The labels of run `runId`: `{private, untrusted}`.
    #[napi(ts_return_type = "{ private: boolean, untrusted: boolean }")]
    pub fn labels(&self, env: Env, run_id: String) -> Result<Json> {
        let labels = self.inner.governor().store().labels(&run_id).map_err(|e| throw(&env, &invalid("store_unavailable", e.message)))?;
        Ok(Json(serde_json::to_value(labels).unwrap_or(Value::Null)))
    }

    /// Grants approval `id` as `approver` (with the arguments the approver
    /// edited, if any) and begins the approved call.
    #[napi(ts_args_type = "id: string, approver: unknown, args?: unknown")]
    pub fn approve_and_begin(&self, env: Env, id: String, approver: Unknown<'_>, args: Option<Unknown<'_>>) -> Result<String> {
        let approver = principal(&env, &approver)?;
        let edited = match args {
            Some(a) if !matches!(a.get_type()?, ValueType::Undefined | ValueType::Null) => {
                Some(unsafe { to_value(env.raw(), a.value().value, 0) }.map_err(|e| throw(&env, &e))?)
            }
            _ => None,
        };
        let governor = self.inner.governor();
        let begin = self
            .with_callbacks(&env, || -> std::result::Result<Begin, CoreError> {
                let approval = governor.approve_edited(&id, &approver, edited)?;
                let (tool, args, ctx) = resume(&approval)?;
                Ok(governor.begin(&tool, args, &ctx))
            })
            .map_err(|e| throw(&env, &e))?;
        Ok(self.begun(begin))
    }

    /// Grants approval `id` without running the call; returns the approval.
    #[napi(ts_args_type = "id: string, approver: unknown", ts_return_type = "Record<string, unknown>")]
    pub fn grant(&self, env: Env, id: String, approver: Unknown<'_>) -> Result<Json> {
        let approver = principal(&env, &approver)?;
        let approval = self.inner.governor().approve(&id, &approver).map_err(|e| throw(&env, &e))?;
        Ok(Json(serde_json::to_value(approval).unwrap_or(Value::Null)))
    }

    /// Each step's verdict for a call without running it: `[explanation, text]`.
    #[napi(
        ts_args_type = "tool: string, args: unknown, principal: unknown, tenant?: string | null, task?: string | null, runId?: string | null",
        ts_return_type = "[Record<string, unknown>, string]"
    )]
    #[expect(clippy::too_many_arguments, reason = "a call's context, flattened")]
    pub fn explain(
        &self,
        env: Env,
        tool: String,
        args: Unknown<'_>,
        principal_value: Unknown<'_>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
    ) -> Result<Json> {
        let args = unsafe { to_value(env.raw(), args.value().value, 0) }.map_err(|e| throw(&env, &e))?;
        let ctx = CallContext { principal: principal(&env, &principal_value)?, tenant, task, run_id, ..CallContext::default() };
        let explanation = self.inner.explain(&tool, args, &ctx);
        Ok(Json(json!([explanation.to_value(), explanation.to_text()])))
    }

    /// Denies approval `id`; returns the approval.
    #[napi(ts_args_type = "id: string, by: unknown, reason: string", ts_return_type = "Record<string, unknown>")]
    pub fn deny(&self, env: Env, id: String, by: Unknown<'_>, reason: String) -> Result<Json> {
        let by = principal(&env, &by)?;
        let approval = self.inner.deny(&id, &by, &reason).map_err(|e| throw(&env, &e))?;
        Ok(Json(serde_json::to_value(approval).unwrap_or(Value::Null)))
    }

    /// Approvals pending, or granted and not yet used.
    #[napi(ts_return_type = "Array<Record<string, unknown>>")]
    pub fn approvals(&self, env: Env) -> Result<Json> {
        let open = self.inner.governor().open_approvals().map_err(|e| throw(&env, &e))?;
        Ok(Json(serde_json::to_value(open).unwrap_or(Value::Null)))
    }

    /// The tools as a model API takes them (`openai`, `anthropic`, `mcp`).
    #[napi(ts_args_type = "format: string, principal?: unknown, tenant?: string | null", ts_return_type = "Array<Record<string, unknown>>")]
    pub fn tool_specs(&self, env: Env, format: String, principal_value: Option<Unknown<'_>>, tenant: Option<String>) -> Result<Json> {
        let format = SpecFormat::parse(&format).map_err(|e| throw(&env, &e))?;
        let p = match principal_value {
            Some(v) if !matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) => Some(principal(&env, &v)?),
            _ => None,
        };
        Ok(Json(self.inner.tool_specs(format, p.as_ref(), tenant.as_deref())))
    }

    /// Moves a test clock forward (only for runtimes loaded with `clockMs`).
    #[napi]
    pub fn advance_ms(&self, env: Env, ms: f64) -> Result<()> {
        match &self.clock {
            #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "ms")]
            Some(clock) => {
                clock.advance_ms(ms as u64);
                Ok(())
            }
            None => Err(throw(&env, &invalid("no_test_clock", "this harness reads the system clock"))),
        }
    }
}


/// The callback references of one runtime.
#[derive(Clone, Copy)]
pub struct Callbacks {
    audit: sys::napi_ref,
    approval: sys::napi_ref,
}

// SAFETY: the references are only dereferenced on the JavaScript thread
// (`resolve` of the task, inside `with_callbacks`); the pool thread only
// carries them.
unsafe impl Send for Callbacks {}

fn with_callbacks<T>(env: &Env, callbacks: Callbacks, f: impl FnOnce() -> T) -> T {
    let cur = Current { env: env.raw(), audit: callbacks.audit, approval: callbacks.approval };
    let previous = CURRENT.with(|c| c.replace(Some(cur)));
    let out = f();
    CURRENT.with(|c| *c.borrow_mut() = previous);
    out
}

/// A core transport's invoke on libuv's thread pool.
pub struct TransportTask {
    runtime: Arc<Runtime>,
    ticket: Option<Ticket>,
    callbacks: Callbacks,
}

impl Task for TransportTask {
    type Output = InvokeOutcome;
    type JsValue = String;

    fn compute(&mut self) -> Result<InvokeOutcome> {
        match &self.ticket {
            Some(ticket) => Ok(self.runtime.invoke(ticket)),
            None => Err(Error::from_reason("this call has already finished")),
        }
    }

    fn resolve(&mut self, env: Env, outcome: InvokeOutcome) -> Result<String> {
        let Some(ticket) = self.ticket.take() else {
            return Err(Error::from_reason("this call has already finished"));
        };
        let result = with_callbacks(&env, self.callbacks, || self.runtime.finish(ticket, outcome));
        Ok(ended(&result))
    }
}
