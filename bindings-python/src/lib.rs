//! Python bindings (PyO3) for harnessweaver: the native module `harnessweaver._native`.
//!
//! This crate only converts values between Python and the core and maps the
//! core's errors to Python exceptions; every decision is made in the core. The
//! pure-Python package `harnessweaver` (in `python/`) wraps this module.

mod cel_lite;
mod sanitize;

use harnessweaver_core::canonical::{self, MAX_DEPTH};
use harnessweaver_core::{Error, Problem as CoreProblem};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

mod gateway;
mod governor;

create_exception!(harnessweaver, HarnessweaverError, PyException, "Base class of every harnessweaver error; `.code` is its stable snake_case code.");
create_exception!(harnessweaver, LoadError, HarnessweaverError, "A harness or manifest failed to load; `.problems` lists every problem found.");
create_exception!(harnessweaver, InvalidValueError, HarnessweaverError, "A value with no portable JSON form (NaN, a huge integer, nesting too deep, a non-string key).");
create_exception!(harnessweaver, InvalidArgumentError, HarnessweaverError, "A bad argument from the caller.");

/// One load problem: its code, message and where it is.
#[pyclass(frozen, get_all, module = "harnessweaver", name = "Problem")]
#[derive(Clone)]
struct Problem {
    /// Stable snake_case code.
    code: String,
    /// What is wrong, safe to show a model.
    message: String,
    /// The file the problem is in, when there is one.
    file: Option<String>,
    /// 1-based line, when known.
    line: Option<usize>,
    /// 1-based column, when known.
    column: Option<usize>,
    /// The field path (`spec.timeout`), empty when the problem is about a whole file.
    path: String,
}

#[pymethods]
impl Problem {
    /// The problem as a plain dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("code", &self.code)?;
        d.set_item("message", &self.message)?;
        d.set_item("file", &self.file)?;
        d.set_item("line", self.line)?;
        d.set_item("column", self.column)?;
        d.set_item("path", &self.path)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Problem(code={:?}, message={:?}, file={:?}, line={:?}, column={:?}, path={:?})",
            self.code, self.message, self.file, self.line, self.column, self.path
        )
    }

    fn __str__(&self) -> String {
        self.to_core().to_string()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<PyRef<'_, Problem>>().is_ok_and(|o| {
            o.code == self.code
                && o.message == self.message
                && o.file == self.file
                && o.line == self.line
                && o.column == self.column
                && o.path == self.path
        })
    }
}

impl Problem {
    fn from_core(p: &CoreProblem) -> Self {
        Self {
            code: p.code.to_string(),
            message: p.message.clone(),
            file: p.file.clone(),
            line: p.line,
            column: p.column,
            path: p.path.clone(),
        }
    }

    fn to_core(&self) -> CoreProblem {
        CoreProblem {
            code: harnessweaver_core::ProblemCode::parse(&self.code).unwrap_or(harnessweaver_core::ProblemCode::InvalidValue),
            message: self.message.clone(),
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            path: self.path.clone(),
        }
    }
}

/// Maps a core error to the matching Python exception, with `.code` (and `.problems` for load errors).
fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    let message = err.to_string();
    let exc = match err {
        Error::Load(_) => LoadError::new_err(message),
        Error::Value { .. } => InvalidValueError::new_err(message),
        Error::InvalidArgument { .. } => InvalidArgumentError::new_err(message),
        _ => HarnessweaverError::new_err(message),
    };
    let value = exc.value(py);
    let problems: Vec<Problem> = err.problems().iter().map(Problem::from_core).collect();
    // Setting attributes on a fresh exception instance cannot fail in practice;
    // if it did, the exception without them is still the right one to raise.
    let _ = value.setattr("code", err.code());
    let _ = PyList::new(py, problems).and_then(|list| value.setattr("problems", list));
    exc
}

