//! Canonical JSON: the one text form every language hashes.
//!
//! The output is exactly what Python's `json.dumps(v, sort_keys=True,
//! separators=(",", ":"), ensure_ascii=True)` prints, after integral floats
//! within ±2^53 become integers. Values that are not portable between Python
//! and TypeScript (NaN, infinities, integers beyond ±2^53) are refused, as is
//! nesting deeper than [`MAX_DEPTH`].

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

use crate::error::Error;

/// The largest integer magnitude every host represents exactly (2^53).
pub const MAX_SAFE_INTEGER: u64 = 1 << 53;

/// The deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 512;

/// Converts a host float to a value, refusing NaN and infinities
/// (`non_finite_number`). Bindings call this so every language refuses alike.
pub fn float_value(f: f64) -> Result<Value, Error> {
    Number::from_f64(f).map(Value::Number).ok_or_else(non_finite)
}

/// Converts a number of a host whose numbers are all doubles (JavaScript):
/// integral and within ±2^53 is an integer (so `1.0` and `1` agree, `-0` is
/// `0`), anything else a double; NaN and infinities are refused.
pub fn double_value(f: f64) -> Result<Value, Error> {
    #[expect(clippy::cast_precision_loss, reason = "2^53 is exact in f64")]
    let limit = MAX_SAFE_INTEGER as f64;
    if f.fract() == 0.0 && f.abs() <= limit {
        #[expect(clippy::cast_possible_truncation, reason = "integral and within ±2^53")]
        return Ok(Value::from(f as i64));
    }
    float_value(f)
}

/// The canonical text of JSON text written by such a host (`JSON.stringify`),
/// every number read as the double it prints and then by [`double_value`]
/// (`1152921504606846976` is 2^60 as a double, not an integer beyond ±2^53),
/// written as it is parsed, without building the value. `None` when
/// serde_json cannot read the text (a lone surrogate, nesting beyond its
/// limit): the host converts the value another way.
pub fn of_double_json(text: &str) -> Option<String> {
    serde_json::from_str::<Canonical>(text).ok().map(|c| c.0)
}

/// A value's canonical text, as [`of_double_json`] parses it.
struct Canonical(String);

impl<'de> serde::Deserialize<'de> for Canonical {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CanonicalVisitor)
    }
}

struct CanonicalVisitor;

