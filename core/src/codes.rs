//! Every stable code the core produces, one enum per family, and the steps.
//!
//! Codes are API: `as_str()` is the string that appears in fixtures, in
//! Python's `.code`, JavaScript's `err.code` and Swift, and each enum
//! serialises as that string. Bindings build their error classes from these
//! enums (`RefusalClass::ALL`), and the docs' code tables are checked against
//! `ALL`, so adding a code cannot leave a binding or a page behind.
//!
//! This is the bottom of the crate: it imports nothing of it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Defines a code enum: its variants with their API strings, `ALL`,
/// `as_str`, `parse`, `Display`, and serde as the string.
macro_rules! codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+ }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vmeta])* $variant, )+ }

        impl $name {
            /// Every code of the family, in documentation order.
            pub const ALL: &'static [Self] = &[ $( Self::$variant, )+ ];

            /// The API string (snake_case).
            pub const fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $text, )+ }
            }

            /// The code whose API string is `text`.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $( $text => Some(Self::$variant), )+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown code `{text}`")))
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
    };
}

/// The nine steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// 1: the tool exists, has a manifest, is enabled for the tenant.
    Resolve,
    /// 2: arguments against the schema and payload constraints.
    Validate,
    /// 3: the definition digest matches its pin.
    Pin,
    /// 4: scopes and policy rules.
    Policy,
    /// 5: run budgets and rate limits.
    Limits,
    /// 6: the lethal-trifecta rule.
    Flow,
    /// 7: approvals.
    Approval,
    /// 8: the transport runs the tool.
    Invoke,
    /// 9: sanitize, cut, label.
    Output,
}

impl Step {
    /// The nine steps in order.
    pub const ALL: &'static [Step] =
        &[Self::Resolve, Self::Validate, Self::Pin, Self::Policy, Self::Limits, Self::Flow, Self::Approval, Self::Invoke, Self::Output];

    /// The steps that read or write the state store, and so may refuse with
    /// `store_unavailable` when it cannot be reached.
    pub const USES_STORE: &'static [Step] = &[Self::Policy, Self::Limits, Self::Approval, Self::Invoke, Self::Output];

    /// The step's snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Resolve => "resolve",
            Self::Validate => "validate",
            Self::Pin => "pin",
            Self::Policy => "policy",
            Self::Limits => "limits",
            Self::Flow => "flow",
            Self::Approval => "approval",
            Self::Invoke => "invoke",
            Self::Output => "output",
        }
    }

    /// The step's number, 1 to 9.
    pub const fn number(self) -> u8 {
        self as u8 + 1
    }

    /// The step whose name is `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The tool ran and its (cleaned) output is in the result.
    Allowed,
    /// A step refused the call.
    Refused,
    /// The call waits for a human.
    Pending,
}

impl Decision {
    /// `allowed`, `refused` or `pending`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Refused => "refused",
            Self::Pending => "pending",
        }
    }
}