fn value_error(code: &'static str, message: String) -> Error {
    Error::Value { code, message }
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
        // The core refuses magnitudes beyond 2^53, as every binding does.
        return match obj.extract::<i128>() {
            Ok(i) => canonical::int_value(i),
            // Beyond i128: let the core word the refusal with the number's text.
            Err(_) => {
                let text = obj.str().and_then(|s| s.to_cow().map(|c| c.into_owned()));
                canonical::int_value_from_text(&text.unwrap_or_default())
            }
        };
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return canonical::float_value(f.value());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s.to_cow().map(|s| Value::String(s.into_owned())).map_err(|_| {
            value_error("invalid_string", "string is not valid Unicode (lone surrogate)".to_string())
        });
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let depth = enter(depth)?;
        let mut items = Vec::new();
        let iter = obj.try_iter().map_err(|e| value_error("invalid_value", e.to_string()))?;
        for item in iter {
            let item = item.map_err(|e| value_error("invalid_value", e.to_string()))?;
            items.push(to_value(&item, depth)?);
        }
        return Ok(Value::Array(items));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let depth = enter(depth)?;
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                let type_name = type_name(&key);
                return Err(value_error(
                    "non_string_key",
                    format!("object keys must be strings, found a key of type `{type_name}`"),
                ));
            };
            let key = key.to_cow().map_err(|_| {
                value_error("invalid_string", "key is not valid Unicode (lone surrogate)".to_string())
            })?;
            map.insert(key.into_owned(), to_value(&item, depth)?);
        }
        return Ok(Value::Object(map));
    }
    Err(value_error(
        "unsupported_type",
        format!("values of type `{}` have no JSON form", type_name(obj)),
    ))
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

/// Converts a core JSON value to Python objects (dict, list, str, int, float, bool, None).
fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

fn convert(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value(obj, 0).map_err(|e| to_py_err(py, &e))
}

/// A loaded harness (native side); the Python `Harness` wraps it.
#[pyclass(frozen, module = "harnessweaver._native", name = "Harness")]
struct Harness {
    inner: harnessweaver_core::Harness,
}

#[pymethods]
impl Harness {
    /// Every tool's description (`Tool::describe()`), in load order.
    fn describe_tools<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner.tools().iter().map(|t| to_py(py, &t.describe())).collect()
    }
}

/// Loads `harness.yaml` and its manifests; raises `LoadError` listing every problem.
#[pyfunction]
fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Harness> {
    // Reading and checking files needs no Python objects: let other threads run.
    py.detach(|| harnessweaver_core::Harness::load(&path))
        .map(|inner| Harness { inner })
        .map_err(|e| to_py_err(py, &e))
}

/// The definition digest (`sha256:…`) of a tool's name, description and input schema.
#[pyfunction]
fn definition_digest(py: Python<'_>, name: &str, description: &str, input_schema: &Bound<'_, PyAny>) -> PyResult<String> {
    let schema = convert(py, input_schema)?;
    harnessweaver_core::definition_digest(name, description, &schema).map_err(|e| to_py_err(py, &e))
}

/// The canonical JSON text of a value.
#[pyfunction]
fn canonical_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let value = convert(py, value)?;
    harnessweaver_core::canonical::to_string(&value).map_err(|e| to_py_err(py, &e))
}

/// Parses one manifest (a dict, or YAML/JSON text) and returns its description.
#[pyfunction]
#[pyo3(signature = (manifest, origin = None))]
fn describe_manifest<'py>(py: Python<'py>, manifest: &Bound<'py, PyAny>, origin: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
    let tool = if let Ok(text) = manifest.cast::<PyString>() {
        let text = text.to_cow()?;
        harnessweaver_core::Tool::from_manifest_text(&text, origin.unwrap_or("<text>"))
    } else {
        let value = convert(py, manifest)?;
        harnessweaver_core::Tool::from_manifest_value(&value, origin.unwrap_or("<value>"))
    };
    let tool = tool.map_err(|e| to_py_err(py, &e))?;
    to_py(py, &tool.describe())
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
    m.add("MAX_DEPTH", MAX_DEPTH)?;
    m.add_class::<Problem>()?;
    m.add_class::<Harness>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(definition_digest, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(describe_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(cli_run, m)?)?;
    governor::register(m)?;
    gateway::register(m)?;
    cel_lite::register(m)?;
    sanitize::register(m)?;
    Ok(())
}
