//! A harness directory in the temporary directory, written from a few
//! lines: the process-transport tests and the transport benchmarks share
//! it (benches include it with `#[path]`).
#![allow(dead_code)]

use std::path::PathBuf;

/// A harness directory (removed on drop).
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn harness(&self) -> PathBuf {
        self.0.join("harness.yaml")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `hw-<name>-<pid>/` with harness.yaml (`spec_extra` lines appended to its
/// `spec`) and one `tools/<tool>.yaml` per (name, spec lines) of `tools`.
pub fn write(name: &str, spec_extra: &str, tools: &[(&str, &str)]) -> Dir {
    let dir = std::env::temp_dir().join(format!("hw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n{spec_extra}"),
    )
    .unwrap();
    for (tool, spec) in tools {
        std::fs::write(
            dir.join(format!("tools/{tool}.yaml")),
            format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {tool}\nspec:\n{spec}"),
        )
        .unwrap();
    }
    Dir(dir)
}
