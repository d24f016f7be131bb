//! Caller-supplied strings in messages and audit events, cut short
//! (issue 17, item 14).
//!
//! A tool name, principal id, run or approval id, tenant, handler error
//! kind, transport reason or approver note can be as long as its sender
//! likes; echoed whole, a 10 MB name makes a 10 MB message and audit line.
//! Messages put caller input in backticks (the style rule), so the result
//! and error builders pass every message through [`cap_message`] once: each
//! backticked span longer than [`MAX_ECHO_CHARS`] characters is cut there
//! with an ellipsis, and the whole message to [`MAX_MESSAGE_CHARS`]. Audit
//! events cut each caller string field with [`capped`] where they are
//! recorded.

use std::borrow::Cow;

/// The most characters of a caller's string echoed in a message or an audit
/// event; longer ones end with `…`.
pub const MAX_ECHO_CHARS: usize = 200;

/// The most characters of a whole message (several echoed strings and the
/// words around them); longer ones end with `…`.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// `s`, cut to [`MAX_ECHO_CHARS`] characters with an ellipsis when longer.
pub fn capped(s: &str) -> Cow<'_, str> {
    cut(s, MAX_ECHO_CHARS)
}

/// `s` cut to `max` characters plus `…`, borrowed when it fits.
fn cut(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    match s.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", s.get(..at).unwrap_or_default())),
        None => Cow::Borrowed(s),
    }
}

/// `message` with every backticked span cut to [`MAX_ECHO_CHARS`]
/// characters, then the whole to [`MAX_MESSAGE_CHARS`]; unchanged (and not
/// copied) when it is short.
pub fn cap_message(message: String) -> String {
    if message.len() <= MAX_ECHO_CHARS {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS * 4));
    let mut rest = message.as_str();
    // Backticks are ASCII: every split below is on a character boundary.
    while let Some((before, after)) = rest.find('`').and_then(|open| rest.split_at_checked(open + 1)) {
        out.push_str(before);
        match after.find('`').and_then(|close| after.split_at_checked(close)) {
            Some((quoted, tail)) => {
                out.push_str(&capped(quoted));
                out.push('`');
                rest = tail.get(1..).unwrap_or_default();
            }
            None => {
                // An unmatched backtick: the rest is cut like a quoted span.
                out.push_str(&capped(after));
                rest = "";
            }
        }
    }
    out.push_str(rest);
    match cut(&out, MAX_MESSAGE_CHARS) {
        Cow::Borrowed(_) => out,
        Cow::Owned(short) => short,
    }
}

/// The longest prefix of `s` of at most `max_bytes` bytes ending on a char boundary.
pub fn truncate(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_untouched() {
        assert!(matches!(capped("refund_payment"), Cow::Borrowed("refund_payment")));
        let m = "no tool named `x`".to_string();
        assert_eq!(cap_message(m.clone()), m);
    }

    #[test]
    fn long_spans_are_cut_with_an_ellipsis() {
        let long = "é".repeat(300);
        assert_eq!(capped(&long).chars().count(), MAX_ECHO_CHARS + 1);
        assert!(capped(&long).ends_with('…'));
        let m = cap_message(format!("approval `{long}` for `t` expired; `{long}`"));
        assert_eq!(m, format!("approval `{}…` for `t` expired; `{}…`", "é".repeat(200), "é".repeat(200)));
        let m = cap_message(format!("`t` failed ({})", "x".repeat(10_000)));
        assert_eq!(m.chars().count(), MAX_MESSAGE_CHARS + 1);
        let m = cap_message(format!("unmatched `{}", "y".repeat(500)));
        assert_eq!(m, format!("unmatched `{}…", "y".repeat(200)));
    }
}
