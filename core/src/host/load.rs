//! Loading a harness for a host: handlers and how they run, handler refs
//! (`handler: module:function`) resolved through the host with the origin
//! check here, tools registered in code, the audit callback rule, and every
//! problem at once with its file, line and column.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::callbacks::{approval_hook, ApprovalCallback, AuditCallback, CallbackSink};
use super::{Host, HostHandler, LoadErrors};
use crate::backends::Backends;
use crate::clock::ManualClock;
use crate::error::{Error, Problem};
use crate::governor::{Governor, GovernorOptions};
use crate::harness::{AuditSink, Harness};
use crate::manifest::{Tool, Transport};
use crate::runtime::check_handlers;

/// How a host runs a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerMode {
    /// Runs where it can be abandoned at the deadline (a worker thread).
    Abandonable,
    /// Awaited under the deadline (a coroutine, a promise).
    Async,
    /// Runs on the caller's thread: judged against the deadline when it returns.
    CallerThread,
}

/// A host function registered for a tool.
#[derive(Debug, Clone)]
pub struct HandlerDecl {
    /// The tool.
    pub tool: String,
    /// How it runs.
    pub mode: HandlerMode,
    /// It takes the idempotency key (Python: an `idempotency_key` parameter).
    pub takes_idempotency_key: bool,
    /// It takes a progress callback (issue 22; Python: a `progress` parameter).
    pub takes_progress: bool,
    /// The function's own name, where the host language has one (a JS
    /// function's `name`): a manifest whose `handler` names another function
    /// fails the load with `handler_mismatch`. `None` checks nothing.
    pub function: Option<String>,
}

/// The function a `handler` ref names: what follows the last `:` or `#`, and
/// of that the last `.` segment (`pkg.tools:Api.refund` → `refund`).
fn handler_function(text: &str) -> &str {
    let after = text.rsplit([':', '#']).next().unwrap_or(text);
    after.rsplit('.').next().unwrap_or(after)
}

/// `handler_mismatch` for each tool whose manifest `handler` names a
/// function that is near, but not equal, to the one the host gave for it: a
/// typo in a ref the host does not import (Node takes functions by tool
/// name) would otherwise pass silently. A ref naming the function or the
/// tool, a function with no name, or a name not near (a handler made by a
/// factory, `handle`) passes.
fn handler_mismatches(dir: &Path, tools: &[Tool], decls: &[HandlerDecl], problems: &mut Vec<Problem>) {
    for decl in decls {
        let Some(given) = decl.function.as_deref().map(|f| f.strip_prefix("bound ").unwrap_or(f)).filter(|f| !f.is_empty()) else {
            continue;
        };
        let Some(tool) = tools.iter().find(|t| t.name() == decl.tool) else { continue };
        let Some(text) = tool.manifest().handler.as_deref().filter(|h| !h.is_empty()) else { continue };
        let named = handler_function(text);
        if named == given || named == decl.tool || given == "anonymous" {
            continue;
        }
        // Near the function's name only: a ref is often the tool's name in
        // camelCase, which is near the tool's name whatever the function is.
        if crate::suggest::nearest(named, [given]).is_none() {
            continue;
        }
        problems.push(located(
            dir,
            tool.file(),
            &["spec", "handler"],
            "handler_mismatch",
            format!(
                "`spec.handler` of `{}` names `{named}`, but the function given to load() for it is `{given}`; did you mean `{given}`?",
                tool.name()
            ),
        ));
    }
}

/// A manifest's `handler: module:function`, for the host to import.
#[derive(Debug)]
pub struct HandlerRef<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The whole ref as written.
    pub text: &'a str,
    /// The module part.
    pub module: &'a str,
    /// The attribute path after `:`, split at `.`.
    pub attrs: &'a [String],
    /// The harness directory (imports look there first).
    pub base_dir: &'a Path,
}

/// What a host found for a handler ref: facts only; the core decides.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The file the code of the callable finally resolved is defined in (not
    /// the file of the module named before `:`): for `pkg:helper` where
    /// `pkg` re-exports `os.system`, no file (`None`: built in).
    pub origin: Option<PathBuf>,
    /// The attributes of the path after `:` that named a module, each as the
    /// path up to it (`iniconfig:os.system` → `["os"]`).
    pub modules_in_path: Vec<String>,
    /// How it runs.
    pub mode: HandlerMode,
    /// It takes the idempotency key.
    pub takes_idempotency_key: bool,
    /// It takes a progress callback (issue 22).
    pub takes_progress: bool,
}

