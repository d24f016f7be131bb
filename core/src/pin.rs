//! `harnessweaver tools pin`: writing a manifest's current digest into its
//! file by editing the text, so comments, key order and formatting stay as
//! they are. Only the `definition_digest` value changes, or one line is added
//! under `spec:` (before its first field, with the same indentation).
//! `harnessweaver tools add` edits harness.yaml the same way, adding one glob
//! to `spec.tools.manifests` ([`add_manifest_glob`]).

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
        let (start, end) =
            value_range(text, key).ok_or_else(|| fail("cannot locate `spec.definition_digest` in the text; fix it by hand".to_string()))?;
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
    if is_json {
        insert_entry(text, key, &format!("\"definition_digest\": {quoted}"), ",")
    } else {
        insert_entry(text, key, &format!("definition_digest: {quoted}"), "")
    }
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

/// Returns the harness text with `glob` added to `spec.tools.manifests`
/// (unchanged when it is there already), keeping comments and formatting: a
/// flow list gets `, "glob"` before its `]`, a block list a `- "glob"` line
/// after its last item, a single glob becomes a flow list of two, and a
/// `tools:` without `manifests` gets a `manifests: ["glob"]` line.
pub fn add_manifest_glob(text: &str, glob: &str) -> Result<String, Error> {
    let root = parse_text(text, false)
        .map_err(|p| fail(format!("cannot parse the harness: {}", p.first().map(|p| p.message.clone()).unwrap_or_default())))?;
    let quoted = serde_json::to_string(glob).map_err(|e| fail(e.to_string()))?;
    let spec = root.get("spec").ok_or_else(|| fail("the harness has no `spec`; add `tools.manifests` by hand".to_string()))?;
    let by_hand = || fail(format!("cannot locate `spec.tools.manifests` in the text; add {quoted} to it by hand"));
    let splice = |at: usize, insertion: &str| -> String {
        let mut out = String::with_capacity(text.len() + insertion.len());
        out.push_str(text.get(..at).unwrap_or_default());
        out.push_str(insertion);
        out.push_str(text.get(at..).unwrap_or_default());
        out
    };
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let Some(tools) = spec.get("tools").filter(|t| matches!(t.value, NodeValue::Map(_))) else {
        return Err(by_hand());
    };
    let Some((key, manifests)) = tools.entry("manifests") else {
        let NodeValue::Map(entries) = &tools.value else { return Err(by_hand()) };
        let (first, _) = entries.first().ok_or_else(by_hand)?;
        return insert_entry(text, first, &format!("manifests: [{quoted}]"), "");
    };
    match &manifests.value {
        NodeValue::Seq(items) if items.iter().any(|i| i.as_str() == Some(glob)) => Ok(text.to_string()),
        NodeValue::Str(s) if s == glob => Ok(text.to_string()),
        NodeValue::Str(_) => {
            let (start, end) = value_range(text, key).filter(|(s, e)| s < e).ok_or_else(by_hand)?;
            let old = text.get(start..end).ok_or_else(by_hand)?;
            let mut out = text.get(..start).unwrap_or_default().to_string();
            out.push_str(&format!("[{old}, {quoted}]"));
            out.push_str(text.get(end..).unwrap_or_default());
            Ok(out)
        }
        NodeValue::Seq(items) => {
            let at = byte_at(text, manifests.pos.start).ok_or_else(by_hand)?;
            if text.get(at..).is_some_and(|t| t.starts_with('[')) {
                // Flow list: the `]` closing it, outside any quotes.
                let close = closing_bracket(text.get(at..).unwrap_or_default()).ok_or_else(by_hand)?;
                let sep = if items.is_empty() { "" } else { ", " };
                return Ok(splice(at + close, &format!("{sep}{quoted}")));
            }
            let last = items.last().ok_or_else(by_hand)?;
            let item_at = byte_at(text, last.pos.start).ok_or_else(by_hand)?;
            let before = text.get(..item_at).unwrap_or_default();
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let prefix = before.get(line_start..).unwrap_or_default();
            let indent: String = prefix.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            if !prefix.trim_start().starts_with('-') {
                return Err(by_hand());
            }
            let line_end = text.get(item_at..).and_then(|t| t.find('\n')).map_or(text.len(), |i| item_at + i);
            let line_end = if text.get(..line_end).is_some_and(|t| t.ends_with('\r')) { line_end - 1 } else { line_end };
            Ok(splice(line_end, &format!("{newline}{indent}- {quoted}")))
        }
        _ => Err(by_hand()),
    }
}

