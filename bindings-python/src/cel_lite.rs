//! `harnessweaver.cel_lite` (native side): compile a cel-lite expression once,
//! evaluate it against Python values as often as needed.
//!
//! Conversion and error mapping only; parsing, evaluation and the approval
//! rule are the core's (`harnessweaver_core::cel_lite`). Only the variables an
//! expression uses are converted, straight from Python objects to
//! `serde_json::Value` (no JSON text in between), and evaluation runs with the
//! GIL released, since a hostile expression may use its whole cost budget.

use harnessweaver_core::cel_lite::{self as core_cel, Outcome, NAMES};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Map;

use crate::{convert, to_py, to_py_err, HarnessweaverError, Problem};

/// The exceptions, in their own module so their Rust names do not clash with the core's.
mod exc {
    use super::HarnessweaverError;

    pyo3::create_exception!(
        harnessweaver.cel_lite,
        CompileError,
        HarnessweaverError,
        "A cel-lite expression did not compile: `.code`, `.message`, `.line`, `.column`; `str()` shows the line with a caret."
    );
    pyo3::create_exception!(
        harnessweaver.cel_lite,
        Unevaluable,
        HarnessweaverError,
        "A cel-lite expression could not be evaluated (a missing key, a wrong type, an overflow, a cost limit…); `.reason` says which part failed."
    );
}

pub(crate) use exc::{CompileError, Unevaluable};

fn compile_error(py: Python<'_>, err: &core_cel::CompileError) -> PyErr {
    let exc = CompileError::new_err(err.render());
    let value = exc.value(py);
    let problem = Problem {
        code: err.code().to_string(),
        message: err.message().to_string(),
        file: None,
        line: Some(err.line()),
        column: Some(err.column()),
        path: String::new(),
    };
    // Setting attributes on a fresh exception instance cannot fail in practice.
    let _ = value.setattr("code", err.code());
    let _ = value.setattr("message", err.message());
    let _ = value.setattr("line", err.line());
    let _ = value.setattr("column", err.column());
    let _ = PyList::new(py, [problem]).and_then(|list| value.setattr("problems", list));
    exc
}

fn unevaluable(py: Python<'_>, reason: String) -> PyErr {
    let exc = Unevaluable::new_err(reason.clone());
    let value = exc.value(py);
    let _ = value.setattr("code", "unevaluable");
    let _ = value.setattr("reason", reason);
    let _ = value.setattr("problems", PyList::empty(py));
    exc
}

fn invalid_argument(py: Python<'_>, code: &'static str, message: String) -> PyErr {
    to_py_err(py, &harnessweaver_core::Error::InvalidArgument { code, message })
}

/// A compiled cel-lite expression. Immutable and thread-safe; evaluate it as often as needed.
#[pyclass(frozen, module = "harnessweaver.cel_lite", name = "Program")]
pub(crate) struct Program {
    inner: core_cel::Program,
    /// The names the expression uses, as Python strings (looked up in `vars` on every call).
    keys: Vec<Py<PyString>>,
    /// The six names, interned, to check the keys of `vars` by identity first.
    all: Vec<Py<PyString>>,
}

