//! `harnessweaver.sanitize`: the output sanitizers on any JSON-like value.
//! Conversion only; the sanitizing is the core's (`harnessweaver_core::sanitize`).

use harnessweaver_core::sanitize::{self as core_sanitize, Sanitizer};
use harnessweaver_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{to_py, to_py_err, to_value};

/// Runs the named sanitizers, in order, on every string value and object key
/// of `value`; returns the sanitized value and the count of replacements per
/// kind (never what was replaced).
#[pyfunction]
fn sanitize<'py>(py: Python<'py>, value: &Bound<'py, PyAny>, sanitizers: Vec<String>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let mut chosen = Vec::with_capacity(sanitizers.len());
    for name in &sanitizers {
        let s = Sanitizer::from_name(name).ok_or_else(|| {
            to_py_err(py, &Error::InvalidArgument {
                code: "unknown_sanitizer",
                message: format!("unknown sanitizer `{name}` (expected pii_redact or strip_instructions)"),
            })
        })?;
        chosen.push(s);
    }
    let value = to_value(value, 0).map_err(|e| to_py_err(py, &e))?;
    let (out, report) = py.detach(|| core_sanitize::apply(&value, &chosen));
    let counts = PyDict::new(py);
    for (kind, n) in report.counts.iter() {
        counts.set_item(kind, n)?;
    }
    Ok((to_py(py, &out)?, counts))
}

/// Adds `sanitize` to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sanitize, m)?)
}
