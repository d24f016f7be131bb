//! The `code` transport: the code in `code_arg` runs with the other
//! arguments as globals in the Monty interpreter, inside a worker process
//! (`harnessweaver-sandbox`, the `sandbox/` crate), never in the host (S4).
//!
//! # Limits
//!
//! `limits.timeout`, `limits.max_memory_mb` and `limits.max_output_bytes` are
//! enforced by Monty inside the worker (a Python-style `TimeoutError` /
//! `MemoryError`) and again from outside: the worker runs with `RLIMIT_AS`
//! sized from the memory limit and `RLIMIT_FSIZE` 0; this side kills a
//! worker that has not answered [`GRACE_MS`] after its time limit, or whose
//! answer grows past the output limit, and a worker that exits (its
//! allocator's hard ceiling) is reported as a `MemoryError`. A killed worker
//! is replaced by the next call.
//!
//! The worker starts with an empty environment in `/`; Monty itself has no
//! filesystem, network or environment API, and the worker answers none of
//! its OS calls.
//!
//! # Confinement
//!
//! So that a bug in Monty is not an escape, the worker runs under the OS
//! sandbox of process tools ([`super::confine`], [`Confinement::worker_command`]):
//! Landlock lets it read and execute only the system's libraries and
//! commands and its own binary (no `/etc`, `/home`, `/proc`, `/tmp`, no
//! write but `/dev/null`), seccomp denies every socket, fork, ptrace,
//! mount, io_uring…, and its capabilities are empty. A machine that cannot
//! confine it refuses code calls with `sandbox_unavailable`: the worker is
//! never started unconfined.
//!
//! # The pool
//!
//! Idle workers are kept per memory limit (their `RLIMIT_AS` differs) and
//! reused; each call takes one, so concurrent calls run in parallel. The
//! output is `{"value": <the final expression>, "stdout": "<print output>"}`.
//!
//! # Finding the worker
//!
//! [`find_worker`], in order: the path the host passed
//! ([`TransportOptions::sandbox_worker`](super::TransportOptions)); the
//! `HARNESSWEAVER_SANDBOX_WORKER` variable; `bin/harnessweaver-sandbox` beside
//! the shared library this code was loaded from (what an installed package
//! ships: the wheel in `harnessweaver/bin/` beside `_native.abi3.so`, the npm
//! platform package in `bin/` beside its `.node`); `harnessweaver-sandbox`
//! beside the current executable or in its parent directory (a Rust binary
//! and its `target/<profile>/deps/` tests).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use harnessweaver_core::governor::{InvokeOutcome, Ticket};
use harnessweaver_core::manifest::CodeLimits;

use super::confine::{self, Confinement, Mode, PreparedCache};

/// The worker binary's file name.
pub const WORKER_NAME: &str = if cfg!(windows) { "harnessweaver-sandbox.exe" } else { "harnessweaver-sandbox" };

/// The variable naming the worker binary.
pub const WORKER_ENV: &str = "HARNESSWEAVER_SANDBOX_WORKER";

/// How long past `limits.timeout` a worker may take to answer before it is killed.
pub const GRACE_MS: u64 = 1_000;

/// The exit status of a worker whose allocator hit its hard ceiling
/// (`monty_types::OOM_EXIT_CODE`).
const OOM_EXIT_CODE: i32 = 65;

/// One code tool's settings.
#[derive(Debug, Clone)]
pub struct CodeTool {
    /// The argument holding the code.
    pub code_arg: String,
    /// `limits`.
    pub limits: CodeLimits,
}

/// Where the worker binary is: `explicit`, then `HARNESSWEAVER_SANDBOX_WORKER`,
/// then `bin/` beside the loaded library (an installed package), then beside
/// the current executable or in its parent directory.
pub fn find_worker(explicit: Option<&Path>) -> Result<PathBuf, String> {
    super::locate::find_binary(explicit, WORKER_ENV, WORKER_NAME, "the sandbox worker", "make build-sandbox")
}

/// A running worker: its process, its stdin, and a thread reading its answers.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<Answer>,
    /// The byte cap of the next answer, read by the reader thread.
    cap: Arc<AtomicU64>,
}

enum Answer {
    Line(Vec<u8>),
    TooLarge,
    Closed,
}

/// Why no worker could be had: the confinement refused, or it did not start.
enum SpawnError {
    Refused(confine::Refusal),
    Failed(String),
}

impl SpawnError {
    fn into_outcome(self) -> InvokeOutcome {
        match self {
            SpawnError::Refused(refusal) => refusal.into_outcome(),
            SpawnError::Failed(message) => InvokeOutcome::SandboxError { message },
        }
    }
}

