//! `spec.flow.trust_single_value`, the kind a request asks for through its
//! action (issue 23).
//!
//! "Invite Dora to Slack; see her website www.dora.example" asks for an
//! invitation (`flow.intent` of `invite_user_to_slack`), and an invitation
//! goes to an e-mail address: the argument that chooses where it goes (a
//! `flow.sinks` argument) declares `format: email` in the tool's input
//! schema. The request thus asks for an e-mail address as surely as
//! "her e-mail is on her website" does, without the word. The kinds of the
//! sink arguments of every tool whose `flow.intent` the task uses are asked
//! for, as the kind words are; the rest of the rule is unchanged (the call
//! that read the value is one the task names, and its output holds exactly
//! one value of the kind). A tool without `flow.intent` asks for nothing
//! here: only a request for the action implies the kind.

use serde_json::Value;

use super::provenance::DEFAULT_SINKS;
use super::Governor;
use crate::harness::ValueKind;

impl Governor {
    /// The kinds of the sink arguments (by their schema's `format`) of the
    /// tools whose `flow.intent` `task` uses, each once.
    pub(super) fn kinds_of_requested_sinks(&self, task: &str) -> Vec<ValueKind> {
        let mut kinds = Vec::new();
        for rt in &self.tools {
            let Some(intent) = &rt.intent else { continue };
            if !rt.enabled || intent.requested_by(Some(task)).is_none() {
                continue;
            }
            let schema = rt.validator.schema();
            let props = schema.get("properties").and_then(Value::as_object);
            let sinks: Vec<&str> = match &rt.sinks {
                Some(s) => s.iter().map(String::as_str).collect(),
                None if !rt.egress.is_empty() => DEFAULT_SINKS.to_vec(),
                None => Vec::new(),
            };
            for arg in sinks {
                if let Some(kind) = props.and_then(|p| p.get(arg)).and_then(format_kind) {
                    if !kinds.contains(&kind) {
                        kinds.push(kind);
                    }
                }
            }
        }
        kinds
    }
}

/// The kind of value a property's schema declares by its `format` (or its
/// items' `format`, for a list; or that of a branch of its `anyOf` /
/// `oneOf`, for an optional one): `email` / `idn-email` an e-mail address,
/// `uri` / `iri` / `uri-reference` / `iri-reference` a URL.
fn format_kind(property: &Value) -> Option<ValueKind> {
    let branches = ["anyOf", "oneOf"].iter().filter_map(|k| property.get(*k).and_then(Value::as_array)).flatten();
    let format = own_format(property).or_else(|| branches.filter_map(own_format).next())?;
    match format {
        "email" | "idn-email" => Some(ValueKind::Email),
        "uri" | "iri" | "uri-reference" | "iri-reference" => Some(ValueKind::Url),
        _ => None,
    }
}

/// A schema's own `format`, or its items'.
fn own_format(p: &Value) -> Option<&str> {
    p.get("format").or_else(|| p.get("items").and_then(|i| i.get("format"))).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_format_names_the_kind_of_a_property_or_of_its_items() {
        assert_eq!(format_kind(&json!({"type": "string", "format": "email"})), Some(ValueKind::Email));
        assert_eq!(format_kind(&json!({"type": "array", "items": {"type": "string", "format": "idn-email"}})), Some(ValueKind::Email));
        assert_eq!(format_kind(&json!({"type": "string", "format": "uri"})), Some(ValueKind::Url));
        let optional = json!({"anyOf": [{"type": "array", "items": {"type": "string", "format": "email"}}, {"type": "null"}]});
        assert_eq!(format_kind(&optional), Some(ValueKind::Email));
        assert_eq!(format_kind(&json!({"type": "string", "format": "date"})), None);
        assert_eq!(format_kind(&json!({"type": "string"})), None);
    }
}
