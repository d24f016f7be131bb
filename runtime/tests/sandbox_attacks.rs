//! The OS sandbox of process tools (`sandbox.required: true`), attacked:
//! a hostile handler (tests/process/handler.py under the system Python,
//! and tests/process/hostile.sh under /bin/sh, both as argv) tries each
//! escape of issue 19's table. Every attempt is denied, and the same
//! operation succeeds when the manifest grants it, so each denial is the
//! sandbox's doing and not a broken test.
//!
//! These run on the machine itself: bubblewrap, user namespaces, Landlock
//! ABI 3+ and seccomp must be there (`make test` installs bubblewrap). A
//! machine without them fails here, by design: there is no fallback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod process_support;

use std::path::Path;

use harnessweaver_runtime::transport::confine::Probe;
use process_support::{call, code, fifo_closed_by_all_writers, load, load_with, Fifo};
use serde_json::{json, Value};

/// A confined Python tool with `grants` and extra sandbox lines.
fn py(grants: &str, extra: &str) -> String {
    format!(
        "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 20s\n  sandbox:\n    required: true\n    grants: [{grants}]\n{extra}"
    )
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
    let (d, rt) = load(
        "sb-fs",
        &[
            ("bare", &py("", "")),
            ("reader", &py("filesystem_read", "    read_paths: [data/, /etc/shadow]\n")),
            ("ssh", &py("filesystem_read", &format!("    read_paths: [{}]\n", home.join(".ssh").display()))),
            ("writer", &py("filesystem_write", "    write_paths: [out/]\n")),
        ],
        &["data", "out"],
    );
    std::fs::write(d.0.join("data/rows.txt"), "a,b\n").unwrap();
    std::fs::write(d.0.join("out/old.txt"), "old\n").unwrap();
    let read = |tool: &str, p: &Path| attempt(&rt, tool, json!({"attack": "read", "path": p}));
    let write = |tool: &str, p: &Path| attempt(&rt, tool, json!({"attack": "write", "path": p}));

    // /etc/shadow, ~/.ssh, the harness's own files: denied without a grant…
    assert!(!read("bare", Path::new("/etc/shadow")));
    assert!(!read("bare", &key));
    assert!(!read("bare", &d.harness()));
    assert!(!read("bare", &d.0.join("data/rows.txt")));
    assert!(!read("reader", &d.harness()), "read_paths: [data/] opened the harness file");
    assert!(!read("reader", &key));
    // …and allowed for exactly what is granted.
    assert!(read("reader", &d.0.join("data/rows.txt")));
    assert!(read("reader", Path::new("/etc/shadow")));
    assert!(read("ssh", &key));

    // Writing: only inside write_paths, and writing does not grant reading.
    assert!(!write("bare", &d.0.join("out/new.txt")));
    assert!(!write("writer", &d.0.join("notes.txt")));
    assert!(!write("writer", &std::env::temp_dir().join("hw-sb-escape.txt")));
    assert!(write("writer", &d.0.join("out/new.txt")));
    assert_eq!(std::fs::read_to_string(d.0.join("out/new.txt")).unwrap(), "written by the handler\n");
    assert!(!read("writer", &d.0.join("out/old.txt")), "write_paths granted reading");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn the_parent_and_its_environment_are_out_of_reach() {
    std::env::set_var("HW_SB_TEST_SECRET", "do-not-leak");
    let (_d, rt) = load("sb-parent", &[("bare", &py("", "")), ("forker", &py("process", ""))], &[]);
    // The environment holds PATH only (and what Python adds itself).
    let out = call(&rt, "bare", json!({"attack": "echo"})).output.unwrap();
    let mut keys: Vec<&str> = out["env"].as_object().unwrap().keys().map(String::as_str).filter(|k| *k != "LC_CTYPE").collect();
    keys.sort_unstable();
    assert_eq!(keys, ["PATH"]);
    // /proc/<parent>/environ and ptrace of the parent: denied, with or
    // without the `process` grant (no grant allows them).
    for tool in ["bare", "forker"] {
        assert!(!attempt(&rt, tool, json!({"attack": "parent_environ"})), "{tool}");
        assert!(!attempt(&rt, tool, json!({"attack": "ptrace_parent"})), "{tool}");
    }
}

#[test]
fn the_network_needs_the_network_grant() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let (_d, rt) = load("sb-net", &[("bare", &py("", "")), ("local", &py("filesystem_read", "")), ("net", &py("network", ""))], &[]);
    assert!(!attempt(&rt, "bare", json!({"attack": "tcp", "port": port})));
    assert!(!attempt(&rt, "local", json!({"attack": "tcp", "port": port})));
    assert!(attempt(&rt, "net", json!({"attack": "tcp", "port": port})));
}