/// The byte offset of the `]` closing the flow list `text` starts with.
fn closing_bracket(text: &str) -> Option<usize> {
    let (mut depth, mut quote, mut escaped) = (0usize, None, false);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some('"'), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Inserts `entry` as a line of its own before `key` (same indentation, `sep`
/// after it: `,` in JSON), or before it on the same line in a one-line flow
/// mapping (`{a: 1}` becomes `{entry, a: 1}`).
fn insert_entry(text: &str, key: &Node, entry: &str, sep: &str) -> Result<String, Error> {
    let at = byte_at(text, key.pos.start).ok_or_else(|| fail("bad position".to_string()))?;
    let before = text.get(..at).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let indent = before.get(line_start..).unwrap_or_default();
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let insertion = if indent.chars().all(|c| c == ' ' || c == '\t') { format!("{entry}{sep}{newline}{indent}") } else { format!("{entry}, ") };
    let mut out = String::with_capacity(text.len() + insertion.len());
    out.push_str(before);
    out.push_str(&insertion);
    out.push_str(text.get(at..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_a_manifest_glob() {
        let g = "tools/new/*.yaml";
        let block = "spec:\n  tools:\n    manifests:\n      - tools/*.yaml   # old\n    max_output_bytes: 10\n";
        assert_eq!(
            add_manifest_glob(block, g).unwrap(),
            "spec:\n  tools:\n    manifests:\n      - tools/*.yaml   # old\n      - \"tools/new/*.yaml\"\n    max_output_bytes: 10\n"
        );
        let flow = "spec:\n  tools:\n    manifests: [\"a/*.yaml\", 'b]'] # two\n";
        assert_eq!(add_manifest_glob(flow, g).unwrap(), "spec:\n  tools:\n    manifests: [\"a/*.yaml\", 'b]', \"tools/new/*.yaml\"] # two\n");
        assert_eq!(add_manifest_glob("spec:\n  tools: {manifests: []}\n", g).unwrap(), "spec:\n  tools: {manifests: [\"tools/new/*.yaml\"]}\n");
        let one = "spec:\n  tools:\n    manifests: a/*.yaml  # one\n";
        assert_eq!(add_manifest_glob(one, g).unwrap(), "spec:\n  tools:\n    manifests: [a/*.yaml, \"tools/new/*.yaml\"]  # one\n");
        let none = "spec:\n  tools:\n    # settings\n    max_output_bytes: 10\n";
        assert_eq!(
            add_manifest_glob(none, g).unwrap(),
            "spec:\n  tools:\n    # settings\n    manifests: [\"tools/new/*.yaml\"]\n    max_output_bytes: 10\n"
        );
        let done = add_manifest_glob(block, g).unwrap();
        assert_eq!(add_manifest_glob(&done, g).unwrap(), done, "idempotent");
        assert!(add_manifest_glob("spec: {}\n", g).is_err());
    }

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
        assert_eq!(
            out,
            format!("{{\n  \"kind\": \"Tool\",\n  \"spec\": {{\n    \"definition_digest\": \"{D}\",\n    \"handler\": \"x\"\n  }}\n}}\n")
        );
        let again = pin_text(&out, true, D).unwrap();
        assert_eq!(again, out);
        let one_line = "{\"spec\": {\"handler\": \"x\"}}";
        assert_eq!(pin_text(one_line, true, D).unwrap(), format!("{{\"spec\": {{\"definition_digest\": \"{D}\", \"handler\": \"x\"}}}}"));
        let existing = "{\"spec\": {\"definition_digest\": \"sha256:1\", \"handler\": \"x\"}}";
        assert_eq!(pin_text(existing, true, D).unwrap(), format!("{{\"spec\": {{\"definition_digest\": \"{D}\", \"handler\": \"x\"}}}}"));
    }
}
