//! Tool manifests (`apiVersion: harnessweaver/v1`, `kind: Tool`): parsing
//! every field of the manifest reference with its default, checking it, and
//! the loaded [`Tool`] with its digest and pin state.
//!
//! Parsing never stops at the first problem: every problem in a manifest is
//! collected with its line, column and field path.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::check::{Checker, MapReader};
use crate::digest;
use crate::error::{Error, Problem};
use crate::yaml::{self, Node, NodeValue, Pos, Style};

/// The only `apiVersion` this crate reads.
pub const API_VERSION: &str = "harnessweaver/v1";

/// `tools.max_output_bytes` when the harness does not set it, and the
/// `output.max_bytes` of a tool loaded on its own.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 100_000;

/// The sandbox names a `code` tool may give (`monty` is short for `monty.sandbox`).
pub const SANDBOXES: &[&str] = &["monty", "monty.sandbox"];

/// Whether a manifest's `definition_digest` matches its current definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinState {
    /// The pin equals the digest of the current definition.
    Pinned,
    /// The pin differs: every call is refused with `digest_mismatch`.
    Mismatched,
    /// No pin: `doctor` warns and prints the digest to pin.
    Unpinned,
}

impl PinState {
    /// `pinned`, `mismatched` or `unpinned`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pinned => "pinned",
            Self::Mismatched => "mismatched",
            Self::Unpinned => "unpinned",
        }
    }
}

/// How the tool is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A host function named by `handler`.
    Native,
    /// A POST of the arguments to `url`.
    Http,
    /// Code run in a sandbox.
    Code,
    /// An MCP server's tool, named by `server: mcp://NAME`.
    Mcp,
}

/// What a call changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideEffect {
    /// Nothing.
    None,
    /// Only reads.
    Read,
    /// Writes inside the system.
    WriteInternal,
    /// Writes to the outside world.
    WriteExternal,
    /// Destroys data.
    Destructive,
}

/// How much harm a misused call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

/// A sanitizer in `output.sanitize` (the sanitizers' own type).
pub use crate::sanitize::Sanitizer;

/// Whether a tool's output marks the run as having seen untrusted content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustLabel {
    /// It does (the default).
    Untrusted,
    /// It does not.
    Trusted,
}

/// The period of a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatePeriod {
    /// Per second.
    Second,
    /// Per minute.
    Minute,
    /// Per hour.
    Hour,
    /// Per day.
    Day,
}

/// `<count>/<s|m|h|d>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed per period (> 0).
    pub count: u64,
    /// The period.
    pub per: RatePeriod,
}

impl Rate {
    /// The period in milliseconds.
    pub fn period_ms(&self) -> u64 {
        match self.per {
            RatePeriod::Second => 1_000,
            RatePeriod::Minute => 60_000,
            RatePeriod::Hour => 3_600_000,
            RatePeriod::Day => 86_400_000,
        }
    }

    /// The text form, such as `10/m`.
    pub fn to_text(&self) -> String {
        let unit = match self.per {
            RatePeriod::Second => "s",
            RatePeriod::Minute => "m",
            RatePeriod::Hour => "h",
            RatePeriod::Day => "d",
        };
        format!("{}/{unit}", self.count)
    }

    /// Parses `<count>/<s|m|h|d>`.
    pub fn parse(text: &str) -> Option<Rate> {
        let (count, unit) = text.trim().split_once('/')?;
        let count = count.trim();
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let count: u64 = count.parse().ok().filter(|c| *c > 0)?;
        let per = match unit.trim() {
            "s" => RatePeriod::Second,
            "m" => RatePeriod::Minute,
            "h" => RatePeriod::Hour,
            "d" => RatePeriod::Day,
            _ => return None,
        };
        Some(Rate { count, per })
    }
}

/// `rate_limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    /// Calls per principal.
    pub per_principal: Option<Rate>,
    /// Calls per tenant.
    pub per_tenant: Option<Rate>,
}

/// A duration in milliseconds, written `500ms`, `30s`, `2m` or `1h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration {
    /// Milliseconds (> 0).
    pub ms: u64,
}

impl Duration {
    /// Parses `<integer><ms|s|m|h>`; zero is refused.
    pub fn parse(text: &str) -> Option<Duration> {
        let text = text.trim();
        let split = text.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = text.split_at(split);
        if number.is_empty() {
            return None;
        }
        let n: u64 = number.parse().ok()?;
        let factor = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return None,
        };
        let ms = n.checked_mul(factor)?;
        (ms > 0).then_some(Duration { ms })
    }

    /// The shortest exact text: `1h`, `2m`, `30s` or `1500ms`.
    pub fn to_text(&self) -> String {
        let ms = self.ms;
        if ms.is_multiple_of(3_600_000) {
            format!("{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) {
            format!("{}m", ms / 60_000)
        } else if ms.is_multiple_of(1_000) {
            format!("{}s", ms / 1_000)
        } else {
            format!("{ms}ms")
        }
    }
}

/// Where a node was in its file, kept for problems found after loading (for
/// example when cel-lite compiles `approval.when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// 1-based line, 0 when unknown. For an expression, where its first
    /// character is (inside the quotes of a quoted scalar).
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The text is a YAML block scalar (`|` or `>`): `line` and `column` are
    /// where its first line's text starts, and every later line is indented
    /// the same.
    pub block: bool,
}

