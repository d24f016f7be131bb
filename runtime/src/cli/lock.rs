//! `harnessweaver lock` and `lock verify` (issue 21): write `harness.lock`
//! with every tool's definition, manifest and code identity, and report
//! drift since. The comparison is the core's ([`harnessweaver_core::lock`]);
//! what only a host can see of a handler's code is found here: a Python
//! handler's module file and installed distribution (by running the venv's
//! Python, which imports nothing but the module's parent packages), a Node
//! handler's module file and package version, and the code sandbox worker.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::args::{Opt, Spec, JSON};
use super::ui::{harness_path, Io};
use harnessweaver_core::harness::Harness;
use harnessweaver_core::lock::{self, LockFile, LOCK_FILE};
use harnessweaver_core::manifest::{Tool, Transport};

const ABOUT: &str = "`lock` writes harness.lock beside harness.yaml: for every tool its definition
digest, its manifest file's digest and the code identity of its handler (a
Python module file's SHA-256 and its distribution's name, version and RECORD
hash; a Node module file's SHA-256 and package version; a process tool's
command and script digests; an MCP tool's server and pinned definition; a code
tool's sandbox worker). `lock verify` reports every difference, tool by tool:
exit 1 on drift or a missing lock. The lock grants nothing; it only verifies.
Python handlers are found with --python, else $VIRTUAL_ENV/bin/python, else
python3 on PATH.";

const PYTHON: Opt = Opt::value("python", "PATH", "the Python whose packages the handlers come from");

pub(crate) const LOCK: Spec = Spec {
    path: "lock",
    synopsis: "[harness.yaml] [--python PATH] [--json]",
    about: ABOUT,
    opts: &[PYTHON, JSON],
    positionals: &[("harness.yaml", false)],
};

pub(crate) const VERIFY: Spec = Spec {
    path: "lock verify",
    synopsis: "[harness.yaml] [--python PATH] [--json]",
    about: ABOUT,
    opts: &[PYTHON, JSON],
    positionals: &[("harness.yaml", false)],
};

/// What the Python probe prints for each module: its file and distribution.
const PY_PROBE: &str = r#"
import hashlib, importlib.util, json, os, sys
import importlib.metadata as md
sys.path.insert(0, sys.argv[1])
dists = md.packages_distributions()
out = {}
for mod in sys.argv[2:]:
    r = {}
    try:
        spec = importlib.util.find_spec(mod)
    except Exception:
        spec = None
    origin = getattr(spec, "origin", None)
    if origin and os.path.isfile(origin):
        r["module_file"] = origin
        r["module_sha256"] = "sha256:" + hashlib.sha256(open(origin, "rb").read()).hexdigest()
        names = dists.get(mod.split(".")[0], [])
        if names:
            d = md.distribution(names[0])
            r["distribution"] = d.metadata["Name"]
            r["version"] = d.version
            record = d.read_text("RECORD")
            if record is not None:
                r["record_sha256"] = "sha256:" + hashlib.sha256(record.encode()).hexdigest()
    out[mod] = r
print(json.dumps(out))
"#;

/// The Python `doctor` uses: `HARNESSWEAVER_PYTHON` (set by the Python package's command), else `$VIRTUAL_ENV/bin/python`, else `python3`.
pub(crate) fn default_python() -> PathBuf {
    python(None)
}

fn python(explicit: Option<&str>) -> PathBuf {
    if let Some(p) = explicit {
        return PathBuf::from(p);
    }
    // The Python package's own `harnessweaver` names its interpreter, as for doctor's handler imports.
    if let Some(p) = std::env::var_os(super::python_handlers::PYTHON_VAR) {
        return PathBuf::from(p);
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        let p = Path::new(&venv).join("bin/python");
        if p.is_file() {
            return p;
        }
    }
    PathBuf::from("python3")
}

/// A Python handler (`module:function`) or a Node one (a file, `./tools.js#name`).
enum HostHandler<'a> {
    Python(&'a str),
    Node(PathBuf),
}

fn host_handler<'a>(harness: &Harness, tool: &'a Tool) -> Option<HostHandler<'a>> {
    if tool.manifest().transport != Transport::Native {
        return None;
    }
    let handler = tool.manifest().handler.as_deref()?;
    let file = handler.split('#').next().unwrap_or(handler);
    if handler.contains('#') || file.ends_with(".js") || file.ends_with(".mjs") || file.ends_with(".ts") || file.starts_with("./") {
        return Some(HostHandler::Node(harness.dir().join(file)));
    }
    handler.split_once(':').map(|(module, _)| HostHandler::Python(module))
}

