//! The file tools at invocation, with optimistic concurrency: a complete
//! `read_file` records a hash observation of the path for the run;
//! `write_file` and `edit_file` refuse an existing file without a current
//! observation or whose on-disk hash changed since (`stale_write`). A
//! coordinator serialises structured writes per canonical path, and lets
//! `run_command` take the whole workspace exclusively (after which every
//! observation is void: a command can change what these tools cannot predict).

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::{json, Value};

use super::paths::{self, OpenMode, PathError, Target};
use crate::codes::RefusalCode;
use crate::digest::sha256_tagged;

/// The largest file `read_file` returns whole (a larger one is cut and records no observation).
pub const MAX_READ_BYTES: u64 = 1_048_576;
/// The most matching lines `search_files` returns.
pub const MAX_MATCHES: usize = 200;
/// The most entries `list_dir` returns.
pub const MAX_ENTRIES: usize = 1_000;
/// The most files `search_files` reads.
const MAX_FILES: usize = 5_000;

/// A failure with its code and a message safe to show a model.
pub type Failure = (RefusalCode, String);

/// The per-run hash observations and the per-path write locks of one workspace.
#[derive(Debug, Default)]
pub struct Coordinator {
    /// Shared by structured writes, exclusive for `run_command`.
    workspace: RwLock<()>,
    /// One lock per canonical path being written.
    paths: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    /// `(run, canonical path)` → the `sha256:` of the content last seen whole.
    observations: Mutex<HashMap<(String, PathBuf), String>>,
}

impl Coordinator {
    /// A shared workspace permit (structured tools).
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        self.workspace.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The exclusive workspace permit (`run_command`).
    pub fn exclusive(&self) -> RwLockWriteGuard<'_, ()> {
        self.workspace.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn path_lock(&self, path: PathBuf) -> Arc<Mutex<()>> {
        let mut map = self.paths.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(path).or_default().clone()
    }

    fn observe(&self, run: &str, path: PathBuf, hash: String) {
        self.observations.lock().unwrap_or_else(PoisonError::into_inner).insert((run.to_string(), path), hash);
    }

    fn observed(&self, run: &str, path: PathBuf) -> Option<String> {
        self.observations.lock().unwrap_or_else(PoisonError::into_inner).get(&(run.to_string(), path)).cloned()
    }