impl<'de> serde::de::Visitor<'de> for CanonicalVisitor {
    type Value = Canonical;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Canonical, E> {
        Ok(Canonical("null".into()))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Canonical, E> {
        Ok(Canonical(if b { "true" } else { "false" }.into()))
    }

    #[expect(clippy::cast_precision_loss, reason = "the host's number is this double")]
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<Canonical, E> {
        self.visit_f64(i as f64)
    }

    #[expect(clippy::cast_precision_loss, reason = "the host's number is this double")]
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Canonical, E> {
        self.visit_f64(u as f64)
    }

    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Canonical, E> {
        let mut out = String::new();
        write_value(&mut out, &double_value(f).map_err(E::custom)?, 0).map_err(E::custom)?;
        Ok(Canonical(out))
    }

    fn visit_str<E>(self, s: &str) -> Result<Canonical, E> {
        let mut out = String::with_capacity(s.len() + 2);
        write_str(&mut out, s);
        Ok(Canonical(out))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Canonical, A::Error> {
        let mut out = String::from("[");
        while let Some(Canonical(item)) = seq.next_element()? {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&item);
        }
        out.push(']');
        Ok(Canonical(out))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Canonical, A::Error> {
        let mut entries: Vec<(String, String)> = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some((key, Canonical(value))) = map.next_entry::<String, Canonical>()? {
            entries.push((key, value));
        }
        // Stable: of a repeated key the last counts, as in a parsed map.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::with_capacity(entries.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>() + 2);
        out.push('{');
        for (i, (key, value)) in entries.iter().enumerate() {
            if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if out.len() > 1 {
                out.push(',');
            }
            write_str(&mut out, key);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        Ok(Canonical(out))
    }
}

/// Converts a host integer to a value, refusing magnitudes beyond 2^53
/// (`integer_out_of_range`): TypeScript cannot represent them exactly.
pub fn int_value(i: i128) -> Result<Value, Error> {
    if i.unsigned_abs() > u128::from(MAX_SAFE_INTEGER) {
        return Err(out_of_range(&i.to_string()));
    }
    #[expect(clippy::cast_possible_truncation, reason = "within ±2^53")]
    Ok(Value::from(i as i64))
}

/// Converts the decimal text of an integer of any size, as hosts with big
/// integers (Python `int`, JavaScript `BigInt`) can hand it over.
pub fn int_value_from_text(text: &str) -> Result<Value, Error> {
    match text.parse::<i128>() {
        Ok(i) => int_value(i),
        Err(_) if text.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => Err(out_of_range(text)),
        Err(_) => Err(Error::value("invalid_number", "a number is not an integer".to_string())),
    }
}

fn non_finite() -> Error {
    Error::value("non_finite_number", "NaN and infinities have no JSON form".to_string())
}

/// An upper bound on the length of `value`'s canonical text, cheap to
/// compute (no formatting, no allocation); stops counting past `limit`.
/// Lets callers skip serialising values that certainly fit.
pub fn len_upper_bound(value: &Value, limit: usize) -> usize {
    /// A scalar's bound; `None` for a list or a mapping.
    #[inline]
    fn scalar(v: &Value) -> Option<usize> {
        match v {
            Value::Null | Value::Bool(_) => Some(5),
            // Python's repr of an f64 is at most 24 bytes (`-2.2250738585072014e-308`).
            Value::Number(_) => Some(24),
            // An escape is at most 6 bytes per UTF-8 byte (`\u0001`; `\ud83d\ude00` is 12 for 4).
            Value::String(s) => Some(6 * s.len() + 2),
            Value::Array(_) | Value::Object(_) => None,
        }
    }
    // Scalars are counted in the loop rather than by a call per item: this
    // runs on every allowed call's output.
    fn walk(v: &Value, mut total: usize, limit: usize) -> usize {
        match v {
            Value::Array(items) => {
                total += 2 + items.len();
                for item in items {
                    if total > limit {
                        break;
                    }
                    total = scalar(item).map_or_else(|| walk(item, total, limit), |n| total + n);
                }
                total
            }
            Value::Object(map) => {
                total += 2 + 2 * map.len();
                for (k, item) in map {
                    if total > limit {
                        break;
                    }
                    total += 6 * k.len() + 2;
                    total = scalar(item).map_or_else(|| walk(item, total, limit), |n| total + n);
                }
                total
            }
            scalar_value => total + scalar(scalar_value).unwrap_or(0),
        }
    }
    walk(value, 0, limit)
}

/// Checks that `value` has a canonical text (what [`to_string`] would refuse:
/// integers beyond ±2^53, non-finite numbers, nesting too deep) without
/// writing it: the governor's portability check when nothing needs the digest.
pub fn check(value: &Value) -> Result<(), Error> {
    fn walk(value: &Value, depth: usize) -> Result<(), Error> {
        match value {
            Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
            Value::Number(n) => check_number(n),
            Value::Array(items) => {
                let depth = enter(depth)?;
                items.iter().try_for_each(|item| walk(item, depth))
            }
            Value::Object(map) => {
                let depth = enter(depth)?;
                map.values().try_for_each(|item| walk(item, depth))
            }
        }
    }
    walk(value, 0)
}

fn check_number(n: &Number) -> Result<(), Error> {
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() > MAX_SAFE_INTEGER { Err(out_of_range(&i.to_string())) } else { Ok(()) };
    }
    if let Some(u) = n.as_u64() {
        return if u > MAX_SAFE_INTEGER { Err(out_of_range(&u.to_string())) } else { Ok(()) };
    }
    match n.as_f64() {
        Some(f) if f.is_finite() => Ok(()),
        Some(_) => Err(non_finite()),
        None => Err(Error::value("invalid_number", "number is not representable".to_string())),
    }
}

/// Returns the canonical JSON text of `value`.
pub fn to_string(value: &Value) -> Result<String, Error> {
    let mut out = String::with_capacity(64);
    write_value(&mut out, value, 0)?;
    Ok(out)
}

/// Appends the canonical JSON text of `value` to `out`.
pub fn write_value(out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            let depth = enter(depth)?;
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, depth)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let depth = enter(depth)?;
            write_object(out, map, depth)?;
        }
    }
    Ok(())
}

/// One level deeper: the depth of an array's or object's items, or
/// `nesting_too_deep` (for writers of canonical text that build no [`Value`]).
pub(crate) fn enter(depth: usize) -> Result<usize, Error> {
    if depth >= MAX_DEPTH {
        return Err(Error::value("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels")));
    }
    Ok(depth + 1)
}

fn write_object(out: &mut String, map: &Map<String, Value>, depth: usize) -> Result<(), Error> {
    out.push('{');
    // Rust orders `str` by UTF-8 bytes, which is the same as code point order
    // (what Python's `sort_keys` uses), unlike JavaScript's UTF-16 order.
    // serde_json's map is usually a BTreeMap, already in that order; sort only
    // when it is not (with `preserve_order` in the dependency graph).
    if map.keys().is_sorted() {
        for (i, (key, item)) in map.iter().enumerate() {
            write_entry(out, i, key, item, depth)?;
        }
    } else {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (i, (key, item)) in entries.into_iter().enumerate() {
            write_entry(out, i, key, item, depth)?;
        }
    }
    out.push('}');
    Ok(())
}

