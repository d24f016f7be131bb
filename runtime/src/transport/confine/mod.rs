//! The OS sandbox of `process` tools with `sandbox.required: true`, and of
//! the `code` transport's worker (Linux).
//!
//! Every confined process gets the same three restrictions, built from a
//! [`Policy`] by [`Prepared`] (in [`apply`]):
//!
//! - **Landlock** (crate `landlock`, ABI 3 or newer): the process may read
//!   and execute only the baseline (system libraries and commands, the
//!   command, its interpreter's prefix, `code_paths`), read the handler
//!   script, `read_paths` and a few devices, and write only `write_paths`;
//!   with ABI 6 abstract Unix sockets and signals are scoped to the sandbox.
//! - **seccomp** (crate `seccompiler`): ptrace, mount, kexec, bpf, keyctl,
//!   module loading, new namespaces, io_uring, System V IPC, changes of
//!   files' modes, owners and attributes, reaching into other processes…
//!   are `EPERM`; without `process`, fork (any clone that is not a thread)
//!   too; sockets of families not granted.
//! - **capabilities**: every set emptied, so a handler started by root
//!   holds no privilege.
//!
//! They are applied in one of two ways ([`Mode`]):
//!
//! - **direct** (the default where it suffices): between `fork` and `exec`
//!   of the handler itself, no extra process. It needs Landlock ABI 6 (so
//!   signals stay inside) and a policy without the `process` grant (so the
//!   handler has no descendants to outlive a process-group kill).
//! - **namespaces** (the `process` grant, `profile: namespaces`, or Landlock
//!   older than ABI 6): bubblewrap (Debian's `bubblewrap`) makes user, PID,
//!   IPC, UTS and, without `network`, network namespaces and a read-only
//!   root, then the launcher `harnessweaver-confine` applies the same
//!   policy to itself and `exec`s the handler:
//!
//! ```text
//! bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try [--unshare-net]
//!       --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc [--bind W W]…
//!   -- harnessweaver-confine --policy '<json>' -- COMMAND ARGS…
//! ```
//!
//! There is no fallback: when a mechanism is missing the call is refused
//! before launch with `sandbox_unavailable`, naming it; when the policy
//! asks for a scope this kernel cannot enforce (`network_local` needs
//! Landlock ABI 9 to allow exact Unix socket paths; `network` needs ABI 6
//! to keep abstract sockets and signals in), with
//! `sandbox_unsupported_policy`.

mod apply;
mod policy;
mod probe;
mod selfcheck;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use harnessweaver_core::governor::InvokeOutcome;
use harnessweaver_core::manifest::{Grant, ProcessSpec, ResolvedProcess};

pub use apply::{restrict, Prepared};
pub use policy::Policy;
pub use probe::{Probe, MIN_LANDLOCK_ABI};
pub use selfcheck::probe_report;

/// The launcher binary's file name.
pub const LAUNCHER_NAME: &str = "harnessweaver-confine";

/// The variable naming the launcher binary.
pub const LAUNCHER_ENV: &str = "HARNESSWEAVER_CONFINE";

/// The Landlock ABI that scopes exact Unix socket paths.
const UNIX_SOCKET_ABI: u32 = 9;

/// The Landlock ABI that scopes abstract Unix sockets and signals.
pub const SCOPE_ABI: u32 = 6;

/// The profile that always adds bubblewrap's namespaces.
pub const NAMESPACES_PROFILE: &str = "namespaces";

/// How a confined process is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Landlock, seccomp and empty capabilities applied between `fork` and
    /// `exec` of the process itself.
    Direct,
    /// The same inside bubblewrap's namespaces, through the launcher.
    Namespaces,
}

impl Mode {
    /// The mode's name, for reports and benchmarks.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Namespaces => "namespaces",
        }
    }
}

/// Why a confined call was refused before launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A mechanism is missing (`sandbox_unavailable`).
    Unavailable(String),
    /// The policy cannot be enforced here (`sandbox_unsupported_policy`).
    UnsupportedPolicy(String),
}

impl Refusal {
    /// The outcome the governor maps to the refusal code.
    pub fn into_outcome(self) -> InvokeOutcome {
        match self {
            Refusal::Unavailable(message) => InvokeOutcome::SandboxUnavailable { message },
            Refusal::UnsupportedPolicy(message) => InvokeOutcome::SandboxUnsupportedPolicy { message },
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Unavailable(m) | Refusal::UnsupportedPolicy(m) => m,
        }
    }
}

/// A [`Prepared`] policy made once per tool (or worker pool) and reused by
/// every direct launch; the error says why it could not be made.
pub type PreparedCache = OnceLock<Result<Arc<Prepared>, String>>;

