//! Attacks on the governed built-in tools (issue 20), each beside the same
//! operation succeeding when it is granted: a directory swapped for a link
//! between preparation and invocation, `..` tricks, Unicode confusables and
//! invisible characters in paths, compound commands hiding `rm`, a fetch
//! redirected to an origin that is not allowed (local HTTP servers started
//! here), and write races (two writers, an external change, a command
//! between a read and an edit).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

#[path = "../examples/coding_session.rs"]
mod coding_session;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harnessweaver_core::host::{Begun, CallContext, CallResult, Host, HostOptions, Principal, SpecFormat};
use serde_json::{json, Value};

struct Fixture {
    dir: PathBuf,
    host: Host,
    ctx: CallContext,
}

fn setup(name: &str, builtins: &str) -> Fixture {
    setup_with(name, builtins, None)
}

fn setup_with(name: &str, builtins: &str, probe: Option<harnessweaver_runtime::transport::confine::Probe>) -> Fixture {
    let dir = std::env::temp_dir().join(format!("hw-builtins-attack-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("ws/docs")).unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::write(dir.join("ws/docs/a.md"), "alpha\n").unwrap();
    std::fs::write(dir.join("outside/secret"), "secret\n").unwrap();
    let harness = format!(
        "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {{ name: attacks }}\nspec:\n  tools: {{ manifests: [] }}\n  builtins:\n    workspace: ws\n    tools: [read_file, write_file, edit_file, list_dir, search_files, run_command, fetch]\n{builtins}"
    );
    std::fs::write(dir.join("harness.yaml"), harness).unwrap();
    let transports = harnessweaver_runtime::transport::TransportOptions { sandbox_probe: probe, ..Default::default() };
    let options = HostOptions { backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transports)), ..HostOptions::default() };
    let host = Host::load(&dir.join("harness.yaml"), options).unwrap_or_else(|e| panic!("{}", e.text()));
    let ctx = CallContext { principal: Principal::new("agent"), run_id: Some(host.new_run().unwrap()), ..CallContext::default() };
    Fixture { dir: dir.canonicalize().unwrap(), host, ctx }
}

const ALLOW_WRITES: &str = "    access:\n      - { effect: allow, kind: filesystem.write, paths: [\"**\"] }\n      - { effect: allow, kind: command.execute, command: [echo] }\n      - { effect: deny, kind: command.execute, command: [rm] }\n";

impl Fixture {
    fn call(&self, tool: &str, args: Value) -> CallResult {
        match self.host.begin(tool, args, &self.ctx).unwrap() {
            Begun::Refused(r) | Begun::Pending(r) => r,
            Begun::Allowed(t) => {
                let outcome = self.host.run_transport(&t);
                self.host.finish_transport(t, outcome)
            }
        }
    }

    /// Begins a call, runs `between`, then invokes it: a change between preparation and invocation.
    fn call_with(&self, tool: &str, args: Value, between: impl FnOnce(&Path)) -> CallResult {
        let Begun::Allowed(t) = self.host.begin(tool, args, &self.ctx).unwrap() else { panic!("expected the call to be allowed") };
        between(&self.dir);
        let outcome = self.host.run_transport(&t);
        self.host.finish_transport(t, outcome)
    }
}

fn code(r: &CallResult) -> &str {
    r.code.map_or("allowed", |c| c.as_str())
}

fn swap_docs_for_a_link(dir: &Path) {
    std::fs::rename(dir.join("ws/docs"), dir.join("ws/docs.old")).unwrap();
    std::fs::create_dir_all(dir.join("outside/docs")).unwrap();
    std::fs::write(dir.join("outside/docs/a.md"), "outside\n").unwrap();
    std::os::unix::fs::symlink(dir.join("outside/docs"), dir.join("ws/docs")).unwrap();
}

#[test]
fn a_directory_swapped_for_a_link_between_prepare_and_invoke_fails_closed() {
    let f = setup("swap", ALLOW_WRITES);
    // Granted and unchanged: the write lands in the workspace.
    let ok = f.call_with("write_file", json!({"path": "docs/b.md", "content": "b\n"}), |_| {});
    assert_eq!(code(&ok), "allowed", "{ok:?}");
    assert_eq!(std::fs::read_to_string(f.dir.join("ws/docs/b.md")).unwrap(), "b\n");
    // The same call, with `docs` swapped for a link out of the workspace after it was prepared.
    let r = f.call_with("write_file", json!({"path": "docs/c.md", "content": "pwned\n"}), swap_docs_for_a_link);
    assert_eq!(code(&r), "path_changed", "{r:?}");
    assert!(!f.dir.join("outside/docs/c.md").exists());
    let r = f.call("read_file", json!({"path": "docs/a.md"}));
    assert_eq!(code(&r), "path_escape", "now prepared through the link: {r:?}");
}

