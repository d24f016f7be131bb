//! `harnessweaver.serve_mcp`: the MCP gateway of the core, serving a loaded
//! harness whose native tools are Python functions. The core runs the server;
//! a native tool's ticket goes to the Python side's own invoke path (the one
//! `call` uses: worker threads, timeouts, `finish_*`), so a gateway call and a
//! direct call are governed alike.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_runtime::gateway::server::{serve_harness, ServeError};
use harnessweaver_runtime::gateway::{Gateway, HostRuntime, NativeInvoker};
use harnessweaver_core::governor::{Decision, InvokeOutcome, Step, Ticket as CoreTicket};
use harnessweaver_core::store::Labels;
use harnessweaver_core::{CallResult as CoreResult, Error, Runtime as CoreRuntime};
use pyo3::prelude::*;

use super::governor::{principal_arg, CallResult, Runtime, Ticket};
use super::to_py_err;

/// The runtime inside the Python `Runtime` object (frozen, so readable without the GIL).
struct PyHost(Py<Runtime>);

impl HostRuntime for PyHost {
    fn runtime(&self) -> &CoreRuntime {
        &self.0.get().inner
    }
}

/// A refusal for the two ways Python could lose a ticket (allocating its
/// object failed; `invoke` returned something else after finishing it).
fn host_failure(tool: &str, message: &str) -> CoreResult {
    CoreResult {
        decision: Decision::Refused,
        code: Some(harnessweaver_core::RefusalCode::HandlerError),
        step: Some(Step::Invoke),
        message: message.into(),
        tool: tool.into(),
        call_id: String::new(),
        run_id: String::new(),
        output: None,
        output_report: None,
        approval: None,
        retry_after_ms: None,
        reasons: Vec::new(),
        labels: Labels::default(),
        would_refuse: Vec::new(),
    }
}

/// Runs `invoke(ticket)` (Python: handler, timeout, `finish_*`) and returns
/// its result; if it raised without finishing the ticket, finishes it as a
/// failure of that exception's class.
fn invoke_in_python(host: &Py<Runtime>, invoke: &Py<PyAny>, ticket: CoreTicket) -> CoreResult {
    let tool = ticket.tool.clone();
    Python::attach(|py| {
        let shell = Ticket {
            tool: ticket.tool.clone(),
            idempotency_key: ticket.idempotency_key.clone(),
            timeout_ms: ticket.timeout_ms,
            inner: Mutex::new(Some(ticket)),
        };
        let fail = |shell: &Ticket, kind: String| -> Option<CoreResult> {
            let ticket = shell.inner.lock().unwrap_or_else(PoisonError::into_inner).take()?;
            Some(host.get().inner.finish(ticket, InvokeOutcome::Failed { kind }))
        };
        let shell = match Py::new(py, shell) {
            Ok(s) => s,
            Err(e) => {
                e.print(py);
                return host_failure(&tool, "the gateway could not hand the call to Python");
            }
        };
        let kind = match invoke.call1(py, (shell.clone_ref(py),)) {
            Ok(done) => match done.extract::<PyRef<'_, CallResult>>(py) {
                Ok(result) => return result.inner.clone(),
                Err(_) => "TypeError".to_string(),
            },
            Err(e) => e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into()),
        };
        fail(shell.get(), kind).unwrap_or_else(|| host_failure(&tool, "the Python invoke path failed after finishing the call"))
    })
}

/// Serves the harness of `runtime` over MCP, blocking: stdio (as `principal`
/// and `tenant`, else `spec.gateway.stdio`) or, with `http="127.0.0.1:PORT"`,
/// streamable HTTP checked against `spec.gateway.http`. `invoke(ticket)` runs
/// a native tool's handler and finishes the ticket.
#[pyfunction]
#[pyo3(signature = (runtime, invoke, http = None, principal = None, tenant = None))]
fn serve_mcp(
    py: Python<'_>,
    runtime: Py<Runtime>,
    invoke: Py<PyAny>,
    http: Option<String>,
    principal: Option<Bound<'_, PyAny>>,
    tenant: Option<String>,
) -> PyResult<()> {
    let bad = |code: &'static str, message: String| to_py_err(py, &Error::InvalidArgument { code, message });
    let principal = match principal.filter(|p| !p.is_none()) {
        Some(p) => Some(principal_arg(py, &p)?),
        None => None,
    };
    let http = match http {
        Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| bad("invalid_argument", format!("http=`{text}` is not an address like 127.0.0.1:8080")))?),
        None => None,
    };
    let host = runtime.clone_ref(py);
    let native: NativeInvoker = Arc::new(move |ticket| invoke_in_python(&host, &invoke, ticket));
    let gateway = Arc::new(Gateway::new(Arc::new(PyHost(runtime)), Some(native)));
    let served = py.detach(|| {
        serve_harness(gateway, http, principal, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at http://{addr}/mcp"))
    });
    match served {
        Ok(()) => Ok(()),
        Err(ServeError::Usage(m)) => Err(bad("invalid_argument", m)),
        Err(ServeError::Failed(m)) => Err(bad("gateway_failed", m)),
    }
}

/// Registers `serve_mcp`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve_mcp, m)?)?;
    Ok(())
}
