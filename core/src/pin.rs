//! `harnessweaver tools pin`: writing a manifest's current digest into its
//! file by editing the text, so comments, key order and formatting stay as
//! they are. Only the `definition_digest` value changes, or one line is added
//! under `spec:` (before its first field, with the same indentation).

use crate::error::Error;
use crate::manifest::{parse_text, PinState, Tool};
use crate::yaml::{Node, NodeValue};

fn fail(message: String) -> Error {
    Error::Io { message }
}

/// Byte offset of character index `idx` in `text`.
fn byte_at(text: &str, idx: usize) -> Option<usize> {
    if idx == text.chars().count() {
        return Some(text.len());
    }
    text.char_indices().nth(idx).map(|(b, _)| b)
}

/// Returns `text` with `spec.definition_digest` set to `digest`.
pub fn pin_text(text: &str, is_json: bool, digest: &str) -> Result<String, Error> {
    let root = parse_text(text, is_json)
        .map_err(|p| fail(format!("cannot parse the manifest: {}", p.first().map(|p| p.message.clone()).unwrap_or_default())))?;
    let spec = root.get("spec").ok_or_else(|| fail("the manifest has no `spec` to pin".to_string()))?;
    if !spec.pos.is_known() {
        return Err(fail("cannot locate `spec` in the text; add `definition_digest` by hand".to_string()));
    }
    let quoted = format!("\"{digest}\"");
    if let Some((key, value)) = spec.entry("definition_digest") {
        if !matches!(value.value, NodeValue::Str(_) | NodeValue::Null) {
            return Err(fail("`spec.definition_digest` is not a string; fix it by hand".to_string()));
        }
        let (start, end) = value_range(text, key)
            .ok_or_else(|| fail("cannot locate `spec.definition_digest` in the text; fix it by hand".to_string()))?;
        let old = text.get(start..end).unwrap_or_default();
        let lead = if old.is_empty() && !text.get(..start).unwrap_or_default().ends_with(' ') { " " } else { "" };
        let mut out = String::with_capacity(text.len() + 8);
        out.push_str(text.get(..start).unwrap_or_default());
        out.push_str(lead);
        out.push_str(&quoted);
        out.push_str(text.get(end..).unwrap_or_default());
        return Ok(out);
    }
    let NodeValue::Map(entries) = &spec.value else {
        return Err(fail("`spec` is not a mapping".to_string()));
    };
    let Some((first_key, _)) = entries.first() else {
        return Err(fail("`spec` is empty; add `definition_digest` by hand".to_string()));
    };
    insert_before(text, first_key, is_json, &quoted)
}

/// The byte range of the one-line scalar after `key:` (empty when the value
/// is empty), found by scanning the text: parser spans of scalars can reach
/// past trailing comments.
fn value_range(text: &str, key: &Node) -> Option<(usize, usize)> {
    let key_at = byte_at(text, key.pos.start)?;
    let rest = text.get(key_at..)?;
    // Skip the key itself (plain or quoted), then the `:`.
    let key_len = match rest.chars().next()? {
        q @ ('"' | '\'') => 1 + rest.get(1..)?.find(q)? + 1,
        _ => rest.find(':')?,
    };
    let after_key = rest.get(key_len..)?;
    let colon = after_key.find(':')?;
    if !after_key.get(..colon)?.trim().is_empty() {
        return None;
    }
    let value_at = key_at + key_len + colon + 1;
    let line = text.get(value_at..)?;
    let line = line.split(['\n', '\r']).next().unwrap_or_default();
    let spaces = line.len() - line.trim_start_matches([' ', '\t']).len();
    let start = value_at + spaces;
    let v = line.get(spaces..)?;
    let len = match v.chars().next() {
        None | Some('#') => 0,
        Some('"') => {
            let mut escaped = false;
            let mut end = None;
            for (i, c) in v.char_indices().skip(1) {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    _ => {}
                }
            }
            end?
        }
        Some('\'') => {
            let bytes = v.as_bytes();
            let mut i = 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\'') if bytes.get(i + 1) == Some(&b'\'') => i += 2,
                    Some(b'\'') => break i + 1,
                    Some(_) => i += 1,
                }
            }
        }
        Some(_) => {
            let mut end = v.len();
            for (i, c) in v.char_indices() {
                let comment = c == '#' && i > 0 && v.get(..i).is_some_and(|b| b.ends_with([' ', '\t']));
                if comment || matches!(c, ',' | '}' | ']') {
                    end = i;
                    break;
                }
            }
            v.get(..end)?.trim_end().len()
        }
    };
    if len == 0 {
        return Some((value_at, value_at));
    }
    Some((start, start + len))
}

