//! Finding a helper binary the transports start (the Monty worker, the
//! confinement launcher): the path the host passed, an environment variable,
//! `bin/` beside the loaded library (an installed Python or npm package), or
//! the file beside the current executable or in its parent directory (a Rust
//! binary and its `target/<profile>/deps/` tests).

use std::path::{Path, PathBuf};

/// The helper `name`: `explicit`, else `$env`, else `bin/` beside the loaded
/// library, else beside the current executable. `what` names it in the
/// error, `build` says how a checkout builds it.
pub(crate) fn find_binary(explicit: Option<&Path>, env: &str, name: &str, what: &str, build: &str) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() { Ok(p.to_path_buf()) } else { Err(format!("{what} `{}` does not exist", p.display())) };
    }
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("`{env}` names a file that does not exist")) };
    }
    if let Some(candidate) = loaded_library_dir().map(|dir| dir.join("bin").join(name)) {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "{what} `{name}` was not found: an installed package carries it in `bin/` beside its native library, a checkout \
         builds it with `{build}`; or set `{env}` to its path"
    ))
}

/// The directory of the file this code was loaded from: the Python extension
/// module or the Node addon of an installed package (or the executable, for a
/// Rust binary). The mapping in `/proc/self/maps` that holds this function's
/// address names the file.
#[cfg(target_os = "linux")]
pub(crate) fn loaded_library_dir() -> Option<PathBuf> {
    let here = loaded_library_dir as *const () as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let file = maps.lines().find_map(|line| {
        // address range, perms, offset, device, inode, then the path after padding.
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        if !(start..end).contains(&here) {
            return None;
        }
        fields.nth(4).map(str::trim_start)
    })?;
    let file = Path::new(file);
    if file.is_absolute() {
        file.parent().map(Path::to_path_buf)
    } else {
        None
    }
}

/// Elsewhere no package carries the helpers yet: only the variable and the
/// executable's directory are looked at.
#[cfg(not(target_os = "linux"))]
pub(crate) fn loaded_library_dir() -> Option<PathBuf> {
    None
}
