//! A loaded harness for Node (`NativeHost`), a call's ticket (`NativeTicket`)
//! and its result (`CallResult`), over `harnessweaver_core::host`.
//!
//! Conversion only: `begin` runs steps 1–7 in the core and returns a ticket or
//! a finished result (JavaScript tells them apart with `instanceof`); `finish*`
//! hands the handler's outcome back, and the core judges its deadline, runs
//! step 9 and writes the audit event. The audit and approval functions are
//! called by the core from inside those calls, on the JavaScript thread.
#![allow(clippy::too_many_arguments, reason = "napi functions take their JavaScript arguments one by one")]

use std::ptr;
use std::sync::Arc;
use std::thread::{self, ThreadId};

use harnessweaver_core::host::{
    ApprovalAnswer, ApprovalCallback, ApprovalView, AuditCallback, AuditEvent, Begun, CallContext, CallResult as CoreResult, Error as CoreError,
    HandlerDecl, HandlerMode, Host, HostOptions, ManifestSource, Outcome, Principal, RefusalClass, SpecFormat, TestOptions, Ticket, TicketCell,
    TicketRoute, TransportOutcome,
};
use harnessweaver_runtime::transport::TransportOptions;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{json, Value};

use crate::{convert, string, throw, to_js, to_value, Json};

/// A JavaScript function the core calls back (audit, approval).
struct JsFn {
    env: sys::napi_env,
    f: sys::napi_ref,
    thread: ThreadId,
}

// SAFETY: the core calls back only from inside `begin`/`finish*`, which run on
// the JavaScript thread (a transport's finish runs in its task's `resolve`);
// `call` checks the thread before any N-API call.
unsafe impl Send for JsFn {}
unsafe impl Sync for JsFn {}

impl JsFn {
    fn new(env: &Env, f: Option<Function<'_>>) -> Result<Option<Arc<JsFn>>> {
        let Some(f) = f else { return Ok(None) };
        let mut r = ptr::null_mut();
        // Kept for the host's life: one reference per loaded harness.
        if unsafe { sys::napi_create_reference(env.raw(), f.raw(), 1, &mut r) } != sys::Status::napi_ok {
            return Err(Error::from_reason("could not keep a reference to a callback"));
        }
        Ok(Some(Arc::new(JsFn { env: env.raw(), f: r, thread: thread::current().id() })))
    }

    /// Calls the function; `Err` is the thrown error's `name` (the exception is cleared).
    fn call(&self, args: &[Value]) -> std::result::Result<sys::napi_value, String> {
        if thread::current().id() != self.thread {
            return Err("a call off the JavaScript thread".into());
        }
        let env = self.env;
        let (mut f, mut recv, mut out) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        let argv = args.iter().map(|a| unsafe { to_js(env, a) }).collect::<Result<Vec<_>>>().map_err(|e| e.reason.clone())?;
        let called = unsafe {
            sys::napi_get_reference_value(env, self.f, &mut f);
            sys::napi_get_undefined(env, &mut recv);
            sys::napi_call_function(env, recv, f, argv.len(), argv.as_ptr(), &mut out)
        };
        if called == sys::Status::napi_ok {
            return Ok(out);
        }
        let (mut exc, mut name) = (ptr::null_mut(), ptr::null_mut());
        unsafe {
            sys::napi_get_and_clear_last_exception(env, &mut exc);
            if sys::napi_get_named_property(env, exc, c"name".as_ptr(), &mut name) != sys::Status::napi_ok {
                sys::napi_get_and_clear_last_exception(env, &mut name);
                return Err("Error".into());
            }
        }
        Err(unsafe { string(env, name) }.unwrap_or_else(|_| "Error".into()))
    }
}

impl AuditCallback for JsFn {
    fn record(&self, event: &AuditEvent) -> std::result::Result<(), String> {
        self.call(&[serde_json::to_value(event).map_err(|e| e.to_string())?]).map(|_| ())
    }
}

