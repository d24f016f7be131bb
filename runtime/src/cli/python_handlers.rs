//! `doctor`'s check of the Python handlers (issue 18, item 5): every
//! manifest's `handler: module:function` imported the way `load()` imports
//! it, in a child Python process (a handler module may do anything when
//! imported, so never in the doctor's own process), with each failure
//! reported as `load()` would report it: `handler_import_failed` at the
//! manifest's `spec.handler`, file:line:column.
//!
//! Which Python: `HARNESSWEAVER_PYTHON`, which the Python package's
//! `harnessweaver` command sets to its own interpreter. Run from npm or the
//! Rust binary, no Python is named and nothing is imported (a Node
//! manifest's `handler` is not a Python module).

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use harnessweaver_core::harness::Harness;
use harnessweaver_core::host::{handler_ref_problems, HandlerMode, HandlerRef, HandlerResolver, Resolved};
use harnessweaver_core::Problem;

/// The variable naming the Python that imports the handlers.
pub(crate) const PYTHON_VAR: &str = "HARNESSWEAVER_PYTHON";

/// How long the imports of one harness may take.
const IMPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// Imports each ref with the package's own resolver (`_governor._resolve`)
/// and prints, as one JSON document on the real stdout, what it found; what
/// the imported modules print goes to stderr.
const SCRIPT: &str = r#"
import json, sys
out, sys.stdout = sys.stdout, sys.stderr
from harnessweaver import _governor as g
found = []
for module, attrs, base in json.loads(sys.stdin.read()):
    try:
        (_, _, takes, _), origin, modules = g._resolve(module, attrs, base)
        found.append({"origin": origin, "modules": modules, "takes_key": takes})
    except BaseException as exc:
        found.append({"error": "%s: %s" % (type(exc).__name__, exc)})
out.write(json.dumps({"roots": g._roots(), "found": found}))
"#;

/// What the check found: the problems, or why it could not run.
pub(crate) enum Checked {
    /// No Python named, or no handler ref to import.
    Skipped,
    /// The problems (none: every handler imports).
    Done(Vec<Problem>),
    /// The child Python failed; a warning, not a problem of the harness.
    Unavailable(String),
}

/// Records the refs the core asks for, answering nothing.
struct Recorder(Vec<Value>);

impl HandlerResolver for Recorder {
    fn package_roots(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    fn resolve(&mut self, r: &HandlerRef<'_>) -> Result<Resolved, String> {
        self.0.push(json!([r.module, r.attrs, r.base_dir]));
        Err(String::new())
    }
}

/// Answers the refs, in the same order, from the child's findings.
struct Answers {
    roots: Vec<PathBuf>,
    found: std::vec::IntoIter<Value>,
}

impl HandlerResolver for Answers {
    fn package_roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    fn resolve(&mut self, _: &HandlerRef<'_>) -> Result<Resolved, String> {
        let found = self.found.next().unwrap_or(Value::Null);
        if let Some(error) = found.get("error").and_then(Value::as_str) {
            return Err(error.to_string());
        }
        Ok(Resolved {
            origin: found.get("origin").and_then(Value::as_str).map(PathBuf::from),
            modules_in_path: found
                .get("modules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect(),
            mode: HandlerMode::CallerThread,
            takes_idempotency_key: found.get("takes_key").and_then(Value::as_bool).unwrap_or(false),
            takes_progress: false,
        })
    }
}

/// Imports the harness's Python handlers in a child process.
pub(crate) fn check(harness: &Harness) -> Checked {
    let Some(python) = std::env::var_os(PYTHON_VAR).filter(|p| !p.is_empty()) else {
        return Checked::Skipped;
    };
    let mut recorder = Recorder(Vec::new());
    let _ = handler_ref_problems(harness, &mut recorder);
    if recorder.0.is_empty() {
        return Checked::Skipped;
    }
    let answer = match run_python(&python, harness, &Value::Array(recorder.0)) {
        Ok(answer) => answer,
        Err(why) => return Checked::Unavailable(why),
    };
    let roots = answer.get("roots").and_then(Value::as_array).into_iter().flatten().filter_map(|r| r.as_str().map(PathBuf::from)).collect();
    let found = answer.get("found").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut answers = Answers { roots, found: found.into_iter() };
    Checked::Done(handler_ref_problems(harness, &mut answers))
}

/// Runs [`SCRIPT`] with `refs` on stdin, in the harness directory, within [`IMPORT_TIMEOUT`].
fn run_python(python: &std::ffi::OsStr, harness: &Harness, refs: &Value) -> Result<Value, String> {
    let shown = PathBuf::from(python).display().to_string();
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .current_dir(harness.dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `{shown}` ({PYTHON_VAR}): {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(refs.to_string().as_bytes());
    }
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < IMPORT_TIMEOUT => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("importing the handlers took longer than {} s", IMPORT_TIMEOUT.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for `{shown}`: {e}")),
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("`{shown}` could not import the `harnessweaver` package to check the handlers ({status})"));
    }
    serde_json::from_str(&text).map_err(|_| format!("`{shown}` gave no answer about the handlers"))
}
