//! The host API as plain values in and out, for bindings of dynamic
//! languages (cedar-policy's `ffi` functions are the model): the methods that
//! take and give JSON (approvals, explain, tool specs, runs, labels, the test
//! clock, tool descriptions, sanitizing, the tables bindings build their
//! classes from). Each method's named arguments are read and checked here, so
//! every language words a missing or mistyped one alike, and a binding
//! converts values only, with one entry point instead of one per method.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{
    cel, describe_manifest, handler_refusal, invalid, sanitize, value_error, CallContext, Host, ManifestSource, Principal, SpecFormat, RISKS,
    SIDE_EFFECTS,
};
use crate::audit::{AuditEvent, SpanRecord};
use crate::call::CallResult;
use crate::canonical::{MAX_DEPTH, MAX_SAFE_INTEGER};
use crate::codes::{ArgumentCode, RefusalClass};
use crate::error::Error;

/// The error classes a host raises besides the refusal classes, by
/// [`Error::kind`]: `[kind, class name]`, each a subclass of the base
/// `HarnessweaverError` (an error of kind `other` is the base class itself).
pub const ERROR_CLASSES: [[&str; 2]; 3] = [["load", "LoadError"], ["value", "InvalidValueError"], ["invalid_argument", "InvalidArgumentError"]];

/// The methods of [`Host::request`] as a dynamic language exposes them:
/// each name with its arguments in order, `*` before the keyword-only ones,
/// `name=default` (JSON) for an optional one. An `id` or `run` argument takes
/// the id, or what a host holds it in (an approval, a run).
pub const METHODS: [(&str, &[&str]); 17] = [
    ("describe_tools", &[]),
    ("grant", &["id", "*", "approver"]),
    ("deny", &["id", "reason=\"\"", "*", "by"]),
    ("approvals", &[]),
    ("explain", &["tool", "args=null", "*", "principal", "tenant=null", "task=null", "run=null"]),
    ("tool_specs", &["format=\"openai\"", "principal=null", "tenant=null"]),
    ("new_run", &["source=\"api\"", "principal=null"]),
    ("labels", &["run_id"]),
    ("advance_ms", &["ms"]),
    // Issue 21: the effect journal and compensation; issue 20: a built-in tool's candidate permission.
    ("effects", &["state=null"]),
    ("resolve_effect", &["call_id", "applied", "*", "by"]),
    ("compensate", &["call_id", "*", "principal", "tenant=null", "task=null", "run=null"]),
    ("accept_candidate", &["id", "candidate", "*", "approver"]),
    // Issue 22: in-band approvals (`approval.by: caller`) and the relay decision.
    ("approve_in_band", &["id", "*", "by", "tenant=null"]),
    ("decline_in_band", &["id", "*", "by", "tenant=null"]),
    ("relay_decision", &["tool", "kind", "*", "run", "include_context=null"]),
    ("progress_decision", &["tool", "reports", "*", "secrets=null"]),
];

/// The core's tables a binding builds its classes and checks from: the
/// refusal classes (base first, each with its parent, step, doc and extra
/// fields), the other error classes, the host methods ([`METHODS`]), the result's fields and properties, the manifest risks
/// and side effects (for `add tool`, with those that need an effect contract), the variable names cel-lite
/// expressions may use, and the bounds of a value (its nesting, an integer's
/// magnitude) for a host that writes its values' JSON text itself.
pub fn tables() -> Value {
    let class = |c: &RefusalClass| {
        let extras: Vec<&str> = c.extras().iter().map(|x| x.as_str()).collect();
        json!({"name": c.name(), "parent": c.parent().map(RefusalClass::name), "step": c.step(), "doc": c.doc(), "extras": extras})
    };
    let classes: Vec<Value> = RefusalClass::ALL.iter().map(class).collect();
    // Issue 21: the side effects whose tools need an effect contract (`add tool` drafts `effect: null` for them).
    use crate::manifest::{needs_contract, side_effect_name, SideEffect};
    let contract = [SideEffect::None, SideEffect::Read, SideEffect::WriteInternal, SideEffect::WriteExternal, SideEffect::Destructive];
    let contract: Vec<&str> = contract.into_iter().filter(|s| needs_contract(*s)).map(side_effect_name).collect();
    json!({"refusalClasses": classes, "errorClasses": ERROR_CLASSES, "methods": METHODS, "resultFields": CallResult::FIELDS, "resultProperties": CallResult::PROPERTIES, "risks": RISKS,
        "sideEffects": SIDE_EFFECTS, "contractSideEffects": contract, "celNames": cel::VAR_NAMES, "maxDepth": MAX_DEPTH,
        "maxSafeInteger": MAX_SAFE_INTEGER})
}