impl From<Pos> for Location {
    fn from(p: Pos) -> Self {
        match p.style {
            Style::Plain => Self { line: p.line, column: p.column, block: false },
            Style::Quoted => Self { line: p.line, column: p.column + 1, block: false },
            Style::Block => Self { line: p.line, column: p.column, block: true },
        }
    }
}

/// `approval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The cel-lite condition as written (default `true`: always approve),
    /// checked to compile at load.
    pub when: String,
    /// Where `when` is, so a compile error can point into it.
    pub when_location: Location,
    /// The role that may approve.
    pub approver_role: Option<String>,
}

/// `output`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPolicy {
    /// The byte limit as written; `None` takes `tools.max_output_bytes`.
    pub max_bytes: Option<u64>,
    /// Sanitizers, in order.
    pub sanitize: Vec<Sanitizer>,
    /// The label of the output.
    pub label: TrustLabel,
}

/// `limits` (code transport).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// Default 5s.
    pub timeout: Duration,
    /// Default 64.
    pub max_memory_mb: u64,
    /// Default 100000.
    pub max_output_bytes: u64,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self { timeout: Duration { ms: 5_000 }, max_memory_mb: 64, max_output_bytes: 100_000 }
    }
}

/// One payload constraint (seed 003): bounded operators on one path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Constraint {
    /// A string, list or object must not be empty.
    pub non_empty: Option<bool>,
    /// Longest string, in characters.
    pub max_length: Option<u64>,
    /// Smallest number.
    pub min: Option<f64>,
    /// Largest number.
    pub max: Option<f64>,
    /// The only values allowed (JSON scalars).
    pub allowed_values: Option<Vec<Value>>,
    /// Fewest list items.
    pub min_items: Option<u64>,
    /// Most list items.
    pub max_items: Option<u64>,
}

/// `payload_constraints`: paths (`request.query`, `$` for the whole value) to constraints.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PayloadConstraints {
    /// On the arguments.
    pub input: BTreeMap<String, Constraint>,
    /// On the result.
    pub output: BTreeMap<String, Constraint>,
}

/// A parsed manifest, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.version`.
    pub version: Option<String>,
    /// `metadata.owner`.
    pub owner: Option<String>,
    /// `spec.transport` (default native).
    pub transport: Transport,
    /// `spec.description` (default empty).
    pub description: String,
    /// `spec.input_schema` (default `{"type": "object"}`).
    pub input_schema: Value,
    /// `spec.definition_digest`.
    pub definition_digest: Option<String>,
    /// `spec.handler` (native).
    pub handler: Option<String>,
    /// `spec.url` (http).
    pub url: Option<String>,
    /// `spec.headers_env`: header name to environment variable name.
    pub headers_env: BTreeMap<String, String>,
    /// `spec.server` (mcp).
    pub server: Option<String>,
    /// `spec.sandbox` (code).
    pub sandbox: Option<String>,
    /// `spec.code_arg` (default `code`).
    pub code_arg: String,
    /// `spec.limits`.
    pub limits: CodeLimits,
    /// `spec.timeout` (default 30s).
    pub timeout: Duration,
    /// `spec.side_effect` (default none).
    pub side_effect: SideEffect,
    /// `spec.risk` (default low).
    pub risk: Risk,
    /// `spec.data_access`.
    pub data_access: Vec<String>,
    /// `spec.egress`.
    pub egress: Vec<String>,
    /// `spec.scopes`.
    pub scopes: Vec<String>,
    /// `spec.tenants` (empty: all).
    pub tenants: Vec<String>,
    /// `spec.enabled` (default true).
    pub enabled: bool,
    /// `spec.rate_limit`.
    pub rate_limit: Option<RateLimit>,
    /// `spec.approval`.
    pub approval: Option<Approval>,
    /// `spec.output`.
    pub output: OutputPolicy,
    /// `spec.payload_constraints`.
    pub payload_constraints: Option<PayloadConstraints>,
}

/// A loaded tool: its manifest, where it came from, and its digest.
#[derive(Debug, Clone)]
pub struct Tool {
    manifest: Manifest,
    digest: String,
    pin: PinState,
    file: Option<String>,
    path: Option<PathBuf>,
    max_output_bytes: u64,
}

impl Tool {
    /// Parses one manifest given as a JSON-like value (a tool registered in code).
    /// `origin` names it in problems.
    pub fn from_manifest_value(value: &Value, origin: &str) -> Result<Tool, Error> {
        let node = Node::from_json(value);
        let mut cx = Checker::new(Some(origin.to_string()));
        let parsed = parse_manifest(&node, &mut cx);
        finish_one(parsed, cx)
    }

    /// Parses one manifest given as YAML or JSON text (JSON when it starts with `{`).
    pub fn from_manifest_text(text: &str, origin: &str) -> Result<Tool, Error> {
        let mut cx = Checker::new(Some(origin.to_string()));
        let is_json = origin.ends_with(".json") || text.trim_start().starts_with('{');
        let parsed = match parse_text(text, is_json) {
            Ok(node) => parse_manifest(&node, &mut cx),
            Err(problems) => {
                cx.extend(problems);
                None
            }
        };
        finish_one(parsed, cx)
    }

