//! Step 9 for the content parts of an MCP tool's result (issue 22): text,
//! images, audio and embedded resources pass as their own types, each
//! governed.
//!
//! Each part is rebuilt from the fields its type defines (anything else an
//! upstream adds, `_meta` and `annotations` included, is left behind):
//!
//! - text (a `text` part, a text `resource`, the strings of a
//!   `resource_link`) goes through the tool's sanitizers, like any output;
//! - `output.max_bytes` bounds the whole result: parts are taken in order,
//!   each counting its payload (the text's UTF-8 bytes, the base64 `data` or
//!   `blob` as sent); a text that does not fit is cut on a character
//!   boundary (`truncated`), binary data that does not fit is dropped whole
//!   (`content_too_large`), never cut into invalid base64;
//! - `output.content: text_only` drops images, audio and binary resources
//!   (`content_not_allowed`);
//! - a part of an unknown type or without its required fields is dropped
//!   (`content_invalid`).
//!
//! What was dropped is reported (`output_report.content.dropped`: index,
//! type, code), never what it held.

use serde_json::{Map, Value};

use super::output::truncate;
use super::{Counts, OutputPolicy};
use crate::call::{ContentReport, DroppedPart};
use crate::codes::ContentDrop;
use crate::manifest::ContentKinds;

/// Governs `value` (the parts, as a JSON list) under `policy`; returns the
/// kept parts, whether a text was cut, and the report. Redactions are added
/// to `redactions`.
pub(super) fn govern(value: Value, policy: &OutputPolicy, redactions: &mut Counts) -> (Value, bool, ContentReport) {
    let parts = match value {
        Value::Array(parts) => parts,
        other => vec![other],
    };
    let mut left = policy.max_bytes;
    let mut truncated = false;
    let mut kept = Vec::with_capacity(parts.len());
    let mut dropped = Vec::new();
    for (index, part) in parts.into_iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        match shape(&part, policy, redactions, &mut left, &mut truncated) {
            Ok(part) => kept.push(part),
            Err(code) => dropped.push(DroppedPart { index, kind, code }),
        }
    }
    let report = ContentReport { parts: kept.len(), dropped };
    (Value::Array(kept), truncated, report)
}

fn string<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// One part, rebuilt and governed, or why it is dropped.
fn shape(part: &Value, policy: &OutputPolicy, redactions: &mut Counts, left: &mut usize, truncated: &mut bool) -> Result<Value, ContentDrop> {
    let clean =
        |text: &str, redactions: &mut Counts| match crate::sanitize::apply_counting(Value::String(text.to_string()), &policy.sanitize, redactions) {
            Value::String(s) => s,
            // The sanitizers map a string to a string.
            other => other.to_string(),
        };
    let mut out = Map::new();
    match string(part, "type") {
        Some("text") => {
            let text = string(part, "text").ok_or(ContentDrop::ContentInvalid)?;
            let text = fit_text(clean(text, redactions), left, truncated)?;
            out.insert("type".into(), "text".into());
            out.insert("text".into(), text.into());
        }
        Some(kind @ ("image" | "audio")) => {
            let (data, mime) = (string(part, "data"), string(part, "mimeType"));
            let (Some(data), Some(mime)) = (data, mime) else { return Err(ContentDrop::ContentInvalid) };
            if policy.content == ContentKinds::TextOnly {
                return Err(ContentDrop::ContentNotAllowed);
            }
            take_whole(data.len(), left)?;
            out.insert("type".into(), kind.into());
            out.insert("data".into(), data.into());
            out.insert("mimeType".into(), mime.into());
        }
        Some("resource") => {
            let resource = part.get("resource").ok_or(ContentDrop::ContentInvalid)?;
            let uri = string(resource, "uri").ok_or(ContentDrop::ContentInvalid)?;
            let mut inner = Map::new();
            if let Some(text) = string(resource, "text") {
                let text = fit_text(clean(text, redactions), left, truncated)?;
                inner.insert("text".into(), text.into());
            } else if let Some(blob) = string(resource, "blob") {
                if policy.content == ContentKinds::TextOnly {
                    return Err(ContentDrop::ContentNotAllowed);
                }
                take_whole(blob.len(), left)?;
                inner.insert("blob".into(), blob.into());
            } else {
                return Err(ContentDrop::ContentInvalid);
            }
            inner.insert("uri".into(), clean(uri, redactions).into());
            if let Some(mime) = string(resource, "mimeType") {
                inner.insert("mimeType".into(), mime.into());
            }
            out.insert("type".into(), "resource".into());
            out.insert("resource".into(), Value::Object(inner));
        }
        Some("resource_link") => {
            let (Some(uri), Some(name)) = (string(part, "uri"), string(part, "name")) else { return Err(ContentDrop::ContentInvalid) };
            out.insert("type".into(), "resource_link".into());
            let mut size = 0usize;
            for (key, text) in
                [("uri", Some(uri)), ("name", Some(name)), ("title", string(part, "title")), ("description", string(part, "description"))]
            {
                if let Some(text) = text {
                    let text = clean(text, redactions);
                    size = size.saturating_add(text.len());
                    out.insert(key.into(), text.into());
                }
            }
            if let Some(mime) = string(part, "mimeType") {
                out.insert("mimeType".into(), mime.into());
            }
            take_whole(size, left)?;
        }
        _ => return Err(ContentDrop::ContentInvalid),
    }
    Ok(Value::Object(out))
}

