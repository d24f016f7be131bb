//! The process transport without the OS sandbox: the protocol, argv without
//! a shell, the minimal environment, payload caps, and the timeout that
//! kills the whole process group. The handler is tests/process/handler.py,
//! run by the system Python as argv.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod harness_dir;
mod process_support;

use process_support::{call, call_listening, code, fifo_closed_by_all_writers, load, three_steps, Fifo};
use serde_json::json;

const PY: &str = "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py]\n";

#[test]
fn the_request_follows_the_protocol_and_the_output_comes_back() {
    let (_d, rt) = load("proc-echo", &[("echo", &format!("{PY}  timeout: 20s\n"))], &[]);
    let r = call(&rt, "echo", json!({"q": "rust"}));
    assert_eq!(r.code, None, "{r:?}");
    let out = r.output.unwrap();
    let req = &out["request"];
    assert_eq!(req["protocol"], "harnessweaver-process-v1");
    assert_eq!(req["operation"], "invoke");
    assert_eq!(req["tool"], "echo");
    assert_eq!(req["args"], json!({"q": "rust"}));
    assert_eq!(req["call_id"], json!(r.call_id));
    assert!(req["idempotency_key"].as_str().is_some_and(|k| !k.is_empty()));
}

#[test]
fn progress_lines_on_stderr_reach_a_listening_caller_and_nothing_else_does() {
    let (_d, rt) = load("proc-progress", &[("progress", &format!("{PY}  timeout: 20s\n"))], &[]);
    let (r, seen) = call_listening(&rt, "progress", json!({"attack": "progress"}));
    assert_eq!(r.output, Some(json!({"reported": 3})), "{r:?}");
    assert_eq!(seen, three_steps());
    // Nobody listening: the same call, stderr unread.
    assert_eq!(call(&rt, "progress", json!({"attack": "progress"})).output, Some(json!({"reported": 3})));
}

#[test]
fn argv_reaches_the_process_without_a_shell() {
    let tool = "  transport: process\n  command: /usr/bin/python3\n  args: [handler.py, \"$(touch pwned)\", \"a b;c\", \"*\"]\n  timeout: 20s\n";
    let (d, rt) = load("proc-argv", &[("argv", tool)], &[]);
    let r = call(&rt, "argv", json!({}));
    assert_eq!(r.output.unwrap()["argv"], json!(["$(touch pwned)", "a b;c", "*"]));
    assert!(!d.0.join("pwned").exists(), "a shell ran the arguments");
}

#[test]
fn the_environment_holds_only_path_and_the_mapped_variables() {
    std::env::set_var("HW_PROC_TEST_SECRET", "do-not-leak");
    std::env::set_var("HW_PROC_TEST_LANG", "eo.UTF-8");
    let tool = format!("{PY}  timeout: 20s\n  env: {{ LANG: HW_PROC_TEST_LANG, UNSET_ONE: HW_PROC_TEST_NOT_SET }}\n");
    let (_d, rt) = load("proc-env", &[("env", &tool)], &[]);
    let out = call(&rt, "env", json!({})).output.unwrap();
    let env = out["env"].as_object().unwrap();
    let mut keys: Vec<&str> = env.keys().map(String::as_str).collect();
    keys.sort_unstable();
    // Python itself adds LC_CTYPE when it coerces the C locale; nothing of the host's.
    keys.retain(|k| *k != "LC_CTYPE");
    assert_eq!(keys, ["LANG", "PATH"]);
    assert_eq!(env["LANG"], "eo.UTF-8");
    assert_eq!(env["PATH"], "/usr/local/bin:/usr/bin:/bin");
}

#[test]
fn the_timeout_kills_the_process_and_its_forked_grandchild() {
    let fifo = Fifo::new("proc-linger");
    let (_d, rt) = load("proc-linger", &[("linger", &format!("{PY}  timeout: 3s\n"))], &[]);
    let r = call(&rt, "linger", json!({"attack": "linger", "fifo": fifo.path}));
    assert_eq!(code(&r), "timeout", "{r:?}");
    // End of file on the FIFO: every process that held its write end (the
    // handler and the grandchild it forked) is dead.
    assert_eq!(fifo_closed_by_all_writers(&fifo), b"x");
}

#[test]
fn a_response_past_the_cap_is_cut_off_unread() {
    let tool = format!("{PY}  timeout: 60s\n  max_payload_bytes: 65536\n");
    let (_d, rt) = load("proc-flood", &[("flood", &tool)], &[]);
    let r = call(&rt, "flood", json!({"attack": "flood", "mb": 50}));
    assert_eq!(code(&r), "handler_error", "{r:?}");
    assert!(r.message.contains("larger than `spec.max_payload_bytes` (65536)"), "{}", r.message);
}