fn write_entry(out: &mut String, i: usize, key: &str, item: &Value, depth: usize) -> Result<(), Error> {
    if i > 0 {
        out.push(',');
    }
    write_str(out, key);
    out.push(':');
    write_value(out, item, depth)
}

/// Writes a JSON string literal with every character outside printable ASCII
/// escaped as `\uXXXX` (lowercase hex, surrogate pairs above U+FFFF).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let mut plain_from = 0;
    for (i, ch) in s.char_indices() {
        let escape: Option<&str> = match ch {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            ' '..='~' => continue,
            _ => None,
        };
        out.push_str(s.get(plain_from..i).unwrap_or_default());
        plain_from = i + ch.len_utf8();
        match escape {
            Some(text) => out.push_str(text),
            None => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04x}", unit);
                }
            }
        }
    }
    out.push_str(s.get(plain_from..).unwrap_or_default());
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) -> Result<(), Error> {
    check_number(n)?;
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
        return Ok(());
    }
    if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
        return Ok(());
    }
    match n.as_f64() {
        Some(f) => write_float(out, f),
        None => Err(Error::value("invalid_number", "number is not representable".to_string())),
    }
}

/// Appends an unsigned integer as [`write_value`] would (refusing one beyond ±2^53).
pub(crate) fn write_u64(out: &mut String, u: u64) -> Result<(), Error> {
    write_number(out, &Number::from(u))
}

/// Appends a list of strings as [`write_value`] would; the list is at `depth`.
pub(crate) fn write_strs(out: &mut String, items: &[String], depth: usize) -> Result<(), Error> {
    enter(depth)?;
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, item);
    }
    out.push(']');
    Ok(())
}

/// Appends a string, or `null` for none.
pub(crate) fn write_opt_str(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.push_str("null"),
    }
}

/// The value is never echoed (it may be a secret, and it may be huge): the
/// message names the rule only (issue 17, item 12).
fn out_of_range(_text: &str) -> Error {
    Error::value("integer_out_of_range", "an integer is beyond ±2^53 and not portable to every host".to_string())
}

