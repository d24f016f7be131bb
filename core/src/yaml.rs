//! A small document tree with a position on every node, read from YAML 1.2
//! or JSON text.
//!
//! Manifests and harness files are checked after parsing, so every problem
//! needs the line and column of the node it is about. The tree is built from
//! `saphyr-parser` events and plain scalars are resolved with the YAML 1.2
//! core schema, so `on`, `yes` and `no` stay strings.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::Value;

use crate::error::Problem;

/// Where a node starts and ends in its text. `line` and `column` are 1-based;
/// 0 means unknown (a node built from a host value, not from text).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column (in characters), 0 when unknown.
    pub column: usize,
    /// Character index of the node's first character.
    pub start: usize,
    /// Character index just after the node's last character.
    pub end: usize,
    /// How a scalar was written (for pointing inside its text).
    pub style: Style,
}

/// How a scalar was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Style {
    /// Plain, or not a scalar: the text starts at the node.
    #[default]
    Plain,
    /// Single- or double-quoted: the text starts one column after the node.
    Quoted,
    /// A literal (`|`) or folded (`>`) block: the node starts at the text of
    /// its first line; later lines lose the same indentation.
    Block,
}

impl Pos {
    /// Whether the position came from text.
    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

/// A node's value.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    /// `null`, `~` or an empty value.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string (every quoted scalar, and plain scalars that are not null, bool or numbers).
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in the order written; keys are nodes so problems can point at them.
    Map(Vec<(Node, Node)>),
}

/// A value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: NodeValue,
    /// Where it is.
    pub pos: Pos,
}

impl Node {
    /// What kind of value this is, in words for messages.
    pub fn kind(&self) -> &'static str {
        match self.value {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Int(_) | NodeValue::Float(_) => "a number",
            NodeValue::Str(_) => "a string",
            NodeValue::Seq(_) => "a list",
            NodeValue::Map(_) => "a mapping",
        }
    }

    /// The entry for `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The key node and value node for `key` of a mapping.
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The string, when the node is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Converts to JSON. Fails (with the offending node's position) on NaN,
    /// infinities and mapping keys that are not strings.
    pub fn to_json(&self) -> Result<Value, (Pos, String)> {
        Ok(match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::from(*i),
            NodeValue::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => Value::Number(n),
                None => return Err((self.pos, "NaN and infinities have no JSON form".to_string())),
            },
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect::<Result<_, _>>()?),
            NodeValue::Map(entries) => {
                let mut map = serde_json::Map::new();
                for (k, v) in entries {
                    let key = match &k.value {
                        NodeValue::Str(s) => s.clone(),
                        NodeValue::Int(i) => i.to_string(),
                        NodeValue::Bool(b) => b.to_string(),
                        _ => return Err((k.pos, format!("a mapping key must be a string, not {}", k.kind()))),
                    };
                    map.insert(key, v.to_json()?);
                }
                Value::Object(map)
            }
        })
    }

    /// Builds a tree from a JSON value; positions are unknown.
    pub fn from_json(value: &Value) -> Node {
        let value = match value {
            Value::Null => NodeValue::Null,
            Value::Bool(b) => NodeValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => NodeValue::Int(i),
                None => NodeValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => NodeValue::Str(s.clone()),
            Value::Array(items) => NodeValue::Seq(items.iter().map(Node::from_json).collect()),
            Value::Object(map) => NodeValue::Map(
                map.iter().map(|(k, v)| (Node { value: NodeValue::Str(k.clone()), pos: Pos::default() }, Node::from_json(v))).collect(),
            ),
        };
        Node { value, pos: Pos::default() }
    }
}

/// The most nodes a document may expand to through aliases (a guard against
/// "billion laughs" documents).
const MAX_NODES: usize = 200_000;

/// The deepest nesting accepted.
const MAX_DEPTH: usize = 256;

enum Frame {
    Seq(Vec<Node>, Pos, usize),
    Map(Vec<(Node, Node)>, Option<Node>, Pos, usize),
}

/// Parses YAML text (one document) into a tree. An empty document is `Null`
/// at 1:1. Problems carry code `yaml_syntax` (or `duplicate_key`) and a
/// position, but no file.
pub fn parse_yaml(text: &str) -> Result<Node, Vec<Problem>> {
    parse_with(text, "yaml_syntax")
}

