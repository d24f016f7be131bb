//! The governor for Python hosts: a loaded runtime, principals, tickets and
//! call results.
//!
//! The core runs steps 1–7 in `begin` and 9 in `finish`; Python invokes the
//! handler in between (`harnessweaver/_governor.py` does that, with the
//! timeout). Everything here converts values and hands them on: no decision
//! about a call is made in this file.

use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_core::audit::{AuditEvent, AuditSink};
use harnessweaver_core::clock::ManualClock;
use harnessweaver_core::governor::{ApprovalCallback, ApprovalRequest, Begin, GovernorOptions, InvokeOutcome, Ticket as CoreTicket};
use harnessweaver_core::runtime::{resume, SpecFormat};
use harnessweaver_core::store::PendingApproval;
use harnessweaver_runtime::transport::TransportOptions;
use harnessweaver_core::{CallContext, CallResult as CoreResult, Error, LoadOptions, Principal as CorePrincipal, Runtime as CoreRuntime, Tool};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;

use super::{convert, to_py, to_py_err, to_value};

fn invalid(code: &'static str, message: impl Into<String>) -> Error {
    Error::InvalidArgument { code, message: message.into() }
}

/// Who makes a call: an id, roles, scopes and attributes.
#[pyclass(frozen, module = "harnessweaver", name = "Principal")]
pub struct Principal {
    pub(crate) inner: CorePrincipal,
}

#[pymethods]
impl Principal {
    #[new]
    #[pyo3(signature = (id, roles = None, scopes = None, attrs = None))]
    fn new(py: Python<'_>, id: &Bound<'_, PyAny>, roles: Option<&Bound<'_, PyAny>>, scopes: Option<&Bound<'_, PyAny>>, attrs: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let d = PyDict::new(py);
        d.set_item("id", id)?;
        if let Some(r) = roles {
            d.set_item("roles", r)?;
        }
        if let Some(s) = scopes {
            d.set_item("scopes", s)?;
        }
        if let Some(a) = attrs {
            d.set_item("attrs", a)?;
        }
        principal_from(py, d.as_any())
    }

    /// Reads a principal from a mapping `{id, roles, scopes, attrs}`.
    #[staticmethod]
    fn from_mapping(py: Python<'_>, mapping: &Bound<'_, PyAny>) -> PyResult<Self> {
        principal_from(py, mapping)
    }

    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn roles(&self) -> Vec<String> {
        self.inner.roles.clone()
    }
    #[getter]
    fn scopes(&self) -> Vec<String> {
        self.inner.scopes.clone()
    }
    #[getter]
    fn attrs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &Value::Object(self.inner.attrs.clone()))
    }

    /// The principal as a plain dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.to_value())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<PyRef<'_, Principal>>().is_ok_and(|o| o.inner == self.inner)
    }

    fn __repr__(&self) -> String {
        format!("Principal(id={:?}, roles={:?}, scopes={:?})", self.inner.id, self.inner.roles, self.inner.scopes)
    }
}

fn principal_from(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Principal> {
    let value = match to_value(obj, 0) {
        Ok(v) => v,
        Err(_) => return Err(to_py_err(py, &invalid("invalid_principal", "a principal is a mapping with `id`, `roles`, `scopes` and `attrs`"))),
    };
    CorePrincipal::from_value(&value).map(|inner| Principal { inner }).map_err(|e| to_py_err(py, &e))
}

/// A principal argument: a `Principal` or a mapping.
pub(crate) fn principal_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<CorePrincipal> {
    if let Ok(p) = obj.cast::<Principal>() {
        return Ok(p.get().inner.clone());
    }
    if obj.is_none() {
        return Err(to_py_err(py, &invalid("invalid_principal", "a call needs a principal (a mapping with `id`, or hw.Principal)")));
    }
    principal_from(py, obj).map(|p| p.inner)
}

/// A call that passed steps 1–7: Python invokes `tool` with `args`, then
/// hands the outcome to `Runtime.finish_*`. A ticket finishes once.
#[pyclass(frozen, module = "harnessweaver._native", name = "Ticket")]
pub struct Ticket {
    pub(crate) inner: Mutex<Option<CoreTicket>>,
    #[pyo3(get)]
    pub(crate) tool: String,
    #[pyo3(get)]
    pub(crate) idempotency_key: String,
    #[pyo3(get)]
    pub(crate) timeout_ms: u64,
}

#[pymethods]
impl Ticket {
    /// The validated arguments, as Python values (a fresh dict each time).
    #[getter]
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(t) => to_py(py, &t.args),
            None => Ok(PyDict::new(py).into_any()),
        }
    }

    fn __repr__(&self) -> String {
        format!("Ticket(tool={:?}, timeout_ms={})", self.tool, self.timeout_ms)
    }
}

