//! Runs the public CEL conformance data (google/cel-spec `tests/simple`) against
//! cel-lite.
//!
//! Every case whose expression stays inside the subset and whose variables can
//! be given as JSON is run and must pass (value or error); every other case is
//! counted as skipped under its reason, never dropped silently. The counts are
//! written straight to stderr, so they show without `--nocapture`.
//!
//! The data is vendored in `fixtures/cel_spec/` (or `$CEL_CONFORMANCE_DIR`);
//! the files are text-format protobuf, read by the small parser below (no
//! protobuf dependency).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use harnessweaver_core::cel_lite::{self, CelValue, Options};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Cases inside the subset that cel-lite does not pass, with the reason.
/// Keep this list as short as possible; a listed case that passes fails the run.
const KNOWN_FAILURES: &[(&str, &str)] = &[
    ("comparisons/eq_literal/not_eq_double_nan", NON_FINITE),
    ("comparisons/eq_literal/not_eq_int_double_nan", NON_FINITE),
    ("comparisons/eq_literal/not_eq_uint_double_nan", NON_FINITE),
    ("comparisons/ne_literal/ne_double_nan", NON_FINITE),
    ("comparisons/ne_literal/not_ne_double_nan", NON_FINITE),
    ("comparisons/ne_literal/not_ne_int_double_nan", NON_FINITE),
    ("comparisons/ne_literal/not_ne_uint_double_nan", NON_FINITE),
    ("fp_math/fp_math/divide_zero", NON_FINITE),
    ("fp_math/fp_math/fp_overflow_negative", NON_FINITE),
    ("fp_math/fp_math/fp_overflow_positive", NON_FINITE),
];

/// cel-lite departs from CEL on purpose here: a NaN or an infinity makes the
/// expression unevaluable (a NaN compares false with everything, which would
/// skip a deny rule or an approval condition; issue 17, item 6).
const NON_FINITE: &str = "a NaN or infinity is unevaluable in cel-lite by design";

#[test]
fn cel_spec_conformance() {
    let dir = data_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "textproto"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .textproto files in {}", dir.display());

    let mut run = 0usize;
    let mut passed = 0usize;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut known_seen: Vec<&str> = Vec::new();
    let mut per_file: Vec<(String, usize, usize, usize)> = Vec::new();

    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let root = textproto::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let file_name = root.str_field("name").unwrap_or_default();
        let (mut f_run, mut f_pass, mut f_skip) = (0, 0, 0);
        for section in root.all("section") {
            let section_name = section.str_field("name").unwrap_or_default();
            for test in section.all("test") {
                let id = format!("{file_name}/{section_name}/{}", test.str_field("name").unwrap_or_default());
                match run_case(test) {
                    Verdict::Skip(reason) => {
                        *skipped.entry(reason).or_default() += 1;
                        f_skip += 1;
                    }
                    Verdict::Pass => {
                        run += 1;
                        f_run += 1;
                        passed += 1;
                        f_pass += 1;
                        if let Some((known, _)) = KNOWN_FAILURES.iter().find(|(k, _)| *k == id) {
                            failures.push(format!("{id}: listed as a known failure but passes; remove it"));
                            known_seen.push(known);
                        }
                    }
                    Verdict::Fail(why) => {
                        run += 1;
                        f_run += 1;
                        if let Some((known, _)) = KNOWN_FAILURES.iter().find(|(k, _)| *k == id) {
                            known_seen.push(known);
                        } else {
                            failures.push(format!("{id}: {why}"));
                        }
                    }
                }
            }
        }
        per_file.push((file_name, f_run, f_pass, f_skip));
    }

    let mut report = String::new();
    report.push_str("\ncel-lite conformance (google/cel-spec tests/simple)\n");
    for (name, r, p, s) in &per_file {
        report.push_str(&format!("  {name:<14} run {r:>4}  passed {p:>4}  skipped {s:>4}\n"));
    }
    let total_skipped: usize = skipped.values().sum();
    report.push_str(&format!("  total          run {run:>4}  passed {passed:>4}  skipped {total_skipped:>4}  known failures {}\n", known_seen.len()));
    report.push_str("  skipped by reason:\n");
    let mut reasons: Vec<_> = skipped.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (reason, n) in reasons {
        report.push_str(&format!("    {n:>4}  {reason}\n"));
    }
    for f in &failures {
        report.push_str(&format!("  FAIL {f}\n"));
    }
    // Straight to the stderr handle: libtest captures `eprintln!`, not this.
    let _ = std::io::stderr().write_all(report.as_bytes());
    assert!(failures.is_empty(), "{} conformance case(s) failed:\n{}", failures.len(), failures.join("\n"));
    assert!(run > 0);
}