impl ApprovalCallback for JsFn {
    fn decide(&self, view: &ApprovalView<'_>) -> ApprovalAnswer {
        match self.call(&[view.request(), view.approval()]) {
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

fn ctx(env: &Env, p: &Unknown<'_>, tenant: Option<String>, task: Option<String>, run_id: Option<String>) -> Result<CallContext> {
    Ok(CallContext { principal: principal(env, p)?, tenant, task, run_id, ..CallContext::default() })
}

/// A harness loaded by the core for calls (or only read, by `inspectHost`).
#[napi]
pub struct NativeHost {
    pub(crate) inner: Arc<Host>,
}

/// A call allowed to run: its handler runs, then `finish*` ends it once.
#[napi]
pub struct NativeTicket {
    cell: TicketCell,
}

/// What a call ended with; every field is the core's, read when asked.
#[napi]
pub struct CallResult {
    pub(crate) inner: CoreResult,
}

type Either2 = Either<NativeTicket, CallResult>;

fn begun(env: &Env, begun: std::result::Result<Begun, CoreError>) -> Result<Either2> {
    Ok(match begun.map_err(|e| throw(env, &e))? {
        Begun::Allowed(t) => Either::A(NativeTicket { cell: TicketCell::new(t) }),
        Begun::Refused(inner) | Begun::Pending(inner) => Either::B(CallResult { inner }),
    })
}

/// Loads `harness.yaml`, reading it once: `handlers` and `asyncHandlers` name
/// the native tools whose functions JavaScript holds; `codeTools` are
/// `[manifest, origin]` pairs; `clockMs`/`sequentialIds` are for tests.
#[napi(
    ts_args_type = "path: string, handlers: string[], asyncHandlers: string[], codeTools: Array<[unknown, string]>, audit?: ((event: Record<string, unknown>) => unknown) | null, onApproval?: ((request: Record<string, unknown>, approval: Record<string, unknown>) => unknown) | null, clockMs?: number | null, sequentialIds?: boolean | null, sandboxWorker?: string | null"
)]
pub fn load_host(
    env: Env,
    path: String,
    handlers: Vec<String>,
    async_handlers: Vec<String>,
    code_tools: Vec<Unknown<'_>>,
    audit: Option<Function<'_>>,
    on_approval: Option<Function<'_>>,
    clock_ms: Option<f64>,
    sequential_ids: Option<bool>,
    sandbox_worker: Option<String>,
) -> Result<NativeHost> {
    let decl = |mode| move |tool| HandlerDecl { tool, mode, takes_idempotency_key: true };
    let mut decls: Vec<HandlerDecl> = handlers.into_iter().map(decl(HandlerMode::CallerThread)).collect();
    decls.extend(async_handlers.into_iter().map(decl(HandlerMode::Async)));
    let sources = code_tools.iter().map(|pair| match convert(&env, pair)? {
        Value::Array(mut v) if v.len() == 2 => {
            let origin = v.pop().and_then(|o| o.as_str().map(str::to_string)).unwrap_or_else(|| ManifestSource::DEFAULT_ORIGIN.into());
            Ok(match v.pop() {
                Some(Value::String(text)) => ManifestSource::Text { text, origin },
                value => ManifestSource::Value { value: value.unwrap_or(Value::Null), origin },
            })
        }
        value => Ok(ManifestSource::Value { value, origin: ManifestSource::DEFAULT_ORIGIN.into() }),
    });
    let audit = JsFn::new(&env, audit)?;
    let approval = JsFn::new(&env, on_approval)?;
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a test clock in ms")]
    let test = clock_ms.map(|ms| TestOptions { clock_ms: ms as u64, sequential_ids: sequential_ids.unwrap_or(false) });
    let transports = TransportOptions { sandbox_worker: sandbox_worker.filter(|p| !p.is_empty()).map(Into::into), ..TransportOptions::default() };
    let options = HostOptions {
        handlers: decls,
        code_tools: sources.collect::<Result<_>>()?,
        audit: audit.map(|a| a as _),
        on_approval: approval.map(|a| a as _),
        test,
        backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)),
        ..HostOptions::default()
    };
    let host = Host::load(path.as_ref(), options).map_err(|e| throw(&env, &CoreError::Load(e.problems)))?;
    Ok(NativeHost { inner: Arc::new(host) })
}

