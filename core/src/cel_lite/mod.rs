//! cel-lite: the expression language of `approval.when` and policy rules.
//!
//! A subset of CEL with CEL's semantics (see `docs/cel-lite.md`): the names
//! `principal`, `tenant`, `task`, `tool`, `args` and `labels`; null, bool,
//! int, uint, double, string, list and map literals; `.` and `[]`; `! -`;
//! `* / % + -`; comparisons; `in`; CEL's error-absorbing `&&` and `||`; `?:`;
//! `size`, `has`, `startsWith`, `endsWith`, `contains`, `matches`, `int`,
//! `uint`, `double`, `string`, and the `exists`, `all`, `exists_one`, `map`
//! and `filter` macros.
//!
//! An expression is compiled once, at load: every name and function is checked
//! then, literal regexes are compiled then, and a problem comes back as a
//! [`CompileError`] with a stable code and a line and column. Evaluation never
//! fails loudly: any runtime error (a missing key, a wrong type, an overflow, a
//! division by zero, a cost limit) makes the result [`Outcome::Unevaluable`]
//! with a short reason, which for an approval means a human must approve.
//!
//! ```
//! use harnessweaver_core::cel_lite::{self, Vars};
//! use serde_json::json;
//!
//! let program = cel_lite::compile("args.amount_usd > 100 && !('finance' in principal.roles)").unwrap();
//! let args = json!({"amount_usd": 250});
//! let principal = json!({"roles": ["engineer"]});
//! let vars = Vars { args: Some(&args), principal: Some(&principal), ..Vars::default() };
//! assert!(program.approval_required_with(&vars).required);
//! ```

mod eval;
mod js;
mod lexer;
mod parser;
mod reads;
mod value;

use serde_json::{Map, Value};
use std::fmt;

pub use reads::{Part, Read};
pub use value::CelValue;

/// The names an expression may use: the variables of a tool call.
pub const NAMES: [&str; 7] = ["principal", "tenant", "task", "tool", "args", "labels", "run"];

/// The longest expression accepted, in bytes.
pub const MAX_LENGTH: usize = 4096;

/// The deepest nesting accepted (parentheses, operators, calls, literals).
pub const MAX_DEPTH: usize = 64;

/// The default evaluation budget, in cost units (about one per node evaluated,
/// one per list item scanned, one per 64 bytes of string scanned).
pub const MAX_COST: u64 = 10_000_000;

/// The most memory one evaluation may build (strings and lists), in bytes.
pub const MAX_ALLOC_BYTES: u64 = 64 << 20;

/// The longest string an evaluation may build, in bytes.
pub const MAX_STRING_BYTES: usize = 1 << 20;

/// The most items a list built during evaluation may have.
pub const MAX_LIST_ITEMS: usize = 1_000_000;

/// The compiled size limit of a regular expression, in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The longest regular expression pattern accepted, in bytes.
pub const MAX_PATTERN_LENGTH: usize = 1024;

pub(crate) const CODE_SYNTAX: &str = "cel_syntax";
pub(crate) const CODE_UNSUPPORTED: &str = "cel_unsupported";
pub(crate) const CODE_UNKNOWN_NAME: &str = "cel_unknown_name";
pub(crate) const CODE_UNKNOWN_FUNCTION: &str = "cel_unknown_function";
pub(crate) const CODE_WRONG_ARGUMENTS: &str = "cel_wrong_arguments";
pub(crate) const CODE_BAD_REGEX: &str = "cel_bad_regex";
pub(crate) const CODE_TOO_LARGE: &str = "cel_too_large";
pub(crate) const CODE_TOO_DEEP: &str = "cel_too_deep";

/// How an expression is compiled. [`Options::default`] is what manifests and
/// harnesses use; other names are for tests and tools.
#[derive(Debug, Clone)]
pub struct Options {
    /// The variable names an expression may use.
    pub names: Vec<String>,
    /// The longest expression accepted, in bytes.
    pub max_length: usize,
    /// The deepest nesting accepted.
    pub max_depth: usize,
    /// The evaluation budget in cost units.
    pub max_cost: u64,
    /// Accept CEL's `dyn(x)` as the identity. Off for manifests; the
    /// conformance runner turns it on because CEL's tests use it to defeat
    /// static type checks, which cel-lite does not have.
    pub dyn_identity: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            names: NAMES.iter().map(|n| (*n).to_string()).collect(),
            max_length: MAX_LENGTH,
            max_depth: MAX_DEPTH,
            max_cost: MAX_COST,
            dyn_identity: false,
        }
    }
}

/// An expression that failed to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    code: &'static str,
    message: String,
    line: usize,
    column: usize,
    source_line: String,
}

