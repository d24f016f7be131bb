//! A host's values to the core's JSON values, walked here: a binding only
//! says what kind each of its values is ([`HostValues::kind`]); the bounds
//! (nesting, an integer's range, finite numbers, string keys, valid Unicode)
//! and the wording of every failure (with the JSON pointer to it, never the
//! value) are the core's, so every host that walks its own objects agrees.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::canonical::{self, MAX_DEPTH};
use crate::error::Error;

/// What one host value is.
#[derive(Debug)]
pub enum Kind<'a, L, M> {
    /// None, null.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer: its value, or its decimal text when it does not fit an `i128`.
    Int(Result<i128, String>),
    /// A floating-point number.
    Float(f64),
    /// A string; `None` when it is not valid Unicode (a lone surrogate).
    Str(Option<Cow<'a, str>>),
    /// A list, tuple or array: its items (an item the host failed to read is its error's text).
    List(L),
    /// A mapping: its (key, value) pairs.
    Map(M),
    /// A value the host already holds in the core's form (a principal).
    Core(Value),
    /// Anything else: the host's name of its type.
    Other(String),
}

/// A host's values as [`walk`] reads them.
pub trait HostValues {
    /// One value.
    type Value;
    /// The items of a list.
    type List: Iterator<Item = Result<Self::Value, String>>;
    /// The pairs of a mapping.
    type Map: Iterator<Item = (Self::Value, Self::Value)>;
    /// What `value` is.
    fn kind<'a>(&self, value: &'a Self::Value) -> Kind<'a, Self::List, Self::Map>;
    /// The host's name of `value`'s type, for a message.
    fn type_name(&self, value: &Self::Value) -> String;
    /// The attribute `name` of an object of no JSON form (a host's run or
    /// refusal object), for [`super::id_of`]; none by default.
    fn attr(&self, _value: &Self::Value, _name: &str) -> Option<Self::Value> {
        None
    }
    /// `value` when it already is a core principal (a host's principal
    /// object), read without its JSON form; none by default.
    fn principal(&self, _value: &Self::Value) -> Option<crate::call::Principal> {
        None
    }
}

/// JSON values as host values: a Rust host's (or a test's) arguments read by
/// the same rules as a binding's ([`super::id_of`], [`super::named`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonValues;

impl HostValues for JsonValues {
    type Value = Value;
    type List = std::vec::IntoIter<Result<Value, String>>;
    type Map = std::vec::IntoIter<(Value, Value)>;
    fn kind<'a>(&self, value: &'a Value) -> Kind<'a, Self::List, Self::Map> {
        match value {
            Value::Null => Kind::Null,
            Value::Bool(b) => Kind::Bool(*b),
            Value::String(s) => Kind::Str(Some(Cow::Borrowed(s))),
            Value::Number(_) | Value::Array(_) | Value::Object(_) => Kind::Core(value.clone()),
        }
    }
    fn type_name(&self, _: &Value) -> String {
        "json".into()
    }
}

/// `value` as the core's JSON value; `depth` is how deep it already sits.
pub fn walk<H: HostValues>(host: &H, value: &H::Value, depth: usize) -> Result<Value, Error> {
    match host.kind(value) {
        Kind::Null => Ok(Value::Null),
        Kind::Bool(b) => Ok(Value::Bool(b)),
        Kind::Int(Ok(i)) => canonical::int_value(i),
        Kind::Int(Err(text)) => canonical::int_value_from_text(&text),
        Kind::Float(f) => canonical::float_value(f),
        Kind::Str(s) => s.map(|s| Value::String(s.into_owned())).ok_or_else(|| surrogate("string")),
        Kind::Core(v) => Ok(v),
        Kind::Other(name) => Err(Error::value("unsupported_type", format!("values of type `{name}` have no JSON form"))),
        Kind::List(items) => {
            let depth = enter(depth)?;
            let item = |(i, item): (usize, Result<H::Value, String>)| {
                item.map_err(|e| Error::value("invalid_value", e)).and_then(|v| walk(host, &v, depth)).map_err(|e| e.at_index(i))
            };
            items.enumerate().map(item).collect::<Result<_, _>>().map(Value::Array)
        }
        Kind::Map(pairs) => {
            let depth = enter(depth)?;
            let mut map = Map::new();
            for (key, item) in pairs {
                let key = match host.kind(&key) {
                    Kind::Str(Some(key)) => key.into_owned(),
                    Kind::Str(None) => return Err(surrogate("key")),
                    _ => {
                        return Err(Error::value(
                            "non_string_key",
                            format!("object keys must be strings, found a key of type `{}`", host.type_name(&key)),
                        ))
                    }
                };
                let item = walk(host, &item, depth).map_err(|e| e.at_key(&key))?;
                map.insert(key, item);
            }
            Ok(Value::Object(map))
        }
    }
}

fn surrogate(what: &str) -> Error {
    Error::value("invalid_string", format!("{what} is not valid Unicode (lone surrogate)"))
}

fn enter(depth: usize) -> Result<usize, Error> {
    if depth >= MAX_DEPTH {
        return Err(Error::value("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels")));
    }
    Ok(depth + 1)
}

/// A host for the host module's tests: JSON values, with `{"$other": name}`
/// for a value of no JSON form and `{"$object": {...}}` for an object of no
/// JSON form with those attributes.
#[cfg(test)]
pub(crate) mod test_host {
    use std::borrow::Cow;

    use serde_json::Value;

    use super::{HostValues, Kind};

    pub(crate) struct Json;

    impl HostValues for Json {
        type Value = Value;
        type List = std::vec::IntoIter<Result<Value, String>>;
        type Map = std::vec::IntoIter<(Value, Value)>;
        fn kind<'a>(&self, value: &'a Value) -> Kind<'a, Self::List, Self::Map> {
            match value {
                Value::Null => Kind::Null,
                Value::Bool(b) => Kind::Bool(*b),
                Value::Number(n) => n.as_i64().map_or_else(|| Kind::Float(n.as_f64().unwrap_or(f64::NAN)), |i| Kind::Int(Ok(i.into()))),
                Value::String(s) => Kind::Str(Some(Cow::Borrowed(s))),
                Value::Array(a) => Kind::List(a.iter().cloned().map(Ok).collect::<Vec<_>>().into_iter()),
                Value::Object(m) if m.contains_key("$other") => Kind::Other(m["$other"].as_str().unwrap_or("?").into()),
                Value::Object(m) if m.contains_key("$object") => Kind::Other("object".into()),
                Value::Object(m) => Kind::Map(m.iter().map(|(k, v)| (Value::String(k.clone()), v.clone())).collect::<Vec<_>>().into_iter()),
            }
        }
        fn type_name(&self, _: &Value) -> String {
            "json".into()
        }
        fn attr(&self, value: &Value, name: &str) -> Option<Value> {
            value["$object"].get(name).cloned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_host::Json;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_walk_keeps_json_and_names_where_it_failed() {
        assert_eq!(walk(&Json, &json!({"a": [1, 2.5, "x", null, true]}), 0), Ok(json!({"a": [1, 2.5, "x", null, true]})));
        let e = walk(&Json, &json!({"a": [0, {"$other": "set"}]}), 0).unwrap_err();
        assert_eq!((e.code(), e.pointer()), ("unsupported_type", Some("/a/1")));
        // A list already MAX_DEPTH levels down nests too deep; a scalar there does not.
        assert_eq!(walk(&Json, &json!([1]), MAX_DEPTH).unwrap_err().code(), "nesting_too_deep");
        assert_eq!(walk(&Json, &json!(1), MAX_DEPTH), Ok(json!(1)));
    }
}