    /// Builds a tool from a checked manifest; `max_output_bytes` is the
    /// harness's `tools.max_output_bytes`.
    pub(crate) fn build(
        manifest: Manifest,
        file: Option<String>,
        path: Option<PathBuf>,
        max_output_bytes: u64,
        cx: &mut Checker,
        schema_pos: Pos,
    ) -> Option<Tool> {
        let digest = match digest::definition_digest(&manifest.name, &manifest.description, &manifest.input_schema) {
            Ok(d) => d,
            Err(e) => {
                cx.report("invalid_schema", schema_pos, "spec.input_schema", format!("`spec.input_schema` cannot be pinned: {e}"));
                return None;
            }
        };
        let pin = match &manifest.definition_digest {
            None => PinState::Unpinned,
            Some(p) if *p == digest => PinState::Pinned,
            Some(_) => PinState::Mismatched,
        };
        Some(Tool { manifest, digest, pin, file, path, max_output_bytes })
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The pin state.
    pub fn pin(&self) -> PinState {
        self.pin
    }

    /// The digest of the current `{name, description, input_schema}`.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The parsed manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The manifest file relative to the harness directory (`/` separators),
    /// or the origin given for a manifest loaded on its own.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The manifest file's absolute path, when it came from a file.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// The effective `output.max_bytes` (the manifest's, or `tools.max_output_bytes`).
    pub fn max_output_bytes(&self) -> u64 {
        self.manifest.output.max_bytes.unwrap_or(self.max_output_bytes)
    }

    /// Everything about the tool as one JSON object: name, description,
    /// input_schema, digest, pin, and every spec field with defaults filled in.
    /// Durations are strings (`"30s"`) with a `*_ms` number beside them.
    pub fn describe(&self) -> Value {
        let m = &self.manifest;
        let mut o = Map::new();
        o.insert("name".into(), json!(m.name));
        o.insert("description".into(), json!(m.description));
        o.insert("input_schema".into(), m.input_schema.clone());
        o.insert("digest".into(), json!(self.digest));
        o.insert("pinned_digest".into(), json!(m.definition_digest));
        o.insert("pin".into(), json!(self.pin.as_str()));
        o.insert("file".into(), json!(self.file));
        o.insert("version".into(), json!(m.version));
        o.insert("owner".into(), json!(m.owner));
        o.insert("transport".into(), json!(transport_name(m.transport)));
        o.insert("handler".into(), json!(m.handler));
        o.insert("url".into(), json!(m.url));
        o.insert("headers_env".into(), json!(m.headers_env));
        o.insert("server".into(), json!(m.server));
        o.insert("sandbox".into(), json!(m.sandbox));
        o.insert("code_arg".into(), json!(m.code_arg));
        o.insert(
            "limits".into(),
            json!({
                "timeout": m.limits.timeout.to_text(),
                "timeout_ms": m.limits.timeout.ms,
                "max_memory_mb": m.limits.max_memory_mb,
                "max_output_bytes": m.limits.max_output_bytes,
            }),
        );
        o.insert("timeout".into(), json!(m.timeout.to_text()));
        o.insert("timeout_ms".into(), json!(m.timeout.ms));
        o.insert("side_effect".into(), json!(side_effect_name(m.side_effect)));
        o.insert("risk".into(), json!(risk_name(m.risk)));
        o.insert("data_access".into(), json!(m.data_access));
        o.insert("egress".into(), json!(m.egress));
        o.insert("scopes".into(), json!(m.scopes));
        o.insert("tenants".into(), json!(m.tenants));
        o.insert("enabled".into(), json!(m.enabled));
        o.insert(
            "rate_limit".into(),
            match &m.rate_limit {
                None => Value::Null,
                Some(r) => json!({
                    "per_principal": r.per_principal.map(|x| x.to_text()),
                    "per_tenant": r.per_tenant.map(|x| x.to_text()),
                }),
            },
        );
        o.insert(
            "approval".into(),
            match &m.approval {
                None => Value::Null,
                Some(a) => json!({"when": a.when, "approver_role": a.approver_role}),
            },
        );
        o.insert(
            "output".into(),
            json!({
                "max_bytes": self.max_output_bytes(),
                "sanitize": m.output.sanitize.iter().map(|s| sanitizer_name(*s)).collect::<Vec<_>>(),
                "label": match m.output.label { TrustLabel::Untrusted => "untrusted", TrustLabel::Trusted => "trusted" },
            }),
        );
        o.insert(
            "payload_constraints".into(),
            match &m.payload_constraints {
                None => Value::Null,
                Some(pc) => json!({"input": constraints_json(&pc.input), "output": constraints_json(&pc.output)}),
            },
        );
        Value::Object(o)
    }
}

fn constraints_json(map: &BTreeMap<String, Constraint>) -> Value {
    let mut out = Map::new();
    for (path, c) in map {
        let mut o = Map::new();
        if let Some(v) = c.non_empty {
            o.insert("non_empty".into(), json!(v));
        }
        if let Some(v) = c.max_length {
            o.insert("max_length".into(), json!(v));
        }
        if let Some(v) = c.min {
            o.insert("min".into(), number_json(v));
        }
        if let Some(v) = c.max {
            o.insert("max".into(), number_json(v));
        }
        if let Some(v) = &c.allowed_values {
            o.insert("allowed_values".into(), Value::Array(v.clone()));
        }
        if let Some(v) = c.min_items {
            o.insert("min_items".into(), json!(v));
        }
        if let Some(v) = c.max_items {
            o.insert("max_items".into(), json!(v));
        }
        out.insert(path.clone(), Value::Object(o));
    }
    Value::Object(out)
}

/// Integral values print as integers so every host shows the same number.
fn number_json(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
        #[expect(clippy::cast_possible_truncation, reason = "integral and within ±2^53")]
        let i = f as i64;
        json!(i)
    } else {
        json!(f)
    }
}

