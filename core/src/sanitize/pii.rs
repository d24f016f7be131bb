//! `pii_redact`: personal data and secrets become typed placeholders.
//!
//! Each detector is one `regex` pass (linear time) that proposes candidates;
//! candidates are then validated in code: Luhn and issuer prefixes for cards,
//! mod-97 and the country's length for IBANs, area/group/serial rules for US
//! SSNs, octet ranges and `std::net` parsing for IP addresses, and the shape of
//! national numbering plans for phones (so dates, versions, prices and order
//! numbers stay). Overlaps are resolved once by priority.

use super::chars::{at, before, ceil, floor, is_word};
use super::{render, resolve, Counts, Finding};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// The kinds of personal data and secrets `pii_redact` replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiKind {
    /// An email address.
    Email,
    /// A phone number (E.164 or a national form).
    Phone,
    /// A payment card number that passes Luhn and has a known issuer prefix.
    CreditCard,
    /// A US social security number that follows the SSA's rules.
    UsSsn,
    /// An IBAN that passes mod-97 and has its country's length.
    Iban,
    /// An IPv4 or IPv6 address.
    IpAddress,
    /// A MAC address.
    MacAddress,
    /// A date given as someone's date of birth.
    DateOfBirth,
    /// An API key, token, JWT, private key or password.
    Secret,
}

impl PiiKind {
    /// Every kind.
    pub const ALL: [PiiKind; 9] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::CreditCard,
        PiiKind::UsSsn,
        PiiKind::Iban,
        PiiKind::IpAddress,
        PiiKind::MacAddress,
        PiiKind::DateOfBirth,
        PiiKind::Secret,
    ];

    /// The kind's name, as counted (`EMAIL`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "EMAIL",
            Self::Phone => "PHONE",
            Self::CreditCard => "CREDIT_CARD",
            Self::UsSsn => "US_SSN",
            Self::Iban => "IBAN",
            Self::IpAddress => "IP_ADDRESS",
            Self::MacAddress => "MAC_ADDRESS",
            Self::DateOfBirth => "DATE_OF_BIRTH",
            Self::Secret => "SECRET",
        }
    }

    /// The placeholder put in place of a value (`[EMAIL]`, …).
    pub fn placeholder(self) -> &'static str {
        match self {
            Self::Email => "[EMAIL]",
            Self::Phone => "[PHONE]",
            Self::CreditCard => "[CREDIT_CARD]",
            Self::UsSsn => "[US_SSN]",
            Self::Iban => "[IBAN]",
            Self::IpAddress => "[IP_ADDRESS]",
            Self::MacAddress => "[MAC_ADDRESS]",
            Self::DateOfBirth => "[DATE_OF_BIRTH]",
            Self::Secret => "[SECRET]",
        }
    }

    /// Whether a JSON number under a key of this kind is redacted.
    pub(crate) fn redacts_numbers(self) -> bool {
        matches!(self, Self::Phone | Self::UsSsn | Self::CreditCard | Self::Secret | Self::DateOfBirth)
    }

    /// Whether the strings of an array under a key of this kind are redacted.
    pub(crate) fn applies_to_arrays(self) -> bool {
        true
    }

    fn priority(self) -> u8 {
        match self {
            Self::Secret => 90,
            Self::Email => 80,
            Self::Iban => 70,
            Self::CreditCard => 65,
            Self::UsSsn => 60,
            Self::MacAddress => 55,
            Self::IpAddress => 50,
            Self::DateOfBirth => 45,
            Self::Phone => 40,
        }
    }
}

struct Detectors {
    email: Regex,
    phone: Regex,
    card: Regex,
    ssn: Regex,
    ssn_bare: Regex,
    iban: Regex,
    ipv4: Regex,
    ipv6: Regex,
    mac: Regex,
    dob: Regex,
    /// Whole-match secrets: the match is the secret.
    secret_whole: Regex,
    /// Secrets inside a context: capture group 1 (or 2, 3) is the secret.
    secret_groups: Vec<Regex>,
}