impl Worker {
    fn spawn(path: &Path, max_memory_mb: u64, confinement: &Confinement, cache: &PreparedCache) -> Result<Worker, SpawnError> {
        let args = ["--max-memory-mb".to_string(), max_memory_mb.to_string()];
        let launch = confinement.worker_command(path, &args, cache).map_err(SpawnError::Refused)?;
        let mut command = launch.command;
        let mut child =
            command.env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(|e| match launch.mode {
                Mode::Direct => SpawnError::Refused(confine::Refusal::Unavailable(format!(
                    "the sandbox worker could not be started under its confinement, so it did not run ({e})"
                ))),
                Mode::Namespaces => SpawnError::Failed(format!("the sandbox worker could not start ({})", e.kind())),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Failed("the sandbox worker has no pipes".into()));
        };
        let cap = Arc::new(AtomicU64::new(u64::MAX));
        let (tx, rx) = mpsc::channel();
        let reader_cap = cap.clone();
        let spawned = std::thread::Builder::new().name("harnessweaver-sandbox-reader".into()).spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let limit = reader_cap.load(Ordering::Relaxed);
                let mut line = Vec::new();
                match (&mut reader).take(limit.saturating_add(1)).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Answer::Closed);
                        return;
                    }
                    Ok(n) if n as u64 > limit => {
                        let _ = tx.send(Answer::TooLarge);
                        return;
                    }
                    Ok(_) if line.last() != Some(&b'\n') => {
                        let _ = tx.send(Answer::Closed);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Answer::Line(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        if spawned.is_err() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Failed("could not start a reader thread".into()));
        }
        Ok(Worker { child, stdin, answers: rx, cap })
    }

    fn kill(mut self) -> Option<i32> {
        let _ = self.child.kill();
        self.child.wait().ok().and_then(|s| s.code())
    }

    /// The exit code once the process has ended (waiting briefly).
    fn exit_code(mut self) -> Option<i32> {
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.code(),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return self.kill(),
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Warm workers, keyed by memory limit.
pub struct CodePool {
    explicit: Option<PathBuf>,
    confinement: Confinement,
    prepared: PreparedCache,
    worker: Mutex<Option<PathBuf>>,
    idle: Mutex<HashMap<u64, Vec<Worker>>>,
    keep: usize,
}

impl std::fmt::Debug for CodePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodePool").field("keep", &self.keep).finish()
    }
}

impl CodePool {
    /// A pool running `worker` (or the one [`find_worker`] finds) confined
    /// on this machine, keeping `keep` idle workers per memory limit (default 2).
    pub fn new(worker: Option<PathBuf>, keep: Option<usize>) -> CodePool {
        CodePool::confined_by(worker, keep, Confinement::new(None, None))
    }

    /// The same, confined by `confinement` (a simulated machine in tests,
    /// or the launcher the host named).
    pub fn confined_by(worker: Option<PathBuf>, keep: Option<usize>, confinement: Confinement) -> CodePool {
        CodePool {
            explicit: worker,
            confinement,
            prepared: PreparedCache::new(),
            worker: Mutex::new(None),
            idle: Mutex::new(HashMap::new()),
            keep: keep.unwrap_or(2),
        }
    }

    fn worker_path(&self) -> Result<PathBuf, SpawnError> {
        let mut cached = self.worker.lock().map_err(|_| SpawnError::Failed("the sandbox pool is unusable".to_string()))?;
        if let Some(p) = cached.as_ref() {
            return Ok(p.clone());
        }
        let found = find_worker(self.explicit.as_deref()).map_err(SpawnError::Failed)?;
        *cached = Some(found.clone());
        Ok(found)
    }

    fn take(&self, max_memory_mb: u64) -> Result<Worker, SpawnError> {
        if let Ok(mut idle) = self.idle.lock() {
            if let Some(w) = idle.get_mut(&max_memory_mb).and_then(Vec::pop) {
                return Ok(w);
            }
        }
        self.take_fresh(max_memory_mb)
    }

    fn give_back(&self, max_memory_mb: u64, worker: Worker) {
        if let Ok(mut idle) = self.idle.lock() {
            let list = idle.entry(max_memory_mb).or_default();
            if list.len() < self.keep {
                list.push(worker);
            }
        }
    }

    /// Starts one idle worker for `max_memory_mb` (so the first call is warm).
    pub fn warm(&self, max_memory_mb: u64) -> Result<(), String> {
        let w = self.take_fresh(max_memory_mb).map_err(|e| match e {
            SpawnError::Refused(r) => r.message().to_string(),
            SpawnError::Failed(m) => m,
        })?;
        self.give_back(max_memory_mb, w);
        Ok(())
    }

