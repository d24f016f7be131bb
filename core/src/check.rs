//! Shared helpers for checking a parsed document: collecting problems with
//! their location, reading mappings while refusing unknown fields, and typed
//! getters. Used by the manifest and harness parsers.

use crate::error::Problem;
use crate::yaml::{Node, NodeValue, Pos};

/// Collects the problems of one file.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    /// The file, relative to the harness directory (or the origin given).
    pub file: Option<String>,
    /// Every problem found so far.
    pub problems: Vec<Problem>,
}

impl Checker {
    pub fn new(file: Option<String>) -> Self {
        Self { file, problems: Vec::new() }
    }

    /// Records a problem at `pos` for field `path`.
    pub fn report(&mut self, code: &str, pos: Pos, path: &str, message: String) {
        let mut p = Problem::new(code, message);
        p.file = self.file.clone();
        if pos.is_known() {
            p.line = Some(pos.line);
            p.column = Some(pos.column);
        }
        p.path = path.to_string();
        self.problems.push(p);
    }

    /// The problems, ordered by line and column (stable for equal positions;
    /// problems without a position last).
    pub fn take_sorted(&mut self) -> Vec<Problem> {
        let mut problems = std::mem::take(&mut self.problems);
        problems.sort_by_key(|p| (p.line.unwrap_or(usize::MAX), p.column.unwrap_or(usize::MAX)));
        problems
    }

    /// Adds problems from the parser, giving them this file.
    pub fn extend(&mut self, problems: Vec<Problem>) {
        for mut p in problems {
            p.file = self.file.clone();
            self.problems.push(p);
        }
    }

    fn wrong_type(&mut self, node: &Node, path: &str, expected: &str) {
        self.report("wrong_type", node.pos, path, format!("`{path}` must be {expected}, not {}", node.kind()));
    }

    /// Starts reading a mapping; reports `wrong_type` and returns `None` when
    /// the node is not one.
    pub fn map<'a>(&mut self, node: &'a Node, path: &str) -> Option<MapReader<'a>> {
        match &node.value {
            NodeValue::Map(entries) => Some(MapReader { node, entries, used: vec![false; entries.len()], asked: Vec::new(), path: path.to_string() }),
            _ => {
                let message = match (path.is_empty(), &node.value) {
                    (true, NodeValue::Null) => "the file is empty; expected a document with `apiVersion`, `kind` and `spec`".to_string(),
                    (true, _) => format!("the document must be a mapping with `apiVersion`, `kind` and `spec`, not {}", node.kind()),
                    (false, _) => format!("`{path}` must be a mapping, not {}", node.kind()),
                };
                self.report("wrong_type", node.pos, path, message);
                None
            }
        }
    }

    pub fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.value {
            NodeValue::Str(s) => Some(s.clone()),
            _ => {
                self.wrong_type(node, path, "a string");
                None
            }
        }
    }

    /// A string or null (null means absent).
    pub fn opt_string(&mut self, node: Option<&Node>, path: &str) -> Option<String> {
        match node {
            None => None,
            Some(n) if n.value == NodeValue::Null => None,
            Some(n) => self.string(n, path),
        }
    }

    pub fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match node.value {
            NodeValue::Bool(b) => Some(b),
            _ => {
                self.wrong_type(node, path, "`true` or `false`");
                None
            }
        }
    }

    /// A positive integer (> 0).
    pub fn positive(&mut self, node: &Node, path: &str) -> Option<u64> {
        match node.value {
            NodeValue::Int(i) if i > 0 => u64::try_from(i).ok(),
            NodeValue::Int(_) => {
                self.report("invalid_value", node.pos, path, format!("`{path}` must be greater than 0"));
                None
            }
            _ => {
                self.wrong_type(node, path, "a whole number");
                None
            }
        }
    }

    /// A non-negative integer.
    pub fn count(&mut self, node: &Node, path: &str) -> Option<u64> {
        match node.value {
            NodeValue::Int(i) if i >= 0 => u64::try_from(i).ok(),
            NodeValue::Int(_) => {
                self.report("invalid_value", node.pos, path, format!("`{path}` must not be negative"));
                None
            }
            _ => {
                self.wrong_type(node, path, "a whole number");
                None
            }
        }
    }

    /// A number (integer or float).
    pub fn number(&mut self, node: &Node, path: &str) -> Option<f64> {
        match node.value {
            #[expect(clippy::cast_precision_loss, reason = "bounds are compared as doubles, as JSON Schema does")]
            NodeValue::Int(i) => Some(i as f64),
            NodeValue::Float(f) if f.is_finite() => Some(f),
            _ => {
                self.wrong_type(node, path, "a finite number");
                None
            }
        }
    }

    /// Reads a list: `each` gets every item with its path (`path[i]`).
    /// Reports `wrong_type` ("`path` must be {what}, not …") and returns
    /// false when the node is not a list.
    pub fn list<'a>(&mut self, node: &'a Node, path: &str, what: &str, mut each: impl FnMut(&mut Self, &'a Node, &str)) -> bool {
        match &node.value {
            NodeValue::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    each(self, item, &format!("{path}[{i}]"));
                }
                true
            }
            _ => {
                self.wrong_type(node, path, what);
                false
            }
        }
    }

    /// A list of strings.
    pub fn strings(&mut self, node: &Node, path: &str) -> Option<Vec<String>> {
        let mut out = Vec::new();
        let mut ok = true;
        let is_list = self.list(node, path, "a list of strings", |cx, item, item_path| match cx.string(item, item_path) {
            Some(s) => out.push(s),
            None => ok = false,
        });
        (is_list && ok).then_some(out)
    }

    /// One of `choices`, by its text.
    pub fn choice<T: Copy>(&mut self, node: &Node, path: &str, choices: &[(&str, T)]) -> Option<T> {
        // Spelled out only for a problem: most values are valid.
        let names = || choices.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let text = match &node.value {
            NodeValue::Str(s) => s.as_str(),
            _ => {
                self.wrong_type(node, path, &format!("one of {}", names()));
                return None;
            }
        };
        match choices.iter().find(|(n, _)| *n == text) {
            Some((_, v)) => Some(*v),
            None => {
                self.report("invalid_value", node.pos, path, format!("`{path}` is `{text}`; expected one of {}", names()));
                None
            }
        }
    }
}