fn build() -> Option<Detectors> {
    // A larger lazy-DFA cache keeps the big alternations on the DFA path
    // (linear and fast) instead of falling back to the slower PikeVM.
    let r = |p: &str| regex::RegexBuilder::new(p).dfa_size_limit(32 << 20).size_limit(64 << 20).build().ok();
    Some(Detectors {
        email: r(
            r"[\p{Latin}\p{Greek}\p{Cyrillic}0-9._%+\-']+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?\.)+[\p{Latin}\p{Greek}\p{Cyrillic}]{2,24}",
        )?,
        phone: r(r"\+?(?:\([0-9]{1,5}\)[ .\-]?)?[0-9]+(?:(?:[ .\-/]|[ ]?\(0?\)?[ ]?|\)[ ]?|[ ]?\()[0-9]+)*")?,
        card: r(r"[0-9]{4}[ \-][0-9]{6}[ \-][0-9]{5}|[0-9]{4}(?:[ \-][0-9]{4}){3}(?:[ \-][0-9]{1,3})?|[0-9]{13,19}")?,
        ssn: r(r"[0-9]{3}[\- ][0-9]{2}[\- ][0-9]{4}")?,
        ssn_bare: r(r"(?i)(?:ssn|social security(?: number| no\.?)?|soc\.? ?sec\.?(?: no\.?)?)\s*(?:#|no\.?|number)?\s*[:=]?\s*([0-9]{9})")?,
        iban: r(r"[A-Za-z]{2}[0-9]{2}(?:[ ]?[A-Za-z0-9]){11,32}")?,
        ipv4: r(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")?,
        ipv6: r(
            r"[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:(?:[0-9A-Fa-f]{1,4}:)*[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:]*",
        )?,
        mac: r(r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}")?,
        dob: r(
            r"(?i)(?:(?-u:\b)dob|(?-u:\b)d\.o\.b\.|date of birth|birth ?date|(?-u:\b)born(?: on)?|geburtsdatum|geboren am|fecha de nacimiento|date de naissance|n[ée]e? le|data di nascita|data de nascimento|生年月日|出生日期|дата рождения)\s*[:\-]?\s*((?:[0-9]{4}-[0-9]{1,2}-[0-9]{1,2})|(?:[0-9]{1,2}[./\-][0-9]{1,2}[./\-](?:[0-9]{4}|[0-9]{2}))|(?:[0-9]{1,2}\.? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|januar|februar|märz|mai|juni|juli|oktober|dezember|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre)[a-z]*\.?,? [0-9]{4})|(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? [0-9]{1,2},? [0-9]{4})|(?:[0-9]{4}年[0-9]{1,2}月[0-9]{1,2}日))",
        )?,
        secret_whole: r(concat!(
            r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
            r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}",
            r"|glpat-[A-Za-z0-9_\-]{20,}",
            r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
            r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_]+",
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            r"|sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)[0-9]{2}-)?[A-Za-z0-9_\-]{20,}",
            r"|AIza[0-9A-Za-z_\-]{35}",
            r"|ya29\.[0-9A-Za-z_\-]{20,}",
            r"|hf_[A-Za-z0-9]{30,}",
            r"|npm_[A-Za-z0-9]{36}",
            r"|pypi-[A-Za-z0-9_\-]{50,}",
            r"|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
            r"|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}",
            r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
            r"|eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
            r"|-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?s:.)*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        ))?,
        secret_groups: vec![
            // scheme://user:PASSWORD@host
            r(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@?#'\x22<>]+:([^\s@/'\x22<>]+)@[A-Za-z0-9\[]")?,
            // Authorization: Bearer / Basic / token
            r(r"(?i)(?-u:\b)(?:bearer|token)\s+([A-Za-z0-9\-._~+/]{16,}=*)")?,
            r(r"(?i)(?-u:\b)authorization\s*[:=]\s*basic\s+([A-Za-z0-9+/]{8,}=*)")?,
            // password=..., api_key: "...", "secret": '...'
            r(
                r#"(?i)(?:^|[^A-Za-z0-9_])[A-Za-z0-9_]*?(?:password|passwd|pwd|passphrase|pass|secret|client_secret|api[_\-]?key|api[_\-]?secret|access[_\-]?key|secret[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|session[_\-]?token|private[_\-]?key|aws_secret_access_key|token)["']?[ \t]*(?:[:=]|=>|:=)[ \t]*(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"',;&<>)\]}]+))"#,
            )?,
        ],
    })
}

static DETECTORS: LazyLock<Option<Detectors>> = LazyLock::new(build);

/// Replaces personal data and secrets in `text` with typed placeholders.
///
/// Returns the text (borrowed when nothing was found) and the number of
/// replacements per kind. Should the detectors ever fail to build, the whole
/// text is withheld (`[removed: sanitizer unavailable]`): fail closed.
pub fn pii_redact(text: &str) -> (Cow<'_, str>, Counts) {
    let mut counts = Counts::new();
    let Some(d) = DETECTORS.as_ref() else {
        counts.add("sanitizer_error", 1);
        return (Cow::Owned("[removed: sanitizer unavailable]".to_owned()), counts);
    };
    let found = resolve(detect(d, text));
    let out = render(text, &found, &mut counts);
    (out, counts)
}

/// The findings `pii_redact` would replace, sorted by byte offset, without
/// overlaps.
pub fn find_pii(text: &str) -> Vec<Finding> {
    match DETECTORS.as_ref() {
        Some(d) => resolve(detect(d, text)),
        None => Vec::new(),
    }
}

fn hit(out: &mut Vec<Finding>, start: usize, end: usize, kind: PiiKind) {
    if end > start {
        out.push(Finding { start, end, kind: kind.as_str(), replacement: Cow::Borrowed(kind.placeholder()), priority: kind.priority() });
    }
}

/// No word character right before `start` or right after `end`.
fn bounded(text: &str, start: usize, end: usize) -> bool {
    !before(text, start).is_some_and(is_word) && !at(text, end).is_some_and(is_word)
}

fn detect(d: &Detectors, text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if text.len() < 5 {
        return out;
    }
    let has_at = text.contains('@');
    if has_at {
        emails(d, text, &mut out);
    }
    secrets(d, text, &mut out);
    let has_digit = text.bytes().any(|b| b.is_ascii_digit());
    if has_digit {
        ibans(d, text, &mut out);
        cards(d, text, &mut out);
        ssns(d, text, &mut out);
        ipv4s(d, text, &mut out);
        macs(d, text, &mut out);
        dobs(d, text, &mut out);
        phones(d, text, &mut out);
    }
    if text.contains(':') {
        ipv6s(d, text, &mut out);
    }
    out
}

fn emails(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.email.find_iter(text) {
        let mut start = m.start();
        let s = m.as_str();
        // A local part does not start with a dot or quote.
        let trimmed = s.trim_start_matches(['.', '\'']);
        start += s.len() - trimmed.len();
        let local = trimmed.split('@').next().unwrap_or("");
        if local.is_empty() || local.ends_with('.') {
            continue;
        }
        if at(text, m.end()).is_some_and(|c| is_word(c) || c == '@') {
            continue;
        }
        hit(out, start, m.end(), PiiKind::Email);
    }
}

fn secrets(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.secret_whole.find_iter(text) {
        let s = m.as_str();
        if s.starts_with("-----") || s.starts_with("https://") || bounded(text, m.start(), m.end()) {
            hit(out, m.start(), m.end(), PiiKind::Secret);
        }
    }
    for (i, re) in d.secret_groups.iter().enumerate() {
        for caps in re.captures_iter(text) {
            let Some(g) = caps.get(1).or_else(|| caps.get(2)).or_else(|| caps.get(3)) else { continue };
            let v = g.as_str();
            if i == 3 && !plausible_password(v, caps.get(0).map(|m| m.as_str()).unwrap_or("")) {
                continue;
            }
            if i == 1 && !v.bytes().any(|b| b.is_ascii_digit()) && v.len() < 24 {
                continue;
            }
            hit(out, g.start(), g.end(), PiiKind::Secret);
        }
    }
}

/// Screens out `password: required`, `token=null`, `${SECRET}` and the like.
fn plausible_password(v: &str, whole: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    if v.len() < 3
        || matches!(
            lower.as_str(),
            "null"
                | "none"
                | "nil"
                | "true"
                | "false"
                | "undefined"
                | "redacted"
                | "<redacted>"
                | "hidden"
                | "masked"
                | "required"
                | "optional"
                | "string"
                | "str"
                | "changeme"
                | "your_password"
                | "yourpassword"
                | "password"
                | "passwd"
                | "pwd"
                | "pass"
                | "secret"
                | "token"
                | "xxx"
                | "n/a"
                | "eof"
        )
        || v.chars().all(|c| c == '*' || c == 'x' || c == 'X' || c == '•' || c == '.')
        || v.starts_with("${")
        || v.starts_with("{{")
        || v.starts_with('$')
        || v.starts_with('%')
        || v.starts_with('<')
        || v.starts_with('[')
        || v.starts_with("os.")
        || v.starts_with("env")
        || v.starts_with("process.env")
    {
        return false;
    }
    // `Password: please` in prose: an unquoted colon form must look like a
    // credential, not a lowercase word.
    let quoted = whole.ends_with('"') || whole.ends_with('\'');
    // `token = lexer.get_token(` and `password = new_password` in code: an
    // unquoted value that is a call, or an identifier path without digits
    // after a spaced `=`, is a variable, not a credential.
    if !quoted {
        if v.contains(['(', '[']) {
            return false;
        }
        let spaced = whole.contains(" =") || whole.contains("= ");
        let identifier = v.chars().all(|c| c.is_ascii_alphabetic() || c == '_' || c == '.')
            && v.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if spaced && identifier {
            return false;
        }
    }
    if !quoted && whole.contains(':') && !whole.contains('=') {
        let wordy = v.chars().all(|c| c.is_lowercase()) || v.chars().all(|c| c.is_alphabetic()) && v.len() < 12;
        if wordy {
            return false;
        }
    }
    true
}

fn luhn(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut v = u32::from(*d);
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum.is_multiple_of(10)
}

fn digits_of(s: &str) -> Vec<u8> {
    s.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
}

fn prefix_num(d: &[u8], n: usize) -> u32 {
    d.iter().take(n).fold(0u32, |a, b| a * 10 + u32::from(*b))
}

fn card_issuer_ok(d: &[u8]) -> bool {
    let len = d.len();
    let p1 = prefix_num(d, 1);
    let p2 = prefix_num(d, 2);
    let p3 = prefix_num(d, 3);
    let p4 = prefix_num(d, 4);
    let p6 = prefix_num(d, 6);
    match p1 {
        4 => matches!(len, 13 | 16 | 19),
        5 => (51..=55).contains(&p2) && len == 16 || matches!(p2, 50 | 56..=59) && (12..=19).contains(&len),
        2 => (2221..=2720).contains(&p4) && len == 16,
        3 => {
            (matches!(p2, 34 | 37) && len == 15)
                || ((300..=305).contains(&p3) || matches!(p2, 36 | 38 | 39)) && (14..=19).contains(&len)
                || (3528..=3589).contains(&p4) && (16..=19).contains(&len)
        }
        6 => {
            (p4 == 6011 || p2 == 65 || (644..=649).contains(&p3) || (622126..=622925).contains(&p6)) && (16..=19).contains(&len)
                || p2 == 62 && (16..=19).contains(&len)
                || matches!(p2, 60 | 63 | 67) && (12..=19).contains(&len)
        }
        _ => false,
    }
}

fn cards(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.card.find_iter(text) {
        let s = m.as_str();
        if !bounded(text, m.start(), m.end()) {
            continue;
        }
        // A longer run of digit groups is something else (a table, an id).
        if at(text, m.end()).is_some_and(|c| c == '-' || c == '.')
            && text.get(m.end() + 1..).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_digit())
        {
            continue;
        }
        if before(text, m.start()).is_some_and(|c| c == '-' || c == '.' || c == '/')
            && text.get(..m.start().saturating_sub(1)).and_then(|r| r.chars().next_back()).is_some_and(|c| c.is_ascii_digit())
        {
            continue;
        }
        let seps: Vec<char> = s.chars().filter(|c| !c.is_ascii_digit()).collect();
        if seps.windows(2).any(|w| w.first() != w.last()) {
            continue;
        }
        let digits = digits_of(s);
        if (13..=19).contains(&digits.len()) && luhn(&digits) && card_issuer_ok(&digits) {
            hit(out, m.start(), m.end(), PiiKind::CreditCard);
        }
    }
}

fn ssn_valid(d: &[u8]) -> bool {
    if d.len() != 9 {
        return false;
    }
    let area = prefix_num(d, 3);
    let group = d.get(3..5).map(|g| prefix_num(g, 2)).unwrap_or(0);
    let serial = d.get(5..9).map(|g| prefix_num(g, 4)).unwrap_or(0);
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
        // Numbers published in advertising and never issued.
        && !(area == 78 && group == 5 && serial == 1120)
        && !(area == 219 && group == 9 && serial == 9999)
        && !(area == 123 && group == 45 && serial == 6789)
}

fn ssns(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.ssn.find_iter(text) {
        let s = m.as_str();
        if !bounded(text, m.start(), m.end()) {
            continue;
        }
        if at(text, m.end()).is_some_and(|c| c == '-') || before(text, m.start()).is_some_and(|c| c == '-') {
            continue;
        }
        let seps: Vec<char> = s.chars().filter(|c| !c.is_ascii_digit()).collect();
        if seps.first() != seps.last() {
            continue;
        }
        if ssn_valid(&digits_of(s)) {
            hit(out, m.start(), m.end(), PiiKind::UsSsn);
        }
    }
    for caps in d.ssn_bare.captures_iter(text) {
        if let Some(g) = caps.get(1) {
            if bounded(text, g.start(), g.end()) && ssn_valid(&digits_of(g.as_str())) {
                hit(out, g.start(), g.end(), PiiKind::UsSsn);
            }
        }
    }
}

/// IBAN lengths by country (SWIFT registry and the partner registry).
fn iban_len(cc: &str) -> Option<usize> {
    Some(match cc {
        "NO" => 15,
        "BE" => 16,
        "DK" | "FI" | "FO" | "GL" | "NL" => 18,
        "MK" | "SI" => 19,
        "AT" | "BA" | "EE" | "KZ" | "LT" | "LU" | "XK" => 20,
        "CH" | "CR" | "HR" | "LI" | "LV" => 21,
        "BG" | "BH" | "DE" | "GB" | "GE" | "IE" | "ME" | "RS" | "VA" => 22,
        "AE" | "GI" | "IL" | "IQ" | "TL" => 23,
        "AD" | "CZ" | "ES" | "MD" | "PK" | "RO" | "SA" | "SE" | "SK" | "TN" | "VG" => 24,
        "LY" | "PT" | "ST" => 25,
        "IS" | "TR" => 26,
        "FR" | "GR" | "IT" | "MC" | "MR" | "SM" => 27,
        "AL" | "AZ" | "BY" | "CY" | "DO" | "GT" | "HU" | "LB" | "PL" | "SV" => 28,
        "BR" | "EG" | "PS" | "QA" | "UA" => 29,
        "JO" | "KW" | "MU" => 30,
        "MT" | "SC" => 31,
        "LC" => 32,
        "RU" => 33,
        _ => return None,
    })
}

fn iban_mod97(chars: &[u8]) -> bool {
    // Move the first four characters to the end, letters become 10..35.
    let mut rem: u32 = 0;
    let rotated = chars.iter().skip(4).chain(chars.iter().take(4));
    for &c in rotated {
        if c.is_ascii_digit() {
            rem = (rem * 10 + u32::from(c - b'0')) % 97;
        } else if c.is_ascii_uppercase() {
            let v = u32::from(c - b'A') + 10;
            rem = (rem * 100 + v) % 97;
        } else {
            return false;
        }
    }
    rem == 1
}

fn ibans(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    let mut pos = 0usize;
    while let Some(m) = d.iban.find_at(text, pos) {
        let start = m.start();
        let s = m.as_str();
        let next_pos = ceil(text, start + 1);
        let Some(len) = s.get(0..2).map(str::to_ascii_uppercase).and_then(|cc| iban_len(&cc)) else {
            pos = next_pos;
            continue;
        };
        if before(text, start).is_some_and(is_word) {
            pos = next_pos;
            continue;
        }
        // Take exactly `len` alphanumerics, spaces allowed between them.
        let mut chars: Vec<u8> = Vec::with_capacity(len);
        let mut end = start;
        for (i, b) in s.bytes().enumerate() {
            if b.is_ascii_alphanumeric() {
                chars.push(b.to_ascii_uppercase());
                if chars.len() == len {
                    end = start + i + 1;
                    break;
                }
            }
        }
        if chars.len() == len && !at(text, end).is_some_and(is_word) && iban_mod97(&chars) {
            hit(out, start, end, PiiKind::Iban);
            pos = end;
        } else {
            pos = next_pos;
        }
        if pos >= text.len() {
            break;
        }
    }
}

fn ipv4s(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.ipv4.find_iter(text) {
        if !bounded(text, m.start(), m.end()) {
            continue;
        }
        if before(text, m.start()).is_some_and(|c| c == '.') {
            continue;
        }
        if at(text, m.end()).is_some_and(|c| c == '.') && text.get(m.end() + 1..).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_digit()) {
            continue;
        }
        if m.as_str().split('.').all(|o| o.parse::<u16>().is_ok_and(|v| v <= 255)) {
            hit(out, m.start(), m.end(), PiiKind::IpAddress);
        }
    }
}

