//! The arguments a host passes by name, read by one rule for every binding:
//! the id of a run or an approval (an id, or what a host holds it in), a
//! principal, and a call's context.

use serde_json::{Map, Value};

use super::walk::{walk, HostValues, Kind};
use crate::call::{CallContext, Principal};
use crate::codes::ArgumentCode;
use crate::error::Error;

/// The named arguments that take the id of a run or an approval.
pub const ID_ARGS: [&str; 3] = ["id", "run", "approval"];

/// The named arguments of a call besides the tool and its arguments.
pub const CONTEXT_ARGS: [&str; 5] = ["principal", "tenant", "task", "run", "approval"];

fn bad(message: String) -> Error {
    Error::InvalidArgument { code: ArgumentCode::InvalidArgument.as_str(), message }
}

/// The id argument `name` given as `value`: none for null (none given); a
/// string is the id; a mapping, or an object with attributes (a run), gives
/// its `id`, else the `id` of its `approval` (a pending result, the
/// `ApprovalRequired` a call raised). Anything else is `invalid_argument`.
pub fn id_of<H: HostValues>(host: &H, value: &H::Value, name: &str) -> Result<Option<String>, Error> {
    let held = match host.kind(value) {
        Kind::Null => return Ok(None),
        Kind::Str(Some(id)) => return Ok(Some(id.into_owned())),
        Kind::Map(_) | Kind::Core(_) => walk(host, value, 0)?,
        Kind::Other(_) => {
            let read = |key: &str| Some((key.to_string(), walk(host, &host.attr(value, key)?, 0).ok()?));
            Value::Object(["id", "approval"].into_iter().filter_map(read).collect())
        }
        _ => Value::Null,
    };
    let id = held.get("id").and_then(Value::as_str).or_else(|| held.get("approval")?.get("id")?.as_str());
    id.map(|id| Some(id.to_string())).ok_or_else(|| bad(format!("`{name}` must be an id, or a mapping, run or approval with one")))
}

/// A principal as a host holds it: its principal object, or a mapping read
/// by [`Principal::from_value`] (a value of no JSON form is none given).
pub fn principal_of<H: HostValues>(host: &H, value: &H::Value) -> Result<Principal, Error> {
    host.principal(value).map_or_else(|| Principal::from_value(&walk(host, value, 0).unwrap_or(Value::Null)), Ok)
}

/// A host method's named arguments as the JSON object the core's methods
/// read: each value walked, an argument of [`ID_ARGS`] read by [`id_of`].
pub fn named<H: HostValues, K: AsRef<str>>(host: &H, args: impl IntoIterator<Item = (K, H::Value)>) -> Result<Value, Error> {
    let one = |(key, value): (K, H::Value)| {
        let key = key.as_ref();
        let value = match ID_ARGS.contains(&key) {
            true => id_of(host, &value, key)?.map_or(Value::Null, Value::String),
            false => walk(host, &value, 1).map_err(|e| e.at_key(key))?,
        };
        Ok((key.to_string(), value))
    };
    args.into_iter().map(one).collect::<Result<Map<_, _>, Error>>().map(Value::Object)
}

/// A host method of [`super::METHODS`] called as a dynamic language calls it: its positional
/// arguments (in the table's order, up to `*`) and named ones bound to its parameters, then read
/// by [`named`]. An unknown method, too many positional arguments, an unknown or twice-given name
/// is `invalid_argument`; a parameter left out is the method's default.
pub fn bind_method<H: HostValues, K: AsRef<str>>(
    host: &H,
    method: &str,
    positional: impl IntoIterator<Item = H::Value>,
    named_args: impl IntoIterator<Item = (K, H::Value)>,
) -> Result<Value, Error> {
    let Some((_, params)) = super::METHODS.iter().find(|(name, _)| *name == method) else {
        return Err(bad(format!("unknown host method `{method}`")));
    };
    let names: Vec<&str> = params.iter().filter(|p| **p != "*").map(|p| p.split('=').next().unwrap_or(p)).collect();
    let takes = params.iter().position(|p| *p == "*").unwrap_or(params.len());
    let mut given: Vec<(String, H::Value)> = Vec::new();
    for (i, value) in positional.into_iter().enumerate() {
        let name = names.get(i).filter(|_| i < takes).ok_or_else(|| bad(format!("`{method}` takes at most {takes} positional arguments")))?;
        given.push((name.to_string(), value));
    }
    for (key, value) in named_args {
        let key = key.as_ref();
        if !names.contains(&key) || given.iter().any(|(k, _)| k == key) {
            return Err(bad(format!("`{method}` got an unexpected or repeated argument `{key}`")));
        }
        given.push((key.to_string(), value));
    }
    named(host, given)
}

