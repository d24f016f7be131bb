//! The values a call takes and gives, shared by every layer: who calls and
//! in what context, the ticket of a call that may run and how it ended, and
//! the result handed back. The governor, the audit trail, the backends, the
//! transports and the gateway all speak these types; this module imports
//! only the bottom layers (codes, errors, canonical JSON, store labels).

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crate::canonical;
use crate::error::Error;
use crate::store::Labels;

use crate::codes::ArgumentCode;
pub use crate::codes::{Decision, RefusalCode, Step};

/// Who makes a call: an id, roles, scopes and free attributes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Principal {
    /// A stable identifier.
    pub id: String,
    /// Roles, for approvals (`approver_role`) and policy rules.
    pub roles: Vec<String>,
    /// Permissions; a tool's `scopes` must all be held.
    pub scopes: Vec<String>,
    /// Anything else policy rules may read (`principal.attrs.team`).
    pub attrs: Map<String, Value>,
}

impl Principal {
    /// The names of its fields, in order (bindings make them properties).
    pub const FIELDS: [&'static str; 4] = ["id", "roles", "scopes", "attrs"];

    /// A principal with just an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), ..Self::default() }
    }

    /// Reads a principal from a mapping `{id, roles, scopes, attrs}`; anything
    /// else (null: none given; a host passes null for a value with no JSON
    /// form) is an `invalid_principal` error naming the field.
    pub fn from_value(value: &Value) -> Result<Self, Error> {
        let bad = |message: String| Error::InvalidArgument { code: ArgumentCode::InvalidPrincipal.as_str(), message };
        let map = match value {
            Value::Object(map) => map,
            Value::Null => return Err(bad("a call needs a principal (a mapping with `id`, or a Principal)".into())),
            _ => return Err(bad("a principal is a mapping with `id`, `roles`, `scopes` and `attrs`".into())),
        };
        for key in map.keys() {
            if !matches!(key.as_str(), "id" | "roles" | "scopes" | "attrs") {
                return Err(bad(format!("unknown principal field `{key}` (expected id, roles, scopes, attrs)")));
            }
        }
        let id = match map.get("id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            Some(_) => return Err(bad("principal `id` must be a non-empty string".into())),
            None => return Err(bad("a principal needs an `id`".into())),
        };
        let strings = |field: &str| -> Result<Vec<String>, Error> {
            match map.get(field) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string).ok_or_else(|| bad(format!("principal `{field}` must be a list of strings"))))
                    .collect(),
                Some(_) => Err(bad(format!("principal `{field}` must be a list of strings"))),
            }
        };
        let attrs = match map.get("attrs") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(attrs)) => attrs.clone(),
            Some(_) => return Err(bad("principal `attrs` must be a mapping".into())),
        };
        Ok(Self { id, roles: strings("roles")?, scopes: strings("scopes")?, attrs })
    }

    /// The principal as a JSON object (what cel-lite sees as `principal`).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), Value::String(self.id.clone()));
        map.insert("roles".into(), self.roles.iter().cloned().map(Value::String).collect());
        map.insert("scopes".into(), self.scopes.iter().cloned().map(Value::String).collect());
        map.insert("attrs".into(), Value::Object(self.attrs.clone()));
        Value::Object(map)
    }

    /// Whether the principal holds `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
}

/// Everything about a call besides the tool and its arguments.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Who calls.
    pub principal: Principal,
    /// The tenant the call is made for.
    pub tenant: Option<String>,
    /// The task (free text or an id) the call serves.
    pub task: Option<String>,
    /// The run the call belongs to; a call without one gets a run of its own.
    pub run_id: Option<String>,
    /// An approval granted for exactly this call.
    pub approval_id: Option<String>,
    /// The idempotency key to use (a retry of an earlier call passes its key).
    pub idempotency_key: Option<String>,
    /// When an approver edited the args: the digest of the args first asked for.
    pub original_args_digest: Option<String>,
    /// The call this one compensates (issue 21): linked in the effect journal.
    pub compensates: Option<String>,
    /// Issue 22: where the call's progress goes while it runs (the MCP
    /// gateway sets it for a caller that gave a progress token).
    pub progress: Option<crate::progress::ProgressListener>,
}

