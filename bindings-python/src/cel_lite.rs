//! `harnessweaver.cel_lite` (native side): compile once, evaluate against
//! Python values. Only what an expression reads is converted (`host::cel::gather`
//! over dicts); the variable check and its message are the core's, and
//! evaluation runs without the GIL.

use harnessweaver_core::host::cel::{self, CelOutcome, Host, Part, VAR_NAMES};
use harnessweaver_core::host::{Error, ErrorClass};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString};

use crate::{exception, to_py, to_py_err, to_value, type_name};

/// `exc` with more attributes (setting them on a fresh exception cannot fail in practice).
fn with<'py, V: IntoPyObject<'py> + Copy>(exc: PyErr, py: Python<'py>, attrs: &[(&str, V)]) -> PyErr {
    attrs.iter().for_each(|(k, v)| drop(exc.value(py).setattr(*k, *v)));
    exc
}

/// A compiled cel-lite expression; immutable and thread-safe.
#[pyclass(frozen, module = "harnessweaver.cel_lite", name = "Program")]
struct Program {
    inner: cel::Program,
    /// The name of each read, interned: dict lookups reuse its hash.
    keys: Vec<Py<PyString>>,
    /// The six names, interned: a literal key is usually checked by identity.
    all: Vec<Py<PyString>>,
}

/// Python values as `host::cel::gather` reads them: a dict is read field by field.
struct Python3<'a, 'py>(&'a [Py<PyString>], Python<'py>);

impl<'py> Host for Python3<'_, 'py> {
    type Value = Bound<'py, PyAny>;
    type Map = Bound<'py, PyDict>;

    fn as_map(&self, value: &Self::Value) -> Result<Option<Self::Map>, Error> {
        Ok(value.cast::<PyDict>().ok().cloned())
    }

    fn field(&self, map: &Self::Map, read: usize, name: &str) -> Result<Option<Self::Value>, Error> {
        let found = self.0.get(read).map_or_else(|| map.get_item(name), |key| map.get_item(key.bind(self.1)));
        found.map_err(|e| Error::value("invalid_value", e.to_string()))
    }

    fn convert(&self, value: &Self::Value, depth: usize) -> Result<serde_json::Value, Error> {
        to_value(value, depth)
    }
}

impl Program {
    fn parts(&self, py: Python<'_>, vars: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Part>> {
        let dict = match vars.filter(|v| !v.is_none()).map(|v| (v, v.cast::<PyDict>(), v.cast::<PyMapping>())) {
            None => None,
            Some((_, Ok(d), _)) => Some(d.clone()),
            Some((_, _, Ok(m))) => Some(PyDict::from_sequence(m.items()?.as_any())?),
            Some((v, _, _)) => return Err(to_py_err(py, &cel::not_a_mapping(&type_name(v)))),
        };
        for key in dict.iter().flat_map(|d| d.keys()).filter(|k| !self.all.iter().any(|n| k.is(n))) {
            let text = key.cast::<PyString>().map_err(|_| to_py_err(py, &cel::non_string_key(&type_name(&key))))?;
            cel::check_key(&text.to_cow()?).map_err(|e| to_py_err(py, &e))?;
        }
        cel::gather(&Python3(&self.keys, py), &self.inner, dict.as_ref()).map_err(|e| to_py_err(py, &e))
    }
}

#[pymethods]
impl Program {
    #[pyo3(signature = (vars = None, **kwargs))]
    fn evaluate<'py>(&self, py: Python<'py>, vars: Option<&Bound<'py, PyAny>>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyAny>> {
        let mut default = None;
        for (key, value) in kwargs.into_iter().flatten() {
            if !key.extract::<String>().is_ok_and(|k| k == "default") {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("evaluate() got an unexpected keyword argument {}", key.repr()?)));
            }
            default = Some(value);
        }
        let parts = self.parts(py, vars)?;
        match (py.detach(|| self.inner.evaluate_parts(&parts)), default) {
            (CelOutcome::Value(v), _) => to_py(py, &v),
            (CelOutcome::Unevaluable { .. }, Some(d)) => Ok(d),
            (CelOutcome::Unevaluable { reason }, None) => {
                Err(with(exception(py, ErrorClass::CelUnevaluable, reason.clone(), "unevaluable", &[]), py, &[("reason", reason.as_str())]))
            }
        }
    }

    #[pyo3(signature = (vars = None))]
    fn approval_required(&self, py: Python<'_>, vars: Option<&Bound<'_, PyAny>>) -> PyResult<(bool, Option<String>)> {
        let parts = self.parts(py, vars)?;
        let verdict = py.detach(|| self.inner.approval_required_parts(&parts));
        Ok((verdict.required, verdict.reason))
    }

    #[getter]
    fn source(&self) -> &str {
        self.inner.source()
    }

    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::repr(slf.as_any(), &["source"])
    }
}

/// Compiles a cel-lite expression; raises `CompileError` (with `.code`, `.line`, `.column`).
#[pyfunction]
fn cel_compile(py: Python<'_>, text: &str) -> PyResult<Program> {
    let inner = cel::compile(text).map_err(|e| {
        let err = exception(py, ErrorClass::CelCompile, e.render(), e.code(), &[cel::to_problem(&e)]);
        with(with(err, py, &[("message", e.message())]), py, &[("line", e.line()), ("column", e.column())])
    })?;
    let keys = inner.reads().iter().map(|r| PyString::intern(py, &r.name).unbind()).collect();
    let all = VAR_NAMES.iter().map(|n| PyString::intern(py, n).unbind()).collect();
    Ok(Program { inner, keys, all })
}

/// Adds the cel-lite names to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CEL_NAMES", VAR_NAMES.to_vec())?;
    m.add("CEL_MAX_LENGTH", cel::MAX_LENGTH)?;
    m.add("CEL_MAX_DEPTH", cel::MAX_DEPTH)?;
    m.add("CelProgram", py.get_type::<Program>())?;
    m.add_function(wrap_pyfunction!(cel_compile, m)?)
}
