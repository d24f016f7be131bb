//! Restricting a process to a [`Policy`]: Landlock (filesystem, scopes),
//! seccomp (system calls) and the capability sets, emptied.
//!
//! [`Prepared::new`] does the work that allocates (opening the paths,
//! building the Landlock ruleset, compiling the seccomp programs) once, in
//! the parent; [`Prepared::apply`] then makes only system calls, so it may
//! run between `fork` and `exec` (`Command::pre_exec`) of a multi-threaded
//! host, and the process it restricts passes the restriction to the
//! program it `exec`s (none of it can be lifted). The launcher
//! (`harnessweaver-confine`, inside bubblewrap's namespaces) uses the same
//! two steps on itself.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI};
use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch};

use super::policy::Policy;

/// Restricts the calling process to `policy` (the launcher's way: prepare
/// and apply in one go). Every part is a hard requirement: an error means
/// nothing may run.
pub fn restrict(policy: &Policy) -> Result<(), String> {
    let prepared = Prepared::new(policy)?;
    prepared.apply().map_err(|(what, e)| format!("{what}: {e}"))
}

/// A policy made ready to apply: the Landlock ruleset (its file
/// descriptor, close-on-exec) and the seccomp programs, compiled.
#[derive(Debug)]
pub struct Prepared {
    ruleset: OwnedFd,
    filters: Vec<BpfProgram>,
}

impl Prepared {
    /// Builds the ruleset and the filters of `policy`. Landlock rules hold
    /// the files they name as opened now: a path replaced later (a
    /// `write_paths` directory removed and made again) is no longer granted.
    pub fn new(policy: &Policy) -> Result<Prepared, String> {
        Ok(Prepared { ruleset: landlock(policy)?, filters: seccomp(policy)? })
    }

    /// Restricts the calling thread (and what it `exec`s): empties its
    /// capability sets (bounding, ambient, effective, permitted,
    /// inheritable), sets no-new-privileges, enforces the Landlock ruleset
    /// and installs the seccomp filters, in that order. Makes system calls
    /// only (no allocation, no lock), so it is safe between `fork` and
    /// `exec`. The error names the step.
    pub fn apply(&self) -> Result<(), (&'static str, std::io::Error)> {
        let os = std::io::Error::last_os_error;
        drop_capabilities().map_err(|what| (what, os()))?;
        // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) changes only this process's flag.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(("no_new_privs", os()));
        }
        // SAFETY: landlock_restrict_self(ruleset_fd, 0) with a ruleset fd we own.
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset.as_raw_fd(), 0u32) } != 0 {
            return Err(("Landlock: restrict", os()));
        }
        for program in &self.filters {
            if seccompiler::apply_filter(program).is_err() {
                return Err(("seccomp: install", os()));
            }
        }
        Ok(())
    }
}

/// The capability sets emptied: without them a handler running as root is
/// held by the files' owners and modes like any user, cannot reach other
/// users' processes, and does not regain capabilities by `exec`.
fn drop_capabilities() -> Result<(), &'static str> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capget(2) writes two data structs (version 3) into valid memory.
    if unsafe { libc::syscall(libc::SYS_capget, &header as *const Header, data.as_mut_ptr()) } != 0 {
        return Err("capabilities: capget");
    }
    // A process that holds no capability and is not root gains none by
    // exec under no_new_privs: its bounding set (which it may not lower
    // without CAP_SETPCAP) does not matter.
    // SAFETY: geteuid has no preconditions.
    let powerless = data.iter().all(|d| d.effective == 0 && d.permitted == 0) && unsafe { libc::geteuid() } != 0;
    for cap in 0..64 {
        // SAFETY: prctl reads or lowers this process's bounding set.
        let held = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) };
        if held < 0 {
            break; // past the kernel's last capability
        }
        // SAFETY: as above.
        if held == 1 && unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 && !powerless {
            return Err("capabilities: bounding set");
        }
    }
    // SAFETY: prctl clears this process's ambient set.
    if unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) } != 0 {
        return Err("capabilities: ambient set");
    }
    let empty = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset(2) reads the header and two data structs (version 3)
    // from valid memory; lowering one's own sets needs no privilege.
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, empty.as_ptr()) } != 0 {
        return Err("capabilities: capset");
    }
    Ok(())
}