fn data_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CEL_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/cel_spec")
}

enum Verdict {
    Pass,
    Fail(String),
    Skip(String),
}

enum Expected {
    Value(CelValue),
    Error,
}

fn run_case(test: &textproto::Msg) -> Verdict {
    let Some(expr) = test.str_field("expr") else { return Verdict::Skip("no expression".into()) };
    if test.str_field("container").is_some() {
        return Verdict::Skip("uses proto messages".into());
    }
    let expected = if let Some(v) = test.msg("value") {
        match to_cel(v) {
            Ok(v) => Expected::Value(v),
            Err(reason) => return Verdict::Skip(reason),
        }
    } else if test.msg("eval_error").is_some() {
        Expected::Error
    } else {
        return Verdict::Skip("expects no value or error (check-only case)".into());
    };

    let mut names: Vec<String> = test.all("type_env").filter_map(|d| d.str_field("name")).collect();
    let mut vars = Map::new();
    for b in test.all("bindings") {
        let key = b.str_field("key").unwrap_or_default();
        let Some(value) = b.msg("value").and_then(|v| v.msg("value")) else {
            return Verdict::Skip("binding is not a plain value".into());
        };
        let value = match to_cel(value) {
            Ok(v) => v,
            Err(reason) => return Verdict::Skip(reason),
        };
        let Some(json) = to_json(&value) else {
            return Verdict::Skip("bindings not expressible as JSON (uint, NaN or non-string map keys)".into());
        };
        vars.insert(key.clone(), json);
        names.push(key);
    }
    if names.iter().any(|n| n.contains('.')) {
        return Verdict::Skip("uses qualified (dotted) variable names".into());
    }
    let options = Options { names, dyn_identity: true, ..Options::default() };
    let program = match cel_lite::compile_with(&expr, &options) {
        Ok(p) => p,
        Err(e) => {
            if let Some(reason) = skip_reason(&e) {
                return Verdict::Skip(reason);
            }
            return match expected {
                Expected::Error => Verdict::Fail(format!("expected an evaluation error, got compile error {}: {}", e.code(), e)),
                Expected::Value(v) => Verdict::Fail(format!("expected {v:?}, got compile error {}: {e}", e.code())),
            };
        }
    };
    let got = program.evaluate_value(&vars);
    match (expected, got) {
        (Expected::Value(want), Ok(got)) if same(&want, &got) => Verdict::Pass,
        (Expected::Value(want), Ok(got)) => Verdict::Fail(format!("`{expr}`: expected {want:?}, got {got:?}")),
        (Expected::Value(want), Err(reason)) => Verdict::Fail(format!("`{expr}`: expected {want:?}, got unevaluable: {reason}")),
        (Expected::Error, Err(_)) => Verdict::Pass,
        (Expected::Error, Ok(got)) => Verdict::Fail(format!("`{expr}`: expected an error, got {got:?}")),
    }
}

/// Compile errors that mean "outside the subset", with the skip reason.
fn skip_reason(e: &cel_lite::CompileError) -> Option<String> {
    let m = e.message();
    let quoted = m.split('`').nth(1).unwrap_or_default();
    match e.code() {
        "cel_unsupported" if m.contains("bytes") => Some("uses bytes".into()),
        "cel_unsupported" if m.contains("message construction") => Some("uses proto messages".into()),
        "cel_unsupported" => Some(format!("uses syntax outside the subset ({m})")),
        "cel_unknown_function" => Some(match quoted {
            "type" => "uses type()".into(),
            "bytes" => "uses bytes".into(),
            "timestamp" | "duration" => "uses timestamp/duration".into(),
            f if f.starts_with("get") => "uses timestamp/duration".into(),
            "f_unknown" => "uses undeclared functions (tests of unbound functions)".into(),
            f => format!("uses functions outside the subset (`{f}`)"),
        }),
        "cel_unknown_name" => Some(match quoted {
            "google" | "TestAllTypes" | "NestedTestAllTypes" | "cel" => "uses proto messages".into(),
            "int" | "uint" | "double" | "string" | "bool" | "bytes" | "list" | "map" | "null_type" | "type" | "dyn" => "uses type()".into(),
            _ => "uses undeclared variables (tests of unbound names)".into(),
        }),
        _ => None,
    }
}