impl Ticket {
    fn take(&self, py: Python<'_>) -> PyResult<CoreTicket> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| to_py_err(py, &invalid("ticket_used", "this call has already finished")))
    }
}

/// The value every call returns: `decision` (`allowed`, `refused`,
/// `pending`), `code`, `step`, `message`, `output`, `output_report`,
/// `approval`, `retry_after_ms`, `reasons`, `labels`, `run_id`, `call_id`.
#[pyclass(frozen, module = "harnessweaver", name = "CallResult")]
pub struct CallResult {
    pub(crate) inner: CoreResult,
}

#[pymethods]
impl CallResult {
    #[getter]
    fn decision(&self) -> &'static str {
        self.inner.decision.as_str()
    }
    #[getter]
    fn allowed(&self) -> bool {
        self.inner.is_allowed()
    }
    #[getter]
    fn code(&self) -> Option<&str> {
        self.inner.code.map(|c| c.as_str())
    }
    #[getter]
    fn step(&self) -> Option<&'static str> {
        self.inner.step.map(|s| s.as_str())
    }
    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }
    #[getter]
    fn tool(&self) -> &str {
        &self.inner.tool
    }
    #[getter]
    fn call_id(&self) -> &str {
        &self.inner.call_id
    }
    #[getter]
    fn run_id(&self) -> &str {
        &self.inner.run_id
    }
    #[getter]
    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, self.inner.output.as_ref().unwrap_or(&Value::Null))
    }
    #[getter]
    fn output_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &serde_json::to_value(&self.inner.output_report).unwrap_or(Value::Null))
    }
    #[getter]
    fn approval<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &serde_json::to_value(&self.inner.approval).unwrap_or(Value::Null))
    }
    #[getter]
    fn retry_after_ms(&self) -> Option<u64> {
        self.inner.retry_after_ms
    }
    #[getter]
    fn reasons(&self) -> Vec<String> {
        self.inner.reasons.clone()
    }
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &serde_json::to_value(self.inner.labels).unwrap_or(Value::Null))
    }

    /// What policy rules in shadow mode would have refused (the call went on).
    #[getter]
    fn would_refuse<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &serde_json::to_value(&self.inner.would_refuse).unwrap_or(Value::Null))
    }

    /// The text to hand back to the model.
    fn to_model(&self) -> String {
        self.inner.to_model()
    }

    /// The whole result as a plain dict (the core's JSON form).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.to_value())
    }

    /// The core's JSON text of the result (what the fixtures compare across languages).
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner.to_value()).unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        match (&self.inner.code, self.inner.step) {
            (Some(code), Some(step)) => {
                format!("CallResult(decision={:?}, tool={:?}, code={code:?}, step={:?})", self.inner.decision.as_str(), self.inner.tool, step.as_str())
            }
            _ => format!("CallResult(decision={:?}, tool={:?})", self.inner.decision.as_str(), self.inner.tool),
        }
    }
}

/// Delivers audit events to a Python callable as dicts.
struct CallbackSink {
    callback: Py<PyAny>,
}

impl std::fmt::Debug for CallbackSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallbackSink")
    }
}

impl AuditSink for CallbackSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let value = serde_json::to_value(event).map_err(|e| Error::Io { message: format!("audit event: {e}") })?;
        Python::attach(|py| {
            let event = to_py(py, &value).map_err(|e| Error::Io { message: e.to_string() })?;
            self.callback.call1(py, (event,)).map(|_| ()).map_err(|e| Error::Io { message: format!("audit callback raised {}", e.get_type(py).name().map_or_else(|_| "?".to_string(), |n| n.to_string())) })
        })
    }
}

