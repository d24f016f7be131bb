//! `harnessweaver.cel_lite` (native side): compile once, evaluate against
//! Python values. The variable check and its message are the core's
//! (`host::cel::Vars`); only the variables an expression uses are converted,
//! and evaluation runs without the GIL.

use harnessweaver_core::host::cel::{self, CelOutcome, Var, Vars, VAR_NAMES};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping, PyString, PyTuple};

use crate::{convert, problem, to_py, to_py_err, type_name, HarnessweaverError};

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
        "A cel-lite expression could not be evaluated; `.reason` says which part failed."
    );
}

use exc::{CompileError, Unevaluable};

fn set(exc: &PyErr, py: Python<'_>, attrs: &[(&str, Bound<'_, PyAny>)]) -> PyErr {
    let value = exc.value(py);
    for (k, v) in attrs {
        // Setting attributes on a fresh exception cannot fail in practice.
        let _ = value.setattr(*k, v);
    }
    exc.clone_ref(py)
}

/// A compiled cel-lite expression; immutable and thread-safe.
#[pyclass(frozen, module = "harnessweaver.cel_lite", name = "Program")]
struct Program {
    inner: cel::Program,
    /// The names the expression uses, as interned Python strings.
    used: Vec<(Var, Py<PyString>)>,
    /// The six names, interned: a literal key is usually checked by identity.
    all: Vec<Py<PyString>>,
}

impl Program {
    fn vars(&self, py: Python<'_>, vars: Option<&Bound<'_, PyAny>>) -> PyResult<Vars> {
        let mut out = Vars::new();
        let Some(vars) = vars.filter(|v| !v.is_none()) else { return Ok(out) };
        let dict = match vars.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => match vars.cast::<PyMapping>() {
                Ok(m) => PyDict::from_sequence(m.items()?.as_any())?,
                Err(_) => return Err(to_py_err(py, &Vars::not_a_mapping(&type_name(vars)))),
            },
        };
        for key in dict.keys().iter() {
            if self.all.iter().any(|n| key.is(n)) {
                continue;
            }
            let text = key.cast::<PyString>().map_err(|_| to_py_err(py, &Vars::non_string_key(&type_name(&key))))?;
            Vars::check_key(&text.to_cow()?).map_err(|e| to_py_err(py, &e))?;
        }
        for (var, key) in &self.used {
            if let Some(value) = dict.get_item(key.bind(py))? {
                out.insert(*var, convert(py, &value)?);
            }
        }
        Ok(out)
    }
}

#[pymethods]
impl Program {
    #[pyo3(signature = (vars = None, **kwargs))]
    fn evaluate<'py>(&self, py: Python<'py>, vars: Option<&Bound<'py, PyAny>>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyAny>> {
        let mut default = None;
        for (key, value) in kwargs.map(|k| k.iter().collect::<Vec<_>>()).unwrap_or_default() {
            if key.extract::<String>().is_ok_and(|k| k == "default") {
                default = Some(value);
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("evaluate() got an unexpected keyword argument {}", key.repr()?)));
            }
        }
        let vars = self.vars(py, vars)?;
        match py.detach(|| vars.evaluate(&self.inner)) {
            CelOutcome::Value(v) => to_py(py, &v),
            CelOutcome::Unevaluable { reason } => match default {
                Some(d) => Ok(d),
                None => {
                    let exc = Unevaluable::new_err(reason.clone());
                    Err(set(
                        &exc,
                        py,
                        &[
                            ("code", PyString::new(py, "unevaluable").into_any()),
                            ("reason", PyString::new(py, &reason).into_any()),
                            ("problems", PyList::empty(py).into_any()),
                        ],
                    ))
                }
            },
        }
    }

    #[pyo3(signature = (vars = None))]
    fn approval_required<'py>(&self, py: Python<'py>, vars: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyTuple>> {
        let vars = self.vars(py, vars)?;
        let verdict = py.detach(|| vars.approval_required(&self.inner));
        (verdict.required, verdict.reason).into_pyobject(py)
    }

    #[getter]
    fn source(&self) -> &str {
        self.inner.source()
    }

    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    fn __repr__(&self) -> String {
        let source = self.inner.source();
        let shown: String = source.chars().take(60).collect();
        format!("Program({shown:?}{})", if shown.len() < source.len() { "…" } else { "" })
    }
}

/// Compiles a cel-lite expression; raises `CompileError` (with `.code`, `.line`, `.column`).
#[pyfunction]
fn cel_compile(py: Python<'_>, text: &str) -> PyResult<Program> {
    let inner = cel::compile(text).map_err(|e| {
        let exc = CompileError::new_err(e.render());
        let problems = PyList::new(py, [problem(&cel::to_problem(&e))]).map(Bound::into_any).unwrap_or_else(|_| PyList::empty(py).into_any());
        set(
            &exc,
            py,
            &[
                ("code", PyString::new(py, e.code()).into_any()),
                ("message", PyString::new(py, e.message()).into_any()),
                ("line", e.line().into_pyobject(py).map(Bound::into_any).unwrap_or_else(|_| py.None().into_bound(py))),
                ("column", e.column().into_pyobject(py).map(Bound::into_any).unwrap_or_else(|_| py.None().into_bound(py))),
                ("problems", problems),
            ],
        )
    })?;
    let used = inner.names().iter().filter_map(|n| Var::parse(n).map(|v| (v, PyString::intern(py, n).unbind()))).collect();
    let all = VAR_NAMES.iter().map(|n| PyString::intern(py, n).unbind()).collect();
    Ok(Program { inner, used, all })
}

/// Adds the cel-lite names to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CelCompileError", py.get_type::<CompileError>())?;
    m.add("CelUnevaluable", py.get_type::<Unevaluable>())?;
    m.add("CEL_NAMES", VAR_NAMES.to_vec())?;
    m.add("CEL_MAX_LENGTH", cel::MAX_LENGTH)?;
    m.add("CEL_MAX_DEPTH", cel::MAX_DEPTH)?;
    m.add("CelProgram", py.get_type::<Program>())?;
    m.add_function(wrap_pyfunction!(cel_compile, m)?)
}