/// Parses JSON text into a tree with positions. Syntax is checked by a JSON
/// parser first (code `json_syntax`), so YAML-only forms are refused.
pub fn parse_json(text: &str) -> Result<Node, Vec<Problem>> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let mut p = Problem::new("json_syntax", format!("invalid JSON: {}", strip_position(&e.to_string())));
            p.line = Some(e.line().max(1));
            p.column = Some(e.column().max(1));
            return Err(vec![p]);
        }
    };
    // Positions come from the YAML parser (JSON is YAML 1.2); should it
    // disagree on some corner of JSON, the values still load without positions.
    match parse_with(text, "json_syntax") {
        Ok(node) if node.to_json().ok().as_ref() == Some(&value) => Ok(node),
        // A JSON parser keeps the last of two equal keys; refuse them as YAML does.
        Err(problems) if problems.iter().all(|p| p.code == "duplicate_key") => Err(problems),
        Ok(_) | Err(_) => Ok(Node::from_json(&value)),
    }
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message.get(..i).unwrap_or(message).to_string(),
        None => message.to_string(),
    }
}

fn problem_at(code: &str, message: String, pos: Pos) -> Problem {
    let mut p = Problem::new(code, message);
    if pos.is_known() {
        p.line = Some(pos.line);
        p.column = Some(pos.column);
    }
    p
}

fn parse_with(text: &str, syntax_code: &str) -> Result<Node, Vec<Problem>> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    let mut nodes = 0usize;
    let mut problems = Vec::new();
    loop {
        let (event, span) = match parser.next_event() {
            None => break,
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                let m = e.marker();
                let pos = Pos { line: m.line().max(1), column: m.col() + 1, start: m.index(), end: m.index(), style: Style::Plain };
                let mut info = e.info().to_string();
                if let Some(first) = info.get(..1) {
                    info = format!("{}{}", first.to_lowercase(), info.get(1..).unwrap_or_default());
                }
                return Err(vec![problem_at(syntax_code, format!("invalid {}: {info}", syntax_name(syntax_code)), pos)]);
            }
        };
        let pos =
            Pos { line: span.start.line(), column: span.start.col() + 1, start: span.start.index(), end: span.end.index(), style: Style::Plain };
        let node = match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => continue,
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(vec![problem_at(syntax_code, "a file holds one document; found a second `---`".to_string(), pos)]);
                }
                continue;
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(n) => {
                    nodes += count(n);
                    if nodes > MAX_NODES {
                        return Err(vec![problem_at(syntax_code, "aliases expand to too many nodes".to_string(), pos)]);
                    }
                    let mut n = n.clone();
                    n.pos = Pos { end: pos.end, ..pos };
                    n
                }
                None => return Err(vec![problem_at(syntax_code, "unknown alias".to_string(), pos)]),
            },
            Event::Scalar(text, style, anchor, tag) => {
                nodes += 1;
                let written = match style {
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Style::Quoted,
                    ScalarStyle::Literal | ScalarStyle::Folded => Style::Block,
                    _ => Style::Plain,
                };
                let node = Node { value: resolve_scalar(text, style, tag.as_ref()), pos: Pos { style: written, ..pos } };
                if anchor > 0 {
                    anchors.insert(anchor, node.clone());
                }
                node
            }
            Event::SequenceStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(vec![problem_at(syntax_code, format!("nesting deeper than {MAX_DEPTH} levels"), pos)]);
                }
                stack.push(Frame::Seq(Vec::new(), pos, anchor));
                continue;
            }
            Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(vec![problem_at(syntax_code, format!("nesting deeper than {MAX_DEPTH} levels"), pos)]);
                }
                stack.push(Frame::Map(Vec::new(), None, pos, anchor));
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(items, start, anchor)) => {
                    nodes += 1;
                    let node = Node { value: NodeValue::Seq(items), pos: Pos { end: pos.end, ..start } };
                    if anchor > 0 {
                        anchors.insert(anchor, node.clone());
                    }
                    node
                }
                _ => return Err(vec![problem_at(syntax_code, "unbalanced sequence".to_string(), pos)]),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(entries, _, start, anchor)) => {
                    nodes += 1;
                    let node = Node { value: NodeValue::Map(entries), pos: Pos { end: pos.end, ..start } };
                    if anchor > 0 {
                        anchors.insert(anchor, node.clone());
                    }
                    node
                }
                _ => return Err(vec![problem_at(syntax_code, "unbalanced mapping".to_string(), pos)]),
            },
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq(items, _, _)) => items.push(node),
            Some(Frame::Map(entries, pending, _, _)) => match pending.take() {
                None => *pending = Some(node),
                Some(key) => {
                    if entries.iter().any(|(k, _)| k.value == key.value) {
                        let name = key.as_str().map_or_else(|| "a key".to_string(), |s| format!("`{s}`"));
                        problems.push(problem_at("duplicate_key", format!("{name} appears twice in one mapping"), key.pos));
                    } else {
                        entries.push((key, node));
                    }
                }
            },
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(root.unwrap_or(Node { value: NodeValue::Null, pos: Pos { line: 1, column: 1, start: 0, end: 0, style: Style::Plain } }))
}