/// Writes a float as Python's `repr` would, after integral values within
/// ±2^53 become integers.
pub fn write_float(out: &mut String, f: f64) -> Result<(), Error> {
    if !f.is_finite() {
        return Err(non_finite());
    }
    if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
        #[expect(clippy::cast_possible_truncation, reason = "integral and within ±2^53")]
        let i = f as i64;
        let _ = write!(out, "{i}");
        return Ok(());
    }
    // `{:e}` gives the shortest digits that round-trip, as Python's repr does.
    // When two strings of that length round-trip, Python takes the one nearest
    // the exact value (ties to even): the correctly rounded string of that
    // length, which `{:.*e}` gives (562949953421312.25 prints `…312.2`, where
    // `{:e}` alone says `…312.3`). Only the layout differs after that.
    let shortest = format!("{:e}", f.abs());
    let len = shortest.split_once('e').map_or(0, |(m, _)| m.chars().filter(char::is_ascii_digit).count());
    // Of at most 15 digits, only one string round-trips to a normal double:
    // two would differ by at least 10^-14 of their size, more than the
    // double's rounding interval (at most 2^-52 of its size) holds. So
    // `shortest` is then the nearest too, without formatting and parsing again.
    let sci = if len <= 15 && f.is_normal() {
        shortest
    } else {
        let nearest = format!("{:.*e}", len.saturating_sub(1), f.abs());
        if nearest.parse::<f64>().ok() == Some(f.abs()) {
            nearest
        } else {
            shortest
        }
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if f.is_sign_negative() {
        out.push('-');
    }
    let decpt = exp + 1;
    if -4 < decpt && decpt <= 16 {
        let len = digits.len() as i32;
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..-decpt {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt >= len {
            out.push_str(&digits);
            for _ in 0..(decpt - len) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (head, tail) = digits.split_at(decpt as usize);
            out.push_str(head);
            out.push('.');
            out.push_str(tail);
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    }
    Ok(())
}

/// The value of JSON text written by a host whose numbers are all doubles
/// (`JSON.stringify`), each number read as [`double_value`] reads the double
/// it prints (`1152921504606846976` is 2^60 as a double, as the host's own
/// conversion reads it). `None` when serde_json cannot read the text (a lone
/// surrogate, nesting beyond its limit): the host converts the value another way.
pub fn value_of_double_json(text: &str) -> Option<Value> {
    let mut value = serde_json::from_str(text).ok()?;
    as_doubles(&mut value).ok()?;
    Some(value)
}

/// Reads every number of `value` as a double (serde_json's nesting limit, or
/// `host::value_of_text`'s check, bounds the recursion).
pub(crate) fn as_doubles(value: &mut Value) -> Result<(), Error> {
    match value {
        Value::Number(n) if n.as_i64().is_none_or(|i| i.unsigned_abs() > MAX_SAFE_INTEGER) => {
            *value = double_value(n.as_f64().ok_or_else(non_finite)?)?;
        }
        Value::Array(items) => items.iter_mut().try_for_each(as_doubles)?,
        Value::Object(map) => map.values_mut().try_for_each(as_doubles)?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_of_double_json_reads_numbers_as_the_doubles_the_host_wrote() {
        let read = value_of_double_json(r#"{"a":[1,2.5,1e2,-7,0.1],"b":"x","c":null}"#);
        assert_eq!(read, Some(json!({"a": [1, 2.5, 100, -7, 0.1], "b": "x", "c": null})));
        assert_eq!(read.map(|v| to_string(&v).unwrap()), Some(r#"{"a":[1,2.5,100,-7,0.1],"b":"x","c":null}"#.to_string()));
        // Text serde_json cannot read: the host converts the value another way.
        assert_eq!(value_of_double_json("{"), None);
        assert_eq!(value_of_double_json(r#""\ud800""#), None);
    }

    fn canon(v: Value) -> String {
        to_string(&v).unwrap()
    }

    #[test]
    fn floats_print_as_python_repr() {
        for (f, text) in [
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (1e16, "1e+16"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (9007199254740994.0, "9007199254740994.0"),
            (1.0, "1"),
            (-0.0, "0"),
            (5e-324, "5e-324"),
            (562949953421312.2, "562949953421312.2"),
            (1.0000000000000002, "1.0000000000000002"),
            (-1234.125, "-1234.125"),
        ] {
            let mut out = String::new();
            write_float(&mut out, f).unwrap();
            assert_eq!(out, text, "{f:?}");
        }
    }

    /// `write_float`'s choice of digits before the 15-digit shortcut.
    fn digits_without_shortcut(f: f64) -> String {
        let shortest = format!("{:e}", f.abs());
        let len = shortest.split_once('e').map_or(0, |(m, _)| m.chars().filter(char::is_ascii_digit).count());
        let nearest = format!("{:.*e}", len.saturating_sub(1), f.abs());
        if nearest.parse::<f64>().ok() == Some(f.abs()) {
            nearest
        } else {
            shortest
        }
    }

    #[test]
    fn the_shortest_digits_of_fifteen_or_fewer_are_the_nearest() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..200_000u32 {
            let r = next();
            // Random doubles, and short decimals (prices, ratios) scaled over many magnitudes.
            let f = if i % 2 == 0 { f64::from_bits(r) } else { (r % 1_000_000) as f64 / 100.0 * 10f64.powi((r >> 40) as i32 % 40 - 20) };
            if !f.is_finite() || !f.is_normal() {
                continue;
            }
            let shortest = format!("{:e}", f.abs());
            let len = shortest.split_once('e').map_or(0, |(m, _)| m.chars().filter(char::is_ascii_digit).count());
            if len <= 15 {
                assert_eq!(shortest, digits_without_shortcut(f), "{f:?}");
            }
        }
    }

    #[test]
    fn keys_sort_by_code_point_and_escape() {
        let v = json!({"\u{10000}": 1, "\u{ffff}": 2, "b": "\u{7f}\u{1}é\"\\", "a": [true, null]});
        assert_eq!(canon(v), r#"{"a":[true,null],"b":"\u007f\u0001\u00e9\"\\","\uffff":2,"\ud800\udc00":1}"#);
    }

    #[test]
    fn refuses_unportable_values() {
        assert_eq!(to_string(&json!(9007199254740993u64)).unwrap_err().code(), "integer_out_of_range");
        assert_eq!(canon(json!(9007199254740992u64)), "9007199254740992");
        assert_eq!(to_string(&json!(-9007199254740993i64)).unwrap_err().code(), "integer_out_of_range");
        let mut deep = json!(1);
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        assert_eq!(to_string(&deep).unwrap_err().code(), "nesting_too_deep");
        assert_eq!(check(&deep).unwrap_err().code(), "nesting_too_deep");
    }

    #[test]
    fn check_agrees_with_to_string() {
        let mut deep = json!(1);
        for _ in 0..MAX_DEPTH {
            deep = json!([deep]);
        }
        for v in [
            json!(9007199254740993u64),
            json!(9007199254740992u64),
            json!(-9007199254740993i64),
            json!({"a": [1.5, {"b": -9007199254740993i64}]}),
            json!({"a": [1.5, {"b": "x", "c": null, "d": true}]}),
            deep.clone(),
            json!([deep]),
        ] {
            assert_eq!(check(&v).map_err(|e| e.code().to_string()), to_string(&v).map(|_| ()).map_err(|e| e.code().to_string()), "{v}");
        }
    }
}
