//! The OS sandbox of process tools (`sandbox.required: true`), attacked:
//! a hostile handler (tests/process/handler.py under the system Python,
//! and tests/process/hostile.sh under /bin/sh, both as argv) tries each
//! escape of issue 19's table. Every attempt is denied, and the same
//! operation succeeds when the manifest grants it (or, where no grant
//! allows it, when the tool is not confined), so each denial is the
//! sandbox's doing and not a broken test.
//!
//! Each attack runs against both ways of confining: direct (Landlock,
//! seccomp and empty capabilities applied before exec, the default) and
//! namespaces (`profile: namespaces`: bubblewrap, then the launcher). The
//! code transport's worker is attacked the same way, by a hostile stand-in.
//!
//! These run on the machine itself: bubblewrap, user namespaces, Landlock
//! ABI 6+ and seccomp must be there (`make test` installs bubblewrap). A
//! machine without them fails here, by design: there is no fallback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod harness_dir;
mod process_support;

use std::path::Path;

use harnessweaver_runtime::transport::confine::Probe;
use process_support::{call, call_listening, code, fifo_closed_by_all_writers, load, load_in, load_with, options, three_steps, write_harness, Fifo};
use serde_json::{json, Value};

/// The two ways of confining: the tool-name suffix and the profile.
const MODES: [(&str, &str); 2] = [("", "default"), ("_ns", "namespaces")];

/// A confined Python tool with `grants` and extra sandbox lines.
fn py(grants: &str, extra: &str) -> String {
    py_in("default", grants, extra)
}

/// The same under `profile`.
fn py_in(profile: &str, grants: &str, extra: &str) -> String {
    format!(
        "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 20s\n  sandbox:\n    required: true\n    profile: {profile}\n    grants: [{grants}]\n{extra}"
    )
}

/// The same unconfined (the pair of an attempt no grant allows).
const OPEN: &str = "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 20s\n";

/// `tools` once per mode, the names suffixed (`bare`, `bare_ns`).
fn in_both_modes(tools: &[(&str, &str, &str)]) -> Vec<(String, String)> {
    MODES.iter().flat_map(|(suffix, profile)| tools.iter().map(move |(n, g, x)| (format!("{n}{suffix}"), py_in(profile, g, x)))).collect()
}

fn refs(tools: &[(String, String)]) -> Vec<(&str, &str)> {
    tools.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect()
}

/// Runs one attempt and returns whether the OS allowed it (the call itself must succeed).
fn attempt(rt: &harnessweaver_core::Runtime, tool: &str, args: Value) -> bool {
    let r = call(rt, tool, args);
    assert_eq!(r.code, None, "{tool}: the call failed: {r:?}");
    r.output.as_ref().and_then(|o| o["allowed"].as_bool()).unwrap_or_else(|| panic!("{tool}: no verdict in {r:?}"))
}

fn fake_home(name: &str) -> std::path::PathBuf {
    let home = std::env::temp_dir().join(format!("hw-home-{name}-{}", std::process::id()));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    home
}