/// `native`, `http`, `code` or `mcp`.
pub fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Native => "native",
        Transport::Http => "http",
        Transport::Code => "code",
        Transport::Mcp => "mcp",
    }
}

/// The manifest name of a side effect.
pub fn side_effect_name(s: SideEffect) -> &'static str {
    match s {
        SideEffect::None => "none",
        SideEffect::Read => "read",
        SideEffect::WriteInternal => "write_internal",
        SideEffect::WriteExternal => "write_external",
        SideEffect::Destructive => "destructive",
    }
}

/// The manifest name of a risk.
pub fn risk_name(r: Risk) -> &'static str {
    match r {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
        Risk::Critical => "critical",
    }
}

/// The manifest name of a sanitizer.
pub fn sanitizer_name(s: Sanitizer) -> &'static str {
    s.as_str()
}

pub(crate) const RISKS: &[(&str, Risk)] =
    &[("low", Risk::Low), ("medium", Risk::Medium), ("high", Risk::High), ("critical", Risk::Critical)];

fn finish_one(parsed: Option<(Manifest, Pos)>, mut cx: Checker) -> Result<Tool, Error> {
    let origin = cx.file.clone();
    let tool = parsed.and_then(|(m, schema_pos)| {
        Tool::build(m, origin.clone(), None, DEFAULT_MAX_OUTPUT_BYTES, &mut cx, schema_pos)
    });
    match tool {
        Some(t) if cx.problems.is_empty() => Ok(t),
        _ => Err(Error::Load(nonempty(cx.take_sorted()))),
    }
}

pub(crate) fn nonempty(mut problems: Vec<Problem>) -> Vec<Problem> {
    if problems.is_empty() {
        problems.push(Problem::new("invalid_value", "the manifest could not be loaded"));
    }
    problems
}

/// Parses YAML or JSON text into a node tree.
pub(crate) fn parse_text(text: &str, is_json: bool) -> Result<Node, Vec<Problem>> {
    if is_json {
        yaml::parse_json(text)
    } else {
        yaml::parse_yaml(text)
    }
}

/// Whether `name` follows the name rule: ASCII letters, digits, `_`, `.` and
/// `-`, not starting with a digit, 1 to 128 characters.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.' || c == '-' => {}
        _ => return false,
    }
    name.len() <= 128 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
}

/// Checks `apiVersion` and `kind` of a document mapping.
pub(crate) fn check_header(doc: &mut MapReader<'_>, cx: &mut Checker, kind: &str) {
    if let Some(n) = doc.require(cx, "apiVersion") {
        if let Some(v) = cx.string(n, "apiVersion") {
            if v != API_VERSION {
                cx.report(
                    "wrong_api_version",
                    n.pos,
                    "apiVersion",
                    format!("`apiVersion` is `{v}`; this version reads `{API_VERSION}`"),
                );
            }
        }
    }
    if let Some(n) = doc.require(cx, "kind") {
        if let Some(v) = cx.string(n, "kind") {
            if v != kind {
                cx.report("wrong_kind", n.pos, "kind", format!("`kind` is `{v}`; expected `{kind}`"));
            }
        }
    }
}

/// Compiles a cel-lite condition (`approval.when`, a policy rule's `when`)
/// at load, so a syntax error or an unknown name is a load problem pointing
/// into the file. Codes are cel-lite's (`cel_syntax`, `cel_unknown_name`, …).
pub(crate) fn check_condition(cx: &mut Checker, text: &str, at: Location, path: &str) {
    if text.trim().is_empty() {
        let pos = Pos { line: at.line, column: at.column, ..Pos::default() };
        cx.report("invalid_value", pos, path, format!("`{path}` is empty"));
        return;
    }
    // Trailing whitespace (a block scalar's final newline) is insignificant;
    // without it an "unexpected end" points at the last character, not at an
    // empty line.
    if let Err(e) = crate::cel_lite::compile(text.trim_end()) {
        let (line, column, note) = if at.line == 0 {
            (0, 0, format!(" (line {}, column {} of the expression)", e.line(), e.column()))
        } else if at.block {
            // A block scalar's lines all lose the same indentation.
            (at.line + e.line() - 1, at.column + e.column() - 1, String::new())
        } else {
            let (l, c) = e.position_in(at.line, at.column);
            (l, c, String::new())
        };
        let pos = Pos { line, column, ..Pos::default() };
        cx.report(e.code(), pos, path, format!("`{path}` does not compile: {}{note}", e.message()));
    }
}

