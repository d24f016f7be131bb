//! The cel-lite lexer: source text to tokens, each with its byte offset.
//!
//! Follows CEL's lexical grammar: decimal and hex integers with an optional
//! `u` suffix, doubles, single-, double- and triple-quoted strings with CEL's
//! escapes, raw strings, `//` comments. Bytes literals are recognised only to
//! say that they are outside the subset.

use super::{CompileError, CODE_SYNTAX, CODE_UNSUPPORTED};

/// One token and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// An integer literal without its sign; the parser range-checks it.
    Int(u64),
    Uint(u64),
    Double(f64),
    Str(String),
    Ident(String),
    /// A backquoted field name, as in ``m.`content-type` ``.
    QuotedIdent(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    In,
    True,
    False,
    Null,
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Int(_) | Tok::Uint(_) | Tok::Double(_) => "a number".to_string(),
            Tok::Str(_) => "a string".to_string(),
            Tok::Ident(name) | Tok::QuotedIdent(name) => format!("`{}`", super::truncate(name, 40)),
            Tok::Eof => "the end of the expression".to_string(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Dot => ".",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Question => "?",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Bang => "!",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::In => "in",
            Tok::True => "true",
            Tok::False => "false",
            Tok::Null => "null",
            _ => "?",
        }
    }
}

/// Identifiers CEL reserves: not usable as names, usable as field names.
pub(crate) const RESERVED: &[&str] = &[
    "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void",
    "while",
];

pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, CompileError> {
    let mut lx = Lexer { src, bytes: src.as_bytes(), pos: 0, out: Vec::new() };
    lx.run()?;
    Ok(lx.out)
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn err(&self, at: usize, message: impl Into<String>) -> CompileError {
        CompileError::at(CODE_SYNTAX, message, self.src, at)
    }

    fn push(&mut self, kind: Tok, start: usize) {
        self.out.push(Token { kind, start, end: self.pos });
    }

    fn run(&mut self) -> Result<(), CompileError> {
        loop {
            // Whitespace and comments.
            match self.peek(0) {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                    self.pos += 1;
                    continue;
                }
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.peek(0) != b'\n' {
                        self.pos += 1;
                    }
                    continue;
                }
                _ => {}
            }
            let start = self.pos;
            if start >= self.bytes.len() {
                self.push(Tok::Eof, start);
                return Ok(());
            }
            let c = self.peek(0);
            let two = |a: u8, b: u8| c == a && self.peek(1) == b;
            let (tok, len) = if two(b'&', b'&') {
                (Tok::AndAnd, 2)
            } else if two(b'|', b'|') {
                (Tok::OrOr, 2)
            } else if two(b'=', b'=') {
                (Tok::EqEq, 2)
            } else if two(b'!', b'=') {
                (Tok::Ne, 2)
            } else if two(b'<', b'=') {
                (Tok::Le, 2)
            } else if two(b'>', b'=') {
                (Tok::Ge, 2)
            } else {
                let single = match c {
                    b'(' => Some(Tok::LParen),
                    b')' => Some(Tok::RParen),
                    b'[' => Some(Tok::LBracket),
                    b']' => Some(Tok::RBracket),
                    b'{' => Some(Tok::LBrace),
                    b'}' => Some(Tok::RBrace),
                    b',' => Some(Tok::Comma),
                    b':' => Some(Tok::Colon),
                    b'?' => Some(Tok::Question),
                    b'+' => Some(Tok::Plus),
                    b'-' => Some(Tok::Minus),
                    b'*' => Some(Tok::Star),
                    b'/' => Some(Tok::Slash),
                    b'%' => Some(Tok::Percent),
                    b'!' => Some(Tok::Bang),
                    b'<' => Some(Tok::Lt),
                    b'>' => Some(Tok::Gt),
                    b'.' if !self.peek(1).is_ascii_digit() => Some(Tok::Dot),
                    _ => None,
                };
                match single {
                    Some(t) => (t, 1),
                    None => {
                        self.complex(c, start)?;
                        continue;
                    }
                }
            };
            self.pos += len;
            self.push(tok, start);
        }
    }

    fn complex(&mut self, c: u8, start: usize) -> Result<(), CompileError> {
        if c.is_ascii_digit() || c == b'.' {
            return self.number(start);
        }
        if c == b'\'' || c == b'"' {
            let s = self.string(false)?;
            self.push(Tok::Str(s), start);
            return Ok(());
        }
        if c == b'`' {
            self.pos += 1;
            let body_start = self.pos;
            while self.pos < self.bytes.len() && !matches!(self.peek(0), b'`' | b'\n') {
                self.pos += 1;
            }
            if self.peek(0) != b'`' {
                return Err(self.err(start, "unterminated backquoted name"));
            }
            let name = self.src.get(body_start..self.pos).unwrap_or_default().to_string();
            self.pos += 1;
            if name.is_empty() {
                return Err(self.err(start, "empty backquoted name"));
            }
            self.push(Tok::QuotedIdent(name), start);
            return Ok(());
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                self.pos += 1;
            }
            let word = self.src.get(start..self.pos).unwrap_or_default();
            if matches!(self.peek(0), b'\'' | b'"') {
                let lower = word.to_ascii_lowercase();
                match lower.as_str() {
                    "r" => {
                        let s = self.string(true)?;
                        self.push(Tok::Str(s), start);
                        return Ok(());
                    }
                    "b" | "rb" | "br" => {
                        return Err(CompileError::at(CODE_UNSUPPORTED, "bytes literals are outside cel-lite; use a string", self.src, start));
                    }
                    _ => {}
                }
            }
            let tok = match word {
                "true" => Tok::True,
                "false" => Tok::False,
                "null" => Tok::Null,
                "in" => Tok::In,
                _ => Tok::Ident(word.to_string()),
            };
            self.push(tok, start);
            return Ok(());
        }
        let ch = self.src.get(start..).and_then(|s| s.chars().next()).unwrap_or('?');
        let message = match ch {
            '=' => "unexpected `=`; compare with `==`".to_string(),
            '&' => "unexpected `&`; the and operator is `&&`".to_string(),
            '|' => "unexpected `|`; the or operator is `||`".to_string(),
            _ => format!("unexpected character `{}`", ch.escape_debug()),
        };
        Err(self.err(start, message))
    }

    fn number(&mut self, start: usize) -> Result<(), CompileError> {
        let tok = if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.pos += 2;
            let digits_start = self.pos;
            while self.peek(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
            let digits = self.src.get(digits_start..self.pos).unwrap_or_default();
            let value = u64::from_str_radix(digits, 16).map_err(|_| self.err(start, "hex literal is empty or out of range"))?;
            self.int_suffix(value)
        } else {
            let mut is_float = false;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
            if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                is_float = true;
                self.pos += 1;
                while self.peek(0).is_ascii_digit() {
                    self.pos += 1;
                }
            }
            if matches!(self.peek(0), b'e' | b'E') {
                let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
                if self.peek(1 + sign).is_ascii_digit() {
                    is_float = true;
                    self.pos += 1 + sign;
                    while self.peek(0).is_ascii_digit() {
                        self.pos += 1;
                    }
                }
            }
            let text = self.src.get(start..self.pos).unwrap_or_default();
            if is_float {
                let value: f64 = text.parse().map_err(|_| self.err(start, format!("bad number `{text}`")))?;
                // A literal beyond f64's range would be an infinity, which
                // cel-lite refuses (canonical JSON has no form for it).
                if !value.is_finite() {
                    return Err(self.err(start, format!("double literal `{}` is out of range", super::truncate(text, 40))));
                }
                Tok::Double(value)
            } else {
                let value: u64 =
                    text.parse().map_err(|_| self.err(start, format!("integer literal `{}` is out of range", super::truncate(text, 40))))?;
                self.int_suffix(value)
            }
        };
        if self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
            return Err(self.err(self.pos, "unexpected character after a number"));
        }
        self.push(tok, start);
        Ok(())
    }

    fn int_suffix(&mut self, value: u64) -> Tok {
        if matches!(self.peek(0), b'u' | b'U') {
            self.pos += 1;
            Tok::Uint(value)
        } else {
            Tok::Int(value)
        }
    }

    /// Reads a quoted string starting at the opening quote.
    fn string(&mut self, raw: bool) -> Result<String, CompileError> {
        let open = self.pos;
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.peek(0);
            if self.pos >= self.bytes.len() {
                return Err(self.err(open, "unterminated string"));
            }
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += if triple { 3 } else { 1 };
                return Ok(out);
            }
            if !triple && (c == b'\n' || c == b'\r') {
                return Err(self.err(open, "unterminated string (a newline needs a triple-quoted string or `\\n`)"));
            }
            if c == b'\\' && !raw {
                let ch = self.escape()?;
                out.push(ch);
                continue;
            }
            // Copy one UTF-8 character.
            let rest = self.src.get(self.pos..).unwrap_or_default();
            match rest.chars().next() {
                Some(ch) => {
                    out.push(ch);
                    self.pos += ch.len_utf8();
                }
                None => return Err(self.err(open, "unterminated string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, CompileError> {
        let at = self.pos;
        let e = self.peek(1);
        self.pos += 2;
        let simple = match e {
            b'a' => Some('\u{7}'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'v' => Some('\u{b}'),
            b'\\' => Some('\\'),
            b'\'' => Some('\''),
            b'"' => Some('"'),
            b'`' => Some('`'),
            b'?' => Some('?'),
            _ => None,
        };
        if let Some(ch) = simple {
            return Ok(ch);
        }
        let (radix, len) = match e {
            b'0'..=b'3' => {
                self.pos -= 1;
                (8, 3)
            }
            b'x' | b'X' => (16, 2),
            b'u' => (16, 4),
            b'U' => (16, 8),
            _ => return Err(self.err(at, "invalid escape sequence")),
        };
        let digits = self.src.get(self.pos..self.pos + len).unwrap_or_default();
        if digits.len() != len || !digits.chars().all(|d| d.is_digit(radix)) {
            return Err(self.err(at, "invalid escape sequence"));
        }
        self.pos += len;
        u32::from_str_radix(digits, radix).ok().and_then(char::from_u32).ok_or_else(|| self.err(at, "escape sequence is not a valid code point"))
    }
}