#[test]
fn unix_sockets_are_denied_and_exact_socket_grants_need_landlock_abi_9() {
    let dir = std::env::temp_dir().join(format!("hw-sock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("db.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let granted = py("network_local", &format!("    local_sockets: [{}]\n", sock.display()));
    let (_d, rt) = load(
        "sb-unix",
        &[
            ("bare", &py("", "")),
            ("net", &py("network", "")),
            ("granted", &granted),
            ("open", "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 20s\n"),
        ],
        &[],
    );
    assert!(!attempt(&rt, "bare", json!({"attack": "unix", "path": sock})));
    assert!(!attempt(&rt, "net", json!({"attack": "unix", "path": sock})), "`network` opened a Unix socket");
    // Unconfined, the same connection succeeds: the denial is the sandbox's.
    assert!(attempt(&rt, "open", json!({"attack": "unix", "path": sock})));
    let r = call(&rt, "granted", json!({"attack": "unix", "path": sock}));
    if Probe::current().landlock_abi >= 9 {
        assert_eq!(r.output.unwrap()["allowed"], true);
    } else {
        assert_eq!(code(&r), "sandbox_unsupported_policy", "{r:?}");
        assert!(r.message.contains("Landlock ABI 9"), "{}", r.message);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn processes_need_the_process_grant_and_none_outlives_the_call() {
    let (_d, rt) = load("sb-proc", &[("bare", &py("", "")), ("forker", &py("process", ""))], &[]);
    assert!(!attempt(&rt, "bare", json!({"attack": "fork"})));
    assert!(!attempt(&rt, "bare", json!({"attack": "fork_bomb"})), "a fork bomb started");
    let r = call(&rt, "forker", json!({"attack": "fork"}));
    assert_eq!(r.output.unwrap(), json!({"allowed": true, "detail": 7}));
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
    let sh = |attack: &str, target: &str, grants: &str, extra: &str| {
        format!(
            "  transport: process\n  command: /bin/sh\n  args: [hostile.sh, {attack}, \"{target}\"]\n  timeout: 20s\n  sandbox:\n    required: true\n    grants: [{grants}]\n{extra}"
        )
    };
    let dir = std::env::temp_dir().join(format!("hw-sb-sh-{}", std::process::id()));
    let harness = dir.join("harness.yaml");
    let h = harness.display().to_string();
    let rows = dir.join("data/rows.txt").display().to_string();
    let out = dir.join("out/x.txt").display().to_string();
    let notes = dir.join("notes.txt").display().to_string();
    let tools = [
        ("shadow", sh("read", "/etc/shadow", "", "")),
        ("own", sh("read", &h, "filesystem_read", "    read_paths: [data/]\n")),
        ("rows", sh("read", &rows, "filesystem_read", "    read_paths: [data/]\n")),
        ("environ", sh("environ", "", "", "")),
        ("outside", sh("write", &notes, "filesystem_write", "    write_paths: [out/]\n")),
        ("inside", sh("write", &out, "filesystem_write", "    write_paths: [out/]\n")),
    ];
    let tools: Vec<(&str, &str)> = tools.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let (d, rt) = load("sb-sh", &tools, &["data", "out"]);
    assert_eq!(d.0, dir);
    std::fs::write(d.0.join("data/rows.txt"), "a,b\n").unwrap();
    let verdict = |tool: &str| attempt(&rt, tool, json!({}));
    assert!(!verdict("shadow"));
    assert!(!verdict("own"));
    assert!(verdict("rows"));
    assert!(!verdict("environ"));
    assert!(!verdict("outside"));
    assert!(verdict("inside"));
    assert_eq!(std::fs::read_to_string(d.0.join("out/x.txt")).unwrap(), "hostile\n");
}

#[test]
fn a_machine_without_a_mechanism_refuses_instead_of_running_unconfined() {
    let here = Probe::current().clone();
    let marker = std::env::temp_dir().join(format!("hw-sb-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let tool = format!(
        "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n  timeout: 20s\n  sandbox:\n    required: true\n    grants: [filesystem_write]\n    write_paths: [{}]\n",
        std::env::temp_dir().display()
    );
    for (probe, names) in [
        (Probe { landlock_abi: 0, ..here.clone() }, "Landlock"),
        (Probe { landlock_abi: 2, ..here.clone() }, "Landlock ABI 3 (the kernel reports ABI 2)"),
        (Probe { user_namespaces: false, ..here.clone() }, "user namespaces"),
        (Probe { bwrap: None, ..here.clone() }, "bubblewrap"),
        (Probe { seccomp: false, ..here.clone() }, "seccomp"),
    ] {
        let (_d, rt) = load_with("sb-unavail", &[("t", &tool)], &[], Some(probe));
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
    // And with this machine's probe the same tool runs.
    let (_d, rt) = load_with("sb-here", &[("t", &tool)], &[], Some(here));
    assert!(attempt(&rt, "t", json!({"attack": "write", "path": marker})));
    let _ = std::fs::remove_file(&marker);
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
    let inside = &report["confined_run"];
    for attempt in ["read /etc/passwd", "socket(AF_INET)", "unshare(CLONE_NEWUSER)", "fork"] {
        assert!(inside[attempt].as_str().unwrap().starts_with("denied"), "{attempt}: {inside}");
    }
    assert_eq!(inside["seccomp_mode"], 2);
    // Without the launcher the probe says so and exits 3.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessweaver"))
        .args(["sandbox", "probe", "--launcher", "/nonexistent/harnessweaver-confine"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing           the launcher"), "{}", String::from_utf8_lossy(&out.stdout));
}