#[test]
fn dotdot_and_absolute_paths_never_escape() {
    let f = setup("dotdot", ALLOW_WRITES);
    assert_eq!(code(&f.call("read_file", json!({"path": "docs/../docs/a.md"}))), "allowed");
    for path in ["../outside/secret", "docs/../../outside/secret", "./../outside/secret", "docs/./../..//outside/secret", "/etc/passwd"] {
        let r = f.call("read_file", json!({"path": path}));
        assert_eq!(code(&r), "path_escape", "{path}: {r:?}");
        let w = f.call("write_file", json!({"path": path, "content": "x"}));
        assert_eq!(code(&w), "path_escape", "{path}: {w:?}");
    }
    let abs = f.dir.join("outside/secret").display().to_string();
    assert_eq!(code(&f.call("read_file", json!({"path": abs}))), "path_escape");
    assert_eq!(std::fs::read_to_string(f.dir.join("outside/secret")).unwrap(), "secret\n");
}

#[test]
fn confusable_and_invisible_paths_do_not_slip_past_a_deny() {
    let f = setup(
        "confusables",
        "    access:\n      - { effect: allow, kind: filesystem.write, paths: [\"**\"] }\n      - { effect: deny, kind: filesystem.write, paths: [\".git/**\"] }\n",
    );
    std::fs::create_dir_all(f.dir.join("ws/.git/hooks")).unwrap();
    // Cyrillic і and е, fullwidth g, a zero-width space, a right-to-left override.
    for path in [".git/hooks/pre-commit", ".g\u{0456}t/hooks/pre-commit", ".git\u{200B}/hooks/pre-commit", ".gi\u{202E}t/hooks/x"] {
        let r = f.call("write_file", json!({"path": path, "content": "#!/bin/sh\n"}));
        assert!(matches!(code(&r), "access_denied" | "invalid_args"), "{path:?}: {r:?}");
    }
    assert!(!f.dir.join("ws/.git/hooks/pre-commit").exists());
    // The same write elsewhere is allowed.
    assert_eq!(code(&f.call("write_file", json!({"path": "docs/hooks.md", "content": "ok\n"}))), "allowed");
}

#[test]
fn compound_commands_hiding_rm_run_nothing() {
    let f = setup("compound", &format!("    shell: true\n{ALLOW_WRITES}"));
    std::fs::write(f.dir.join("ws/docs/keep.md"), "keep\n").unwrap();
    for line in [
        "echo ok && rm -rf docs",
        "echo ok; rm -rf docs",
        "echo ok || rm -rf docs",
        "echo docs | xargs rm -rf",
        "echo $(rm -rf docs)",
        "echo `rm -rf docs`",
        "sh -c 'rm -rf docs'",
        "bash -c \"echo x; rm -fr docs\"",
        "timeout 5 rm -rf docs",
        "nice -n 1 rm -rf docs",
        "nohup rm -rf docs",
        "env rm -rf docs",
        "/bin/rm -r -f docs",
        "echo ok & rm -rf docs",
        "echo ok\nrm -rf docs",
    ] {
        let r = f.call("run_command", json!({"command": line}));
        assert!(matches!(code(&r), "access_denied" | "invalid_args" | "approval_required"), "{line:?}: {r:?}");
        assert!(f.dir.join("ws/docs/keep.md").exists(), "{line:?} removed a file");
    }
    for line in ["echo $HOME; rm -rf docs", "eval 'rm -rf docs'", "echo ok > docs/keep.md"] {
        let r = f.call("run_command", json!({"command": line}));
        assert_ne!(code(&r), "allowed", "{line:?}: {r:?}");
    }
    assert_eq!(std::fs::read_to_string(f.dir.join("ws/docs/keep.md")).unwrap(), "keep\n");
    // The allowed parts alone run.
    let r = f.call("run_command", json!({"command": "echo ok && echo done"}));
    assert_eq!(code(&r), "allowed", "{r:?}");
    assert_eq!(r.output.unwrap()["stdout"], "ok\ndone\n");
}

