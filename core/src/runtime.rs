//! A loaded harness with its governor and handlers: what `load()` returns in
//! every language. The Rust API takes handlers as closures; the bindings use
//! the same pieces with their hosts' functions.

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::codes::ArgumentCode;
use crate::error::{Error, Problem};
use crate::governor::{
    ApprovalCallback, Begin, CallContext, CallResult, Explanation, Governor, GovernorOptions, Handler, InvokeOutcome, Principal, Ticket,
};
use crate::harness::Harness;
use crate::manifest::{Tool, Transport};
use crate::store::PendingApproval;

/// Options for [`Runtime::load`].
#[derive(Default)]
pub struct LoadOptions {
    /// Native handlers by tool name (Rust closures).
    pub handlers: HashMap<String, Handler>,
    /// Names of native handlers the host holds itself (Python functions, JS
    /// functions): checked like `handlers`, invoked by the host between
    /// [`Runtime::begin`] and [`Runtime::finish`].
    pub host_handlers: Vec<String>,
    /// Clock, store, audit, ids and tools registered in code.
    pub governor: GovernorOptions,
}

/// The tool-definition formats of model APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecFormat {
    /// OpenAI function tools: `{type: function, function: {name, description, parameters}}`.
    OpenAi,
    /// Anthropic tools: `{name, description, input_schema}`.
    Anthropic,
    /// MCP `tools/list` entries: `{name, description, inputSchema}`.
    Mcp,
}

impl SpecFormat {
    /// `openai`, `anthropic` or `mcp`.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            other => Err(Error::InvalidArgument {
                code: ArgumentCode::InvalidFormat.as_str(),
                message: format!("unknown tool spec format `{other}` (expected openai, anthropic or mcp)"),
            }),
        }
    }
}

/// A harness ready to take calls.
pub struct Runtime {
    harness: Harness,
    extra: Vec<Tool>,
    governor: Governor,
    handlers: HashMap<String, Handler>,
}

/// Checks the handlers a host gave against the manifests: every native tool
/// needs one, and (S2) every handler needs a manifest. Returns the problems.
pub fn check_handlers<'a>(tools: impl Iterator<Item = &'a Tool> + Clone, handler_names: &[&str], require_manifest: bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    // Sets, not scans: a harness may have thousands of tools and handlers.
    let handlers: HashSet<&str> = handler_names.iter().copied().collect();
    let declared: HashSet<&str> = tools.clone().map(Tool::name).collect();
    // A handler under a mistyped name is both: say so on each side.
    let unmatched: Vec<&str> = handler_names.iter().copied().filter(|n| !declared.contains(n)).collect();
    for tool in tools.clone() {
        if tool.manifest().transport == Transport::Native && !handlers.contains(tool.name()) {
            let hint = match crate::suggest::nearest(tool.name(), unmatched.iter().copied()) {
                Some(near) => format!(" (a handler is registered as `{near}`)"),
                None => String::new(),
            };
            problems.push(Problem {
                file: tool.file().map(str::to_string),
                path: "spec.handler".into(),
                ..Problem::new("handler_not_registered", format!("native tool `{}` has no handler; pass one to load(){hint}", tool.name()))
            });
        }
    }
    if require_manifest {
        for name in &unmatched {
            let hint = crate::suggest::hint(name, tools.clone().map(Tool::name));
            problems.push(Problem::new(
                "no_manifest",
                format!("a handler is registered for `{name}` but no manifest declares it (tools.require_manifest){hint}"),
            ));
        }
    }
    problems
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("governor", &self.governor).field("handlers", &self.handlers.len()).finish()
    }
}

impl Runtime {
    /// Loads `harness.yaml`, its manifests and the tools given in code, and
    /// compiles the governor.
    pub fn load(path: impl AsRef<Path>, options: LoadOptions) -> Result<Runtime, Error> {
        Self::from_harness(Harness::load(path)?, options)
    }

