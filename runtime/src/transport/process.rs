//! The `process` transport: a local program started for each call without a
//! shell (argv only), with an empty environment but for a fixed `PATH` and
//! the variables the manifest maps, speaking `harnessweaver-process-v1`:
//! one JSON request on stdin, one JSON response on stdout.
//!
//! ```text
//! → {"protocol": "harnessweaver-process-v1", "operation": "invoke", "tool", "args", "idempotency_key", "call_id"}
//! ← {"ok": true, "output": …}  |  {"ok": false, "error": {"code", "message"}}
//! ```
//!
//! While it runs, the process may report progress (issue 22) on stderr, one
//! line per report, [`PROGRESS_PREFIX`] then a JSON object:
//!
//! ```text
//! harnessweaver-progress {"progress": 2, "total": 5, "message": "fetched page 2"}
//! ```
//!
//! Each report goes to the core ([`Progress::report`]), which decides what
//! reaches the caller; other stderr lines, and lines longer than
//! [`MAX_PROGRESS_LINE`] bytes, are ignored. stderr is read only while the
//! caller listens to progress; otherwise it goes nowhere, as before.
//!
//! The process leads a process group of its own; when the call ends (the
//! response read, the timeout passed, the response grown past
//! `max_payload_bytes`) the whole group is killed, so a forked grandchild
//! does not outlive the call. A request larger than `max_payload_bytes` is
//! refused before launch; a larger response is cut off unread. A malformed
//! response or a non-zero exit is `handler_error`.
//!
//! With `sandbox.required: true` the program runs under the confinement of
//! [`super::confine`] (Landlock, seccomp, no capabilities; bubblewrap's
//! namespaces too when the policy needs them), or not at all: a
//! missing mechanism refuses the call with `sandbox_unavailable`, a policy
//! this kernel cannot enforce with `sandbox_unsupported_policy`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use harnessweaver_core::governor::{InvokeOutcome, Ticket};
use harnessweaver_core::manifest::{ProcessSpec, COMMAND_SEARCH_PATH};
use harnessweaver_core::progress::Progress;

use super::confine::{self, Confinement, Mode, PreparedCache};

/// The protocol name every request carries.
pub const PROTOCOL: &str = "harnessweaver-process-v1";

/// What starts a progress line on a process's stderr (issue 22).
pub const PROGRESS_PREFIX: &str = "harnessweaver-progress ";

/// The longest progress line read, in bytes (a longer line is skipped).
pub const MAX_PROGRESS_LINE: usize = 4096;

/// How long the call waits, once the process group is gone, for the last
/// progress lines to be read (the pipe closes at once unless a process that
/// left the group holds it).
const PROGRESS_DRAIN: Duration = Duration::from_millis(250);

/// The exit status the launcher uses when it cannot confine the process.
pub const CONFINE_FAILED_EXIT: i32 = 125;

/// A process tool as compiled at load.
#[derive(Debug, Clone)]
pub struct ProcessTool {
    /// The manifest's process fields, with the paths resolved at load.
    pub spec: ProcessSpec,
    /// The confinement made ready on the first direct launch.
    pub prepared: PreparedCache,
}

impl ProcessTool {
    /// The tool of `spec`.
    pub fn new(spec: ProcessSpec) -> Self {
        ProcessTool { spec, prepared: PreparedCache::new() }
    }
}

/// What a call produced, before it becomes an outcome.
enum Ended {
    Output { bytes: Vec<u8>, status: Option<i32> },
    TimedOut,
    Oversize,
}

/// Runs process tools; holds what confinement needs (found once).
#[derive(Debug)]
pub struct ProcessRunner {
    confinement: Confinement,
}

impl ProcessRunner {
    /// A runner using `confinement` for tools that require the sandbox.
    pub fn new(confinement: Confinement) -> Self {
        Self { confinement }
    }