/// Imports handler refs for the core. The core decides which refs to
/// resolve (native tools without a handler given) and whether the code's
/// origin is allowed (under the harness directory or a package root).
pub trait HandlerResolver {
    /// Directories whose code counts as installed packages.
    fn package_roots(&self) -> Vec<PathBuf>;
    /// Imports `r`; `Err` is the failure text (`ImportError: …`).
    fn resolve(&mut self, r: &HandlerRef<'_>) -> Result<Resolved, String>;
}

/// A manifest given in code.
#[derive(Debug, Clone)]
pub enum ManifestSource {
    /// YAML or JSON text.
    Text {
        /// The text.
        text: String,
        /// How problems name it.
        origin: String,
    },
    /// A JSON-like value.
    Value {
        /// The value.
        value: Value,
        /// How problems name it.
        origin: String,
    },
}

impl ManifestSource {
    /// The origin of a tool registered in code without one.
    pub const DEFAULT_ORIGIN: &'static str = "<code>";

    /// A manifest as a host hands it over: a string is YAML or JSON text,
    /// anything else the manifest itself; no origin is [`Self::DEFAULT_ORIGIN`].
    pub fn from_host(value: Value, origin: Option<String>) -> Self {
        let origin = origin.unwrap_or_else(|| Self::DEFAULT_ORIGIN.into());
        match value {
            Value::String(text) => Self::Text { text, origin },
            value => Self::Value { value, origin },
        }
    }

    /// Parses the manifest.
    pub fn to_tool(&self) -> Result<Tool, Error> {
        match self {
            Self::Text { text, origin } => Tool::from_manifest_text(text, origin),
            Self::Value { value, origin } => Tool::from_manifest_value(value, origin),
        }
    }
}

/// Fixtures and tests: a manual clock and sequential ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestOptions {
    /// The manual clock's start, in ms since the epoch.
    pub clock_ms: u64,
    /// `run-1`, `call-1`, … ids.
    pub sequential_ids: bool,
}

/// Everything a host gives [`Host::load`].
#[derive(Default)]
pub struct HostOptions<'r> {
    /// Host functions by tool.
    pub handlers: Vec<HandlerDecl>,
    /// Resolves manifests' handler refs the host has no function for; `None`: none are.
    pub resolver: Option<&'r mut dyn HandlerResolver>,
    /// Tools registered in code.
    pub code_tools: Vec<ManifestSource>,
    /// Receives every audit event. `None` with `audit.sink: callback` fails the
    /// load with `audit_callback_missing`.
    pub audit: Option<Arc<dyn AuditCallback>>,
    /// Also sees every audit event, beside the harness's own sink, and cannot
    /// fail a call (issue 24: the Python and Node OpenTelemetry shims).
    pub observe: Option<Arc<dyn AuditCallback>>,
    /// May decide approvals inline.
    pub on_approval: Option<Arc<dyn ApprovalCallback>>,
    /// A manual clock and sequential ids.
    pub test: Option<TestOptions>,
    /// Stores and transports (Python and Node: `harnessweaver_runtime::RuntimeBackends`; default: core only).
    pub backends: Option<Arc<dyn Backends>>,
}

/// The position of the value at `keys` in a harness file, when it can be read.
fn locate(dir: &Path, file: &str, keys: &[&str]) -> (Option<usize>, Option<usize>) {
    let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
        return (None, None);
    };
    let node =
        if file.ends_with(".json") || text.trim_start().starts_with('{') { crate::yaml::parse_json(&text) } else { crate::yaml::parse_yaml(&text) };
    let Ok(root) = node else {
        return (None, None);
    };
    let mut node = &root;
    for key in keys {
        match node.get(key) {
            Some(n) => node = n,
            None => return (None, None),
        }
    }
    let pos = node.pos;
    if pos.is_known() {
        (Some(pos.line), Some(pos.column))
    } else {
        (None, None)
    }
}

