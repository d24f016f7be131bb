//! What the built-in tools `run_command` and `fetch` (issue 20) need of the
//! world. The core prepared, gated and re-checked the call; this runs
//! exactly the grant it hands over:
//!
//! - a command: exactly the granted argv (no shell unless the grant is
//!   `/bin/sh -c …`, which the core grants only under `spec.builtins.shell`
//!   with every part checked), in the granted directory, with a fixed `PATH`,
//!   in a process group of its own that is killed when the call ends; under
//!   the process transport's OS sandbox ([`super::confine`]: the workspace
//!   readable and writable, the rest of the filesystem read-only, no
//!   network) whenever this machine has it;
//! - a fetch: GET or HEAD with the http transport's client, no redirect
//!   followed before the core's gate has checked its origin, the body capped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use harnessweaver_core::builtins::EffectGrant;
use harnessweaver_core::governor::{InvokeOutcome, Ticket};
use harnessweaver_core::manifest::{Grant, ProcessSandbox, ProcessSpec, ResolvedProcess, COMMAND_SEARCH_PATH};

use super::confine::Confinement;
use super::http::{self, HttpClient};
use super::process::kill_group;

/// Runs a built-in tool's grant.
pub fn run(grant: &EffectGrant<'_>, ticket: &Ticket, confinement: &Confinement, http: &HttpClient, test_mode: bool) -> InvokeOutcome {
    match grant {
        EffectGrant::Command { argv, cwd, workspace, timeout_ms, max_output_bytes, sandbox_required } => {
            command(argv, cwd, workspace, Duration::from_millis(*timeout_ms), *max_output_bytes, confinement, *sandbox_required)
        }
        EffectGrant::Fetch { url, method, timeout_ms, max_bytes, check_origin } => {
            if test_mode {
                return InvokeOutcome::TransportRefused {
                    reason: format!("`{}` was not called: the harness is in test mode, where nothing calls out", ticket.tool),
                };
            }
            fetch(http, url, method, Duration::from_millis(*timeout_ms), *max_bytes, *check_origin)
        }
    }
}

/// The program: a bare name on the fixed search path, else a path (relative to `cwd`).
fn program(arg0: &str, cwd: &Path) -> Option<PathBuf> {
    if arg0.contains('/') {
        let p = cwd.join(arg0);
        return p.is_file().then_some(p);
    }
    COMMAND_SEARCH_PATH.iter().map(|d| Path::new(d).join(arg0)).find(|p| p.is_file())
}

fn command(argv: &[String], cwd: &Path, workspace: &Path, timeout: Duration, cap: u64, confinement: &Confinement, required: bool) -> InvokeOutcome {
    let Some((arg0, rest)) = argv.split_first() else { return InvokeOutcome::Failed { kind: "empty argv".into() } };
    let Some(exe) = program(arg0, cwd) else {
        return InvokeOutcome::Failed { kind: format!("`{arg0}` is not a program on the search path ({})", COMMAND_SEARCH_PATH.join(":")) };
    };
    let spec = ProcessSpec {
        command: exe.display().to_string(),
        args: rest.to_vec(),
        cwd: ".".into(),
        env: Default::default(),
        max_payload_bytes: cap,
        sandbox: ProcessSandbox {
            required: true,
            profile: "default".into(),
            grants: vec![Grant::FilesystemRead, Grant::FilesystemWrite, Grant::Process],
            read_paths: vec![workspace.display().to_string()],
            write_paths: vec![workspace.display().to_string()],
            code_paths: Vec::new(),
            local_sockets: Vec::new(),
        },
        resolved: None,
    };
    let resolved = ResolvedProcess {
        command: exe.clone(),
        cwd: cwd.to_path_buf(),
        arg_files: Vec::new(),
        read_paths: vec![workspace.to_path_buf()],
        write_paths: vec![workspace.to_path_buf()],
        code_paths: Vec::new(),
        local_sockets: Vec::new(),
    };
    // The `process` grant runs it under bubblewrap's namespaces, which need no prepared direct restrictions.
    let cache = super::confine::PreparedCache::new();
    let (mut cmd, mode) = match confinement.command(&spec, &resolved, &cache) {
        Ok(launch) => (launch.command, Some(launch.mode)),
        Err(refusal) if required => return refusal.into_outcome(),
        Err(_) => {
            let mut c = Command::new(&exe);
            c.args(rest);
            (c, None)
        }
    };
    cmd.current_dir(cwd).env_clear().env("PATH", COMMAND_SEARCH_PATH.join(":")).env("HOME", workspace).env("LANG", "C.UTF-8");
    match run_captured(cmd, timeout, cap) {
        Err(kind) => InvokeOutcome::Failed { kind },
        Ok(None) => InvokeOutcome::TimedOut,
        Ok(Some(done)) => {
            if mode == Some(super::confine::Mode::Namespaces) && done.status == Some(super::process::CONFINE_FAILED_EXIT) {
                return super::confine::launcher_failure(&done.stdout);
            }
            InvokeOutcome::Returned(json!({
                "exit_code": done.status,
                "stdout": String::from_utf8_lossy(&done.stdout),
                "stderr": String::from_utf8_lossy(&done.stderr),
                "truncated": done.truncated,
            }))
        }
    }
}