    /// Idle workers, for tests and stats.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().map(|i| i.values().map(Vec::len).sum()).unwrap_or(0)
    }

    /// Runs one call.
    pub fn invoke(&self, tool: &CodeTool, ticket: &Ticket) -> InvokeOutcome {
        let Some(args) = ticket.args.as_object() else {
            return InvokeOutcome::SandboxError { message: "the arguments must be an object".into() };
        };
        let code = match args.get(&tool.code_arg) {
            Some(Value::String(code)) => code.clone(),
            Some(_) => return InvokeOutcome::SandboxError { message: format!("argument `{}` must be a string of Python code", tool.code_arg) },
            None => return InvokeOutcome::SandboxError { message: format!("argument `{}` (the code) is missing", tool.code_arg) },
        };
        let globals: Map<String, Value> = args.iter().filter(|(k, _)| **k != tool.code_arg).map(|(k, v)| (k.clone(), v.clone())).collect();
        let limits = tool.limits;
        let request = json!({
            "code": code,
            "globals": globals,
            "timeout_ms": limits.timeout.ms,
            "max_memory_bytes": limits.max_memory_mb.saturating_mul(1024 * 1024),
            "max_output_bytes": limits.max_output_bytes,
        });
        let mut line = request.to_string();
        line.push('\n');

        let started = Instant::now();
        let mut worker = match self.take(limits.max_memory_mb) {
            Ok(w) => w,
            Err(e) => return e.into_outcome(),
        };
        // JSON escaping can grow text up to six times (`\u0000`).
        worker.cap.store(limits.max_output_bytes.saturating_mul(6).saturating_add(4096), Ordering::Relaxed);
        if worker.stdin.write_all(line.as_bytes()).and_then(|()| worker.stdin.flush()).is_err() {
            // A worker that died while idle: try once with a fresh one.
            drop(worker);
            worker = match self.take_fresh(limits.max_memory_mb) {
                Ok(w) => w,
                Err(e) => return e.into_outcome(),
            };
            worker.cap.store(limits.max_output_bytes.saturating_mul(6).saturating_add(4096), Ordering::Relaxed);
            if worker.stdin.write_all(line.as_bytes()).and_then(|()| worker.stdin.flush()).is_err() {
                return died(worker, &limits);
            }
        }
        let sandbox_deadline = started + Duration::from_millis(limits.timeout.ms.saturating_add(GRACE_MS));
        let call_deadline = started + Duration::from_millis(ticket.timeout_ms);
        let deadline = sandbox_deadline.min(call_deadline);
        match worker.answers.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Answer::Line(bytes)) => {
                let reply: Value = match serde_json::from_slice(&bytes) {
                    Ok(v) => v,
                    Err(_) => {
                        worker.kill();
                        return InvokeOutcome::SandboxError { message: "the sandbox worker sent an unreadable answer".into() };
                    }
                };
                if reply.get("error").is_some_and(Value::is_object) {
                    // Not the worker's answer (its errors are text) but the
                    // launcher's: it could not confine the worker.
                    worker.kill();
                    return confine::launcher_failure(&bytes);
                }
                self.give_back(limits.max_memory_mb, worker);
                if reply.get("ok") == Some(&Value::Bool(true)) {
                    let value = reply.get("value").cloned().unwrap_or(Value::Null);
                    let stdout = reply.get("stdout").cloned().unwrap_or_else(|| Value::String(String::new()));
                    InvokeOutcome::Returned(json!({"value": value, "stdout": stdout}))
                } else {
                    let message = reply.get("error").and_then(Value::as_str).unwrap_or("the code failed").to_string();
                    InvokeOutcome::SandboxError { message }
                }
            }
            Ok(Answer::TooLarge) => {
                worker.kill();
                InvokeOutcome::SandboxError {
                    message: format!("MemoryError: the output is larger than the limit of {} bytes; the worker was stopped", limits.max_output_bytes),
                }
            }
            Ok(Answer::Closed) | Err(RecvTimeoutError::Disconnected) => died(worker, &limits),
            Err(RecvTimeoutError::Timeout) => {
                worker.kill();
                if call_deadline <= sandbox_deadline {
                    InvokeOutcome::TimedOut
                } else {
                    InvokeOutcome::SandboxError {
                        message: format!("TimeoutError: the code ran longer than {} ms; the worker was stopped", limits.timeout.ms),
                    }
                }
            }
        }
    }

    fn take_fresh(&self, max_memory_mb: u64) -> Result<Worker, SpawnError> {
        Worker::spawn(&self.worker_path()?, max_memory_mb, &self.confinement, &self.prepared)
    }
}

/// The outcome for a worker that ended mid-call.
fn died(worker: Worker, limits: &CodeLimits) -> InvokeOutcome {
    match worker.exit_code() {
        Some(OOM_EXIT_CODE) | None => InvokeOutcome::SandboxError {
            message: format!("MemoryError: the code used more than {} MB; the worker was stopped", limits.max_memory_mb),
        },
        Some(code) => InvokeOutcome::SandboxError { message: format!("the sandbox worker stopped unexpectedly (exit status {code})") },
    }
}

#[cfg(test)]
mod tests {
    /// The mapping that holds this code is the test executable itself, so
    /// the lookup beside the loaded library names the executable's directory.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_loaded_library_is_the_file_holding_this_code() {
        let exe = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
        let dir = super::super::locate::loaded_library_dir().and_then(|p| p.canonicalize().ok());
        assert!(dir.is_some(), "no mapping holds this code");
        assert_eq!(dir, exe.and_then(|p| p.parent().map(std::path::Path::to_path_buf)));
    }
}