    /// Forgets every observation (after a command ran).
    pub fn invalidate_all(&self) {
        self.observations.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

fn path_failure(e: PathError) -> Failure {
    match e {
        PathError::Invalid(m) => (RefusalCode::InvalidArgs, m),
        PathError::Escape(m) => (RefusalCode::PathEscape, m),
        PathError::Changed(m) => (RefusalCode::PathChanged, m),
        PathError::Io(m) => (RefusalCode::HandlerError, m),
    }
}

fn io(what: &str, e: &std::io::Error) -> Failure {
    (RefusalCode::HandlerError, format!("{what} failed ({})", e.kind()))
}

fn read_all(file: &mut std::fs::File, cap: u64) -> Result<(Vec<u8>, bool), Failure> {
    let mut bytes = Vec::new();
    Read::by_ref(file).take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| io("reading the file", &e))?;
    let complete = bytes.len() as u64 <= cap;
    bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    Ok((bytes, complete))
}

/// `read_file`.
pub fn read(co: &Coordinator, run: &str, target: &Target) -> Result<Value, Failure> {
    let mut file = paths::open(target, OpenMode::Read).map_err(path_failure)?;
    if file.metadata().is_ok_and(|m| !m.is_file()) {
        return Err((RefusalCode::HandlerError, format!("`{}` is not a regular file", target.shown)));
    }
    let (bytes, complete) = read_all(&mut file, MAX_READ_BYTES)?;
    // Host reads are outside the workspace's concurrency control.
    if complete && !target.host {
        co.observe(run, target.absolute(), sha256_tagged(&bytes));
    }
    let content = String::from_utf8_lossy(&bytes).into_owned();
    Ok(json!({"path": target.shown, "content": content, "complete": complete}))
}

/// `write_file`.
pub fn write(co: &Coordinator, run: &str, target: &Target, content: &str) -> Result<Value, Failure> {
    let _workspace = co.shared();
    let lock = co.path_lock(target.absolute());
    let _path = lock.lock().unwrap_or_else(PoisonError::into_inner);
    match paths::open(target, OpenMode::CreateNew) {
        Ok(mut file) => {
            file.write_all(content.as_bytes()).map_err(|e| io("writing the file", &e))?;
            co.observe(run, target.absolute(), sha256_tagged(content.as_bytes()));
            return Ok(json!({"path": target.shown, "created": true, "bytes": content.len()}));
        }
        Err(PathError::Io(m)) if m == "the file exists" => {}
        Err(e) => return Err(path_failure(e)),
    }
    let mut file = paths::open(target, OpenMode::ReadWrite).map_err(path_failure)?;
    let (current, complete) = read_all(&mut file, MAX_READ_BYTES)?;
    check_fresh(co, run, target, &current, complete)?;
    rewrite(&mut file, content.as_bytes())?;
    co.observe(run, target.absolute(), sha256_tagged(content.as_bytes()));
    Ok(json!({"path": target.shown, "created": false, "bytes": content.len()}))
}

/// `edit_file`: one exact, unique occurrence of `old` becomes `new`.
pub fn edit(co: &Coordinator, run: &str, target: &Target, old: &str, new: &str) -> Result<Value, Failure> {
    let _workspace = co.shared();
    let lock = co.path_lock(target.absolute());
    let _path = lock.lock().unwrap_or_else(PoisonError::into_inner);
    let mut file = paths::open(target, OpenMode::ReadWrite).map_err(path_failure)?;
    let (current, complete) = read_all(&mut file, MAX_READ_BYTES)?;
    check_fresh(co, run, target, &current, complete)?;
    let Ok(text) = String::from_utf8(current) else {
        return Err((RefusalCode::HandlerError, format!("`{}` is not UTF-8 text", target.shown)));
    };
    let count = text.matches(old).count();
    if count != 1 {
        let why = if count == 0 { "does not occur" } else { "occurs more than once" };
        return Err((RefusalCode::EditMismatch, format!("`old_text` {why} in `{}`; it must match exactly once", target.shown)));
    }
    let edited = text.replacen(old, new, 1);
    rewrite(&mut file, edited.as_bytes())?;
    co.observe(run, target.absolute(), sha256_tagged(edited.as_bytes()));
    Ok(json!({"path": target.shown, "replaced": 1}))
}

/// Refuses a write to a file not seen whole in this run, or changed since.
fn check_fresh(co: &Coordinator, run: &str, target: &Target, current: &[u8], complete: bool) -> Result<(), Failure> {
    match co.observed(run, target.absolute()) {
        None => Err((RefusalCode::StaleWrite, format!("`{}` exists and was not read completely in this run; read it first", target.shown))),
        Some(seen) if !complete || seen != sha256_tagged(current) => {
            Err((RefusalCode::StaleWrite, format!("`{}` changed since it was read in this run; read it again", target.shown)))
        }
        Some(_) => Ok(()),
    }
}

fn rewrite(file: &mut std::fs::File, bytes: &[u8]) -> Result<(), Failure> {
    file.set_len(0).map_err(|e| io("truncating the file", &e))?;
    file.rewind().map_err(|e| io("rewinding the file", &e))?;
    file.write_all(bytes).map_err(|e| io("writing the file", &e))
}

/// The entries of a directory opened without following links, as `(name, kind)`.
fn entries(target: &Target) -> Result<Vec<(String, &'static str)>, Failure> {
    let dir = paths::open(target, OpenMode::Directory).map_err(path_failure)?;
    let listing = dir_listing(&dir).map_err(|e| io("listing the directory", &e))?;
    let mut out: Vec<(String, &'static str)> = listing;
    out.sort();
    Ok(out)
}

/// Lists an open directory through its descriptor (`/proc/self/fd/N`), so
/// the listing is of the directory that was opened, not of a path that may
/// have changed since.
#[cfg(unix)]
fn dir_listing(dir: &std::fs::File) -> std::io::Result<Vec<(String, &'static str)>> {
    use std::os::fd::AsRawFd;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))? {
        let entry = entry?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => "link",
            Ok(t) if t.is_dir() => "dir",
            Ok(t) if t.is_file() => "file",
            _ => "other",
        };
        out.push((entry.file_name().to_string_lossy().into_owned(), kind));
    }
    Ok(out)
}

#[cfg(not(unix))]
fn dir_listing(_dir: &std::fs::File) -> std::io::Result<Vec<(String, &'static str)>> {
    Err(std::io::Error::other("unsupported"))
}

/// `list_dir`.
pub fn list(target: &Target) -> Result<Value, Failure> {
    let all = entries(target)?;
    let truncated = all.len() > MAX_ENTRIES;
    let items: Vec<Value> = all.into_iter().take(MAX_ENTRIES).map(|(name, kind)| json!({"name": name, "kind": kind})).collect();
    Ok(json!({"path": target.shown, "entries": items, "truncated": truncated}))
}

/// `search_files`: every regular file beneath the directory (links are
/// never followed), line by line.
pub fn search(target: &Target, regex: &regex::Regex) -> Result<Value, Failure> {
    let mut matches = Vec::new();
    let mut stack = vec![target.clone()];
    let mut files = 0usize;
    let mut truncated = false;
    while let Some(dir) = stack.pop() {
        for (name, kind) in entries(&dir)? {
            let child = dir.child(&name);
            match kind {
                "dir" => stack.push(child),
                "file" => {
                    files += 1;
                    if files > MAX_FILES {
                        truncated = true;
                        break;
                    }
                    let Ok(mut file) = paths::open(&child, OpenMode::Read) else { continue };
                    let Ok((bytes, _)) = read_all(&mut file, MAX_READ_BYTES) else { continue };
                    let Ok(text) = std::str::from_utf8(&bytes) else { continue };
                    for (i, line) in text.lines().enumerate() {
                        if regex.is_match(line) {
                            if matches.len() >= MAX_MATCHES {
                                truncated = true;
                                break;
                            }
                            matches.push(json!({"path": child.shown, "line": i + 1, "text": crate::text::capped(line)}));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let key = |v: &Value| (v.get("path").and_then(Value::as_str).map(str::to_string), v.get("line").and_then(Value::as_u64));
    matches.sort_by_key(key);
    Ok(json!({"path": target.shown, "matches": matches, "truncated": truncated}))
}
