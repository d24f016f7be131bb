//! `spec.input_schema`: the shape of the common JSON Schema keywords,
//! checked on the node tree so each problem has a line and column, then the
//! schema compiled by the same validator the governor checks arguments with.

use serde_json::Value;

use crate::check::{child_path, Checker};
use crate::validate::SchemaValidator;
use crate::yaml::{Node, NodeValue};

const SCHEMA_TYPES: &[&str] = &["object", "array", "string", "number", "integer", "boolean", "null"];

/// Checks `input_schema` (or `output_schema`, issue 22: `field` names it):
/// a mapping, convertible to JSON, whose top-level `type` (when given) is
/// `object`, and whose common keywords have the right shape. Returns the
/// schema as JSON with its compiled form.
pub(super) fn check_schema(node: &Node, field: &str, cx: &mut Checker) -> Option<(Value, SchemaValidator)> {
    let path = format!("spec.{field}");
    let path = path.as_str();
    if !matches!(node.value, NodeValue::Map(_)) {
        cx.report("wrong_type", node.pos, path, format!("`{path}` must be a mapping (a JSON Schema object), not {}", node.kind()));
        return None;
    }
    let before = cx.problems.len();
    if let Some(t) = node.get("type") {
        if t.as_str() != Some("object") {
            let shown = t.as_str().map_or_else(|| t.to_json().map(|v| v.to_string()).unwrap_or_default(), str::to_string);
            let why = if field == "input_schema" { "arguments are named" } else { "MCP structured content is an object" };
            cx.report("invalid_schema", t.pos, &format!("{path}.type"), format!("`{path}.type` must be `object` ({why}), not `{shown}`"));
        }
    }
    schema_shape(node, path, cx, 0);
    if cx.problems.len() > before {
        return None;
    }
    match node.to_json() {
        // The same compiler the governor validates arguments with, so a
        // schema that loads is one that can check a call.
        Ok(v) => match SchemaValidator::compile(&v) {
            Ok(compiled) => Some((v, compiled)),
            Err(msg) => {
                cx.report("invalid_schema", node.pos, path, msg);
                None
            }
        },
        Err((pos, msg)) => {
            cx.report("invalid_schema", pos, path, msg);
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
        // The field path is built only where it is used (nested schemas and
        // problems): most keywords of a sound schema need none.
        let kpath = || child_path(path, key);
        let bad = |cx: &mut Checker, what: &str| {
            let kpath = kpath();
            cx.report("invalid_schema", v.pos, &kpath, format!("`{kpath}` must be {what}"));
        };
        match key {
            "type" => {
                let ok = match &v.value {
                    NodeValue::Str(s) => SCHEMA_TYPES.contains(&s.as_str()),
                    NodeValue::Seq(items) => items.iter().all(|i| i.as_str().is_some_and(|s| SCHEMA_TYPES.contains(&s))),
                    _ => false,
                };
                if !ok {
                    bad(cx, "a JSON Schema type name (`object`, `array`, `string`, `number`, `integer`, `boolean`, `null`) or a list of them");
                }
            }
            "properties" | "patternProperties" | "$defs" | "definitions" => match &v.value {
                NodeValue::Map(props) => {
                    let kpath = kpath();
                    for (pk, pv) in props {
                        let name = pk.as_str().unwrap_or_default();
                        schema_shape(pv, &child_path(&kpath, name), cx, depth + 1);
                    }
                }
                _ => bad(cx, "a mapping of names to schemas"),
            },
            "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" | "propertyNames" => {
                schema_shape(v, &kpath(), cx, depth + 1);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => match &v.value {
                NodeValue::Seq(items) if !items.is_empty() => {
                    let kpath = kpath();
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
            // An integer per JSON Schema is a number with no fractional part, so `2.0` is one.
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minContains" | "maxContains"
                if !is_count(&v.value) =>
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

/// A JSON Schema non-negative integer: `2` or an integer-valued float such as `2.0`.
fn is_count(value: &NodeValue) -> bool {
    match value {
        NodeValue::Int(i) => *i >= 0,
        NodeValue::Float(f) => f.is_finite() && *f >= 0.0 && f.fract() == 0.0,
        _ => false,
    }
}
