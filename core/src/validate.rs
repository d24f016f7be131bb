//! Step 2: arguments against the tool's JSON Schema, then its payload
//! constraints. A refusal names the JSON pointer and the failed keyword; the
//! offending value is never echoed (it may be a secret).

use serde_json::Value;

use crate::error::Error;

/// Largest compiled size of a `pattern` regex in a schema (linear-time engine).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Where and why arguments failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the arguments (`/amount_usd`, `` for the root).
    pub pointer: String,
    /// The failed keyword (`minimum`, `required`, `max_length`, …).
    pub keyword: String,
}

impl Violation {
    /// A message safe to show a model: where and which keyword, never the value.
    pub fn message(&self) -> String {
        let at = if self.pointer.is_empty() { "/" } else { self.pointer.as_str() };
        format!("arguments at `{at}` fail `{}`", self.keyword)
    }
}

/// A compiled input schema.
#[derive(Debug)]
pub struct SchemaValidator {
    inner: jsonschema::Validator,
}

impl SchemaValidator {
    /// Compiles `schema`; `pattern`s use the linear-time `regex` engine.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(PATTERN_SIZE_LIMIT))
            .build(schema)
            .map(|inner| Self { inner })
            .map_err(|e| format!("input_schema is not a valid JSON Schema: `{}` at `{}`", e.kind().keyword(), e.schema_path().as_str()))
    }

    /// The first violation, if any (a quick `is_valid` first: the common case).
    pub fn check(&self, args: &Value) -> Option<Violation> {
        if self.inner.is_valid(args) {
            return None;
        }
        let error = self.inner.iter_errors(args).next()?;
        Some(Violation { pointer: error.instance_path().as_str().to_string(), keyword: error.kind().keyword().to_string() })
    }
}

/// One path's constraints (seed 003's payload constraints).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraint {
    /// Dotted path into the value; empty for the root (`$`).
    pub path: Vec<String>,
    /// A string, list or map must not be empty; the value must be present.
    pub non_empty: bool,
    /// Longest string, in characters.
    pub max_length: Option<u64>,
    /// Smallest number.
    pub min: Option<f64>,
    /// Largest number.
    pub max: Option<f64>,
    /// The value must equal one of these.
    pub allowed_values: Option<Vec<Value>>,
    /// Fewest list items.
    pub min_items: Option<u64>,
    /// Most list items.
    pub max_items: Option<u64>,
}

/// The constraints on one side (input or output).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// Each path with its checks, in path order.
    pub items: Vec<Constraint>,
}

impl Constraints {
    /// Reads `{path: {non_empty, max_length, min, max, allowed_values, min_items, max_items}}`.
    pub fn from_value(value: &Value) -> Result<Self, Error> {
        let bad = |message: String| Error::InvalidArgument { code: "invalid_value", message };
        let Value::Object(paths) = value else {
            return Err(bad("payload constraints are a mapping of path to checks".into()));
        };
        let mut items = Vec::with_capacity(paths.len());
        for (path, checks) in paths {
            let Value::Object(checks) = checks else {
                return Err(bad(format!("constraints for `{path}` must be a mapping")));
            };
            let mut c = Constraint { path: split_path(path), ..Constraint::default() };
            for (op, arg) in checks {
                let uint = || arg.as_u64().ok_or_else(|| bad(format!("`{path}.{op}` must be a non-negative integer")));
                let num = || arg.as_f64().ok_or_else(|| bad(format!("`{path}.{op}` must be a number")));
                match op.as_str() {
                    "non_empty" => c.non_empty = arg.as_bool().ok_or_else(|| bad(format!("`{path}.non_empty` must be a boolean")))?,
                    "max_length" => c.max_length = Some(uint()?),
                    "min_items" => c.min_items = Some(uint()?),
                    "max_items" => c.max_items = Some(uint()?),
                    "min" => c.min = Some(num()?),
                    "max" => c.max = Some(num()?),
                    "allowed_values" => {
                        c.allowed_values = Some(
                            arg.as_array().cloned().ok_or_else(|| bad(format!("`{path}.allowed_values` must be a list")))?,
                        );
                    }
                    other => return Err(bad(format!("unknown constraint `{other}` for `{path}`"))),
                }
            }
            items.push(c);
        }
        Ok(Self { items })
    }

