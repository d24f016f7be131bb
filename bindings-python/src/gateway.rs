//! `harnessweaver.serve_mcp`: the MCP gateway of the runtime crate, serving a
//! loaded harness whose native tools are Python functions. A native tool's
//! ticket runs through the same path as `Harness.call`, so a gateway call and
//! a direct call are governed alike.

use std::sync::Arc;

use harnessweaver_runtime::gateway::front::HttpOptions;
use harnessweaver_runtime::gateway::server::{host_target, serve_harness};
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
    let principal = principal.filter(|p| !p.is_none()).map(|p| principal_arg(py, &p)).transpose()?;
    let (runtime, http) = host_target(&host.get().inner, http.as_deref()).map_err(|e| to_py_err(py, &e))?;
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
    let url = |addr| HttpOptions::default().mcp_url(&gateway, addr);
    let served = py.detach(|| {
        serve_harness(Arc::clone(&gateway), http, principal, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at {}", url(addr)))
    });
    served.map_err(|e| to_py_err(py, &e.into()))
}

/// Registers `serve_mcp`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve_mcp, m)?)
}