/// What the output policy did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutputReport {
    /// The output was cut to `max_bytes`.
    pub truncated: bool,
    /// Redactions and removals per kind (never what was removed).
    pub redactions: BTreeMap<String, u64>,
    /// `untrusted` or `trusted`.
    pub label: &'static str,
    /// Issue 22: the output is a list of MCP content parts (an MCP tool
    /// answered images, audio or embedded resources); what step 9 kept and dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentReport>,
}

/// What step 9 did to an MCP tool's content parts (issue 22).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ContentReport {
    /// How many parts the output holds.
    pub parts: usize,
    /// The parts left out, in order.
    pub dropped: Vec<DroppedPart>,
}

/// A content part step 9 left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DroppedPart {
    /// Its position among the parts the tool answered (from 0).
    pub index: usize,
    /// Its MCP type (`image`, `audio`, `resource`, …), as the tool said it.
    #[serde(rename = "type")]
    pub kind: String,
    /// Why.
    pub code: crate::codes::ContentDrop,
}

/// A call waiting for a human, as shown to the caller and the approver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The approval's id, for `approve` / `deny`.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// Digest of the canonical args the approval is bound to.
    pub args_digest: String,
    /// The role an approver must hold (none: any principal may approve).
    pub approver_role: Option<String>,
    /// Why approval is needed.
    pub reasons: Vec<String>,
    /// When it expires (ms since the epoch).
    pub expires_ms: u64,
    /// "Always allow" proposals a built-in tool's gate offers (issue 20):
    /// none authorises anything until an approver accepts it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<crate::builtins::Candidate>,
}

/// The value every call returns: allowed, refused or pending, with its code,
/// step and a message safe to give a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallResult {
    /// `allowed`, `refused` or `pending`.
    pub decision: Decision,
    /// The stable code of a refusal or pending approval.
    pub code: Option<RefusalCode>,
    /// The step that decided a refusal or pending approval.
    pub step: Option<Step>,
    /// Safe to show a model: never args, secrets or handler internals.
    pub message: String,
    /// The tool called.
    pub tool: String,
    /// This call's id.
    pub call_id: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The cleaned output (allowed calls only).
    pub output: Option<Value>,
    /// What the output policy did (allowed calls only).
    pub output_report: Option<OutputReport>,
    /// The pending approval (pending calls only).
    pub approval: Option<ApprovalRequest>,
    /// When a rate-limited call may be retried, in ms.
    pub retry_after_ms: Option<u64>,
    /// Which rules, fields or expressions decided.
    pub reasons: Vec<String>,
    /// The run's labels after the call.
    pub labels: Labels,
    /// What policy rules in shadow mode would have refused (the call went on).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_refuse: Vec<WouldRefuse>,
}

impl CallResult {
    /// Whether the call ran.
    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::Allowed
    }

    /// The names of its fields, in order (bindings make them properties).
    pub const FIELDS: [&'static str; 14] = [
        "decision", "code", "step", "message", "tool", "call_id", "run_id", "output", "output_report", "approval", "retry_after_ms", "reasons",
        "labels", "would_refuse",
    ];

    /// The fields a result's short form shows (a binding's `repr`).
    pub const SUMMARY: [&'static str; 4] = ["decision", "tool", "code", "step"];

    /// [`Self::FIELDS`] and `allowed`: what bindings expose as the result's properties.
    pub const PROPERTIES: [&'static str; 15] = [
        "decision", "allowed", "code", "step", "message", "tool", "call_id", "run_id", "output", "output_report", "approval", "retry_after_ms",
        "reasons", "labels", "would_refuse",
    ];

    /// One of [`Self::PROPERTIES`] as a JSON value (`would_refuse` is `[]` when
    /// empty); `None` for any other name.
    pub fn field(&self, name: &str) -> Option<Value> {
        let value = match name {
            "allowed" => Ok(Value::Bool(self.is_allowed())),
            "decision" => serde_json::to_value(self.decision),
            "code" => serde_json::to_value(self.code),
            "step" => serde_json::to_value(self.step),
            "message" => Ok(Value::from(self.message.as_str())),
            "tool" => Ok(Value::from(self.tool.as_str())),
            "call_id" => Ok(Value::from(self.call_id.as_str())),
            "run_id" => Ok(Value::from(self.run_id.as_str())),
            "output" => Ok(self.output.clone().unwrap_or(Value::Null)),
            "output_report" => serde_json::to_value(&self.output_report),
            "approval" => serde_json::to_value(&self.approval),
            "retry_after_ms" => serde_json::to_value(self.retry_after_ms),
            "reasons" => serde_json::to_value(&self.reasons),
            "labels" => serde_json::to_value(self.labels),
            "would_refuse" => serde_json::to_value(&self.would_refuse),
            _ => return None,
        };
        value.ok()
    }

    /// The result as one JSON object (what bindings hand their hosts).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The text to hand back to the model: the output for an allowed call
    /// (a string as is, anything else as canonical JSON), otherwise a short
    /// line with the code and message.
    pub fn to_model(&self) -> String {
        match self.decision {
            Decision::Allowed => match &self.output {
                Some(Value::String(s)) => s.clone(),
                Some(other) => canonical::to_string(other).unwrap_or_default(),
                None => String::new(),
            },
            Decision::Refused => {
                let code = self.code.map_or("refused", RefusalCode::as_str);
                match self.retry_after_ms {
                    Some(ms) => format!("[tool call refused: {code}] {} (retry after {ms} ms)", self.message),
                    None => format!("[tool call refused: {code}] {}", self.message),
                }
            }
            Decision::Pending => {
                let id = self.approval.as_ref().map_or("", |a| a.id.as_str());
                format!("[tool call waiting for approval: {id}] {}", self.message)
            }
        }
    }
}