codes! {
    /// The code of a refused call, or of one waiting for approval.
    pub enum RefusalCode {
        /// No tool of that name.
        UnknownTool => "unknown_tool",
        /// A handler without a manifest (S2).
        NoManifest => "no_manifest",
        /// `enabled: false`.
        ToolDisabled => "tool_disabled",
        /// The tenant is not in `tenants`.
        TenantNotEnabled => "tenant_not_enabled",
        /// The arguments fail the schema or a payload constraint.
        InvalidArgs => "invalid_args",
        /// The definition changed since it was pinned.
        DigestMismatch => "digest_mismatch",
        /// The principal lacks a scope.
        ScopeMissing => "scope_missing",
        /// A policy rule or a layer's default denies.
        PolicyDenied => "policy_denied",
        /// A run budget is spent.
        BudgetExhausted => "budget_exhausted",
        /// A rate limit is hit (the result carries `retry_after_ms`).
        RateLimited => "rate_limited",
        /// Private + untrusted + egress.
        Trifecta => "trifecta",
        /// The call waits for a human (a pending call, or an approval not granted yet).
        ApprovalRequired => "approval_required",
        /// A reviewer denied the call.
        ApprovalDenied => "approval_denied",
        /// The approval expired before the call ran.
        ApprovalExpired => "approval_expired",
        /// The principal already has `approvals.max_open_per_principal`
        /// approvals open; the call is refused instead of asking another.
        ApprovalLimit => "approval_limit",
        /// The tool overran its timeout.
        Timeout => "timeout",
        /// The tool failed or returned no JSON.
        HandlerError => "handler_error",
        /// The transport refused to reach the tool.
        TransportRefused => "transport_refused",
        /// The sandbox reported an error.
        SandboxError => "sandbox_error",
        /// A process tool requires an OS sandbox and a mechanism it needs is
        /// missing here (Landlock, user namespaces, bubblewrap, seccomp, the
        /// launcher): refused before launch, never run unconfined.
        SandboxUnavailable => "sandbox_unavailable",
        /// A process tool's sandbox policy cannot be enforced on this kernel
        /// (a scope its Landlock ABI lacks): refused before launch.
        SandboxUnsupportedPolicy => "sandbox_unsupported_policy",
        /// The output fails the output constraints.
        InvalidOutput => "invalid_output",
        /// The state store could not be reached (at any step that uses it).
        StoreUnavailable => "store_unavailable",
        // Issue 20, the governed built-in tools (docs/builtins.md).
        /// A built-in tool's path resolves outside the workspace (`..`, an
        /// absolute path, a link): refused at preparation.
        PathEscape => "path_escape",
        /// The gate's access rules deny a built-in tool's requirement (deny is authoritative).
        AccessDenied => "access_denied",
        /// A path's resolution changed between preparation and invocation (a swapped link).
        PathChanged => "path_changed",
        /// `write_file` / `edit_file` of a file not read completely in this run, or changed since.
        StaleWrite => "stale_write",
        /// `edit_file`'s `old_text` does not occur exactly once.
        EditMismatch => "edit_mismatch",
        // Issue 23 (argument provenance): a sink argument (`flow.sinks`)
        // whose value came only from untrusted content.
        /// A sink argument's value came only from untrusted tool output.
        TaintedArgument => "tainted_argument",
        /// A tool whose `flow.intent` says what a request for it uses, in a
        /// run whose task asks for no such action (`flow.unrequested_actions`).
        ActionNotRequested => "action_not_requested",
        // Issue 21 (effects, secrets as handles).
        /// A retry of an external write whose earlier attempt has no recorded
        /// outcome (a crash, a timeout): refused until it is reconciled or
        /// resolved (`retry_mode: none`, or a reconcile that cannot answer).
        EffectUnknown => "effect_unknown",
        /// A retry of an external write that the tool's reconcile operation
        /// says already happened: it is not made again.
        EffectApplied => "effect_applied",
        /// The principal's secret scope lacks a secret handle the tool needs.
        SecretNotInScope => "secret_not_in_scope",
        // Issue 21, second pass (h2021): run timeouts and the `command` secret source.
        /// A call in a run whose `spec.runs` timeout has passed.
        RunExpired => "run_expired",
        /// A secret handle's source gave no value (its command failed, timed out or printed nothing).
        SecretUnavailable => "secret_unavailable",
        // Issue 22 (relays through the MCP gateway): an upstream tool's
        // sampling or elicitation request is egress of the run's data.
        /// A sampling or elicitation request relayed from a running tool to
        /// the caller's client is refused by the flow rules (the trifecta,
        /// `includeContext: allServers`); the upstream gets an error.
        RelayDenied => "relay_denied",
        // Issue 22 (structured content): a tool that declares `output_schema`.
        /// The cleaned output does not meet the tool's `output_schema`
        /// (step 9): withheld, never sent as `structuredContent`.
        OutputSchemaMismatch => "output_schema_mismatch",
    }
}

