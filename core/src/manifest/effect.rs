//! `spec.effect` (the effect contract, seed 003) and `spec.secrets` (secret
//! handles) of a manifest: what a call changes outside and how it may be
//! retried, and which secrets its handler receives. The journal that holds
//! the contract at run time is [`crate::effects`].

use super::model::{is_valid_name, SideEffect};
use crate::check::Checker;
use crate::yaml::{Node, NodeValue};

/// `spec.effect.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectKind {
    /// The call changes nothing outside.
    None,
    /// The call writes outside: its intent and outcome go to the effect journal.
    ExternalWrite,
}

/// `spec.effect.retry_mode`: what a retry of a call whose outcome is unknown may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryMode {
    /// Refused (`effect_unknown`) until someone reconciles or resolves it.
    None,
    /// Goes through with the same key: the handler or the service deduplicates.
    IdempotencyKey,
    /// The reconcile tool is asked what happened before anything is retried.
    Reconcile,
}

impl RetryMode {
    /// The manifest names.
    pub const ALL: &'static [(&'static str, RetryMode)] =
        &[("none", RetryMode::None), ("idempotency_key", RetryMode::IdempotencyKey), ("reconcile", RetryMode::Reconcile)];

    /// The manifest name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::IdempotencyKey => "idempotency_key",
            Self::Reconcile => "reconcile",
        }
    }
}

/// `spec.effect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectContract {
    /// `kind`.
    pub kind: EffectKind,
    /// `retry_mode` (an external write must give it; `none` for `kind: none`).
    pub retry_mode: RetryMode,
    /// `compensation`: the tool that undoes a call (run through all nine steps).
    pub compensation: Option<String>,
    /// `reconcile`: the tool asked whether an unknown write happened
    /// (`retry_mode: reconcile`); it answers `{"applied": true|false}`.
    pub reconcile: Option<String>,
    /// `reconcile_operation`: instead of another tool, the tool's own
    /// process handler is asked, with this `operation` in the request
    /// (`retry_mode: reconcile`; process tools only).
    pub reconcile_operation: Option<String>,
}

impl EffectContract {
    /// The contract as `describe()` shows it.
    pub fn describe(&self) -> serde_json::Value {
        let kind = match self.kind {
            EffectKind::None => "none",
            EffectKind::ExternalWrite => "external_write",
        };
        let mut v =
            serde_json::json!({"kind": kind, "retry_mode": self.retry_mode.as_str(), "compensation": self.compensation, "reconcile": self.reconcile});
        if let (Some(op), Some(map)) = (&self.reconcile_operation, v.as_object_mut()) {
            map.insert("reconcile_operation".into(), serde_json::Value::String(op.clone()));
        }
        v
    }
}

/// What `spec.effect` says: absent, the draft `null` `add tool` writes, or a contract.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EffectField {
    /// Not written.
    #[default]
    Absent,
    /// `effect: null`: a draft for review that does not load.
    Draft,
    /// A contract.
    Contract(EffectContract),
}

/// Whether a tool with this side effect must declare an effect contract.
pub fn needs_contract(side_effect: SideEffect) -> bool {
    matches!(side_effect, SideEffect::WriteExternal | SideEffect::Destructive)
}

/// The `effect_contract_missing` message of a tool that writes outside without a contract.
pub fn missing_contract_message(tool: &str, side_effect: &str) -> String {
    format!(
        "`{tool}` has `side_effect: {side_effect}` and no `spec.effect`; declare `effect: {{kind: external_write, retry_mode: none | idempotency_key | reconcile}}` \
         (or set `spec.effects.require_contract: false` in harness.yaml while migrating)"
    )
}

