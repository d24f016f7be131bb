//! `harnessweaver gateway mcp`: the harness's tools over MCP (runtime/src/gateway/).

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use super::args::{Opt, Spec};
use super::ui::{harness_path, Io};
use crate::gateway::{server, Gateway};
use harnessweaver_core::harness::{Harness, StateBackend};
use harnessweaver_core::manifest::Transport;
use harnessweaver_core::runtime::LoadOptions;

pub(crate) const SPEC: Spec = Spec {
    path: "gateway mcp",
    synopsis: "[harness.yaml] [--stdio | --http 127.0.0.1:PORT [--tls-cert FILE --tls-key FILE] [--console]] [--principal JSON|ID] [--tenant T]",
    about: "Serves the harness's tools over MCP; every tools/call runs the nine steps.
tools/list gives the pinned definitions of the tools the caller could ever
call (disabled tools, tools of other tenants, tools needing scopes the caller
lacks and tools whose pin does not hold are left out). A refused call is a tool
result with isError, its stable code and a model-safe message; a call waiting
for approval carries the approval id: resolve it with `harnessweaver approvals`,
then the client calls the tool again with the same arguments.

Over stdio (the default) the caller is spec.gateway.stdio in harness.yaml, or
--principal and --tenant. Over --http every request needs `Authorization:
Bearer <token>`, checked against spec.gateway.http.keys or .jwt; otherwise 401.
--http 127.0.0.1:0 picks a free port; the address is printed on stderr.
With spec.gateway.oauth the gateway is an OAuth 2.1 resource server: metadata
at /.well-known/oauth-protected-resource/mcp, JWTs bound to its resource URI.
--tls-cert and --tls-key (or spec.gateway.tls) serve HTTPS; plain HTTP with
bearer tokens off loopback is refused unless --insecure-plain-http is given.
--console (or spec.gateway.console: true) serves the approvals console at /console/.

http, code and mcp tools run from the command line; native tools need their
host (hw.serve_mcp in Python, serveMcp in TypeScript) and are hidden here. Diagnostics go to stderr.
Exit 0 when the stdio client disconnects, 1 when the harness does not load or
the server fails, 2 on a usage error. See docs/gateway.md.",
    opts: &[
        Opt::flag("stdio", "serve one client over stdin/stdout (the default)"),
        Opt::value("http", "ADDR", "serve streamable HTTP at http://ADDR/mcp"),
        Opt::value("tls-cert", "FILE", "serve HTTPS with this PEM certificate chain (with --tls-key)"),
        Opt::value("tls-key", "FILE", "the PEM private key of --tls-cert"),
        Opt::flag("console", "serve the approvals console at /console/ (see docs/console.md)"),
        Opt::flag("insecure-plain-http", "allow bearer tokens over plain HTTP on an address that is not loopback"),
        Opt::value("principal", "JSON|ID", "the stdio caller (overrides spec.gateway.stdio)"),
        Opt::value("tenant", "T", "the stdio caller's tenant"),
    ],
    positionals: &[("harness.yaml", false)],
};

/// A `--principal` / `--approver` value: a JSON object or a bare id.
pub(crate) fn principal_arg(text: &str) -> Result<harnessweaver_core::governor::Principal, String> {
    use harnessweaver_core::governor::Principal;
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Principal::from_value(&v).map_err(|e| e.to_string())
    } else if text.is_empty() {
        Err("the principal id is empty".into())
    } else {
        Ok(Principal::new(text))
    }
}