/// A problem located at `keys` of `file` (relative to `dir`).
fn located(dir: &Path, file: Option<&str>, keys: &[&str], code: &str, message: String) -> Problem {
    let (line, column) = file.map_or((None, None), |f| locate(dir, f, keys));
    Problem { file: file.map(str::to_string), line, column, path: keys.join("."), ..Problem::new(code, message) }
}

/// Whether `origin` is code a manifest may name: under the harness
/// directory `dir` or under a package root. A manifest must not turn any
/// importable callable (`os:system`, the standard library, a module of the
/// same name cached from another harness) into a tool.
pub fn origin_allowed(origin: &Path, dir: &Path, roots: &[PathBuf]) -> bool {
    let Ok(real) = origin.canonicalize() else {
        return false;
    };
    dir.canonicalize().is_ok_and(|d| real.starts_with(d)) || roots.iter().filter_map(|r| r.canonicalize().ok()).any(|r| real.starts_with(r))
}

/// Why a resolved handler ref may not become a tool (`None`: it may), from the
/// host's facts (issue 17 item 1). An attribute path through a module
/// (`iniconfig:os.system`) reaches whatever that module imported, so it is
/// refused whatever it finds; otherwise the callable's own code must be under
/// the harness directory or a package root (`origin_allowed`), so a package
/// re-exporting `os.system` under another name does not pass either.
pub fn handler_refusal(text: &str, origin: Option<&Path>, modules_in_path: &[String], dir: &Path, roots: &[PathBuf]) -> Option<String> {
    if let Some(module) = modules_in_path.first() {
        return Some(format!(
            "ImportError: handler `{text}` reaches the module `{module}` through its attribute path; name the module that defines the function before `:`"
        ));
    }
    match origin {
        Some(origin) if origin_allowed(origin, dir, roots) => None,
        origin => {
            let wher = origin.map_or_else(|| "code built into Python (no file)".to_string(), |o| format!("code in `{}`", o.display()));
            Some(format!(
                "ImportError: handler `{text}` resolves to {wher}, outside the harness directory and installed packages; pass the function in handlers= instead"
            ))
        }
    }
}

/// Resolves the handler refs of native tools that have no handler given.
fn resolve_refs(
    harness: &Harness,
    tools: &[&Tool],
    given: &mut HashMap<String, HostHandler>,
    resolver: &mut dyn HandlerResolver,
    problems: &mut Vec<Problem>,
) {
    let dir = harness.dir();
    let roots = resolver.package_roots();
    for tool in tools {
        let m = tool.manifest();
        let Some(text) = m.handler.as_deref().filter(|h| !h.is_empty()) else { continue };
        if m.transport != Transport::Native || given.contains_key(tool.name()) {
            continue;
        }
        let fail = |reason: String| {
            located(
                dir,
                tool.file(),
                &["spec", "handler"],
                "handler_import_failed",
                format!("cannot import handler `{text}` of `{}`: {reason}", tool.name()),
            )
        };
        let Some((module, attr)) = text.split_once(':').filter(|(m, a)| !m.is_empty() && !a.is_empty()) else {
            problems.push(fail(format!("ImportError: handler `{text}` is not `module:function`")));
            continue;
        };
        let attrs: Vec<String> = attr.split('.').map(str::to_string).collect();
        let r = HandlerRef { tool: tool.name(), text, module, attrs: &attrs, base_dir: dir };
        match resolver.resolve(&r) {
            Err(reason) => problems.push(fail(reason)),
            Ok(found) => match handler_refusal(text, found.origin.as_deref(), &found.modules_in_path, dir, &roots) {
                None => {
                    given.insert(
                        tool.name().to_string(),
                        HostHandler { mode: found.mode, takes_key: found.takes_idempotency_key, takes_progress: found.takes_progress },
                    );
                }
                Some(reason) => problems.push(fail(reason)),
            },
        }
    }
}

/// What a load through `resolver` would report about the harness's handler
/// refs (`handler_import_failed`, each at its manifest's `spec.handler`), with
/// no handler given in code: `doctor`'s check of the Python handlers.
pub fn handler_ref_problems(harness: &Harness, resolver: &mut dyn HandlerResolver) -> Vec<Problem> {
    let files: Vec<&Tool> = harness.tools().iter().collect();
    let (mut given, mut problems) = (HashMap::new(), Vec::new());
    resolve_refs(harness, &files, &mut given, resolver, &mut problems);
    problems
}

