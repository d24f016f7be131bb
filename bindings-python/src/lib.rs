//! Python bindings (PyO3) for harnessweaver: the native module `harnessweaver._native`.
//!
//! This crate converts values between Python and the core's host API
//! (`harnessweaver_core::host`) and maps its errors to exceptions; every
//! decision is the core's. `host.rs` holds a loaded harness and its calls,
//! `cel_lite.rs` cel-lite, `gateway.rs` the MCP gateway.

mod cel_lite;
mod gateway;
mod host;
mod watchdog;

use harnessweaver_core::host::canonical::{self, MAX_DEPTH};
use harnessweaver_core::host::{self as core, Error, ErrorClass, HostValues, Kind, LoadErrors, Problem as CoreProblem};
use pyo3::exceptions::{PyBaseException, PyException};
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::sync::PyOnceLock;
use pyo3::types::iter::BoundDictIterator;
use pyo3::types::{PyBool, PyCFunction, PyDict, PyFloat, PyInt, PyIterator, PyList, PyString, PyTuple, PyType};
use pyo3::{create_exception, PyClass};
use serde_json::Value;

create_exception!(harnessweaver, HandlerOverrun, PyBaseException, "Raised inside a sync handler that overran its timeout; the call ends `timeout`.");

/// One load problem: its code, message and where it is (`Problem::FIELDS`, as properties).
#[pyclass(frozen, eq, module = "harnessweaver", name = "Problem")]
#[derive(PartialEq)]
struct Problem(CoreProblem);

#[pymethods]
impl Problem {
    /// `file:line:column: path: message [code]`, as the core writes it.
    fn __str__(&self) -> String {
        self.0.to_string()
    }
}

/// A function of one object made a read-only property (or, with `method`, a method taking any arguments) of a class being built.
fn member<'py>(
    py: Python<'py>,
    method: bool,
    f: impl Fn(&Bound<'_, PyTuple>, Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> + Send + Sync + 'static,
) -> PyResult<Bound<'py, PyAny>> {
    let f = PyCFunction::new_closure(py, None, None, f)?;
    let wrap = if method { py.import("functools")?.getattr("partialmethod")? } else { py.import("builtins")?.getattr("property")? };
    wrap.call1((f,))
}