fn approval_callback(callback: Py<PyAny>) -> ApprovalCallback {
    Arc::new(move |request: &ApprovalRequest, pending: &PendingApproval| -> Option<bool> {
        let request = serde_json::to_value(request).ok()?;
        let mut pending = serde_json::to_value(pending).ok()?;
        // The callback sees the call it decides on, as the approver would.
        if let Some(map) = pending.as_object_mut() {
            map.remove("state");
        }
        Python::attach(|py| {
            let request = to_py(py, &request).ok()?;
            let pending = to_py(py, &pending).ok()?;
            match callback.call1(py, (request, pending)) {
                Ok(answer) => {
                    let answer = answer.bind(py);
                    if answer.is_none() {
                        None
                    } else {
                        answer.extract::<bool>().ok()
                    }
                }
                // A callback that fails decides nothing: the call stays pending.
                Err(e) => {
                    e.print(py);
                    None
                }
            }
        })
    })
}

/// A loaded harness with its governor (native side); `harnessweaver.Harness` wraps it.
#[pyclass(frozen, module = "harnessweaver._native", name = "Runtime")]
pub struct Runtime {
    pub(crate) inner: CoreRuntime,
    clock: Option<ManualClock>,
}

fn context(
    py: Python<'_>,
    principal: &Bound<'_, PyAny>,
    tenant: Option<String>,
    task: Option<String>,
    run_id: Option<String>,
    approval_id: Option<String>,
) -> PyResult<CallContext> {
    Ok(CallContext { principal: principal_arg(py, principal)?, tenant, task, run_id, approval_id, ..CallContext::default() })
}

fn begun(py: Python<'_>, begin: Begin) -> PyResult<Py<PyAny>> {
    match begin {
        Begin::Done(result) => Ok(Py::new(py, CallResult { inner: result })?.into_any()),
        Begin::Invoke(ticket) => Ok(Py::new(
            py,
            Ticket {
                tool: ticket.tool.clone(),
                idempotency_key: ticket.idempotency_key.clone(),
                timeout_ms: ticket.timeout_ms,
                inner: Mutex::new(Some(ticket)),
            },
        )?
        .into_any()),
    }
}