fn insert_before(text: &str, key: &Node, is_json: bool, quoted: &str) -> Result<String, Error> {
    let at = byte_at(text, key.pos.start).ok_or_else(|| fail("bad position".to_string()))?;
    let before = text.get(..at).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let indent = before.get(line_start..).unwrap_or_default();
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let entry = if is_json {
        format!("\"definition_digest\": {quoted}")
    } else {
        format!("definition_digest: {quoted}")
    };
    let insertion = if indent.chars().all(|c| c == ' ' || c == '\t') {
        // Block style (or one key per line in JSON): a line of its own.
        let sep = if is_json { "," } else { "" };
        format!("{entry}{sep}{newline}{indent}")
    } else {
        // Flow style on one line: `{a: 1}` becomes `{definition_digest: "…", a: 1}`.
        format!("{entry}, ")
    };
    let mut out = String::with_capacity(text.len() + insertion.len());
    out.push_str(before);
    out.push_str(&insertion);
    out.push_str(text.get(at..).unwrap_or_default());
    Ok(out)
}

/// Writes `tool`'s current digest into its manifest file. The edited text is
/// parsed again and must pin the tool, or nothing is written.
pub fn pin_file(tool: &Tool) -> Result<(), Error> {
    let path = tool.path().ok_or_else(|| fail("the tool was not loaded from a file".to_string()))?;
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read the manifest: {e}")))?;
    let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let new_text = pin_text(&text, is_json, tool.digest())?;
    if new_text == text {
        return Ok(());
    }
    let origin = if is_json { "manifest.json" } else { "manifest.yaml" };
    match Tool::from_manifest_text(&new_text, origin) {
        Ok(t) if t.pin() == PinState::Pinned && t.digest() == tool.digest() => {}
        _ => return Err(fail("editing the file would not pin the tool; add `definition_digest` by hand".to_string())),
    }
    std::fs::write(path, new_text).map_err(|e| fail(format!("cannot write the manifest: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn adds_a_line_under_spec() {
        let text = "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: t}\nspec:\n  # how\n  handler: \"a:b\"  # the handler\n";
        let out = pin_text(text, false, D).unwrap();
        assert_eq!(
            out,
            format!("apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: t}}\nspec:\n  # how\n  definition_digest: \"{D}\"\n  handler: \"a:b\"  # the handler\n")
        );
    }

    #[test]
    fn replaces_an_existing_value() {
        for old in ["\"sha256:abc\"", "'sha256:abc'", "sha256:abc", "\"\"", "~", ""] {
            let text = format!("kind: Tool\nspec:\n  definition_digest: {old}   # pin é\n  handler: x\n");
            let out = pin_text(&text, false, D).unwrap();
            let spaces = if old.is_empty() { "    " } else { "   " };
            assert_eq!(out, format!("kind: Tool\nspec:\n  definition_digest: \"{D}\"{spaces}# pin é\n  handler: x\n"), "{old}");
        }
    }

    #[test]
    fn json_both_ways() {
        let text = "{\n  \"kind\": \"Tool\",\n  \"spec\": {\n    \"handler\": \"x\"\n  }\n}\n";
        let out = pin_text(text, true, D).unwrap();
        assert_eq!(out, format!("{{\n  \"kind\": \"Tool\",\n  \"spec\": {{\n    \"definition_digest\": \"{D}\",\n    \"handler\": \"x\"\n  }}\n}}\n"));
        let again = pin_text(&out, true, D).unwrap();
        assert_eq!(again, out);
        let one_line = "{\"spec\": {\"handler\": \"x\"}}";
        assert_eq!(pin_text(one_line, true, D).unwrap(), format!("{{\"spec\": {{\"definition_digest\": \"{D}\", \"handler\": \"x\"}}}}"));
        let existing = "{\"spec\": {\"definition_digest\": \"sha256:1\", \"handler\": \"x\"}}";
        assert_eq!(pin_text(existing, true, D).unwrap(), format!("{{\"spec\": {{\"definition_digest\": \"{D}\", \"handler\": \"x\"}}}}"));
    }
}