#[test]
fn write_races_are_refused_as_stale() {
    let f = setup("races", ALLOW_WRITES);
    std::fs::write(f.dir.join("ws/docs/r.md"), "v1\n").unwrap();
    // An external change between the read and the write.
    assert_eq!(code(&f.call("read_file", json!({"path": "docs/r.md"}))), "allowed");
    std::fs::write(f.dir.join("ws/docs/r.md"), "external\n").unwrap();
    assert_eq!(code(&f.call("write_file", json!({"path": "docs/r.md", "content": "mine\n"}))), "stale_write");
    assert_eq!(std::fs::read_to_string(f.dir.join("ws/docs/r.md")).unwrap(), "external\n");
    // A command between the read and the edit voids the observation.
    assert_eq!(code(&f.call("read_file", json!({"path": "docs/r.md"}))), "allowed");
    assert_eq!(code(&f.call("run_command", json!({"argv": ["echo", "hi"]}))), "allowed");
    assert_eq!(code(&f.call("edit_file", json!({"path": "docs/r.md", "old_text": "external", "new_text": "x"}))), "stale_write");
    // Two writers of one run that both read the file: exactly one write lands.
    assert_eq!(code(&f.call("read_file", json!({"path": "docs/r.md"}))), "allowed");
    let host = Arc::new(f);
    let ok = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let host = host.clone();
            std::thread::spawn(move || {
                // Each writer has a run of its own that read the file.
                let ctx = CallContext { principal: Principal::new("agent"), run_id: Some(host.host.new_run().unwrap()), ..CallContext::default() };
                let read = match host.host.begin("read_file", json!({"path": "docs/r.md"}), &ctx).unwrap() {
                    Begun::Allowed(t) => {
                        let o = host.host.run_transport(&t);
                        host.host.finish_transport(t, o)
                    }
                    _ => panic!(),
                };
                assert!(read.is_allowed());
                let Begun::Allowed(t) =
                    host.host.begin("write_file", json!({"path": "docs/r.md", "content": format!("writer {i}\n")}), &ctx).unwrap()
                else {
                    panic!()
                };
                (ctx, t)
            })
        })
        .map(|h| h.join().unwrap())
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(_, t)| {
            let (host, ok) = (host.clone(), ok.clone());
            std::thread::spawn(move || {
                let o = host.host.run_transport(&t);
                let r = host.host.finish_transport(t, o);
                if r.is_allowed() {
                    ok.fetch_add(1, Ordering::SeqCst);
                } else {
                    assert_eq!(code(&r), "stale_write", "{r:?}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(ok.load(Ordering::SeqCst), 1, "exactly one of two racing writers wins");
}

/// A one-shot-per-connection HTTP server on 127.0.0.1: answers `respond(path)`
/// and counts the requests it got.
fn server(respond: impl Fn(&str, u16) -> String + Send + Sync + 'static) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).map_or(true, |n| n == 0) || header == "\r\n" {
                    break;
                }
            }
            counted.fetch_add(1, Ordering::SeqCst);
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = stream.write_all(respond(&path, port).as_bytes());
        }
    });
    (port, hits)
}

