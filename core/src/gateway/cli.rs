//! `harnessweaver gateway mcp …` and `harnessweaver approvals …`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{server, Gateway};
use crate::audit::NullSink;
use crate::clock::{IdSource, SystemClock};
use crate::error::Error;
use crate::governor::{open_store, Governor, Principal, Settings};
use crate::harness::{Harness, StateBackend};
use crate::manifest::Transport;
use crate::runtime::{LoadOptions, Runtime};
use crate::store::PendingApproval;

/// `gateway --help`.
pub const GATEWAY_HELP: &str = "usage: harnessweaver gateway mcp [harness.yaml] [--stdio | --http 127.0.0.1:PORT] [--principal JSON|ID] [--tenant T]

Serves the harness's tools over MCP; every tools/call runs the nine steps.
tools/list gives the pinned definitions of the tools the caller could ever
call (disabled tools, tools of other tenants, tools needing scopes the caller
lacks and tools whose pin does not hold are left out). A refused call is a tool
result with isError, its stable code and a model-safe message; a call waiting
for approval carries the approval id: resolve it with `harnessweaver approvals`,
then the client calls the tool again with the same arguments.

  --stdio              serve one client over stdin/stdout (the default). The
                       caller is spec.gateway.stdio in harness.yaml, or
                       --principal (a JSON object {\"id\", \"roles\", \"scopes\",
                       \"attrs\"} or a bare id) and --tenant.
  --http ADDR          serve streamable HTTP at http://ADDR/mcp (port 0 picks a
                       free port; the address is printed on stderr). Every
                       request needs `Authorization: Bearer <token>`, checked
                       against spec.gateway.http.keys or .jwt; otherwise 401.

http, code and mcp tools run from the command line; native tools need their
host (hw.serve_mcp in Python, serveMcp in TypeScript) and are hidden here.
Diagnostics go to stderr. Exit codes: 0 the client disconnected, 1 the harness
did not load or the server failed, 2 usage error. See docs/gateway.md.";

/// `approvals --help`.
pub const APPROVALS_HELP: &str = "usage: harnessweaver approvals list [--harness FILE] [--json]
       harnessweaver approvals approve ID [--harness FILE] [--approver JSON|ID]
       harnessweaver approvals deny ID [--reason TEXT] [--harness FILE] [--approver JSON|ID]

Lists, grants or denies the approvals calls are waiting for, in the state store
harness.yaml names (spec.state: sqlite:<file> or redis://…), so it works while a
gateway or an application runs in another process. A granted approval is used by
the next call of the same tool with the same arguments, principal and tenant.
--approver is who decides (a JSON object with roles, or a bare id; default
$USER): a tool's approver_role must be among its roles. --harness defaults to
./harness.yaml. The memory store cannot be reached from another process.
Exit codes: 0 done, 1 refused (unknown approval, not pending, expired, role
missing, memory store, store unavailable), 2 usage error.";

fn harness_path(arg: Option<&str>) -> PathBuf {
    let path = PathBuf::from(arg.unwrap_or("harness.yaml"));
    if path.is_dir() {
        path.join("harness.yaml")
    } else {
        path
    }
}

fn principal_arg(text: &str) -> Result<Principal, String> {
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Principal::from_value(&v).map_err(|e| e.to_string())
    } else if text.is_empty() {
        Err("the principal id is empty".into())
    } else {
        Ok(Principal::new(text))
    }
}

fn print_load_error(e: &Error, path: &Path, err: &mut dyn Write) {
    let problems = e.problems();
    for p in problems {
        let _ = writeln!(err, "error: {p}");
    }
    if problems.is_empty() {
        let _ = writeln!(err, "error: {e}");
    }
    let _ = writeln!(err, "harnessweaver: `{}` did not load", path.display());
}

/// `harnessweaver gateway …`.
pub fn gateway(args: &[&str], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let usage = |err: &mut dyn Write, what: String| {
        let _ = writeln!(err, "harnessweaver gateway: {what}\n\n{GATEWAY_HELP}");
        2
    };
    let rest = match args {
        ["--help" | "-h", ..] | [] => {
            let _ = writeln!(out, "{GATEWAY_HELP}");
            return i32::from(args.is_empty()) * 2;
        }
        ["mcp", rest @ ..] => rest,
        [other, ..] => return usage(err, format!("unknown gateway `{other}` (only `mcp`)")),
    };
    let (mut file, mut http, mut principal, mut tenant) = (None, None, None, None);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match *a {
            "--help" | "-h" => {
                let _ = writeln!(out, "{GATEWAY_HELP}");
                return 0;
            }
            "--stdio" => http = None,
            "--http" | "--principal" | "--tenant" => {
                let Some(v) = it.next() else { return usage(err, format!("`{a}` needs a value")) };
                match *a {
                    "--http" => match v.parse::<SocketAddr>() {
                        Ok(addr) => http = Some(addr),
                        Err(_) => return usage(err, format!("`--http {v}` is not an address like 127.0.0.1:8080")),
                    },
                    "--principal" => match principal_arg(v) {
                        Ok(p) => principal = Some(p),
                        Err(e) => return usage(err, format!("`--principal`: {e}")),
                    },
                    _ => tenant = Some((*v).to_string()),
                }
            }
            s if s.starts_with('-') => return usage(err, format!("unknown option `{s}`")),
            s if file.is_none() => file = Some(s),
            s => return usage(err, format!("unexpected argument `{s}`")),
        }
    }
    let path = harness_path(file);
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => {
            print_load_error(&e, &path, err);
            return 1;
        }
    };
    // Native handlers live with a host; here they are declared so the harness
    // loads, hidden from tools/list and refused if called.
    let natives: Vec<String> =
        harness.tools().iter().filter(|t| t.manifest().transport == Transport::Native).map(|t| t.name().to_string()).collect();
    let runtime = match Runtime::load(&path, LoadOptions { host_handlers: natives.clone(), ..LoadOptions::default() }) {
        Ok(r) => r,
        Err(e) => {
            print_load_error(&e, &path, err);
            return 1;
        }
    };
    if !natives.is_empty() {
        let _ = writeln!(
            err,
            "harnessweaver gateway: not serving native tool{} {} (their handlers live in a host: use hw.serve_mcp or serveMcp)",
            if natives.len() == 1 { "" } else { "s" },
            natives.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        );
    }
    if harness.spec().state == StateBackend::Memory {
        let _ = writeln!(
            err,
            "harnessweaver gateway: spec.state is memory: approvals cannot be resolved from another process (use sqlite:<file> or redis://…)"
        );
    }
    let gateway = Arc::new(Gateway::new(Arc::new(runtime), None));
    let _ = err.flush();
    match server::serve_harness(gateway, http, principal, tenant, &mut |addr| {
        eprintln!("harnessweaver gateway: serving MCP at http://{addr}/mcp");
    }) {
        Ok(()) => 0,
        Err(server::ServeError::Usage(e)) => usage(err, e),
        Err(server::ServeError::Failed(e)) => {
            let _ = writeln!(err, "harnessweaver gateway: {e}");
            1
        }
    }
}

