//! A loaded harness for Python: principals, tickets, call results and the
//! calls themselves, over the core's host API. A sync handler runs on the
//! calling thread under the watchdog (`watchdog.rs`); async handlers and
//! calls from `acall` go through the Python side (`_governor.py`). No
//! decision about a call is made here.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use harnessweaver_core::host::{
    self as core, AuditCallback, AuditEvent, Begun, CallContext, ErrorClass, HandlerDecl, HandlerMode, HandlerRef, HandlerResolver, HostFn,
    HostOptions, ManifestSource, Outcome, Resolved, TestOptions, Ticket as CoreTicket, TicketCell, TicketRoute,
};
use harnessweaver_runtime::transport::TransportOptions;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{IntoPyDict, PyDict, PyTuple};
use serde_json::Value;

use crate::{class, convert, load_err, member, record, to_py, to_py_err, to_value, watchdog, HandlerOverrun, Values};

/// Who makes a call: an id, roles, scopes and attributes.
#[pyclass(frozen, eq, module = "harnessweaver", name = "Principal")]
#[derive(PartialEq)]
pub struct Principal(pub(crate) core::Principal);

#[pymethods]
impl Principal {
    #[new]
    #[pyo3(signature = (id, roles = None, scopes = None, attrs = None))]
    fn new(py: Python<'_>, id: Py<PyAny>, roles: Option<Py<PyAny>>, scopes: Option<Py<PyAny>>, attrs: Option<Py<PyAny>>) -> PyResult<Self> {
        let given = [("id", Some(id)), ("roles", roles), ("scopes", scopes), ("attrs", attrs)];
        Self::from_mapping(py, &given.into_iter().filter_map(|(k, v)| Some((k, v?))).into_py_dict(py)?.into_any())
    }
    #[staticmethod]
    fn from_mapping(py: Python<'_>, mapping: &Bound<'_, PyAny>) -> PyResult<Self> {
        principal_arg(py, mapping).map(Principal)
    }
}

/// A principal argument: a `Principal` or a mapping (`host::principal_of`).
pub(crate) fn principal_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<core::Principal> {
    core::principal_of(&Values(py), obj).map_err(|e| to_py_err(py, &e))
}

/// A call that passed steps 1–7; it finishes once.
#[pyclass(frozen, module = "harnessweaver._native", name = "Ticket")]
pub struct Ticket {
    pub(crate) cell: TicketCell,
    #[pyo3(get)]
    tool: String,
    /// `sync`, `inline`, `async` (a host handler) or `transport` (the core's).
    #[pyo3(get)]
    route: &'static str,
}

#[pymethods]
impl Ticket {
    /// The handler's keyword arguments: the validated args, and `idempotency_key` if it takes one.
    fn kwargs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.cell.peek(|t| kwargs(py, t).map(Bound::into_any)).unwrap_or_else(|| Ok(PyDict::new(py).into_any()))
    }
    /// Seconds left before the deadline.
    #[getter]
    fn remaining(&self) -> f64 {
        self.cell.peek(|t| t.remaining().as_secs_f64()).unwrap_or(0.0)
    }
}

/// A handler's keyword arguments: the core's `kwargs`, plus the `progress`
/// callable when the core hands the call one.
fn kwargs<'py>(py: Python<'py>, t: &CoreTicket) -> PyResult<Bound<'py, PyDict>> {
    let d = to_py(py, &t.kwargs())?.cast_into::<PyDict>()?;
    if let Some(progress) = t.progress() {
        d.set_item("progress", Progress(progress))?;
    }
    Ok(d)
}

/// The `progress(progress, total=None, message=None)` a handler that takes it receives (issue 22):
/// each report goes to the core, which decides what reaches the caller.
#[pyclass(frozen, module = "harnessweaver._native", name = "Progress")]
pub struct Progress(core::Progress);

#[pymethods]
impl Progress {
    #[pyo3(signature = (progress, total=None, message=None))]
    fn __call__(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let _ = self.0.report(progress, total, message);
    }
}

/// The value every call returns (fields as in docs/governor.md).
#[pyclass(frozen, module = "harnessweaver", name = "CallResult")]
pub struct CallResult(pub(crate) core::CallResult);

