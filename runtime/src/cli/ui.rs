//! What every command shares: the output streams and colour, finding the
//! harness file, printing load problems as file:line:column, and running a
//! command's [`Spec`] (help, usage errors).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::args::{Args, Parsed, Spec};
use harnessweaver_core::error::Error;

/// The streams a command writes to, and whether stdout may be coloured.
pub(crate) struct Io<'a> {
    /// Results.
    pub out: &'a mut dyn Write,
    /// Usage errors and diagnostics about the command line itself.
    pub err: &'a mut dyn Write,
    colour: bool,
}

/// The colours the CLI uses (ANSI SGR codes).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Paint {
    Red = 31,
    Green = 32,
    Yellow = 33,
    Dim = 2,
    Bold = 1,
}

impl<'a> Io<'a> {
    pub fn new(out: &'a mut dyn Write, err: &'a mut dyn Write, colour: bool) -> Self {
        Self { out, err, colour }
    }

    /// `text` in `paint` when colour is on.
    pub fn paint(&self, paint: Paint, text: &str) -> String {
        if self.colour {
            format!("\x1b[{}m{text}\x1b[0m", paint as u8)
        } else {
            text.to_string()
        }
    }

    /// Turns colour off (`--json`).
    pub fn plain(&mut self) {
        self.colour = false;
    }

    /// Parses `args` by `spec`: `Ok(args)` to go on, `Err(code)` when `--help`
    /// was printed (0) or the command line is wrong (2, message and help on
    /// stderr). `--json` turns colour off.
    pub fn parse(&mut self, spec: &Spec, args: &[&str]) -> Result<Args, i32> {
        match spec.parse(args) {
            Ok(Parsed::Args(a)) => {
                if a.flag("json") {
                    self.plain();
                }
                Ok(a)
            }
            Ok(Parsed::Help) => {
                let _ = writeln!(self.out, "{}", spec.help());
                Err(0)
            }
            Err(message) => Err(self.usage(spec, &message)),
        }
    }

    /// Prints a usage error with the command's help; returns 2.
    pub fn usage(&mut self, spec: &Spec, message: &str) -> i32 {
        let _ = writeln!(self.err, "harnessweaver {}: {message}\n\n{}", spec.path, spec.help());
        2
    }

    /// Prints one JSON document on stdout.
    pub fn json(&mut self, value: &Value) {
        let _ = writeln!(self.out, "{}", serde_json::to_string_pretty(value).unwrap_or_default());
    }

    /// Prints the problems of a failed load as `error: file:line:column: …`,
    /// or (with `json`) as `{"ok": false, "problems": […]}`.
    pub fn problems(&mut self, e: &Error, harness: &Path, json: bool) {
        let problems = problems_json(e, harness);
        if json {
            self.json(&json!({"ok": false, "harness": harness.display().to_string(), "problems": problems}));
            return;
        }
        let label = self.paint(Paint::Red, "error");
        if e.problems().is_empty() {
            let _ = writeln!(self.out, "{label}: {e}");
        }
        for p in e.problems() {
            let mut p = p.clone();
            if let Some(file) = &p.file {
                p.file = Some(shown(harness, file));
            }
            let _ = writeln!(self.out, "{label}: {p}");
        }
    }

    /// Loads the harness at `path`, or prints its problems and gives exit code 1.
    pub fn load_harness(&mut self, path: &Path, json: bool) -> Result<harnessweaver_core::harness::Harness, i32> {
        harnessweaver_core::harness::Harness::load(path).map_err(|e| {
            self.problems(&e, path, json);
            1
        })
    }
}

/// The problems of `e` as JSON objects (`code`, `message`, `file`, `line`,
/// `column`, `path`), files as the user named the harness directory.
pub(crate) fn problems_json(e: &Error, harness: &Path) -> Value {
    if e.problems().is_empty() {
        return json!([{"code": e.code(), "message": e.to_string()}]);
    }
    Value::Array(
        e.problems()
            .iter()
            .map(|p| {
                let mut p = p.clone();
                if let Some(file) = &p.file {
                    p.file = Some(shown(harness, file));
                }
                serde_json::to_value(p).unwrap_or(Value::Null)
            })
            .collect(),
    )
}

/// The harness file named on the command line (default `./harness.yaml`; a
/// directory stands for its harness.yaml).
pub(crate) fn harness_path(arg: Option<&str>) -> PathBuf {
    let path = PathBuf::from(arg.unwrap_or("harness.yaml"));
    if path.is_dir() {
        path.join("harness.yaml")
    } else {
        path
    }
}

/// `file` (relative to the harness directory) as the user named that directory.
pub(crate) fn shown(harness: &Path, file: &str) -> String {
    match harness.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => format!("{}/{file}", parent.display()),
        None => file.to_string(),
    }
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