/// Gives `T` a read-only property per field of `names` (`read(object, name)`), `to_dict()` (`whole`) and a
/// `__repr__` showing `shown`: from the core's field tables, so a field added there is one here.
fn record<T: PyClass<Frozen = True> + Sync>(
    py: Python<'_>,
    (names, shown): (&[&'static str], &'static [&'static str]),
    read: fn(&T, &str) -> Option<Value>,
    whole: fn(&T) -> Value,
) -> PyResult<()> {
    let t = py.get_type::<T>();
    for &name in names {
        t.setattr(name, member(py, false, move |a, _| Ok(to_py(a.py(), &read(a.get_item(0)?.cast::<T>()?.get(), name))?.unbind()))?)?;
    }
    t.setattr("to_dict", member(py, true, move |a, _| Ok(to_py(a.py(), &whole(a.get_item(0)?.cast::<T>()?.get()))?.unbind()))?)?;
    t.setattr("__repr__", member(py, true, move |a, _| Ok(repr(&a.get_item(0)?, shown)?.into_pyobject(a.py())?.into_any().unbind()))?)
}

/// `Name(field=value, …)` of the `shown` attributes of `o`, each value as Python writes it.
fn repr(o: &Bound<'_, PyAny>, shown: &[&str]) -> PyResult<String> {
    let fields = shown.iter().map(|&n| Ok(format!("{n}={}", o.getattr(n)?.repr()?))).collect::<PyResult<Vec<_>>>()?;
    Ok(format!("{}({})", o.get_type().name()?, fields.join(", ")))
}

/// The exception classes, in the order of `ErrorClass::all()`.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Builds the exception classes from the core's table into `m` (cel-lite's as `Cel<Name>`).
fn build_classes(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let mut made: Vec<Bound<'_, PyType>> = Vec::new();
    for c in ErrorClass::all() {
        let base = c.parent().and_then(|p| made.get(p.index()).cloned()).unwrap_or_else(|| py.get_type::<PyException>());
        let ns = PyDict::new(py);
        ns.set_item("__doc__", c.doc())?;
        ns.set_item("__module__", c.module().map_or_else(|| "harnessweaver".to_string(), |s| format!("harnessweaver.{s}")))?;
        for x in c.extras().iter().map(|x| x.as_str()) {
            ns.set_item(x, member(py, false, move |a, _| Ok(a.get_item(0)?.getattr("result")?.getattr(x)?.unbind()))?)?;
        }
        if c.is_refusal_base() {
            ns.set_item("__init__", member(py, true, |a, _| refusal_init(a))?)?;
            ns.set_item("to_model", member(py, true, |a, _| Ok(a.get_item(0)?.getattr("result")?.call_method0("to_model")?.unbind()))?)?;
        }
        let class = py.get_type::<PyType>().call1((c.name(), (&base,), ns))?.cast_into::<PyType>()?;
        m.add(if c.module().is_some() { format!("Cel{}", c.name()) } else { c.name().to_string() }, &class)?;
        made.push(class);
    }
    CLASSES.set(py, made.into_iter().map(Bound::unbind).collect()).map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("imported twice"))
}

/// `ToolBlocked(result)`: its message, and `result`, `code`, `step` and `problems` from the result.
fn refusal_init(args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let (this, result) = (args.get_item(0)?, args.get_item(1)?);
    this.py().get_type::<PyException>().call_method1("__init__", (&this, result.getattr("message")?))?;
    for key in ["code", "step"] {
        this.setattr(key, result.getattr(key)?)?;
    }
    this.setattr("problems", PyList::empty(this.py()))?;
    this.setattr("result", result)?;
    Ok(this.py().None())
}

/// The exception class `c`.
fn class(py: Python<'_>, c: ErrorClass) -> PyResult<Bound<'_, PyType>> {
    let all = CLASSES.get(py).ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("harnessweaver._native is not initialised"))?;
    all.get(c.index()).map(|t| t.bind(py).clone()).ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("an error class is missing"))
}

/// An exception of class `c` with `message`, `.code` and `.problems`.
fn exception(py: Python<'_>, c: ErrorClass, message: String, code: &str, problems: &[CoreProblem]) -> PyErr {
    let made = class(py, c).and_then(|t| t.call1((message,))).and_then(|e| {
        e.setattr("code", code)?;
        e.setattr("problems", PyList::new(py, problems.iter().map(|p| Problem(p.clone())))?)?;
        Ok(e)
    });
    made.map_or_else(|e| e, PyErr::from_value)
}

/// Maps a core error to the exception of its class.
fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    exception(py, ErrorClass::of(err), err.to_string(), err.code(), err.problems())
}

fn load_err(py: Python<'_>, err: &LoadErrors) -> PyErr {
    exception(py, ErrorClass::Load, err.text(), err.code(), &err.problems)
}

/// Python's values as the core's walk reads them (`host::walk`).
struct Values<'py>(Python<'py>);