#[pymethods]
impl CallResult {
    fn to_model(&self) -> String {
        self.0.to_model()
    }
    fn to_json(&self) -> String {
        serde_json::to_string(&self.0.to_value()).unwrap_or_default()
    }
}

fn name_of(py: Python<'_>, e: &PyErr) -> String {
    e.get_type(py).name().map_or_else(|_| "Exception".into(), |n| n.to_string())
}

/// Audit events to a Python callable, as the dicts of their JSON form (straight from the event: the hot path).
struct PyAudit(Py<PyAny>);

impl AuditCallback for PyAudit {
    fn record(&self, event: &AuditEvent) -> Result<(), String> {
        Python::attach(|py| to_py(py, event).and_then(|v| self.0.call1(py, (v,))).map(drop).map_err(|e| name_of(py, &e)))
    }
}

/// A Python callable the core calls with values: `observe` and `on_approval` (`host::HostFn`
/// shapes what each gets and reads the approval's answer).
struct PyFn(Py<PyAny>);

impl HostFn for PyFn {
    fn call(&self, args: &[Value]) -> Result<Value, String> {
        Python::attach(|py| {
            let args = args.iter().map(|a| to_py(py, a)).collect::<PyResult<Vec<_>>>().and_then(|a| PyTuple::new(py, a));
            let answer = args.and_then(|a| self.0.call1(py, a)).map_err(|e| name_of(py, &e))?;
            Ok(to_value(answer.bind(py), 0).unwrap_or(Value::Null))
        })
    }
}

/// Handler refs imported by `resolve(module, attrs, base_dir) -> (fn, origin, modules_in_path, mode, takes_key)`.
struct PyResolver<'py> {
    resolve: Bound<'py, PyAny>,
    roots: Vec<PathBuf>,
    found: HashMap<String, (Py<PyAny>, &'static str)>,
}

fn mode_of(mode: &str) -> (&'static str, HandlerMode) {
    match mode {
        "async" => ("async", HandlerMode::Async),
        "inline" => ("inline", HandlerMode::CallerThread),
        _ => ("sync", HandlerMode::CallerThread),
    }
}

impl HandlerResolver for PyResolver<'_> {
    fn package_roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }
    fn resolve(&mut self, r: &HandlerRef<'_>) -> Result<Resolved, String> {
        let py = self.resolve.py();
        let got = self
            .resolve
            .call1((r.module, r.attrs.to_vec(), r.base_dir))
            .and_then(|t| t.extract::<(Py<PyAny>, Option<PathBuf>, Vec<String>, String, bool, bool)>());
        match got {
            Ok((f, origin, modules_in_path, mode, takes_idempotency_key, takes_progress)) => {
                let (name, mode) = mode_of(&mode);
                self.found.insert(r.tool.to_string(), (f, name));
                Ok(Resolved { origin, modules_in_path, mode, takes_idempotency_key, takes_progress })
            }
            Err(e) => Err(format!("{}: {}", name_of(py, &e), e.value(py))),
        }
    }
}

