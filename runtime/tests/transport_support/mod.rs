//! Helpers the transport tests share: the test HTTP server (the same script
//! every language's runner starts), the sandbox worker binary, and harnesses
//! written to temporary directories.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Python that runs the test servers: the project venv's when there is one.
pub fn python() -> PathBuf {
    let venv = root().join(".venv/bin/python");
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// tests/servers/http_fixture_server.py, started on a free port; killed on drop.
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    pub fn start() -> HttpServer {
        let mut child = Command::new("python3")
            .arg(root().join("tests/servers/http_fixture_server.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts the test HTTP server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        HttpServer { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `harnessweaver-sandbox` worker: `HARNESSWEAVER_SANDBOX_WORKER` when
/// set, else built once from sandbox/ (its own workspace) into
/// target/sandbox-worker/.
pub fn sandbox_worker() -> PathBuf {
    static WORKER: OnceLock<PathBuf> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("HARNESSWEAVER_SANDBOX_WORKER").filter(|p| !p.is_empty()) {
                return PathBuf::from(p);
            }
            let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"));
            let target = target.join("sandbox-worker");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "--quiet", "--manifest-path"])
                .arg(root().join("sandbox/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .status()
                .expect("cargo builds the sandbox worker");
            assert!(status.success(), "building sandbox/ failed");
            let name = "harnessweaver-sandbox";
            let mut candidates = vec![target.join("debug").join(name)];
            if let Some(triple) = std::env::var_os("CARGO_BUILD_TARGET") {
                candidates.insert(0, target.join(triple).join("debug").join(name));
            }
            candidates.into_iter().find(|p| p.is_file()).expect("the sandbox worker binary after the build")
        })
        .clone()
}

/// A temporary directory with `files` written in it; removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str, files: Vec<(String, String)>) -> Dir {
        let dir = std::env::temp_dir().join(format!("hw-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (rel, text) in &files {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Dir(dir)
    }

    pub fn harness(&self) -> PathBuf {
        self.0.join("harness.yaml")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A harness.yaml reading `tools/*.yaml`, with `extra` appended under `spec:`.
pub fn harness_yaml(mode: &str, extra: &str) -> String {
    format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: {mode}\n  tools:\n    manifests: [\"tools/*.yaml\"]\n{extra}")
}

/// A tool manifest with `spec` lines (indented two spaces) after the transport.
pub fn tool_yaml(name: &str, spec: &str) -> (String, String) {
    (format!("tools/{name}.yaml"), format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {name}\nspec:\n{spec}"))
}