/// Reads `harness.yaml` and its manifests only: calls fail `not_loaded_for_calls`.
#[napi]
pub fn inspect_host(env: Env, path: String) -> Result<NativeHost> {
    let host = Host::inspect(path.as_ref()).map_err(|e| throw(&env, &CoreError::Load(e.problems)))?;
    Ok(NativeHost { inner: Arc::new(host) })
}

#[napi]
impl NativeHost {
    /// Every tool's description, in load order (manifests, then tools registered in code).
    #[napi(ts_return_type = "Array<Record<string, unknown>>")]
    pub fn describe_tools(&self) -> Vec<Json> {
        self.inner.tools().map(|t| Json(t.describe())).collect()
    }

    /// Steps 1–7: a ticket to run, or the finished (refused or pending) result.
    #[napi(
        ts_args_type = "tool: string, args: unknown, principal: unknown, tenant?: string | null, task?: string | null, runId?: string | null, approvalId?: string | null",
        ts_return_type = "NativeTicket | CallResult"
    )]
    pub fn begin(
        &self,
        env: Env,
        tool: String,
        args: Unknown<'_>,
        p: Unknown<'_>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
    ) -> Result<Either2> {
        let args = convert(&env, &args)?;
        let ctx = CallContext { approval_id, ..ctx(&env, &p, tenant, task, run_id)? };
        begun(&env, self.inner.begin(&tool, args, &ctx))
    }

    /// Ends a call whose handler returned `value` (no JSON form: `handler_error`).
    #[napi(ts_args_type = "ticket: NativeTicket, value: unknown")]
    pub fn finish(&self, env: Env, ticket: &NativeTicket, value: Unknown<'_>) -> Result<CallResult> {
        let outcome = match unsafe { to_value(env.raw(), value.raw(), 0) } {
            Ok(v) => Outcome::Returned(v),
            Err(e) => Outcome::NotJson { reason: e.to_string() },
        };
        self.end(&env, ticket, outcome)
    }

    /// Ends a call whose handler threw `kind` (the error's `name`); `null`: abandoned at its deadline.
    #[napi]
    pub fn finish_failed(&self, env: Env, ticket: &NativeTicket, kind: Option<String>) -> Result<CallResult> {
        self.end(&env, ticket, kind.map_or(Outcome::TimedOut, |kind| Outcome::Failed { kind }))
    }

    fn end(&self, env: &Env, ticket: &NativeTicket, outcome: Outcome) -> Result<CallResult> {
        let ticket = ticket.cell.take().map_err(|e| throw(env, &e))?;
        Ok(CallResult { inner: self.inner.finish(ticket, outcome) })
    }

    /// Steps 8 and 9 for a tool on the core's transports (http, code, mcp):
    /// the transport runs on libuv's pool, step 9 back on the JavaScript thread.
    #[napi(ts_return_type = "Promise<CallResult>")]
    pub fn run_transport(&self, env: Env, ticket: &NativeTicket) -> Result<AsyncTask<TransportTask>> {
        let ticket = ticket.cell.take().map_err(|e| throw(&env, &e))?;
        Ok(AsyncTask::new(TransportTask { host: Arc::clone(&self.inner), ticket: Some(ticket) }))
    }

    /// Grants approval `id` as `approver` (with the approver's edited args, if
    /// any) and begins the approved call from step 1.
    #[napi(ts_args_type = "id: string, approver: unknown, args?: unknown", ts_return_type = "NativeTicket | CallResult")]
    pub fn approve_and_resume(&self, env: Env, id: String, approver: Unknown<'_>, args: Option<Unknown<'_>>) -> Result<Either2> {
        let approver = principal(&env, &approver)?;
        let edited = args.filter(|a| !matches!(a.get_type(), Ok(ValueType::Undefined | ValueType::Null))).map(|a| convert(&env, &a)).transpose()?;
        begun(&env, self.inner.approve_and_resume(&id, &approver, edited))
    }

    /// Grants approval `id` without running the call; returns the approval.
    #[napi(ts_args_type = "id: string, approver: unknown", ts_return_type = "Record<string, unknown>")]
    pub fn grant(&self, env: Env, id: String, approver: Unknown<'_>) -> Result<Json> {
        let approver = principal(&env, &approver)?;
        self.inner.grant(&id, &approver).map(|a| Json(json!(a))).map_err(|e| throw(&env, &e))
    }

    /// Denies approval `id`; returns the approval.
    #[napi(ts_args_type = "id: string, by: unknown, reason: string", ts_return_type = "Record<string, unknown>")]
    pub fn deny(&self, env: Env, id: String, by: Unknown<'_>, reason: String) -> Result<Json> {
        let by = principal(&env, &by)?;
        self.inner.deny(&id, &by, &reason).map(|a| Json(json!(a))).map_err(|e| throw(&env, &e))
    }

    /// Approvals pending, or granted and not yet used.
    #[napi(ts_return_type = "Array<Record<string, unknown>>")]
    pub fn approvals(&self, env: Env) -> Result<Json> {
        self.inner.approvals().map(|a| Json(json!(a))).map_err(|e| throw(&env, &e))
    }

    /// Each step's verdict for a call without running it; `text` is the readable form.
    #[napi(
        ts_args_type = "tool: string, args: unknown, principal: unknown, tenant?: string | null, task?: string | null, runId?: string | null",
        ts_return_type = "Record<string, unknown>"
    )]
    pub fn explain(
        &self,
        env: Env,
        tool: String,
        args: Unknown<'_>,
        p: Unknown<'_>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
    ) -> Result<Json> {
        let args = convert(&env, &args)?;
        let ctx = ctx(&env, &p, tenant, task, run_id)?;
        self.inner.explain(&tool, args, &ctx).map(Json).map_err(|e| throw(&env, &e))
    }

    /// The tools as a model API takes them (`openai`, `anthropic`, `mcp`).
    #[napi(ts_args_type = "format: string, principal?: unknown, tenant?: string | null", ts_return_type = "Array<Record<string, unknown>>")]
    pub fn tool_specs(&self, env: Env, format: String, p: Option<Unknown<'_>>, tenant: Option<String>) -> Result<Json> {
        let format = SpecFormat::parse(&format).map_err(|e| throw(&env, &e))?;
        let p = p.filter(|v| !matches!(v.get_type(), Ok(ValueType::Undefined | ValueType::Null))).map(|v| principal(&env, &v)).transpose()?;
        self.inner.tool_specs(format, p.as_ref(), tenant.as_deref()).map(Json).map_err(|e| throw(&env, &e))
    }

    /// `principal` converted once: a handle a run's calls pass instead of the object.
    #[napi(ts_args_type = "principal: unknown", ts_return_type = "unknown")]
    pub fn principal_handle(&self, env: Env, p: Unknown<'_>) -> Result<External<Principal>> {
        Ok(External::new(principal(&env, &p)?))
    }

    /// A new run id.
    #[napi]
    pub fn new_run(&self, env: Env) -> Result<String> {
        self.inner.new_run().map_err(|e| throw(&env, &e))
    }

    /// The labels of run `runId`: `{private, untrusted}`.
    #[napi(ts_return_type = "{ private: boolean, untrusted: boolean }")]
    pub fn labels(&self, env: Env, run_id: String) -> Result<Json> {
        self.inner.labels(&run_id).map(|l| Json(json!(l))).map_err(|e| throw(&env, &e))
    }

    /// Moves the test clock forward (`no_test_clock` without one).
    #[napi]
    pub fn advance_ms(&self, env: Env, ms: u32) -> Result<()> {
        self.inner.advance_clock(u64::from(ms)).map_err(|e| throw(&env, &e))
    }
}