/// A loaded harness (native side); `harnessweaver.Harness` extends it.
#[pyclass(frozen, subclass, module = "harnessweaver._native", name = "Host")]
pub struct Host {
    pub(crate) inner: Arc<core::Host>,
    fns: HashMap<String, (Py<PyAny>, &'static str)>,
    /// `run(fn, kwargs, timeout_s) -> (kind, value)` for handlers that cannot run on the caller's thread.
    runner: Py<PyAny>,
}

/// A call's context from the keywords of `call` and `begin`, read by the core (`host::call_context`).
fn context(py: Python<'_>, kw: Option<&Bound<'_, PyDict>>) -> PyResult<CallContext> {
    let kw = kw.into_iter().flatten().filter_map(|(k, v)| Some((k.extract::<PyBackedStr>().ok()?, v))); // keywords are strings
    core::call_context(&Values(py), kw).map_err(|e| to_py_err(py, &e))
}

#[pymethods]
impl Host {
    #[new]
    #[pyo3(signature = (path, handlers, tools, audit, on_approval, resolve, roots, runner, clock_ms = None, sequential_ids = false, sandbox_worker = None, inspect = false, observe = None))]
    #[expect(clippy::too_many_arguments, reason = "load's keyword arguments")]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        handlers: HashMap<String, (Py<PyAny>, String, bool, bool)>,
        tools: Vec<(Bound<'_, PyAny>, Option<String>)>,
        audit: Option<Py<PyAny>>,
        on_approval: Option<Py<PyAny>>,
        resolve: Option<Bound<'_, PyAny>>,
        roots: Vec<PathBuf>,
        runner: Py<PyAny>,
        clock_ms: Option<u64>,
        sequential_ids: bool,
        sandbox_worker: Option<PathBuf>,
        inspect: bool,
        observe: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        if inspect {
            let inner = py.detach(|| core::Host::inspect(&path)).map_err(|e| load_err(py, &e))?;
            return Ok(Host { inner: Arc::new(inner), fns: HashMap::new(), runner });
        }
        let mut decls = Vec::new();
        let mut fns = HashMap::new();
        for (tool, (f, mode, takes_idempotency_key, takes_progress)) in handlers {
            let (name, mode) = mode_of(&mode);
            decls.push(HandlerDecl { tool: tool.clone(), mode, takes_idempotency_key, takes_progress, function: None });
            fns.insert(tool, (f, name));
        }
        let code_tools = tools.iter().map(|(m, origin)| Ok(ManifestSource::from_host(convert(py, m)?, origin.clone()))).collect::<PyResult<_>>()?;
        let mut resolver = resolve.map(|resolve| PyResolver { resolve, roots, found: HashMap::new() });
        let options = HostOptions {
            handlers: decls,
            resolver: resolver.as_mut().map(|r| r as &mut dyn HandlerResolver),
            code_tools,
            audit: audit.map(|a| Arc::new(PyAudit(a)) as _),
            observe: observe.map(|a| Arc::new(PyFn(a)) as _),
            on_approval: on_approval.map(|a| Arc::new(PyFn(a)) as _),
            test: clock_ms.map(|clock_ms| TestOptions { clock_ms, sequential_ids }),
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions { sandbox_worker, ..TransportOptions::default() })),
        };
        let inner = core::Host::load(&path, options).map_err(|e| load_err(py, &e))?;
        fns.extend(resolver.map(|r| r.found).unwrap_or_default());
        Ok(Host { inner: Arc::new(inner), fns, runner })
    }

    /// The core's host method `method` with its named arguments (`Host::request`).
    fn request<'py>(&self, py: Python<'py>, method: &str, args: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
        let args = core::named(&Values(py), keywords(Some(args))?).map_err(|e| to_py_err(py, &e))?;
        self.answer(py, method, &args)
    }

    /// A governed call: steps 1–9, a sync handler on this thread under its deadline.
    #[pyo3(signature = (tool, args = None, *, raise_on_refusal = true, **context))]
    fn call(
        &self,
        py: Python<'_>,
        tool: &str,
        args: Option<&Bound<'_, PyAny>>,
        raise_on_refusal: bool,
        context: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<CallResult>> {
        let begun = self.begin_inner(py, tool, args, context)?;
        Host::deliver(py, Py::new(py, CallResult(self.run_begun(py, begun)?))?, raise_on_refusal)
    }

    /// Steps 1–7: a `Ticket` to invoke, or the `CallResult` of a refused or pending call.
    #[pyo3(signature = (tool, args = None, **context))]
    fn begin(&self, py: Python<'_>, tool: &str, args: Option<&Bound<'_, PyAny>>, context: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
        let begun = self.begin_inner(py, tool, args, context)?;
        self.begun_to_py(py, begun)
    }

    /// The handler of a ticket's tool.
    fn handler(&self, py: Python<'_>, ticket: &Ticket) -> Option<Py<PyAny>> {
        self.fns.get(&ticket.tool).map(|(f, _)| f.clone_ref(py))
    }

    /// Steps 8 and 9 for a handler's outcome: `returned` (`value`), `failed` (`value`: the exception class name) or `timeout`.
    #[pyo3(signature = (ticket, how, value = None))]
    fn finish(&self, py: Python<'_>, ticket: &Ticket, how: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<CallResult> {
        let outcome = outcome(how, &value.cloned().unwrap_or_else(|| py.None().into_bound(py)))?;
        let t = ticket.cell.take().map_err(|e| to_py_err(py, &e))?;
        Ok(CallResult(py.detach(|| self.inner.finish(t, outcome))))
    }
    /// Steps 8 and 9 through the core's transports (http, code, mcp), without the GIL.
    fn finish_transport(&self, py: Python<'_>, ticket: &Ticket) -> PyResult<CallResult> {
        let t = ticket.cell.take().map_err(|e| to_py_err(py, &e))?;
        Ok(CallResult(py.detach(|| self.transport(t))))
    }

    /// Raises the refusal class of a refused or pending `result` when asked; returns it otherwise.
    #[staticmethod]
    #[pyo3(signature = (result, raise_on_refusal = true))]
    fn deliver(py: Python<'_>, result: Py<CallResult>, raise_on_refusal: bool) -> PyResult<Py<CallResult>> {
        let Some(c) = ErrorClass::of_call(result.get().0.decision, result.get().0.step).filter(|_| raise_on_refusal) else { return Ok(result) };
        Err(PyErr::from_value(class(py, c)?.call1((result,))?))
    }

    #[pyo3(signature = (id, *, approver, args = None))]
    fn approve_and_begin(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        approver: &Bound<'_, PyAny>,
        args: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let begun = self.resume(py, id, approver, args)?;
        self.begun_to_py(py, begun)
    }

    #[pyo3(signature = (id, *, approver, args = None, raise_on_refusal = true))]
    fn approve(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        approver: &Bound<'_, PyAny>,
        args: Option<&Bound<'_, PyAny>>,
        raise_on_refusal: bool,
    ) -> PyResult<Py<CallResult>> {
        let begun = self.resume(py, id, approver, args)?;
        Host::deliver(py, Py::new(py, CallResult(self.run_begun(py, begun)?))?, raise_on_refusal)
    }
}