pub(super) struct Captured {
    pub(super) status: Option<i32>,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) truncated: bool,
}

/// Runs `cmd` in a process group of its own, keeping at most `cap` bytes of
/// each stream; `None` when it overran `timeout` (the group is killed either way).
pub(super) fn run_captured(mut cmd: Command, timeout: Duration, cap: u64) -> Result<Option<Captured>, String> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("the command could not be started ({})", e.kind()))?;
    let pid = child.id();
    let reader = |stream: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        let _ = std::thread::Builder::new().name("hw-builtin-read".into()).spawn(move || {
            let mut buf = Vec::new();
            let mut more = false;
            if let Some(s) = stream {
                let mut limited = s.take(cap.saturating_add(1));
                let _ = limited.read_to_end(&mut buf);
                more = buf.len() as u64 > cap;
                buf.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
                // Drain the rest so the program is not blocked on a full pipe.
                let mut rest = limited.into_inner();
                let _ = std::io::copy(&mut rest, &mut std::io::sink());
            }
            let _ = tx.send((buf, more));
        });
        rx
    };
    let out = reader(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = reader(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let (tx, rx) = mpsc::channel();
    let _ = std::thread::Builder::new().name("hw-builtin-wait".into()).spawn(move || {
        let status = child.wait().ok().and_then(|s| s.code());
        let _ = tx.send(status);
    });
    let deadline = Instant::now() + timeout;
    let status = match rx.recv_timeout(timeout) {
        Ok(status) => status,
        Err(_) => {
            kill_group(pid);
            return Ok(None);
        }
    };
    // The leader is gone: end whatever it left behind, so the streams close.
    kill_group(pid);
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
    let (stdout, more_out) = out.recv_timeout(left).unwrap_or_default();
    let (stderr, more_err) = err.recv_timeout(left).unwrap_or_default();
    Ok(Some(Captured { status, stdout, stderr, truncated: more_out || more_err }))
}

fn fetch(
    client: &HttpClient,
    url: &str,
    method: &str,
    timeout: Duration,
    cap: u64,
    check_origin: &(dyn Fn(&str) -> Result<(), String> + Sync),
) -> InvokeOutcome {
    let deadline = Instant::now() + timeout;
    let mut url = url.to_string();
    for _hop in 0..=http::MAX_REDIRECTS {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return InvokeOutcome::TimedOut;
        }
        let agent = client.agent();
        let sent = if method == "HEAD" {
            agent.head(&url).config().timeout_global(Some(remaining)).build().call()
        } else {
            agent.get(&url).config().timeout_global(Some(remaining)).build().call()
        };
        let mut response = match sent {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => return InvokeOutcome::TimedOut,
            Err(_) => return InvokeOutcome::Failed { kind: "the fetch failed (network error)".into() },
        };
        let status = response.status().as_u16();
        if (300..400).contains(&status) && status != 304 {
            let next = response.headers().get("location").and_then(|v| v.to_str().ok()).and_then(|l| http::resolve(&url, l));
            let Some(next) = next else { return InvokeOutcome::Failed { kind: format!("http status {status} without a valid location") } };
            // Each hop's origin passes the gate again before it is reached.
            if let Err(why) = check_origin(&next) {
                return InvokeOutcome::TransportRefused { reason: why };
            }
            url = next;
            continue;
        }
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let (body, truncated) = if method == "HEAD" {
            (String::new(), false)
        } else {
            let mut bytes = Vec::new();
            let reader = response.body_mut().with_config().limit(u64::MAX).reader();
            if reader.take(cap.saturating_add(1)).read_to_end(&mut bytes).is_err() {
                return InvokeOutcome::Failed { kind: "the response could not be read".into() };
            }
            let more = bytes.len() as u64 > cap;
            bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
            (String::from_utf8_lossy(&bytes).into_owned(), more)
        };
        return InvokeOutcome::Returned(
            json!({"status": status, "content_type": content_type, "body": body, "truncated": truncated, "url": Value::String(url)}),
        );
    }
    InvokeOutcome::Failed { kind: format!("more than {} redirects", http::MAX_REDIRECTS) }
}
