//! The manifest model: every field of `kind: Tool` as typed values with
//! their defaults, and the names each enum is written with. No parsing and
//! no files here: [`super::parse`] fills these in from a YAML node tree.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::yaml::{Pos, Style};

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
    /// A local process launched without a shell (`command`, `args`),
    /// speaking `harnessweaver-process-v1` on stdin/stdout.
    Process,
    /// A governed built-in tool of `spec.builtins` (issue 20): never written
    /// in a manifest file; the shipped manifests become these.
    Builtin,
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
    /// `approval.by` (issue 22): who may confirm the call.
    pub by: ApprovalBy,
}

/// `approval.by` (issue 22): who may confirm a call that needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalBy {
    /// A reviewer holding the approver role, out of band (the default).
    #[default]
    Role,
    /// The caller's own user, in band when the client can ask (MCP
    /// elicitation); otherwise out of band like `role`.
    Caller,
}

impl ApprovalBy {
    /// `role` or `caller`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Role => "role",
            Self::Caller => "caller",
        }
    }
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
    /// `content` (issue 22): which MCP content parts may pass (default `any`).
    pub content: ContentKinds,
}

/// `spec.output.content` (issue 22): the content parts an MCP tool's result
/// may carry past step 9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContentKinds {
    /// Text, images, audio and embedded resources (the default).
    #[default]
    Any,
    /// Text only: text parts and text resources; images, audio and binary
    /// resources are dropped (`content_not_allowed`).
    TextOnly,
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

/// One payload constraint (the validator's own type: it checks them).
pub use crate::validate::Constraint;

/// `payload_constraints`: paths (`request.query`, `$` for the whole value) to constraints.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PayloadConstraints {
    /// On the arguments.
    pub input: BTreeMap<String, Constraint>,
    /// On the result.
    pub output: BTreeMap<String, Constraint>,
}

/// `spec.max_payload_bytes` of a process tool when the manifest does not set it.
pub const DEFAULT_MAX_PAYLOAD_BYTES: u64 = 1_048_576;

/// The search path a bare `spec.command` name is resolved against, once, at
/// load (the host's `PATH` is never read).
pub const COMMAND_SEARCH_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

/// A capability a process tool's sandbox grants (`spec.sandbox.grants`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Grant {
    /// IP networking (the host's network namespace).
    Network,
    /// Connecting to the Unix sockets listed in `local_sockets` (no IP traffic).
    NetworkLocal,
    /// Reading `read_paths`.
    FilesystemRead,
    /// Writing `write_paths` (without reading them).
    FilesystemWrite,
    /// Starting child processes (they inherit the policy).
    Process,
}

impl Grant {
    /// Every grant with its manifest name.
    pub const ALL: &'static [(&'static str, Grant)] = &[
        ("network", Grant::Network),
        ("network_local", Grant::NetworkLocal),
        ("filesystem_read", Grant::FilesystemRead),
        ("filesystem_write", Grant::FilesystemWrite),
        ("process", Grant::Process),
    ];

    /// The manifest name.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::Network => "network",
            Grant::NetworkLocal => "network_local",
            Grant::FilesystemRead => "filesystem_read",
            Grant::FilesystemWrite => "filesystem_write",
            Grant::Process => "process",
        }
    }
}

/// `spec.sandbox` of a process tool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessSandbox {
    /// Run only confined; refuse the call when confinement is unavailable.
    pub required: bool,
    /// The profile: `default`, or `namespaces` (always bubblewrap's namespaces as well).
    pub profile: String,
    /// The grants, each once, in manifest order.
    pub grants: Vec<Grant>,
    /// Readable files or directories (needs `filesystem_read`).
    pub read_paths: Vec<String>,
    /// Writable files or directories, which must exist (needs `filesystem_write`).
    pub write_paths: Vec<String>,
    /// Extra library or module files the interpreter needs (readable and executable).
    pub code_paths: Vec<String>,
    /// Exact Unix socket paths (needs `network_local`).
    pub local_sockets: Vec<String>,
}

impl ProcessSandbox {
    /// Whether `grant` is granted.
    pub fn grants(&self, grant: Grant) -> bool {
        self.grants.contains(&grant)
    }
}

/// The paths of a process tool resolved against the harness directory at
/// load (absolute); absent when the manifest was loaded on its own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedProcess {
    /// The executable, absolute (a bare name found on [`COMMAND_SEARCH_PATH`]).
    pub command: std::path::PathBuf,
    /// The working directory.
    pub cwd: std::path::PathBuf,
    /// The handler script: the first of `args` that names a file, when that
    /// file is inside the harness directory; readable under the sandbox.
    pub arg_files: Vec<std::path::PathBuf>,
    /// `sandbox.read_paths`, absolute.
    pub read_paths: Vec<std::path::PathBuf>,
    /// `sandbox.write_paths`, absolute.
    pub write_paths: Vec<std::path::PathBuf>,
    /// `sandbox.code_paths`, absolute.
    pub code_paths: Vec<std::path::PathBuf>,
    /// `sandbox.local_sockets`, absolute.
    pub local_sockets: Vec<std::path::PathBuf>,
}