/// A confined command ready to spawn, and how it is confined.
#[derive(Debug)]
pub struct Launch {
    /// The command (the handler itself, or bubblewrap).
    pub command: Command,
    /// How it is confined.
    pub mode: Mode,
}

/// What confined launches need: the launcher (looked for on first need)
/// and the machine's mechanisms.
#[derive(Debug, Clone)]
pub struct Confinement {
    explicit_launcher: Option<PathBuf>,
    launcher: OnceLock<Result<PathBuf, String>>,
    probe: Probe,
}

impl Confinement {
    /// The launcher found as [`find_launcher`] says (when a launch first
    /// needs it), and `probe` (this machine's, [`Probe::current`], unless a
    /// test simulates another).
    pub fn new(launcher: Option<&Path>, probe: Option<Probe>) -> Self {
        Confinement {
            explicit_launcher: launcher.map(Path::to_path_buf),
            launcher: OnceLock::new(),
            probe: probe.unwrap_or_else(|| Probe::current().clone()),
        }
    }

    /// The probe in use.
    pub fn probe(&self) -> &Probe {
        &self.probe
    }

    /// The launcher, or why there is none.
    pub fn launcher(&self) -> Result<&Path, &str> {
        self.launcher.get_or_init(|| find_launcher(self.explicit_launcher.as_deref())).as_deref().map_err(String::as_str)
    }

    /// How a process with `policy` (and `profile`) is confined here.
    pub fn mode(&self, policy: &Policy, profile: &str) -> Mode {
        if profile == NAMESPACES_PROFILE || policy.process || self.probe.landlock_abi < SCOPE_ABI {
            Mode::Namespaces
        } else {
            Mode::Direct
        }
    }

    /// What `mode` needs that this machine lacks, each named.
    fn missing(&self, mode: Mode) -> Vec<String> {
        let mut missing = self.probe.missing(mode == Mode::Namespaces);
        if mode == Mode::Namespaces {
            if let Err(why) = self.launcher() {
                missing.push(format!("the launcher ({why})"));
            }
        }
        missing
    }

    /// Whether `spec`'s policy can be enforced here; the refusal names what is missing.
    pub fn check(&self, spec: &ProcessSpec) -> Result<Mode, Refusal> {
        let sb = &spec.sandbox;
        let mode = self.mode(&Policy { process: sb.grants(Grant::Process), ..Policy::default() }, &sb.profile);
        let missing = self.missing(mode);
        if !missing.is_empty() {
            return Err(Refusal::Unavailable(format!(
                "the tool requires the OS sandbox, and this machine lacks: {}; it was not run unconfined",
                missing.join("; ")
            )));
        }
        let abi = self.probe.landlock_abi;
        if sb.grants(Grant::NetworkLocal) && abi < UNIX_SOCKET_ABI {
            return Err(Refusal::UnsupportedPolicy(format!(
                "the `network_local` grant (`spec.sandbox.local_sockets`) needs Landlock ABI {UNIX_SOCKET_ABI} to allow exact Unix socket paths; this kernel reports ABI {abi}"
            )));
        }
        if sb.grants(Grant::Network) && abi < SCOPE_ABI {
            return Err(Refusal::UnsupportedPolicy(format!(
                "the `network` grant needs Landlock ABI {SCOPE_ABI} to keep abstract Unix sockets and signals inside the sandbox; this kernel reports ABI {abi}"
            )));
        }
        Ok(mode)
    }

    /// The command that runs `spec` confined, or the refusal. A direct
    /// launch uses (and fills) `cache`.
    pub fn command(&self, spec: &ProcessSpec, resolved: &ResolvedProcess, cache: &PreparedCache) -> Result<Launch, Refusal> {
        let mode = self.check(spec)?;
        let policy = Policy::of(spec, resolved, self.probe.landlock_abi);
        self.launch(mode, &policy, &resolved.command, &spec.args, &resolved.cwd, &resolved.write_paths, cache)
    }

    /// The command that runs the `code` transport's worker confined: no
    /// network, no file beyond the baseline and the worker itself, no
    /// descendants. A machine that cannot confine it refuses the call.
    pub fn worker_command(&self, worker: &Path, args: &[String], cache: &PreparedCache) -> Result<Launch, Refusal> {
        let policy = Policy::worker(worker, self.probe.landlock_abi);
        let mode = self.mode(&policy, "default");
        let missing = self.missing(mode);
        if !missing.is_empty() {
            return Err(Refusal::Unavailable(format!(
                "the code sandbox's worker runs only confined, and this machine lacks: {}; it was not run unconfined",
                missing.join("; ")
            )));
        }
        self.launch(mode, &policy, worker, args, Path::new("/"), &[], cache)
    }