fn syntax_name(code: &str) -> &'static str {
    if code == "json_syntax" {
        "JSON"
    } else {
        "YAML"
    }
}

fn count(node: &Node) -> usize {
    match &node.value {
        NodeValue::Seq(items) => 1 + items.iter().map(count).sum::<usize>(),
        NodeValue::Map(entries) => 1 + entries.iter().map(|(k, v)| count(k) + count(v)).sum::<usize>(),
        _ => 1,
    }
}

/// Resolves a scalar with the YAML 1.2 core schema: quoted and block
/// scalars are strings; plain ones may be null, booleans or numbers.
fn resolve_scalar(text: Cow<'_, str>, style: ScalarStyle, tag: Option<&Cow<'_, Tag>>) -> NodeValue {
    // Strings take the parser's text (no copy when it owns it).
    if let Some(tag) = tag {
        if tag.suffix == "str" || tag.suffix.ends_with(":str") {
            return NodeValue::Str(text.into_owned());
        }
    }
    if style != ScalarStyle::Plain {
        return NodeValue::Str(text.into_owned());
    }
    let t = text.as_ref();
    match t {
        "" | "~" | "null" | "Null" | "NULL" => return NodeValue::Null,
        "true" | "True" | "TRUE" => return NodeValue::Bool(true),
        "false" | "False" | "FALSE" => return NodeValue::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return NodeValue::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return NodeValue::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return NodeValue::Float(f64::NAN),
        _ => {}
    }
    if let Some(hex) = t.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            if let Ok(i) = i64::from_str_radix(hex, 16) {
                return NodeValue::Int(i);
            }
        }
    }
    if let Some(oct) = t.strip_prefix("0o") {
        if !oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            if let Ok(i) = i64::from_str_radix(oct, 8) {
                return NodeValue::Int(i);
            }
        }
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match t.parse::<i64>() {
            Ok(i) => NodeValue::Int(i),
            Err(_) => t.parse::<f64>().map_or_else(|_| NodeValue::Str(text.to_string()), NodeValue::Float),
        };
    }
    if is_core_float(digits) {
        if let Ok(f) = t.parse::<f64>() {
            return NodeValue::Float(f);
        }
    }
    NodeValue::Str(text.into_owned())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` without the sign.
fn is_core_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (s.get(..i).unwrap_or(""), Some(s.get(i + 1..).unwrap_or(""))),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (!int.is_empty() || !frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = match exponent {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
        }
    };
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_schema_and_positions() {
        let n = parse_yaml("a: on\nb: yes\nc: 1.5\nd: '1'\ne: ~\nf: [1, x]\n").unwrap();
        assert_eq!(n.get("a").unwrap().as_str(), Some("on"));
        assert_eq!(n.get("b").unwrap().as_str(), Some("yes"));
        assert_eq!(n.get("c").unwrap().value, NodeValue::Float(1.5));
        assert_eq!(n.get("d").unwrap().as_str(), Some("1"));
        assert_eq!(n.get("e").unwrap().value, NodeValue::Null);
        let f = n.get("f").unwrap();
        assert_eq!((f.pos.line, f.pos.column), (6, 4));
        let (k, v) = n.entry("c").unwrap();
        assert_eq!((k.pos.line, k.pos.column, v.pos.line, v.pos.column), (3, 1, 3, 4));
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(e[0].code, "yaml_syntax");
        assert!(e[0].line.is_some());
        let e = parse_json("{\n  \"a\": 1,\n}").unwrap_err();
        assert_eq!(e[0].code, "json_syntax");
        assert_eq!(e[0].line, Some(3));
    }

    #[test]
    fn duplicate_keys() {
        let e = parse_yaml("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e[0].code, "duplicate_key");
        assert_eq!((e[0].line, e[0].column), (Some(2), Some(1)));
    }

    #[test]
    fn json_duplicate_keys() {
        let e = parse_json("{\"a\": 1,\n \"a\": 2}").unwrap_err();
        assert_eq!((e[0].code.as_str(), e[0].line, e[0].column), ("duplicate_key", Some(2), Some(2)));
    }

    #[test]
    fn json_positions() {
        let n = parse_json("{\"a\": {\"b\": \"\\ud83d\\ude00\"}}").unwrap();
        let b = n.get("a").unwrap().get("b").unwrap();
        assert_eq!(b.as_str(), Some("\u{1f600}"));
    }
}