    /// Checks the handlers against a harness loaded before (with
    /// [`Harness::load`]) and compiles the governor, reading no file again:
    /// a host that looks at the tools first (which handlers to import) and
    /// then takes calls reads the harness once.
    pub fn from_harness(harness: Harness, options: LoadOptions) -> Result<Runtime, Error> {
        // The tools' compiled schemas are reused, not compiled again.
        crate::validate::with_compile_cache(|| {
            let tools = harness.tools().iter().chain(options.governor.extra_tools.iter());
            crate::validate::remember(tools.map(|t| (&t.manifest().input_schema, t.validator())));
            Self::build(harness, options)
        })
    }

    fn build(harness: Harness, options: LoadOptions) -> Result<Runtime, Error> {
        let names: Vec<&str> = options.handlers.keys().map(String::as_str).chain(options.host_handlers.iter().map(String::as_str)).collect();
        let all = harness.tools().iter().chain(options.governor.extra_tools.iter());
        let problems = check_handlers(all, &names, harness.spec().tools.require_manifest);
        if !problems.is_empty() {
            return Err(Error::Load(problems));
        }
        let extra = options.governor.extra_tools.clone();
        let declared: HashSet<&str> = harness.tools().iter().chain(extra.iter()).map(Tool::name).collect();
        let unmanifested: Vec<String> = names.iter().filter(|n| !declared.contains(**n)).map(|n| (*n).to_string()).collect();
        let mut governor = Governor::from_harness(&harness, options.governor)?;
        governor.set_unmanifested(unmanifested);
        Ok(Runtime { harness, extra, governor, handlers: options.handlers })
    }

    /// A runtime over a harness already loaded and its governor (what the
    /// host API builds, reading the harness once).
    pub(crate) fn from_parts(harness: Harness, extra: Vec<Tool>, governor: Governor) -> Runtime {
        Runtime { harness, extra, governor, handlers: HashMap::new() }
    }

    /// The tools registered in code.
    pub(crate) fn extra_tools(&self) -> &[Tool] {
        &self.extra
    }

    /// The loaded harness.
    pub fn harness(&self) -> &Harness {
        &self.harness
    }

    /// The governor.
    pub fn governor(&self) -> &Governor {
        &self.governor
    }