impl Host {
    /// Reads harness.yaml and its manifests once, resolves handler refs,
    /// checks handlers against manifests, applies `audit_callback_missing`,
    /// and builds the governor (opening the store and transports).
    pub fn load(path: &Path, options: HostOptions<'_>) -> Result<Host, LoadErrors> {
        crate::validate::with_compile_cache(|| Self::load_uncached(path, options))
    }

    fn load_uncached(path: &Path, options: HostOptions<'_>) -> Result<Host, LoadErrors> {
        let harness = Harness::load(path)?;
        let mut problems = Vec::new();
        let mut extra = Vec::new();
        for source in &options.code_tools {
            match source.to_tool() {
                Ok(t) => extra.push(t),
                Err(e) => problems.extend(e.problems().iter().cloned()),
            }
        }
        let mut handlers: HashMap<String, HostHandler> = options
            .handlers
            .iter()
            .map(|d| (d.tool.clone(), HostHandler { mode: d.mode, takes_key: d.takes_idempotency_key, takes_progress: d.takes_progress }))
            .collect();
        // Only manifests in the harness name code to import: a tool registered
        // in code comes with its function or has none.
        if let Some(resolver) = options.resolver {
            let files: Vec<&Tool> = harness.tools().iter().collect();
            resolve_refs(&harness, &files, &mut handlers, resolver, &mut problems);
        }
        handler_mismatches(harness.dir(), harness.tools(), &options.handlers, &mut problems);
        let all: Vec<&Tool> = harness.tools().iter().chain(extra.iter()).collect();
        if options.audit.is_none() && harness.spec().audit_sink == AuditSink::Callback {
            problems.push(located(
                harness.dir(),
                Some(&harness_file(path)),
                &["spec", "audit", "sink"],
                "audit_callback_missing",
                "harness.yaml sends audit events to a callback (`audit.sink: callback`); pass an audit function to load()".into(),
            ));
        }
        if !problems.is_empty() {
            return Err(LoadErrors { problems });
        }
        let mut names: Vec<&str> = handlers.keys().map(String::as_str).collect();
        names.sort_unstable();
        let problems = check_handlers(all.iter().copied(), &names, harness.spec().tools.require_manifest);
        if !problems.is_empty() {
            return Err(LoadErrors { problems });
        }
        let declared: std::collections::HashSet<&str> = all.iter().map(|t| t.name()).collect();
        let unmanifested: Vec<String> = names.iter().filter(|n| !declared.contains(**n)).map(|n| (*n).to_string()).collect();
        let clock = options.test.map(|t| ManualClock::new(t.clock_ms));
        let governor_options = GovernorOptions {
            clock: clock.clone().map(|c| Arc::new(c) as _),
            audit: options.audit.map(|a| Arc::new(CallbackSink(a, false)) as _),
            observer: options.observe.map(|a| Arc::new(CallbackSink(a, true)) as _),
            sequential_ids: options.test.is_some_and(|t| t.sequential_ids),
            extra_tools: extra.clone(),
            backends: options.backends,
            ..GovernorOptions::default()
        };
        // The tools' compiled schemas are reused, not compiled again.
        crate::validate::remember(all.iter().map(|t| (&t.manifest().input_schema, t.validator())));
        let mut governor = Governor::from_harness(&harness, governor_options)?;
        governor.set_unmanifested(unmanifested);
        if let Some(cb) = options.on_approval {
            governor.set_approval_callback(Some(approval_hook(cb)));
        }
        let runtime = crate::runtime::Runtime::from_parts(harness, extra, governor);
        Ok(Host { state: super::State::Loaded(Arc::new(runtime)), handlers, clock })
    }

    /// Reads harness.yaml and its manifests only (no handlers, no store):
    /// calls on it fail with `not_loaded_for_calls`.
    pub fn inspect(path: &Path) -> Result<Host, LoadErrors> {
        let harness = Harness::load(path)?;
        Ok(Host { state: super::State::Inspected(Box::new(harness)), handlers: HashMap::new(), clock: None })
    }
}

/// The harness file's name relative to its directory.
fn harness_file(path: &Path) -> String {
    if path.is_dir() {
        return "harness.yaml".into();
    }
    path.file_name().map_or_else(|| "harness.yaml".to_string(), |n| n.to_string_lossy().into_owned())
}