/// A governor over `spec.state` alone (no tools, no transports): enough to
/// list, grant and deny approvals.
fn approvals_governor(path: &Path, err: &mut dyn Write) -> Result<Governor, i32> {
    let harness = match Harness::load(path) {
        Ok(h) => h,
        Err(e) => {
            print_load_error(&e, path, err);
            return Err(1);
        }
    };
    if harness.spec().state == StateBackend::Memory {
        let _ = writeln!(
            err,
            "harnessweaver approvals: `{}` keeps state in memory, inside the process that asked for the approval; \
             set `spec.state` to `sqlite:<file>` or `redis://…` so the gateway and this command share approvals [memory_store]",
            path.display()
        );
        return Err(1);
    }
    match open_store(&harness, false) {
        Ok(store) => Ok(Governor::new(
            Vec::new(),
            Vec::new(),
            Settings::default(),
            store,
            Arc::new(SystemClock),
            IdSource::random(),
            Arc::new(NullSink),
        )),
        Err(p) => {
            let _ = writeln!(err, "error: {p}");
            Err(1)
        }
    }
}

fn approval_line(a: &PendingApproval) -> String {
    let who = a.principal.get("id").and_then(serde_json::Value::as_str).unwrap_or("?");
    let tenant = a.tenant.as_deref().map(|t| format!(" tenant {t}")).unwrap_or_default();
    let role = a.approver_role.as_deref().map(|r| format!(" needs role {r};")).unwrap_or_default();
    format!("{}  {}  {}  by {who}{tenant};{role} {}", a.id, a.state.as_str(), a.tool, a.reasons.join("; "))
}

