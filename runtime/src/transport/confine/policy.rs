//! The confinement policy of one process tool, as the launcher receives it:
//! which paths may be executed, read and written, and which grants hold. Built
//! from the manifest's resolved paths and a fixed baseline; passed to the
//! launcher as one JSON argument.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use harnessweaver_core::manifest::{Grant, ProcessSpec, ResolvedProcess};

/// The system directories every confined process may read and execute: the
/// loader, the shared libraries and the commands' standard libraries.
const BASELINE_EXEC: &[&str] = &["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache"];

/// Devices every confined process may read; `/dev/null` may also be written.
const BASELINE_READ: &[&str] = &["/dev/zero", "/dev/urandom", "/dev/random"];
const BASELINE_WRITE: &[&str] = &["/dev/null"];

/// What the launcher enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Readable and executable (files or directories).
    pub exec: Vec<PathBuf>,
    /// Readable only.
    pub read: Vec<PathBuf>,
    /// Writable only (write does not imply read).
    pub write: Vec<PathBuf>,
    /// IP networking (the host's network namespace).
    pub network: bool,
    /// Unix sockets (`local_sockets`).
    pub network_local: bool,
    /// Starting child processes.
    pub process: bool,
    /// The Landlock ABI of the filesystem rules (3 or 5).
    pub landlock_fs_abi: u32,
    /// Whether to scope abstract Unix sockets and signals (Landlock ABI 6).
    pub landlock_scope: bool,
}

impl Policy {
    /// The policy of `spec`, whose paths were resolved at load, for a kernel
    /// with Landlock ABI `abi`.
    pub fn of(spec: &ProcessSpec, resolved: &ResolvedProcess, abi: u32) -> Policy {
        let sb = &spec.sandbox;
        let mut exec: Vec<PathBuf> = BASELINE_EXEC.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
        exec.push(resolved.command.clone());
        if let Some(prefix) = interpreter_prefix(&resolved.command) {
            exec.push(prefix);
        }
        exec.extend(resolved.code_paths.iter().cloned());
        let mut read: Vec<PathBuf> = BASELINE_READ.iter().map(PathBuf::from).collect();
        read.extend(resolved.arg_files.iter().cloned());
        read.extend(resolved.read_paths.iter().cloned());
        let mut write: Vec<PathBuf> = BASELINE_WRITE.iter().map(PathBuf::from).collect();
        write.extend(resolved.write_paths.iter().cloned());
        Policy {
            exec: dedup(exec),
            read: dedup(read),
            write: dedup(write),
            network: sb.grants(Grant::Network),
            network_local: sb.grants(Grant::NetworkLocal),
            process: sb.grants(Grant::Process),
            landlock_fs_abi: if abi >= 5 { 5 } else { 3 },
            landlock_scope: abi >= 6,
        }
    }
}

impl Policy {
    /// The `code` transport's worker: the baseline and the worker binary,
    /// nothing else (no grant).
    pub fn worker(worker: &Path, abi: u32) -> Policy {
        let mut policy = Policy::baseline(abi);
        policy.exec.push(worker.to_path_buf());
        policy
    }

    /// The baseline alone, no grant: what `sandbox probe` runs under.
    pub fn baseline(abi: u32) -> Policy {
        Policy {
            exec: BASELINE_EXEC.iter().map(PathBuf::from).filter(|p| p.exists()).collect(),
            read: BASELINE_READ.iter().map(PathBuf::from).collect(),
            write: BASELINE_WRITE.iter().map(PathBuf::from).collect(),
            landlock_fs_abi: if abi >= 5 { 5 } else { 3 },
            landlock_scope: abi >= 6,
            ..Policy::default()
        }
    }
}

/// The installation prefix of an interpreter outside the system
/// directories (`/opt/python3.12` for `/opt/python3.12/bin/python3`), where
/// its standard library lives. `None` for a command in the baseline.
fn interpreter_prefix(command: &Path) -> Option<PathBuf> {
    let real = command.canonicalize().ok()?;
    if BASELINE_EXEC.iter().any(|b| real.starts_with(b)) {
        return None;
    }
    let bin = real.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    bin.parent().filter(|p| p.parent().is_some()).map(Path::to_path_buf)
}

fn dedup(mut v: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    v.retain(|p| seen.insert(p.clone()));
    v
}