fn ipv6s(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.ipv6.find_iter(text) {
        let mut s = m.as_str();
        let mut start = m.start();
        // Trim a stray leading or trailing colon (`host:` / `:8080`), keeping `::`.
        while s.starts_with(':') && !s.starts_with("::") {
            s = s.get(1..).unwrap_or("");
            start += 1;
        }
        while s.ends_with(':') && !s.ends_with("::") {
            s = s.get(..s.len() - 1).unwrap_or("");
        }
        let end = start + s.len();
        if s.len() < 3 || s.len() > 45 || !bounded(text, start, end) {
            continue;
        }
        if before(text, start).is_some_and(|c| c == ':' || c == '.') || at(text, end).is_some_and(|c| c == ':') {
            continue;
        }
        // `12:30:45` and MACs do not parse; require a digit and two groups so
        // `a::b` in code stays.
        let groups = s.split(':').filter(|g| !g.is_empty()).count();
        if !s.bytes().any(|b| b.is_ascii_digit()) || (groups < 2 && s != "::1") {
            continue;
        }
        if s.parse::<std::net::Ipv6Addr>().is_ok() {
            hit(out, start, end, PiiKind::IpAddress);
        }
    }
}

fn macs(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.mac.find_iter(text) {
        if bounded(text, m.start(), m.end())
            && !at(text, m.end()).is_some_and(|c| c == ':' || c == '-')
            && !before(text, m.start()).is_some_and(|c| c == ':' || c == '-')
        {
            hit(out, m.start(), m.end(), PiiKind::MacAddress);
        }
    }
}