/// How a tool is reached. Every ticket carries a copy, so the names are
/// shared (`Arc<str>`), not copied per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A host function, invoked by the binding.
    Native { handler: Option<Arc<str>> },
    /// POST to a URL.
    Http { url: Arc<str> },
    /// Code in a sandbox.
    Code { sandbox: Arc<str> },
    /// An MCP server's tool.
    Mcp { server: Arc<str> },
    /// A local process speaking `harnessweaver-process-v1` on stdin/stdout;
    /// `confined` when its manifest requires the OS sandbox.
    Process { command: String, confined: bool },
    /// A governed built-in tool (`spec.builtins`), run by the core.
    Builtin,
}

impl Transport {
    /// For a `process` tool, whether it runs under the OS sandbox (the
    /// audit event's `confined`); `None` for the other transports.
    pub fn confined(&self) -> Option<bool> {
        match self {
            Transport::Process { confined, .. } => Some(*confined),
            _ => None,
        }
    }
}

/// A call that passed steps 1–7 and may now run.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The call's id.
    pub call_id: String,
    /// The policy rules that decided (`layer/rule`), for the audit event (issue 24).
    pub rules: Vec<String>,
    /// The run's id.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// The validated arguments.
    pub args: Value,
    /// The key handlers and services use to recognise a retried call.
    pub idempotency_key: String,
    /// How long the tool may take, in ms (never past the run's deadline).
    pub timeout_ms: u64,
    /// The deadline of the call's run (`spec.runs` timeout), ms since the epoch.
    pub(crate) run_deadline_ms: Option<u64>,
    /// How to reach it.
    pub transport: Transport,
    pub(crate) tool_index: usize,
    pub(crate) principal: String,
    pub(crate) tenant: Option<String>,
    pub(crate) args_digest: Option<String>,
    pub(crate) approval_id: Option<String>,
    pub(crate) original_args_digest: Option<String>,
    pub(crate) would_refuse: Vec<WouldRefuse>,
    /// The call made its own run (no explicit run): forget it when the call ends.
    pub(crate) own_run: bool,
    /// The run's labels as known when the call was decided.
    pub(crate) labels: Option<Labels>,
    pub(crate) ts_ms: u64,
    /// When the call began (only when an audit sink records its timings).
    pub(crate) started: Option<Instant>,
    pub(crate) decide_us: u64,
    /// A built-in tool's prepared call: what the gate allowed, re-checked at invocation.
    pub(crate) prepared: Option<Arc<crate::builtins::Prepared>>,
    /// The call's intent is in the effect journal: record its outcome (issue 21).
    pub(crate) effect: bool,
    /// The call it compensates, linked when it succeeds.
    pub(crate) compensates: Option<String>,
    /// The values of the tool's secret handles, for its transport only.
    pub(crate) secrets: SecretValues,
    /// The operation the transport asks of the handler: `invoke`, or the
    /// tool's `reconcile_operation` when a retry asks whether a write happened.
    pub(crate) operation: Option<String>,
    /// The sink arguments provenance sent to a human, for the audit event (issue 23).
    pub(crate) sinks: Vec<crate::audit::SinkDigest>,
    /// Issue 22: the call's progress channel (a no-op when nobody listens).
    pub(crate) progress: crate::progress::Progress,
    /// `requested` / `unrequested` for a tool with `flow.intent` (issue 23).
    pub(crate) intent: Option<&'static str>,
    /// `flow.trust_single_value`: the kinds whose one value in the output is
    /// trusted (the task named the call and asked for that kind; issue 23).
    pub(crate) trust_single: Vec<crate::harness::ValueKind>,
    /// The task names the call: its `flow.identifies_when_named` apply (issue 23).
    pub(crate) named: bool,
}

