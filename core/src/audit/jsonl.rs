//! The JSON Lines audit sink: one chained record per line, a signed
//! checkpoint line every N records and at close.
//!
//! Several processes may append to one file: each write happens under an
//! exclusive `flock`, and a writer that finds the file longer than it left it
//! re-reads the chain's head from the file's end before appending, so the
//! chain stays one chain. A record is one `write` (with `O_APPEND`), so a
//! crash cuts at most the last line, which `audit verify` reports.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::chain::{Chain, ChainHead, Checkpoint, CheckpointKey};
use super::{AuditEvent, AuditSink};
use crate::error::Error;
use crate::harness::{Harness, KeySource};

/// Appends one chained JSON record per line to a file.
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    /// The line buffer every record is written into (kept, so a call allocates nothing).
    line: Vec<u8>,
    chain: Chain,
    /// The file's length after this sink's last write; another length means another writer wrote.
    end: u64,
    /// Whether the file ended with a newline at `end` (false after a crash cut a line).
    whole: bool,
}

impl JsonlSink {
    /// Opens (creating) `path` for appending, chaining without signatures.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_signed(path, None, 0)
    }

    /// Opens (creating) `path` for appending; with `key`, signs a checkpoint
    /// every `every` records (0: only at close) and when dropped.
    pub fn open_signed(path: impl AsRef<Path>, key: Option<CheckpointKey>, every: u64) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io(format!("cannot create `{}`: {e}", dir.display())))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(|e| io(format!("cannot open audit file `{}`: {e}", path.display())))?;
        let (head, end, whole) = locked_fd(descriptor(&file), || {
            let (head, end) = read_jsonl_head(&mut file)?;
            Ok((head, end, ends_with_newline(&mut file)?))
        })
        .map_err(|e| io(format!("cannot read audit file `{}`: {e}", path.display())))?;
        Ok(Self { path, state: Mutex::new(State { file, line: Vec::with_capacity(512), chain: Chain::new(head, key, every), end, whole }) })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn cannot_write(&self, e: &std::io::Error) -> Error {
        io(format!("cannot write audit file `{}`: {e}", self.path.display()))
    }
}

impl State {
    /// Under the lock: continues from another writer's head when the file changed.
    fn catch_up(&mut self) -> std::io::Result<()> {
        let len = self.file.metadata()?.len();
        if len != self.end {
            let (head, end) = read_jsonl_head(&mut self.file)?;
            self.chain.resume(head);
            self.end = end;
            self.whole = ends_with_newline(&mut self.file)?;
        }
        Ok(())
    }

    /// Writes `bytes` (whole lines) in one write, after a newline when a crash left the file mid-line.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if !self.whole {
            self.file.write_all(b"\n")?;
            self.end += 1;
            self.whole = true;
        }
        self.file.write_all(bytes)?;
        self.end += bytes.len() as u64;
        Ok(())
    }
}

impl AuditSink for JsonlSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        let fd = descriptor(&state.file);
        locked_fd(fd, || {
            state.catch_up()?;
            let mut line = std::mem::take(&mut state.line);
            let appended = state.chain.append(event, &mut line).map_err(|e| std::io::Error::other(e.to_string()))?;
            let checkpoint = appended.checkpoint.map(|c| c.to_line());
            line.push(b'\n');
            if let Some(cp) = checkpoint {
                line.extend_from_slice(cp.as_bytes());
                line.push(b'\n');
            }
            // One write per record (and its checkpoint), so readers never see half a line.
            let written = state.write(&line);
            state.line = line;
            written
        })
        .map_err(|e| self.cannot_write(&e))
    }
}

impl Drop for JsonlSink {
    /// Signs the closing checkpoint (with a key and at least one record).
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let fd = descriptor(&state.file);
        let _ = locked_fd(fd, || {
            state.catch_up()?;
            let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
            match state.chain.close(now) {
                Some(cp) => state.write(format!("{}\n", cp.to_line()).as_bytes()),
                None => Ok(()),
            }
        });
    }
}

/// The key `spec.audit.signing_key` names, read from its variable or file.
pub fn signing_key(harness: &Harness) -> Result<Option<CheckpointKey>, Error> {
    let text = match &harness.spec().audit_signing.signing_key {
        None => return Ok(None),
        Some(KeySource::Env(var)) => {
            std::env::var(var).map_err(|_| io(format!("`spec.audit.signing_key` names the environment variable `{var}`, which is not set")))?
        }
        Some(KeySource::File(file)) => {
            let path = harness.dir().join(file);
            std::fs::read_to_string(&path).map_err(|e| io(format!("cannot read the audit signing key `{}`: {e}", path.display())))?
        }
    };
    CheckpointKey::parse(&text).map(Some)
}

/// The chain's head in a JSON Lines trail (the newest chained line; checkpoint
/// lines and a last line cut mid-write are skipped) and the file's length.
pub fn read_jsonl_head(file: &mut File) -> std::io::Result<(ChainHead, u64)> {
    let len = file.seek(SeekFrom::End(0))?;
    let mut window: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::new();
        file.take(len - start).read_to_end(&mut tail)?;
        // Lines wholly inside the window: drop the first (maybe partial) one unless the window is the whole file.
        let body =
            if start == 0 { tail.as_slice() } else { tail.iter().position(|b| *b == b'\n').and_then(|i| tail.get(i + 1..)).unwrap_or_default() };
        let complete = body.iter().rposition(|b| *b == b'\n').map_or(&[][..], |i| body.get(..i).unwrap_or_default());
        let head = complete.split(|b| *b == b'\n').rev().filter(|l| Checkpoint::from_line(l).is_none()).find_map(ChainHead::of_record);
        if let Some(head) = head {
            return Ok((head, len));
        }
        if start == 0 {
            return Ok((ChainHead::default(), len));
        }
        window *= 4;
    }
}

fn ends_with_newline(file: &mut File) -> std::io::Result<bool> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last == *b"\n")
}

fn io(message: String) -> Error {
    Error::Io { message }
}

#[cfg(unix)]
type Fd = std::os::fd::RawFd;
#[cfg(not(unix))]
type Fd = ();

#[cfg(unix)]
fn descriptor(file: &File) -> Fd {
    std::os::fd::AsRawFd::as_raw_fd(file)
}

#[cfg(not(unix))]
fn descriptor(_file: &File) -> Fd {}

/// Runs `f` holding an exclusive advisory lock on the file `fd` refers to
/// (other processes' sinks on the same file wait); the `File` stays borrowable inside `f`.
#[cfg(unix)]
fn locked_fd<T>(fd: Fd, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    // SAFETY: flock on a descriptor this File owns; no memory is passed.
    if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let result = f();
    // SAFETY: as above.
    unsafe { libc::flock(fd, libc::LOCK_UN) };
    result
}

/// Without `flock`, one process per file keeps one chain.
#[cfg(not(unix))]
fn locked_fd<T>(_fd: Fd, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    f()
}