fn landlock(policy: &Policy) -> Result<OwnedFd, String> {
    let abi = if policy.landlock_fs_abi >= 5 { ABI::V5 } else { ABI::V3 };
    let all = AccessFs::from_all(abi);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let exec = read | AccessFs::Execute;
    let write = AccessFs::WriteFile
        | AccessFs::Truncate
        | AccessFs::MakeReg
        | AccessFs::MakeDir
        | AccessFs::RemoveFile
        | AccessFs::RemoveDir
        | AccessFs::MakeSym
        | AccessFs::Refer;
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("Landlock: {what}: {e}");
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all).map_err(|e| fail("handled access", &e))?;
    if policy.landlock_scope {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(|e| fail("scopes", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("create", &e))?;
    for (paths, access) in [(&policy.exec, exec), (&policy.read, read), (&policy.write, write)] {
        for p in paths {
            let Some(access) = fit(p, access & all, abi) else { continue };
            let fd = PathFd::new(p).map_err(|e| fail(&format!("open `{}`", p.display()), &e))?;
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(|e| fail(&format!("rule for `{}`", p.display()), &e))?;
        }
    }
    // HardRequirement: every access and scope asked for is enforced, or
    // one of the calls above failed.
    Option::<OwnedFd>::from(created).ok_or_else(|| "Landlock: the kernel gave no ruleset".to_string())
}

/// `access` narrowed to what a file (not a directory) can hold; `None`
/// for a path that does not exist here (a baseline directory this system lacks).
fn fit(p: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<BitFlags<AccessFs>> {
    let meta = std::fs::metadata(p).ok()?;
    let access = if meta.is_dir() { access } else { access & AccessFs::from_file(abi) };
    (!access.is_empty()).then_some(access)
}

const EPERM: u32 = 1;
const ENOSYS: u32 = 38;
const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_NETLINK: u64 = 16;
const CLONE_THREAD: u64 = 0x0001_0000;
const CLONE_NEW_FLAGS: &[u64] = &[0x0000_0080, 0x0002_0000, 0x0200_0000, 0x0400_0000, 0x0800_0000, 0x1000_0000, 0x2000_0000, 0x4000_0000];
/// ioctl requests that type into, or take over, a terminal.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// Syscalls no handler needs: tracing other processes, mounting, kernel
/// modules and keys, BPF, new namespaces, rebooting, raw I/O ports;
/// io_uring (its operations open sockets and files out of seccomp's
/// sight); System V and POSIX message IPC (shared with every process of
/// the host's IPC namespace); changing files' modes, owners and extended
/// attributes (Landlock governs contents, not these); reaching
/// into another process (its file descriptors, its pages, its priority).
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
    libc::SYS_ioprio_set,
    libc::SYS_setpriority,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semctl,
    libc::SYS_semtimedop,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
];

/// Setting files' times: denied unless the policy grants some write path,
/// since writing a file sets its times (`touch`, `cp -p`, archive tools).
/// Landlock does not govern times, so a handler with a write grant can set
/// the times of any file it can name; a mode, an owner or an attribute it
/// still cannot change.
const TIMES: &[i64] = &[libc::SYS_utime, libc::SYS_utimes, libc::SYS_utimensat, libc::SYS_futimesat];

/// Syscalls that name a process by their first argument: allowed on the
/// caller itself (0), denied on any other.
const SELF_ONLY: &[i64] =
    &[libc::SYS_prlimit64, libc::SYS_sched_setaffinity, libc::SYS_sched_setscheduler, libc::SYS_sched_setparam, libc::SYS_sched_setattr];

fn cond(index: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(index, len, op, value).map_err(|e| e.to_string())
}

fn arg_eq(index: u8, value: u64) -> Result<SeccompRule, String> {
    rule(vec![cond(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)?])
}

fn arg_has(index: u8, bits: u64, value: u64) -> Result<SeccompRule, String> {
    rule(vec![cond(index, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(bits), value)?])
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

fn seccomp(policy: &Policy) -> Result<Vec<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|s| (*s, Vec::new())).collect();
    if policy.write.is_empty() {
        rules.extend(TIMES.iter().map(|s| (*s, Vec::new())));
    }
    // clone(2) asking for a new namespace; without `process`, any clone
    // that is not a thread (fork), and fork/vfork themselves.
    let mut clone_rules = CLONE_NEW_FLAGS.iter().map(|f| arg_has(0, *f, *f)).collect::<Result<Vec<_>, _>>()?;
    if !policy.process {
        clone_rules.push(arg_has(0, CLONE_THREAD, 0)?);
        rules.insert(libc::SYS_fork, Vec::new());
        rules.insert(libc::SYS_vfork, Vec::new());
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // socket(2): only the families granted (Unix for `network_local`; IP,
    // and netlink for the resolver, for `network`); every other family
    // (packet, raw netlink without `network`, vsock, …) is denied.
    let mut allowed = Vec::new();
    if policy.network_local {
        allowed.push(AF_UNIX);
    }
    if policy.network {
        allowed.extend([AF_INET, AF_INET6, AF_NETLINK]);
    }
    let socket_rules = if allowed.is_empty() {
        Vec::new()
    } else {
        vec![rule(allowed.iter().map(|f| cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *f)).collect::<Result<Vec<_>, _>>()?)?]
    };
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(libc::SYS_ioctl, vec![arg_eq(1, TIOCSTI)?, arg_eq(1, TIOCLINUX)?]);
    for call in SELF_ONLY {
        rules.insert(*call, vec![rule(vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0)?])?]);
    }
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(EPERM), arch).map_err(|e| format!("seccomp: {e}"))?;
    // clone3 passes its flags in memory a filter cannot read: it answers
    // ENOSYS, and the C library falls back to clone, which is checked.
    let clone3 = SeccompFilter::new([(libc::SYS_clone3, Vec::new())].into_iter().collect(), SeccompAction::Allow, SeccompAction::Errno(ENOSYS), arch)
        .map_err(|e| format!("seccomp: {e}"))?;
    [deny, clone3].into_iter().map(|f| BpfProgram::try_from(f).map_err(|e| format!("seccomp: {e}"))).collect()
}