/// The values of a call's secret handles (issue 21): handed to the tool
/// through its transport's channel only; `Debug` never prints them.
#[derive(Clone, Default)]
pub struct SecretValues(pub(crate) Arc<[(String, Arc<str>)]>);

impl SecretValues {
    /// Handle and value, in the manifest's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(h, v)| (h.as_str(), &**v))
    }

    /// No value is handed out.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values alone (step 9 masks every echo of them).
    pub fn values(&self) -> Arc<[String]> {
        self.0.iter().map(|(_, v)| v.to_string()).collect()
    }
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(h, _)| format!("{h}=***"))).finish()
    }
}

impl Ticket {
    /// The values of the tool's secret handles (issue 21), for its transport.
    pub fn secrets(&self) -> &SecretValues {
        &self.secrets
    }

    /// The operation asked of the handler (the process protocol's `operation`): `invoke`,
    /// or the tool's `reconcile_operation` (issue 21).
    pub fn operation(&self) -> &str {
        self.operation.as_deref().unwrap_or("invoke")
    }

    /// The call's progress channel (issue 22): a transport or a host handler
    /// reports through it; the core decides what reaches the caller.
    pub fn progress(&self) -> &crate::progress::Progress {
        &self.progress
    }
}

/// What happened when the tool was invoked.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeOutcome {
    /// The tool returned this value.
    Returned(Value),
    /// A core transport reached the tool with these secret values (http
    /// `headers_env` values, an MCP server's `env` or `headers_env` values)
    /// and it returned `value`: step 9 masks every echo of them first.
    ReturnedWithSecrets {
        /// What the tool returned.
        value: Value,
        /// The values handed out for the call (never shown, audited or logged).
        secrets: Arc<[String]>,
    },
    /// An MCP tool answered content parts (issue 22): MCP content blocks as
    /// JSON (`text`, `image`, `audio`, `resource`, `resource_link`), with the
    /// secret values the transport handed out, if any. Step 9 governs each
    /// part ([`OutputReport::content`]).
    Content {
        /// The parts, in order.
        parts: Vec<Value>,
        /// The values handed out for the call (never shown, audited or logged).
        secrets: Option<Arc<[String]>>,
    },
    /// The tool raised or failed; `kind` is a short, safe name (an exception class).
    Failed { kind: String },
    /// The tool overran its timeout and was abandoned.
    TimedOut,
    /// The tool returned something with no JSON form.
    NotJson { reason: String },
    /// The transport refused to reach the tool (test mode, policy).
    TransportRefused { reason: String },
    /// The sandbox reported an error (a safe, Python-style message).
    SandboxError { message: String },
    /// A required OS sandbox cannot be set up here; the message names what is missing.
    SandboxUnavailable { message: String },
    /// A required OS sandbox cannot enforce the tool's policy; the message names the scope.
    SandboxUnsupportedPolicy { message: String },
    /// A built-in tool refused at invocation with its own code (`path_changed`,
    /// `stale_write`, `edit_mismatch`); the message is safe to show a model.
    Refused { code: RefusalCode, message: String },
}

/// A refusal that a rule or layer in shadow mode would have made.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct WouldRefuse {
    /// The code it would have refused with.
    pub code: RefusalCode,
    /// The step.
    pub step: Step,
    /// The policy layer.
    pub layer: String,
    /// The rule (none: the layer's default deny).
    pub rule: Option<String>,
}
