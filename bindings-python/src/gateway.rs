//! `harnessweaver.serve_mcp`: the MCP gateway of the runtime crate, serving a
//! loaded harness whose native tools are Python functions. A native tool's
//! ticket runs through the same path as `Harness.call`, so a gateway call and
//! a direct call are governed alike.

use std::net::SocketAddr;
use std::sync::Arc;

use harnessweaver_core::host::Error;
use harnessweaver_runtime::gateway::server::{serve_harness, ServeError};
use harnessweaver_runtime::gateway::{Gateway, NativeInvoker};
use pyo3::prelude::*;

use crate::host::{principal_arg, Host};
use crate::to_py_err;

/// Serves the harness over MCP, blocking: stdio (as `principal` and
/// `tenant`, else `spec.gateway.stdio`) or, with `http="127.0.0.1:PORT"`,
/// streamable HTTP checked against `spec.gateway.http`.
#[pyfunction]
#[pyo3(signature = (host, http = None, principal = None, tenant = None))]
fn serve_mcp(py: Python<'_>, host: Py<Host>, http: Option<String>, principal: Option<Bound<'_, PyAny>>, tenant: Option<String>) -> PyResult<()> {
    let bad = |code: &'static str, message: String| to_py_err(py, &Error::InvalidArgument { code, message });
    let principal = principal.filter(|p| !p.is_none()).map(|p| principal_arg(py, &p)).transpose()?;
    let http = http
        .map(|text| text.parse::<SocketAddr>().map_err(|_| bad("invalid_argument", format!("http=`{text}` is not an address like 127.0.0.1:8080"))));
    let http = http.transpose()?;
    let runtime = host
        .get()
        .inner
        .runtime()
        .ok_or_else(|| bad("not_loaded_for_calls", "this harness was opened with inspect() and cannot take calls; use load()".into()))?;
    let native: NativeInvoker = Arc::new(move |ticket| {
        Python::attach(|py| {
            let host = host.get();
            let (result, raised) = host.run_ticket(py, host.inner.adopt(ticket));
            if let Some(e) = raised {
                e.restore(py);
            }
            result
        })
    });
    let gateway = Arc::new(Gateway::new(runtime, Some(native)));
    let served = py
        .detach(|| serve_harness(gateway, http, principal, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at http://{addr}/mcp")));
    served.map_err(|e| match e {
        ServeError::Usage(m) => bad("invalid_argument", m),
        ServeError::Failed(m) => bad("gateway_failed", m),
    })
}

/// Registers `serve_mcp`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve_mcp, m)?)
}
