//! The launcher's side: inside the namespaces bubblewrap made, restrict
//! this process with Landlock and seccomp, then `exec` the handler, which
//! inherits both (they cannot be lifted). Runs in `harnessweaver-confine`.

use std::path::Path;

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch};

use super::policy::Policy;

/// Restricts the calling process to `policy` with Landlock (filesystem,
/// scopes) and seccomp (syscalls). Every part is a hard requirement: an
/// error means nothing may run.
pub fn restrict(policy: &Policy) -> Result<(), String> {
    landlock(policy)?;
    seccomp(policy)
}

fn landlock(policy: &Policy) -> Result<(), String> {
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
    let status = created.restrict_self().map_err(|e| fail("restrict", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err("Landlock: the ruleset is not fully enforced".into());
    }
    Ok(())
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
const AF_PACKET: u64 = 17;
const CLONE_THREAD: u64 = 0x0001_0000;
const CLONE_NEW_FLAGS: &[u64] = &[0x0000_0080, 0x0002_0000, 0x0200_0000, 0x0400_0000, 0x0800_0000, 0x1000_0000, 0x2000_0000, 0x4000_0000];

/// Syscalls no handler needs: tracing other processes, mounting, kernel
/// modules and keys, BPF, new namespaces, rebooting, raw I/O ports.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
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
];

fn arg_eq(index: u8, value: u64) -> Result<SeccompRule, String> {
    rule(vec![SeccompCondition::new(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value).map_err(|e| e.to_string())?])
}

fn arg_has(index: u8, bits: u64, value: u64) -> Result<SeccompRule, String> {
    rule(vec![SeccompCondition::new(index, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(bits), value).map_err(|e| e.to_string())?])
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

fn seccomp(policy: &Policy) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|s| (*s, Vec::new())).collect();
    // clone(2) asking for a new namespace; without `process`, any clone
    // that is not a thread (fork), and fork/vfork themselves.
    let mut clone_rules = CLONE_NEW_FLAGS.iter().map(|f| arg_has(0, *f, *f)).collect::<Result<Vec<_>, _>>()?;
    if !policy.process {
        clone_rules.push(arg_has(0, CLONE_THREAD, 0)?);
        rules.insert(libc::SYS_fork, Vec::new());
        rules.insert(libc::SYS_vfork, Vec::new());
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let mut socket_rules = Vec::new();
    if !policy.network_local {
        socket_rules.push(arg_eq(0, AF_UNIX)?);
    }
    if !policy.network {
        for family in [AF_INET, AF_INET6, AF_PACKET] {
            socket_rules.push(arg_eq(0, family)?);
        }
    }
    if !socket_rules.is_empty() {
        rules.insert(libc::SYS_socket, socket_rules);
    }
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(EPERM), arch).map_err(|e| format!("seccomp: {e}"))?;
    // clone3 passes its flags in memory a filter cannot read: it answers
    // ENOSYS, and the C library falls back to clone, which is checked.
    let clone3 = SeccompFilter::new([(libc::SYS_clone3, Vec::new())].into_iter().collect(), SeccompAction::Allow, SeccompAction::Errno(ENOSYS), arch)
        .map_err(|e| format!("seccomp: {e}"))?;
    for filter in [deny, clone3] {
        let program = BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))?;
        seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}
