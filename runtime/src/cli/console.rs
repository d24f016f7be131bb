//! `harnessweaver console`: the approvals console in the browser (runtime/src/console/).

use std::net::SocketAddr;

use super::args::{Opt, Spec};
use super::ui::{harness_path, Io};
use crate::console::{self, Console};

pub(crate) const SPEC: Spec = Spec {
    path: "console",
    synopsis: "[harness.yaml] [--http 127.0.0.1:PORT] [--public]",
    about: "Serves the approvals console: the pending approvals of the state store harness.yaml
names (sqlite:<file> or redis://…, shared with the agents and gateways running
elsewhere) with the exact arguments that will run, approve / approve with edited
arguments (checked against the tool's input schema first) / deny with a reason,
and the audit trail with filters and a chart of calls and refusals per code.
Approvers sign in with the gateway's identities (spec.gateway.http keys or
JWTs); approver_role and separation of duties hold as in the library.
Listens on 127.0.0.1:8765 by default (port 0: any free port; the address is
printed on stderr); an address that is not loopback needs --public (put it
behind TLS). Exit 1 when the harness does not load, keeps state in memory, or
names no identities; 2 on a usage error. See docs/console.md.",
    opts: &[Opt::value("http", "ADDR", "where to listen (default 127.0.0.1:8765)"), Opt::flag("public", "allow an address that is not loopback")],
    positionals: &[("harness.yaml", false)],
};

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&SPEC, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let addr: SocketAddr = match a.value("http").unwrap_or("127.0.0.1:8765").parse() {
        Ok(addr) => addr,
        Err(_) => return io.usage(&SPEC, "`--http` takes an address such as 127.0.0.1:8765"),
    };
    if !addr.ip().is_loopback() && !a.flag("public") {
        return io.usage(&SPEC, &format!("`{addr}` is not a loopback address: pass --public to serve it (behind TLS)"));
    }
    let path = harness_path(a.pos(0));
    let governor = match super::approvals::approvals_governor(&path, io, false) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let harness = match io.load_harness(&path, false) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let console = match Console::new(harness, governor) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver console: {e}");
            return 1;
        }
    };
    let err = &mut *io.err;
    let served = console::serve(console, addr, &mut |local| {
        let _ = writeln!(err, "serving the console at http://{local}/");
        let _ = err.flush();
    });
    match served {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver console: {e}");
            1
        }
    }
}