#[napi]
impl NativeTicket {
    /// The tool.
    #[napi(getter)]
    pub fn tool(&self) -> Option<String> {
        self.cell.peek(|t| t.tool().to_string())
    }

    /// The validated arguments.
    #[napi(getter, ts_return_type = "unknown")]
    pub fn args(&self) -> Json {
        Json(self.cell.peek(|t| t.args().clone()).unwrap_or(Value::Null))
    }

    /// The call's idempotency key.
    #[napi(getter)]
    pub fn idempotency_key(&self) -> Option<String> {
        self.cell.peek(|t| t.idempotency_key().to_string())
    }

    /// The time left before the deadline, in ms (what a timer waits).
    #[napi(getter)]
    pub fn remaining_ms(&self) -> f64 {
        self.cell.peek(|t| t.remaining().as_secs_f64() * 1000.0).unwrap_or(0.0)
    }

    /// Whether the core's transports run it (`runTransport`), not a JavaScript function.
    #[napi(getter)]
    pub fn transport(&self) -> bool {
        self.cell.peek(|t| t.route() == TicketRoute::Transport).unwrap_or(false)
    }
}

#[napi]
impl CallResult {
    /// Whether the call ran.
    #[napi(getter)]
    pub fn allowed(&self) -> bool {
        self.inner.is_allowed()
    }

