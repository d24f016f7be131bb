//! Step 2: arguments against the tool's JSON Schema, then its payload
//! constraints. A refusal names the JSON pointer, the failed keyword and what
//! would fix the call (the missing property, the expected type, the
//! unexpected property with the nearest known one, the allowed values or the
//! bound, all from the schema or the argument names); the offending value is
//! never echoed (it may be a secret).

use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Largest compiled size of a `pattern` regex in a schema (linear-time engine).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// One payload constraint (seed 003): bounded operators on one path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Constraint {
    /// A string, list or object must not be empty.
    pub non_empty: Option<bool>,
    /// Longest string, in characters.
    pub max_length: Option<u64>,
    /// Smallest number.
    pub min: Option<f64>,
    /// Largest number.
    pub max: Option<f64>,
    /// The only values allowed (JSON scalars).
    pub allowed_values: Option<Vec<Value>>,
    /// Fewest list items.
    pub min_items: Option<u64>,
    /// Most list items.
    pub max_items: Option<u64>,
}

/// Where and why arguments failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the arguments (`/amount_usd`, `` for the root).
    pub pointer: String,
    /// The failed keyword (`minimum`, `required`, `max_length`, …).
    pub keyword: String,
    /// What the caller can change, from the schema and the arguments' names
    /// only (`missing property `id``, `expected `number``, …).
    pub detail: Option<String>,
}

/// The most allowed values an `enum` or `allowed_values` detail lists.
const MAX_LISTED_VALUES: usize = 12;

impl Violation {
    fn new(pointer: String, keyword: &str, detail: Option<String>) -> Self {
        Self { pointer, keyword: keyword.to_string(), detail }
    }

    /// The pointer as shown: `/` for the root.
    pub fn at(&self) -> &str {
        if self.pointer.is_empty() {
            "/"
        } else {
            self.pointer.as_str()
        }
    }

    /// A message safe to show a model: where, which keyword and what would
    /// fix it, never the value.
    pub fn message(&self) -> String {
        match &self.detail {
            Some(detail) => format!("arguments at `{}` fail `{}`: {detail}", self.at(), self.keyword),
            None => format!("arguments at `{}` fail `{}`", self.at(), self.keyword),
        }
    }
}

/// `` `a`, `b` `` (values as JSON texts, names as they are), at most
/// [`MAX_LISTED_VALUES`] of them.
fn listed<T: std::fmt::Display>(values: &[T]) -> String {
    let mut out: Vec<String> = values.iter().take(MAX_LISTED_VALUES).map(|v| format!("`{v}`")).collect();
    if values.len() > MAX_LISTED_VALUES {
        out.push(format!("and {} more", values.len() - MAX_LISTED_VALUES));
    }
    out.join(", ")
}

/// The detail of unexpected properties. A key is the caller's text like a
/// value (a secret passed as a key must not come back), so it is named only
/// when it is a typo of a property the schema knows (the did-you-mean case);
/// otherwise the detail lists the properties the object takes.
fn unexpected_detail(unexpected: &[String], known: &[&str]) -> String {
    if let [one] = unexpected {
        if let Some(near) = crate::suggest::nearest(one, known.iter().copied()) {
            return format!("unexpected property `{one}`; did you mean `{near}`?");
        }
    }
    let what = match unexpected.len() {
        1 => "an unexpected property".to_string(),
        n => format!("{n} unexpected properties"),
    };
    if known.is_empty() {
        return format!("{what}; this object takes none");
    }
    format!("{what} (names not echoed); the properties allowed are {}", listed(known))
}

/// The detail of a schema error: the subject of its keyword, never the value.
fn schema_detail(schema: &Value, error: &jsonschema::ValidationError<'_>) -> Option<String> {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    Some(match error.kind() {
        K::Required { property } => format!("missing property `{}`", property.as_str().map_or_else(|| property.to_string(), str::to_string)),
        K::Type { kind } => {
            let names: Vec<String> = match kind {
                TypeKind::Single(t) => vec![format!("`{t}`")],
                TypeKind::Multiple(set) => set.iter().map(|t| format!("`{t}`")).collect(),
            };
            format!("expected {}", names.join(" or "))
        }
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            // The properties the schema does know, beside the keyword that failed.
            let path = error.schema_path().as_str();
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            let known: Vec<&str> = schema
                .pointer(parent)
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default();
            unexpected_detail(unexpected, &known)
        }
        K::Enum { options } => format!("allowed values are {}", listed(options.as_array().map_or(&[], Vec::as_slice))),
        K::Constant { expected_value } => format!("expected `{expected_value}`"),
        K::Minimum { limit } => format!("must be at least {limit}"),
        K::Maximum { limit } => format!("must be at most {limit}"),
        K::ExclusiveMinimum { limit } => format!("must be greater than {limit}"),
        K::ExclusiveMaximum { limit } => format!("must be less than {limit}"),
        K::MinLength { limit } => format!("must have at least {limit} characters"),
        K::MaxLength { limit } => format!("must have at most {limit} characters"),
        K::MinItems { limit } => format!("must have at least {limit} items"),
        K::MaxItems { limit } => format!("must have at most {limit} items"),
        K::MinProperties { limit } => format!("must have at least {limit} properties"),
        K::MaxProperties { limit } => format!("must have at most {limit} properties"),
        K::Pattern { pattern } => format!("must match `{pattern}`"),
        K::Format { format } => format!("must be a valid `{format}`"),
        _ => return None,
    })
}