type Items<'py> = std::iter::Map<Bound<'py, PyIterator>, fn(PyResult<Bound<'py, PyAny>>) -> Result<Bound<'py, PyAny>, String>>;

impl<'py> HostValues for Values<'py> {
    type Value = Bound<'py, PyAny>;
    type List = Items<'py>;
    type Map = BoundDictIterator<'py>;

    fn kind<'a>(&self, o: &'a Bound<'py, PyAny>) -> Kind<'a, Items<'py>, BoundDictIterator<'py>> {
        if o.is_none() {
            Kind::Null
        } else if let Ok(s) = o.cast::<PyString>() {
            Kind::Str(s.to_cow().ok())
        } else if let Ok(b) = o.cast::<PyBool>() {
            Kind::Bool(b.is_true()) // before int: `True` is an `int` in Python
        } else if o.is_instance_of::<PyInt>() {
            Kind::Int(o.extract::<i128>().map_err(|_| o.str().map(|s| s.to_string()).unwrap_or_default()))
        } else if let Ok(f) = o.cast::<PyFloat>() {
            Kind::Float(f.value())
        } else if let Ok(d) = o.cast::<PyDict>() {
            Kind::Map(d.iter())
        } else if let (true, Ok(items)) = (o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>(), o.try_iter()) {
            Kind::List(items.map(|item| item.map_err(|e| e.to_string())))
        } else if let Ok(p) = o.cast::<host::Principal>() {
            Kind::Core(p.get().0.to_value())
        } else {
            Kind::Other(type_name(o))
        }
    }

    fn type_name(&self, value: &Bound<'py, PyAny>) -> String {
        type_name(value)
    }
    fn attr(&self, o: &Bound<'py, PyAny>, name: &str) -> Option<Bound<'py, PyAny>> {
        o.getattr(name).ok()
    }
    fn principal(&self, o: &Bound<'py, PyAny>) -> Option<core::Principal> {
        o.cast::<host::Principal>().ok().map(|p| p.get().0.clone())
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// A Python value as the core's JSON value, `depth` levels down already.
fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Error> {
    core::walk(&Values(obj.py()), obj, depth)
}

/// Converts a core value (JSON, or any serializable type) straight to Python objects (dict, list, str, int, float, bool, None).
fn to_py<'py, T: serde::Serialize + ?Sized>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

fn convert(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value(obj, 0).map_err(|e| to_py_err(py, &e))
}

/// A core host method that needs no harness (`tables`, `describe_manifest`, `sanitize`, ...), its named arguments in a dict.
#[pyfunction]
fn request<'py>(py: Python<'py>, method: &str, args: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let args = convert(py, args)?;
    to_py(py, &py.detach(|| core::request(method, &args)).map_err(|e| to_py_err(py, &e))?)
}

/// The definition digest (`sha256:…`) of a tool's name, description, input schema and output schema, if any.
#[pyfunction]
#[pyo3(signature = (name, description, input_schema, output_schema=None))]
fn definition_digest(
    py: Python<'_>,
    name: &str,
    description: &str,
    input_schema: &Bound<'_, PyAny>,
    output_schema: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let output_schema = output_schema.map(|o| convert(py, o)).transpose()?;
    core::tool_definition_digest(name, description, &convert(py, input_schema)?, output_schema.as_ref()).map_err(|e| to_py_err(py, &e))
}

/// The canonical JSON text of a value.
#[pyfunction]
fn canonical_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    canonical::to_string(&convert(py, value)?).map_err(|e| to_py_err(py, &e))
}

/// Runs the named sanitizers on every string value and key of `value`: the value and the counts per kind.
#[pyfunction]
fn sanitize<'py>(py: Python<'py>, value: &Bound<'py, PyAny>, sanitizers: Vec<String>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let value = convert(py, value)?;
    let (out, counts) = py.detach(|| core::sanitize(&value, &sanitizers)).map_err(|e| to_py_err(py, &e))?;
    Ok((to_py(py, &out)?, to_py(py, counts.as_map())?))
}

/// Runs the `harnessweaver` command line with `args` (without the program name); returns the exit code.
#[pyfunction]
fn cli_run(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(|| harnessweaver_runtime::cli::run(&args))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    build_classes(m)?;
    m.add("HandlerOverrun", py.get_type::<HandlerOverrun>())?;
    m.add("MAX_DEPTH", MAX_DEPTH)?;
    m.add("RISKS", core::RISKS.to_vec())?;
    m.add("SIDE_EFFECTS", core::SIDE_EFFECTS.to_vec())?;
    m.add_class::<Problem>()?;
    record::<Problem>(py, (&CoreProblem::FIELDS, &CoreProblem::FIELDS), |p, name| p.0.to_value().get(name).cloned(), |p| p.0.to_value())?;
    m.add_function(wrap_pyfunction!(request, m)?)?;
    m.add_function(wrap_pyfunction!(definition_digest, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(sanitize, m)?)?;
    m.add_function(wrap_pyfunction!(cli_run, m)?)?;
    host::register(m)?;
    gateway::register(m)?;
    cel_lite::register(m)
}