/// Parses and checks a manifest document. Returns the manifest (when the
/// required parts are sound) and the position of `input_schema`; problems go to `cx`.
pub(crate) fn parse_manifest(node: &Node, cx: &mut Checker) -> Option<(Manifest, Pos)> {
    let mut doc = cx.map(node, "")?;
    check_header(&mut doc, cx, "Tool");
    let before = cx.problems.len();

    // metadata
    let mut name = None;
    let mut version = None;
    let mut owner = None;
    if let Some(meta_node) = doc.require(cx, "metadata") {
        if let Some(mut meta) = cx.map(meta_node, "metadata") {
            if let Some(n) = meta.require(cx, "name") {
                if let Some(s) = cx.string(n, "metadata.name") {
                    if is_valid_name(&s) {
                        name = Some(s);
                    } else {
                        cx.report(
                            "invalid_name",
                            n.pos,
                            "metadata.name",
                            format!("tool name `{s}` may hold only ASCII letters, digits, `_`, `.` and `-`, and may not start with a digit"),
                        );
                    }
                }
            }
            version = meta_string_or_number(cx, meta.get("version"), "metadata.version");
            owner = cx.opt_string(meta.get("owner"), "metadata.owner");
            meta.finish(cx);
        }
    }

    let spec_node = doc.get("spec");
    doc.finish(cx);
    let empty = Node { value: NodeValue::Map(Vec::new()), pos: node.pos };
    let spec_node = spec_node.unwrap_or(&empty);
    let mut spec = cx.map(spec_node, "spec")?;

    let chosen = match spec.get("transport") {
        None => Some(Transport::Native),
        Some(n) => cx.choice(
            n,
            "spec.transport",
            &[("native", Transport::Native), ("http", Transport::Http), ("code", Transport::Code), ("mcp", Transport::Mcp)],
        ),
    };
    // With an unknown transport, which fields belong is unknown too: read
    // them without requiring or refusing any.
    let known = chosen.is_some();
    let transport = chosen.unwrap_or(Transport::Native);
    let description = spec.get("description").and_then(|n| cx.string(n, "spec.description")).unwrap_or_default();
    let (input_schema, schema_pos) = match spec.get("input_schema") {
        None => (json!({"type": "object"}), spec_node.pos),
        Some(n) => (check_schema(n, cx).unwrap_or_else(|| json!({"type": "object"})), n.pos),
    };
    let definition_digest = match spec.get("definition_digest") {
        None => None,
        Some(n) => cx.string(n, "spec.definition_digest").and_then(|d| {
            if digest::is_well_formed(&d) {
                Some(d)
            } else {
                cx.report(
                    "invalid_digest",
                    n.pos,
                    "spec.definition_digest",
                    "`spec.definition_digest` must be `sha256:` and 64 lowercase hex digits".to_string(),
                );
                None
            }
        }),
    };

    // Transport-specific fields.
    let handler = field_for(cx, &mut spec, "handler", known, transport, &[Transport::Native], Some("missing_handler"));
    let url = field_for(cx, &mut spec, "url", known, transport, &[Transport::Http], Some("missing_url"));
    let server = field_for(cx, &mut spec, "server", known, transport, &[Transport::Mcp], Some("missing_field"));
    let sandbox = field_for(cx, &mut spec, "sandbox", known, transport, &[Transport::Code], Some("missing_field"));
    if let (Some(srv), Some(n)) = (&server, spec.get("server")) {
        if mcp_server_name(srv).is_none() {
            cx.report("invalid_value", n.pos, "spec.server", format!("`spec.server` must be `mcp://NAME`, naming a server of `spec.mcp.servers`, not `{srv}`"));
        }
    }
    if let (Some(sb), Some(n)) = (&sandbox, spec.get("sandbox")) {
        if !SANDBOXES.contains(&sb.as_str()) {
            cx.report(
                "unknown_sandbox",
                n.pos,
                "spec.sandbox",
                format!("`spec.sandbox` is `{sb}`; the sandboxes are `monty` (short for `monty.sandbox`)"),
            );
        }
    }
    if let (Some(u), Some(n)) = (&url, spec.get("url")) {
        if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() <= "https://".len() {
            cx.report("invalid_value", n.pos, "spec.url", format!("`spec.url` must be an http:// or https:// URL, not `{u}`"));
        }
    }
    if let (Some(h), Some(n)) = (&handler, spec.get("handler")) {
        if h.trim().is_empty() {
            cx.report("missing_handler", n.pos, "spec.handler", "`spec.handler` is empty".to_string());
        }
    }

    let mut headers_env = BTreeMap::new();
    if let Some(n) = spec.get("headers_env") {
        if let Some(mut m) = cx.map(n, "spec.headers_env") {
            for (k, v) in m.all() {
                let Some(key) = k.as_str() else {
                    cx.report("wrong_type", k.pos, "spec.headers_env", "header names must be strings".to_string());
                    continue;
                };
                let path = crate::check::child_path("spec.headers_env", key);
                if let Some(var) = cx.string(v, &path) {
                    if !is_env_name(&var) {
                        cx.report(
                            "invalid_value",
                            v.pos,
                            &path,
                            format!("`{path}` must name an environment variable (letters, digits, `_`), not hold a value"),
                        );
                    }
                    headers_env.insert(key.to_string(), var);
                }
            }
        }
    }
    let code_arg = spec.get("code_arg").and_then(|n| cx.string(n, "spec.code_arg")).unwrap_or_else(|| "code".to_string());
    let limits = spec.get("limits").map(|n| parse_limits(n, cx)).unwrap_or_default();
    let timeout = spec.get("timeout").and_then(|n| duration(cx, n, "spec.timeout")).unwrap_or(Duration { ms: 30_000 });
    let side_effect = spec
        .get("side_effect")
        .and_then(|n| {
            cx.choice(
                n,
                "spec.side_effect",
                &[
                    ("none", SideEffect::None),
                    ("read", SideEffect::Read),
                    ("write_internal", SideEffect::WriteInternal),
                    ("write_external", SideEffect::WriteExternal),
                    ("destructive", SideEffect::Destructive),
                ],
            )
        })
        .unwrap_or(SideEffect::None);
    let risk = spec.get("risk").and_then(|n| cx.choice(n, "spec.risk", RISKS)).unwrap_or(Risk::Low);
    let mut list = |cx: &mut Checker, key: &str| {
        let path = format!("spec.{key}");
        spec.get(key).and_then(|n| cx.strings(n, &path)).unwrap_or_default()
    };
    let data_access = list(cx, "data_access");
    let egress = list(cx, "egress");
    let scopes = list(cx, "scopes");
    let tenants = list(cx, "tenants");
    let enabled = spec.get("enabled").and_then(|n| cx.boolean(n, "spec.enabled")).unwrap_or(true);
    let rate_limit = spec.get("rate_limit").and_then(|n| parse_rate_limit(n, cx));
    let approval = spec.get("approval").and_then(|n| parse_approval(n, cx));
    let output = parse_output(spec.get("output"), cx);
    let payload_constraints = spec.get("payload_constraints").and_then(|n| parse_payload_constraints(n, cx));
    spec.finish(cx);

    if cx.problems.len() > before {
        return None;
    }
    let manifest = Manifest {
        name: name?,
        version,
        owner,
        transport,
        description,
        input_schema,
        definition_digest,
        handler,
        url,
        headers_env,
        server,
        sandbox,
        code_arg,
        limits,
        timeout,
        side_effect,
        risk,
        data_access,
        egress,
        scopes,
        tenants,
        enabled,
        rate_limit,
        approval,
        output,
        payload_constraints,
    };
    Some((manifest, schema_pos))
}