/// A compiled input schema (shared by the tools of one load whose schemas are equal).
#[derive(Debug, Clone)]
pub struct SchemaValidator {
    inner: Arc<jsonschema::Validator>,
    /// The schema itself, for the known property names of a detail.
    schema: Arc<Value>,
}

thread_local! {
    /// Schemas compiled during the current [`with_compile_cache`] scope, by
    /// their JSON text: a load checks each manifest's schema and then builds
    /// the governor from it, and many tools share one schema.
    static COMPILED: RefCell<Option<HashMap<String, Arc<jsonschema::Validator>>>> = const { RefCell::new(None) };
}

/// Runs `f` with a cache of compiled schemas (nested calls share the
/// outermost scope's). The cache lives only for the scope, so it holds no
/// memory after a load.
pub fn with_compile_cache<T>(f: impl FnOnce() -> T) -> T {
    struct Scope(bool);
    impl Drop for Scope {
        fn drop(&mut self) {
            if self.0 {
                COMPILED.with(|c| c.borrow_mut().take());
            }
        }
    }
    let opened = COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_some() {
            return false;
        }
        *c = Some(HashMap::new());
        true
    });
    let _scope = Scope(opened);
    f()
}

/// The schemas compiled in a cache scope, by their JSON text.
pub(crate) type CompiledSchemas = HashMap<String, Arc<jsonschema::Validator>>;

/// Adds schemas compiled before (each with its compiled form) to the
/// current [`with_compile_cache`] scope (nothing outside one), so a later
/// [`SchemaValidator::compile`] of an equal schema reuses it: a governor
/// built from a harness loaded earlier compiles nothing its tools hold.
/// A compiled form met twice (tools sharing a schema) is keyed once.
pub fn remember<'a>(compiled: impl Iterator<Item = (&'a Value, &'a SchemaValidator)>) {
    if !COMPILED.with(|c| c.borrow().is_some()) {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut found = CompiledSchemas::new();
    for (schema, validator) in compiled {
        if !seen.insert(Arc::as_ptr(&validator.inner)) {
            continue;
        }
        if let Ok(key) = serde_json::to_string(schema) {
            found.insert(key, validator.inner.clone());
        }
    }
    add_compiled_schemas(found);
}

/// A copy of the current scope's compiled schemas (empty outside a scope),
/// for handing a worker thread's cache to the thread that spawned it.
pub(crate) fn compiled_schemas() -> CompiledSchemas {
    COMPILED.with(|c| c.borrow().clone().unwrap_or_default())
}

/// Adds schemas compiled elsewhere to the current scope's cache (nothing
/// outside a scope); schemas already cached are kept.
pub(crate) fn add_compiled_schemas(compiled: CompiledSchemas) {
    COMPILED.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            for (key, validator) in compiled {
                m.entry(key).or_insert(validator);
            }
        }
    });
}

impl SchemaValidator {
    /// Compiles `schema`; `pattern`s use the linear-time `regex` engine.
    /// Within [`with_compile_cache`], an equal schema compiled before is reused.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let key = COMPILED.with(|c| c.borrow().is_some()).then(|| serde_json::to_string(schema).ok()).flatten();
        if let Some(key) = &key {
            if let Some(inner) = COMPILED.with(|c| c.borrow().as_ref().and_then(|m| m.get(key).cloned())) {
                return Ok(Self { inner, schema: Arc::new(schema.clone()) });
            }
        }
        let inner = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(PATTERN_SIZE_LIMIT))
            .build(schema)
            .map(Arc::new)
            .map_err(|e| format!("input_schema is not a valid JSON Schema: `{}` at `{}`", e.kind().keyword(), e.schema_path().as_str()))?;
        if let Some(key) = key {
            COMPILED.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    m.insert(key, inner.clone());
                }
            });
        }
        Ok(Self { inner, schema: Arc::new(schema.clone()) })
    }

    /// The first violation, if any (a quick `is_valid` first: the common case).
    /// The schema it was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    pub fn check(&self, args: &Value) -> Option<Violation> {
        if self.inner.is_valid(args) {
            return None;
        }
        let error = self.inner.iter_errors(args).next()?;
        let detail = schema_detail(&self.schema, &error);
        Some(Violation::new(error.instance_path().as_str().to_string(), error.kind().keyword(), detail))
    }
}