#[test]
fn the_filesystem_is_the_baseline_plus_the_grants() {
    let home = fake_home("fs");
    let key = home.join(".ssh/id_ed25519");
    let ssh = format!("    read_paths: [{}]\n", home.join(".ssh").display());
    let tools = in_both_modes(&[
        ("bare", "", ""),
        ("reader", "filesystem_read", "    read_paths: [data/, /etc/shadow]\n"),
        ("ssh", "filesystem_read", &ssh),
        ("writer", "filesystem_write", "    write_paths: [out/]\n"),
    ]);
    let (d, rt) = load("sb-fs", &refs(&tools), &["data", "out"]);
    std::fs::write(d.0.join("data/rows.txt"), "a,b\n").unwrap();
    std::fs::write(d.0.join("out/old.txt"), "old\n").unwrap();
    for (m, _) in MODES {
        let read = |tool: &str, p: &Path| attempt(&rt, &format!("{tool}{m}"), json!({"attack": "read", "path": p}));
        let write = |tool: &str, p: &Path| attempt(&rt, &format!("{tool}{m}"), json!({"attack": "write", "path": p}));

        // /etc/shadow, ~/.ssh, the harness's own files: denied without a grant…
        assert!(!read("bare", Path::new("/etc/shadow")), "{m}");
        assert!(!read("bare", &key), "{m}");
        assert!(!read("bare", &d.harness()), "{m}");
        assert!(!read("bare", &d.0.join("data/rows.txt")), "{m}");
        assert!(!read("reader", &d.harness()), "{m}: read_paths: [data/] opened the harness file");
        assert!(!read("reader", &key), "{m}");
        // …and allowed for exactly what is granted.
        assert!(read("reader", &d.0.join("data/rows.txt")), "{m}");
        assert!(read("reader", Path::new("/etc/shadow")), "{m}");
        assert!(read("ssh", &key), "{m}");

        // Writing: only inside write_paths, and writing does not grant reading.
        let new = d.0.join("out/new.txt");
        let _ = std::fs::remove_file(&new);
        assert!(!write("bare", &new), "{m}");
        assert!(!write("writer", &d.0.join("notes.txt")), "{m}");
        assert!(!write("writer", &std::env::temp_dir().join("hw-sb-escape.txt")), "{m}");
        assert!(write("writer", &new), "{m}");
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "written by the handler\n");
        assert!(!read("writer", &d.0.join("out/old.txt")), "{m}: write_paths granted reading");
    }
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn the_parent_and_its_environment_are_out_of_reach() {
    std::env::set_var("HW_SB_TEST_SECRET", "do-not-leak");
    let mut tools = in_both_modes(&[("bare", "", "")]);
    tools.push(("forker".into(), py("process", "")));
    tools.push(("open".into(), OPEN.into()));
    let (_d, rt) = load("sb-parent", &refs(&tools), &[]);
    // The environment holds PATH only (and what Python adds itself).
    let out = call(&rt, "bare", json!({"attack": "echo"})).output.unwrap();
    let mut keys: Vec<&str> = out["env"].as_object().unwrap().keys().map(String::as_str).filter(|k| *k != "LC_CTYPE").collect();
    keys.sort_unstable();
    assert_eq!(keys, ["PATH"]);
    let me = std::process::id();
    // /proc/<parent>/environ, ptrace of the parent, reading the host's
    // resource limits: denied, with or without the `process` grant (no
    // grant allows them), in both modes.
    for tool in ["bare", "bare_ns", "forker"] {
        assert!(!attempt(&rt, tool, json!({"attack": "parent_environ"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "ptrace_parent"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "prlimit", "pid": me})), "{tool}");
    }
    // Unconfined, the same handler reads them: the attempts are real.
    assert!(attempt(&rt, "open", json!({"attack": "parent_environ"})));
    assert!(attempt(&rt, "open", json!({"attack": "prlimit", "pid": me})));
}

#[test]
fn signals_to_host_processes_are_denied() {
    let mut tools = in_both_modes(&[("bare", "", "")]);
    tools.push(("forker".into(), py("process", "")));
    tools.push(("open".into(), OPEN.into()));
    let (_d, rt) = load("sb-signal", &refs(&tools), &[]);
    let sleeper = || std::process::Command::new("/bin/sleep").arg("60").spawn().unwrap();
    for tool in ["bare", "bare_ns", "forker"] {
        let mut victim = sleeper();
        assert!(!attempt(&rt, tool, json!({"attack": "signal", "pid": victim.id()})), "{tool}");
        assert_eq!(victim.try_wait().unwrap(), None, "{tool}: the host's process was killed");
        let _ = victim.kill();
        let _ = victim.wait();
    }
    let mut victim = sleeper();
    assert!(attempt(&rt, "open", json!({"attack": "signal", "pid": victim.id()})));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(victim.wait().unwrap().signal(), Some(15));
}

#[test]
fn kernel_interfaces_outside_the_filesystem_are_denied() {
    // Changing a file's mode (Landlock governs contents, not metadata),
    // io_uring (which opens sockets and files out of seccomp's sight),
    // System V shared memory (shared with the host's IPC namespace), and
    // capabilities (a handler started by root holds none).
    let mut tools = in_both_modes(&[("reader", "filesystem_read, filesystem_write", "    read_paths: [data/]\n    write_paths: [data/]\n")]);
    tools.push(("open".into(), OPEN.into()));
    let (d, rt) = load("sb-kernel", &refs(&tools), &["data"]);
    let file = d.0.join("data/rows.txt");
    std::fs::write(&file, "a,b\n").unwrap();
    let mode = || {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777
    };
    let before = mode();
    for tool in ["reader", "reader_ns"] {
        assert!(!attempt(&rt, tool, json!({"attack": "chmod", "path": file})), "{tool}");
        assert_eq!(mode(), before, "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "io_uring"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "sysv_shm"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "capability"})), "{tool}");
    }
    assert!(attempt(&rt, "open", json!({"attack": "chmod", "path": file})));
    assert_eq!(mode(), 0o777);
    assert!(attempt(&rt, "open", json!({"attack": "io_uring"})));
    assert!(attempt(&rt, "open", json!({"attack": "sysv_shm"})));
    assert!(attempt(&rt, "open", json!({"attack": "capability"})));
}

#[test]
fn the_network_needs_the_network_grant() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let tools = in_both_modes(&[("bare", "", ""), ("local", "filesystem_read", ""), ("net", "network", "")]);
    let (_d, rt) = load("sb-net", &refs(&tools), &[]);
    for (m, _) in MODES {
        assert!(!attempt(&rt, &format!("bare{m}"), json!({"attack": "tcp", "port": port})), "{m}");
        assert!(!attempt(&rt, &format!("local{m}"), json!({"attack": "tcp", "port": port})), "{m}");
        assert!(attempt(&rt, &format!("net{m}"), json!({"attack": "tcp", "port": port})), "{m}");
    }
}