impl RefusalCode {
    /// The step that owns the code; `None` for `store_unavailable`, which any
    /// step in [`Step::USES_STORE`] may give (the result carries the step).
    pub const fn step(self) -> Option<Step> {
        Some(match self {
            Self::UnknownTool | Self::NoManifest | Self::ToolDisabled | Self::TenantNotEnabled => Step::Resolve,
            Self::InvalidArgs | Self::PathEscape => Step::Validate,
            Self::DigestMismatch => Step::Pin,
            Self::ScopeMissing | Self::PolicyDenied | Self::AccessDenied | Self::SecretNotInScope => Step::Policy,
            Self::BudgetExhausted | Self::RateLimited | Self::RunExpired => Step::Limits,
            Self::Trifecta | Self::TaintedArgument | Self::ActionNotRequested | Self::RelayDenied => Step::Flow,
            Self::ApprovalRequired | Self::ApprovalDenied | Self::ApprovalExpired | Self::ApprovalLimit => Step::Approval,
            Self::Timeout
            | Self::HandlerError
            | Self::TransportRefused
            | Self::SandboxError
            | Self::SandboxUnavailable
            | Self::SandboxUnsupportedPolicy
            | Self::PathChanged
            | Self::StaleWrite
            | Self::EditMismatch
            | Self::EffectUnknown
            | Self::EffectApplied
            | Self::SecretUnavailable => Step::Invoke,
            Self::InvalidOutput | Self::OutputSchemaMismatch => Step::Output,
            Self::StoreUnavailable => return None,
        })
    }

    /// The codes a call refused (or pended) at `step` may carry.
    pub fn at(step: Step) -> impl Iterator<Item = RefusalCode> {
        Self::ALL.iter().copied().filter(move |c| match c.step() {
            Some(s) => s == step,
            None => Step::USES_STORE.contains(&step),
        })
    }
}

/// An extra read-only attribute a refusal class exposes, read from the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClassExtra {
    /// `retry_after_ms` (`retryAfterMs` in JavaScript).
    RetryAfterMs,
    /// `approval`: the pending approval.
    Approval,
}

impl ClassExtra {
    /// The attribute's snake_case name (a binding may camel-case it).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RetryAfterMs => "retry_after_ms",
            Self::Approval => "approval",
        }
    }
}

/// The exception (Python) or Error (JavaScript) class a refused or pending
/// call raises as. `ALL` lists the base first, so a binding can create each
/// parent before its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalClass {
    /// The base of every refusal class.
    ToolBlocked,
    /// Step 1.
    ToolNotFound,
    /// Step 2.
    InvalidArguments,
    /// Step 3.
    DigestMismatch,
    /// Step 4.
    PolicyDenied,
    /// Step 5.
    LimitExceeded,
    /// Step 6.
    FlowBlocked,
    /// Step 7, pending.
    ApprovalRequired,
    /// Step 7, refused.
    ApprovalDenied,
    /// Step 8.
    ToolFailed,
    /// Step 9.
    OutputRejected,
}