fn dobs(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for caps in d.dob.captures_iter(text) {
        if let Some(g) = caps.get(1) {
            if !at(text, g.end()).is_some_and(|c| c.is_ascii_digit()) {
                hit(out, g.start(), g.end(), PiiKind::DateOfBirth);
            }
        }
    }
}

/// Words that make a bare digit string a phone number.
fn phone_context(text: &str, start: usize) -> bool {
    let from = floor(text, start.saturating_sub(40));
    let window = text.get(from..start).unwrap_or("").to_lowercase();
    [
        "phone", "tel", "mobile", "cell", "call", "fax", "whatsapp", "sms", "contact", "número", "numero", "telefon", "téléphone", "portable",
        "handy", "celular", "cellulare", "电话", "電話", "手机", "携帯", "телефон", "тел",
    ]
    .iter()
    .any(|w| window.contains(w))
}

/// The digit groups and separators of a short candidate, without allocating
/// (this runs for every window of every digit run).
struct Shape<'a> {
    plus: bool,
    paren: bool,
    groups: [usize; MAX_GROUPS],
    ng: usize,
    seps: [&'a str; MAX_GROUPS],
    /// The first digits, for prefix rules.
    lead: [u8; 6],
    n: usize,
}

const MAX_GROUPS: usize = 12;

