//! The harness model: `harness.yaml`'s settings as typed values with their
//! defaults, and the loaded [`Harness`] (settings, directory, tools). No
//! parsing and no files here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::manifest::{Location, Risk, Tool};

/// `spec.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The default.
    Production,
    /// Test mode: the http transport refuses to call out (R14).
    Test,
}

/// `spec.tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsSettings {
    /// Globs relative to harness.yaml naming the manifest files.
    pub manifests: Vec<String>,
    /// Every tool, including tools registered in code, needs a manifest (default true).
    pub require_manifest: bool,
    /// Every manifest needs a matching `definition_digest`: an unpinned tool
    /// fails the load with `unpinned` (default false; issue 18).
    pub require_pins: bool,
    /// The default `output.max_bytes` (default 100000).
    pub max_output_bytes: u64,
    /// Risks whose calls always need approval.
    pub approval_by_risk: Vec<Risk>,
    /// `require_lock` (issue 21): the harness loads only when every tool matches `harness.lock`.
    pub require_lock: bool,
}

/// The effect of a policy rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Allow the call.
    Allow,
    /// Refuse the call (authoritative).
    Deny,
    /// Send the call to approval.
    Approve,
}

/// Whether a rule (or a layer of rules) refuses calls or only records what it would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnforceMode {
    /// Refusals stand (the default).
    Enforce,
    /// What would be refused is recorded (`would_refuse` in audit) and the call proceeds.
    Shadow,
}

impl EnforceMode {
    /// `enforce` or `shadow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enforce => "enforce",
            Self::Shadow => "shadow",
        }
    }
}

/// A layer of policy (`spec.policy.layers[]`; the inline `spec.policy.rules`
/// are the last layer, `harness`). A call must pass every layer, so a lower
/// layer can only narrow what a higher one allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLayer {
    /// The layer's name (`managed`, `project`, …).
    pub name: String,
    /// The layer's mode (its rules' default).
    pub mode: EnforceMode,
    /// Whether a call no allow rule of this layer matches is allowed (default true).
    pub default_allow: bool,
    /// The file the layer came from, relative to harness.yaml (none: inline).
    pub file: Option<String>,
}

/// What a policy example expects of its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExampleExpect {
    /// The rule refuses (deny), or asks for approval (approve), or does not allow (allow rules).
    Refuse,
    /// The rule lets the call through.
    Allow,
}

/// One example call carried by a rule, checked when the harness loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyExample {
    /// What the rule must do with it.
    pub expect: ExampleExpect,
    /// The tool called.
    pub tool: String,
    /// The arguments.
    pub args: serde_json::Value,
    /// The principal (`{id, roles, scopes, attrs}`).
    pub principal: serde_json::Value,
    /// The tenant.
    pub tenant: Option<String>,
    /// Where the example is, for the problem when it fails.
    pub location: Location,
    /// Its field path.
    pub path: String,
}

/// One rule of a policy layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// The rule's name (in decisions and audit events).
    pub name: String,
    /// What a match does.
    pub effect: Effect,
    /// Tool name globs the rule covers (default: all, `*`).
    pub tools: Vec<String>,
    /// A cel-lite condition (default `true`), compiled by cel-lite.
    pub when: String,
    /// Where `when` is.
    pub when_location: Location,
    /// Index of the layer in [`HarnessSpec::layers`].
    pub layer: usize,
    /// The rule's effective mode (its own, else its layer's).
    pub mode: EnforceMode,
    /// Example calls the rule must decide as stated.
    pub examples: Vec<PolicyExample>,
    /// The file holding the rule, relative to harness.yaml.
    pub file: String,
}

/// `spec.flow.trifecta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrifectaMode {
    /// Refuse the call (default).
    Block,
    /// Send it to approval.
    Approve,
    /// No check.
    Off,
    /// Allow the call when every sink argument (`flow.sinks`) is traceable
    /// to trusted input (the run's `task`, trusted outputs); otherwise
    /// refuse, or ask for approval under `flow.tainted_arguments: approve`
    /// (issue 23).
    Provenance,
}