/// `harnessweaver approvals …`.
pub fn approvals(args: &[&str], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let usage = |err: &mut dyn Write, what: String| {
        let _ = writeln!(err, "harnessweaver approvals: {what}\n\n{APPROVALS_HELP}");
        2
    };
    let (verb, rest) = match args {
        ["--help" | "-h", ..] | [] => {
            let _ = writeln!(out, "{APPROVALS_HELP}");
            return i32::from(args.is_empty()) * 2;
        }
        [verb @ ("list" | "approve" | "deny"), rest @ ..] => (*verb, rest),
        [other, ..] => return usage(err, format!("unknown subcommand `{other}` (list, approve or deny)")),
    };
    let (mut id, mut harness, mut reason, mut approver, mut json) = (None, None, None, None, false);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match *a {
            "--help" | "-h" => {
                let _ = writeln!(out, "{APPROVALS_HELP}");
                return 0;
            }
            "--json" => json = true,
            "--harness" | "--reason" | "--approver" => {
                let Some(v) = it.next() else { return usage(err, format!("`{a}` needs a value")) };
                match *a {
                    "--harness" => harness = Some(*v),
                    "--reason" => reason = Some((*v).to_string()),
                    _ => match principal_arg(v) {
                        Ok(p) => approver = Some(p),
                        Err(e) => return usage(err, format!("`--approver`: {e}")),
                    },
                }
            }
            s if s.starts_with('-') => return usage(err, format!("unknown option `{s}`")),
            s if id.is_none() && verb != "list" => id = Some(s),
            // `approvals list harness.yaml`, like the other commands.
            s if harness.is_none() && verb == "list" => harness = Some(s),
            s => return usage(err, format!("unexpected argument `{s}`")),
        }
    }
    let path = harness_path(harness);
    let governor = match approvals_governor(&path, err) {
        Ok(g) => g,
        Err(code) => return code,
    };
    if verb == "list" {
        return match governor.open_approvals() {
            Ok(list) => {
                if json {
                    let _ = writeln!(out, "{}", serde_json::to_value(&list).unwrap_or_default());
                } else if list.is_empty() {
                    let _ = writeln!(out, "approvals: none open");
                } else {
                    for a in &list {
                        let _ = writeln!(out, "{}", approval_line(a));
                    }
                }
                0
            }
            Err(e) => {
                let _ = writeln!(err, "harnessweaver approvals: {e} [{}]", e.code());
                1
            }
        };
    }
    let Some(id) = id else { return usage(err, format!("`approvals {verb}` needs the approval id")) };
    let approver = approver.unwrap_or_else(|| Principal::new(std::env::var("USER").unwrap_or_else(|_| "cli".into())));
    let decided = if verb == "approve" {
        governor.approve(id, &approver)
    } else {
        governor.deny(id, &approver.id, reason.as_deref().unwrap_or("denied with harnessweaver approvals deny"))
    };
    match decided {
        Ok(a) => {
            if json {
                let _ = writeln!(out, "{}", serde_json::to_value(&a).unwrap_or_default());
            } else {
                let _ = writeln!(out, "{}", approval_line(&a));
            }
            0
        }
        Err(e) => {
            let _ = writeln!(err, "harnessweaver approvals: {e} [{}]", e.code());
            1
        }
    }
}