    /// The name of the refusal class for this result (none when allowed).
    #[napi(getter)]
    pub fn refusal_class(&self) -> Option<&'static str> {
        RefusalClass::of(self.inner.decision, self.inner.step).map(RefusalClass::name)
    }

    /// One field of the result's JSON form (index.js makes them properties).
    #[napi(ts_return_type = "unknown")]
    pub fn field(&self, name: String) -> Json {
        let r = &self.inner;
        Json(match name.as_str() {
            "decision" => json!(r.decision),
            "code" => json!(r.code),
            "step" => json!(r.step),
            "message" => json!(r.message),
            "tool" => json!(r.tool),
            "call_id" => json!(r.call_id),
            "run_id" => json!(r.run_id),
            "output" => json!(r.output),
            "output_report" => json!(r.output_report),
            "approval" => json!(r.approval),
            "retry_after_ms" => json!(r.retry_after_ms),
            "reasons" => json!(r.reasons),
            "labels" => json!(r.labels),
            "would_refuse" => json!(r.would_refuse),
            _ => Value::Null,
        })
    }

    /// The text to hand back to the model.
    #[napi]
    pub fn to_model(&self) -> String {
        self.inner.to_model()
    }

    /// The core's JSON form (what `JSON.stringify` prints).
    #[napi(js_name = "toJSON", ts_return_type = "Record<string, unknown>")]
    pub fn to_json(&self) -> Json {
        Json(self.inner.to_value())
    }
}

/// A core transport's call on libuv's thread pool.
pub struct TransportTask {
    host: Arc<Host>,
    ticket: Option<Ticket>,
}

impl Task for TransportTask {
    type Output = TransportOutcome;
    type JsValue = CallResult;

    fn compute(&mut self) -> Result<TransportOutcome> {
        let ticket = self.ticket.as_ref().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        Ok(self.host.run_transport(ticket))
    }

    fn resolve(&mut self, _env: Env, outcome: TransportOutcome) -> Result<CallResult> {
        let ticket = self.ticket.take().ok_or_else(|| Error::from_reason("this call has already finished"))?;
        Ok(CallResult { inner: self.host.finish_transport(ticket, outcome) })
    }
}