#[test]
fn unix_sockets_are_denied_and_exact_socket_grants_need_landlock_abi_9() {
    let dir = std::env::temp_dir().join(format!("hw-sock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("db.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let granted = format!("    local_sockets: [{}]\n", sock.display());
    let mut tools =
        in_both_modes(&[("bare", "", ""), ("net", "network", ""), ("granted", "network_local", &granted), ("unlisted", "network_local", "")]);
    tools.push(("open".into(), OPEN.into()));
    let (_d, rt) = load("sb-unix", &refs(&tools), &[]);
    for (m, _) in MODES {
        assert!(!attempt(&rt, &format!("bare{m}"), json!({"attack": "unix", "path": sock})), "{m}");
        assert!(!attempt(&rt, &format!("net{m}"), json!({"attack": "unix", "path": sock})), "{m}: `network` opened a Unix socket");
        // This kernel cannot hold Unix sockets to exact paths before
        // Landlock ABI 9: `network_local` is refused, never widened to
        // every socket on the machine.
        for tool in ["granted", "unlisted"] {
            let r = call(&rt, &format!("{tool}{m}"), json!({"attack": "unix", "path": sock}));
            if Probe::current().landlock_abi >= 9 {
                assert_eq!(r.output.unwrap()["allowed"], tool == "granted", "{tool}{m}");
            } else {
                assert_eq!(code(&r), "sandbox_unsupported_policy", "{r:?}");
                assert!(r.message.contains("Landlock ABI 9"), "{}", r.message);
            }
        }
    }
    // Unconfined, the same connection succeeds: the denial is the sandbox's.
    assert!(attempt(&rt, "open", json!({"attack": "unix", "path": sock})));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn processes_need_the_process_grant_and_none_outlives_the_call() {
    let mut tools = in_both_modes(&[("bare", "", "")]);
    tools.push(("forker".into(), py("process", "")));
    let (_d, rt) = load("sb-proc", &refs(&tools), &[]);
    for tool in ["bare", "bare_ns"] {
        assert!(!attempt(&rt, tool, json!({"attack": "fork"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "fork_bomb"})), "{tool}: a fork bomb started");
    }
    let r = call(&rt, "forker", json!({"attack": "fork"}));
    assert_eq!(r.output.unwrap(), json!({"allowed": true, "detail": 7}));
}

#[test]
fn progress_lines_reach_the_caller_through_both_confinements() {
    let tools = in_both_modes(&[("progress", "", "")]);
    let (_d, rt) = load("sb-progress", &refs(&tools), &[]);
    for tool in ["progress", "progress_ns"] {
        let (r, seen) = call_listening(&rt, tool, json!({"attack": "progress"}));
        assert_eq!(r.output, Some(json!({"reported": 3})), "{tool}: {r:?}");
        assert_eq!(seen, three_steps(), "{tool}");
    }
}

#[test]
fn a_forked_grandchild_dies_with_the_confined_call() {
    let fifo = Fifo::new("sb-linger");
    let tool = format!(
        "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 3s\n  sandbox:\n    required: true\n    grants: [process, filesystem_write]\n    write_paths: [{}]\n",
        fifo.dir.display()
    );
    let (_d, rt) = load("sb-linger", &[("linger", &tool)], &[]);
    let r = call(&rt, "linger", json!({"attack": "linger", "fifo": fifo.path}));
    assert_eq!(code(&r), "timeout", "{r:?}");
    assert_eq!(fifo_closed_by_all_writers(&fifo), b"x");
}

#[test]
fn a_shell_script_handler_is_confined_too() {
    let dir = std::env::temp_dir().join(format!("hw-sb-sh-{}", std::process::id()));
    let h = dir.join("harness.yaml").display().to_string();
    let rows = dir.join("data/rows.txt").display().to_string();
    let out = dir.join("out/x.txt").display().to_string();
    let notes = dir.join("notes.txt").display().to_string();
    let cases = [
        ("shadow", "read", "/etc/shadow", "", "", false),
        ("own", "read", h.as_str(), "filesystem_read", "    read_paths: [data/]\n", false),
        ("rows", "read", rows.as_str(), "filesystem_read", "    read_paths: [data/]\n", true),
        ("environ", "environ", "", "", "", false),
        ("outside", "write", notes.as_str(), "filesystem_write", "    write_paths: [out/]\n", false),
        ("inside", "write", out.as_str(), "filesystem_write", "    write_paths: [out/]\n", true),
    ];
    let tools: Vec<(String, String)> = MODES
        .iter()
        .flat_map(|(suffix, profile)| {
            cases.iter().map(move |(name, attack, target, grants, extra, _)| {
                (
                    format!("{name}{suffix}"),
                    format!(
                        "  transport: process\n  command: /bin/sh\n  args: [hostile.sh, {attack}, \"{target}\"]\n  timeout: 20s\n  sandbox:\n    required: true\n    profile: {profile}\n    grants: [{grants}]\n{extra}"
                    ),
                )
            })
        })
        .collect();
    let (d, rt) = load("sb-sh", &refs(&tools), &["data", "out"]);
    assert_eq!(d.0, dir);
    std::fs::write(d.0.join("data/rows.txt"), "a,b\n").unwrap();
    for (m, _) in MODES {
        let _ = std::fs::remove_file(&out);
        for (name, _, _, _, _, allowed) in &cases {
            assert_eq!(attempt(&rt, &format!("{name}{m}"), json!({})), *allowed, "{name}{m}");
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "hostile\n");
    }
}

#[test]
fn a_machine_without_a_mechanism_refuses_instead_of_running_unconfined() {
    let here = Probe::current().clone();
    let marker = std::env::temp_dir().join(format!("hw-sb-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let write_tmp = format!("    write_paths: [{}]\n", std::env::temp_dir().display());
    let direct = py("filesystem_write", &write_tmp);
    let namespaced = py("filesystem_write, process", &write_tmp);
    // Every mechanism the launch needs; a direct launch does not need
    // bubblewrap or user namespaces, one with the `process` grant does.
    for (probe, tool, names) in [
        (Probe { landlock_abi: 0, ..here.clone() }, &direct, "Landlock"),
        (Probe { landlock_abi: 2, ..here.clone() }, &direct, "Landlock ABI 3 (the kernel reports ABI 2)"),
        (Probe { seccomp: false, ..here.clone() }, &direct, "seccomp"),
        (Probe { user_namespaces: false, ..here.clone() }, &namespaced, "user namespaces"),
        (Probe { bwrap: None, ..here.clone() }, &namespaced, "bubblewrap"),
    ] {
        let (_d, rt) = load_with("sb-unavail", &[("t", tool)], &[], Some(probe));
        let r = call(&rt, "t", json!({"attack": "write", "path": marker}));
        assert_eq!(code(&r), "sandbox_unavailable", "{r:?}");
        assert_eq!(r.step.map(|s| s.as_str()), Some("invoke"));
        assert!(r.message.contains(names), "{names}: {}", r.message);
        assert!(!marker.exists(), "the handler ran unconfined");
    }
    // The network grant needs Landlock ABI 6 (abstract sockets, signals).
    let (_d, rt) = load_with("sb-abi5", &[("t", &py("network", ""))], &[], Some(Probe { landlock_abi: 5, ..here.clone() }));
    let r = call(&rt, "t", json!({"attack": "echo"}));
    assert_eq!(code(&r), "sandbox_unsupported_policy", "{r:?}");
    assert!(r.message.contains("ABI 6"), "{}", r.message);
    // Without bubblewrap a direct launch still runs, and is still confined.
    let (_d, rt) = load_with("sb-nobwrap", &[("t", &direct)], &[], Some(Probe { bwrap: None, user_namespaces: false, ..here.clone() }));
    assert!(!attempt(&rt, "t", json!({"attack": "read", "path": "/etc/shadow"})));
    assert!(!attempt(&rt, "t", json!({"attack": "fork"})));
    assert!(attempt(&rt, "t", json!({"attack": "write", "path": marker})));
    let _ = std::fs::remove_file(&marker);
    // And with this machine's probe the namespaced tool runs.
    let (_d, rt) = load_with("sb-here", &[("t", &namespaced)], &[], Some(here));
    assert!(attempt(&rt, "t", json!({"attack": "write", "path": marker})));
    let _ = std::fs::remove_file(&marker);
}

/// A code tool whose worker is tests/process/handler.py (hostile when
/// started as a worker).
fn hostile_worker(name: &str, probe: Option<Probe>) -> (process_support::Dir, harnessweaver_core::Runtime) {
    let dir = write_harness(name, &[("py", "  transport: code\n  sandbox: monty\n")], &["data"]);
    let worker = dir.0.join("handler.py");
    load_in(dir, options(Some(worker), probe))
}

/// What the hostile worker reports for `attack`.
fn worker_attempt(rt: &harnessweaver_core::Runtime, attack: &str) -> bool {
    let r = call(rt, "py", json!({"code": attack}));
    assert_eq!(r.code, None, "{attack}: {r:?}");
    r.output.as_ref().and_then(|o| o["value"]["allowed"].as_bool()).unwrap_or_else(|| panic!("{attack}: {r:?}"))
}

#[test]
fn the_code_workers_confinement_holds_a_hostile_worker() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let (d, rt) = hostile_worker("sb-worker", None);
    std::fs::write(d.0.join("data/rows.txt"), "a,b\n").unwrap();
    let escape = std::env::temp_dir().join(format!("hw-sb-worker-escape-{}", std::process::id()));
    let mut victim = std::process::Command::new("/bin/sleep").arg("60").spawn().unwrap();
    let attacks = [
        "read /etc/passwd".to_string(),
        format!("read {}", d.0.join("data/rows.txt").display()),
        format!("write {}", escape.display()),
        format!("tcp {port}"),
        "fork".to_string(),
        format!("signal {}", victim.id()),
    ];
    for attack in &attacks {
        assert!(!worker_attempt(&rt, attack), "confined worker: `{attack}` was allowed");
    }
    assert!(!escape.exists());
    assert_eq!(victim.try_wait().unwrap(), None, "the worker killed a host process");
    // The same worker run directly (unconfined) succeeds at every attempt.
    use std::io::Write;
    let mut direct = std::process::Command::new(d.0.join("handler.py"))
        .arg("--max-memory-mb")
        .arg("64")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = direct.stdin.take().unwrap();
    for attack in &attacks {
        writeln!(stdin, "{}", json!({"code": attack})).unwrap();
    }
    drop(stdin);
    let out = direct.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), attacks.len());
    for (attack, answer) in attacks.iter().zip(&answers) {
        assert_eq!(answer["value"]["allowed"], true, "unconfined: `{attack}`: {answer}");
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(victim.wait().unwrap().signal(), Some(15));
    let _ = std::fs::remove_file(escape);
}

#[test]
fn a_machine_that_cannot_confine_the_code_worker_refuses_code_calls() {
    let here = Probe::current().clone();
    for (probe, names) in [(Probe { seccomp: false, ..here.clone() }, "seccomp"), (Probe { landlock_abi: 0, ..here.clone() }, "Landlock")] {
        let (_d, rt) = hostile_worker("sb-worker-unavail", Some(probe));
        let r = call(&rt, "py", json!({"code": "read /etc/passwd"}));
        assert_eq!(code(&r), "sandbox_unavailable", "{r:?}");
        assert!(r.message.contains(names) && r.message.contains("not run unconfined"), "{}", r.message);
    }
}

#[test]
fn sandbox_probe_reports_every_mechanism_and_a_confined_run_that_was_denied() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
        .args(["sandbox", "probe", "--json", "--launcher"])
        .arg(process_support::launcher())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.status.success(), "{report:#}");
    assert!(report["landlock_abi"].as_u64().unwrap() >= 3);
    assert_eq!(report["user_namespaces"], true);
    assert_eq!(report["seccomp"], true);
    assert_eq!(report["missing"], json!([]));
    for run in ["confined_run", "direct_run"] {
        let inside = &report[run];
        for attempt in ["read /etc/passwd", "socket(AF_INET)", "unshare(CLONE_NEWUSER)", "fork", "io_uring_setup"] {
            assert!(inside[attempt].as_str().unwrap().starts_with("denied"), "{run}: {attempt}: {inside}");
        }
        assert_eq!(inside["seccomp_mode"], 2, "{run}");
        assert_eq!(inside["no_new_privs"], true, "{run}");
        assert_eq!(inside["cap_sys_admin_in_bounding_set"], false, "{run}");
    }
    // Namespaces hide the host's processes; direct does not (the handler's
    // pid is the host's), which is what Landlock's scopes are for.
    assert_eq!(report["confined_run"]["pid"], 2);
    // Without the launcher the probe says so and exits 3.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
        .args(["sandbox", "probe", "--launcher", "/nonexistent/harnessweaver-confine"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing           the launcher"), "{}", String::from_utf8_lossy(&out.stdout));
}