impl CompileError {
    pub(crate) fn at(code: &'static str, message: impl Into<String>, src: &str, offset: usize) -> Self {
        let offset = floor_char_boundary(src, offset.min(src.len()));
        let before = src.get(..offset).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line_end = src.get(offset..).and_then(|s| s.find('\n')).map_or(src.len(), |i| offset + i);
        let column = src.get(line_start..offset).unwrap_or_default().chars().count() + 1;
        let source_line = src.get(line_start..line_end).unwrap_or_default().trim_end_matches('\r').to_string();
        Self { code, message: message.into(), line, column, source_line }
    }

    /// The stable snake_case code: `cel_syntax`, `cel_unsupported`,
    /// `cel_unknown_name`, `cel_unknown_function`, `cel_wrong_arguments`,
    /// `cel_bad_regex`, `cel_too_large` or `cel_too_deep`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// What is wrong, lowercase, safe to show a model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The 1-based line of the spot.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The 1-based column of the spot, in characters.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The spot in the file that holds the expression, given where the
    /// expression's first character is there: the first line is offset by the
    /// start column, later lines keep their own columns (as in a YAML block
    /// scalar). Returns the 1-based line and column.
    pub fn position_in(&self, start_line: usize, start_column: usize) -> (usize, usize) {
        if self.line == 1 {
            (start_line, start_column + self.column - 1)
        } else {
            (start_line + self.line - 1, self.column)
        }
    }

    /// The message, the line of the expression (a window of it when long) and
    /// a caret under the spot.
    pub fn render(&self) -> String {
        const WINDOW: usize = 72;
        let chars: Vec<char> = self.source_line.chars().collect();
        let col = self.column.saturating_sub(1);
        // Long lines show a window around the spot.
        let start = if chars.len() <= WINDOW { 0 } else { col.saturating_sub(WINDOW / 2).min(chars.len() - WINDOW) };
        let end = (start + WINDOW).min(chars.len());
        let mut text: String = chars.get(start..end).unwrap_or_default().iter().collect();
        let mut pad = String::new();
        if start > 0 {
            text.insert(0, '…');
            pad.push(' ');
        }
        if end < chars.len() {
            text.push('…');
        }
        for ch in chars.get(start..col.min(chars.len())).unwrap_or_default() {
            pad.push(if *ch == '\t' { '\t' } else { ' ' });
        }
        format!("line {}, column {}: {}\n  {}\n  {}^", self.line, self.column, self.message, text, pad)
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {}, column {}", self.message, self.line, self.column)
    }
}

impl std::error::Error for CompileError {}

/// A compiled expression. Cheap to share between threads; evaluate it as
/// often as needed.
#[derive(Debug)]
pub struct Program {
    root: parser::Expr,
    /// The names the expression uses, in slot order.
    names: Vec<String>,
    /// What an evaluation can read of them, parents first.
    reads: Vec<Read>,
    /// The read of each name, in slot order.
    roots: Vec<usize>,
    source: String,
    max_cost: u64,
}

/// The result of an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The expression's value as JSON. Integral doubles stay JSON doubles;
    /// map keys that are not strings become their decimal or `true`/`false`
    /// text.
    Value(Value),
    /// A runtime error made the expression unevaluable; `reason` says which
    /// part failed.
    Unevaluable {
        /// Which part failed and why, with long values truncated.
        reason: String,
    },
}

/// Whether a call needs a human's approval, from an `approval.when` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalVerdict {
    /// True when the expression is true, unevaluable or not a bool.
    pub required: bool,
    /// Why the expression could not decide, when it could not.
    pub reason: Option<String>,
}

/// Where an evaluation finds its variables.
pub trait Bindings {
    /// The value bound to `name`, if any.
    fn binding(&self, name: &str) -> Option<&Value>;
}

impl Bindings for Map<String, Value> {
    fn binding(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// The variables of one tool call, borrowed, so that the governor evaluates
/// without building a JSON object per call. A name left `None` is unbound:
/// using it makes the expression unevaluable.
#[derive(Debug, Clone, Copy, Default)]
pub struct Vars<'a> {
    /// The caller: id, roles, scopes.
    pub principal: Option<&'a Value>,
    /// The tenant the call is made for.
    pub tenant: Option<&'a Value>,
    /// The task or run the call belongs to.
    pub task: Option<&'a Value>,
    /// The tool's manifest facts: name, risk, labels.
    pub tool: Option<&'a Value>,
    /// The call's arguments.
    pub args: Option<&'a Value>,
    /// The run's labels.
    pub labels: Option<&'a Value>,
    /// The run's history: `calls`, `size`, `counts` (issue 23).
    pub run: Option<&'a Value>,
}

impl Bindings for Vars<'_> {
    fn binding(&self, name: &str) -> Option<&Value> {
        match name {
            "principal" => self.principal,
            "tenant" => self.tenant,
            "task" => self.task,
            "tool" => self.tool,
            "args" => self.args,
            "labels" => self.labels,
            "run" => self.run,
            _ => None,
        }
    }
}

