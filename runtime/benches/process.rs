//! Per-call cost of the process transport (release build; `make bench-process`),
//! with a handler in POSIX sh (`read` the request, `printf` the response), so
//! the interpreter's own start-up does not hide the rest:
//!
//! - bare spawn: the same handler started with `std::process::Command`, the
//!   request written and the response read, no governor;
//! - unconfined: a governed call (`sandbox.required: false`);
//! - confined: a governed call under the OS sandbox;
//!
//! and, to say where the confined call's time goes, the confinement's parts
//! with `/bin/true` as the command: bubblewrap's namespaces with and without
//! a network namespace, and the launcher alone (Landlock + seccomp + exec).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use criterion::Criterion;
use harnessweaver_core::governor::GovernorOptions;
use harnessweaver_core::{CallContext, LoadOptions, Principal, Runtime};
use harnessweaver_runtime::transport::confine::{Policy, Probe};
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::json;

const HANDLER: &str = "read -r request\nprintf '{\"ok\": true, \"output\": 1}'\n";

fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_harnessweaver-confine"))
}

fn harness(dir: &std::path::Path) -> Runtime {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("h.sh"), HANDLER).unwrap();
    std::fs::write(dir.join("harness.yaml"), "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n")
        .unwrap();
    for (name, required) in [("unconfined", false), ("confined", true)] {
        std::fs::write(
            dir.join(format!("tools/{name}.yaml")),
            format!(
                "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {name}\nspec:\n  transport: process\n  command: /bin/sh\n  args: [h.sh]\n  timeout: 10s\n  sandbox:\n    required: {required}\n"
            ),
        )
        .unwrap();
    }
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
    harnessweaver_runtime::load(dir.join("harness.yaml"), options).unwrap()
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
    let dir = std::env::temp_dir().join(format!("hw-bench-process-{}", std::process::id()));
    let rt = harness(&dir);
    let cx = CallContext { principal: Principal::new("bench"), ..CallContext::default() };
    for tool in ["unconfined", "confined"] {
        let r = rt.call(tool, json!({}), &cx);
        assert_eq!(r.output, Some(json!(1)), "{tool}: {r:?}");
    }
    let bwrap = Probe::current().bwrap.clone().expect("bubblewrap (apt-get install bubblewrap)");
    let policy = serde_json::to_string(&Policy::baseline(Probe::current().landlock_abi)).unwrap();
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
    g.bench_function("bare spawn (sh handler)", |b| b.iter(|| bare_spawn(&dir.join("h.sh"))));
    g.bench_function("governed call, unconfined", |b| b.iter(|| rt.call("unconfined", json!({}), &cx)));
    g.bench_function("governed call, confined", |b| b.iter(|| rt.call("confined", json!({}), &cx)));
    g.bench_function("part: bwrap namespaces, /bin/true", |b| b.iter(|| run_status(namespaces(true).arg("/bin/true"))));
    g.bench_function("part: bwrap namespaces without a network namespace, /bin/true", |b| b.iter(|| run_status(namespaces(false).arg("/bin/true"))));
    g.bench_function("part: launcher alone (Landlock + seccomp + exec), /bin/true", |b| {
        b.iter(|| run_status(Command::new(launcher()).args(["--policy", &policy, "--", "/bin/true"])))
    });
    g.bench_function("part: /bin/true", |b| b.iter(|| run_status(&mut Command::new("/bin/true"))));
    g.finish();
    c.final_summary();
    let _ = std::fs::remove_dir_all(&dir);
}
