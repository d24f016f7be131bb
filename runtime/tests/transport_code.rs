//! The code transport: Monty in the `harnessweaver-sandbox` worker, with its
//! limits enforced by Monty and by the OS, through the governor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod transport_support;

use std::time::Instant;

use harnessweaver_core::governor::GovernorOptions;
use harnessweaver_core::{CallContext, CallResult, LoadOptions, Principal, Runtime};
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::{json, Value};
use transport_support::{harness_yaml, sandbox_worker, tool_yaml, Dir};

fn load(name: &str, tools: &[(&str, &str)]) -> (Dir, Runtime) {
    let mut files = vec![("harness.yaml".to_string(), harness_yaml("test", ""))];
    for (tool, spec) in tools {
        files.push(tool_yaml(tool, &format!("  transport: code\n  sandbox: monty\n{spec}")));
    }
    let dir = Dir::new(name, files);
    let options = LoadOptions {
        governor: GovernorOptions {
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions {
                sandbox_worker: Some(sandbox_worker()),
                ..TransportOptions::default()
            })),
            ..GovernorOptions::default()
        },
        ..LoadOptions::default()
    };
    let rt = harnessweaver_runtime::load(dir.harness(), options).unwrap_or_else(|e| panic!("load: {e}"));
    (dir, rt)
}

fn run(rt: &Runtime, tool: &str, args: Value) -> CallResult {
    rt.call(tool, args, &CallContext { principal: Principal::new("alice"), ..CallContext::default() })
}

fn sandbox_error(r: &CallResult) -> &str {
    assert_eq!(r.code.map(|c| c.as_str()), Some("sandbox_error"), "{r:?}");
    assert_eq!(r.step.map(|s| s.as_str()), Some("invoke"));
    &r.message
}

#[test]
fn arithmetic_globals_and_print() {
    let (_d, rt) = load("code-basic", &[("py", "")]);
    assert_eq!(run(&rt, "py", json!({"code": "1 + 2 * 3"})).output, Some(json!({"value": 7, "stdout": ""})));
    assert_eq!(run(&rt, "py", json!({"code": "sum(xs) * k", "xs": [1, 2, 3], "k": 10})).output, Some(json!({"value": 60, "stdout": ""})));
    assert_eq!(
        run(&rt, "py", json!({"code": "print('hi', name)\n{'n': len(name), 'ok': True}", "name": "ann"})).output,
        Some(json!({"value": {"n": 3, "ok": true}, "stdout": "hi ann\n"}))
    );
}

#[test]
fn exceptions_come_back_python_style() {
    let (_d, rt) = load("code-exc", &[("py", "")]);
    let r = run(&rt, "py", json!({"code": "x = 1\n1 / 0"}));
    assert_eq!(sandbox_error(&r), "ZeroDivisionError: division by zero (line 2)");
    let r = run(&rt, "py", json!({"code": "raise ValueError('bad input')"}));
    assert!(sandbox_error(&r).starts_with("ValueError: bad input"), "{}", r.message);
    let r = run(&rt, "py", json!({"code": "def f(:\n  pass"}));
    assert!(sandbox_error(&r).starts_with("SyntaxError"), "{}", r.message);
    // The worker survives an exception: the next call works.
    assert_eq!(run(&rt, "py", json!({"code": "2 + 2"})).output.unwrap()["value"], 4);
}

#[test]
fn no_files_environment_or_imports_of_os() {
    let (_d, rt) = load("code-os", &[("py", "")]);
    for code in ["open('/etc/passwd').read()", "import os\nos.getenv('HOME')", "import os\nos.listdir('/')", "import socket"] {
        let r = run(&rt, "py", json!({ "code": code }));
        let m = sandbox_error(&r);
        assert!(m.contains("Error"), "{code}: {m}");
    }
}

#[test]
fn an_infinite_loop_hits_the_time_limit() {
    let (_d, rt) = load("code-loop", &[("py", "  limits: { timeout: 300ms }\n")]);
    let started = Instant::now();
    let r = run(&rt, "py", json!({"code": "while True:\n  pass"}));
    assert!(sandbox_error(&r).starts_with("TimeoutError"), "{}", r.message);
    assert!(started.elapsed().as_millis() < 3_000, "{:?}", started.elapsed());
    assert_eq!(run(&rt, "py", json!({"code": "1"})).output.unwrap()["value"], 1);
}

