//! Workspace paths: the canonical target resolved at preparation, the same
//! resolution checked again at invocation, and files opened beneath their
//! root without following any link (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, or `O_NOFOLLOW` after a re-check where the kernel
//! has no `openat2`).

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Malformed (empty, NUL, invisible or bidirectional control characters): `invalid_args`.
    Invalid(String),
    /// It resolves outside the workspace (or a widened host directory), or through a link: `path_escape`.
    Escape(String),
    /// Its resolution changed since it was prepared: `path_changed`.
    Changed(String),
    /// It cannot be read or written (missing, not a file…): `handler_error`.
    Io(String),
}

/// A canonical target: the root it is beneath and its path relative to it
/// (no `.`, `..` or link component).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The canonical root (the workspace, or a `host_reads` directory).
    pub root: PathBuf,
    /// The canonical path relative to `root` (empty: the root itself).
    pub rel: PathBuf,
    /// The path as shown to approvers and audit: `rel` with `/`, or the
    /// absolute path for a host read.
    pub shown: String,
    /// Beneath a `host_reads` directory, not the workspace.
    pub host: bool,
}

impl Target {
    /// The absolute canonical path.
    pub fn absolute(&self) -> PathBuf {
        self.root.join(&self.rel)
    }

    /// The entry `name` of this directory.
    pub fn child(&self, name: &str) -> Target {
        let rel = self.rel.join(name);
        let shown = if self.shown == "." { name.to_string() } else { format!("{}/{name}", self.shown) };
        Target { root: self.root.clone(), rel, shown, host: self.host }
    }

    /// `rel` with `/` separators (what access rule globs match).
    pub fn rel_text(&self) -> String {
        self.rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
    }
}

/// Characters that make a path read differently from what it is: controls,
/// bidirectional overrides and isolates, zero-width characters.
fn is_deceptive(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{00AD}')
}

/// Resolves `given` (relative to `workspace`, or absolute beneath one of
/// `host_roots`) to its canonical target. Every existing ancestor is
/// resolved (links in parents are followed, then checked to stay beneath
/// the root); a final component that is a link is refused.
pub fn resolve(workspace: &Path, host_roots: &[PathBuf], given: &str) -> Result<Target, PathError> {
    if given.is_empty() {
        return Err(PathError::Invalid("the path is empty".into()));
    }
    if given.chars().any(is_deceptive) {
        return Err(PathError::Invalid("the path holds control, invisible or bidirectional formatting characters".into()));
    }
    let path = Path::new(given);
    let (root, relative) = if path.is_absolute() {
        let root = host_roots.iter().find(|r| path.starts_with(r)).ok_or_else(|| {
            PathError::Escape(format!(
                "`{given}` is an absolute path outside the workspace; only `spec.builtins.host_reads` directories may be named so"
            ))
        })?;
        (root.clone(), path.strip_prefix(root).unwrap_or(path).to_path_buf())
    } else {
        (workspace.to_path_buf(), path.to_path_buf())
    };
    // `..` is resolved lexically first: it may never climb above the root.
    let mut lexical: Vec<&std::ffi::OsStr> = Vec::new();
    for c in relative.components() {
        match c {
            Component::Normal(n) => lexical.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if lexical.pop().is_none() {
                    return Err(PathError::Escape(format!("`{given}` climbs out of the workspace with `..`")));
                }
            }
            Component::RootDir | Component::Prefix(_) => {}
        }
    }
    // Then the longest existing ancestor is canonicalised (following its
    // links) and the rest appended: the result must stay beneath the root.
    let mut existing = root.clone();
    let mut rest = Vec::new();
    for (i, part) in lexical.iter().enumerate() {
        let next = existing.join(part);
        match std::fs::symlink_metadata(&next) {
            Ok(_) => existing = next,
            Err(_) => {
                rest.extend(lexical.get(i..).unwrap_or_default().iter().copied());
                break;
            }
        }
    }
    let last_is_link = rest.is_empty() && !lexical.is_empty() && std::fs::symlink_metadata(&existing).is_ok_and(|m| m.file_type().is_symlink());
    if last_is_link {
        return Err(PathError::Escape(format!("`{given}` is a symbolic link; built-in tools never follow a link")));
    }
    let canonical = existing.canonicalize().map_err(|e| PathError::Io(format!("`{given}` cannot be resolved ({})", e.kind())))?;
    let Ok(rel_existing) = canonical.strip_prefix(&root) else {
        return Err(PathError::Escape(format!("`{given}` resolves outside the workspace through a link")));
    };
    let mut rel = rel_existing.to_path_buf();
    for part in rest {
        rel.push(part);
    }
    let shown = if path.is_absolute() {
        // The root itself is shown as it is, not with a trailing `/`.
        if rel.as_os_str().is_empty() {
            root.display().to_string()
        } else {
            root.join(&rel).display().to_string()
        }
    } else {
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
    };
    Ok(Target { root, rel, shown: if shown.is_empty() { ".".into() } else { shown }, host: path.is_absolute() })
}