impl RefusalClass {
    /// Every class, the base first.
    pub const ALL: &'static [RefusalClass] = &[
        Self::ToolBlocked,
        Self::ToolNotFound,
        Self::InvalidArguments,
        Self::DigestMismatch,
        Self::PolicyDenied,
        Self::LimitExceeded,
        Self::FlowBlocked,
        Self::ApprovalRequired,
        Self::ApprovalDenied,
        Self::ToolFailed,
        Self::OutputRejected,
    ];

    /// The class name, as Python and JavaScript spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ToolBlocked => "ToolBlocked",
            Self::ToolNotFound => "ToolNotFound",
            Self::InvalidArguments => "InvalidArguments",
            Self::DigestMismatch => "DigestMismatch",
            Self::PolicyDenied => "PolicyDenied",
            Self::LimitExceeded => "LimitExceeded",
            Self::FlowBlocked => "FlowBlocked",
            Self::ApprovalRequired => "ApprovalRequired",
            Self::ApprovalDenied => "ApprovalDenied",
            Self::ToolFailed => "ToolFailed",
            Self::OutputRejected => "OutputRejected",
        }
    }

    /// The class's doc line.
    pub const fn doc(self) -> &'static str {
        match self {
            Self::ToolBlocked => "A call that did not run (refused, or waiting for approval); `code`, `step` and `result` are the core's.",
            Self::ToolNotFound => "Step 1 (resolve): unknown tool, no manifest, disabled, tenant not enabled.",
            Self::InvalidArguments => "Step 2 (validate): the arguments fail the schema or a payload constraint.",
            Self::DigestMismatch => "Step 3 (pin): the tool changed since it was pinned.",
            Self::PolicyDenied => "Step 4 (policy): a scope is missing or a policy rule denies.",
            Self::LimitExceeded => "Step 5 (limits): a run budget is spent or a rate limit hit (`retry_after_ms`).",
            Self::FlowBlocked => "Step 6 (flow): the lethal-trifecta rule.",
            Self::ApprovalRequired => "Step 7: the call waits for a human; `approval` is the pending approval.",
            Self::ApprovalDenied => "Step 7: the approval was denied, or is not pending.",
            Self::ToolFailed => "Step 8 (invoke): the handler raised, timed out or returned no JSON.",
            Self::OutputRejected => "Step 9 (output): the output fails the tool's output constraints.",
        }
    }

    /// The parent class; `None` for the base (whose parent is the binding's
    /// own root error class).
    pub const fn parent(self) -> Option<RefusalClass> {
        match self {
            Self::ToolBlocked => None,
            _ => Some(Self::ToolBlocked),
        }
    }

    /// The step the class stands for; `None` for the base.
    pub const fn step(self) -> Option<Step> {
        match self {
            Self::ToolBlocked => None,
            Self::ToolNotFound => Some(Step::Resolve),
            Self::InvalidArguments => Some(Step::Validate),
            Self::DigestMismatch => Some(Step::Pin),
            Self::PolicyDenied => Some(Step::Policy),
            Self::LimitExceeded => Some(Step::Limits),
            Self::FlowBlocked => Some(Step::Flow),
            Self::ApprovalRequired | Self::ApprovalDenied => Some(Step::Approval),
            Self::ToolFailed => Some(Step::Invoke),
            Self::OutputRejected => Some(Step::Output),
        }
    }

    /// Extra read-only attributes the class exposes, read from the result.
    pub const fn extras(self) -> &'static [ClassExtra] {
        match self {
            Self::LimitExceeded => &[ClassExtra::RetryAfterMs],
            Self::ApprovalRequired => &[ClassExtra::Approval],
            _ => &[],
        }
    }

    /// The class of a finished call: pending is `ApprovalRequired`; refused
    /// goes by step (`ApprovalDenied` for the approval step; the base when
    /// no step is known); allowed raises nothing.
    pub const fn of(decision: Decision, step: Option<Step>) -> Option<RefusalClass> {
        match decision {
            Decision::Allowed => None,
            Decision::Pending => Some(Self::ApprovalRequired),
            Decision::Refused => Some(match step {
                None => Self::ToolBlocked,
                Some(Step::Resolve) => Self::ToolNotFound,
                Some(Step::Validate) => Self::InvalidArguments,
                Some(Step::Pin) => Self::DigestMismatch,
                Some(Step::Policy) => Self::PolicyDenied,
                Some(Step::Limits) => Self::LimitExceeded,
                Some(Step::Flow) => Self::FlowBlocked,
                Some(Step::Approval) => Self::ApprovalDenied,
                Some(Step::Invoke) => Self::ToolFailed,
                Some(Step::Output) => Self::OutputRejected,
            }),
        }
    }
}