fn returned(value: &Bound<'_, PyAny>) -> Outcome {
    to_value(value, 0).map_or_else(|e| Outcome::not_json(&e), Outcome::Returned)
}

/// A handler's outcome as the Python side reports it: `returned` (`value`), `failed` (`value`: the class name) or `timeout`.
fn outcome(how: &str, value: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    Ok(match how {
        "returned" => returned(value),
        "timeout" => Outcome::TimedOut,
        _ => Outcome::Failed { kind: value.extract()? },
    })
}

/// Keyword arguments with their names as Rust reads them.
fn keywords<'py>(kw: Option<&Bound<'py, PyDict>>) -> PyResult<Vec<(PyBackedStr, Bound<'py, PyAny>)>> {
    kw.into_iter().flatten().map(|(k, v)| Ok((k.extract::<PyBackedStr>()?, v))).collect()
}

impl Host {
    fn answer<'py>(&self, py: Python<'py>, method: &str, args: &Value) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &py.detach(|| self.inner.request(method, args)).map_err(|e| to_py_err(py, &e))?)
    }

    fn begin_inner(&self, py: Python<'_>, tool: &str, args: Option<&Bound<'_, PyAny>>, context: Option<&Bound<'_, PyDict>>) -> PyResult<Begun> {
        let ctx = self::context(py, context)?;
        let args = args.filter(|a| !a.is_none()).map(|a| convert(py, a)).transpose()?.unwrap_or_else(|| Value::Object(Default::default()));
        // The store may block (SQLite, Redis): let other threads run.
        py.detach(|| self.inner.begin(tool, args, &ctx)).map_err(|e| to_py_err(py, &e))
    }

    /// Grants approval `id` and begins the approved call (with the approver's edited `args`).
    fn resume(&self, py: Python<'_>, id: &Bound<'_, PyAny>, approver: &Bound<'_, PyAny>, args: Option<&Bound<'_, PyAny>>) -> PyResult<Begun> {
        let id = core::id_of(&Values(py), id, "id").map_err(|e| to_py_err(py, &e))?.unwrap_or_default();
        let approver = principal_arg(py, approver)?;
        let edited = args.filter(|a| !a.is_none()).map(|a| convert(py, a)).transpose()?;
        py.detach(|| self.inner.approve_and_resume(&id, &approver, edited)).map_err(|e| to_py_err(py, &e))
    }

    fn begun_to_py(&self, py: Python<'_>, begun: Begun) -> PyResult<Py<PyAny>> {
        match begun {
            Begun::Refused(r) | Begun::Pending(r) => Ok(Py::new(py, CallResult(r))?.into_any()),
            Begun::Allowed(t) => {
                // A host route always has its function (the core checks at load).
                let route = self.fns.get(t.tool()).filter(|_| t.route() != TicketRoute::Transport).map_or("transport", |(_, m)| *m);
                Ok(Py::new(py, Ticket { tool: t.tool().to_string(), route, cell: TicketCell::new(t) })?.into_any())
            }
        }
    }

    fn transport(&self, t: CoreTicket) -> core::CallResult {
        let outcome = self.inner.run_transport(&t);
        self.inner.finish_transport(t, outcome)
    }

    /// Runs an allowed call to its end, on this thread when it can.
    fn run_begun(&self, py: Python<'_>, begun: Begun) -> PyResult<core::CallResult> {
        match begun {
            Begun::Refused(r) | Begun::Pending(r) => Ok(r),
            Begun::Allowed(t) => {
                let (result, raised) = self.run_ticket(py, t);
                raised.map_or(Ok(result), Err)
            }
        }
    }

    /// Runs a ticket to its end: the result, and an exception to raise
    /// after it (KeyboardInterrupt, SystemExit: recorded, then raised).
    pub(crate) fn run_ticket(&self, py: Python<'_>, t: CoreTicket) -> (core::CallResult, Option<PyErr>) {
        let Some((f, mode)) = self.fns.get(t.tool()).filter(|_| t.route() != TicketRoute::Transport) else {
            return (py.detach(|| self.transport(t)), None);
        };
        let (outcome, raise) = match self.invoke(py, f, mode, &t) {
            Ok(outcome) => (outcome, None),
            Err(e) => (Outcome::Failed { kind: name_of(py, &e) }, Some(e)),
        };
        (py.detach(|| self.inner.finish(t, outcome)), raise)
    }

    fn invoke(&self, py: Python<'_>, f: &Py<PyAny>, mode: &str, t: &CoreTicket) -> PyResult<Outcome> {
        let kw = kwargs(py, t)?;
        if mode == "async" {
            let (how, value): (String, Bound<'_, PyAny>) = self.runner.bind(py).call1((f, kw, t.remaining().as_secs_f64()))?.extract()?;
            return outcome(&how, &value);
        }
        let watch = watchdog::watch(py, t.deadline());
        let result = f.bind(py).call((), Some(&kw));
        watchdog::unwatch(py, watch);
        // After the deadline (the watchdog fired) the core ends the call `timeout`, whatever the outcome.
        match result {
            Ok(v) => Ok(returned(&v)),
            Err(e) if !e.is_instance_of::<pyo3::exceptions::PyException>(py) && !e.is_instance_of::<HandlerOverrun>(py) => Err(e),
            Err(e) => Ok(Outcome::Failed { kind: name_of(py, &e) }),
        }
    }
}

/// Registers the host's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Principal>()?;
    m.add_class::<Ticket>()?;
    m.add_class::<CallResult>()?;
    record::<Principal>(py, (&core::Principal::FIELDS, &core::Principal::FIELDS), |p, name| p.0.to_value().get(name).cloned(), |p| p.0.to_value())?;
    record::<CallResult>(py, (&core::CallResult::PROPERTIES, &core::CallResult::SUMMARY), |r, name| r.0.field(name), |r| r.0.to_value())?;
    // The host methods that only pass their arguments on, made from the core's table (`host::bind_method`).
    for (name, _) in core::METHODS {
        let method = member(py, true, move |a, kw| {
            let args = core::bind_method(&Values(a.py()), name, a.iter().skip(1), keywords(kw)?).map_err(|e| to_py_err(a.py(), &e))?;
            Ok(a.get_item(0)?.cast::<Host>()?.get().answer(a.py(), name, &args)?.unbind())
        })?;
        py.get_type::<Host>().setattr(name, method)?;
    }
    m.add_class::<Host>()
}