fn redirect(to: &str) -> String {
    format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

fn ok(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
}

#[test]
fn a_fetch_redirected_to_an_origin_that_is_not_allowed_reaches_nothing() {
    let (evil, evil_hits) = server(|_, _| ok("exfiltrated"));
    let (good, _) = server(move |path, me| match path {
        "/away" => redirect(&format!("http://127.0.0.1:{evil}/collect?token=secret")),
        "/here" => redirect(&format!("http://127.0.0.1:{me}/page")),
        _ => ok("the page"),
    });
    let mut f = setup(
        "fetch",
        &format!(
            "    egress: [\"http://127.0.0.1:{good}\"]\n    access:\n      - {{ effect: allow, kind: network, origins: [\"http://127.0.0.1:{good}\"] }}\n"
        ),
    );
    // The user's request names the pages (issue 23: a URL seen only in fetched content would be `tainted_argument`).
    f.ctx.task = Some(format!("read http://127.0.0.1:{good}/here and http://127.0.0.1:{good}/away"));
    // Granted: a redirect within the allowed origin is followed.
    let r = f.call("fetch", json!({"url": format!("http://127.0.0.1:{good}/here")}));
    assert_eq!(code(&r), "allowed", "{r:?}");
    assert_eq!(r.output.as_ref().unwrap()["body"], "the page");
    assert_eq!(r.output_report.as_ref().unwrap().label, "untrusted");
    // Redirected to another origin: refused before it is reached.
    let r = f.call("fetch", json!({"url": format!("http://127.0.0.1:{good}/away")}));
    assert_eq!(code(&r), "transport_refused", "{r:?}");
    assert_eq!(evil_hits.load(Ordering::SeqCst), 0, "the other origin was contacted");
    // Asked directly: denied at the gate, not in egress.
    let r = f.call("fetch", json!({"url": format!("http://127.0.0.1:{evil}/collect")}));
    assert_eq!(code(&r), "access_denied", "{r:?}");
    assert_eq!(evil_hits.load(Ordering::SeqCst), 0);
}

#[test]
fn the_coding_session_accepts_one_candidate_and_is_not_asked_again() {
    let s = coding_session::session(&std::env::temp_dir().join(format!("hw-builtins-session-{}", std::process::id())));
    let decision = |i: usize| s.steps[i].1["decision"].as_str().unwrap_or_default().to_string();
    assert_eq!(decision(0), "allowed");
    assert_eq!(decision(1), "pending");
    assert_eq!(s.steps[2].1["state"], "approved");
    assert_eq!(decision(3), "allowed");
    assert_eq!(decision(4), "allowed", "{:?}", s.steps[4]);
    assert_eq!(decision(5), "allowed", "{:?}", s.steps[5]);
    assert_eq!(s.steps[6].1["code"], "invalid_args");
    assert_eq!(s.steps[7].1["code"], "access_denied");
    assert_eq!(s.steps[8].1["code"], "path_escape");
    assert_eq!(s.steps[9].1["code"], "access_denied");
    assert!(s.steps[10].1.as_str().unwrap().contains("paths: [\"src/**\"]"));
    assert!(std::fs::read_to_string(s.dir.join("workspace/src/lib.rs")).unwrap().contains("Hello, {name}!"));
    assert!(s.dir.join("workspace/src/farewell.rs").exists());
}

#[test]
fn the_builtin_tools_are_listed_with_their_pinned_manifests() {
    let f = setup("listed", "    egress: [\"https://docs.rs\"]\n");
    let tools: Vec<Value> = f.host.tools().map(|t| t.describe()).collect();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read_file", "write_file", "edit_file", "list_dir", "search_files", "run_command", "fetch"]);
    for t in &tools {
        assert_eq!(t["pin"], "pinned", "{t}");
        assert_eq!(t["transport"], "builtin", "{t}");
    }
    assert_eq!(tools[6]["egress"], json!(["https://docs.rs"]));
    let specs = f.host.tool_specs(SpecFormat::parse("openai").unwrap(), None, None).unwrap();
    assert_eq!(specs.as_array().unwrap().len(), 7, "{specs}");
}

#[test]
fn a_granted_command_writes_in_the_workspace_and_nowhere_else() {
    let f = setup("confined", "    access:\n      - { effect: allow, kind: command.execute, command: [touch] }\n");
    let r = f.call("run_command", json!({"argv": ["touch", "docs/made.md"]}));
    assert_eq!(r.output.as_ref().unwrap()["exit_code"], 0, "{r:?}");
    assert!(f.dir.join("ws/docs/made.md").exists());
    // The same granted program, aimed outside the workspace: the OS sandbox refuses the write.
    let outside = f.dir.join("outside/made").display().to_string();
    let r = f.call("run_command", json!({"argv": ["touch", outside]}));
    assert_eq!(code(&r), "allowed", "the gate allows touch: {r:?}");
    assert_ne!(r.output.as_ref().unwrap()["exit_code"], 0, "{r:?}");
    assert!(!f.dir.join("outside/made").exists(), "a command wrote outside the workspace");
}

#[test]
fn a_required_sandbox_that_is_missing_refuses_instead_of_running_unconfined() {
    use harnessweaver_runtime::transport::confine::Probe;
    let access = "    access:\n      - { effect: allow, kind: command.execute, command: [touch] }\n";
    let missing = Probe { bwrap: None, ..Probe::current().clone() };
    let f = setup_with("required", &format!("    sandbox: required\n{access}"), Some(missing.clone()));
    let r = f.call("run_command", json!({"argv": ["touch", "docs/made.md"]}));
    assert_eq!(code(&r), "sandbox_unavailable", "{r:?}");
    assert!(!f.dir.join("ws/docs/made.md").exists(), "the command ran unconfined");
    // Where the sandbox is only wanted when available, the same machine runs it (argv only).
    let f = setup_with("when-available", access, Some(missing));
    let r = f.call("run_command", json!({"argv": ["touch", "docs/made.md"]}));
    assert_eq!(r.output.as_ref().map(|o| o["exit_code"].clone()), Some(json!(0)), "{r:?}");
}