#[pymethods]
impl Runtime {
    /// Loads a harness for calls. `handlers` names the native tools whose
    /// handlers Python holds; `tools` are manifests of tools registered in
    /// code (dicts or YAML/JSON text, each with an origin); `audit` receives
    /// each audit event as a dict; `on_approval(request, approval)` may answer
    /// approvals inline. `clock_ms` and `sequential_ids` are for tests.
    #[new]
    #[pyo3(signature = (path, handlers, tools = Vec::new(), audit = None, on_approval = None, clock_ms = None, sequential_ids = false, sandbox_worker = None))]
    #[expect(clippy::too_many_arguments, reason = "load's keyword arguments")]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        handlers: Vec<String>,
        tools: Vec<(Bound<'_, PyAny>, String)>,
        audit: Option<Py<PyAny>>,
        on_approval: Option<Py<PyAny>>,
        clock_ms: Option<u64>,
        sequential_ids: bool,
        sandbox_worker: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let mut extra = Vec::new();
        for (manifest, origin) in &tools {
            let tool = if let Ok(text) = manifest.cast::<PyString>() {
                Tool::from_manifest_text(&text.to_cow()?, origin)
            } else {
                Tool::from_manifest_value(&convert(py, manifest)?, origin)
            };
            extra.push(tool.map_err(|e| to_py_err(py, &e))?);
        }
        let clock = clock_ms.map(ManualClock::new);
        let has_audit = audit.is_some();
        let options = LoadOptions {
            host_handlers: handlers,
            governor: GovernorOptions {
                clock: clock.clone().map(|c| Arc::new(c) as _),
                audit: audit.map(|callback| Arc::new(CallbackSink { callback }) as _),
                sequential_ids,
                extra_tools: extra,
                backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions { sandbox_worker, ..TransportOptions::default() })),
                ..GovernorOptions::default()
            },
            ..LoadOptions::default()
        };
        let mut inner = py.detach(|| harnessweaver_runtime::load(&path, options)).map_err(|e| to_py_err(py, &e))?;
        if !has_audit && matches!(inner.harness().spec().audit_sink, harnessweaver_core::harness::AuditSink::Callback) {
            return Err(to_py_err(
                py,
                &invalid("audit_callback_missing", "harness.yaml sends audit events to a callback (`audit.sink: callback`); pass `audit=` to load()"),
            ));
        }
        if let Some(callback) = on_approval {
            inner.set_approval_callback(Some(approval_callback(callback)));
        }
        Ok(Self { inner, clock })
    }

    /// Steps 1–7: returns a `CallResult` (refused or pending) or a `Ticket` to invoke.
    #[pyo3(signature = (tool, args, principal, tenant = None, task = None, run_id = None, approval_id = None))]
    #[expect(clippy::too_many_arguments, reason = "a call's context, flattened")]
    fn begin(
        &self,
        py: Python<'_>,
        tool: &str,
        args: &Bound<'_, PyAny>,
        principal: &Bound<'_, PyAny>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
        approval_id: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let args = convert(py, args)?;
        let ctx = context(py, principal, tenant, task, run_id, approval_id)?;
        // The store may block (SQLite, Redis): let other threads run.
        let begin = py.detach(|| self.inner.begin(tool, args, &ctx));
        begun(py, begin)
    }

    /// Step 9 for a handler that returned `value` (a value with no JSON form ends `handler_error`).
    fn finish_returned(&self, py: Python<'_>, ticket: &Ticket, value: &Bound<'_, PyAny>) -> PyResult<CallResult> {
        let ticket = ticket.take(py)?;
        let outcome = match to_value(value, 0) {
            Ok(v) => InvokeOutcome::Returned(v),
            Err(e) => InvokeOutcome::NotJson { reason: e.to_string() },
        };
        Ok(self.finish(py, ticket, outcome))
    }

    /// Steps 8 and 9 for a tool whose transport the core owns (http, code,
    /// mcp): blocking, bounded by the tool's timeout, without the GIL.
    fn finish_transport(&self, py: Python<'_>, ticket: &Ticket) -> PyResult<CallResult> {
        let ticket = ticket.take(py)?;
        Ok(CallResult { inner: py.detach(|| {
            let outcome = self.inner.invoke(&ticket);
            self.inner.finish(ticket, outcome)
        }) })
    }

    /// Ends a call whose handler raised `kind` (the exception's class name).
    fn finish_failed(&self, py: Python<'_>, ticket: &Ticket, kind: String) -> PyResult<CallResult> {
        let ticket = ticket.take(py)?;
        Ok(self.finish(py, ticket, InvokeOutcome::Failed { kind }))
    }

    /// Ends a call whose handler overran its timeout and was abandoned.
    fn finish_timed_out(&self, py: Python<'_>, ticket: &Ticket) -> PyResult<CallResult> {
        let ticket = ticket.take(py)?;
        Ok(self.finish(py, ticket, InvokeOutcome::TimedOut))
    }

    /// A new run id.
    fn new_run(&self) -> String {
        self.inner.governor().new_run_id()
    }

    /// The labels of run `run_id`: `{"private": bool, "untrusted": bool}`.
    fn labels<'py>(&self, py: Python<'py>, run_id: &str) -> PyResult<Bound<'py, PyAny>> {
        let labels = py
            .detach(|| self.inner.governor().store().labels(run_id))
            .map_err(|e| to_py_err(py, &invalid("store_unavailable", e.message)))?;
        to_py(py, &serde_json::to_value(labels).unwrap_or(Value::Null))
    }

    /// Grants approval `id` as `approver` (with the arguments the approver
    /// edited, if any) and begins the approved call.
    #[pyo3(signature = (id, approver, args = None))]
    fn approve_and_begin(&self, py: Python<'_>, id: &str, approver: &Bound<'_, PyAny>, args: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let approver = principal_arg(py, approver)?;
        let edited = match args.filter(|a| !a.is_none()) {
            Some(a) => Some(convert(py, a)?),
            None => None,
        };
        let governor = self.inner.governor();
        let begin = py
            .detach(|| -> Result<Begin, Error> {
                let approval = governor.approve_edited(id, &approver, edited)?;
                let (tool, args, ctx) = resume(&approval)?;
                Ok(governor.begin(&tool, args, &ctx))
            })
            .map_err(|e| to_py_err(py, &e))?;
        begun(py, begin)
    }

    /// Grants approval `id` as `approver` without running the call (the
    /// caller makes it later with `approval=id`); returns the approval.
    fn grant<'py>(&self, py: Python<'py>, id: &str, approver: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let approver = principal_arg(py, approver)?;
        let approval = py.detach(|| self.inner.governor().approve(id, &approver)).map_err(|e| to_py_err(py, &e))?;
        to_py(py, &serde_json::to_value(approval).unwrap_or(Value::Null))
    }

    /// Each step's verdict for a call, without running anything or changing
    /// any state; returns the explanation and its text.
    #[pyo3(signature = (tool, args, principal, tenant = None, task = None, run_id = None))]
    #[expect(clippy::too_many_arguments, reason = "a call's context, flattened")]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        tool: &str,
        args: &Bound<'py, PyAny>,
        principal: &Bound<'py, PyAny>,
        tenant: Option<String>,
        task: Option<String>,
        run_id: Option<String>,
    ) -> PyResult<(Bound<'py, PyAny>, String)> {
        let args = convert(py, args)?;
        let ctx = context(py, principal, tenant, task, run_id, None)?;
        let explanation = py.detach(|| self.inner.explain(tool, args, &ctx));
        Ok((to_py(py, &explanation.to_value())?, explanation.to_text()))
    }

    /// Denies approval `id`; returns the approval as a dict.
    fn deny<'py>(&self, py: Python<'py>, id: &str, by: &Bound<'py, PyAny>, reason: &str) -> PyResult<Bound<'py, PyAny>> {
        let by = principal_arg(py, by)?;
        let approval = py.detach(|| self.inner.deny(id, &by, reason)).map_err(|e| to_py_err(py, &e))?;
        to_py(py, &serde_json::to_value(approval).unwrap_or(Value::Null))
    }

    /// Approvals pending or granted and not yet used, as dicts.
    fn approvals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let open = py.detach(|| self.inner.governor().open_approvals()).map_err(|e| to_py_err(py, &e))?;
        to_py(py, &serde_json::to_value(open).unwrap_or(Value::Null))
    }

    /// The tools as a model API takes them (`openai`, `anthropic`, `mcp`).
    #[pyo3(signature = (format, principal = None, tenant = None))]
    fn tool_specs<'py>(&self, py: Python<'py>, format: &str, principal: Option<&Bound<'py, PyAny>>, tenant: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let format = SpecFormat::parse(format).map_err(|e| to_py_err(py, &e))?;
        let principal = match principal.filter(|p| !p.is_none()) {
            Some(p) => Some(principal_arg(py, p)?),
            None => None,
        };
        to_py(py, &self.inner.tool_specs(format, principal.as_ref(), tenant))
    }

    /// Moves a test clock forward (only for runtimes loaded with `clock_ms`).
    fn advance_ms(&self, py: Python<'_>, ms: u64) -> PyResult<()> {
        match &self.clock {
            Some(clock) => {
                clock.advance_ms(ms);
                Ok(())
            }
            None => Err(to_py_err(py, &invalid("no_test_clock", "this harness reads the system clock"))),
        }
    }
}

impl Runtime {
    fn finish(&self, py: Python<'_>, ticket: CoreTicket, outcome: InvokeOutcome) -> CallResult {
        CallResult { inner: py.detach(|| self.inner.finish(ticket, outcome)) }
    }
}

/// Builds a load problem (for load errors found on the Python side, such as a handler that cannot be imported).
#[pyfunction]
#[pyo3(signature = (code, message, file = None, path = String::new(), line = None, column = None))]
fn make_problem(code: String, message: String, file: Option<String>, path: String, line: Option<usize>, column: Option<usize>) -> super::Problem {
    super::Problem { code, message, file, line, column, path }
}

/// Registers the governor's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(make_problem, m)?)?;
    m.add_class::<Principal>()?;
    m.add_class::<Ticket>()?;
    m.add_class::<CallResult>()?;
    m.add_class::<Runtime>()?;
    Ok(())
}
