//! Per-call cost of the process transport (release build; `make bench-process`),
//! with a handler in POSIX sh (`read` the request, `printf` the response), so
//! the interpreter's own start-up does not hide the rest:
//!
//! - bare spawn: the same handler started with `std::process::Command`, the
//!   request written and the response read, no governor;
//! - unconfined: a governed call (`sandbox.required: false`);
//! - confined, direct: a governed call under the OS sandbox applied between
//!   fork and exec (Landlock + seccomp + no capabilities), the default;
//! - confined, namespaces: the same tool with `profile: namespaces`
//!   (bubblewrap, then the launcher);
//!
//! and, to say where the confined call's time goes, the parts with
//! `/bin/true` as the command: a plain spawn, a spawn with the prepared
//! policy applied before exec, the launcher alone (prepare + apply + exec),
//! bubblewrap's namespaces with and without a network namespace, and the
//! one-off preparation of a policy (open the paths, build the ruleset,
//! compile the filters; once per tool).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

#[path = "../tests/harness_dir/mod.rs"]
mod harness_dir;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use criterion::Criterion;
use harnessweaver_core::governor::GovernorOptions;
use harnessweaver_core::{CallContext, LoadOptions, Principal, Runtime};
use harnessweaver_runtime::transport::confine::{Policy, Prepared, Probe};
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::json;

const HANDLER: &str = "read -r request\nprintf '{\"ok\": true, \"output\": 1}'\n";

fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_harnessweaver-confine"))
}

fn tool(required: bool, profile: &str) -> String {
    format!(
        "  transport: process\n  command: /bin/sh\n  args: [h.sh]\n  timeout: 10s\n  sandbox:\n    required: {required}\n    profile: {profile}\n"
    )
}

fn harness() -> (harness_dir::Dir, Runtime) {
    let (unconfined, direct, namespaces) = (tool(false, "default"), tool(true, "default"), tool(true, "namespaces"));
    let dir = harness_dir::write("bench-process", "", &[("unconfined", &unconfined), ("direct", &direct), ("namespaces", &namespaces)]);
    std::fs::write(dir.0.join("h.sh"), HANDLER).unwrap();
    let options = LoadOptions {
        governor: GovernorOptions {
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions {
                confine_launcher: Some(launcher()),
                ..TransportOptions::default()
            })),
            ..GovernorOptions::default()
        },
        ..LoadOptions::default()
    };
    let rt = harnessweaver_runtime::load(dir.harness(), options).unwrap();
    (dir, rt)
}

fn bare_spawn(script: &std::path::Path) -> Vec<u8> {
    let mut child = Command::new("/bin/sh").arg(script).env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"{\"protocol\": \"harnessweaver-process-v1\"}\n").unwrap();
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.wait().unwrap();
    out
}

fn run_status(c: &mut Command) {
    let status = c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
}

fn main() {
    let mut c = Criterion::default().sample_size(20).configure_from_args();
    let (dir, rt) = harness();
    let cx = CallContext { principal: Principal::new("bench"), ..CallContext::default() };
    for tool in ["unconfined", "direct", "namespaces"] {
        let r = rt.call(tool, json!({}), &cx);
        assert_eq!(r.output, Some(json!(1)), "{tool}: {r:?}");
    }
    let probe = Probe::current();
    let bwrap = probe.bwrap.clone().expect("bubblewrap (apt-get install bubblewrap)");
    let baseline = Policy::baseline(probe.landlock_abi);
    let encoded = serde_json::to_string(&baseline).unwrap();
    let prepared = Arc::new(Prepared::new(&baseline).unwrap());
    let namespaces = |net: bool| {
        let mut cmd = Command::new(&bwrap);
        cmd.args(["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]);
        if net {
            cmd.arg("--unshare-net");
        }
        cmd.args(["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"]);
        cmd
    };

    let mut g = c.benchmark_group("process");
    g.bench_function("bare spawn (sh handler)", |b| b.iter(|| bare_spawn(&dir.0.join("h.sh"))));
    g.bench_function("governed call, unconfined", |b| b.iter(|| rt.call("unconfined", json!({}), &cx)));
    g.bench_function("governed call, confined direct", |b| b.iter(|| rt.call("direct", json!({}), &cx)));
    g.bench_function("governed call, confined namespaces", |b| b.iter(|| rt.call("namespaces", json!({}), &cx)));
    g.bench_function("part: /bin/true", |b| b.iter(|| run_status(&mut Command::new("/bin/true"))));
    g.bench_function("part: /bin/true with the prepared policy applied before exec", |b| {
        b.iter(|| {
            let p = prepared.clone();
            let mut cmd = Command::new("/bin/true");
            // SAFETY: `apply` makes system calls only.
            unsafe { cmd.pre_exec(move || p.apply().map_err(|(_, e)| e)) };
            run_status(&mut cmd);
        })
    });
    g.bench_function("part: launcher alone (prepare + apply + exec), /bin/true", |b| {
        b.iter(|| run_status(Command::new(launcher()).args(["--policy", &encoded, "--", "/bin/true"])))
    });
    g.bench_function("part: bwrap namespaces, /bin/true", |b| b.iter(|| run_status(namespaces(true).arg("/bin/true"))));
    g.bench_function("part: bwrap namespaces without a network namespace, /bin/true", |b| b.iter(|| run_status(namespaces(false).arg("/bin/true"))));
    g.bench_function("once per tool: prepare the policy", |b| b.iter(|| Prepared::new(&baseline).unwrap()));
    g.finish();
    c.final_summary();
}
