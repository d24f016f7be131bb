//! cel-lite values: the evaluator's borrowed form and the public typed form.
//!
//! During evaluation a value either borrows from the variables' JSON (no copy
//! of `args` is ever made) or from the program's literals, or is built and
//! reference-counted. JSON numbers read as int when integral (uint above the
//! int range) and as double otherwise.

use serde_json::{Map, Number, Value};
use std::rc::Rc;

/// A CEL value with its CEL type kept: what [`super::Program::evaluate_value`]
/// returns.
#[derive(Debug, Clone, PartialEq)]
pub enum CelValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit signed int.
    Int(i64),
    /// A 64-bit unsigned int (`1u`).
    Uint(u64),
    /// A 64-bit float.
    Double(f64),
    /// A string.
    String(String),
    /// A list.
    List(Vec<CelValue>),
    /// A map, in insertion order (keys are int, uint, bool or string).
    Map(Vec<(CelValue, CelValue)>),
}

impl CelValue {
    /// The CEL type name: `null_type`, `bool`, `int`, `uint`, `double`,
    /// `string`, `list` or `map`.
    pub fn type_name(&self) -> &'static str {
        match self {
            CelValue::Null => "null_type",
            CelValue::Bool(_) => "bool",
            CelValue::Int(_) => "int",
            CelValue::Uint(_) => "uint",
            CelValue::Double(_) => "double",
            CelValue::String(_) => "string",
            CelValue::List(_) => "list",
            CelValue::Map(_) => "map",
        }
    }
}