/// Takes `size` bytes from what is left, or refuses the part.
fn take_whole(size: usize, left: &mut usize) -> Result<(), ContentDrop> {
    if size > *left {
        return Err(ContentDrop::ContentTooLarge);
    }
    *left -= size;
    Ok(())
}

/// A text within what is left: cut on a character boundary when it is too
/// long; dropped when nothing is left.
fn fit_text(text: String, left: &mut usize, truncated: &mut bool) -> Result<String, ContentDrop> {
    if text.len() <= *left {
        *left -= text.len();
        return Ok(text);
    }
    let cut = truncate(&text, *left);
    if cut.is_empty() {
        return Err(ContentDrop::ContentTooLarge);
    }
    *truncated = true;
    *left -= cut.len();
    Ok(cut.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sanitize::Sanitizer;
    use serde_json::json;

    fn policy(max_bytes: usize, content: ContentKinds, sanitize: Vec<Sanitizer>) -> OutputPolicy {
        OutputPolicy { max_bytes, sanitize, untrusted: true, content }
    }

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFAAIBpd0vTQAAAABJRU5ErkJggg==";

    #[test]
    fn parts_pass_as_their_types_and_text_is_sanitized() {
        let parts = json!([
            {"type": "text", "text": "mail ann@example.com", "_meta": {"x": 1}},
            {"type": "image", "data": PNG, "mimeType": "image/png", "annotations": {"audience": ["user"]}},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "ann@example.com wrote"}},
        ]);
        let mut red = Counts::new();
        let (out, truncated, report) = govern(parts, &policy(10_000, ContentKinds::Any, vec![Sanitizer::PiiRedact]), &mut red);
        assert!(!truncated);
        assert_eq!(report, ContentReport { parts: 3, dropped: vec![] });
        assert_eq!(
            out,
            json!([
                {"type": "text", "text": "mail [EMAIL]"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "[EMAIL] wrote"}},
            ])
        );
        assert_eq!(red.values().sum::<u64>(), 2, "{red:?}");
    }

    #[test]
    fn binary_that_does_not_fit_is_dropped_whole_and_text_is_cut() {
        let parts = json!([
            {"type": "text", "text": "héllo"},
            {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
            {"type": "text", "text": "abcdef"},
        ]);
        let mut red = Counts::new();
        // 6 bytes of text, then 3 left: the audio (96 bytes) does not fit, the second text is cut.
        let (out, truncated, report) = govern(parts, &policy(9, ContentKinds::Any, vec![]), &mut red);
        assert!(truncated);
        assert_eq!(out, json!([{"type": "text", "text": "héllo"}, {"type": "text", "text": "abc"}]));
        assert_eq!(report.dropped, vec![DroppedPart { index: 1, kind: "audio".into(), code: ContentDrop::ContentTooLarge }]);
        // With room, the same audio passes intact.
        let (out, _, report) =
            govern(json!([{"type": "audio", "data": PNG, "mimeType": "audio/wav"}]), &policy(96, ContentKinds::Any, vec![]), &mut red);
        assert_eq!(out[0]["data"], json!(PNG));
        assert!(report.dropped.is_empty());
    }

    #[test]
    fn text_only_drops_binary_and_invalid_parts_are_dropped() {
        let parts = json!([
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://b", "blob": PNG}},
            {"type": "resource", "resource": {"uri": "test://t", "text": "ok"}},
            {"type": "image", "mimeType": "image/png"},
            {"type": "video", "data": "x"},
        ]);
        let mut red = Counts::new();
        let (out, _, report) = govern(parts, &policy(10_000, ContentKinds::TextOnly, vec![]), &mut red);
        assert_eq!(out, json!([{"type": "resource", "resource": {"uri": "test://t", "text": "ok"}}]));
        let codes: Vec<(usize, &str)> = report.dropped.iter().map(|d| (d.index, d.code.as_str())).collect();
        assert_eq!(codes, [(0, "content_not_allowed"), (1, "content_not_allowed"), (3, "content_invalid"), (4, "content_invalid")]);
    }
}