    /// Runs one call of `tool` within the ticket's timeout.
    pub fn invoke(&self, tool: &ProcessTool, ticket: &Ticket) -> InvokeOutcome {
        let spec = &tool.spec;
        let Some(resolved) = &spec.resolved else {
            return InvokeOutcome::TransportRefused {
                reason: format!("`{}` was loaded without a harness directory; a process tool's paths are resolved against one", ticket.tool),
            };
        };
        let request = json!({
            "protocol": PROTOCOL,
            "operation": ticket.operation(),
            "tool": ticket.tool,
            "args": ticket.args,
            "idempotency_key": ticket.idempotency_key,
            "call_id": ticket.call_id,
        });
        // Secret handles (issue 21): the values go in the `secrets` field
        // only, and every echo of them in the output is masked at step 9.
        let secrets = ticket.secrets();
        let mut request = request;
        if !secrets.is_empty() {
            let values: serde_json::Map<String, Value> = secrets.iter().map(|(h, v)| (h.to_string(), Value::String(v.to_string()))).collect();
            if let Some(map) = request.as_object_mut() {
                map.insert("secrets".into(), Value::Object(values));
            }
        }
        let request = match serde_json::to_vec(&request) {
            Ok(r) => r,
            Err(_) => return InvokeOutcome::Failed { kind: "the request could not be encoded".into() },
        };
        if request.len() as u64 > spec.max_payload_bytes {
            return InvokeOutcome::TransportRefused {
                reason: format!("the request is {} bytes, more than `spec.max_payload_bytes` ({})", request.len(), spec.max_payload_bytes),
            };
        }
        let (mut command, mode) = if spec.sandbox.required {
            match self.confinement.command(spec, resolved, &tool.prepared) {
                Ok(launch) => (launch.command, Some(launch.mode)),
                Err(refusal) => return refusal.into_outcome(),
            }
        } else {
            let mut c = Command::new(&resolved.command);
            c.args(&spec.args).current_dir(&resolved.cwd);
            (c, None)
        };
        command.env_clear().envs(environment(&spec.env));
        let timeout = Duration::from_millis(ticket.timeout_ms);
        match run(command, request, spec.max_payload_bytes, timeout, ticket.progress()) {
            Err(e) if mode == Some(Mode::Direct) => InvokeOutcome::SandboxUnavailable {
                message: format!("the process could not be started under its confinement, so it did not run ({e})"),
            },
            Err(e) => InvokeOutcome::Failed { kind: format!("the process could not be started ({})", e.kind()) },
            Ok(Ended::TimedOut) => InvokeOutcome::TimedOut,
            Ok(Ended::Oversize) => InvokeOutcome::Failed {
                kind: format!("the response is larger than `spec.max_payload_bytes` ({}) and was cut off unread", spec.max_payload_bytes),
            },
            Ok(Ended::Output { bytes, status }) => {
                if mode == Some(Mode::Namespaces) && status == Some(CONFINE_FAILED_EXIT) {
                    return confine::launcher_failure(&bytes);
                }
                match response(&bytes, status) {
                    InvokeOutcome::Returned(value) if !secrets.is_empty() => InvokeOutcome::ReturnedWithSecrets { value, secrets: secrets.values() },
                    other => other,
                }
            }
        }
    }
}

/// The handler's environment: the fixed `PATH` and the mapped variables that
/// are set on the host (a variable not set is left out, never passed empty).
fn environment(map: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut env = vec![("PATH".to_string(), COMMAND_SEARCH_PATH.join(":"))];
    for (name, host) in map {
        if let Ok(value) = std::env::var(host) {
            env.push((name.clone(), value));
        }
    }
    env
}

/// The outcome a finished process gave.
fn response(bytes: &[u8], status: Option<i32>) -> InvokeOutcome {
    match status {
        Some(0) => {}
        Some(code) => return InvokeOutcome::Failed { kind: format!("the process exited with status {code}") },
        None => return InvokeOutcome::Failed { kind: "the process was killed by a signal".into() },
    }
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return InvokeOutcome::Failed { kind: "the process's response is not JSON".into() };
    };
    match (value.get("ok"), value.get("output"), value.get("error")) {
        (Some(Value::Bool(true)), Some(output), None) => InvokeOutcome::Returned(output.clone()),
        (Some(Value::Bool(false)), None, Some(error)) => {
            // The handler's own code, kept only when it is a plain word (its
            // message is not echoed: it may hold anything).
            let code = error.get("code").and_then(Value::as_str).filter(|c| is_word(c)).unwrap_or("error");
            InvokeOutcome::Failed { kind: format!("the handler reported `{code}`") }
        }
        _ => InvokeOutcome::Failed { kind: format!("the process's response is not a `{PROTOCOL}` response") },
    }
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

enum Event {
    Exited,
    Output(Option<Vec<u8>>),
}

