//! Masking the secrets a transport handed out for a call (issue 17, item 10).
//!
//! The http transport sends `headers_env` values, an MCP server is started
//! with its `env` values or reached with its `headers_env` values. An
//! upstream that reflects one of them (an echo endpoint, a debug field, an
//! error page) would hand it to the model, whatever format it chose. The
//! governor knows every value it handed out for the call, so step 9 masks
//! them before the sanitizers run, as CI systems mask secrets in logs: each
//! exact occurrence and its common encodings (URL-encoded, base64 in the
//! standard and URL-safe alphabets, also inside a longer base64 text, and
//! JSON-escaped) becomes [`PLACEHOLDER`], counted as [`KIND`].
//!
//! Values shorter than [`MIN_SECRET_CHARS`] characters are not masked: they
//! would mask ordinary words (`true`, `debug`) and a value that short keeps
//! little secret anyway.

use regex::{Regex, RegexBuilder};
use std::borrow::Cow;

use super::{Counts, TextPass};
use crate::canonical;

/// What a masked value becomes.
pub const PLACEHOLDER: &str = "[SECRET]";

/// The kind counted in the output report's `redactions`.
pub const KIND: &str = "secret.echoed";

/// Values with fewer characters are not masked.
pub const MIN_SECRET_CHARS: usize = 6;

/// Encodings shorter than this (the base64 of a secret inside a longer
/// base64 text keeps only its middle) are not masked on their own.
const MIN_FORM_CHARS: usize = 6;

/// Finds the handed-out secrets of one call, in every form [`forms`] makes.
#[derive(Debug, Clone)]
pub struct SecretMask {
    finder: Option<Regex>,
}

impl SecretMask {
    /// A mask for `secrets` (values shorter than [`MIN_SECRET_CHARS`]
    /// characters are left out); masks nothing when none is left.
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Self {
        let mut all: Vec<String> = secrets.iter().flat_map(|s| forms(s.as_ref())).filter(|f| f.chars().count() >= MIN_FORM_CHARS).collect();
        // Longest first: the regex takes the first alternative that matches
        // at a position, so a longer form (the padded base64) wins over a
        // shorter one inside it.
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        all.dedup();
        if all.is_empty() {
            return Self { finder: None };
        }
        let pattern = all.iter().map(|f| regex::escape(f)).collect::<Vec<_>>().join("|");
        // A literal alternation compiles to a multi-substring search; a
        // pattern the regex crate would refuse (it cannot, short of absurd
        // sizes) masks the exact values only, rather than nothing.
        let finder = RegexBuilder::new(&pattern).size_limit(64 << 20).build().ok().or_else(|| {
            let exact: Vec<String> = secrets.iter().map(|s| regex::escape(s.as_ref())).collect();
            Regex::new(&exact.join("|")).ok()
        });
        Self { finder }
    }

    /// Whether this mask masks anything.
    pub fn is_empty(&self) -> bool {
        self.finder.is_none()
    }

    /// `text` with every form of every secret replaced by [`PLACEHOLDER`].
    pub fn mask<'t>(&self, text: &'t str) -> (Cow<'t, str>, Counts) {
        let mut counts = Counts::new();
        let Some(finder) = &self.finder else { return (Cow::Borrowed(text), counts) };
        let mut found = 0u64;
        let out = finder.replace_all(text, |_: &regex::Captures<'_>| {
            found = found.saturating_add(1);
            PLACEHOLDER
        });
        counts.add(KIND, found);
        (out, counts)
    }
}

impl TextPass for SecretMask {
    fn run<'t>(&self, text: &'t str) -> (Cow<'t, str>, Counts) {
        self.mask(text)
    }
}