    /// The first violation, if any.
    pub fn check(&self, value: &Value) -> Option<Violation> {
        self.items.iter().find_map(|c| c.check(value))
    }
}

fn split_path(path: &str) -> Vec<String> {
    let path = path.strip_prefix('$').unwrap_or(path);
    path.split('.').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

impl Constraint {
    fn pointer(&self) -> String {
        self.path.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
    }

    fn check(&self, root: &Value) -> Option<Violation> {
        let fail = |keyword: &str| Some(Violation { pointer: self.pointer(), keyword: keyword.to_string() });
        let mut value = root;
        for segment in &self.path {
            let next = match value {
                Value::Object(map) => map.get(segment),
                Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(next) => value = next,
                // An absent optional value satisfies everything but non_empty.
                None => return if self.non_empty { fail("non_empty") } else { None },
            }
        }
        if self.non_empty {
            let empty = match value {
                Value::Null => true,
                Value::String(s) => s.trim().is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if empty {
                return fail("non_empty");
            }
        }
        if let (Some(max), Value::String(s)) = (self.max_length, value) {
            if s.chars().count() as u64 > max {
                return fail("max_length");
            }
        }
        if let Some(n) = value.as_f64() {
            if self.min.is_some_and(|min| n < min) {
                return fail("min");
            }
            if self.max.is_some_and(|max| n > max) {
                return fail("max");
            }
        }
        if let Some(allowed) = &self.allowed_values {
            if !allowed.iter().any(|a| same_value(a, value)) {
                return fail("allowed_values");
            }
        }
        if let Value::Array(items) = value {
            let n = items.len() as u64;
            if self.min_items.is_some_and(|min| n < min) {
                return fail("min_items");
            }
            if self.max_items.is_some_and(|max| n > max) {
                return fail("max_items");
            }
        }
        None
    }
}

/// JSON equality where `1` and `1.0` are the same number.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_violation_names_pointer_and_keyword_not_value() {
        let v = SchemaValidator::compile(&json!({"type": "object", "properties": {"amount": {"type": "number", "minimum": 0}}})).unwrap();
        assert_eq!(v.check(&json!({"amount": 3})), None);
        let bad = v.check(&json!({"amount": -41.5})).unwrap();
        assert_eq!(bad, Violation { pointer: "/amount".into(), keyword: "minimum".into() });
        assert!(!bad.message().contains("41"));
    }

    #[test]
    fn constraints() {
        let c = Constraints::from_value(&json!({
            "query": {"non_empty": true, "max_length": 5},
            "rows": {"min": 1, "max": 50},
            "mode": {"allowed_values": ["dry_run", "execute"]},
            "to": {"min_items": 1, "max_items": 2}
        }))
        .unwrap();
        let ok = json!({"query": "abc", "rows": 3, "mode": "dry_run", "to": ["a"]});
        assert_eq!(c.check(&ok), None);
        let kw = |v: Value| c.check(&v).map(|v| v.keyword);
        assert_eq!(kw(json!({"query": "  "})).as_deref(), Some("non_empty"));
        assert_eq!(kw(json!({"query": "abcdef"})).as_deref(), Some("max_length"));
        assert_eq!(kw(json!({"query": "a", "rows": 51})).as_deref(), Some("max"));
        assert_eq!(kw(json!({"query": "a", "mode": "rm"})).as_deref(), Some("allowed_values"));
        assert_eq!(kw(json!({"query": "a", "to": ["a", "b", "c"]})).as_deref(), Some("max_items"));
    }
}
