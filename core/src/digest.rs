//! The definition digest: what a manifest's `definition_digest` pins.
//!
//! `sha256:` + lowercase hex SHA-256 of the canonical JSON of
//! `{"description": …, "input_schema": …, "name": …}`.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::canonical;
use crate::error::Error;

/// The prefix of every digest this crate writes.
pub const PREFIX: &str = "sha256:";

/// Computes the definition digest of a tool.
pub fn definition_digest(name: &str, description: &str, input_schema: &Value) -> Result<String, Error> {
    let mut schema = String::with_capacity(128);
    canonical::write_value(&mut schema, input_schema, 1)?;
    Ok(definition_digest_canonical(name, description, &schema))
}

/// The definition digest of a tool that may declare an output schema
/// (issue 22): with one, the canonical JSON of `{"description": …,
/// "input_schema": …, "name": …, "output_schema": …}`, so a changed output
/// schema is a changed definition; without one, [`definition_digest`]
/// (pins written before output schemas existed still hold).
pub fn tool_definition_digest(name: &str, description: &str, input_schema: &Value, output_schema: Option<&Value>) -> Result<String, Error> {
    let Some(output_schema) = output_schema else {
        return definition_digest(name, description, input_schema);
    };
    let (mut input, mut output) = (String::with_capacity(128), String::with_capacity(128));
    canonical::write_value(&mut input, input_schema, 1)?;
    canonical::write_value(&mut output, output_schema, 1)?;
    Ok(tool_definition_digest_canonical(name, description, &input, Some(&output)))
}

/// [`tool_definition_digest`] of schemas given as JSON text written by a host whose numbers are
/// doubles (`JSON.stringify`; see [`canonical::of_double_json`]): the same digest as of the values
/// the text holds, without building them. `None` when a text is not one serde_json reads (the
/// host then converts the values).
pub fn tool_definition_digest_of_text(name: &str, description: &str, input_schema: &str, output_schema: Option<&str>) -> Option<String> {
    let input = canonical::of_double_json(input_schema)?;
    let output = match output_schema {
        Some(text) => Some(canonical::of_double_json(text)?),
        None => None,
    };
    Some(tool_definition_digest_canonical(name, description, &input, output.as_deref()))
}

/// [`tool_definition_digest`] of schemas given as their canonical JSON texts.
fn tool_definition_digest_canonical(name: &str, description: &str, input_schema: &str, output_schema: Option<&str>) -> String {
    let Some(output) = output_schema else {
        return definition_digest_canonical(name, description, input_schema);
    };
    // Keys in code point order: description, input_schema, name, output_schema.
    let mut text = String::with_capacity(input_schema.len() + output.len() + name.len() + description.len() + 64);
    text.push_str("{\"description\":");
    canonical::write_str(&mut text, description);
    text.push_str(",\"input_schema\":");
    text.push_str(input_schema);
    text.push_str(",\"name\":");
    canonical::write_str(&mut text, name);
    text.push_str(",\"output_schema\":");
    text.push_str(output);
    text.push('}');
    sha256_tagged(text.as_bytes())
}

/// [`definition_digest`] of a schema given as its canonical JSON text.
pub fn definition_digest_canonical(name: &str, description: &str, input_schema: &str) -> String {
    // Keys in code point order: description, input_schema, name.
    let mut head = String::from("{\"description\":");
    canonical::write_str(&mut head, description);
    head.push_str(",\"input_schema\":");
    let mut tail = String::from(",\"name\":");
    canonical::write_str(&mut tail, name);
    tail.push('}');
    let mut hash = Sha256::new();
    hash.update(head.as_bytes());
    hash.update(input_schema.as_bytes());
    hash.update(tail.as_bytes());
    hex_tagged(&hash.finalize())
}

/// `sha256:` + the lowercase hex SHA-256 of `bytes`.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    hex_tagged(&Sha256::digest(bytes))
}

/// `sha256:` + the lowercase hex of a SHA-256 `hash` (computed elsewhere,
/// for example a piece at a time).
pub(crate) fn hex_tagged(hash: &[u8]) -> String {
    let mut out = String::with_capacity(PREFIX.len() + 64);
    out.push_str(PREFIX);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in hash {
        let hex = |n: u8| char::from(HEX.get(usize::from(n)).copied().unwrap_or(b'0'));
        out.push(hex(byte >> 4));
        out.push(hex(byte & 0xf));
    }
    out
}

/// Whether `text` has the shape of a digest (`sha256:` and 64 lowercase hex digits).
pub fn is_well_formed(text: &str) -> bool {
    text.strip_prefix(PREFIX).is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn of_text_matches_of_values() {
        let input = json!({"type": "object", "properties": {"x": {"type": "number", "minimum": 1.5, "maximum": 1e21}, "é": {"enum": [2, 2.5]}}});
        let output = json!({"type": "object", "required": ["b", "a"]});
        let (i, o) = (input.to_string(), output.to_string());
        assert_eq!(tool_definition_digest_of_text("t", "d é", &i, None), definition_digest("t", "d é", &input).ok());
        assert_eq!(tool_definition_digest_of_text("t", "d", &i, Some(&o)), tool_definition_digest("t", "d", &input, Some(&output)).ok());
        assert_eq!(tool_definition_digest_of_text("t", "d", r#""\ud800""#, None), None);
    }

    #[test]
    fn matches_the_canonical_object() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "number", "minimum": 1.0}}});
        let whole = json!({"name": "t", "description": "d é", "input_schema": schema});
        let expected = sha256_tagged(canonical::to_string(&whole).unwrap().as_bytes());
        assert_eq!(definition_digest("t", "d é", &schema).unwrap(), expected);
        assert!(is_well_formed(&expected));
    }
}