/// A secret and its encodings, each once: the exact value; for a value
/// `<scheme> <credential>` (an `Authorization` header) the credential too;
/// the JSON string escapes of each (as serde and Python write them, and with
/// `\/`); then for each of those texts its URL encodings (upper- and
/// lower-case hex, `+` for space) and its base64 (standard and URL-safe
/// alphabets, padded, unpadded, and the part that stays the same at each of
/// the three offsets inside a longer base64 text, such as a JSON object
/// holding the secret encoded whole).
pub fn forms(secret: &str) -> Vec<String> {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Vec::new();
    }
    let mut bases = vec![secret.to_string()];
    if let Some((scheme, credential)) = secret.split_once(' ') {
        let credential = credential.trim();
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) && credential.chars().count() >= MIN_SECRET_CHARS {
            bases.push(credential.to_string());
        }
    }
    let mut texts = Vec::new();
    for base in &bases {
        texts.push(base.clone());
        texts.push(json_escaped(base, false));
        texts.push(json_escaped(base, true));
        texts.push(json_escaped(base, false).replace('/', "\\/"));
    }
    texts.sort();
    texts.dedup();
    let mut out = Vec::new();
    for text in &texts {
        out.push(text.clone());
        for upper in [true, false] {
            out.push(percent_encode(text, upper, false));
            out.push(percent_encode(text, upper, true));
        }
        for alphabet in [STANDARD, URL_SAFE] {
            let bytes = text.as_bytes();
            let padded = base64(bytes, alphabet);
            out.push(padded.trim_end_matches('=').to_string());
            out.push(padded);
            out.extend(base64_cores(bytes, alphabet));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Percent-encodes every byte outside RFC 3986's unreserved set; with
/// `form`, a space becomes `+` (HTML forms, query strings).
fn percent_encode(s: &str, upper: bool, form: bool) -> String {
    let hex: &[u8] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let digit = |n: u8| char::from(hex.get(usize::from(n)).copied().unwrap_or(b'0'));
    let mut out = String::with_capacity(s.len() * 3);
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else if form && b == b' ' {
            out.push('+');
        } else {
            out.push('%');
            out.push(digit(b >> 4));
            out.push(digit(b & 0x0f));
        }
    }
    out
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with `=` padding.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                let index = usize::try_from((n >> (18 - 6 * i)) & 0x3f).unwrap_or(0);
                out.push(char::from(alphabet.get(index).copied().unwrap_or(b'A')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The characters of the secret's base64 that do not depend on the bytes
/// around it, when it sits at byte offset 0, 1 or 2 of a longer text that
/// is base64-encoded whole (a JSON object or `user:token` encoded at once).
fn base64_cores(bytes: &[u8], alphabet: &[u8; 64]) -> Vec<String> {
    let mut out = Vec::with_capacity(3);
    for offset in 0..3usize {
        let mut stream = vec![0u8; offset];
        stream.extend_from_slice(bytes);
        let encoded = base64(&stream, alphabet);
        let encoded = encoded.trim_end_matches('=');
        // Characters that hold bits of the bytes before the secret…
        let skip = (offset * 8).div_ceil(6);
        // …and the last one when it also holds bits of the bytes after it.
        let drop = usize::from((stream.len() * 8) % 6 != 0);
        let end = encoded.len().saturating_sub(drop);
        if let Some(core) = encoded.get(skip..end) {
            out.push(core.to_string());
        }
    }
    out
}

/// The secret as it appears inside a JSON string literal (without the
/// quotes); `ascii`: every non-ASCII character as `\uXXXX`, as Python's
/// `json.dumps` writes it.
fn json_escaped(s: &str, ascii: bool) -> String {
    let text = if ascii {
        let mut out = String::new();
        canonical::write_str(&mut out, s);
        out
    } else {
        serde_json::to_string(s).unwrap_or_default()
    };
    let text = text.strip_prefix('"').unwrap_or(&text);
    text.strip_suffix('"').unwrap_or(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b"", STANDARD), "");
        assert_eq!(base64(b"f", STANDARD), "Zg==");
        assert_eq!(base64(b"fo", STANDARD), "Zm8=");
        assert_eq!(base64(b"foo", STANDARD), "Zm9v");
        assert_eq!(base64(b"foobar", STANDARD), "Zm9vYmFy");
        assert_eq!(base64(&[0xfb, 0xff], STANDARD), "+/8=");
        assert_eq!(base64(&[0xfb, 0xff], URL_SAFE), "-_8=");
    }

    #[test]
    fn every_form_is_masked_and_counted() {
        let secret = "s3cr3t/Token+42 é";
        let mask = SecretMask::new(&[secret]);
        for form in forms(secret) {
            let text = format!("before {form} after");
            let (out, counts) = mask.mask(&text);
            assert_eq!(out, "before [SECRET] after", "form `{form}`");
            assert_eq!(counts.get(KIND), 1, "form `{form}`");
        }
    }

    #[test]
    fn a_secret_inside_a_longer_base64_text_is_masked_at_every_offset() {
        let secret = "tok-8f3a9c2e1d";
        let mask = SecretMask::new(&[secret]);
        for prefix in ["", "a", "ab", "abc", "{\"token\":\""] {
            let whole = base64(format!("{prefix}{secret}\"}}").as_bytes(), STANDARD);
            let (out, counts) = mask.mask(&whole);
            assert_eq!(counts.get(KIND), 1, "prefix `{prefix}`: {whole} -> {out}");
            assert!(out.contains(PLACEHOLDER));
        }
    }

    #[test]
    fn the_credential_of_an_authorization_value_is_masked_alone() {
        let mask = SecretMask::new(&["Bearer abc123xyz"]);
        assert_eq!(mask.mask("token=abc123xyz").0, "token=[SECRET]");
        assert_eq!(mask.mask("Bearer abc123xyz").0, "[SECRET]");
    }

    #[test]
    fn short_values_and_other_text_are_left_alone() {
        let mask = SecretMask::new(&["true", "debug"]);
        assert!(mask.is_empty());
        assert_eq!(mask.mask("true debug"), (Cow::Borrowed("true debug"), Counts::new()));
        let mask = SecretMask::new(&["long-enough-secret"]);
        assert!(matches!(mask.mask("nothing to see").0, Cow::Borrowed(_)));
    }
}
