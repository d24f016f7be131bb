//! The OS sandbox of `process` tools with `sandbox.required: true` (Linux).
//!
//! A confined call runs
//!
//! ```text
//! bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try [--unshare-net]
//!       --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc [--bind W W]…
//!   -- harnessweaver-confine --policy '<json>' -- COMMAND ARGS…
//! ```
//!
//! - **namespaces** (bubblewrap, Debian's `bubblewrap`): a PID namespace hides
//!   every other process (and its `/proc`) and ends every descendant when
//!   the call's process group is killed; without the `network` grant a
//!   network namespace of its own leaves only a dead loopback; IPC and UTS
//!   are private; the filesystem is mounted read-only but for `write_paths`.
//! - **Landlock** ([`apply`], crate `landlock`, ABI 3 or newer): the process
//!   may read and execute only the baseline (system libraries and commands,
//!   the command, its interpreter's prefix, `code_paths`), read the handler
//!   script, `read_paths` and a few devices, and write only `write_paths`;
//!   with ABI 6 abstract Unix sockets and signals are scoped to the sandbox.
//! - **seccomp** ([`apply`], crate `seccompiler`): ptrace, mount, kexec, bpf,
//!   keyctl, module loading, new namespaces… are `EPERM`; without `process`,
//!   fork (any clone that is not a thread) too; sockets of families not granted.
//!
//! There is no fallback: when a mechanism is missing the call is refused
//! before launch with `sandbox_unavailable`, naming it; when the policy
//! asks for a scope this kernel cannot enforce (`local_sockets` need Landlock
//! ABI 9; `network` needs ABI 6 to keep abstract sockets and signals in),
//! with `sandbox_unsupported_policy`.

mod apply;
mod policy;
mod probe;
mod selfcheck;

use std::path::{Path, PathBuf};
use std::process::Command;

use harnessweaver_core::governor::InvokeOutcome;
use harnessweaver_core::manifest::{Grant, ProcessSpec, ResolvedProcess};

pub use apply::restrict;
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
const SCOPE_ABI: u32 = 6;

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
}

/// What confined launches need: the launcher and the machine's mechanisms.
#[derive(Debug, Clone)]
pub struct Confinement {
    launcher: Result<PathBuf, String>,
    probe: Probe,
}

impl Confinement {
    /// The launcher found as [`find_launcher`] says, and `probe` (this
    /// machine's, [`Probe::current`], unless a test simulates another).
    pub fn new(launcher: Option<&Path>, probe: Option<Probe>) -> Self {
        Confinement { launcher: find_launcher(launcher), probe: probe.unwrap_or_else(|| Probe::current().clone()) }
    }

    /// The probe in use.
    pub fn probe(&self) -> &Probe {
        &self.probe
    }

    /// The launcher, or why there is none.
    pub fn launcher(&self) -> Result<&Path, &str> {
        self.launcher.as_deref().map_err(String::as_str)
    }

    /// Whether `spec`'s policy can be enforced here; the refusal names what is missing.
    pub fn check(&self, spec: &ProcessSpec) -> Result<(), Refusal> {
        let mut missing = self.probe.missing();
        if let Err(why) = &self.launcher {
            missing.push(format!("the launcher ({why})"));
        }
        if !missing.is_empty() {
            return Err(Refusal::Unavailable(format!(
                "the tool requires the OS sandbox, and this machine lacks: {}; it was not run unconfined",
                missing.join("; ")
            )));
        }
        let abi = self.probe.landlock_abi;
        let sb = &spec.sandbox;
        if !sb.local_sockets.is_empty() && abi < UNIX_SOCKET_ABI {
            return Err(Refusal::UnsupportedPolicy(format!(
                "`spec.sandbox.local_sockets` needs Landlock ABI {UNIX_SOCKET_ABI} to allow exact Unix socket paths; this kernel reports ABI {abi}"
            )));
        }
        if sb.grants(Grant::Network) && abi < SCOPE_ABI {
            return Err(Refusal::UnsupportedPolicy(format!(
                "the `network` grant needs Landlock ABI {SCOPE_ABI} to keep abstract Unix sockets and signals inside the sandbox; this kernel reports ABI {abi}"
            )));
        }
        Ok(())
    }

    /// The command that runs `spec` confined, or the refusal.
    pub fn command(&self, spec: &ProcessSpec, resolved: &ResolvedProcess) -> Result<Command, Refusal> {
        self.check(spec)?;
        let (Some(bwrap), Ok(launcher)) = (&self.probe.bwrap, &self.launcher) else {
            return Err(Refusal::Unavailable("bubblewrap or the launcher is missing".into()));
        };
        let policy = Policy::of(spec, resolved, self.probe.landlock_abi);
        let policy = serde_json::to_string(&policy).map_err(|_| Refusal::Unavailable("the policy could not be encoded".into()))?;
        let mut c = Command::new(bwrap);
        c.args(["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]);
        if !spec.sandbox.grants(Grant::Network) {
            c.arg("--unshare-net");
        }
        c.args(["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        for w in &resolved.write_paths {
            c.arg("--bind").arg(w).arg(w);
        }
        c.arg("--chdir").arg(&resolved.cwd);
        c.arg("--").arg(launcher).arg("--policy").arg(policy).arg("--").arg(&resolved.command).args(&spec.args);
        Ok(c)
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