codes! {
    /// The code of one problem found while loading a harness or a manifest.
    pub enum ProblemCode {
        /// The code of a load error with several problems (each problem has its own).
        LoadError => "load_error",
        /// A file could not be read or written.
        IoError => "io_error",
        /// Not valid YAML, or more than one document.
        YamlSyntax => "yaml_syntax",
        /// Not valid JSON.
        JsonSyntax => "json_syntax",
        /// A key written twice in one mapping.
        DuplicateKey => "duplicate_key",
        /// `apiVersion` is not `harnessweaver/v1`.
        WrongApiVersion => "wrong_api_version",
        /// `kind` is not the expected one.
        WrongKind => "wrong_kind",
        /// A field this version does not know.
        UnknownField => "unknown_field",
        /// A required field is absent.
        MissingField => "missing_field",
        /// A value of the wrong type.
        WrongType => "wrong_type",
        /// A tool name that breaks the name rule.
        InvalidName => "invalid_name",
        /// A value outside its set.
        InvalidValue => "invalid_value",
        /// A malformed duration.
        InvalidDuration => "invalid_duration",
        /// A malformed rate limit.
        InvalidRateLimit => "invalid_rate_limit",
        /// A native tool without `handler`.
        MissingHandler => "missing_handler",
        /// An http tool without `url`.
        MissingUrl => "missing_url",
        /// A field another transport owns.
        ForbiddenField => "forbidden_field",
        /// An mcp tool naming no declared server.
        UnknownMcpServer => "unknown_mcp_server",
        /// A code tool's sandbox is unknown.
        UnknownSandbox => "unknown_sandbox",
        /// A process tool's `command` is not found (absolute, or on the fixed search path).
        CommandNotFound => "command_not_found",
        /// A process tool's `command` is not an executable file.
        CommandNotExecutable => "command_not_executable",
        /// A process tool's `cwd` or sandbox path does not exist.
        PathNotFound => "path_not_found",
        /// A sandbox grant this version does not know.
        UnknownGrant => "unknown_grant",
        /// Sandbox paths without the grant they need (`read_paths` without `filesystem_read`, …).
        GrantMissing => "grant_missing",
        /// An MCP server could not be reached at load.
        McpUnavailable => "mcp_unavailable",
        /// A malformed `definition_digest`.
        InvalidDigest => "invalid_digest",
        /// An `input_schema` that is not a valid JSON Schema.
        InvalidSchema => "invalid_schema",
        /// A manifest glob that matches no file.
        GlobNoMatch => "glob_no_match",
        /// A path outside the harness directory.
        PathEscape => "path_escape",
        /// Two tools with one name.
        DuplicateTool => "duplicate_tool",
        /// Two tool names equal under case folding or Unicode confusable skeletons (UTS #39).
        ConfusableTool => "confusable_tool",
        /// A native tool with no handler.
        HandlerNotRegistered => "handler_not_registered",
        /// Python could not import a tool's `handler`.
        HandlerImportFailed => "handler_import_failed",
        /// A handler given for a tool no manifest declares.
        NoManifest => "no_manifest",
        // Issue 18 (item 5): pins required, handlers that disagree with their manifest.
        /// A manifest without `definition_digest` under `spec.tools.require_pins: true`.
        Unpinned => "unpinned",
        /// The manifest's `handler` names a near miss of the function given for the tool.
        HandlerMismatch => "handler_mismatch",
        /// A policy rule's `examples` call is not decided as stated.
        PolicyExampleFailed => "policy_example_failed",
        /// A gateway principal that is not `{id, roles, scopes, attrs}`.
        InvalidPrincipal => "invalid_principal",
        /// `spec.state` names a store that cannot be opened.
        StateUnavailable => "state_unavailable",
        /// The harness names a backend this build lacks (SQLite, Redis).
        BackendUnavailable => "backend_unavailable",
        /// `audit.sink: callback` with no callback given to load.
        AuditCallbackMissing => "audit_callback_missing",
        /// A cel-lite expression with a syntax error.
        CelSyntax => "cel_syntax",
        /// A CEL feature cel-lite does not support.
        CelUnsupported => "cel_unsupported",
        /// A name outside cel-lite's variables.
        CelUnknownName => "cel_unknown_name",
        /// A function cel-lite does not have.
        CelUnknownFunction => "cel_unknown_function",
        /// A function called with the wrong arguments.
        CelWrongArguments => "cel_wrong_arguments",
        /// A regular expression that does not compile.
        CelBadRegex => "cel_bad_regex",
        /// An expression too long.
        CelTooLarge => "cel_too_large",
        /// An expression nested too deep.
        CelTooDeep => "cel_too_deep",
        // Issue 21 (effects, secrets as handles, run admission).
        /// A tool that writes outside (`side_effect: write_external` or
        /// `destructive`) without `spec.effect`, or with the draft `effect: null`.
        EffectContractMissing => "effect_contract_missing",
        /// `spec.effect.compensation` or `spec.effect.reconcile` names no tool
        /// of the harness, or one the core cannot reach itself.
        UnknownEffectTool => "unknown_effect_tool",
        /// A manifest's `spec.secrets` names a handle `spec.secrets` of the harness does not map.
        UnknownSecret => "unknown_secret",
        /// A policy layer file's `spec.runs` widens a limit of harness.yaml's (or adds a source).
        RunLimitWidened => "run_limit_widened",
        /// `spec.tools.require_lock: true` and a tool differs from `harness.lock` (or there is no lock).
        LockDrift => "lock_drift",
        /// `spec.audit.single_writer: true` and another sink has the audit file
        /// open (or a single writer has it open and another sink opens it), or
        /// the promise cannot be checked there (no `fcntl` locks).
        AuditSingleWriterConflict => "audit_single_writer_conflict",
    }
}