/// Resolves `given` again at invocation and compares with what preparation
/// found: a different resolution fails closed (`path_changed`).
pub fn recheck(workspace: &Path, host_roots: &[PathBuf], given: &str, prepared: &Target) -> Result<(), PathError> {
    match resolve(workspace, host_roots, given) {
        Ok(now) if now == *prepared => Ok(()),
        Ok(now) => Err(PathError::Changed(format!("`{given}` resolved to `{}` when prepared and to `{}` now", prepared.shown, now.shown))),
        Err(PathError::Escape(why)) => Err(PathError::Changed(format!("the resolution of `{given}` changed since it was prepared: {why}"))),
        Err(other) => Err(other),
    }
}

/// How to open a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read an existing file.
    Read,
    /// Open a directory for listing.
    Directory,
    /// Create a new file; fails when one exists.
    CreateNew,
    /// Read and rewrite an existing file.
    ReadWrite,
}

/// Opens `target` beneath its root, following no link anywhere in the path.
#[cfg(unix)]
pub fn open(target: &Target, mode: OpenMode) -> Result<File, PathError> {
    use std::ffi::CString;
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;

    let root_c = CString::new(target.root.as_os_str().as_bytes()).map_err(|_| PathError::Invalid("the root holds a NUL byte".into()))?;
    let rel = if target.rel.as_os_str().is_empty() { Path::new(".") } else { target.rel.as_path() };
    let rel_c = CString::new(rel.as_os_str().as_bytes()).map_err(|_| PathError::Invalid("the path holds a NUL byte".into()))?;
    let flags = libc::O_CLOEXEC
        | libc::O_NOFOLLOW
        | match mode {
            OpenMode::Read => libc::O_RDONLY,
            OpenMode::Directory => libc::O_RDONLY | libc::O_DIRECTORY,
            OpenMode::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            OpenMode::ReadWrite => libc::O_RDWR,
        };
    // SAFETY: a valid C string and flags; the returned descriptor is checked.
    let root_fd = unsafe { libc::open(root_c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if root_fd < 0 {
        return Err(PathError::Io("the workspace cannot be opened".into()));
    }
    // SAFETY: root_fd is a descriptor we own.
    let root = unsafe { std::os::fd::OwnedFd::from_raw_fd(root_fd) };
    let fd = open_beneath(&root, &rel_c, flags)?;
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `openat2(root, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`.
#[cfg(target_os = "linux")]
fn open_beneath(root: &std::os::fd::OwnedFd, rel: &std::ffi::CStr, flags: i32) -> Result<i32, PathError> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    const RESOLVE_BENEATH: u64 = 0x08;
    // openat2 refuses a mode without O_CREAT.
    let mode = if flags & libc::O_CREAT != 0 { 0o644 } else { 0 };
    let how = OpenHow { flags: u64::from(flags.unsigned_abs()), mode, resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    // SAFETY: openat2 with a valid directory descriptor, C string and open_how of the size passed.
    let fd = unsafe { libc::syscall(libc::SYS_openat2, root.as_raw_fd(), rel.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>()) };
    if fd >= 0 {
        return i32::try_from(fd).map_err(|_| PathError::Io("bad descriptor".into()));
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOSYS) => open_nofollow(root, rel, flags),
        Some(libc::ELOOP | libc::EXDEV) => {
            Err(PathError::Changed("a component of the path became a link or left the workspace after it was prepared".into()))
        }
        _ => Err(io_error(&err)),
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn open_beneath(root: &std::os::fd::OwnedFd, rel: &std::ffi::CStr, flags: i32) -> Result<i32, PathError> {
    open_nofollow(root, rel, flags)
}

/// The fallback: `openat(root, rel, O_NOFOLLOW)` (the final component is
/// never followed; the parents were re-checked just before).
#[cfg(unix)]
fn open_nofollow(root: &std::os::fd::OwnedFd, rel: &std::ffi::CStr, flags: i32) -> Result<i32, PathError> {
    use std::os::fd::AsRawFd;
    // SAFETY: openat with a valid directory descriptor and C string.
    let fd = unsafe { libc::openat(root.as_raw_fd(), rel.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd >= 0 {
        return Ok(fd);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ELOOP) => Err(PathError::Changed("the file became a link after it was prepared".into())),
        _ => Err(io_error(&err)),
    }
}

fn io_error(err: &std::io::Error) -> PathError {
    PathError::Io(match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::AlreadyExists => "the file exists".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ if err.raw_os_error() == Some(libc::EISDIR) => "it is a directory".into(),
        _ if err.raw_os_error() == Some(libc::ENOTDIR) => "it is not a directory".into(),
        other => format!("{other}"),
    })
}

/// Where no `openat` exists, built-in file tools do not run.
#[cfg(not(unix))]
pub fn open(_target: &Target, _mode: OpenMode) -> Result<File, PathError> {
    Err(PathError::Io("built-in file tools need a Unix system".into()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hw-paths-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("ws/docs")).unwrap();
        std::fs::create_dir_all(d.join("outside")).unwrap();
        std::fs::write(d.join("outside/secret"), "s").unwrap();
        std::fs::write(d.join("ws/docs/a.md"), "a").unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn dotdot_never_escapes_and_stays_inside() {
        let d = tmp("dotdot");
        let ws = d.join("ws");
        assert!(matches!(resolve(&ws, &[], "../outside/secret"), Err(PathError::Escape(_))));
        assert!(matches!(resolve(&ws, &[], "docs/../../outside/secret"), Err(PathError::Escape(_))));
        assert_eq!(resolve(&ws, &[], "docs/../docs/./a.md").unwrap().shown, "docs/a.md");
        assert!(matches!(resolve(&ws, &[], "/etc/passwd"), Err(PathError::Escape(_))));
    }

    #[test]
    fn a_parent_link_out_of_the_workspace_is_an_escape_and_a_final_link_is_refused() {
        let d = tmp("links");
        let ws = d.join("ws");
        std::os::unix::fs::symlink(d.join("outside"), ws.join("out")).unwrap();
        std::os::unix::fs::symlink(d.join("outside/secret"), ws.join("s")).unwrap();
        assert!(matches!(resolve(&ws, &[], "out/secret"), Err(PathError::Escape(_))));
        assert!(matches!(resolve(&ws, &[], "s"), Err(PathError::Escape(_))));
        // The same operation on a real file succeeds.
        let t = resolve(&ws, &[], "docs/a.md").unwrap();
        assert!(open(&t, OpenMode::Read).is_ok());
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_recheck_is_refused_by_the_kernel() {
        let d = tmp("race");
        let ws = d.join("ws");
        let t = resolve(&ws, &[], "docs/a.md").unwrap();
        // The swap lands after the re-check: openat2 (or O_NOFOLLOW) still refuses.
        std::fs::rename(ws.join("docs"), ws.join("docs.old")).unwrap();
        std::fs::create_dir_all(d.join("outside/docs")).unwrap();
        std::fs::write(d.join("outside/docs/a.md"), "outside").unwrap();
        std::os::unix::fs::symlink(d.join("outside/docs"), ws.join("docs")).unwrap();
        assert!(matches!(recheck(&ws, &[], "docs/a.md", &t), Err(PathError::Changed(_))));
        assert!(matches!(open(&t, OpenMode::Read), Err(PathError::Changed(_))));
    }

    #[test]
    fn invisible_and_bidi_characters_are_refused() {
        let d = tmp("bidi");
        let ws = d.join("ws");
        assert!(matches!(resolve(&ws, &[], "docs/a\u{202E}dm.exe"), Err(PathError::Invalid(_))));
        assert!(matches!(resolve(&ws, &[], "do\u{200B}cs/a.md"), Err(PathError::Invalid(_))));
        assert!(matches!(resolve(&ws, &[], ""), Err(PathError::Invalid(_))));
    }
}
