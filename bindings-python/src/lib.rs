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
use harnessweaver_core::host::{self as core, Error, LoadErrors, ManifestSource, Problem as CoreProblem, RefusalClass};
use pyo3::exceptions::{PyBaseException, PyException};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyCFunction, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{create_exception, PyTypeInfo};
use serde_json::{Map, Value};

create_exception!(harnessweaver, HarnessweaverError, PyException, "Base class of every harnessweaver error; `.code` is its stable snake_case code.");
create_exception!(harnessweaver, LoadError, HarnessweaverError, "A harness or manifest failed to load; `.problems` lists every problem found.");
create_exception!(
    harnessweaver,
    InvalidValueError,
    HarnessweaverError,
    "A value with no portable JSON form (NaN, a huge integer, nesting too deep, a non-string key)."
);
create_exception!(harnessweaver, InvalidArgumentError, HarnessweaverError, "A bad argument from the caller.");
create_exception!(harnessweaver, HandlerOverrun, PyBaseException, "Raised inside a sync handler that overran its timeout; the call ends `timeout`.");

/// One load problem: its code, message and where it is (`Problem::FIELDS`, as properties).
#[pyclass(frozen, eq, module = "harnessweaver", name = "Problem")]
#[derive(PartialEq)]
struct Problem(CoreProblem);

#[pymethods]
impl Problem {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0.to_value())
    }
    fn __repr__(&self) -> String {
        let p = &self.0;
        format!(
            "Problem(code={:?}, message={:?}, file={:?}, line={:?}, column={:?}, path={:?})",
            p.code.as_str(),
            p.message,
            p.file,
            p.line,
            p.column,
            p.path
        )
    }
    /// `file:line:column: path: message [code]`, as the core writes it.
    fn __str__(&self) -> String {
        self.0.to_string()
    }
}

/// Makes each of `names` a read-only property of `T`, its value `read(object, name)`
/// (the core's field tables, so a field added there is a property here).
fn properties<T: PyTypeInfo>(py: Python<'_>, names: &[&'static str], read: fn(&Bound<'_, PyAny>, &str) -> PyResult<Py<PyAny>>) -> PyResult<()> {
    let property = py.import("builtins")?.getattr("property")?;
    for &name in names {
        let get = PyCFunction::new_closure(py, None, None, move |args, _| read(&args.get_item(0)?, name))?;
        py.get_type::<T>().setattr(name, property.call1((get,))?)?;
    }
    Ok(())
}

fn problem_field(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Py<PyAny>> {
    Ok(to_py(obj.py(), &obj.cast::<Problem>()?.get().0.to_value().get(name))?.unbind())
}

/// An exception of `cls` with `message`, `.code` and `.problems`.
fn exception(py: Python<'_>, err: PyErr, code: &str, problems: &[CoreProblem]) -> PyErr {
    let value = err.value(py);
    // Setting attributes on a fresh exception cannot fail in practice; without them it is still the right one.
    let _ = value.setattr("code", code);
    let _ = PyList::new(py, problems.iter().map(|p| Problem(p.clone()))).and_then(|list| value.setattr("problems", list));
    err
}

/// Maps a core error to the matching exception.
fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    let message = err.to_string();
    let exc = match err {
        Error::Load(_) => LoadError::new_err(message),
        Error::Value { .. } => InvalidValueError::new_err(message),
        Error::InvalidArgument { .. } => InvalidArgumentError::new_err(message),
        _ => HarnessweaverError::new_err(message),
    };
    exception(py, exc, err.code(), err.problems())
}

fn load_err(py: Python<'_>, err: &LoadErrors) -> PyErr {
    exception(py, LoadError::new_err(err.text()), err.code(), &err.problems)
}

fn value_error(code: &'static str, message: String) -> Error {
    Error::value(code, message)
}