/// The codes of load problems.
pub type LoadCode = ProblemCode;

impl From<&str> for ProblemCode {
    /// The parsers still name their codes as text; a text that is no code
    /// is a bug caught in debug builds and by the fixtures, and reads as
    /// `invalid_value` in release rather than failing a load.
    fn from(text: &str) -> Self {
        let code = Self::parse(text);
        debug_assert!(code.is_some(), "`{text}` is not a load-problem code");
        code.unwrap_or(Self::InvalidValue)
    }
}

codes! {
    /// The code of a bad argument from the host (`InvalidArgument` errors).
    pub enum ArgumentCode {
        /// A principal that is not `{id, roles, scopes, attrs}` with a non-empty `id`.
        InvalidPrincipal => "invalid_principal",
        /// `approve`, `grant` or `deny` of an id the store does not hold.
        UnknownApproval => "unknown_approval",
        /// `approve`, `grant` or `deny` of an approval already decided or used.
        ApprovalNotPending => "approval_not_pending",
        /// `approve` or `grant` of an expired approval.
        ApprovalExpired => "approval_expired",
        /// The approver lacks the approver role.
        ApproverNotAllowed => "approver_not_allowed",
        /// The state store failed outside a call.
        StoreUnavailable => "store_unavailable",
        /// An approver's edited args with no portable JSON form.
        InvalidArgs => "invalid_args",
        /// `tool_specs` in an unknown format.
        InvalidFormat => "invalid_format",
        /// Text passed as JSON that is not JSON.
        InvalidJson => "invalid_json",
        /// `sanitize()` with an unknown sanitizer name.
        UnknownSanitizer => "unknown_sanitizer",
        /// cel-lite `evaluate` with a variable outside its six names.
        InvalidVars => "invalid_vars",
        /// cel-lite `evaluate` stopped by a runtime error.
        Unevaluable => "unevaluable",
        /// Code tools given to load in the wrong shape.
        InvalidTools => "invalid_tools",
        /// A load option of the wrong type.
        InvalidOptions => "invalid_options",
        /// A call finished twice.
        TicketUsed => "ticket_used",
        /// Advancing the clock of a harness that reads the system clock.
        NoTestClock => "no_test_clock",
        /// A call on a harness loaded without handlers.
        NotLoadedForCalls => "not_loaded_for_calls",
        /// `audit.sink: callback` with no callback given to load.
        AuditCallbackMissing => "audit_callback_missing",
        /// A bad argument to the gateway.
        InvalidArgument => "invalid_argument",
        /// The gateway failed to start or stopped with an error.
        GatewayFailed => "gateway_failed",
        // Issue 21 (effects, run admission).
        /// `effects resolve` or `compensate` of a call id the journal does not hold.
        UnknownEffect => "unknown_effect",
        /// `effects resolve` of an entry whose outcome is already known, or
        /// `compensate` of one that did not succeed or has no compensation.
        EffectNotResolvable => "effect_not_resolvable",
        /// A run started from a source `spec.runs` does not list or enable, or
        /// past its `max_runs_per_day`.
        RunNotAdmitted => "run_not_admitted",
        // Issue 22 (in-band approvals through the MCP gateway).
        /// An in-band (caller) decision on an approval the caller may not
        /// decide: its tool is `approval.by: role`, or something besides
        /// `approval.when` asked for it (the trifecta, the risk, a rule).
        ApprovalNotInBand => "approval_not_in_band",
    }
}