/// A method's named arguments.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn of(args: &'a Value) -> Result<Self, Error> {
        args.as_object().map(Args).ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "a host method takes an object of named arguments"))
    }

    /// A value; missing is null.
    fn value(&self, key: &str) -> Value {
        self.0.get(key).cloned().unwrap_or(Value::Null)
    }

    /// A string; missing or null is none.
    fn text(&self, key: &str) -> Result<Option<&'a str>, Error> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(invalid(ArgumentCode::InvalidArgument.as_str(), format!("`{key}` must be a string"))),
        }
    }

    /// A list of strings; missing or null is empty.
    fn strings(&self, key: &str) -> Result<Vec<String>, Error> {
        match self.value(key) {
            Value::Null => Ok(Vec::new()),
            v => serde_json::from_value(v).map_err(|_| invalid(ArgumentCode::InvalidArgument.as_str(), format!("`{key}` must be a list of strings"))),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.text(key)?.map(str::to_string))
    }

    fn required(&self, key: &str) -> Result<&'a str, Error> {
        self.text(key)?.ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), format!("`{key}` is required")))
    }

    /// A principal (missing is none, which is no principal: `invalid_principal`).
    fn principal(&self, key: &str) -> Result<Principal, Error> {
        Principal::from_value(&self.value(key))
    }

    fn optional_principal(&self, key: &str) -> Result<Option<Principal>, Error> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(p) => Principal::from_value(p).map(Some),
        }
    }
}

fn to_json(value: impl Serialize) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::Io { message: e.to_string() })
}

fn unknown(method: &str) -> Error {
    invalid(ArgumentCode::InvalidArgument.as_str(), format!("unknown host method `{method}`"))
}

/// A method of no loaded harness: `tables`, `principal` (`principal`: it
/// read, or `invalid_principal`), `handler_refusal` (`text`, `origin`,
/// `modules_in_path`, `base`, `roots`: see [`handler_refusal`]), `describe_manifest` (`manifest`
/// as an object or YAML/JSON text, `origin`), `sanitize` (`value`,
/// `sanitizers`: `{value, counts}`) or `value_error` (`kind`, `detail`,
/// `path`: always the error [`value_error`] words for them) or `cel_vars` (`type` or `key`: the error
/// for cel-lite variables that are not a mapping or hold an unknown key; null for a known key).
pub fn request(method: &str, args: &Value) -> Result<Value, Error> {
    let a = Args::of(args)?;
    match method {
        "tables" => Ok(tables()),
        "describe_manifest" => {
            let source = ManifestSource::from_host(a.value("manifest"), a.string("origin")?);
            describe_manifest(&source).map_err(|e| Error::Load(e.problems))
        }
        "sanitize" => {
            let (value, counts) = sanitize(&a.value("value"), &a.strings("sanitizers")?)?;
            Ok(json!({"value": value, "counts": counts}))
        }
        "principal" => Ok(a.principal("principal")?.to_value()),
        "handler_refusal" => {
            let (origin, roots) = (a.text("origin")?.map(Path::new), a.strings("roots")?.into_iter().map(PathBuf::from).collect::<Vec<_>>());
            let refusal = handler_refusal(a.required("text")?, origin, &a.strings("modules_in_path")?, Path::new(a.required("base")?), &roots);
            Ok(refusal.map_or(Value::Null, Value::String))
        }
        // What is wrong with cel-lite variables a host checked itself: not a mapping (`type`), or an unknown `key`.
        "cel_vars" => match a.text("type")? {
            Some(type_name) => Err(cel::not_a_mapping(type_name)),
            None => cel::check_key(a.text("key")?.unwrap_or_default()).map(|()| Value::Null),
        },
        // JSON text a host wrote (`JSON.stringify`) of values it checked have a JSON form: their canonical
        // text, or the definition digest of such schemas; null when serde_json cannot read the text.
        "canonical_text" => Ok(crate::canonical::of_double_json(a.required("text")?).map_or(Value::Null, Value::String)),
        "definition_digest_text" => {
            let (name, description) = (a.required("name")?, a.text("description")?.unwrap_or_default());
            let digest = crate::digest::tool_definition_digest_of_text(name, description, a.required("input_schema")?, a.text("output_schema")?);
            Ok(digest.map_or(Value::Null, Value::String))
        }
        "value_error" => {
            let path = a.value("path").as_array().cloned().unwrap_or_default();
            Err(value_error(a.text("kind")?.unwrap_or_default(), a.text("detail")?.unwrap_or_default(), &path))
        }
        other => Err(unknown(other)),
    }
}