/// Parses `spec.effect`; problems go to `cx`.
pub(crate) fn parse_effect(node: Option<&Node>, cx: &mut Checker) -> EffectField {
    let Some(node) = node else { return EffectField::Absent };
    if matches!(node.value, NodeValue::Null) {
        cx.report(
            "effect_contract_missing",
            node.pos,
            "spec.effect",
            "`spec.effect` is null: a draft to review; say what a call changes outside (`kind: none`, or `kind: external_write` with a `retry_mode`)"
                .to_string(),
        );
        return EffectField::Draft;
    }
    let Some(mut m) = cx.map(node, "spec.effect") else { return EffectField::Absent };
    let kind = m
        .require(cx, "kind")
        .and_then(|n| cx.choice(n, "spec.effect.kind", &[("none", EffectKind::None), ("external_write", EffectKind::ExternalWrite)]));
    let retry_node = m.get("retry_mode");
    let retry_mode = retry_node.and_then(|n| cx.choice(n, "spec.effect.retry_mode", RetryMode::ALL));
    let mut name = |cx: &mut Checker, key: &'static str| -> Option<String> {
        let path = format!("spec.effect.{key}");
        let n = m.get(key)?;
        let s = cx.string(n, &path)?;
        if !is_valid_name(&s) {
            cx.report("invalid_name", n.pos, &path, format!("`{path}` must name a tool, not `{s}`"));
            return None;
        }
        Some(s)
    };
    let compensation = name(cx, "compensation");
    let reconcile = name(cx, "reconcile");
    let operation_node = m.get("reconcile_operation");
    let reconcile_operation = operation_node.and_then(|n| {
        let op = cx.string(n, "spec.effect.reconcile_operation")?;
        if op == "invoke" || op.is_empty() || !op.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            cx.report(
                "invalid_value",
                n.pos,
                "spec.effect.reconcile_operation",
                format!("`spec.effect.reconcile_operation` is `{op}`; name the operation (letters, digits, `_`), not `invoke`"),
            );
            return None;
        }
        Some(op)
    });
    let key_pos = |m: &crate::check::MapReader<'_>, key: &str| m.key_node(key).map_or(node.pos, |k| k.pos);
    let mut sound = kind.is_some();
    match kind {
        Some(EffectKind::None) => {
            for key in ["retry_mode", "compensation", "reconcile", "reconcile_operation"] {
                if m.key_node(key).is_some() {
                    cx.report(
                        "forbidden_field",
                        key_pos(&m, key),
                        &format!("spec.effect.{key}"),
                        format!("`spec.effect.{key}` is only for `kind: external_write`"),
                    );
                    sound = false;
                }
            }
        }
        Some(EffectKind::ExternalWrite) if retry_node.is_none() => {
            cx.report(
                "missing_field",
                node.pos,
                "spec.effect.retry_mode",
                "an external write needs `spec.effect.retry_mode`: `none`, `idempotency_key` or `reconcile`".to_string(),
            );
            sound = false;
        }
        _ => {}
    }
    let asks = if reconcile.is_some() || operation_node.is_some() {
        Some(if reconcile.is_some() { "reconcile" } else { "reconcile_operation" })
    } else {
        None
    };
    match (retry_mode, asks) {
        (Some(RetryMode::Reconcile), None) => {
            cx.report(
                "missing_field",
                node.pos,
                "spec.effect.reconcile",
                "`retry_mode: reconcile` needs `spec.effect.reconcile`, the tool that answers whether a write happened (or `reconcile_operation`, an operation of this process tool)".to_string(),
            );
            sound = false;
        }
        (Some(RetryMode::Reconcile), Some(_)) if reconcile.is_some() && operation_node.is_some() => {
            cx.report(
                "invalid_value",
                key_pos(&m, "reconcile_operation"),
                "spec.effect.reconcile_operation",
                "give one of `spec.effect.reconcile` (a tool) and `spec.effect.reconcile_operation` (an operation of this tool)".to_string(),
            );
            sound = false;
        }
        (Some(RetryMode::None | RetryMode::IdempotencyKey), Some(key)) => {
            cx.report(
                "forbidden_field",
                key_pos(&m, key),
                &format!("spec.effect.{key}"),
                format!("`spec.effect.{key}` is only for `retry_mode: reconcile`"),
            );
            sound = false;
        }
        _ => {}
    }
    m.finish(cx);
    match (sound, kind) {
        (true, Some(kind)) => EffectField::Contract(EffectContract {
            kind,
            retry_mode: retry_mode.unwrap_or(RetryMode::None),
            compensation,
            reconcile,
            reconcile_operation,
        }),
        _ => EffectField::Absent,
    }
}

/// Parses `spec.secrets_delivery`: `native` (a native handler receives the
/// values, an explicit opt-in: they enter the host's process) or `transport`
/// (the default: the transport's channel, none for a native tool).
pub(crate) fn parse_secrets_delivery(node: Option<&Node>, transport: super::Transport, cx: &mut Checker) -> bool {
    let Some(node) = node else { return false };
    let native = cx.choice(node, "spec.secrets_delivery", &[("native", true), ("transport", false)]).unwrap_or(false);
    if native && transport != super::Transport::Native {
        cx.report(
            "invalid_value",
            node.pos,
            "spec.secrets_delivery",
            "`spec.secrets_delivery: native` is for native tools; other transports hand secrets over through their own channel".into(),
        );
    }
    native
}

/// Parses `spec.secrets`: a list of handle names (never values).
pub(crate) fn parse_secrets(node: Option<&Node>, cx: &mut Checker) -> Vec<String> {
    let Some(node) = node else { return Vec::new() };
    let mut out: Vec<String> = Vec::new();
    cx.list(node, "spec.secrets", "a list of secret handles", |cx, item, path| {
        if let Some(s) = cx.string(item, path) {
            if !is_handle_name(&s) {
                cx.report("invalid_value", item.pos, path, format!("`{path}` must be a secret handle (letters, digits, `_`), never a value"));
            } else if out.contains(&s) {
                cx.report("invalid_value", item.pos, path, format!("`{s}` is listed twice"));
            } else {
                out.push(s);
            }
        }
    });
    out
}

/// A secret handle's name: letters, digits and `_`, not starting with a digit.
pub fn is_handle_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && !s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
