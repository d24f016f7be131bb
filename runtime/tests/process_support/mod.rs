//! Helpers the process-transport tests share: a harness directory holding
//! tests/process/handler.py and hostile.sh, loaded with the confinement
//! launcher built beside the tests, and a FIFO that tells when every
//! process holding its write end has died.
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use harnessweaver_core::governor::GovernorOptions;
pub use harnessweaver_core::progress::ProgressEvent;
use harnessweaver_core::{CallContext, CallResult, LoadOptions, Principal, Runtime};
use harnessweaver_runtime::transport::confine::Probe;
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::Value;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub use super::harness_dir::Dir;

/// A harness in a temporary directory with the two handlers, `tools`
/// (name, spec lines), and `dirs` created (`data/`, `out/`…).
pub fn write_harness(name: &str, tools: &[(&str, &str)], dirs: &[&str]) -> Dir {
    let dir = super::harness_dir::write(name, "  mode: test\n", tools);
    for d in dirs {
        std::fs::create_dir_all(dir.0.join(d)).unwrap();
    }
    for f in ["handler.py", "hostile.sh"] {
        std::fs::copy(root().join("tests/process").join(f), dir.0.join(f)).unwrap();
    }
    dir
}

/// The launcher binary cargo built beside these tests.
pub fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_harnessweaver-confine"))
}

/// Loads a harness of `tools` with this machine's confinement.
pub fn load(name: &str, tools: &[(&str, &str)], dirs: &[&str]) -> (Dir, Runtime) {
    load_with(name, tools, dirs, None)
}

/// Loads with `probe` standing for this machine's mechanisms.
pub fn load_with(name: &str, tools: &[(&str, &str)], dirs: &[&str], probe: Option<Probe>) -> (Dir, Runtime) {
    load_in(write_harness(name, tools, dirs), options(None, probe))
}

/// Transport options: the launcher built beside these tests, `worker` as
/// the code transport's worker, `probe` for this machine's mechanisms.
pub fn options(worker: Option<PathBuf>, probe: Option<Probe>) -> TransportOptions {
    TransportOptions { confine_launcher: Some(launcher()), sandbox_worker: worker, sandbox_probe: probe, ..TransportOptions::default() }
}

/// Loads the harness written in `dir` with `transport` options.
pub fn load_in(dir: Dir, transport: TransportOptions) -> (Dir, Runtime) {
    let options = LoadOptions {
        governor: GovernorOptions { backends: Some(harnessweaver_runtime::RuntimeBackends::shared(transport)), ..GovernorOptions::default() },
        ..LoadOptions::default()
    };
    let rt = harnessweaver_runtime::load(dir.harness(), options).unwrap_or_else(|e| panic!("load: {e}"));
    (dir, rt)
}

pub fn call(rt: &Runtime, tool: &str, args: Value) -> CallResult {
    rt.call(tool, args, &CallContext { principal: Principal::new("alice"), ..CallContext::default() })
}

/// Calls `tool` as a caller that listens to its progress (issue 22): the
/// result and the reports the core relayed.
pub fn call_listening(rt: &Runtime, tool: &str, args: Value) -> (CallResult, Vec<ProgressEvent>) {
    use harnessweaver_core::progress::{ProgressListener, ProgressSink};
    struct Seen(std::sync::Mutex<Vec<ProgressEvent>>);
    impl ProgressSink for Seen {
        fn progress(&self, e: ProgressEvent) {
            self.0.lock().unwrap().push(e);
        }
    }
    let seen = std::sync::Arc::new(Seen(std::sync::Mutex::new(Vec::new())));
    let ctx = CallContext { principal: Principal::new("alice"), progress: Some(ProgressListener(seen.clone())), ..CallContext::default() };
    let result = rt.call(tool, args, &ctx);
    let reports = seen.0.lock().unwrap().clone();
    (result, reports)
}

/// The three progress lines `handler.py`'s `progress` attack writes on stderr, as the core relays them.
pub fn three_steps() -> Vec<ProgressEvent> {
    (1..=3).map(|i| ProgressEvent { progress: f64::from(i), total: Some(3.0), message: Some(format!("step {i}")) }).collect()
}

/// The refusal code of `r` (empty when it was allowed).
pub fn code(r: &CallResult) -> &'static str {
    r.code.map_or("", |c| c.as_str())
}

/// A FIFO in a directory of its own, opened for reading (non-blocking, so a
/// writer's open does not wait).
pub struct Fifo {
    pub dir: PathBuf,
    pub path: PathBuf,
    file: std::fs::File,
}

impl Fifo {
    pub fn new(name: &str) -> Fifo {
        let dir = std::env::temp_dir().join(format!("hw-fifo-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("linger.fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path).unwrap();
        Fifo { dir, path, file }
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Everything written to the FIFO until end of file, which comes only
/// when every writer is dead; fails the test if that takes over 20 s.
pub fn fifo_closed_by_all_writers(fifo: &Fifo) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    let fd = fifo.file.as_raw_fd();
    // SAFETY: fcntl on an fd we own, clearing O_NONBLOCK.
    unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
    let mut file = fifo.file.try_clone().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = file.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("a process holding the FIFO outlived the call")
}