/// `spec.flow.tainted_arguments`: what a sink argument whose value came only
/// from untrusted content gets (issue 23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaintedMode {
    /// Refuse the call: `tainted_argument` (default).
    Refuse,
    /// Send it to approval.
    Approve,
    /// No check.
    Allow,
}

/// A kind of structured value `spec.flow.trust_single_value` may trust
/// (issue 23): the one value of its kind in the output of a call the task
/// names, when the task asks for that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueKind {
    /// An e-mail address.
    Email,
    /// A URL (or a bare host name).
    Url,
    /// An IBAN.
    Iban,
}

impl ValueKind {
    /// The kind as written in a harness.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Url => "url",
            Self::Iban => "iban",
        }
    }
}

/// `spec.budgets`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budgets {
    /// Tool calls allowed per run.
    pub max_tool_calls: Option<u64>,
    /// Calls allowed per run, by tool name.
    pub per_tool: BTreeMap<String, u64>,
}

/// `spec.approvals`: who may grant an approval, and how many may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalSettings {
    /// `allow_self_approval`: the principal whose call waits may grant it
    /// (default false: separation of duties, `approver_not_allowed`).
    pub allow_self_approval: bool,
    /// `max_open_per_principal`: approvals one principal may have open
    /// (pending or granted, not expired) at once; past it a call that needs
    /// approval is refused `approval_limit` (default 100).
    pub max_open_per_principal: u64,
}

/// The default of `spec.approvals.max_open_per_principal`.
pub const DEFAULT_MAX_OPEN_APPROVALS: u64 = 100;

impl Default for ApprovalSettings {
    fn default() -> Self {
        Self { allow_self_approval: false, max_open_per_principal: DEFAULT_MAX_OPEN_APPROVALS }
    }
}

/// `spec.audit.sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSink {
    /// No audit trail (default).
    None,
    /// Events go to a host callback.
    Callback,
    /// Events are appended to a JSON Lines file (relative to harness.yaml).
    Jsonl(String),
    /// `sqlite:<path>`: events are rows of the `audit` table of that SQLite
    /// file (relative to harness.yaml; may be the state file).
    Sqlite(String),
}

/// How a chained audit sink signs its checkpoints (issue 24).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSigning {
    /// `spec.audit.signing_key`: `env:NAME` or a file (relative to
    /// harness.yaml) holding an Ed25519 seed as 64 hex digits; none: the chain
    /// is kept but no checkpoint is signed.
    pub signing_key: Option<KeySource>,
    /// `spec.audit.checkpoint_every`: a checkpoint after this many records (and at close).
    pub checkpoint_every: u64,
    /// `spec.audit.single_writer`: the JSON Lines sink is its file's only
    /// writer (no lock per record; checked when the sink opens).
    pub single_writer: bool,
}

impl Default for AuditSigning {
    fn default() -> Self {
        Self { signing_key: None, checkpoint_every: crate::audit::DEFAULT_CHECKPOINT_EVERY, single_writer: false }
    }
}

/// Where a secret key is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An environment variable.
    Env(String),
    /// A file (relative to harness.yaml).
    File(String),
}

/// `spec.state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateBackend {
    /// In memory (default).
    Memory,
    /// `sqlite:<path>`.
    Sqlite(String),
    /// `redis://…` or `rediss://…` (one server), `redis+cluster://h1:p1,h2:p2`
    /// (Redis Cluster) or `redis+sentinel://s1:p1,s2:p2/<master>` (a
    /// Sentinel-managed primary).
    Redis(String),
}

/// What the governor does with a rate limit when the store cannot be reached
/// (`spec.state_options.rate_limits_on_store_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorMode {
    /// Refuse the call with `store_unavailable` (default).
    Closed,
    /// Skip the rate limit and go on (budgets, labels and approvals still
    /// fail closed).
    Open,
}

/// `spec.state_options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateOptions {
    /// `rate_limits_on_store_error`: `closed` (default) or `open`.
    pub rate_limits_on_store_error: StoreErrorMode,
    /// `run_ttl`: how long a run's labels and budgets are kept after its last
    /// change, in ms (default 24h; Redis expires them, SQLite prunes them).
    pub run_ttl_ms: u64,
    /// `busy_timeout`: how long a SQLite writer waits for the lock, and a
    /// Redis command for its reply, before the store counts as unavailable,
    /// in ms (default 5s).
    pub timeout_ms: u64,
}