/// The facts of every Python handler module, by module (one Python process).
fn python_facts(harness: &Harness, modules: &[&str], python_path: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    if modules.is_empty() {
        return BTreeMap::new();
    }
    let out = Command::new(python_path).arg("-c").arg(PY_PROBE).arg(harness.dir()).args(modules).current_dir(harness.dir()).output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else { return BTreeMap::new() };
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&out.stdout) else { return BTreeMap::new() };
    map.into_iter()
        .map(|(module, facts)| {
            let facts =
                facts.as_object().map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()).unwrap_or_default();
            (module, facts)
        })
        .collect()
}

/// A Node module's digest and the version of the nearest package.json.
fn node_facts(file: &Path) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    facts.insert("module_sha256".into(), lock::file_digest(file).unwrap_or_default());
    let mut dir = file.parent();
    while let Some(d) = dir {
        let manifest = d.join("package.json");
        if let Some(pkg) = std::fs::read_to_string(&manifest).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
            if let Some(name) = pkg.get("name").and_then(Value::as_str) {
                facts.insert("package".into(), name.to_string());
            }
            if let Some(version) = pkg.get("version").and_then(Value::as_str) {
                facts.insert("package_version".into(), version.to_string());
            }
            break;
        }
        dir = d.parent();
    }
    facts
}

/// The lock of `harness` now, with the host's facts.
pub(crate) fn current(harness: &Harness, python_path: &Path) -> LockFile {
    let modules: Vec<&str> = harness
        .tools()
        .iter()
        .filter_map(|t| match host_handler(harness, t) {
            Some(HostHandler::Python(m)) => Some(m),
            _ => None,
        })
        .collect();
    let py = python_facts(harness, &modules, python_path);
    let worker = crate::transport::code::find_worker(None).ok();
    lock::current(harness, |tool| match host_handler(harness, tool) {
        Some(HostHandler::Python(m)) => py.get(m).cloned().unwrap_or_default(),
        Some(HostHandler::Node(file)) => node_facts(&file),
        None if tool.manifest().transport == Transport::Code => {
            let digest = worker.as_deref().and_then(lock::file_digest).unwrap_or_default();
            BTreeMap::from([("sandbox_worker_sha256".to_string(), digest)])
        }
        None => BTreeMap::new(),
    })
}

/// The drift of the harness against its lock: `None` when there is no lock.
pub(crate) fn drift(harness: &Harness, python_path: &Path) -> Result<Option<Vec<lock::Drift>>, String> {
    let Some(locked) = lock::read(harness)? else { return Ok(None) };
    Ok(Some(lock::compare(&locked, &current(harness, python_path))))
}

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    let (spec, rest) = match args {
        ["verify", rest @ ..] => (&VERIFY, rest),
        rest => (&LOCK, rest),
    };
    let a = match io.parse(spec, rest) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let path = harness_path(a.pos(0));
    let harness = match io.load_harness(&path, json) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let python_path = python(a.value("python"));
    if spec.path == LOCK.path {
        let lock = current(&harness, &python_path);
        let target = harness.dir().join(LOCK_FILE);
        if let Err(e) = std::fs::write(&target, lock::to_text(&lock)) {
            let _ = writeln!(io.err, "harnessweaver lock: cannot write `{}`: {e}", target.display());
            return 1;
        }
        if json {
            io.json(&json!({"lock": target.display().to_string(), "tools": lock.tools.len()}));
        } else {
            let _ = writeln!(io.out, "wrote {} ({} tools)", target.display(), lock.tools.len());
        }
        return 0;
    }
    match drift(&harness, &python_path) {
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver lock verify: {e}");
            1
        }
        Ok(None) => {
            let _ = writeln!(io.err, "harnessweaver lock verify: no `{LOCK_FILE}` beside `{}`; write one with `harnessweaver lock`", path.display());
            1
        }
        Ok(Some(drift)) => {
            if json {
                io.json(&json!({"drift": drift}));
            } else if drift.is_empty() {
                let _ = writeln!(io.out, "lock: every tool matches {LOCK_FILE}");
            } else {
                for d in &drift {
                    let _ = writeln!(io.out, "drift: {}", d.to_text());
                }
            }
            i32::from(!drift.is_empty())
        }
    }
}