impl<'a> Shape<'a> {
    fn groups(&self) -> &[usize] {
        self.groups.get(..self.ng).unwrap_or(&[])
    }
    fn seps(&self) -> &[&'a str] {
        self.seps.get(..self.ng.saturating_sub(1)).unwrap_or(&[])
    }
    fn d(&self, i: usize) -> u8 {
        self.lead.get(i).copied().unwrap_or(0)
    }
}

fn shape(s: &str) -> Option<Shape<'_>> {
    let mut sh =
        Shape { plus: s.starts_with('+'), paren: s.contains('('), groups: [0; MAX_GROUPS], ng: 0, seps: [""; MAX_GROUPS], lead: [0; 6], n: 0 };
    let mut cur = 0usize;
    let mut sep_start: Option<usize> = None;
    for (i, b) in s.bytes().enumerate() {
        if b.is_ascii_digit() {
            if cur == 0 && sh.ng > 0 {
                let slot = sh.seps.get_mut(sh.ng - 1)?;
                *slot = s.get(sep_start.unwrap_or(i)..i).unwrap_or("");
            }
            cur += 1;
            if let Some(l) = sh.lead.get_mut(sh.n) {
                *l = b - b'0';
            }
            sh.n += 1;
        } else if cur > 0 {
            *sh.groups.get_mut(sh.ng)? = cur;
            sh.ng += 1;
            cur = 0;
            sep_start = Some(i);
        }
    }
    if cur > 0 {
        *sh.groups.get_mut(sh.ng)? = cur;
        sh.ng += 1;
    }
    Some(sh)
}