/// Compares values as the conformance suite does: types must match, NaN
/// equals NaN, maps compare without order.
fn same(a: &CelValue, b: &CelValue) -> bool {
    match (a, b) {
        (CelValue::Double(x), CelValue::Double(y)) => (x.is_nan() && y.is_nan()) || x == y,
        (CelValue::List(x), CelValue::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (CelValue::Map(x), CelValue::Map(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.iter().any(|(k2, v2)| same(k, k2) && same(v, v2))),
        _ => a == b,
    }
}

fn to_cel(v: &textproto::Msg) -> Result<CelValue, String> {
    let Some((field, node)) = v.fields.first() else { return Ok(CelValue::Null) };
    let word = || match node {
        textproto::Node::Word(w) => Ok(w.clone()),
        _ => Err(format!("unexpected form of `{field}`")),
    };
    Ok(match field.as_str() {
        "null_value" => CelValue::Null,
        "bool_value" => CelValue::Bool(word()? == "true"),
        "int64_value" => CelValue::Int(word()?.parse().map_err(|e| format!("int64_value: {e}"))?),
        "uint64_value" => CelValue::Uint(word()?.parse().map_err(|e| format!("uint64_value: {e}"))?),
        "double_value" => CelValue::Double(parse_double(&word()?)?),
        "string_value" => match node {
            textproto::Node::Str(bytes) => CelValue::String(String::from_utf8(bytes.clone()).map_err(|_| "string_value is not UTF-8".to_string())?),
            _ => return Err("unexpected form of `string_value`".into()),
        },
        "list_value" => {
            let list = node.as_msg().ok_or("bad list_value")?;
            CelValue::List(list.all("values").map(to_cel).collect::<Result<_, _>>()?)
        }
        "map_value" => {
            let map = node.as_msg().ok_or("bad map_value")?;
            let mut entries = Vec::new();
            for e in map.all("entries") {
                let k = e.msg("key").map(to_cel).transpose()?.unwrap_or(CelValue::Null);
                let v = e.msg("value").map(to_cel).transpose()?.unwrap_or(CelValue::Null);
                entries.push((k, v));
            }
            CelValue::Map(entries)
        }
        "bytes_value" => return Err("uses bytes".into()),
        "object_value" => return Err("uses proto messages".into()),
        "type_value" => return Err("uses type()".into()),
        "enum_value" => return Err("uses proto enums".into()),
        other => return Err(format!("expects a `{other}`")),
    })
}

fn parse_double(w: &str) -> Result<f64, String> {
    match w.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => Ok(f64::INFINITY),
        "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
        "nan" => Ok(f64::NAN),
        other => other.parse().map_err(|e| format!("double_value `{w}`: {e}")),
    }
}

fn to_json(v: &CelValue) -> Option<Value> {
    Some(match v {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::Uint(_) => return None,
        CelValue::Double(d) => {
            // An integral double would read back as an int.
            if d.fract() == 0.0 {
                return None;
            }
            Value::Number(serde_json::Number::from_f64(*d)?)
        }
        CelValue::String(s) => Value::String(s.clone()),
        CelValue::List(items) => Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        CelValue::Map(entries) => {
            let mut m = Map::new();
            for (k, x) in entries {
                let CelValue::String(k) = k else { return None };
                m.insert(k.clone(), to_json(x)?);
            }
            Value::Object(m)
        }
    })
}

/// Just enough of the protobuf text format for the conformance files.
mod textproto {
    #[derive(Debug, Clone)]
    pub enum Node {
        /// A string literal (bytes, C escapes decoded); adjacent literals joined.
        Str(Vec<u8>),
        /// A number, an enum value or a bool, as written.
        Word(String),
        Msg(Msg),
    }

    impl Node {
        pub fn as_msg(&self) -> Option<&Msg> {
            match self {
                Node::Msg(m) => Some(m),
                _ => None,
            }
        }
    }

    #[derive(Debug, Clone, Default)]
    pub struct Msg {
        pub fields: Vec<(String, Node)>,
    }

    impl Msg {
        pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Msg> + 'a {
            self.fields.iter().filter(move |(n, _)| n == name).filter_map(|(_, v)| v.as_msg())
        }

        pub fn msg(&self, name: &str) -> Option<&Msg> {
            self.fields.iter().filter(|(n, _)| n == name).find_map(|(_, v)| v.as_msg())
        }

        pub fn str_field(&self, name: &str) -> Option<String> {
            self.fields.iter().find(|(n, _)| n == name).and_then(|(_, v)| match v {
                Node::Str(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
        }
    }

    pub fn parse(text: &str) -> Result<Msg, String> {
        let mut p = P { b: text.as_bytes(), i: 0 };
        let m = p.body(None)?;
        Ok(m)
    }

    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }

    impl P<'_> {
        fn peek(&self) -> u8 {
            self.b.get(self.i).copied().unwrap_or(0)
        }

        fn skip_ws(&mut self) {
            loop {
                match self.peek() {
                    b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                    b'#' => {
                        while self.i < self.b.len() && self.peek() != b'\n' {
                            self.i += 1;
                        }
                    }
                    _ => return,
                }
            }
        }

        fn err(&self, what: &str) -> String {
            let line = self.b[..self.i.min(self.b.len())].iter().filter(|c| **c == b'\n').count() + 1;
            format!("textproto line {line}: {what}")
        }

        fn body(&mut self, close: Option<u8>) -> Result<Msg, String> {
            let mut m = Msg::default();
            loop {
                self.skip_ws();
                let c = self.peek();
                if c == 0 {
                    return match close {
                        None => Ok(m),
                        Some(_) => Err(self.err("unexpected end")),
                    };
                }
                if Some(c) == close {
                    self.i += 1;
                    return Ok(m);
                }
                if c == b',' || c == b';' {
                    self.i += 1;
                    continue;
                }
                let name = self.name()?;
                self.skip_ws();
                if self.peek() == b':' {
                    self.i += 1;
                    self.skip_ws();
                }
                let value = match self.peek() {
                    b'{' => {
                        self.i += 1;
                        Node::Msg(self.body(Some(b'}'))?)
                    }
                    b'<' => {
                        self.i += 1;
                        Node::Msg(self.body(Some(b'>'))?)
                    }
                    b'"' | b'\'' => {
                        let mut bytes = Vec::new();
                        while matches!(self.peek(), b'"' | b'\'') {
                            bytes.extend(self.string()?);
                            self.skip_ws();
                        }
                        Node::Str(bytes)
                    }
                    _ => {
                        let start = self.i;
                        while matches!(self.peek(), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'+') {
                            self.i += 1;
                        }
                        if start == self.i {
                            return Err(self.err("expected a value"));
                        }
                        Node::Word(String::from_utf8_lossy(&self.b[start..self.i]).into_owned())
                    }
                };
                m.fields.push((name, value));
            }
        }

        fn name(&mut self) -> Result<String, String> {
            let start = self.i;
            if self.peek() == b'[' {
                while self.i < self.b.len() && self.peek() != b']' {
                    self.i += 1;
                }
                self.i += 1;
            } else {
                while matches!(self.peek(), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') {
                    self.i += 1;
                }
            }
            if start == self.i {
                return Err(self.err("expected a field name"));
            }
            Ok(String::from_utf8_lossy(&self.b[start..self.i]).into_owned())
        }

        fn string(&mut self) -> Result<Vec<u8>, String> {
            let q = self.peek();
            self.i += 1;
            let mut out = Vec::new();
            loop {
                let c = self.peek();
                if self.i >= self.b.len() {
                    return Err(self.err("unterminated string"));
                }
                self.i += 1;
                if c == q {
                    return Ok(out);
                }
                if c != b'\\' {
                    out.push(c);
                    continue;
                }
                let e = self.peek();
                self.i += 1;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut v = u32::from(e - b'0');
                        for _ in 0..2 {
                            if matches!(self.peek(), b'0'..=b'7') {
                                v = v * 8 + u32::from(self.peek() - b'0');
                                self.i += 1;
                            }
                        }
                        out.push((v & 0xff) as u8);
                    }
                    b'x' | b'X' => {
                        let mut v = 0u32;
                        for _ in 0..2 {
                            match (self.peek() as char).to_digit(16) {
                                Some(d) => {
                                    v = v * 16 + d;
                                    self.i += 1;
                                }
                                None => break,
                            }
                        }
                        out.push((v & 0xff) as u8);
                    }
                    b'u' | b'U' => {
                        let n = if e == b'u' { 4 } else { 8 };
                        let hex = std::str::from_utf8(&self.b[self.i..self.i + n]).map_err(|e| e.to_string())?;
                        let cp = u32::from_str_radix(hex, 16).map_err(|e| self.err(&e.to_string()))?;
                        self.i += n;
                        let ch = char::from_u32(cp).ok_or_else(|| self.err("bad code point"))?;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    other => out.push(other),
                }
            }
        }
    }
}