/// Starts `command` in a process group of its own, writes the request,
/// reads at most `cap` bytes of response, and kills the group when the call
/// ends, whatever ended it.
fn run(mut command: Command, request: Vec<u8>, cap: u64, timeout: Duration, progress: &Progress) -> std::io::Result<Ended> {
    use std::os::unix::process::CommandExt;
    let stderr = if progress.listened() { Stdio::piped() } else { Stdio::null() };
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr).process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = child.id();
    let drained = child.stderr.take().map(|stderr| {
        let (done, drained) = mpsc::channel::<()>();
        let progress = progress.clone();
        spawn_named("hw-process-progress", move || {
            read_progress(stderr, &progress);
            drop(done);
        });
        drained
    });
    let (tx, rx) = mpsc::channel();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    // A handler that never reads stdin must not block the call: the request
    // is written from a thread of its own.
    spawn_named("hw-process-stdin", move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&request);
        }
    });
    let out_tx = tx.clone();
    spawn_named("hw-process-stdout", move || {
        let mut buf = Vec::new();
        let read = match stdout {
            Some(s) => s.take(cap.saturating_add(1)).read_to_end(&mut buf).is_ok(),
            None => false,
        };
        let _ = out_tx.send(Event::Output((read && buf.len() as u64 <= cap).then_some(buf)));
    });
    spawn_named("hw-process-wait", move || {
        wait_exit_keep_zombie(pid);
        let _ = tx.send(Event::Exited);
    });

    let deadline = started + timeout;
    let mut exited = false;
    let mut output = None;
    let ended = loop {
        if exited && output.is_some() {
            break None;
        }
        let now = Instant::now();
        let Some(left) = deadline.checked_duration_since(now).filter(|d| !d.is_zero()) else { break Some(Ended::TimedOut) };
        match rx.recv_timeout(left) {
            Ok(Event::Exited) => {
                exited = true;
                // The leader is gone but still a zombie, so its group id is
                // not reused: end every descendant before reading on.
                kill_group(pid);
            }
            Ok(Event::Output(Some(bytes))) => output = Some(bytes),
            Ok(Event::Output(None)) => break Some(Ended::Oversize),
            Err(RecvTimeoutError::Timeout) => break Some(Ended::TimedOut),
            Err(RecvTimeoutError::Disconnected) => break Some(Ended::TimedOut),
        }
    };
    kill_group(pid);
    let status = reap(&mut child);
    if let Some(drained) = drained {
        // The group is gone, so stderr is at its end: what the process
        // reported before its answer is decided before the call finishes.
        let _ = drained.recv_timeout(PROGRESS_DRAIN);
    }
    Ok(ended.unwrap_or(Ended::Output { bytes: output.unwrap_or_default(), status }))
}

/// Reads progress lines from a process's stderr until it closes.
fn read_progress(stderr: std::process::ChildStderr, progress: &Progress) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(stderr);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match (&mut reader).take(MAX_PROGRESS_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.len() > MAX_PROGRESS_LINE && line.last() != Some(&b'\n') {
            // Too long: skip to the end of the line.
            loop {
                line.clear();
                match (&mut reader).take(MAX_PROGRESS_LINE as u64).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        if let Some((n, total, message)) = progress_line(&line) {
            let _ = progress.report(n, total, message.as_deref());
        }
    }
}

/// A progress line's report: `progress` (not a number: not finite, which
/// the core drops), `total`, `message`; `None` for any other line.
fn progress_line(line: &[u8]) -> Option<(f64, Option<f64>, Option<String>)> {
    let text = std::str::from_utf8(line).ok()?.trim_end_matches(['\n', '\r']);
    let report: Value = serde_json::from_str(text.strip_prefix(PROGRESS_PREFIX)?).ok()?;
    let number = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let progress = report.get("progress").map_or(f64::NAN, number);
    let total = report.get("total").filter(|t| !t.is_null()).map(number);
    let message = report.get("message").and_then(Value::as_str).map(str::to_string);
    Some((progress, total, message))
}

fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new().name(name.into()).spawn(f);
}

/// Waits until `pid` has exited without reaping it (`WNOWAIT`), so its
/// process-group id stays reserved until the group is killed.
fn wait_exit_keep_zombie(pid: u32) {
    loop {
        // SAFETY: `info` is a plain C struct the kernel fills; `pid` is our child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with a valid pointer; WNOWAIT leaves the child waitable.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// SIGKILL to the process group `pgid` (every process still in it).
pub(crate) fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

fn reap(child: &mut Child) -> Option<i32> {
    child.wait().ok().and_then(|s| s.code())
}
