//! Values a host converts itself, as JSON text (Node: `JSON.stringify` and a
//! walk of its own for what that cannot say): the text read with every number
//! as the double it prints, and the error for a value the host's walk found no
//! JSON form for, worded here so that every host says it alike.

use serde::Deserialize;
use serde_json::Value;

use crate::canonical::{self, MAX_DEPTH};
use crate::error::Error;

/// The value of JSON text a host whose numbers are all doubles wrote (see
/// [`canonical::value_of_double_json`]), nesting at most [`MAX_DEPTH`] levels.
pub fn value_of_text(text: &str) -> Result<Value, Error> {
    if let Some(value) = canonical::value_of_double_json(text) {
        return Ok(value);
    }
    // Deeper than serde_json's own limit (128): checked here before it is parsed.
    if nesting(text) > MAX_DEPTH {
        return Err(deep());
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    let mut value = Value::deserialize(&mut reader).map_err(|e| Error::value("invalid_value", format!("could not read the value: {e}")))?;
    canonical::as_doubles(&mut value)?;
    Ok(value)
}

/// How deep the arrays and objects of JSON text nest.
fn nesting(text: &str) -> usize {
    let (mut depth, mut most, mut in_string, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                most = most.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    most
}

fn deep() -> Error {
    Error::value("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels"))
}

/// The error for a value a host's own walk found no JSON form for, at `path`
/// (the keys and indexes to it, outermost first). `kind` is what the host
/// found: `deep` (an array or object deeper than [`MAX_DEPTH`]), `number`
/// (`detail`: its text, NaN or an infinity), `bigint` (`detail`: its decimal
/// digits), `object` (not a plain object or array), or the host's name of
/// its type (`undefined`, `function`, `symbol`, …).
pub fn value_error(kind: &str, detail: &str, path: &[Value]) -> Error {
    let unsupported = |message: &str| Error::value("unsupported_type", message.to_string());
    let err = match kind {
        "deep" => deep(),
        "number" => canonical::float_value(detail.parse().unwrap_or(f64::NAN)).err().unwrap_or_else(|| unsupported("a number has no JSON form")),
        "bigint" => canonical::int_value_from_text(detail).err().unwrap_or_else(|| unsupported("a bigint has no JSON form")),
        "object" => unsupported("only plain objects and arrays have a JSON form (not a Map, Set, Date, typed array or class instance)"),
        "undefined" => unsupported("`undefined` has no JSON form"),
        "function" => unsupported("functions have no JSON form"),
        "symbol" => unsupported("symbols have no JSON form"),
        _ => unsupported("this kind of value has no JSON form"),
    };
    path.iter().rev().fold(err, |err, step| match step {
        Value::String(key) => err.at_key(key),
        index => err.at_index(index.as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_deeper_than_serde_json_reads_is_read_up_to_the_core_limit() {
        let text = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let mut want = json!(1);
        for _ in 0..300 {
            want = json!([want]);
        }
        assert_eq!(value_of_text(&text(300)), Ok(want));
        assert_eq!(value_of_text(&text(MAX_DEPTH + 1)).map_err(|e| e.code().to_string()), Err("nesting_too_deep".to_string()));
        assert_eq!(value_of_text(r#"{"a":"[[[","b":2.0}"#), Ok(json!({"a": "[[[", "b": 2})));
        assert_eq!(value_of_text("{").map_err(|e| e.code().to_string()), Err("invalid_value".to_string()));
    }

    #[test]
    fn a_host_walks_problem_is_worded_with_its_pointer() {
        let e = value_error("undefined", "", &[json!("a"), json!(2), json!("x/y")]);
        assert_eq!(
            (e.code(), e.pointer(), e.to_string().as_str()),
            ("unsupported_type", Some("/a/2/x~1y"), "at `/a/2/x~1y`: `undefined` has no JSON form")
        );
        assert_eq!(value_error("bigint", "36893488147419103232", &[]).code(), "integer_out_of_range");
        assert_eq!(value_error("number", "NaN", &[]).code(), "non_finite_number");
        assert_eq!(value_error("number", "-Infinity", &[]).code(), "non_finite_number");
        assert_eq!(value_error("deep", "", &[]).code(), "nesting_too_deep");
        assert_eq!(value_error("object", "", &[]).code(), "unsupported_type");
    }
}
