//! The governed built-in tools (issue 20, seed 004): `read_file`,
//! `write_file`, `edit_file`, `list_dir`, `search_files`, `run_command` and
//! `fetch`, enabled by `spec.builtins`.
//!
//! A call is **prepared** at step 2 into requirements (a capability kind, the
//! canonical match, a description); preparation refuses malformed input,
//! path escapes, unparseable commands and unsupported URLs before any gate
//! or prompt. The **gate** ([`gate`]) runs at step 4 and answers allow, deny
//! (`access_denied`, authoritative) or gated (step 7 asks a human, offering
//! candidates). The ticket carries the prepared call as the **grant**: at
//! invocation paths are resolved again and opened without following links,
//! and `run_command` runs exactly the granted argv in the granted directory.
//! The file tools run here; a command and a fetch reach the world through
//! the runtime crate's [`crate::backends::Invoker::run_builtin`].

mod command;
mod files;
mod gate;
mod paths;
mod permissions;

use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

use serde_json::Value;

pub use command::{allow_matches, deny_matches, parse_line, Parsed};
pub use gate::{Candidate, Match, Requirement, Verdict};
pub use paths::Target;

use crate::call::{InvokeOutcome, RefusalCode, Ticket};
use crate::error::{Error, Problem};
use crate::harness::builtins::{AccessRule, BuiltinTool, BuiltinsSpec, CapabilityKind};
use crate::harness::Harness;
use files::{Coordinator, Failure};

/// What a granted command or fetch hands the runtime to run.
pub enum EffectGrant<'a> {
    /// Run exactly `argv` in `cwd` (beneath `workspace`, the only writable place).
    Command {
        /// The program (resolved on the fixed search path when bare) and its arguments.
        argv: &'a [String],
        /// The directory, canonical.
        cwd: &'a Path,
        /// The workspace, canonical.
        workspace: &'a Path,
        /// How long it may run.
        timeout_ms: u64,
        /// The most bytes of stdout and of stderr kept.
        max_output_bytes: u64,
        /// Refuse (`sandbox_unavailable`) rather than run unconfined.
        sandbox_required: bool,
    },
    /// GET or HEAD `url`; every redirect's origin is passed to `check_origin` first.
    Fetch {
        /// The URL.
        url: &'a str,
        /// `GET` or `HEAD`.
        method: &'a str,
        /// How long it may take.
        timeout_ms: u64,
        /// The most body bytes read.
        max_bytes: u64,
        /// Whether a redirect target's origin may be reached (`Err`: why not).
        check_origin: &'a (dyn Fn(&str) -> Result<(), String> + Sync),
    },
}

/// A built-in call, prepared: what it will do and what it requires.
#[derive(Debug, Clone)]
pub struct Prepared {
    op: Op,
    /// The requirements the gate decides on.
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone)]
enum Op {
    Read { given: String, target: Target },
    Write { given: String, target: Target, content: String },
    Edit { given: String, target: Target, old: String, new: String },
    List { given: String, target: Target },
    Search { given: String, target: Target, regex: regex::Regex },
    Command { argv: Vec<String>, cwd_given: String, cwd: Target },
    Fetch { url: String, method: String },
}

/// The largest response `fetch` reads.
pub const MAX_FETCH_BYTES: u64 = 1_048_576;

/// The built-in tools of one loaded harness.
#[derive(Debug)]
pub struct Builtins {
    spec: BuiltinsSpec,
    workspace: PathBuf,
    host_roots: Vec<PathBuf>,
    permission_file: PathBuf,
    /// The accepted candidates (the permission file's rules).
    accepted: RwLock<Vec<AccessRule>>,
    coordinator: Coordinator,
}

/// A preparation refusal: its code and message.
pub type Refused = (RefusalCode, String);

fn invalid(message: impl Into<String>) -> Refused {
    (RefusalCode::InvalidArgs, message.into())
}

fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

impl Builtins {
    /// The built-in tools of `harness`, or `None` when it enables none.
    pub fn new(harness: &Harness) -> Result<Option<Builtins>, Problem> {
        let Some(spec) = harness.spec().builtins.clone() else { return Ok(None) };
        let problem =
            |message: String| Problem { path: "spec.builtins".into(), file: Some("harness.yaml".into()), ..Problem::new("path_not_found", message) };
        let workspace =
            harness.dir().join(&spec.workspace).canonicalize().map_err(|_| problem(format!("workspace `{}` does not exist", spec.workspace)))?;
        let host_roots = spec.host_reads.iter().filter_map(|p| Path::new(p).canonicalize().ok()).collect();
        let permission_file = harness.dir().join(&spec.permission_file);
        let accepted = permissions::read(&permission_file)?;
        Ok(Some(Builtins { spec, workspace, host_roots, permission_file, accepted: RwLock::new(accepted), coordinator: Coordinator::default() }))
    }

