//! The JSON Lines audit sink: one chained record per line, a signed
//! checkpoint line every N records and at close.
//!
//! Several processes may append to one file: each write happens under an
//! exclusive `flock`, and a writer that finds the file longer than it left it
//! re-reads the chain's head from the file's end before appending, so the
//! chain stays one chain. A record is one `write` (with `O_APPEND`), so a
//! crash cuts at most the last line, which `audit verify` reports.
//!
//! Per record that is three system calls: `flock`, one `lseek` to the end
//! (the length tells whether another writer appended), the `write`, and the
//! unlock. With `spec.audit.single_writer: true` the harness promises that
//! this sink is the file's only writer: no `flock` and no `lseek`, the sink
//! keeps the length itself (one `write` per record). The promise is checked:
//! every sink holds a lock on a byte range far past the file's end for as long
//! as it is open (shared by default, exclusive for a single writer; `fcntl`
//! locks, which do not meet `flock`'s), so opening a single-writer sink on a
//! file another sink has open, or any sink on a file a single writer has
//! open, fails with `audit_single_writer_conflict`.

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
    /// `spec.audit.single_writer`: no other writer; `end` is trusted without a lock or a look.
    single_writer: bool,
    /// Whether `end` and `whole` are known right (false after a failed write: read them again).
    known: bool,
}

impl JsonlSink {
    /// Opens (creating) `path` for appending, chaining without signatures.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_signed(path, None, 0)
    }

    /// Opens (creating) `path` for appending; with `key`, signs a checkpoint
    /// every `every` records (0: only at close) and when dropped.
    pub fn open_signed(path: impl AsRef<Path>, key: Option<CheckpointKey>, every: u64) -> Result<Self, Error> {
        Self::open_with(path, key, every, false)
    }

    /// As [`JsonlSink::open_signed`]; with `single_writer`, this sink must be
    /// the file's only writer (no lock per record), which is checked when it
    /// opens: it fails while another sink has the file open, and other sinks
    /// fail to open it while it is open.
    pub fn open_with(path: impl AsRef<Path>, key: Option<CheckpointKey>, every: u64, single_writer: bool) -> Result<Self, Error> {
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
        match claim_writer(descriptor(&file), single_writer) {
            Ok(()) => {}
            // Held the other way by another sink: the single-writer promise does not hold.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::PermissionDenied) => {
                return Err(single_writer_conflict(format!(
                    "audit file `{}` is open {}",
                    path.display(),
                    if single_writer {
                        "in another sink, so `spec.audit.single_writer: true` cannot hold"
                    } else {
                        "in a sink with `spec.audit.single_writer: true`"
                    }
                )));
            }
            // No `fcntl` locks here (some network file systems): a single writer cannot be checked, a locking sink needs none.
            Err(e) if single_writer => {
                return Err(single_writer_conflict(format!(
                    "cannot check `spec.audit.single_writer: true` on `{}` (no fcntl lock: {e})",
                    path.display()
                )));
            }
            Err(_) => {}
        }
        let (head, end, whole) = locked_fd(descriptor(&file), || {
            let (head, end) = read_jsonl_head(&mut file)?;
            Ok((head, end, ends_with_newline(&mut file)?))
        })
        .map_err(|e| io(format!("cannot read audit file `{}`: {e}", path.display())))?;
        Ok(Self {
            path,
            state: Mutex::new(State {
                file,
                line: Vec::with_capacity(512),
                chain: Chain::new(head, key, every),
                end,
                whole,
                single_writer,
                known: true,
            }),
        })
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
    /// A single writer skips the look unless a failed write left its length unknown.
    fn catch_up(&mut self) -> std::io::Result<()> {
        if self.single_writer && self.known {
            return Ok(());
        }
        // `lseek` to the end: the length, cheaper than an `fstat`.
        let len = self.file.seek(SeekFrom::End(0))?;
        if len != self.end || !self.known {
            let (head, end) = read_jsonl_head(&mut self.file)?;
            self.chain.resume(head);
            self.end = end;
            self.whole = ends_with_newline(&mut self.file)?;
            self.known = true;
        }
        Ok(())
    }

    /// Writes `bytes` (whole lines) in one write, after a newline when a crash left the file mid-line.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        // Until it succeeds the length is unknown (a short write may have cut a line).
        self.known = false;
        if !self.whole {
            self.file.write_all(b"\n")?;
            self.end += 1;
            self.whole = true;
        }
        self.file.write_all(bytes)?;
        self.end += bytes.len() as u64;
        self.known = true;
        Ok(())
    }

    /// Runs `f` under the file's `flock`, or without it for a single writer.
    fn locked<T>(&mut self, f: impl FnOnce(&mut Self) -> std::io::Result<T>) -> std::io::Result<T> {
        if self.single_writer {
            return f(self);
        }
        locked_fd(descriptor(&self.file), || f(self))
    }
}

impl AuditSink for JsonlSink {
    fn record(&self, event: &AuditEvent) -> Result<(), Error> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .locked(|state| {
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
        let _ = state.locked(|state| {
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

/// Where the writers' claim lock sits: one byte far past any audit file's end.
#[cfg(unix)]
const CLAIM_AT: libc::off_t = libc::off_t::MAX - 1;

/// Takes the lock that says "a sink writes this file" for as long as `fd` is
/// open (never waiting): shared, or exclusive for a single writer. Open-file
/// description locks on Linux (two sinks in one process conflict too), process
/// locks elsewhere; `fcntl` locks are separate from the per-record `flock`.
#[cfg(unix)]
fn claim_writer(fd: Fd, single_writer: bool) -> std::io::Result<()> {
    // SAFETY: a zeroed `flock` struct is a valid value; the fields are set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = if single_writer { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = CLAIM_AT;
    lock.l_len = 1;
    #[cfg(target_os = "linux")]
    let cmd = libc::F_OFD_SETLK;
    #[cfg(not(target_os = "linux"))]
    let cmd = libc::F_SETLK;
    // SAFETY: fcntl on a descriptor this File owns, with a pointer to a live flock struct.
    if unsafe { libc::fcntl(fd, cmd, &lock) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Without `fcntl` locks the single-writer promise is not checked.
#[cfg(not(unix))]
fn claim_writer(_fd: Fd, _single_writer: bool) -> std::io::Result<()> {
    Ok(())
}

/// Without `flock`, one process per file keeps one chain.
#[cfg(not(unix))]
fn locked_fd<T>(_fd: Fd, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    f()
}

/// The load problem of a broken single-writer promise (`audit_single_writer_conflict`).
fn single_writer_conflict(message: String) -> Error {
    Error::Load(vec![crate::error::Problem::new(crate::codes::ProblemCode::AuditSingleWriterConflict, message)])
}