fn is_date_shape(sh: &Shape<'_>) -> bool {
    let g = sh.groups();
    let all_same_sep = sh.seps().windows(2).all(|w| w.first() == w.last());
    let datey = sh.seps().iter().all(|s| *s == "-" || *s == "." || *s == "/");
    datey && all_same_sep && matches!(g, [4, 2, 2] | [2, 2, 4] | [1, 2, 4] | [2, 1, 4] | [1, 1, 4] | [2, 2, 2])
}

/// Whether `s` (a window of digit groups) is shaped like a phone number.
fn phone_shape_ok(s: &str, context: bool) -> bool {
    let Some(sh) = shape(s) else { return false };
    let n = sh.n;
    let g = sh.groups();
    let seps = sh.seps();
    if g.is_empty() || !(7..=15).contains(&n) {
        return false;
    }
    if seps.iter().any(|x| x.len() > 3) {
        return false;
    }
    if seps.iter().any(|x| x.contains('/')) && !(seps.len() == 1 && sh.d(0) == 0) {
        return false;
    }
    if is_date_shape(&sh) {
        return false;
    }
    // Dots and dashes mixed in one number is a version or a code.
    let has_dot = seps.iter().any(|x| x.contains('.'));
    let has_dash = seps.iter().any(|x| x.contains('-'));
    if has_dot && has_dash {
        return false;
    }
    let first = sh.d(0);
    if sh.plus {
        // E.164: country code 1-3 digits (never 0), 8 to 15 digits in all;
        // a last group of one digit is a decimal (+35236450.6).
        if g.len() >= 2 && g.last() == Some(&1) {
            return false;
        }
        return n >= 8 && first != 0 && (g.len() >= 2 || context || n >= 10);
    }
    let d = |i: usize| sh.d(i);
    // International prefix 00 instead of +: 0049 30 1234567.
    if d(0) == 0 && d(1) == 0 && d(2) != 0 && (10..=15).contains(&n) && g.len() >= 2 {
        return true;
    }
    // Spain: 612 34 56 78, 912 345 678 (mobiles 6/7, landlines 8/9).
    if (g == [3, 2, 2, 2] || g == [3, 3, 3]) && matches!(d(0), 6..=9) {
        let same = seps.windows(2).all(|w| w.first() == w.last());
        return same;
    }
    // US/NANP: (NXX) NXX-XXXX, NXX-NXX-XXXX, 1-NXX-NXX-XXXX.
    if g == [3, 3, 4] && d(0) >= 2 && d(3) >= 2 {
        let same = seps.windows(2).all(|w| w.first() == w.last());
        return same || sh.paren;
    }
    if g == [1, 3, 3, 4] && d(0) == 1 && d(1) >= 2 && d(4) >= 2 {
        return true;
    }
    // France: 0X XX XX XX XX.
    if g == [2, 2, 2, 2, 2] && first == 0 && d(1) != 0 {
        return true;
    }
    // India mobile: 98765 43210 (with a space: 60000-64999 is a range).
    if g == [5, 5] && d(0) >= 6 && seps.first().is_some_and(|x| *x == " ") {
        return true;
    }
    // China mobile: 138 1234 5678.
    if g == [3, 4, 4] && d(0) == 1 && d(1) >= 3 {
        return true;
    }
    // Brazil: (11) 91234-5678.
    if sh.paren && (10..=11).contains(&n) && g.len() >= 3 {
        return true;
    }
    // Trunk-prefixed national numbers (UK, DE, IT, JP, IN landlines, …):
    // 0 + area + subscriber in two to four groups; not a ZIP+4 (02110-1301).
    let zip4 = g == [5, 4] && seps.first().is_some_and(|x| *x == "-");
    if first == 0 && !zip4 && d(1) != 0 && (9..=12).contains(&n) && (2..=4).contains(&g.len()) && g.iter().all(|x| *x >= 2) {
        return true;
    }
    // A local number (555-0199) only with a phone word nearby.
    if g == [3, 4] && d(0) >= 2 && context && seps.first().is_some_and(|x| *x == "-") {
        return true;
    }
    // A single run of digits only with a phone word nearby.
    if g.len() == 1 && context {
        return (n == 10 && d(0) >= 2) || (n == 11 && (d(0) == 0 || (d(0) == 1 && d(1) >= 3)));
    }
    false
}