#[test]
fn the_tool_timeout_is_a_timeout() {
    let (_d, rt) = load("code-tool-timeout", &[("py", "  timeout: 200ms\n  limits: { timeout: 5s }\n")]);
    let r = run(&rt, "py", json!({"code": "while True:\n  pass"}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("timeout"), "{r:?}");
    assert_eq!(run(&rt, "py", json!({"code": "3"})).output.unwrap()["value"], 3);
}

#[test]
fn a_memory_bomb_hits_the_memory_limit() {
    let (_d, rt) = load("code-mem", &[("py", "  limits: { max_memory_mb: 16 }\n")]);
    for code in ["x = [0] * 100000000", "s = 'a' * 10\nwhile True:\n  s = s + s", "xs = []\nwhile True:\n  xs.append([1, 2, 3, 4])"] {
        let r = run(&rt, "py", json!({ "code": code }));
        assert!(sandbox_error(&r).starts_with("MemoryError"), "{code}: {}", r.message);
    }
    assert_eq!(run(&rt, "py", json!({"code": "len([0] * 1000)"})).output.unwrap()["value"], 1000);
}

#[test]
fn huge_output_hits_the_output_limit() {
    let (_d, rt) = load("code-out", &[("py", "  limits: { max_output_bytes: 1000 }\n")]);
    let r = run(&rt, "py", json!({"code": "for i in range(100000):\n  print(i)"}));
    assert!(sandbox_error(&r).contains("larger than the limit of 1000 bytes"), "{}", r.message);
    let r = run(&rt, "py", json!({"code": "'a' * 5000"}));
    assert!(sandbox_error(&r).contains("larger than the limit of 1000 bytes"), "{}", r.message);
}

#[test]
fn bad_code_arguments_and_a_custom_code_arg() {
    let (_d, rt) = load("code-args", &[("py", ""), ("calc", "  code_arg: expr\n")]);
    assert!(sandbox_error(&run(&rt, "py", json!({"x": 1}))).contains("`code`"));
    assert!(sandbox_error(&run(&rt, "py", json!({"code": 5}))).contains("must be a string"));
    assert_eq!(run(&rt, "calc", json!({"expr": "a - b", "a": 5, "b": 3})).output.unwrap()["value"], 2);
}

#[test]
fn calls_run_in_parallel_on_separate_workers() {
    let (_d, rt) = load("code-parallel", &[("py", "")]);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                s.spawn({
                    let rt = &rt;
                    move || run(rt, "py", json!({"code": "n * n", "n": i}))
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap().output.unwrap()["value"], json!(i * i));
        }
    });
}

#[test]
fn an_unknown_sandbox_is_a_load_error() {
    let dir =
        Dir::new("code-unknown", vec![("harness.yaml".into(), harness_yaml("test", "")), tool_yaml("py", "  transport: code\n  sandbox: docker\n")]);
    let err = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "unknown_sandbox", "{err}");
    let p = &err.problems()[0];
    assert_eq!((p.path.as_str(), p.line, p.file.as_deref()), ("spec.sandbox", Some(7), Some("tools/py.yaml")));
}

#[test]
fn a_missing_worker_is_a_clear_sandbox_error() {
    let dir =
        Dir::new("code-noworker", vec![("harness.yaml".into(), harness_yaml("test", "")), tool_yaml("py", "  transport: code\n  sandbox: monty\n")]);
    let options = LoadOptions {
        governor: GovernorOptions {
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions {
                sandbox_worker: Some("/nonexistent/harnessweaver-sandbox".into()),
                ..TransportOptions::default()
            })),
            ..GovernorOptions::default()
        },
        ..LoadOptions::default()
    };
    let rt = harnessweaver_runtime::load(dir.harness(), options).unwrap();
    let r = run(&rt, "py", json!({"code": "1"}));
    assert!(sandbox_error(&r).contains("does not exist"), "{}", r.message);
}

/// `doctor` fails (not warns) when a code tool's worker cannot be found, and
/// passes once `HARNESSWEAVER_SANDBOX_WORKER` names it. The binary runs in a
/// child process so the variable changes nothing in this one.
#[test]
fn doctor_fails_when_the_sandbox_worker_is_missing() {
    let dir =
        Dir::new("code-doctor", vec![("harness.yaml".into(), harness_yaml("test", "")), tool_yaml("py", "  transport: code\n  sandbox: monty\n")]);
    let doctor = |worker: Option<&std::path::Path>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harnessweaver"));
        cmd.arg("doctor").arg(dir.harness()).env_remove("HARNESSWEAVER_SANDBOX_WORKER");
        if let Some(w) = worker {
            cmd.env("HARNESSWEAVER_SANDBOX_WORKER", w);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = doctor(None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("error: code tools: the sandbox worker `harnessweaver-sandbox` was not found"), "{out}");
    assert!(out.contains("the sandbox worker is missing"), "{out}");
    let (code, out) = doctor(Some(&sandbox_worker()));
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("sandbox worker"), "{out}");
}

/// The worker runs under the OS sandbox of process tools (issue 19): its
/// status shows the seccomp filter, no_new_privs and no capability at all.
/// What the confinement denies is attacked in sandbox_attacks.rs.
#[test]
fn the_worker_runs_under_the_os_sandbox() {
    let (_d, rt) = load("code-confined", &[("py", "")]);
    let r = run(&rt, "py", json!({"code": "6 * 7"}));
    assert_eq!(r.output.unwrap()["value"], 42);
    let worker = sandbox_worker().canonicalize().unwrap();
    // The pool's idle workers are children of this process.
    let mut seen = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let children = std::fs::read_to_string(task.unwrap().path().join("children")).unwrap_or_default();
        for pid in children.split_whitespace() {
            if std::fs::read_link(format!("/proc/{pid}/exe")).ok().and_then(|p| p.canonicalize().ok()) != Some(worker.clone()) {
                continue;
            }
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { continue };
            let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or_default().to_string();
            assert_eq!(field("Seccomp:"), "2", "{pid}: {status}");
            assert_eq!(field("NoNewPrivs:"), "1", "{pid}");
            for caps in ["CapEff:", "CapPrm:", "CapBnd:", "CapAmb:"] {
                assert_eq!(field(caps), "0000000000000000", "{pid}: {caps}");
            }
            seen += 1;
        }
    }
    assert!(seen > 0, "no idle worker found among this process's children");
}