/// The fields of a `process` tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// `spec.command` as written: an absolute path or a bare name.
    pub command: String,
    /// `spec.args` (argv after the command; no shell ever parses them).
    pub args: Vec<String>,
    /// `spec.cwd`, relative to the harness directory (default `.`).
    pub cwd: String,
    /// `spec.env`: variable in the handler → host variable it is copied from.
    pub env: BTreeMap<String, String>,
    /// `spec.max_payload_bytes`: the request and the response, each.
    pub max_payload_bytes: u64,
    /// `spec.sandbox` (default: not required, no grants).
    pub sandbox: ProcessSandbox,
    /// The paths resolved at load from a harness directory.
    pub resolved: Option<ResolvedProcess>,
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
    /// `metadata.title` (issue 22): a display name, the MCP tool's `title`.
    pub title: Option<String>,
    /// `spec.transport` (default native).
    pub transport: Transport,
    /// `spec.description` (default empty).
    pub description: String,
    /// `spec.input_schema` (default `{"type": "object"}`).
    pub input_schema: Value,
    /// `spec.output_schema` (issue 22): the JSON Schema the output must meet
    /// at step 9 (`output_schema_mismatch`); the MCP `outputSchema`, with the
    /// output sent as `structuredContent`. Part of the definition digest.
    pub output_schema: Option<Value>,
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
    /// `spec.egress` is written in the manifest (an MCP tool with `egress: []`
    /// written says it sends nothing out; without it, its server is egress).
    pub egress_declared: bool,
    /// `spec.flow.sinks` (issue 23): the arguments that choose where data
    /// goes or what is done; `None` when not written (a tool with egress
    /// then takes the arguments named like a destination).
    pub sinks: Option<Vec<String>>,
    /// `spec.flow.links` (issue 23): content arguments (a message body) whose
    /// links (URLs, e-mail addresses, IBANs) must not come only from
    /// untrusted content; `None` when not written.
    pub links: Option<Vec<String>>,
    /// `spec.flow.identifies` (issue 23): a sink argument's name → the path
    /// of the output's values that name a valid value for it (a channel of
    /// the workspace's list, a message's sender), trusted whole, never their words.
    pub identifies: BTreeMap<String, String>,
    /// `spec.flow.identifies_when_named` (issue 23): as `identifies`, for the
    /// output of a call whose string arguments the run's task writes only
    /// (the participants of the event the user names).
    pub identifies_when_named: BTreeMap<String, String>,
    /// `spec.flow.links_when_named` (issue 23): as `identifies_when_named`,
    /// for the links (URLs, e-mail addresses, IBANs) inside the text at each
    /// path (the websites posted in the channel the user names).
    pub links_when_named: BTreeMap<String, String>,
    /// `spec.flow.intent`: the entries (words) of a request that asks for
    /// what the tool does; `None` when not written (any task may lead to it).
    pub intent: Option<Vec<String>>,
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
    /// `spec.command`, `args`, `cwd`, `env`, `max_payload_bytes`, `sandbox` (process).
    pub process: Option<ProcessSpec>,
    /// `spec.effect` (issue 21): the effect contract, the draft `null`, or absent.
    pub effect: super::effect::EffectField,
    /// `spec.secrets` (issue 21): the secret handles the handler receives.
    pub secrets: Vec<String>,
    /// `spec.secrets_delivery: native` (issue 21): a native handler receives
    /// the values of `secrets` (its `secrets` keyword; `ctx.secrets` in Node).
    pub native_secrets: bool,
    /// `spec.client_capabilities` (issue 22, mcp tools only): what the tool's
    /// upstream server may ask of the caller's client while it runs
    /// (sampling, elicitation, roots). A 2026-07-28 request that does not
    /// declare one of them is refused before the call (`-32021`).
    pub client_capabilities: Vec<ClientCapability>,
}

/// A client capability an MCP tool's upstream may need (`spec.client_capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientCapability {
    /// `sampling/createMessage`: a completion from the client's model.
    Sampling,
    /// `elicitation/create`: input from the client's user.
    Elicitation,
    /// `roots/list`: the client's roots.
    Roots,
}

impl ClientCapability {
    /// Every capability, with its manifest word.
    pub const ALL: [(&'static str, Self); 3] = [("sampling", Self::Sampling), ("elicitation", Self::Elicitation), ("roots", Self::Roots)];

    /// `sampling`, `elicitation` or `roots` (the MCP capability's name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sampling => "sampling",
            Self::Elicitation => "elicitation",
            Self::Roots => "roots",
        }
    }
}

/// `native`, `http`, `code`, `mcp` or `process`.
pub fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Native => "native",
        Transport::Http => "http",
        Transport::Code => "code",
        Transport::Mcp => "mcp",
        Transport::Process => "process",
        Transport::Builtin => "builtin",
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

pub(crate) const RISKS: &[(&str, Risk)] = &[("low", Risk::Low), ("medium", Risk::Medium), ("high", Risk::High), ("critical", Risk::Critical)];

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

/// The form under which two tool names count as one (issue 17 item 13): the
/// name lowercased (case folding), then its Unicode confusable skeleton (UTS
/// #39, so `l`, `I` and `1`, `O` and `0`, `rn` and `m` meet), lowercased again.
/// A model reading `Refund_payment` and `refund_payment` cannot tell which it
/// calls, so a harness may not hold both.
pub fn confusable_key(name: &str) -> String {
    unicode_security::skeleton(&name.to_lowercase()).flat_map(char::to_lowercase).collect()
}

/// `NAME` of an MCP tool's `server: mcp://NAME`, or `None` when it is not of that form.
pub fn mcp_server_name(server: &str) -> Option<&str> {
    server.strip_prefix("mcp://").filter(|n| !n.is_empty() && !n.contains('/'))
}