fn phones(d: &Detectors, text: &str, out: &mut Vec<Finding>) {
    for m in d.phone.find_iter(text) {
        let s = m.as_str();
        if s.len() < 7 {
            continue;
        }
        let base = m.start();
        if before(text, base).is_some_and(|c| is_word(c) || matches!(c, '#' | '$' | '€' | '£' | '¥' | '+')) {
            continue;
        }
        // `1.555…`, `12,555…`, `7-555…`: the candidate continues a number.
        if before(text, base).is_some_and(|c| matches!(c, '.' | ',' | '-' | '/' | ':'))
            && text.get(..base.saturating_sub(1)).and_then(|r| r.chars().next_back()).is_some_and(|c| c.is_ascii_digit())
        {
            continue;
        }
        // Group boundaries inside the candidate: (start, end) of each digit run.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut run_start: Option<usize> = None;
        for (i, b) in s.bytes().enumerate() {
            if b.is_ascii_digit() {
                if run_start.is_none() {
                    run_start = Some(i);
                }
            } else if let Some(st) = run_start.take() {
                runs.push((st, i));
            }
        }
        if let Some(st) = run_start {
            runs.push((st, s.len()));
        }
        let context = phone_context(text, base);
        let mut i = 0usize;
        while i < runs.len() {
            // A window may start at the candidate start or after a space.
            let win_start = if i == 0 {
                0
            } else {
                let Some(&(st, _)) = runs.get(i) else { break };
                let Some(&(_, prev_end)) = runs.get(i - 1) else { break };
                let between = s.get(prev_end..st).unwrap_or("");
                if between != " " {
                    i += 1;
                    continue;
                }
                st
            };
            let mut best: Option<usize> = None;
            let max_j = (i + 8).min(runs.len());
            for j in (i + 1..=max_j).rev() {
                let Some(&(_, end)) = runs.get(j - 1) else { continue };
                // A window ends at the candidate end or before a space.
                if j < runs.len() {
                    let Some(&(next_start, _)) = runs.get(j) else { continue };
                    if s.get(end..next_start).unwrap_or("") != " " {
                        continue;
                    }
                }
                let window = runs.get(i..j).unwrap_or(&[]);
                let ndigits: usize = window.iter().map(|(a, b)| b - a).sum();
                // No phone shape has more than two one-digit groups (`+33 (0)1 …`).
                let singles = window.iter().filter(|(a, b)| b - a == 1).count();
                if !(7..=15).contains(&ndigits) || singles > 2 {
                    continue;
                }
                let Some(w) = s.get(win_start..end) else { continue };
                // Without `+` or `(`, no phone shape has more than five groups,
                // nor more than four unless it starts with a trunk 0.
                let ng = j - i;
                if ng > 4 && !w.contains(['+', '(']) && (ng > 5 || !w.starts_with('0')) {
                    continue;
                }
                if phone_shape_ok(w, context) {
                    best = Some(j);
                    break;
                }
            }
            match best {
                Some(j) => {
                    let end = runs.get(j - 1).map(|r| r.1).unwrap_or(s.len());
                    let abs_end = base + end;
                    let glued = at(text, abs_end).is_some_and(|c| is_word(c) || c == '%');
                    let decimal = at(text, abs_end).is_some_and(|c| c == '.' || c == ',')
                        && text.get(abs_end + 1..).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_digit());
                    let ok_after = !glued && !decimal;
                    if ok_after {
                        hit(out, base + win_start, abs_end, PiiKind::Phone);
                    }
                    i = j;
                }
                None => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(s: &str) -> String {
        pii_redact(s).0.into_owned()
    }

    #[test]
    fn emails_and_phones() {
        assert_eq!(red("mail bob.smith+tag@example.co.uk now"), "mail [EMAIL] now");
        assert_eq!(red("邮箱：zhang.wei@example.cn，谢谢"), "邮箱：[EMAIL]，谢谢");
        assert_eq!(red("Call (415) 555-2671 today"), "Call [PHONE] today");
        assert_eq!(red("Tel: +44 20 7946 0958."), "Tel: [PHONE].");
        assert_eq!(red("Ruf an: 030 12345678"), "Ruf an: [PHONE]");
        assert_eq!(red("tél. 01 23 45 67 89"), "tél. [PHONE]");
        assert_eq!(red("電話03-1234-5678まで"), "電話[PHONE]まで");
        assert_eq!(red("+5511912345678"), "[PHONE]");
        for benign in [
            "released 2024-01-15 as v10.0.19041.1",
            "Order #123456789 shipped",
            "total $1,234.56 for 3 items",
            "build 1.2.3 on 15.01.2024 at 10:30",
            "invoice 2024-000123",
            "id 1234567890123",
        ] {
            assert_eq!(red(benign), benign);
        }
    }

    #[test]
    fn checksums() {
        assert_eq!(red("card 4111 1111 1111 1111 exp"), "card [CREDIT_CARD] exp");
        assert_eq!(red("card 4111 1111 1111 1112 exp"), "card 4111 1111 1111 1112 exp");
        assert_eq!(red("IBAN DE89 3704 0044 0532 0130 00 EUR"), "IBAN [IBAN] EUR");
        assert_eq!(red("IBAN DE89 3704 0044 0532 0130 01"), "IBAN DE89 3704 0044 0532 0130 01");
        assert_eq!(red("ssn 536-22-1234"), "ssn [US_SSN]");
        assert_eq!(red("ssn 666-22-1234"), "ssn 666-22-1234");
    }

    #[test]
    fn secrets_and_ips() {
        assert_eq!(red("key AKIAIOSFODNN7EXAMPLE"), "key [SECRET]");
        assert_eq!(red("postgres://app:s3cr3t@db.internal/x"), "postgres://app:[SECRET]@db.internal/x");
        assert_eq!(red("Authorization: Bearer abcdef1234567890abcdef"), "Authorization: Bearer [SECRET]");
        assert_eq!(red("password=hunter2 user=bob"), "password=[SECRET] user=bob");
        assert_eq!(red("Password: required"), "Password: required");
        assert_eq!(red("from 10.0.0.1 and 2001:db8::8a2e:370:7334"), "from [IP_ADDRESS] and [IP_ADDRESS]");
        assert_eq!(red("at 12:30:45 use std::io"), "at 12:30:45 use std::io");
        assert_eq!(red("mac 00:1A:2B:3C:4D:5E"), "mac [MAC_ADDRESS]");
        assert_eq!(red("DOB: 1985-03-12"), "DOB: [DATE_OF_BIRTH]");
    }
}