/// Load problems go to stderr: stdout may be the MCP channel.
fn load_failed(e: &harnessweaver_core::error::Error, path: &std::path::Path, err: &mut dyn Write) -> i32 {
    for p in e.problems() {
        let _ = writeln!(err, "error: {p}");
    }
    if e.problems().is_empty() {
        let _ = writeln!(err, "error: {e}");
    }
    let _ = writeln!(err, "harnessweaver gateway: `{}` did not load", path.display());
    1
}

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let rest = match args {
        ["mcp", rest @ ..] => rest,
        ["--help" | "-h", ..] => {
            let _ = writeln!(io.out, "{}", SPEC.help());
            return 0;
        }
        [] => return io.usage(&SPEC, "name the gateway: `gateway mcp`"),
        [other, ..] => return io.usage(&SPEC, &format!("unknown gateway `{other}` (only `mcp`)")),
    };
    let a = match io.parse(&SPEC, rest) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let http = match a.value("http") {
        Some(v) => match v.parse::<SocketAddr>() {
            Ok(addr) if !a.flag("stdio") => Some(addr),
            Ok(_) => return io.usage(&SPEC, "`--stdio` and `--http` exclude each other"),
            Err(_) => return io.usage(&SPEC, &format!("`--http {v}` is not an address like 127.0.0.1:8080")),
        },
        None => None,
    };
    let principal = match a.value("principal").map(principal_arg).transpose() {
        Ok(p) => p,
        Err(e) => return io.usage(&SPEC, &format!("`--principal`: {e}")),
    };
    let tenant = a.value("tenant").map(str::to_string);
    let options = crate::gateway::front::HttpOptions {
        tls_cert: a.value("tls-cert").map(std::path::PathBuf::from),
        tls_key: a.value("tls-key").map(std::path::PathBuf::from),
        console: a.flag("console"),
        insecure_plain_http: a.flag("insecure-plain-http"),
    };
    if http.is_none() && (options.tls_cert.is_some() || options.tls_key.is_some() || options.console || options.insecure_plain_http) {
        return io.usage(&SPEC, "`--tls-cert`, `--tls-key`, `--console` and `--insecure-plain-http` go with `--http`");
    }
    if a.pos(1).is_some() {
        return io.usage(&SPEC, &format!("unexpected argument `{}`", a.pos(1).unwrap_or_default()));
    }
    let path = harness_path(a.pos(0));
    let harness = match Harness::load(&path) {
        Ok(h) => h,
        Err(e) => return load_failed(&e, &path, io.err),
    };
    // Native handlers live with a host; here they are declared so the harness
    // loads, hidden from tools/list and refused if called.
    let natives: Vec<String> = harness.tools().iter().filter(|t| t.manifest().transport == Transport::Native).map(|t| t.name().to_string()).collect();
    let runtime = match crate::load(&path, LoadOptions { host_handlers: natives.clone(), ..LoadOptions::default() }) {
        Ok(r) => r,
        Err(e) => {
            return load_failed(&e, &path, io.err);
        }
    };
    if !natives.is_empty() {
        let _ = writeln!(
            io.err,
            "harnessweaver gateway: not serving native tool{} {} (their handlers live in a host: serve them with hw.serve_mcp in Python or serveMcp in TypeScript)",
            if natives.len() == 1 { "" } else { "s" },
            natives.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        );
    }
    if harness.spec().state == StateBackend::Memory {
        let _ = writeln!(
            io.err,
            "harnessweaver gateway: spec.state is memory: approvals cannot be resolved from another process (use sqlite:<file> or redis://…)"
        );
    }
    let gateway = Arc::new(Gateway::new(Arc::new(runtime), None));
    let _ = io.err.flush();
    let scheme = if options.uses_tls(&gateway) { "https" } else { "http" };
    let console = options.console || harness.spec().gateway.console;
    match server::serve_harness_with(gateway, http, principal, tenant, options, &mut |addr| {
        eprintln!("harnessweaver gateway: serving MCP at {scheme}://{addr}/mcp");
        if console {
            eprintln!("harnessweaver gateway: serving the console at {scheme}://{addr}/console/");
        }
    }) {
        Ok(()) => 0,
        Err(server::ServeError::Usage(e)) => io.usage(&SPEC, &e),
        Err(server::ServeError::Failed(e)) => {
            let _ = writeln!(io.err, "harnessweaver gateway: {e}");
            1
        }
    }
}