codes! {
    /// The code of a value with no portable JSON form (`Value` errors).
    pub enum ValueCode {
        /// An integer beyond ±2^53.
        IntegerOutOfRange => "integer_out_of_range",
        /// NaN or an infinity.
        NonFiniteNumber => "non_finite_number",
        /// A number with no exact JSON form.
        InvalidNumber => "invalid_number",
        /// A value nested deeper than 512 levels (or a cycle).
        NestingTooDeep => "nesting_too_deep",
        /// A string with a lone surrogate.
        InvalidString => "invalid_string",
        /// A dict key that is not a string.
        NonStringKey => "non_string_key",
        /// A host value with no JSON form.
        UnsupportedType => "unsupported_type",
        /// A host value that could not be read.
        InvalidValue => "invalid_value",
    }
}

// Issue 24: what `audit verify` finds in a chained trail (core/src/audit/verify.rs).
codes! {
    /// A finding of `harnessweaver audit verify`.
    pub enum AuditFinding {
        /// A record whose bytes no longer match the digest the next record (or a checkpoint) holds.
        Modified => "audit_modified",
        /// Records missing from the chain (a gap in `seq`).
        Deleted => "audit_deleted",
        /// A record that repeats a `seq`, or carries no chain fields.
        Inserted => "audit_inserted",
        /// A record found after a later one.
        Reordered => "audit_reordered",
        /// A record cut mid-write (the trail's last line is incomplete).
        Truncated => "audit_truncated",
        /// A line or row that is not JSON.
        Unreadable => "audit_unreadable",
        /// A checkpoint whose signature does not verify.
        BadSignature => "audit_bad_signature",
        /// A checkpoint signed by a key the verifier was not given.
        UntrustedKey => "audit_untrusted_key",
        /// Records after the last checkpoint, and no closing checkpoint: they are not proven.
        UnsignedTail => "audit_unsigned_tail",
    }
}

// Issue 22: why step 9 left a part of an MCP tool's content out of its
// result (core/src/governor/content.rs); reported in `output_report.content`.
codes! {
    /// Why a content part (image, audio, embedded resource…) was dropped.
    pub enum ContentDrop {
        /// A part that is not text, from a tool whose `output.content` is `text_only`.
        ContentNotAllowed => "content_not_allowed",
        /// A part that does not fit in what `output.max_bytes` leaves (binary data is never cut).
        ContentTooLarge => "content_too_large",
        /// A part of an unknown type, or without the fields its type requires.
        ContentInvalid => "content_invalid",
    }
}