/// The evaluator's value.
#[derive(Debug, Clone)]
pub(crate) enum Val<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(&'a str),
    OwnedStr(Rc<str>),
    List(Rc<Vec<Val<'a>>>),
    JList(&'a [Value]),
    Map(Rc<Vec<(Val<'a>, Val<'a>)>>),
    JMap(&'a Map<String, Value>),
    /// A map a host gathered field by field: the index of its read. Only a
    /// selection or `has` ever sees it (the parser reads anything else whole).
    Part(usize),
}

impl<'a> Val<'a> {
    pub fn from_json(v: &'a Value) -> Val<'a> {
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => from_number(n),
            Value::String(s) => Val::Str(s),
            Value::Array(items) => Val::JList(items),
            Value::Object(map) => Val::JMap(map),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Uint(_) => "uint",
            Val::Double(_) => "double",
            Val::Str(_) | Val::OwnedStr(_) => "string",
            Val::List(_) | Val::JList(_) => "list",
            Val::Map(_) | Val::JMap(_) | Val::Part(_) => "map",
        }
    }

    /// The type name with its article, for messages: `an int`, `a string`, `null`.
    pub fn a_type(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "a bool",
            Val::Int(_) => "an int",
            Val::Uint(_) => "a uint",
            Val::Double(_) => "a double",
            Val::Str(_) | Val::OwnedStr(_) => "a string",
            Val::List(_) | Val::JList(_) => "a list",
            Val::Map(_) | Val::JMap(_) | Val::Part(_) => "a map",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            Val::OwnedStr(s) => Some(s),
            _ => None,
        }
    }

    pub fn num(&self) -> Option<Num> {
        match self {
            Val::Int(i) => Some(Num::I(*i)),
            Val::Uint(u) => Some(Num::U(*u)),
            Val::Double(d) => Some(Num::D(*d)),
            _ => None,
        }
    }

    /// The number of items of a list or map.
    pub fn len(&self) -> Option<usize> {
        match self {
            Val::List(items) => Some(items.len()),
            Val::JList(items) => Some(items.len()),
            Val::Map(entries) => Some(entries.len()),
            Val::JMap(map) => Some(map.len()),
            _ => None,
        }
    }

    /// Iterates a list's items or a map's keys.
    pub fn items(&self) -> Option<Items<'a>> {
        match self {
            Val::List(items) => Some(Items::List(Rc::clone(items), 0)),
            Val::JList(items) => Some(Items::JList(items.iter())),
            Val::Map(entries) => Some(Items::Map(Rc::clone(entries), 0)),
            Val::JMap(map) => Some(Items::JMap(map.keys())),
            _ => None,
        }
    }

    pub fn is_list(&self) -> bool {
        matches!(self, Val::List(_) | Val::JList(_))
    }

    pub fn is_map(&self) -> bool {
        matches!(self, Val::Map(_) | Val::JMap(_))
    }
}

fn from_number(n: &Number) -> Val<'static> {
    if let Some(i) = n.as_i64() {
        Val::Int(i)
    } else if let Some(u) = n.as_u64() {
        Val::Uint(u)
    } else {
        Val::Double(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A list's items or a map's keys, borrowed or shared.
pub(crate) enum Items<'a> {
    List(Rc<Vec<Val<'a>>>, usize),
    JList(std::slice::Iter<'a, Value>),
    Map(Rc<Vec<(Val<'a>, Val<'a>)>>, usize),
    JMap(serde_json::map::Keys<'a>),
}

impl<'a> Iterator for Items<'a> {
    type Item = Val<'a>;

    fn next(&mut self) -> Option<Val<'a>> {
        match self {
            Items::List(items, i) => {
                let v = items.get(*i).cloned();
                *i += 1;
                v
            }
            Items::JList(it) => it.next().map(Val::from_json),
            Items::Map(entries, i) => {
                let v = entries.get(*i).map(|(k, _)| k.clone());
                *i += 1;
                v
            }
            Items::JMap(keys) => keys.next().map(|k| Val::Str(k.as_str())),
        }
    }
}

/// A number of any of CEL's three numeric types.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    U(u64),
    D(f64),
}

const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// Compares two numbers across types as CEL (cel-go) does: int and uint
/// exactly; against a double, out-of-range doubles order first and anything
/// else compares as doubles. `None` when a NaN is involved.
pub(crate) fn cmp_num(a: Num, b: Num) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    match (a, b) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
        (Num::U(x), Num::U(y)) => Some(x.cmp(&y)),
        (Num::D(x), Num::D(y)) => x.partial_cmp(&y),
        (Num::I(x), Num::U(y)) => Some(if x < 0 { Ordering::Less } else { x.unsigned_abs().cmp(&y) }),
        (Num::U(_), Num::I(_)) | (Num::D(_), Num::I(_)) | (Num::D(_), Num::U(_)) => cmp_num(b, a).map(Ordering::reverse),
        (Num::I(x), Num::D(y)) => {
            if y < -TWO_63 {
                Some(Ordering::Greater)
            } else if y > TWO_63 {
                Some(Ordering::Less)
            } else {
                (x as f64).partial_cmp(&y)
            }
        }
        (Num::U(x), Num::D(y)) => {
            if y < 0.0 {
                Some(Ordering::Greater)
            } else if y > TWO_64 {
                Some(Ordering::Less)
            } else {
                (x as f64).partial_cmp(&y)
            }
        }
    }
}

/// `int(d)`: truncates toward zero; `None` when out of range or NaN.
pub(crate) fn double_to_int(d: f64) -> Option<i64> {
    if d.is_nan() || d <= -TWO_63 || d >= TWO_63 {
        return None;
    }
    Some(d.trunc() as i64)
}

/// `uint(d)`: truncates toward zero; `None` when out of range or NaN.
pub(crate) fn double_to_uint(d: f64) -> Option<u64> {
    if d.is_nan() || !(0.0..TWO_64).contains(&d) {
        return None;
    }
    Some(d.trunc() as u64)
}

/// Formats a double as CEL's `string()` does (Go's shortest `%g`).
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if d < 0.0 { "-" } else { "" };
    // Go's shortest `%g` switches to exponent form below 1e-4 and from 1e6.
    if !(-4..6).contains(&exp) {
        return go_exp(sign, &digits, exp);
    }
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = usize::try_from(exp + 1).unwrap_or(1);
    if digits.len() <= point {
        let zeros = "0".repeat(point - digits.len());
        format!("{sign}{digits}{zeros}")
    } else {
        format!("{sign}{}.{}", digits.get(..point).unwrap_or_default(), digits.get(point..).unwrap_or_default())
    }
}

fn go_exp(sign: &str, digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(1.min(digits.len()));
    let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{first}{dot}e{esign}{:02}", exp.unsigned_abs())
}