impl Default for StateOptions {
    fn default() -> Self {
        Self { rate_limits_on_store_error: StoreErrorMode::Closed, run_ttl_ms: 86_400_000, timeout_ms: 5_000 }
    }
}

/// `url` with any password replaced by `***` (for describe, errors and logs).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                // `redis://secret@host` carries the password alone.
                format!("{scheme}://***@{host}{tail}")
            }
        }
        None => url.to_string(),
    }
}

/// One MCP server of `spec.mcp.servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServer {
    /// A server started as a process speaking stdio.
    Command {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables for it: name to the name of the variable holding the value.
        env: BTreeMap<String, String>,
    },
    /// A server reached over HTTP.
    Url {
        /// Where.
        url: String,
        /// Header name to environment variable name.
        headers_env: BTreeMap<String, String>,
    },
}

/// `spec.mcp.connect`: when the MCP servers of mcp tools are connected and
/// their served definitions checked against the manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpConnect {
    /// When the harness loads (default): an unreachable server is a load error.
    #[default]
    Eager,
    /// At the first call of one of the server's tools.
    Lazy,
}

/// The harness file's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessSpec {
    /// `metadata.name`, when given.
    pub name: Option<String>,
    /// `spec.mode`.
    pub mode: Mode,
    /// `spec.tools`.
    pub tools: ToolsSettings,
    /// The policy layers, highest first; the last is `harness` (the inline `spec.policy.rules`).
    pub layers: Vec<PolicyLayer>,
    /// Every layer's rules, in layer order.
    pub rules: Vec<PolicyRule>,
    /// `spec.flow.trifecta`.
    pub trifecta: TrifectaMode,
    /// `spec.flow.tainted_arguments` (issue 23).
    pub tainted_arguments: TaintedMode,
    /// `spec.flow.unrequested_actions`: what a call of a tool whose
    /// `flow.intent` the run's task does not match gets (refuse, the default,
    /// `action_not_requested`; approve; allow).
    pub unrequested_actions: TaintedMode,
    /// `spec.flow.trust_single_value`: the kinds of value trusted when a
    /// call whose string arguments the task writes returns exactly one value
    /// of that kind and the task asks for that kind (empty: none, the default).
    pub trust_single_value: Vec<ValueKind>,
    /// `spec.budgets`.
    pub budgets: Budgets,
    /// `spec.approvals`.
    pub approvals: ApprovalSettings,
    /// `spec.audit.sink`.
    pub audit_sink: AuditSink,
    /// `spec.audit.signing_key` and `spec.audit.checkpoint_every` (issue 24).
    pub audit_signing: AuditSigning,
    /// `spec.state`.
    pub state: StateBackend,
    /// `spec.state_options`.
    pub state_options: StateOptions,
    /// `spec.mcp.servers`.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// `spec.mcp.connect`.
    pub mcp_connect: McpConnect,
    /// `spec.gateway`: the MCP gateway's callers (see docs/gateway.md).
    pub gateway: super::gateway::GatewaySpec,
    /// `spec.builtins`: the governed built-in tools (issue 20), when enabled.
    pub builtins: Option<super::builtins::BuiltinsSpec>,
    /// `spec.effects` (issue 21): contracts required, and the effect journal.
    pub effects: super::effects::EffectsSettings,
    /// `spec.secrets` and `spec.secret_scopes` (issue 21).
    pub secrets: super::effects::SecretsSettings,
    /// `spec.runs` (issue 21): who may start a run and how often, narrowed
    /// by policy layer files; none admits every run.
    pub runs: Option<super::runs::RunsSettings>,
}

/// A loaded harness: its settings and every tool's manifest.
#[derive(Debug, Clone)]
pub struct Harness {
    pub(super) spec: HarnessSpec,
    pub(super) dir: PathBuf,
    pub(super) tools: Vec<Tool>,
}

impl Harness {
    /// The tools, in the order their manifests were found.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The harness file's settings.
    pub fn spec(&self) -> &HarnessSpec {
        &self.spec
    }

    /// The directory holding harness.yaml (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