// Issue 22: why a progress report of a running call was not relayed
// (core/src/progress.rs).
codes! {
    /// Why a progress report was dropped.
    pub enum ProgressDrop {
        /// Nobody listens to this call's progress (its caller gave no progress token).
        ProgressNotListened => "progress_not_listened",
        /// The call has ended.
        ProgressAfterEnd => "progress_after_end",
        /// `progress` is not a finite number, or `total` not a finite number ≥ 0.
        ProgressInvalid => "progress_invalid",
        /// `progress` is not greater than the last report's.
        ProgressNotIncreasing => "progress_not_increasing",
        /// The call already relayed `MAX_REPORTS` reports.
        ProgressLimit => "progress_limit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_parses_back_and_serialises_as_its_string() {
        for c in RefusalCode::ALL {
            assert_eq!(RefusalCode::parse(c.as_str()), Some(*c));
            assert_eq!(serde_json::to_value(c).unwrap(), serde_json::Value::String(c.as_str().into()));
        }
        for c in ProblemCode::ALL {
            assert_eq!(ProblemCode::parse(c.as_str()), Some(*c));
        }
        for c in ArgumentCode::ALL {
            assert_eq!(ArgumentCode::parse(c.as_str()), Some(*c));
        }
        for c in ValueCode::ALL {
            assert_eq!(ValueCode::parse(c.as_str()), Some(*c));
        }
        for c in ContentDrop::ALL {
            assert_eq!(ContentDrop::parse(c.as_str()), Some(*c));
        }
        for c in ProgressDrop::ALL {
            assert_eq!(ProgressDrop::parse(c.as_str()), Some(*c));
        }
        assert_eq!(RefusalCode::parse("no_such_code"), None);
        assert_eq!(serde_json::from_str::<RefusalCode>("\"trifecta\"").unwrap(), RefusalCode::Trifecta);
        assert!(serde_json::from_str::<RefusalCode>("\"nope\"").is_err());
    }

    #[test]
    fn every_step_but_store_unavailable_owns_its_codes() {
        assert_eq!(RefusalCode::StoreUnavailable.step(), None);
        assert_eq!(RefusalCode::Trifecta.step(), Some(Step::Flow));
        let at_limits: Vec<&str> = RefusalCode::at(Step::Limits).map(RefusalCode::as_str).collect();
        assert_eq!(at_limits, ["budget_exhausted", "rate_limited", "store_unavailable", "run_expired"]);
        let at_pin: Vec<&str> = RefusalCode::at(Step::Pin).map(RefusalCode::as_str).collect();
        assert_eq!(at_pin, ["digest_mismatch"]);
        for (i, s) in Step::ALL.iter().enumerate() {
            assert_eq!(usize::from(s.number()), i + 1);
            assert_eq!(Step::parse(s.as_str()), Some(*s));
        }
    }

    #[test]
    fn classes_follow_the_step_of_a_finished_call() {
        assert_eq!(RefusalClass::of(Decision::Allowed, None), None);
        assert_eq!(RefusalClass::of(Decision::Pending, Some(Step::Approval)), Some(RefusalClass::ApprovalRequired));
        assert_eq!(RefusalClass::of(Decision::Refused, Some(Step::Approval)), Some(RefusalClass::ApprovalDenied));
        assert_eq!(RefusalClass::of(Decision::Refused, Some(Step::Limits)), Some(RefusalClass::LimitExceeded));
        assert_eq!(RefusalClass::of(Decision::Refused, None), Some(RefusalClass::ToolBlocked));
        // The base comes first and every other class's parent is already listed.
        assert_eq!(RefusalClass::ALL.first(), Some(&RefusalClass::ToolBlocked));
        for (i, c) in RefusalClass::ALL.iter().enumerate() {
            if let Some(parent) = c.parent() {
                assert!(RefusalClass::ALL.iter().take(i).any(|p| *p == parent), "{}", c.name());
            }
        }
        // Every refusal step has a class that names it.
        for s in Step::ALL {
            let class = RefusalClass::of(Decision::Refused, Some(*s)).unwrap();
            assert_eq!(class.step(), Some(*s));
        }
    }
}
