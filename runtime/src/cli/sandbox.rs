//! `harnessweaver sandbox probe`: what the OS sandbox of process tools finds
//! on this machine (Landlock ABI, user namespaces, bubblewrap, seccomp, the
//! launcher), and what a confined run reports from inside.

use serde_json::Value;

use super::args::{Opt, Spec, JSON};
use super::ui::Io;
use crate::transport::confine::probe_report;

const USAGE: &str = "usage: harnessweaver sandbox probe [--launcher PATH] [--json]";

const PROBE: Spec = Spec {
    path: "sandbox probe",
    synopsis: "[--launcher PATH] [--json]",
    about: "Reports each mechanism the sandbox of `process` tools (`sandbox.required: true`)
needs: the Landlock ABI (3 or newer), user namespaces, bubblewrap, seccomp and
the `harnessweaver-confine` launcher; then runs the launcher confined both
ways (inside bubblewrap's namespaces, and direct) and prints what it could
and could not do from inside (read /etc/passwd, open an IP socket, make a
namespace, fork, set up io_uring) and whether capabilities were left. Exit 0
when everything is there and every attempt was denied, 3 when the sandbox
is not available here.",
    opts: &[Opt::value("launcher", "PATH", "the harnessweaver-confine binary (default: $HARNESSWEAVER_CONFINE, or beside this program)"), JSON],
    positionals: &[],
};

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    match args {
        ["probe", rest @ ..] => probe(rest, io),
        ["--help" | "-h", ..] => {
            let _ = writeln!(io.out, "{USAGE}\n\n{}", PROBE.help());
            0
        }
        [] => {
            let _ = writeln!(io.err, "{USAGE}");
            2
        }
        [other, ..] => {
            let _ = writeln!(io.err, "harnessweaver sandbox: unknown subcommand `{other}`\n\n{USAGE}");
            2
        }
    }
}

fn probe(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&PROBE, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let (report, ok) = probe_report(a.value("launcher").map(std::path::Path::new));
    if a.flag("json") {
        let _ = writeln!(io.out, "{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        let text = |k: &str| match report.get(k) {
            None | Some(Value::Null) => "not found".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        let _ = writeln!(io.out, "landlock abi      {} (3 or newer needed)", text("landlock_abi"));
        let _ = writeln!(io.out, "user namespaces   {}", text("user_namespaces"));
        let _ = writeln!(io.out, "bubblewrap        {} {}", text("bubblewrap"), text("bubblewrap_version"));
        let _ = writeln!(io.out, "seccomp           {}", text("seccomp"));
        let _ = writeln!(io.out, "launcher          {}", text("launcher"));
        if let Some(missing) = report.get("missing").and_then(Value::as_array).filter(|m| !m.is_empty()) {
            for m in missing {
                let _ = writeln!(io.out, "missing           {}", m.as_str().unwrap_or_default());
            }
        }
        for (key, title) in [("confined_run", "confined run (namespaces):"), ("direct_run", "confined run (direct):")] {
            if let Some(inside) = report.get(key).and_then(Value::as_object) {
                let _ = writeln!(io.out, "{title}");
                for (k, v) in inside {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    let _ = writeln!(io.out, "  {k:<30} {v}");
                }
            }
        }
        let _ = writeln!(
            io.out,
            "{}",
            if ok { "sandbox: available" } else { "sandbox: NOT available (process tools with sandbox.required: true are refused)" }
        );
    }
    if ok {
        0
    } else {
        3
    }
}
