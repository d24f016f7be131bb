//! Test helpers shared by the store tests: a real `redis-server` on a free
//! port of 127.0.0.1 (stopped when dropped), scratch directories, and a
//! harness with one rate-limited tool.

#![allow(dead_code, reason = "each test file uses a part of the helpers")]
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "test helpers fail the test loudly")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A `redis-server` started by a test.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl RedisServer {
    /// Starts a server on a free port (panics when `redis-server` is missing:
    /// `make test` installs it).
    pub fn start() -> Self {
        let mut server = Self { port: free_port(), dir: scratch_dir("redis"), child: None };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts it again on the same port (after [`RedisServer::stop`]).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is not installed (run `make test`, which installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(client) = redis::Client::open(self.url()) {
                if let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) {
                    if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start on port {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (its data is gone: it keeps nothing on disk).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A raw connection, for looking at keys.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static SCRATCH: AtomicU64 = AtomicU64::new(0);

/// A new empty directory under the system's temp dir.
pub fn scratch_dir(what: &str) -> PathBuf {
    let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let dir = std::env::temp_dir().join(format!("hw-{what}-{}-{n}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a harness named `name` with one native tool `ping` limited to
/// `per_tenant` (like `50/h`), with `state` and extra `spec` lines.
pub fn write_harness(dir: &Path, name: &str, state: &str, per_tenant: &str, extra_spec: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        format!(
            "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {{ name: {name} }}\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  state: \"{state}\"\n{extra_spec}"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/ping.yaml"),
        format!(
            "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{ name: ping }}\nspec:\n  transport: native\n  handler: \"test:ping\"\n  description: Answers pong.\n  input_schema: {{ type: object }}\n  side_effect: read\n  output: {{ label: trusted }}\n  rate_limit: {{ per_tenant: \"{per_tenant}\" }}\n"
        ),
    )
    .unwrap();
    dir.join("harness.yaml")
}