/// Compiles `text` with the default options (the six names of a tool call).
pub fn compile(text: &str) -> Result<Program, CompileError> {
    compile_with(text, &Options::default())
}

/// Compiles `text` with `options`.
pub fn compile_with(text: &str, options: &Options) -> Result<Program, CompileError> {
    if text.len() > options.max_length {
        return Err(CompileError::at(
            CODE_TOO_LARGE,
            format!("expression is {} bytes, more than the limit of {}", text.len(), options.max_length),
            text,
            options.max_length,
        ));
    }
    let tokens = lexer::tokenize(text)?;
    let (root, names, needs) = parser::parse(text, tokens, options)?;
    let reads = reads::flatten(&names, &needs);
    let roots = reads.iter().enumerate().filter(|(_, r)| r.parent.is_none()).map(|(i, _)| i).collect();
    Ok(Program { root, names, reads, roots, source: text.to_string(), max_cost: options.max_cost })
}

impl Program {
    /// The variable names the expression uses, in order of first use.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// What an evaluation can read of the variables, parents first: a host
    /// gathers one [`Part`] for each and evaluates with
    /// [`Program::evaluate_parts`], converting nothing else.
    pub fn reads(&self) -> &[Read] {
        &self.reads
    }

    /// The JavaScript a JavaScript host (Node) runs per evaluation: the source of an arrow function
    /// `(evaluate, wrong) => gather`, whose `gather(vars, want)` checks the variables, gathers the
    /// parts [`Program::reads`] names, decides the common cases itself (with `fast`) and hands the
    /// rest to the host's `evaluate` (see `cel_lite/js.rs`).
    pub fn gather_js(&self, fast: bool) -> String {
        js::gather_js(self, fast)
    }

    /// The source text the program was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates against a JSON object of variables.
    pub fn evaluate(&self, vars: &Map<String, Value>) -> Outcome {
        self.evaluate_with(vars)
    }

    /// Evaluates against any [`Bindings`], for example a borrowed [`Vars`].
    pub fn evaluate_with<B: Bindings + ?Sized>(&self, vars: &B) -> Outcome {
        Self::outcome(eval::run(self, vars, None, eval::Want::Json))
    }

    /// Evaluates against the parts a host gathered, one per [`Program::reads`]:
    /// the same outcome as with the whole values.
    pub fn evaluate_parts(&self, parts: &[Part]) -> Outcome {
        Self::outcome(self.run_parts(parts, eval::Want::Json))
    }

    fn outcome(done: Result<eval::Done, String>) -> Outcome {
        match done {
            Ok(eval::Done::Json(v)) => Outcome::Value(v),
            Ok(_) => Outcome::Unevaluable { reason: "internal: unexpected result kind".to_string() },
            Err(reason) => Outcome::Unevaluable { reason },
        }
    }

    fn run_parts(&self, parts: &[Part], want: eval::Want) -> Result<eval::Done, String> {
        if !reads::fit(&self.reads, parts) {
            return Err("internal: the parts do not fit the program's reads".to_string());
        }
        eval::run(self, &Map::new(), Some(parts), want)
    }

    /// Evaluates to a CEL-typed value (keeping int, uint and double apart);
    /// the error is the unevaluable reason.
    pub fn evaluate_value<B: Bindings + ?Sized>(&self, vars: &B) -> Result<CelValue, String> {
        match eval::run(self, vars, None, eval::Want::Cel)? {
            eval::Done::Cel(v) => Ok(v),
            _ => Err("internal: unexpected result kind".to_string()),
        }
    }

    /// The approval rule: true or unevaluable means a human must approve; a
    /// value that is not a bool is unevaluable.
    pub fn approval_required(&self, vars: &Map<String, Value>) -> ApprovalVerdict {
        self.approval_required_with(vars)
    }

    /// [`Program::approval_required`] against any [`Bindings`].
    pub fn approval_required_with<B: Bindings + ?Sized>(&self, vars: &B) -> ApprovalVerdict {
        Self::verdict(eval::run(self, vars, None, eval::Want::Bool))
    }

    /// [`Program::approval_required`] against the parts a host gathered.
    pub fn approval_required_parts(&self, parts: &[Part]) -> ApprovalVerdict {
        Self::verdict(self.run_parts(parts, eval::Want::Bool))
    }

    fn verdict(done: Result<eval::Done, String>) -> ApprovalVerdict {
        match done {
            Ok(eval::Done::Bool(b)) => ApprovalVerdict { required: b, reason: None },
            Ok(_) => ApprovalVerdict { required: true, reason: Some("internal: unexpected result kind".to_string()) },
            Err(reason) => ApprovalVerdict { required: true, reason: Some(reason) },
        }
    }
}

/// Cuts `s` to at most `max` characters, marking the cut with `…`.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((i, _)) => format!("{}…", s.get(..i).unwrap_or_default()),
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