    /// The workspace, canonical.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn resolve(&self, given: &str, host_ok: bool) -> Result<Target, Refused> {
        let roots: &[PathBuf] = if host_ok { &self.host_roots } else { &[] };
        paths::resolve(&self.workspace, roots, given).map_err(|e| match e {
            paths::PathError::Invalid(m) => invalid(m),
            paths::PathError::Escape(m) | paths::PathError::Changed(m) => (RefusalCode::PathEscape, m),
            paths::PathError::Io(m) => invalid(m),
        })
    }

    /// Step 2 for a built-in tool: the call prepared into requirements, or
    /// refused (`invalid_args`, `path_escape`) before any gate or prompt.
    pub fn prepare(&self, tool: &str, args: &Value) -> Result<Prepared, Refused> {
        let which = BuiltinTool::parse(tool).ok_or_else(|| invalid(format!("`{tool}` is not a built-in tool")))?;
        let path_arg = |key: &str, default: Option<&str>| -> Result<String, Refused> {
            match (text(args, key), default) {
                (Some(p), _) => Ok(p.to_string()),
                (None, Some(d)) => Ok(d.to_string()),
                (None, None) => Err(invalid(format!("`{key}` is required"))),
            }
        };
        let fs_req = |kind: CapabilityKind, target: &Target, verb: &str| Requirement {
            kind,
            matched: Match::Path { rel: if target.host { target.shown.clone() } else { target.rel_text() }, host: target.host },
            description: format!("{verb} `{}`", target.shown),
        };
        let (op, requirements) = match which {
            BuiltinTool::ReadFile => {
                let given = path_arg("path", None)?;
                let target = self.resolve(&given, true)?;
                let req = fs_req(CapabilityKind::FilesystemRead, &target, "read");
                (Op::Read { given, target }, vec![req])
            }
            BuiltinTool::ListDir | BuiltinTool::SearchFiles => {
                let given = path_arg("path", Some("."))?;
                let target = self.resolve(&given, true)?;
                let req = fs_req(CapabilityKind::FilesystemRead, &target, "read the files under");
                if which == BuiltinTool::ListDir {
                    (Op::List { given, target }, vec![req])
                } else {
                    let pattern = text(args, "pattern").filter(|p| !p.is_empty()).ok_or_else(|| invalid("`pattern` is required"))?;
                    let regex = regex::RegexBuilder::new(pattern)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|_| invalid("`pattern` is not a valid regular expression"))?;
                    (Op::Search { given, target, regex }, vec![req])
                }
            }
            BuiltinTool::WriteFile | BuiltinTool::EditFile => {
                let given = path_arg("path", None)?;
                let target = self.resolve(&given, false)?;
                if target.rel.as_os_str().is_empty() {
                    return Err(invalid("`path` names the workspace itself, not a file"));
                }
                let req = fs_req(CapabilityKind::FilesystemWrite, &target, "write");
                let op = if which == BuiltinTool::WriteFile {
                    let content = text(args, "content").ok_or_else(|| invalid("`content` is required"))?.to_string();
                    Op::Write { given, target, content }
                } else {
                    let old = text(args, "old_text").filter(|t| !t.is_empty()).ok_or_else(|| invalid("`old_text` is required"))?.to_string();
                    let new = text(args, "new_text").ok_or_else(|| invalid("`new_text` is required"))?.to_string();
                    Op::Edit { given, target, old, new }
                };
                (op, vec![req])
            }
            BuiltinTool::RunCommand => self.prepare_command(args)?,
            BuiltinTool::Fetch => {
                let url = text(args, "url").filter(|u| !u.is_empty()).ok_or_else(|| invalid("`url` is required"))?;
                let method = text(args, "method").unwrap_or("GET");
                if !matches!(method, "GET" | "HEAD") {
                    return Err(invalid("`method` must be `GET` or `HEAD`"));
                }
                let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(invalid("`url` must be an http or https URL"));
                }
                let origin = crate::harness::builtins::canonical_origin(url)
                    .ok_or_else(|| invalid("`url` has no valid host (credentials in a URL and non-ASCII hosts are refused)"))?;
                let host = origin.split_once("://").map_or(origin.as_str(), |(_, h)| h).to_string();
                let req =
                    Requirement { kind: CapabilityKind::Network, matched: Match::Origin(origin), description: format!("{method} from `{host}`") };
                (Op::Fetch { url: url.to_string(), method: method.to_string() }, vec![req])
            }
        };
        Ok(Prepared { op, requirements })
    }

    fn prepare_command(&self, args: &Value) -> Result<(Op, Vec<Requirement>), Refused> {
        let cwd_given = text(args, "cwd").unwrap_or(".").to_string();
        let cwd = self.resolve(&cwd_given, false)?;
        let (parsed, argv) = match (args.get("argv"), text(args, "command")) {
            (Some(Value::Array(items)), None) => {
                let argv: Vec<String> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| invalid("`argv` must be a list of strings"))?;
                if argv.first().is_none_or(String::is_empty) {
                    return Err(invalid("`argv` needs a program"));
                }
                if argv.iter().any(|a| a.contains('\0')) {
                    return Err(invalid("`argv` holds a NUL byte"));
                }
                let parsed = command::parse_argv(&argv).map_err(|why| invalid(format!("the command cannot be checked: {why}")))?;
                (parsed, argv)
            }
            (None, Some(line)) => {
                let parsed = command::parse_line(line).map_err(|why| invalid(format!("the command cannot be checked: {why}")))?;
                let argv = if parsed.compound {
                    if !self.spec.shell {
                        return Err(invalid(
                            "the command joins several commands (`&&`, `;`, `|`, substitutions or `sh -c`); run them one by one, or enable `spec.builtins.shell`",
                        ));
                    }
                    vec!["/bin/sh".to_string(), "-c".to_string(), line.to_string()]
                } else {
                    parsed.parts.first().cloned().unwrap_or_default()
                };
                (parsed, argv)
            }
            _ => return Err(invalid("give exactly one of `argv` and `command`")),
        };
        if parsed.compound && !self.spec.shell && args.get("argv").is_some() {
            return Err(invalid("the argv runs a shell with `-c`; enable `spec.builtins.shell` to allow it"));
        }
        let requirements = parsed
            .parts
            .iter()
            .map(|part| Requirement {
                kind: CapabilityKind::CommandExecute,
                matched: Match::Argv(part.clone()),
                description: format!("run `{}` in `{}`", part.join(" "), cwd.shown),
            })
            .collect();
        Ok((Op::Command { argv, cwd_given, cwd }, requirements))
    }

    /// Every access rule in force: the harness's, then the accepted candidates.
    fn rules(&self) -> Vec<AccessRule> {
        let accepted = self.accepted.read().unwrap_or_else(PoisonError::into_inner);
        self.spec.access.iter().chain(accepted.iter()).cloned().collect()
    }

    /// Step 4 for a built-in tool: the gate's verdict on the requirements.
    pub fn gate(&self, prepared: &Prepared) -> Verdict {
        gate::decide(&prepared.requirements, &self.rules(), &self.spec.egress)
    }

    /// The candidates a gated call of `tool` with `args` offers (what the
    /// approval showed), for [`Builtins::accept`].
    pub fn candidates(&self, tool: &str, args: &Value) -> Vec<Candidate> {
        match self.prepare(tool, args).map(|p| self.gate(&p)) {
            Ok(Verdict::Gated { candidates, .. }) => candidates,
            _ => Vec::new(),
        }
    }

    /// Accepts `candidate`: appended to the permission file (reviewed like
    /// any policy file) and in force at once. It never widens a deny: the
    /// gate checks every deny before any allow.
    pub fn accept(&self, candidate: &Candidate, accepted_by: &str, approval_id: &str) -> Result<(), Error> {
        let rule = candidate.rule().ok_or_else(|| Error::value("invalid_value", "the candidate has an unknown kind"))?;
        let mut accepted = self.accepted.write().unwrap_or_else(PoisonError::into_inner);
        permissions::append(&self.permission_file, &rule, &candidate.description, accepted_by, approval_id)?;
        accepted.push(rule);
        Ok(())
    }

    /// Step 8 for a built-in tool: the prepared call, re-checked, run.
    /// Commands and fetches reach the world through `effects`.
    pub fn invoke(&self, prepared: &Prepared, ticket: &Ticket, effects: &dyn crate::backends::Invoker) -> InvokeOutcome {
        let done = |r: Result<Value, Failure>| match r {
            Ok(v) => InvokeOutcome::Returned(v),
            Err((code, message)) => InvokeOutcome::Refused { code, message },
        };
        let co = &self.coordinator;
        let run = ticket.run_id.as_str();
        match &prepared.op {
            Op::Read { given, target } => done(self.recheck(given, target, true).and_then(|()| files::read(co, run, target))),
            Op::Write { given, target, content } => done(self.recheck(given, target, false).and_then(|()| files::write(co, run, target, content))),
            Op::Edit { given, target, old, new } => done(self.recheck(given, target, false).and_then(|()| files::edit(co, run, target, old, new))),
            Op::List { given, target } => done(self.recheck(given, target, true).and_then(|()| files::list(target))),
            Op::Search { given, target, regex } => done(self.recheck(given, target, true).and_then(|()| files::search(target, regex))),
            Op::Command { argv, cwd_given, cwd } => {
                if let Err((code, message)) = self.recheck(cwd_given, cwd, false) {
                    return InvokeOutcome::Refused { code, message };
                }
                // The whole workspace, exclusively; what the tools saw is void after.
                let _all = co.exclusive();
                let absolute = cwd.absolute();
                let grant = EffectGrant::Command {
                    argv,
                    cwd: &absolute,
                    workspace: &self.workspace,
                    timeout_ms: ticket.timeout_ms,
                    max_output_bytes: crate::manifest::DEFAULT_MAX_OUTPUT_BYTES,
                    sandbox_required: self.spec.sandbox_required,
                };
                let outcome = effects.run_builtin(ticket, &grant);
                co.invalidate_all();
                outcome
            }
            Op::Fetch { url, method } => {
                let check = |next: &str| -> Result<(), String> {
                    let Some(origin) = crate::harness::builtins::canonical_origin(next) else {
                        return Err("the redirect leads to a URL that is not http or https".into());
                    };
                    let req = Requirement {
                        kind: CapabilityKind::Network,
                        matched: Match::Origin(origin.clone()),
                        description: format!("redirect to `{origin}`"),
                    };
                    match gate::decide(&[req], &self.rules(), &self.spec.egress) {
                        Verdict::Allow => Ok(()),
                        Verdict::Deny(why) => Err(format!("the redirect to `{origin}` is refused: {why}")),
                        Verdict::Gated { .. } if same_origin(url, next) => Ok(()),
                        Verdict::Gated { .. } => Err(format!("the redirect to `{origin}` leaves the approved origin")),
                    }
                };
                let grant = EffectGrant::Fetch { url, method, timeout_ms: ticket.timeout_ms, max_bytes: MAX_FETCH_BYTES, check_origin: &check };
                effects.run_builtin(ticket, &grant)
            }
        }
    }

    fn recheck(&self, given: &str, target: &Target, host_ok: bool) -> Result<(), Failure> {
        let roots: &[PathBuf] = if host_ok { &self.host_roots } else { &[] };
        paths::recheck(&self.workspace, roots, given, target).map_err(|e| match e {
            paths::PathError::Changed(m) | paths::PathError::Escape(m) => (RefusalCode::PathChanged, m),
            paths::PathError::Invalid(m) => (RefusalCode::InvalidArgs, m),
            paths::PathError::Io(m) => (RefusalCode::HandlerError, m),
        })
    }
}

impl Builtins {
    /// What the audit trail may say of a prepared call: the path of a file
    /// tool, the argv of a command (what its approver saw), the method and
    /// host of a fetch; never content, a query, headers or a body.
    pub fn audit_subject(prepared: &Prepared) -> String {
        match &prepared.op {
            Op::Read { target, .. } | Op::Write { target, .. } | Op::Edit { target, .. } | Op::List { target, .. } | Op::Search { target, .. } => {
                target.shown.clone()
            }
            Op::Command { argv, .. } => argv.join(" "),
            Op::Fetch { url, method } => {
                let origin = crate::harness::builtins::canonical_origin(url).unwrap_or_default();
                format!("{method} {}", origin.split_once("://").map_or("", |(_, host)| host))
            }
        }
    }
}

fn same_origin(a: &str, b: &str) -> bool {
    let (x, y) = (crate::harness::builtins::canonical_origin(a), crate::harness::builtins::canonical_origin(b));
    x.is_some() && x == y
}