    /// Every tool: the harness's manifests, then tools registered in code.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> + Clone {
        self.harness.tools().iter().chain(self.extra.iter())
    }

    /// A new run for `principal`: calls made with the returned context share
    /// labels and budgets.
    pub fn run(&self, principal: Principal, tenant: Option<String>, task: Option<String>) -> CallContext {
        CallContext { principal, tenant, task, run_id: Some(self.governor.new_run_id()), ..CallContext::default() }
    }

    /// Steps 1–7: the host invokes the ticket's tool, then calls [`Runtime::finish`].
    pub fn begin(&self, tool: &str, args: Value, ctx: &CallContext) -> Begin {
        self.governor.begin(tool, args, ctx)
    }

    /// Step 8 for http, code and mcp tools: runs the ticket's tool through
    /// its transport (blocking; see [`crate::transport`] for how bindings
    /// call it off their main thread) and returns the outcome for
    /// [`Runtime::finish`].
    pub fn invoke(&self, ticket: &Ticket) -> InvokeOutcome {
        self.governor.invoke(ticket)
    }

    /// Steps 8 (the outcome) and 9.
    pub fn finish(&self, ticket: Ticket, outcome: InvokeOutcome) -> CallResult {
        self.governor.finish(ticket, outcome)
    }

    /// Grants approval `id` as `approver` and begins the approved call (for
    /// hosts that invoke handlers themselves).
    pub fn approve_and_begin(&self, id: &str, approver: &Principal) -> Result<Begin, Error> {
        let approval = self.governor.approve(id, approver)?;
        let (tool, args, ctx) = resume(&approval)?;
        Ok(self.governor.begin(&tool, args, &ctx))
    }

    /// Sets the host callback that may decide approvals inline.
    pub fn set_approval_callback(&mut self, callback: Option<ApprovalCallback>) {
        self.governor.set_approval_callback(callback);
    }

    /// One governed call: native tools through their handlers, the others
    /// through their transports.
    pub fn call(&self, tool: &str, args: Value, ctx: &CallContext) -> CallResult {
        self.governor.call(tool, args, ctx, &self.handlers)
    }

    /// Grants approval `id` as `approver`, then runs the approved call (from
    /// step 1, consuming the approval at step 7) and returns its result.
    pub fn approve(&self, id: &str, approver: &Principal) -> Result<CallResult, Error> {
        let approval = self.governor.approve(id, approver)?;
        let (tool, args, ctx) = resume(&approval)?;
        Ok(self.call(&tool, args, &ctx))
    }

    /// Grants approval `id` with arguments the approver edited, then runs
    /// the edited call from step 1 (its audit event shows both digests).
    pub fn approve_edited(&self, id: &str, approver: &Principal, args: Value) -> Result<CallResult, Error> {
        let approval = self.governor.approve_edited(id, approver, Some(args))?;
        let (tool, args, ctx) = resume(&approval)?;
        Ok(self.call(&tool, args, &ctx))
    }

    /// Each step's verdict for this call, without running anything.
    pub fn explain(&self, tool: &str, args: Value, ctx: &CallContext) -> Explanation {
        self.governor.explain(tool, args, ctx)
    }

    /// Denies approval `id`.
    pub fn deny(&self, id: &str, by: &Principal, reason: &str) -> Result<PendingApproval, Error> {
        self.governor.deny(id, &by.id, reason)
    }

    /// The tools as model APIs take them, from the pinned definitions, leaving
    /// out tools this principal and tenant can never call.
    pub fn tool_specs(&self, format: SpecFormat, principal: Option<&Principal>, tenant: Option<&str>) -> Value {
        let callable = self.tools().filter(|t| self.governor.can_ever_call(t.name(), principal, tenant));
        tool_specs(callable, format)
    }
}

/// The tool, args and context that re-issue an approved call.
pub fn resume(approval: &PendingApproval) -> Result<(String, Value, CallContext), Error> {
    let principal = Principal::from_value(&approval.principal)?;
    let ctx = CallContext {
        principal,
        tenant: approval.tenant.clone(),
        task: approval.task.clone(),
        run_id: Some(approval.run_id.clone()),
        approval_id: Some(approval.id.clone()),
        idempotency_key: None,
        original_args_digest: approval.original_args_digest.clone(),
        compensates: None,
        progress: None,
    };
    Ok((approval.tool.clone(), approval.args.clone(), ctx))
}

/// Tools in a model API's format. Which tools a caller may see is the
/// governor's question ([`Governor::can_ever_call`]); this only formats.
pub fn tool_specs<'a>(tools: impl Iterator<Item = &'a Tool>, format: SpecFormat) -> Value {
    let specs = tools
        .map(|t| {
            let m = t.manifest();
            match format {
                SpecFormat::OpenAi => json!({
                    "type": "function",
                    "function": {"name": m.name, "description": m.description, "parameters": m.input_schema},
                }),
                SpecFormat::Anthropic => json!({"name": m.name, "description": m.description, "input_schema": m.input_schema}),
                SpecFormat::Mcp => {
                    let mut spec = json!({
                        "name": m.name,
                        "description": m.description,
                        "inputSchema": m.input_schema,
                        "annotations": crate::manifest::mcp_annotations(m),
                    });
                    if let (Some(title), Some(o)) = (&m.title, spec.as_object_mut()) {
                        o.insert("title".into(), json!(title));
                    }
                    // Issue 22: the tool's output is sent as `structuredContent`.
                    if let (Some(schema), Some(o)) = (&m.output_schema, spec.as_object_mut()) {
                        o.insert("outputSchema".into(), schema.clone());
                    }
                    spec
                }
            }
        })
        .collect();
    Value::Array(specs)
}