/// Reads a mapping's fields, remembering which were read so the rest can be
/// refused as unknown.
pub(crate) struct MapReader<'a> {
    /// The mapping node.
    pub node: &'a Node,
    entries: &'a [(Node, Node)],
    used: Vec<bool>,
    /// The fields the parser asked for: the known ones, for "did you mean".
    asked: Vec<&'static str>,
    /// The mapping's field path.
    pub path: String,
}

impl<'a> MapReader<'a> {
    /// The value of `key` (null counts as absent).
    pub fn get(&mut self, key: &'static str) -> Option<&'a Node> {
        self.get_raw(key).filter(|n| n.value != NodeValue::Null)
    }

    /// The value of `key`, including null.
    pub fn get_raw(&mut self, key: &'static str) -> Option<&'a Node> {
        #[cfg(test)]
        fields_read::note(&child_path(&self.path, key));
        self.asked.push(key);
        let entries = self.entries;
        for (i, (k, v)) in entries.iter().enumerate() {
            if k.as_str() == Some(key) {
                if let Some(u) = self.used.get_mut(i) {
                    *u = true;
                }
                return Some(v);
            }
        }
        None
    }

    /// The key node of `key`, when present.
    pub fn key_node(&self, key: &str) -> Option<&'a Node> {
        self.entries.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(k, _)| k)
    }

    /// The path of child field `key`.
    pub fn child(&self, key: &str) -> String {
        child_path(&self.path, key)
    }

    /// Every entry, marking all as read (for free-form maps).
    pub fn all(&mut self) -> &'a [(Node, Node)] {
        #[cfg(test)]
        fields_read::note(&format!("{}.*", self.path));
        for u in &mut self.used {
            *u = true;
        }
        self.entries
    }

    /// The value of required `key`, reporting `missing_field` at the mapping.
    pub fn require(&mut self, cx: &mut Checker, key: &'static str) -> Option<&'a Node> {
        let found = self.get(key);
        if found.is_none() {
            let path = self.child(key);
            cx.report("missing_field", self.node.pos, &path, format!("`{path}` is required"));
        }
        found
    }

    /// Reports every field that was not read as `unknown_field`, naming the
    /// known field it is nearest to (`did you mean`).
    pub fn finish(self, cx: &mut Checker) {
        for ((k, _), used) in self.entries.iter().zip(&self.used) {
            if !used {
                let name = match &k.value {
                    NodeValue::Str(s) => s.clone(),
                    _ => format!("{:?}", k.to_json().unwrap_or_default()),
                };
                let path = child_path(&self.path, &name);
                let place = if self.path.is_empty() { String::new() } else { format!(" in `{}`", self.path) };
                let hint = crate::suggest::hint(&name, self.asked.iter().copied());
                cx.report("unknown_field", k.pos, &path, format!("unknown field `{name}`{place}{hint}"));
            }
        }
    }
}

/// `parent.key`, or `parent["key"]` when the key is not a plain word.
pub(crate) fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        // Built by hand: every field read builds one, and `format!` costs more.
        (false, true) => {
            let mut path = String::with_capacity(parent.len() + 1 + key.len());
            path.push_str(parent);
            path.push('.');
            path.push_str(key);
            path
        }
        (_, false) => format!("{parent}[{}]", serde_json::Value::String(key.to_string())),
    }
}

/// Test-only: the field paths the parsers ask for, so the reference pages
/// (docs/manifest.md, docs/harness.md) can be checked against the fields the
/// parsers accept (`crate::docs_reference`).
#[cfg(test)]
pub(crate) mod fields_read {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    thread_local! {
        static READ: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
    }

    /// Runs `f`, returning what it returns and every field path read meanwhile
    /// (`a.b.c`; a free-form mapping read whole is `a.b.*`).
    pub fn record<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        READ.with(|r| *r.borrow_mut() = Some(BTreeSet::new()));
        let out = f();
        let read = READ.with(|r| r.borrow_mut().take()).unwrap_or_default();
        (out, read)
    }

    pub(super) fn note(path: &str) {
        READ.with(|r| {
            if let Some(set) = r.borrow_mut().as_mut() {
                set.insert(path.to_string());
            }
        });
    }
}