#[test]
fn a_request_past_the_cap_is_refused_before_launch() {
    let tool = format!("{PY}  timeout: 20s\n  max_payload_bytes: 200\n");
    let (_d, rt) = load("proc-bigreq", &[("small", &tool)], &[]);
    let r = call(&rt, "small", json!({"q": "x".repeat(500)}));
    assert_eq!(code(&r), "transport_refused", "{r:?}");
    assert!(r.message.contains("more than `spec.max_payload_bytes` (200)"), "{}", r.message);
}

#[test]
fn a_handler_that_never_reads_stdin_still_answers() {
    let tool =
        "  transport: process\n  command: /usr/bin/python3\n  args: [\"-c\", \"print('{\\\"ok\\\": true, \\\"output\\\": 1}')\"]\n  timeout: 20s\n";
    let (_d, rt) = load("proc-nostdin", &[("deaf", tool)], &[]);
    // 300 KB of request: more than a pipe holds, never read.
    let r = call(&rt, "deaf", json!({"q": "y".repeat(300_000)}));
    assert_eq!(r.output, Some(json!(1)), "{r:?}");
}

#[test]
fn non_zero_exit_malformed_and_error_responses_are_handler_errors() {
    let (_d, rt) = load("proc-bad", &[("bad", &format!("{PY}  timeout: 20s\n"))], &[]);
    let r = call(&rt, "bad", json!({"attack": "exit", "status": 3}));
    assert_eq!(code(&r), "handler_error");
    assert!(r.message.contains("exited with status 3"), "{}", r.message);
    let r = call(&rt, "bad", json!({"attack": "garbage"}));
    assert_eq!(code(&r), "handler_error");
    assert!(r.message.contains("not JSON"), "{}", r.message);
    let r = call(&rt, "bad", json!({"attack": "fail"}));
    assert_eq!(code(&r), "handler_error");
    assert!(r.message.contains("`no_such_dataset`"), "{}", r.message);
    assert!(!r.message.contains("hunter2"), "the handler's message is echoed: {}", r.message);
}

#[test]
fn an_unconfined_handler_reads_what_the_host_can() {
    // The baseline the sandbox tests deny: without `sandbox.required` the
    // handler is trusted host code and reads the harness's files.
    let (d, rt) = load("proc-unconfined", &[("open", &format!("{PY}  timeout: 20s\n"))], &[]);
    let harness = d.harness();
    let r = call(&rt, "open", json!({"attack": "read", "path": harness}));
    assert_eq!(r.output.unwrap()["allowed"], true);
}

#[test]
fn tools_list_and_doctor_say_which_process_tools_are_unconfined() {
    let confined = format!("{PY}  sandbox:\n    required: true\n");
    let d = process_support::write_harness("proc-cli", &[("loose", PY), ("tight", &confined)], &[]);
    let bin = env!("CARGO_BIN_EXE_harnessweaver");
    let out = std::process::Command::new(bin).args(["tools", "list", "--json"]).arg(d.harness()).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let confined_of = |name: &str| listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["confined"].clone();
    assert_eq!(confined_of("loose"), json!(false));
    assert_eq!(confined_of("tight"), json!(true));
    let out = std::process::Command::new(bin).args(["tools", "list"]).arg(d.harness()).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("process (unconfined)") && table.contains("process (confined)"), "{table}");
    let out = std::process::Command::new(bin).args(["doctor", "--json"]).arg(d.harness()).output().unwrap();
    let doctor: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings: Vec<&str> = doctor["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.contains("`loose`") && w.contains("unconfined")), "{warnings:?}");
    assert!(!warnings.iter().any(|w| w.contains("`tight`") && w.contains("unconfined")), "{warnings:?}");
}

#[test]
fn the_audit_event_marks_a_process_tool_confined_or_not() {
    let confined = format!("{PY}  timeout: 20s\n  sandbox:\n    required: true\n");
    let (unconfined, http) = (format!("{PY}  timeout: 20s\n"), "  transport: http\n  url: \"http://127.0.0.1:9/x\"\n".to_string());
    let d = process_support::write_harness("proc-audit", &[("loose", &unconfined), ("tight", &confined), ("web", &http)], &[]);
    let yaml = std::fs::read_to_string(d.harness()).unwrap() + "  audit: { sink: audit.jsonl }\n";
    std::fs::write(d.harness(), yaml).unwrap();
    let (d, rt) = process_support::load_in(d, process_support::options(None, None));
    for tool in ["loose", "tight"] {
        assert_eq!(call(&rt, tool, json!({})).code, None, "{tool}");
    }
    // An http tool (refused in test mode, still audited) carries no mark.
    assert_eq!(code(&call(&rt, "web", json!({}))), "transport_refused");
    let events: Vec<serde_json::Value> =
        std::fs::read_to_string(d.0.join("audit.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let confined_of = |tool: &str| events.iter().find(|e| e["tool"] == tool).unwrap_or_else(|| panic!("{tool}: {events:?}")).get("confined").cloned();
    assert_eq!(confined_of("loose"), Some(json!(false)));
    assert_eq!(confined_of("tight"), Some(json!(true)));
    assert_eq!(confined_of("web"), None, "only process tools carry the mark");
}