/// Converts a Python value to the core's JSON value directly (no JSON text in between).
fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Error> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: `True` is an `int` in Python.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i128>() {
            Ok(i) => canonical::int_value(i),
            // Beyond i128: the core words the refusal with the number's text.
            Err(_) => canonical::int_value_from_text(&obj.str().map(|s| s.to_string()).unwrap_or_default()),
        };
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return canonical::float_value(f.value());
    }
    // A principal as the core reads one (in a host method's arguments).
    if let Ok(p) = obj.cast::<host::Principal>() {
        return Ok(p.get().0.to_value());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .to_cow()
            .map(|s| Value::String(s.into_owned()))
            .map_err(|_| value_error("invalid_string", "string is not valid Unicode (lone surrogate)".into()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let depth = enter(depth)?;
        let iter = obj.try_iter().map_err(|e| value_error("invalid_value", e.to_string()))?;
        // A failure names where it is (a JSON pointer), never the value.
        return iter
            .enumerate()
            .map(|(i, item)| to_value(&item.map_err(|e| value_error("invalid_value", e.to_string()))?, depth).map_err(|e| e.at_index(i)))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let depth = enter(depth)?;
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(value_error("non_string_key", format!("object keys must be strings, found a key of type `{}`", type_name(&key))));
            };
            let key = key.to_cow().map_err(|_| value_error("invalid_string", "key is not valid Unicode (lone surrogate)".into()))?;
            let item = to_value(&item, depth).map_err(|e| e.at_key(&key))?;
            map.insert(key.into_owned(), item);
        }
        return Ok(Value::Object(map));
    }
    Err(value_error("unsupported_type", format!("values of type `{}` have no JSON form", type_name(obj))))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
}

fn enter(depth: usize) -> Result<usize, Error> {
    if depth >= MAX_DEPTH {
        return Err(value_error("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels")));
    }
    Ok(depth + 1)
}

/// Converts a core value (JSON, or any serializable type) straight to Python objects (dict, list, str, int, float, bool, None).
fn to_py<'py, T: serde::Serialize + ?Sized>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

fn convert(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value(obj, 0).map_err(|e| to_py_err(py, &e))
}

/// A manifest given as text or a mapping (the core tells them apart).
fn manifest_source(py: Python<'_>, manifest: &Bound<'_, PyAny>, origin: Option<String>) -> PyResult<ManifestSource> {
    Ok(ManifestSource::from_host(convert(py, manifest)?, origin))
}

/// The refusal class of `class` (`_governor.py` builds them from the core's table into this module).
fn refusal_class(py: Python<'_>, class: RefusalClass) -> PyResult<Bound<'_, PyAny>> {
    static CLASSES: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();
    let all = CLASSES.get_or_try_init(py, || {
        let module = py.import("harnessweaver._native")?;
        RefusalClass::ALL.iter().map(|c| module.getattr(c.name()).map(Bound::unbind)).collect::<PyResult<Vec<_>>>()
    })?;
    let at = RefusalClass::ALL.iter().position(|c| *c == class).and_then(|i| all.get(i));
    at.map(|t| t.bind(py).clone()).ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("a refusal class is missing"))
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
    m.add("HarnessweaverError", py.get_type::<HarnessweaverError>())?;
    m.add("LoadError", py.get_type::<LoadError>())?;
    m.add("InvalidValueError", py.get_type::<InvalidValueError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("HandlerOverrun", py.get_type::<HandlerOverrun>())?;
    m.add("MAX_DEPTH", MAX_DEPTH)?;
    m.add("RISKS", core::RISKS.to_vec())?;
    m.add("SIDE_EFFECTS", core::SIDE_EFFECTS.to_vec())?;
    m.add_class::<Problem>()?;
    properties::<Problem>(py, &CoreProblem::FIELDS, problem_field)?;
    m.add_function(wrap_pyfunction!(request, m)?)?;
    m.add_function(wrap_pyfunction!(definition_digest, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(sanitize, m)?)?;
    m.add_function(wrap_pyfunction!(cli_run, m)?)?;
    host::register(m)?;
    gateway::register(m)?;
    cel_lite::register(m)
}
