//! The `command` secret source (issue 21): `spec.secrets.NAME: {command:
//! [PROGRAM, ARG…], timeout: 10s}` asks a secret manager's CLI for a value at
//! each call. The program runs without a shell (argv only), in the harness's
//! directory, with the host's environment (a secret manager's CLI reads its
//! own credentials from it), stdin closed, in a process group of its own
//! that is killed at the timeout. Its stdout is the value (the core trims
//! it); its stderr is never shown, since it may hold the secret.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use harnessweaver_core::manifest::COMMAND_SEARCH_PATH;

/// The most bytes of stdout read from a secret command.
const MAX_SECRET_BYTES: u64 = 65_536;

/// A bare name on the fixed search path, else a path relative to `dir`.
fn program(arg0: &str, dir: &Path) -> Option<PathBuf> {
    if arg0.contains('/') {
        let p = dir.join(arg0);
        return p.is_file().then_some(p);
    }
    COMMAND_SEARCH_PATH.iter().map(|d| Path::new(d).join(arg0)).find(|p| p.is_file())
}

/// Runs `argv` and returns its stdout as text, or why there is none (the
/// program, never its output).
pub(super) fn run(argv: &[String], dir: &Path, timeout_ms: u64) -> Result<String, String> {
    let Some((arg0, rest)) = argv.split_first() else { return Err("its command is empty".into()) };
    let Some(exe) = program(arg0, dir) else {
        return Err(format!(
            "its command `{arg0}` was not found (a bare name is looked up in {}; give a path otherwise, relative to harness.yaml or absolute)",
            COMMAND_SEARCH_PATH.join(":")
        ));
    };
    let mut cmd = Command::new(&exe);
    cmd.args(rest).current_dir(dir);
    let done = super::builtin::run_captured(cmd, Duration::from_millis(timeout_ms), MAX_SECRET_BYTES)
        .map_err(|why| format!("its command `{arg0}` could not be run: {why}"))?
        .ok_or_else(|| format!("its command `{arg0}` took longer than {timeout_ms} ms and was stopped; raise `timeout` or check the command"))?;
    match done.status {
        Some(0) => {}
        Some(code) => return Err(format!("its command `{arg0}` exited with status {code}; run it by hand to see its error")),
        None => return Err(format!("its command `{arg0}` was killed by a signal")),
    }
    if done.truncated {
        return Err(format!("its command `{arg0}` printed more than {MAX_SECRET_BYTES} bytes"));
    }
    String::from_utf8(done.stdout).map_err(|_| format!("its command `{arg0}` printed bytes that are not UTF-8"))
}
