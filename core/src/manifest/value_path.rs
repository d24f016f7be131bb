//! The paths of `spec.flow.identifies` (issue 23): where in a tool's output
//! the values are that name a valid destination. A small subset of JSONPath:
//! `$` (the whole output), then any of `.field` and `[*]` (every item of an
//! array), such as `$[*]` or `$[*].sender`, and last, optionally, `~` (the
//! keys of an object: `$[*].shared_with~`).

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Each,
    /// `~`, last: the keys of an object.
    Keys,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuePath(Vec<Step>);

/// Steps a path may have: deeper outputs are not walked.
const MAX_STEPS: usize = 16;

impl ValuePath {
    /// Parses `$`, `$.a`, `$[*]`, `$[*].a[*].b`, …; `None` when it is not one.
    pub fn parse(text: &str) -> Option<ValuePath> {
        let mut rest = text.strip_prefix('$')?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if rest == "~" {
                steps.push(Step::Keys);
                rest = "";
            } else if let Some(r) = rest.strip_prefix("[*]") {
                steps.push(Step::Each);
                rest = r;
            } else if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[', '~']).unwrap_or(r.len());
                let (name, r) = r.split_at(end);
                if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                    return None;
                }
                steps.push(Step::Field(name.to_string()));
                rest = r;
            } else {
                return None;
            }
        }
        (steps.len() <= MAX_STEPS).then_some(ValuePath(steps))
    }

    /// Calls `f` with every string or number the path reaches in `value`.
    pub fn each(&self, value: &Value, f: &mut impl FnMut(&str)) {
        walk(&self.0, value, f);
    }
}

fn walk(steps: &[Step], value: &Value, f: &mut impl FnMut(&str)) {
    match (steps.split_first(), value) {
        (None, Value::String(s)) => f(s),
        (None, Value::Number(n)) => f(&n.to_string()),
        (None, _) => {}
        (Some((Step::Each, rest)), Value::Array(items)) => items.iter().for_each(|v| walk(rest, v, f)),
        (Some((Step::Field(name), rest)), Value::Object(map)) => {
            if let Some(v) = map.get(name) {
                walk(rest, v, f);
            }
        }
        (Some((Step::Keys, _)), Value::Object(map)) => map.keys().for_each(|k| f(k)),
        (Some(_), _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all(path: &str, value: &Value) -> Vec<String> {
        let mut out = Vec::new();
        ValuePath::parse(path).unwrap().each(value, &mut |s| out.push(s.to_string()));
        out
    }

    #[test]
    fn paths_reach_items_and_fields() {
        let messages = json!([{"sender": "Bob", "body": "hi"}, {"sender": "Eve", "body": 3}, "x"]);
        assert_eq!(all("$[*].sender", &messages), ["Bob", "Eve"]);
        assert_eq!(all("$[*]", &json!(["general", "random", {"a": 1}, 7])), ["general", "random", "7"]);
        assert_eq!(all("$.files[*].id", &json!({"files": [{"id": "13"}, {"id": 14}]})), ["13", "14"]);
        assert_eq!(all("$", &json!("one")), ["one"]);
        assert_eq!(all("$[*].shared_with~", &json!([{"shared_with": {"a@x.example": "r", "b@x.example": "rw"}}])), ["a@x.example", "b@x.example"]);
        assert_eq!(all("$~", &json!(["not", "an", "object"])), Vec::<String>::new());
        assert!(all("$.missing[*]", &messages).is_empty());
        for bad in ["", "sender", "$sender", "$.", "$[0]", "$.a b", "$..a", "$[*", "$~.a", "$.a~~"] {
            assert_eq!(ValuePath::parse(bad), None, "{bad}");
        }
    }
}