fn meta_string_or_number(cx: &mut Checker, node: Option<&Node>, path: &str) -> Option<String> {
    let n = node?;
    match &n.value {
        NodeValue::Str(s) => Some(s.clone()),
        NodeValue::Int(i) => Some(i.to_string()),
        _ => {
            cx.report(
                "wrong_type",
                n.pos,
                path,
                format!("`{path}` must be a string, not {} (quote it, like \"2.1.0\")", n.kind()),
            );
            None
        }
    }
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads a field only some transports use: required for them (reporting
/// `missing_code`), refused (`forbidden_field`) for the others. `handler`
/// and `url` are tolerated elsewhere only where the seed allows (never).
fn field_for(
    cx: &mut Checker,
    spec: &mut MapReader<'_>,
    key: &str,
    known: bool,
    transport: Transport,
    for_transports: &[Transport],
    missing_code: Option<&str>,
) -> Option<String> {
    let path = format!("spec.{key}");
    let node = spec.get(key);
    let wanted = for_transports.contains(&transport);
    if !known {
        return node.and_then(|n| cx.string(n, &path));
    }
    match node {
        Some(n) if !wanted => {
            let name = transport_name(transport);
            let owners: Vec<&str> = for_transports.iter().map(|t| transport_name(*t)).collect();
            let k = spec.key_node(key).map_or(n.pos, |k| k.pos);
            cx.report(
                "forbidden_field",
                k,
                &path,
                format!("`{path}` is only for `{}` tools; this tool's transport is `{name}`", owners.join("`, `")),
            );
            None
        }
        Some(n) => cx.string(n, &path),
        None => {
            if wanted {
                if let Some(code) = missing_code {
                    cx.report(
                        code,
                        spec.node.pos,
                        &path,
                        format!("{} `{}` tool needs `{path}`", article(transport), transport_name(transport)),
                    );
                }
            }
            None
        }
    }
}

fn article(t: Transport) -> &'static str {
    match t {
        Transport::Native | Transport::Code => "a",
        Transport::Http | Transport::Mcp => "an",
    }
}

fn duration(cx: &mut Checker, node: &Node, path: &str) -> Option<Duration> {
    let text = match &node.value {
        NodeValue::Str(s) => s.clone(),
        NodeValue::Int(i) => i.to_string(),
        NodeValue::Float(f) => f.to_string(),
        _ => {
            cx.report("wrong_type", node.pos, path, format!("`{path}` must be a duration like `30s`, not {}", node.kind()));
            return None;
        }
    };
    let parsed = Duration::parse(&text);
    if parsed.is_none() {
        cx.report(
            "invalid_duration",
            node.pos,
            path,
            format!("`{path}` is `{text}`; write a whole number greater than 0 and a unit: `500ms`, `30s`, `2m` or `1h`"),
        );
    }
    parsed
}

fn parse_limits(node: &Node, cx: &mut Checker) -> CodeLimits {
    let mut limits = CodeLimits::default();
    if let Some(mut m) = cx.map(node, "spec.limits") {
        if let Some(n) = m.get("timeout") {
            if let Some(d) = duration(cx, n, "spec.limits.timeout") {
                limits.timeout = d;
            }
        }
        if let Some(n) = m.get("max_memory_mb") {
            if let Some(v) = cx.positive(n, "spec.limits.max_memory_mb") {
                limits.max_memory_mb = v;
            }
        }
        if let Some(n) = m.get("max_output_bytes") {
            if let Some(v) = cx.positive(n, "spec.limits.max_output_bytes") {
                limits.max_output_bytes = v;
            }
        }
        m.finish(cx);
    }
    limits
}

fn parse_rate_limit(node: &Node, cx: &mut Checker) -> Option<RateLimit> {
    let mut m = cx.map(node, "spec.rate_limit")?;
    let mut rate = |cx: &mut Checker, key: &str| -> Option<Rate> {
        let path = format!("spec.rate_limit.{key}");
        let n = m.get(key)?;
        let text = match &n.value {
            NodeValue::Str(s) => s.clone(),
            _ => {
                cx.report("wrong_type", n.pos, &path, format!("`{path}` must be a rate like `10/m`, not {}", n.kind()));
                return None;
            }
        };
        let r = Rate::parse(&text);
        if r.is_none() {
            cx.report(
                "invalid_rate_limit",
                n.pos,
                &path,
                format!("`{path}` is `{text}`; write `<count>/<s|m|h|d>` with a count greater than 0, like `10/m`"),
            );
        }
        r
    };
    let per_principal = rate(cx, "per_principal");
    let per_tenant = rate(cx, "per_tenant");
    m.finish(cx);
    Some(RateLimit { per_principal, per_tenant })
}

fn parse_approval(node: &Node, cx: &mut Checker) -> Option<Approval> {
    let mut m = cx.map(node, "spec.approval")?;
    let (when, when_location) = match m.get("when") {
        None => (Some("true".to_string()), Location::from(node.pos)),
        Some(n) => match &n.value {
            NodeValue::Bool(b) => (Some(b.to_string()), Location::from(n.pos)),
            _ => (cx.string(n, "spec.approval.when"), Location::from(n.pos)),
        },
    };
    let approver_role = cx.opt_string(m.get("approver_role"), "spec.approval.approver_role");
    m.finish(cx);
    if let Some(text) = &when {
        check_condition(cx, text, when_location, "spec.approval.when");
    }
    let when = when.unwrap_or_default();
    let approval = Approval { when, when_location, approver_role };
    Some(approval)
}

fn parse_output(node: Option<&Node>, cx: &mut Checker) -> OutputPolicy {
    let mut out = OutputPolicy { max_bytes: None, sanitize: Vec::new(), label: TrustLabel::Untrusted };
    let Some(node) = node else { return out };
    let Some(mut m) = cx.map(node, "spec.output") else { return out };
    if let Some(n) = m.get("max_bytes") {
        out.max_bytes = cx.positive(n, "spec.output.max_bytes");
    }
    if let Some(n) = m.get("sanitize") {
        match &n.value {
            NodeValue::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("spec.output.sanitize[{i}]");
                    if let Some(s) = cx.choice(
                        item,
                        &path,
                        &[("pii_redact", Sanitizer::PiiRedact), ("strip_instructions", Sanitizer::StripInstructions)],
                    ) {
                        if out.sanitize.contains(&s) {
                            cx.report("invalid_value", item.pos, &path, format!("`{}` is listed twice", sanitizer_name(s)));
                        } else {
                            out.sanitize.push(s);
                        }
                    }
                }
            }
            _ => cx.report(
                "wrong_type",
                n.pos,
                "spec.output.sanitize",
                format!("`spec.output.sanitize` must be a list, not {}", n.kind()),
            ),
        }
    }
    if let Some(n) = m.get("label") {
        if let Some(l) = cx.choice(n, "spec.output.label", &[("untrusted", TrustLabel::Untrusted), ("trusted", TrustLabel::Trusted)]) {
            out.label = l;
        }
    }
    m.finish(cx);
    out
}