/// A call's context from its named arguments ([`CONTEXT_ARGS`]; null is the
/// same as leaving one out); another name is `invalid_argument`.
pub fn call_context<H: HostValues, K: AsRef<str>>(host: &H, args: impl IntoIterator<Item = (K, H::Value)>) -> Result<CallContext, Error> {
    let (mut ctx, mut principal) = (CallContext::default(), None);
    let text = |v: &H::Value, key: &str| match host.kind(v) {
        Kind::Null => Ok(None),
        Kind::Str(Some(s)) => Ok(Some(s.into_owned())),
        _ => Err(bad(format!("`{key}` must be a string"))),
    };
    for (key, value) in args {
        let key = key.as_ref();
        match key {
            "principal" => principal = Some(value),
            "tenant" => ctx.tenant = text(&value, key)?,
            "task" => ctx.task = text(&value, key)?,
            "run" => ctx.run_id = id_of(host, &value, key)?,
            "approval" => ctx.approval_id = id_of(host, &value, key)?,
            other => return Err(bad(format!("unexpected argument `{other}` (expected {})", CONTEXT_ARGS.join(", ")))),
        }
    }
    ctx.principal = match principal {
        Some(p) => principal_of(host, &p)?,
        None => Principal::from_value(&Value::Null)?,
    };
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::walk::test_host::Json;
    use super::*;

    #[test]
    fn an_id_is_read_by_one_rule() {
        let id = |v: Value| id_of(&Json, &v, "id").map_err(|e| e.code().to_string());
        assert_eq!(id(json!(null)), Ok(None));
        assert_eq!(id(json!("a-1")), Ok(Some("a-1".into())));
        assert_eq!(id(json!({"id": "a-1", "tool": "wipe"})), Ok(Some("a-1".into())));
        assert_eq!(id(json!({"decision": "pending", "approval": {"id": "a-1"}})), Ok(Some("a-1".into())));
        assert_eq!(id(json!({"$object": {"id": "run-1"}})), Ok(Some("run-1".into())));
        assert_eq!(id(json!({"$object": {"approval": {"id": "a-1"}}})), Ok(Some("a-1".into())));
        for bad in [json!({}), json!({"id": 7}), json!(7), json!({"$object": {"approval": null}})] {
            assert_eq!(id(bad), Err("invalid_argument".to_string()));
        }
    }

    #[test]
    fn a_method_binds_its_arguments_by_the_table() {
        let bind = |pos: Vec<Value>, kw: Vec<(&str, Value)>| bind_method(&Json, "deny", pos, kw).map_err(|e| e.code().to_string());
        let approval = json!({"$object": {"approval": {"id": "a-1"}}});
        assert_eq!(bind(vec![approval, json!("no")], vec![("by", json!("bob"))]), Ok(json!({"id": "a-1", "reason": "no", "by": "bob"})));
        assert_eq!(bind(vec![json!("a-1")], vec![]), Ok(json!({"id": "a-1"})));
        assert_eq!(bind(vec![json!("a-1"), json!("no"), json!("bob")], vec![]), Err("invalid_argument".into())); // `by` is keyword-only
        assert_eq!(bind(vec![json!("a-1")], vec![("id", json!("a-2"))]), Err("invalid_argument".into()));
        assert_eq!(bind(vec![], vec![("bye", json!("bob"))]), Err("invalid_argument".into()));
        assert_eq!(bind_method(&Json, "nope", vec![], Vec::<(&str, Value)>::new()).map_err(|e| e.code().to_string()), Err("invalid_argument".into()));
    }

    #[test]
    fn a_call_context_takes_its_five_names_only() {
        let args = |pairs: Value| pairs.as_object().cloned().unwrap_or_default().into_iter();
        let ctx = call_context(&Json, args(json!({"principal": {"id": "bob"}, "tenant": "eu", "run": {"$object": {"id": "r"}}, "task": null})));
        let ctx = ctx.unwrap_or_default();
        assert_eq!((ctx.principal.id.as_str(), ctx.tenant.as_deref(), ctx.run_id.as_deref(), ctx.task), ("bob", Some("eu"), Some("r"), None));
        let code = |v: Value| call_context(&Json, args(v)).map(drop).map_err(|e| e.code().to_string());
        assert_eq!(code(json!({"principal": {"id": "bob"}, "tennant": "eu"})), Err("invalid_argument".into()));
        assert_eq!(code(json!({"tenant": "eu"})), Err("invalid_principal".into()));
        assert_eq!(code(json!({"principal": {"id": "bob"}, "tenant": 7})), Err("invalid_argument".into()));
    }
}