impl Host {
    /// Runs method `method` with `args` (an object of its named arguments) and
    /// returns its answer: `describe_tools` (every tool's description, in load order),
    /// `grant` (`id`, `approver`), `deny` (`id`, `by`, `reason`),
    /// `accept_candidate` (`id`, `candidate`, `approver`: grants the approval
    /// and writes the built-in tools' candidate to the permission file),
    /// `approvals`, `explain` (`tool`, `args`, `principal`, `tenant`, `task`,
    /// `run`), `tool_specs` (`format`, default `openai`; `principal`,
    /// `tenant`), `new_run` (`source`, default `api`; `principal`), `labels` (`run_id`), `advance_ms` (`ms`); issue 21:
    /// `effects` (`state`), `resolve_effect` (`call_id`, `applied`, `by`),
    /// `compensate` (`call_id`, `principal`, `tenant`, `task`, `run`); issue 24: `span` (`event`: an audit
    /// event's JSON form; its [`SpanRecord`], the tool's description filled in), `observe` (`listening`: the
    /// observer's switch); issue 20: `accept_candidate` (`id`,
    /// `candidate`, `approver`); issue 22: `approve_in_band` and `decline_in_band` (`id`, `by`, `tenant`: the
    /// caller decides its own `approval.by: caller` call), `relay_decision` (`tool`, `kind`, `run`,
    /// `include_context`), `progress_decision` (`tool`, `reports`, `secrets`: what of a call's
    /// progress reports reaches its caller, [`crate::progress::decide_all`]). [`METHODS`] lists those a dynamic language exposes as methods.
    pub fn request(&self, method: &str, args: &Value) -> Result<Value, Error> {
        let a = Args::of(args)?;
        match method {
            "describe_tools" => Ok(Value::Array(self.tools().map(super::Tool::describe).collect())),
            "grant" => to_json(self.grant(a.required("id")?, &a.principal("approver")?)?),
            "deny" => to_json(self.deny(a.required("id")?, &a.principal("by")?, a.text("reason")?.unwrap_or_default())?),
            "approvals" => to_json(self.approvals()?),
            "explain" => {
                let (tenant, task, run_id) = (a.string("tenant")?, a.string("task")?, a.string("run")?);
                let ctx = CallContext { principal: a.principal("principal")?, tenant, task, run_id, ..CallContext::default() };
                // No args are no arguments.
                let args = Some(a.value("args")).filter(|v| !v.is_null()).unwrap_or_else(|| json!({}));
                self.explain(a.required("tool")?, args, &ctx)
            }
            "tool_specs" => {
                let format = SpecFormat::parse(a.text("format")?.unwrap_or("openai"))?;
                self.tool_specs(format, a.optional_principal("principal")?.as_ref(), a.text("tenant")?)
            }
            "accept_candidate" => {
                let (approval, candidate) = self.gov()?.accept_candidate(a.required("id")?, a.required("candidate")?, &a.principal("approver")?)?;
                Ok(json!({"state": approval.state.as_str(), "candidate": to_json(candidate)?}))
            }
            "new_run" => self.start_run(a.text("source")?.unwrap_or("api"), a.optional_principal("principal")?.as_ref()).map(Value::String),
            "labels" => to_json(self.labels(a.required("run_id")?)?),
            "advance_ms" => {
                let ms = a.0.get("ms").and_then(Value::as_u64);
                let ms = ms.ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`ms` must be a whole number of milliseconds"))?;
                self.advance_clock(ms).map(|()| Value::Null)
            }
            // Issue 24: whether the observer given at load wants events (its host's
            // tracer provider came or went); answers whether there is one.
            "observe" => {
                let on = a.0.get("listening").and_then(Value::as_bool);
                let on = on.ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`listening` must be true or false"))?;
                // An inspected harness takes no calls: it has no observer to switch.
                Ok(Value::Bool(self.governor().is_some_and(|g| g.observe(on))))
            }
            // Issue 24: the span a call's audit event (`event`, its JSON form) becomes, for a host's OpenTelemetry API.
            "span" => {
                let event: AuditEvent = serde_json::from_value(a.value("event"))
                    .map_err(|e| invalid(ArgumentCode::InvalidArgument.as_str(), format!("`event` must be an audit event: {e}")))?;
                let description = self.tools().find(|t| t.name() == event.tool).map(|t| t.manifest().description.as_str());
                to_json(SpanRecord::of(&event, description, Some(self.gov()?.policy_version())))
            }
            // Issue 21: the effect journal and compensation.
            "effects" => {
                let state = a.text("state")?.map(|t| {
                    crate::effects::EffectState::parse(t)
                        .ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`state` must be `unknown`, `succeeded` or `failed`"))
                });
                Ok(crate::effects::entries_json(&self.effects()?, state.transpose()?))
            }
            "resolve_effect" => {
                let applied = a.0.get("applied").and_then(Value::as_bool);
                let applied = applied.ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`applied` must be true or false"))?;
                to_json(self.resolve_effect(a.required("call_id")?, applied, &a.principal("by")?.id)?)
            }
            "compensate" => {
                let (tenant, task, run_id) = (a.string("tenant")?, a.string("task")?, a.string("run")?);
                let ctx = CallContext { principal: a.principal("principal")?, tenant, task, run_id, ..CallContext::default() };
                self.compensate_through_core(a.required("call_id")?, &ctx).map(|r| r.to_value())
            }
            // Issue 22: in-band approvals and the relay decision.
            "approve_in_band" => {
                let approval = self.gov()?.approve_in_band(a.required("id")?, &a.principal("by")?, a.text("tenant")?)?;
                Ok(json!({"state": approval.state.as_str(), "decided_by": approval.decided_by}))
            }
            "decline_in_band" => {
                let approval = self.gov()?.decline_in_band(a.required("id")?, &a.principal("by")?, a.text("tenant")?)?;
                Ok(json!({"state": approval.state.as_str(), "decided_by": approval.decided_by}))
            }
            "relay_decision" => {
                let kind = a.required("kind")?;
                let kind = crate::governor::RelayKind::parse(kind)
                    .ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`kind` must be `sampling`, `elicitation` or `roots`"))?;
                let decision = self.gov()?.relay_decision(a.required("tool")?, a.required("run")?, kind, a.text("include_context")?);
                Ok(crate::governor::relay_decision_value(&decision))
            }
            // Issue 22: what of a running call's progress reports reaches its caller.
            "progress_decision" => {
                let tool = a.required("tool")?;
                let rt = self.gov()?.tool(tool).ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), format!("no tool named `{tool}`")))?;
                let reports = a.0.get("reports").and_then(Value::as_array);
                let reports = reports.ok_or_else(|| invalid(ArgumentCode::InvalidArgument.as_str(), "`reports` must be a list"))?;
                let policy = crate::progress::ProgressPolicy::new(&rt.output.sanitize, &a.strings("secrets")?, rt.output.max_bytes);
                Ok(crate::progress::decide_all(&policy, reports))
            }
            other => Err(unknown(other)),
        }
    }
}
