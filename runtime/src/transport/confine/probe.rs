//! What this machine offers for confinement: the Landlock ABI the kernel
//! reports, whether user namespaces can be made, bubblewrap, seccomp, and the
//! launcher. Read once per process ([`Probe::current`]); tests pass a probe
//! of their own to simulate a machine that lacks a mechanism.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The lowest Landlock ABI the sandbox accepts (ABI 3 adds `truncate`).
pub const MIN_LANDLOCK_ABI: u32 = 3;

/// Where bubblewrap is looked for (the host's `PATH` is not read).
const BWRAP_PATHS: &[&str] = &["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];

/// The mechanisms found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The Landlock ABI the kernel reports (0: none).
    pub landlock_abi: u32,
    /// Whether user namespaces may be created (`user.max_user_namespaces` > 0).
    pub user_namespaces: bool,
    /// The bubblewrap executable.
    pub bwrap: Option<PathBuf>,
    /// Whether the kernel has seccomp filters.
    pub seccomp: bool,
}

impl Probe {
    /// This machine, read once.
    pub fn current() -> &'static Probe {
        static PROBE: OnceLock<Probe> = OnceLock::new();
        PROBE.get_or_init(Probe::detect)
    }

    /// Reads the machine now.
    pub fn detect() -> Probe {
        Probe { landlock_abi: landlock_abi(), user_namespaces: user_namespaces(), bwrap: find_bwrap(), seccomp: seccomp() }
    }

    /// What is missing for a confined launch, each named; empty when
    /// nothing is. `namespaces`: the launch also needs bubblewrap's
    /// namespaces (user namespaces and bubblewrap itself).
    pub fn missing(&self, namespaces: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.landlock_abi < MIN_LANDLOCK_ABI {
            out.push(if self.landlock_abi == 0 {
                format!("Landlock (the kernel has none enabled; ABI {MIN_LANDLOCK_ABI} or newer is needed)")
            } else {
                format!("Landlock ABI {MIN_LANDLOCK_ABI} (the kernel reports ABI {})", self.landlock_abi)
            });
        }
        if namespaces && !self.user_namespaces {
            out.push("user namespaces (`user.max_user_namespaces` is 0)".into());
        }
        if namespaces && self.bwrap.is_none() {
            out.push(format!("bubblewrap (no `bwrap` in {}; install the `bubblewrap` package)", BWRAP_PATHS.join(", ")));
        }
        if !self.seccomp {
            out.push("seccomp filters".into());
        }
        out
    }
}

fn landlock_abi() -> u32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only returns the ABI version; nothing is read or written.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    u32::try_from(v).unwrap_or(0)
}

fn user_namespaces() -> bool {
    std::fs::read_to_string("/proc/sys/user/max_user_namespaces").ok().and_then(|s| s.trim().parse::<u64>().ok()).is_some_and(|n| n > 0)
}

fn find_bwrap() -> Option<PathBuf> {
    BWRAP_PATHS.iter().map(PathBuf::from).find(|p| p.is_file())
}

fn seccomp() -> bool {
    // SAFETY: prctl(PR_GET_SECCOMP) reads the caller's mode; EINVAL when the
    // kernel has no seccomp.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    r >= 0
}