fn parse_payload_constraints(node: &Node, cx: &mut Checker) -> Option<PayloadConstraints> {
    let mut m = cx.map(node, "spec.payload_constraints")?;
    let mut pc = PayloadConstraints::default();
    for (key, target) in [("input", &mut pc.input), ("output", &mut pc.output)] {
        let path = format!("spec.payload_constraints.{key}");
        let Some(n) = m.get(key) else { continue };
        let Some(mut paths) = cx.map(n, &path) else { continue };
        for (k, v) in paths.all() {
            let Some(p) = k.as_str() else {
                cx.report("wrong_type", k.pos, &path, "constraint paths must be strings".to_string());
                continue;
            };
            let cpath = crate::check::child_path(&path, p);
            if let Some(c) = parse_constraint(v, cx, &cpath) {
                target.insert(p.to_string(), c);
            }
        }
    }
    m.finish(cx);
    Some(pc)
}

fn parse_constraint(node: &Node, cx: &mut Checker, path: &str) -> Option<Constraint> {
    let mut m = cx.map(node, path)?;
    let mut c = Constraint::default();
    let p = |k: &str| format!("{path}.{k}");
    if let Some(n) = m.get("non_empty") {
        c.non_empty = cx.boolean(n, &p("non_empty"));
    }
    if let Some(n) = m.get("max_length") {
        c.max_length = cx.count(n, &p("max_length"));
    }
    if let Some(n) = m.get("min") {
        c.min = cx.number(n, &p("min"));
    }
    if let Some(n) = m.get("max") {
        c.max = cx.number(n, &p("max"));
    }
    if let Some(n) = m.get("allowed_values") {
        match &n.value {
            NodeValue::Seq(items) => {
                let mut values = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match (&item.value, item.to_json()) {
                        (NodeValue::Seq(_) | NodeValue::Map(_), _) | (_, Err(_)) => cx.report(
                            "wrong_type",
                            item.pos,
                            &format!("{path}.allowed_values[{i}]"),
                            "allowed values must be strings, numbers, booleans or null".to_string(),
                        ),
                        (_, Ok(v)) => values.push(v),
                    }
                }
                c.allowed_values = Some(values);
            }
            _ => cx.report(
                "wrong_type",
                n.pos,
                &p("allowed_values"),
                format!("`{}` must be a list, not {}", p("allowed_values"), n.kind()),
            ),
        }
    }
    if let Some(n) = m.get("min_items") {
        c.min_items = cx.count(n, &p("min_items"));
    }
    if let Some(n) = m.get("max_items") {
        c.max_items = cx.count(n, &p("max_items"));
    }
    if let (Some(lo), Some(hi)) = (c.min, c.max) {
        if lo > hi {
            cx.report("invalid_value", node.pos, path, format!("`{path}` has `min` greater than `max`"));
        }
    }
    if let (Some(lo), Some(hi)) = (c.min_items, c.max_items) {
        if lo > hi {
            cx.report("invalid_value", node.pos, path, format!("`{path}` has `min_items` greater than `max_items`"));
        }
    }
    m.finish(cx);
    Some(c)
}

