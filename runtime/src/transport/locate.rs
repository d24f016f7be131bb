//! Finding a helper binary the transports start (the Monty worker, the
//! confinement launcher): the path the host passed, an environment variable,
//! or the file beside the current executable or in its parent directory (a
//! Rust binary and its `target/<profile>/deps/` tests).

use std::path::{Path, PathBuf};

/// The helper `name`: `explicit`, else `$env`, else beside the current
/// executable. `what` names it in the error.
pub(crate) fn find_binary(explicit: Option<&Path>, env: &str, name: &str, what: &str) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() { Ok(p.to_path_buf()) } else { Err(format!("{what} `{}` does not exist", p.display())) };
    }
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("`{env}` names a file that does not exist")) };
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!("{what} `{name}` was not found; set `{env}` to its path"))
}
