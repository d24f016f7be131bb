//! `harnessweaver sandbox probe`: each mechanism as found on the host, then
//! two confined launches of the launcher itself (inside bubblewrap's
//! namespaces, and direct) that try, from inside, what the sandbox must deny
//! (reading `/etc/passwd`, an IP socket, a new namespace, fork, io_uring)
//! and report what happened and what capabilities are left.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{find_launcher, policy::Policy, Probe};

/// The launcher's `--probe` mode, run after the policy is applied: each
/// attempt and its errno (`denied`) or success.
pub(super) fn inside_checks() -> Value {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let verdict = |ok: bool, e: i32| if ok { "allowed".to_string() } else { format!("denied (errno {e})") };
    let read = std::fs::File::open("/etc/passwd");
    let read = verdict(read.is_ok(), read.err().and_then(|e| e.raw_os_error()).unwrap_or(0));
    // SAFETY: plain syscalls with constant arguments; the fd is closed.
    let (sock, sock_errno) = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let e = errno();
        if fd >= 0 {
            libc::close(fd);
        }
        (fd >= 0, e)
    };
    // SAFETY: unshare(2) with a flag; on success only this process changes.
    let (ns, ns_errno) = unsafe { (libc::unshare(libc::CLONE_NEWUSER) == 0, errno()) };
    // SAFETY: fork(2); a child exits at once and is reaped.
    let (fork, fork_errno) = unsafe {
        let pid = libc::fork();
        let e = errno();
        if pid == 0 {
            libc::_exit(0);
        }
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        (pid >= 0, e)
    };
    // SAFETY: io_uring_setup(1, params) with a zeroed params struct; the fd is closed.
    let (ring, ring_errno) = unsafe {
        let mut params = [0u8; 120];
        let fd = libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr());
        let e = errno();
        if fd >= 0 {
            libc::close(fd as i32);
        }
        (fd >= 0, e)
    };
    // SAFETY: prctl reads of the caller's own state.
    let (seccomp_mode, nnp) = unsafe { (libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0), libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)) };
    // SAFETY: as above; CAP_SYS_ADMIN is 21.
    let bounding_admin = unsafe { libc::prctl(libc::PR_CAPBSET_READ, 21, 0, 0, 0) } == 1;
    json!({
        "pid": std::process::id(),
        "read /etc/passwd": read,
        "socket(AF_INET)": verdict(sock, sock_errno),
        "unshare(CLONE_NEWUSER)": verdict(ns, ns_errno),
        "fork": verdict(fork, fork_errno),
        "io_uring_setup": verdict(ring, ring_errno),
        "seccomp_mode": seccomp_mode,
        "no_new_privs": nnp == 1,
        "cap_sys_admin_in_bounding_set": bounding_admin,
    })
}

/// The probe: the host's mechanisms and, when they are all there, what a
/// confined launch reports from inside. `ok` is false when anything is
/// missing or an attempt that must be denied was allowed.
pub fn probe_report(launcher: Option<&Path>) -> (Value, bool) {
    let probe = Probe::detect();
    let launcher = find_launcher(launcher);
    let bwrap_version = probe
        .bwrap
        .as_ref()
        .and_then(|b| Command::new(b).arg("--version").output().ok())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mut missing = probe.missing(true);
    if let Err(why) = &launcher {
        missing.push(format!("the launcher ({why})"));
    }
    let mut report = json!({
        "landlock_abi": probe.landlock_abi,
        "user_namespaces": probe.user_namespaces,
        "bubblewrap": probe.bwrap.as_ref().map(|b| b.display().to_string()),
        "bubblewrap_version": bwrap_version,
        "seccomp": probe.seccomp,
        "launcher": launcher.as_ref().map(|l| l.display().to_string()).ok(),
        "missing": missing,
        "confined_run": Value::Null,
    });
    let (Some(bwrap), Ok(launcher), true) = (&probe.bwrap, &launcher, missing.is_empty()) else {
        return (report, false);
    };
    let policy = Policy::baseline(probe.landlock_abi);
    let Ok(policy) = serde_json::to_string(&policy) else { return (report, false) };
    let namespaced = run_inside(
        Command::new(bwrap)
            .args(["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net"])
            .args(["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"])
            .arg(launcher)
            .args(["--policy", &policy, "--probe"]),
    );
    let direct = run_inside(Command::new(launcher).args(["--policy", &policy, "--probe"]));
    let ok = denied_everything(&namespaced) && denied_everything(&direct);
    if let Some(o) = report.as_object_mut() {
        o.insert("confined_run".into(), namespaced);
        o.insert("direct_run".into(), direct);
    }
    (report, ok)
}

/// What the launcher's `--probe` printed when `command` ran it.
fn run_inside(command: &mut Command) -> Value {
    match command.env_clear().stdin(Stdio::null()).output() {
        Ok(o) => serde_json::from_slice(&o.stdout).unwrap_or_else(|_| json!({"error": String::from_utf8_lossy(&o.stderr).trim().to_string()})),
        Err(e) => json!({"error": format!("the launch did not start: {e}")}),
    }
}

/// Whether every attempt in `inside` was denied and the process ran
/// filtered, without new privileges or capabilities.
fn denied_everything(inside: &Value) -> bool {
    let denied = |k: &str| inside.get(k).and_then(Value::as_str).is_some_and(|v| v.starts_with("denied"));
    ["read /etc/passwd", "socket(AF_INET)", "unshare(CLONE_NEWUSER)", "fork", "io_uring_setup"].iter().all(|k| denied(k))
        && inside.get("seccomp_mode").and_then(Value::as_i64) == Some(2)
        && inside.get("no_new_privs").and_then(Value::as_bool) == Some(true)
        && inside.get("cap_sys_admin_in_bounding_set").and_then(Value::as_bool) == Some(false)
}