const SCHEMA_TYPES: &[&str] = &["object", "array", "string", "number", "integer", "boolean", "null"];

/// Checks `input_schema`: a mapping, convertible to JSON, whose top-level
/// `type` (when given) is `object`, and whose common keywords have the right
/// shape. Returns the schema as JSON.
fn check_schema(node: &Node, cx: &mut Checker) -> Option<Value> {
    if !matches!(node.value, NodeValue::Map(_)) {
        cx.report(
            "wrong_type",
            node.pos,
            "spec.input_schema",
            format!("`spec.input_schema` must be a mapping (a JSON Schema object), not {}", node.kind()),
        );
        return None;
    }
    let before = cx.problems.len();
    if let Some(t) = node.get("type") {
        if t.as_str() != Some("object") {
            let shown = t.as_str().map_or_else(|| t.to_json().map(|v| v.to_string()).unwrap_or_default(), str::to_string);
            cx.report(
                "invalid_schema",
                t.pos,
                "spec.input_schema.type",
                format!("`spec.input_schema.type` must be `object` (arguments are named), not `{shown}`"),
            );
        }
    }
    schema_shape(node, "spec.input_schema", cx, 0);
    if cx.problems.len() > before {
        return None;
    }
    match node.to_json() {
        // The same compiler the governor validates arguments with, so a
        // schema that loads is one that can check a call.
        Ok(v) => match crate::validate::SchemaValidator::compile(&v) {
            Ok(_) => Some(v),
            Err(msg) => {
                cx.report("invalid_schema", node.pos, "spec.input_schema", msg);
                None
            }
        },
        Err((pos, msg)) => {
            cx.report("invalid_schema", pos, "spec.input_schema", msg);
            None
        }
    }
}

fn schema_shape(node: &Node, path: &str, cx: &mut Checker, depth: usize) {
    let NodeValue::Map(entries) = &node.value else {
        if !matches!(node.value, NodeValue::Bool(_)) {
            cx.report("invalid_schema", node.pos, path, format!("`{path}` must be a schema (a mapping or a boolean)"));
        }
        return;
    };
    if depth > 64 {
        return;
    }
    for (k, v) in entries {
        let Some(key) = k.as_str() else { continue };
        let kpath = crate::check::child_path(path, key);
        let bad = |cx: &mut Checker, what: &str| {
            cx.report("invalid_schema", v.pos, &kpath, format!("`{kpath}` must be {what}"));
        };
        match key {
            "type" => {
                let ok = match &v.value {
                    NodeValue::Str(s) => SCHEMA_TYPES.contains(&s.as_str()),
                    NodeValue::Seq(items) => {
                        items.iter().all(|i| i.as_str().is_some_and(|s| SCHEMA_TYPES.contains(&s)))
                    }
                    _ => false,
                };
                if !ok {
                    bad(cx, "a JSON Schema type name (`object`, `array`, `string`, `number`, `integer`, `boolean`, `null`) or a list of them");
                }
            }
            "properties" | "patternProperties" | "$defs" | "definitions" => match &v.value {
                NodeValue::Map(props) => {
                    for (pk, pv) in props {
                        let name = pk.as_str().unwrap_or_default();
                        schema_shape(pv, &crate::check::child_path(&kpath, name), cx, depth + 1);
                    }
                }
                _ => bad(cx, "a mapping of names to schemas"),
            },
            "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" | "propertyNames" => {
                schema_shape(v, &kpath, cx, depth + 1);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => match &v.value {
                NodeValue::Seq(items) if !items.is_empty() => {
                    for (i, item) in items.iter().enumerate() {
                        schema_shape(item, &format!("{kpath}[{i}]"), cx, depth + 1);
                    }
                }
                _ => bad(cx, "a non-empty list of schemas"),
            },
            "required" => {
                let ok = matches!(&v.value, NodeValue::Seq(items) if items.iter().all(|i| i.as_str().is_some()));
                if !ok {
                    bad(cx, "a list of property names");
                }
            }
            "enum" if !matches!(v.value, NodeValue::Seq(_)) => bad(cx, "a list"),
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                if !matches!(v.value, NodeValue::Int(_)) && !matches!(v.value, NodeValue::Float(f) if f.is_finite()) =>
            {
                bad(cx, "a number");
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties"
                if !matches!(v.value, NodeValue::Int(i) if i >= 0) =>
            {
                bad(cx, "a whole number, 0 or more");
            }
            "pattern" => match v.as_str() {
                Some(_) => {}
                None => bad(cx, "a regular expression string"),
            },
            _ => {}
        }
    }
}

/// `NAME` of an MCP tool's `server: mcp://NAME`, or `None` when it is not of that form.
pub fn mcp_server_name(server: &str) -> Option<&str> {
    server.strip_prefix("mcp://").filter(|n| !n.is_empty() && !n.contains('/'))
}