impl Program {
    /// The variables the expression uses, converted from `vars` (a dict or any mapping).
    /// A key that is none of the six names is refused: no expression could use it.
    fn variables(&self, py: Python<'_>, vars: Option<&Bound<'_, PyAny>>) -> PyResult<Map<String, serde_json::Value>> {
        let mut map = Map::new();
        let Some(vars) = vars.filter(|v| !v.is_none()) else {
            return Ok(map);
        };
        let dict;
        let dict = if let Ok(d) = vars.cast::<PyDict>() {
            d
        } else if let Ok(mapping) = vars.cast::<pyo3::types::PyMapping>() {
            dict = PyDict::new(py);
            for item in mapping.items()?.iter() {
                let (k, v) = item.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
                dict.set_item(k, v)?;
            }
            &dict
        } else {
            return Err(invalid_argument(
                py,
                "invalid_vars",
                format!("`vars` must be a dict of variables, not `{}`", crate::type_name(vars)),
            ));
        };
        for key in dict.keys().iter() {
            // Keys written as literals are interned, so identity usually decides without reading the text.
            let known = self.all.iter().any(|n| key.is(n))
                || key.cast::<PyString>().ok().and_then(|k| k.to_cow().ok().map(|k| NAMES.contains(&&*k))) == Some(true);
            if !known {
                let shown = key.repr().map_or_else(|_| "?".to_string(), |r| r.to_string());
                return Err(invalid_argument(
                    py,
                    "invalid_vars",
                    format!(
                        "unknown variable {shown}; expressions can use `principal`, `tenant`, `task`, `tool`, `args`, `labels`"
                    ),
                ));
            }
        }
        for (name, key) in self.inner.names().iter().zip(&self.keys) {
            if let Some(value) = dict.get_item(key.bind(py))? {
                map.insert(name.clone(), convert(py, &value)?);
            }
        }
        Ok(map)
    }
}

#[pymethods]
impl Program {
    /// Evaluates against `vars` and returns the value (dict, list, str, int, float, bool or None).
    ///
    /// Raises `Unevaluable` when a runtime error stops it, unless `default=` is
    /// given: then that is returned instead.
    #[pyo3(signature = (vars = None, **kwargs))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        vars: Option<&Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut default = None;
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                if key.cast::<PyString>().is_ok_and(|k| k.to_cow().is_ok_and(|k| k == "default")) {
                    default = Some(value);
                } else {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "evaluate() got an unexpected keyword argument {}",
                        key.repr()?
                    )));
                }
            }
        }
        let map = self.variables(py, vars)?;
        let inner = &self.inner;
        match py.detach(|| inner.evaluate(&map)) {
            Outcome::Value(v) => to_py(py, &v),
            Outcome::Unevaluable { reason } => match default {
                Some(d) => Ok(d),
                None => Err(unevaluable(py, reason)),
            },
        }
    }

    /// The approval rule: `(required, reason)`. True, unevaluable or not a bool
    /// means a human must approve; `reason` says why when the expression could not decide.
    #[pyo3(signature = (vars = None))]
    fn approval_required<'py>(&self, py: Python<'py>, vars: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyTuple>> {
        let map = self.variables(py, vars)?;
        let inner = &self.inner;
        let verdict = py.detach(|| inner.approval_required(&map));
        (verdict.required, verdict.reason).into_pyobject(py)
    }

    /// The source text the program was compiled from.
    #[getter]
    fn source(&self) -> &str {
        self.inner.source()
    }

    /// The variable names the expression uses, in order of first use.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    fn __repr__(&self) -> String {
        let source = self.inner.source();
        let shown: String = source.chars().take(60).collect();
        let more = if shown.len() < source.len() { "…" } else { "" };
        format!("Program({:?}{more})", shown)
    }
}

/// Compiles a cel-lite expression; raises `CompileError` (with `.code`, `.line`, `.column`).
#[pyfunction]
fn cel_compile(py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<Program> {
    let text = text.to_cow()?;
    let inner = core_cel::compile(&text).map_err(|e| compile_error(py, &e))?;
    let keys = inner.names().iter().map(|n| PyString::intern(py, n).unbind()).collect();
    let all = NAMES.iter().map(|n| PyString::intern(py, n).unbind()).collect();
    Ok(Program { inner, keys, all })
}

/// Adds the cel-lite names to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CelCompileError", py.get_type::<CompileError>())?;
    m.add("CelUnevaluable", py.get_type::<Unevaluable>())?;
    m.add("CEL_NAMES", NAMES.to_vec())?;
    m.add("CEL_MAX_LENGTH", core_cel::MAX_LENGTH)?;
    m.add("CEL_MAX_DEPTH", core_cel::MAX_DEPTH)?;
    m.add("CelProgram", py.get_type::<Program>())?;
    m.add_function(wrap_pyfunction!(cel_compile, m)?)?;
    Ok(())
}