    #[expect(clippy::too_many_arguments, reason = "one launch's parts, each named")]
    fn launch(
        &self,
        mode: Mode,
        policy: &Policy,
        program: &Path,
        args: &[String],
        cwd: &Path,
        write_paths: &[PathBuf],
        cache: &PreparedCache,
    ) -> Result<Launch, Refusal> {
        if mode == Mode::Direct {
            let prepared = cache
                .get_or_init(|| Prepared::new(policy).map(Arc::new))
                .clone()
                .map_err(|why| Refusal::Unavailable(format!("the process could not be confined, so it was not run: {why}")))?;
            let mut c = Command::new(program);
            c.args(args).current_dir(cwd);
            use std::os::unix::process::CommandExt;
            // SAFETY: `apply` makes system calls only (no allocation, no
            // lock), which is what may run between fork and exec.
            unsafe {
                c.pre_exec(move || prepared.apply().map_err(|(_, e)| e));
            }
            return Ok(Launch { command: c, mode });
        }
        let (Some(bwrap), Ok(launcher)) = (&self.probe.bwrap, self.launcher()) else {
            return Err(Refusal::Unavailable("bubblewrap or the launcher is missing".into()));
        };
        let encoded = serde_json::to_string(policy).map_err(|_| Refusal::Unavailable("the policy could not be encoded".into()))?;
        let mut c = Command::new(bwrap);
        c.args(["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]);
        if !policy.network {
            c.arg("--unshare-net");
        }
        c.args(["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        for w in write_paths {
            c.arg("--bind").arg(w).arg(w);
        }
        c.arg("--chdir").arg(cwd);
        c.arg("--").arg(launcher).arg("--policy").arg(encoded).arg("--").arg(program).args(args);
        c.current_dir(cwd);
        Ok(Launch { command: c, mode })
    }
}

/// [`LAUNCHER_NAME`]: `explicit`, else `$HARNESSWEAVER_CONFINE`, else beside
/// the current executable (or in its parent directory).
pub fn find_launcher(explicit: Option<&Path>) -> Result<PathBuf, String> {
    super::locate::find_binary(
        explicit,
        LAUNCHER_ENV,
        LAUNCHER_NAME,
        "the confinement launcher",
        "cargo build -p harnessweaver-runtime --bin harnessweaver-confine",
    )
}

/// The outcome of a launcher that exited with
/// [`CONFINE_FAILED_EXIT`](super::process::CONFINE_FAILED_EXIT): its reason is
/// the protocol error it printed.
pub fn launcher_failure(stdout: &[u8]) -> InvokeOutcome {
    let reason = serde_json::from_slice::<serde_json::Value>(stdout)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_string))
        .unwrap_or_else(|| "the launcher gave no reason".into());
    InvokeOutcome::SandboxUnavailable { message: format!("the process could not be confined, so it was not run: {reason}") }
}

/// The launcher's `main`: `--policy JSON -- COMMAND ARGS…`. Applies the
/// policy to itself and becomes COMMAND; on any failure prints a protocol
/// error naming it and exits with
/// [`CONFINE_FAILED_EXIT`](super::process::CONFINE_FAILED_EXIT).
pub fn launcher_main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    use std::os::unix::process::CommandExt;
    let fail = |why: String| {
        let body = serde_json::json!({"ok": false, "error": {"code": "sandbox_unavailable", "message": why}});
        println!("{body}");
        std::process::ExitCode::from(super::process::CONFINE_FAILED_EXIT as u8)
    };
    let usage = "usage: harnessweaver-confine --policy JSON (-- COMMAND ARGS… | --probe)";
    let mut it = args.into_iter().skip(1);
    let (Some(flag), Some(policy), Some(sep)) = (it.next(), it.next(), it.next()) else {
        return fail(usage.into());
    };
    if flag != "--policy" || (sep != "--" && sep != "--probe") {
        return fail(usage.into());
    }
    let policy: Policy = match serde_json::from_str(&policy.to_string_lossy()) {
        Ok(p) => p,
        Err(e) => return fail(format!("unreadable policy: {e}")),
    };
    if sep == "--probe" {
        if let Err(why) = restrict(&policy) {
            return fail(why);
        }
        println!("{}", selfcheck::inside_checks());
        return std::process::ExitCode::SUCCESS;
    }
    let Some(command) = it.next() else { return fail("no command".into()) };
    if let Err(why) = restrict(&policy) {
        return fail(why);
    }
    // bubblewrap sets PWD; the handler's environment is the transport's alone.
    let err = Command::new(&command).args(it).env_remove("PWD").exec();
    fail(format!("cannot execute `{}`: {}", command.to_string_lossy(), err.kind()))
}