/// One path's constraints (seed 003's payload constraints), as the manifest declares them.
#[derive(Debug, Clone, PartialEq)]
pub struct PathConstraint {
    /// Dotted path into the value; empty for the root (`$`).
    pub path: Vec<String>,
    /// The checks.
    pub checks: Constraint,
}

/// The constraints on one side (input or output).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// Each path with its checks, in path order.
    pub items: Vec<PathConstraint>,
}

impl Constraints {
    /// Compiles a manifest's `payload_constraints.input` or `.output`.
    pub fn new(paths: &BTreeMap<String, Constraint>) -> Self {
        Self { items: paths.iter().map(|(path, c)| PathConstraint { path: split_path(path), checks: c.clone() }).collect() }
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

impl PathConstraint {
    fn pointer(&self) -> String {
        self.path.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
    }

    fn check(&self, root: &Value) -> Option<Violation> {
        let c = &self.checks;
        let non_empty = c.non_empty.unwrap_or(false);
        let fail = |keyword: &str, detail: String| Some(Violation::new(self.pointer(), keyword, Some(detail)));
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
                None => return if non_empty { fail("non_empty", "must be present and not empty".into()) } else { None },
            }
        }
        if non_empty {
            let empty = match value {
                Value::Null => true,
                Value::String(s) => s.trim().is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if empty {
                return fail("non_empty", "must not be empty".into());
            }
        }
        if let (Some(max), Value::String(s)) = (c.max_length, value) {
            if s.chars().count() as u64 > max {
                return fail("max_length", format!("must have at most {max} characters"));
            }
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = c.min.filter(|&min| n < min) {
                return fail("min", format!("must be at least {min}"));
            }
            if let Some(max) = c.max.filter(|&max| n > max) {
                return fail("max", format!("must be at most {max}"));
            }
        }
        if let Some(allowed) = &c.allowed_values {
            if !allowed.iter().any(|a| same_value(a, value)) {
                return fail("allowed_values", format!("allowed values are {}", listed(allowed)));
            }
        }
        if let Value::Array(items) = value {
            let n = items.len() as u64;
            if let Some(min) = c.min_items.filter(|&min| n < min) {
                return fail("min_items", format!("must have at least {min} items"));
            }
            if let Some(max) = c.max_items.filter(|&max| n > max) {
                return fail("max_items", format!("must have at most {max} items"));
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
    fn equal_schemas_compile_once_within_a_cache_scope_only() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^A-[0-9]+$"}}});
        let other = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let (a, b, c) = with_compile_cache(|| {
            let a = SchemaValidator::compile(&schema).unwrap();
            // Nested scopes share the outer cache.
            let b = with_compile_cache(|| SchemaValidator::compile(&schema).unwrap());
            (a, b, SchemaValidator::compile(&other).unwrap())
        });
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        assert!(!Arc::ptr_eq(&a.inner, &c.inner));
        assert!(a.check(&json!({"id": "A-1"})).is_none() && c.check(&json!({"id": "B"})).is_none());
        assert_eq!(a.check(&json!({"id": "B"})).map(|v| v.keyword), Some("pattern".to_string()));
        // Outside a scope nothing is kept.
        let d = SchemaValidator::compile(&schema).unwrap();
        assert!(!Arc::ptr_eq(&a.inner, &d.inner));
        assert!(COMPILED.with(|c| c.borrow().is_none()));
    }

    #[test]
    fn schema_violation_names_pointer_and_keyword_not_value() {
        let v = SchemaValidator::compile(&json!({"type": "object", "properties": {"amount": {"type": "number", "minimum": 0}}})).unwrap();
        assert_eq!(v.check(&json!({"amount": 3})), None);
        let bad = v.check(&json!({"amount": -41.5})).unwrap();
        assert_eq!(bad, Violation { pointer: "/amount".into(), keyword: "minimum".into(), detail: Some("must be at least 0".into()) });
        assert!(!bad.message().contains("41"));
    }

    #[test]
    fn constraints() {
        let c = |v: Value| -> Constraint {
            let o = v.as_object().unwrap();
            Constraint {
                non_empty: o.get("non_empty").and_then(Value::as_bool),
                max_length: o.get("max_length").and_then(Value::as_u64),
                min: o.get("min").and_then(Value::as_f64),
                max: o.get("max").and_then(Value::as_f64),
                allowed_values: o.get("allowed_values").and_then(Value::as_array).cloned(),
                min_items: o.get("min_items").and_then(Value::as_u64),
                max_items: o.get("max_items").and_then(Value::as_u64),
            }
        };
        let mut paths = BTreeMap::new();
        paths.insert("query".to_string(), c(json!({"non_empty": true, "max_length": 5})));
        paths.insert("rows".to_string(), c(json!({"min": 1, "max": 50})));
        paths.insert("mode".to_string(), c(json!({"allowed_values": ["dry_run", "execute"]})));
        paths.insert("to".to_string(), c(json!({"min_items": 1, "max_items": 2})));
        let c = Constraints::new(&paths);
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
