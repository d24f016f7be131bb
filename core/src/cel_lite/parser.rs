//! The cel-lite parser and checker: tokens to a compact tree, with every name,
//! function and macro resolved, nesting bounded and literal regexes compiled.
//!
//! Recursive descent over CEL's grammar:
//! `Expr = Or ['?' Or ':' Expr]`, `Or = And {'||' And}`, `And = Rel {'&&' Rel}`,
//! `Rel = Add {relop Add}`, `Add = Mul {('+'|'-') Mul}`, `Mul = Unary {('*'|'/'|'%') Unary}`,
//! `Unary = Member | '!'+ Member | '-'+ Member`, `Member = Primary {'.' IDENT ['(' args ')'] | '[' Expr ']'}`.

use regex::Regex;

use super::lexer::{Tok, Token, RESERVED};
use super::reads::Need;
use super::{
    CompileError, Options, CODE_BAD_REGEX, CODE_SYNTAX, CODE_TOO_DEEP, CODE_UNKNOWN_FUNCTION, CODE_UNKNOWN_NAME, CODE_UNSUPPORTED,
    CODE_WRONG_ARGUMENTS, MAX_PATTERN_LENGTH, REGEX_SIZE_LIMIT,
};

/// One node of the tree with the byte span of its source text.
#[derive(Debug)]
pub(crate) struct Expr {
    pub kind: Kind,
    pub start: u32,
    pub end: u32,
    depth: u16,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Box<str>),
    /// A variable, by its slot in the program's name list.
    Var(u16),
    /// A macro's iteration variable, by its nesting level.
    Local(u16),
    Select(Box<Expr>, Box<str>),
    /// `has(e.f)`.
    Has(Box<Expr>, Box<str>),
    Index(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a && b && …`, flattened.
    And(Vec<Expr>),
    /// `a || b || …`, flattened.
    Or(Vec<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Call(Func, Vec<Expr>),
    /// A list or map literal of constants, built once at load.
    Const(serde_json::Value),
    /// `s.matches('literal')`, the regex compiled at load.
    MatchesConst(Box<Expr>, Box<Regex>),
    Macro(Box<Comprehension>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Size,
    Int,
    Uint,
    Double,
    String,
    Dyn,
    StartsWith,
    EndsWith,
    Contains,
    Matches,
}

impl Func {
    pub fn name(self) -> &'static str {
        match self {
            Func::Size => "size",
            Func::Int => "int",
            Func::Uint => "uint",
            Func::Double => "double",
            Func::String => "string",
            Func::Dyn => "dyn",
            Func::StartsWith => "startsWith",
            Func::EndsWith => "endsWith",
            Func::Contains => "contains",
            Func::Matches => "matches",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MacroKind {
    Exists,
    All,
    ExistsOne,
    Map,
    Filter,
}

#[derive(Debug)]
pub(crate) struct Comprehension {
    pub kind: MacroKind,
    pub range: Expr,
    pub filter: Option<Expr>,
    pub body: Expr,
}

/// The tree, the names it uses (by slot) and what it reads of each.
pub(crate) fn parse(src: &str, tokens: Vec<Token>, options: &Options) -> Result<(Expr, Vec<String>, Vec<Need>), CompileError> {
    let mut p = Parser { src, toks: tokens, pos: 0, options, names: Vec::new(), needs: Vec::new(), scopes: Vec::new(), depth: 0 };
    let root = p.expr()?;
    let t = p.peek();
    if t.kind != Tok::Eof {
        let hint = match &t.kind {
            Tok::Ident(w) if w == "and" => "; the and operator is `&&`",
            Tok::Ident(w) if w == "or" => "; the or operator is `||`",
            Tok::Ident(w) if w == "if" => "; a condition is written `c ? a : b`",
            _ => "",
        };
        return Err(p.err_here(format!("expected the end of the expression but found {}{hint}", t.kind.describe())));
    }
    Ok((root, p.names, p.needs))
}

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    options: &'s Options,
    names: Vec<String>,
    /// What the tree reads of each name: every selection chain from a
    /// variable (`args.a.b`) is marked as it ends ([`Need::mark`]).
    needs: Vec<Need>,
    scopes: Vec<String>,
    depth: usize,
}

fn depth_of(kind: &Kind) -> u16 {
    let d = |e: &Expr| e.depth;
    let max = |es: &[Expr]| es.iter().map(|e| e.depth).max().unwrap_or(0);
    match kind {
        Kind::Null
        | Kind::Bool(_)
        | Kind::Int(_)
        | Kind::Uint(_)
        | Kind::Double(_)
        | Kind::Str(_)
        | Kind::Var(_)
        | Kind::Local(_)
        | Kind::Const(_) => 0,
        Kind::Select(e, _) | Kind::Has(e, _) | Kind::Not(e) | Kind::Neg(e) | Kind::MatchesConst(e, _) => d(e),
        Kind::Index(a, b) | Kind::Binary(_, a, b) => d(a).max(d(b)),
        Kind::And(es) | Kind::Or(es) | Kind::List(es) | Kind::Call(_, es) => max(es),
        Kind::Cond(a, b, c) => d(a).max(d(b)).max(d(c)),
        Kind::Map(entries) => entries.iter().map(|(k, v)| k.depth.max(v.depth)).max().unwrap_or(0),
        Kind::Macro(c) => d(&c.range).max(d(&c.body)).max(c.filter.as_ref().map_or(0, d)),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        static EOF: Token = Token { kind: Tok::Eof, start: 0, end: 0 };
        self.toks.get(self.pos + ahead).or_else(|| self.toks.last()).unwrap_or(&EOF)
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn at(&self, kind: &Tok) -> bool {
        &self.peek().kind == kind
    }

    fn eat(&mut self, kind: &Tok) -> bool {
        if self.at(kind) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn err_at(&self, code: &'static str, offset: usize, message: impl Into<String>) -> CompileError {
        CompileError::at(code, message, self.src, offset)
    }

    fn err_here(&self, message: impl Into<String>) -> CompileError {
        self.err_at(CODE_SYNTAX, self.peek().start, message)
    }

    fn expect(&mut self, kind: &Tok, what: &str) -> Result<Token, CompileError> {
        if self.at(kind) {
            Ok(self.bump())
        } else {
            Err(self.err_here(format!("expected {what} but found {}", self.peek().kind.describe())))
        }
    }

    fn node(&self, kind: Kind, start: usize, end: usize) -> Result<Expr, CompileError> {
        let depth = depth_of(&kind).saturating_add(1);
        if usize::from(depth) > self.options.max_depth {
            return Err(self.too_deep(start));
        }
        Ok(Expr { kind, start: to_u32(start), end: to_u32(end), depth })
    }

    fn too_deep(&self, at: usize) -> CompileError {
        self.err_at(CODE_TOO_DEEP, at, format!("expression nests deeper than {} levels", self.options.max_depth))
    }

    fn enter(&mut self) -> Result<(), CompileError> {
        self.depth += 1;
        if self.depth > self.options.max_depth {
            return Err(self.too_deep(self.peek().start));
        }
        Ok(())
    }

    fn prev_end(&self) -> usize {
        self.pos.checked_sub(1).and_then(|i| self.toks.get(i)).map_or(0, |t| t.end)
    }

    fn expr(&mut self) -> Result<Expr, CompileError> {
        self.enter()?;
        let r = self.ternary();
        self.depth -= 1;
        r
    }

    fn ternary(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let cond = self.or()?;
        if !self.eat(&Tok::Question) {
            return Ok(cond);
        }
        let then = self.or()?;
        self.expect(&Tok::Colon, "`:`")?;
        let otherwise = self.expr()?;
        let end = self.prev_end();
        self.node(Kind::Cond(Box::new(cond), Box::new(then), Box::new(otherwise)), start, end)
    }

    fn or(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let first = self.and()?;
        if !self.at(&Tok::OrOr) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(&Tok::OrOr) {
            items.push(self.and()?);
        }
        self.node(Kind::Or(items), start, self.prev_end())
    }

    fn and(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let first = self.relation()?;
        if !self.at(&Tok::AndAnd) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(&Tok::AndAnd) {
            items.push(self.relation()?);
        }
        self.node(Kind::And(items), start, self.prev_end())
    }

    fn relation(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let mut left = self.addition()?;
        loop {
            let op = match self.peek().kind {
                Tok::Lt => BinOp::Lt,
                Tok::Le => BinOp::Le,
                Tok::Gt => BinOp::Gt,
                Tok::Ge => BinOp::Ge,
                Tok::EqEq => BinOp::Eq,
                Tok::Ne => BinOp::Ne,
                Tok::In => BinOp::In,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.addition()?;
            left = self.node(Kind::Binary(op, Box::new(left), Box::new(right)), start, self.prev_end())?;
        }
    }

    fn addition(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let mut left = self.multiplication()?;
        loop {
            let op = match self.peek().kind {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.multiplication()?;
            left = self.node(Kind::Binary(op, Box::new(left), Box::new(right)), start, self.prev_end())?;
        }
    }

    fn multiplication(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let mut left = self.unary()?;
        loop {
            let op = match self.peek().kind {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.unary()?;
            left = self.node(Kind::Binary(op, Box::new(left), Box::new(right)), start, self.prev_end())?;
        }
    }

    fn unary(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        match self.peek().kind {
            Tok::Bang => {
                self.pos += 1;
                self.enter()?;
                let inner = self.unary();
                self.depth -= 1;
                self.node(Kind::Not(Box::new(inner?)), start, self.prev_end())
            }
            Tok::Minus => {
                self.pos += 1;
                // `-` right before an integer literal is part of the literal,
                // so that `-9223372036854775808` is an int.
                if let Tok::Int(magnitude) = self.peek().kind {
                    let lit_start = self.peek().start;
                    self.pos += 1;
                    let value = if magnitude == 1u64 << 63 {
                        i64::MIN
                    } else {
                        i64::try_from(magnitude)
                            .map(|v| -v)
                            .map_err(|_| self.err_at(CODE_SYNTAX, lit_start, "integer literal is out of range for an int"))?
                    };
                    let lit = self.node(Kind::Int(value), start, self.prev_end())?;
                    return self.member_suffix(lit, start);
                }
                self.enter()?;
                let inner = self.unary();
                self.depth -= 1;
                self.node(Kind::Neg(Box::new(inner?)), start, self.prev_end())
            }
            _ => self.member(),
        }
    }

    fn member(&mut self) -> Result<Expr, CompileError> {
        let start = self.peek().start;
        let primary = self.primary()?;
        self.member_suffix(primary, start)
    }

    fn member_suffix(&mut self, mut e: Expr, start: usize) -> Result<Expr, CompileError> {
        // The selection chain from a variable being built; any other use of
        // it (a call, an index, the end of the chain) reads its end whole.
        let mut chain = match e.kind {
            Kind::Var(slot) => Some((slot, Vec::new())),
            _ => None,
        };
        loop {
            if self.eat(&Tok::Dot) {
                let t = self.bump();
                match t.kind {
                    Tok::Ident(name) if self.at(&Tok::LParen) => {
                        self.read(chain.take());
                        e = self.method(e, name, t.start, start)?;
                    }
                    Tok::Ident(name) | Tok::QuotedIdent(name) => {
                        if let Some((_, fields)) = &mut chain {
                            fields.push(name.clone());
                        }
                        e = self.node(Kind::Select(Box::new(e), name.into()), start, t.end)?;
                    }
                    Tok::In | Tok::True | Tok::False | Tok::Null => {
                        return Err(self.err_at(CODE_SYNTAX, t.start, format!("{} cannot be a field name; use `[\"…\"]`", t.kind.describe())));
                    }
                    other => {
                        return Err(self.err_at(CODE_SYNTAX, t.start, format!("expected a field name after `.` but found {}", other.describe())))
                    }
                }
            } else if self.at(&Tok::LBracket) {
                self.read(chain.take());
                self.pos += 1;
                let index = self.expr()?;
                self.expect(&Tok::RBracket, "`]`")?;
                e = self.node(Kind::Index(Box::new(e), Box::new(index)), start, self.prev_end())?;
            } else {
                self.read(chain);
                return Ok(e);
            }
        }
    }

    /// Marks the end of a selection chain as read whole.
    fn read(&mut self, chain: Option<(u16, Vec<String>)>) {
        if let Some((slot, fields)) = chain {
            if let Some(need) = self.needs.get_mut(usize::from(slot)) {
                need.mark(&fields);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, CompileError> {
        let t = self.bump();
        let start = t.start;
        let end = t.end;
        match t.kind {
            Tok::Null => self.node(Kind::Null, start, end),
            Tok::True => self.node(Kind::Bool(true), start, end),
            Tok::False => self.node(Kind::Bool(false), start, end),
            Tok::Int(v) => {
                let v = i64::try_from(v).map_err(|_| self.err_at(CODE_SYNTAX, start, "integer literal is out of range for an int"))?;
                self.node(Kind::Int(v), start, end)
            }
            Tok::Uint(v) => self.node(Kind::Uint(v), start, end),
            Tok::Double(v) => self.node(Kind::Double(v), start, end),
            Tok::Str(s) => self.node(Kind::Str(s.into()), start, end),
            Tok::LParen => {
                let inner = self.expr()?;
                self.expect(&Tok::RParen, "`)`")?;
                Ok(inner)
            }
            Tok::LBracket => {
                let items = self.list_items(&Tok::RBracket, "`,` or `]`")?;
                self.node(fold(Kind::List(items)), start, self.prev_end())
            }
            Tok::LBrace => {
                let entries = self.map_entries()?;
                self.node(fold(Kind::Map(entries)), start, self.prev_end())
            }
            Tok::Dot => Err(self.err_at(CODE_UNSUPPORTED, start, "names with a leading `.` are outside cel-lite")),
            Tok::Ident(name) => {
                if self.at(&Tok::LParen) {
                    return self.global_call(name, start);
                }
                if self.at(&Tok::LBrace) {
                    return Err(self.err_at(
                        CODE_UNSUPPORTED,
                        start,
                        format!("message construction `{}{{…}}` is outside cel-lite", super::truncate(&name, 40)),
                    ));
                }
                let kind = self.resolve_name(&name, start)?;
                self.node(kind, start, end)
            }
            Tok::QuotedIdent(_) => Err(self.err_at(CODE_SYNTAX, start, "a backquoted name can only follow `.`")),
            other => Err(self.err_at(CODE_SYNTAX, start, format!("expected an expression but found {}", other.describe()))),
        }
    }

    fn resolve_name(&mut self, name: &str, at: usize) -> Result<Kind, CompileError> {
        if let Some(level) = self.scopes.iter().rposition(|s| s == name) {
            return Ok(Kind::Local(to_u16(level)));
        }
        if let Some(slot) = self.names.iter().position(|n| n == name) {
            return Ok(Kind::Var(to_u16(slot)));
        }
        if self.options.names.iter().any(|n| n == name) {
            self.names.push(name.to_string());
            self.needs.push(Need::default());
            return Ok(Kind::Var(to_u16(self.names.len() - 1)));
        }
        if RESERVED.contains(&name) {
            return Err(self.err_at(CODE_SYNTAX, at, format!("`{name}` is a reserved word")));
        }
        let mut known = self.options.names.iter().take(8).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        if self.options.names.len() > 8 {
            known.push_str(", …");
        }
        let hint = match name {
            "True" | "TRUE" => "; the literal is `true`",
            "False" | "FALSE" => "; the literal is `false`",
            "None" | "nil" | "NULL" | "Null" | "undefined" => "; the literal is `null`",
            "not" => "; negation is `!`",
            _ => "",
        };
        if !hint.is_empty() {
            return Err(self.err_at(CODE_UNKNOWN_NAME, at, format!("unknown name `{name}`{hint}")));
        }
        let in_scope = if self.scopes.is_empty() { String::new() } else { " or a macro variable".to_string() };
        Err(self.err_at(CODE_UNKNOWN_NAME, at, format!("unknown name `{}`; expressions can use {known}{in_scope}", super::truncate(name, 40))))
    }

    fn list_items(&mut self, close: &Tok, what: &str) -> Result<Vec<Expr>, CompileError> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.expr()?);
            if self.eat(close) {
                return Ok(items);
            }
            self.expect(&Tok::Comma, what)?;
        }
    }

    fn map_entries(&mut self) -> Result<Vec<(Expr, Expr)>, CompileError> {
        let mut entries = Vec::new();
        loop {
            if self.eat(&Tok::RBrace) {
                return Ok(entries);
            }
            let key = self.expr()?;
            self.expect(&Tok::Colon, "`:`")?;
            let value = self.expr()?;
            entries.push((key, value));
            if self.eat(&Tok::RBrace) {
                return Ok(entries);
            }
            self.expect(&Tok::Comma, "`,` or `}`")?;
        }
    }

    fn call_args(&mut self) -> Result<Vec<Expr>, CompileError> {
        self.expect(&Tok::LParen, "`(`")?;
        self.list_items(&Tok::RParen, "`,` or `)`")
    }

    fn global_call(&mut self, name: String, start: usize) -> Result<Expr, CompileError> {
        if name == "has" {
            let args_start = self.peek().start;
            let mut args = self.call_args()?;
            let end = self.prev_end();
            let arg = match (args.pop(), args.is_empty()) {
                (Some(arg), true) => arg,
                _ => return Err(self.err_at(CODE_WRONG_ARGUMENTS, args_start, "`has` takes one field selection, as in `has(args.amount)`")),
            };
            return match arg.kind {
                Kind::Select(operand, field) => self.node(Kind::Has(operand, field), start, end),
                _ => Err(self.err_at(CODE_WRONG_ARGUMENTS, arg.start as usize, "`has` takes a field selection, as in `has(args.amount)`")),
            };
        }
        let func = match name.as_str() {
            "size" => Func::Size,
            "int" => Func::Int,
            "uint" => Func::Uint,
            "double" => Func::Double,
            "string" => Func::String,
            "matches" => Func::Matches,
            "dyn" if self.options.dyn_identity => Func::Dyn,
            "startsWith" | "endsWith" | "contains" | "exists" | "all" | "exists_one" | "map" | "filter" => {
                return Err(self.err_at(CODE_UNKNOWN_FUNCTION, start, format!("`{name}` is called on a value, as in `x.{name}(…)`")));
            }
            _ => return Err(self.unknown_function(&name, start)),
        };
        let mut args = self.call_args()?;
        let want = if func == Func::Matches { 2 } else { 1 };
        self.check_arity(func.name(), args.len(), want, start)?;
        let end = self.prev_end();
        if func == Func::Matches {
            let pattern = args.pop();
            let text = args.pop();
            if let (Some(text), Some(pattern)) = (text, pattern) {
                return self.matches(text, pattern, start, end);
            }
        }
        self.node(Kind::Call(func, args), start, end)
    }

    fn unknown_function(&self, name: &str, at: usize) -> CompileError {
        let hint = match name {
            "len" | "length" | "count" => Some("size"),
            "startswith" | "starts_with" => Some("startsWith"),
            "endswith" | "ends_with" => Some("endsWith"),
            "any" | "some" => Some("exists"),
            "every" => Some("all"),
            "regex" | "match" | "test" => Some("matches"),
            "str" => Some("string"),
            "float" => Some("double"),
            _ => None,
        };
        if let Some(instead) = hint {
            return self.err_at(CODE_UNKNOWN_FUNCTION, at, format!("unknown function `{name}`; did you mean `{instead}`?"));
        }
        self.err_at(
            CODE_UNKNOWN_FUNCTION,
            at,
            format!(
                "unknown function `{}`; cel-lite has size, has, startsWith, endsWith, contains, matches, int, uint, double, string, exists, all, exists_one, map and filter",
                super::truncate(name, 40)
            ),
        )
    }

    fn check_arity(&self, name: &str, got: usize, want: usize, at: usize) -> Result<(), CompileError> {
        if got == want {
            return Ok(());
        }
        let plural = if want == 1 { "" } else { "s" };
        Err(self.err_at(CODE_WRONG_ARGUMENTS, at, format!("`{name}` takes {want} argument{plural}, not {got}")))
    }

    fn method(&mut self, receiver: Expr, name: String, name_at: usize, start: usize) -> Result<Expr, CompileError> {
        let kind = match name.as_str() {
            "exists" => Some(MacroKind::Exists),
            "all" => Some(MacroKind::All),
            "exists_one" => Some(MacroKind::ExistsOne),
            "map" => Some(MacroKind::Map),
            "filter" => Some(MacroKind::Filter),
            _ => None,
        };
        if let Some(kind) = kind {
            return self.comprehension(receiver, kind, &name, name_at, start);
        }
        let func = match name.as_str() {
            "size" => Func::Size,
            "startsWith" => Func::StartsWith,
            "endsWith" => Func::EndsWith,
            "contains" => Func::Contains,
            "matches" => Func::Matches,
            "int" | "uint" | "double" | "string" | "has" | "dyn" => {
                return Err(self.err_at(CODE_UNKNOWN_FUNCTION, name_at, format!("`{name}` is called as a function, as in `{name}(x)`")));
            }
            _ => return Err(self.unknown_function(&name, name_at)),
        };
        let mut args = self.call_args()?;
        let want = usize::from(func != Func::Size);
        self.check_arity(func.name(), args.len(), want, name_at)?;
        let end = self.prev_end();
        if func == Func::Matches {
            if let Some(pattern) = args.pop() {
                return self.matches(receiver, pattern, start, end);
            }
        }
        args.insert(0, receiver);
        self.node(Kind::Call(func, args), start, end)
    }

    fn matches(&mut self, text: Expr, pattern: Expr, start: usize, end: usize) -> Result<Expr, CompileError> {
        if let Kind::Str(p) = &pattern.kind {
            let regex = build_regex(p).map_err(|m| self.err_at(CODE_BAD_REGEX, pattern.start as usize, m))?;
            return self.node(Kind::MatchesConst(Box::new(text), Box::new(regex)), start, end);
        }
        self.node(Kind::Call(Func::Matches, vec![text, pattern]), start, end)
    }

    fn comprehension(&mut self, range: Expr, kind: MacroKind, name: &str, name_at: usize, start: usize) -> Result<Expr, CompileError> {
        self.expect(&Tok::LParen, "`(`")?;
        let usage = if kind == MacroKind::Map {
            format!("`{name}` takes a variable name and an expression, as in `list.{name}(x, x * 2)`")
        } else {
            format!("`{name}` takes a variable name and a condition, as in `list.{name}(x, x > 0)`")
        };
        let var = match (&self.peek().kind, &self.peek_at(1).kind) {
            (Tok::Ident(v), Tok::Comma) => v.clone(),
            _ => return Err(self.err_at(CODE_WRONG_ARGUMENTS, name_at, usage)),
        };
        if RESERVED.contains(&var.as_str()) {
            return Err(self.err_here(format!("`{var}` is a reserved word")));
        }
        self.pos += 2;
        self.scopes.push(var);
        let first = self.expr();
        let result = first.and_then(|first| {
            if kind == MacroKind::Map && self.eat(&Tok::Comma) {
                let body = self.expr()?;
                Ok((Some(first), body))
            } else {
                Ok((None, first))
            }
        });
        self.scopes.pop();
        let (filter, body) = result?;
        if !self.at(&Tok::RParen) {
            return Err(self.err_at(CODE_WRONG_ARGUMENTS, self.peek().start, usage));
        }
        self.pos += 1;
        let c = Comprehension { kind, range, filter, body };
        self.node(Kind::Macro(Box::new(c)), start, self.prev_end())
    }
}

/// Builds a list or map literal whose items are all constants once, at load,
/// so that `x in ['a', 'b']` allocates nothing per evaluation. Only values
/// whose JSON form reads back as the same CEL value are folded (no uint, no
/// NaN or infinity, string keys only, no repeated keys: those stay runtime).
fn fold(kind: Kind) -> Kind {
    fn constant(e: &Expr) -> Option<serde_json::Value> {
        use serde_json::Value;
        match &e.kind {
            Kind::Null => Some(Value::Null),
            Kind::Bool(b) => Some(Value::Bool(*b)),
            Kind::Int(i) => Some(Value::from(*i)),
            Kind::Double(d) => serde_json::Number::from_f64(*d).map(Value::Number),
            Kind::Str(s) => Some(Value::String(s.to_string())),
            Kind::Const(v) => Some(v.clone()),
            _ => None,
        }
    }
    match kind {
        Kind::List(items) => match items.iter().map(constant).collect::<Option<Vec<_>>>() {
            Some(values) => Kind::Const(serde_json::Value::Array(values)),
            None => Kind::List(items),
        },
        Kind::Map(entries) => {
            let mut map = serde_json::Map::new();
            for (k, v) in &entries {
                let (Kind::Str(key), Some(value)) = (&k.kind, constant(v)) else { return Kind::Map(entries) };
                if map.insert(key.to_string(), value).is_some() {
                    return Kind::Map(entries);
                }
            }
            Kind::Const(serde_json::Value::Object(map))
        }
        other => other,
    }
}

/// Compiles a pattern with cel-lite's limits (linear-time engine, bounded
/// size); the error is a one-line message.
pub(crate) fn build_regex(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_LENGTH {
        return Err(format!("pattern is {} bytes, more than the limit of {MAX_PATTERN_LENGTH}", pattern.len()));
    }
    regex::RegexBuilder::new(pattern).size_limit(REGEX_SIZE_LIMIT).dfa_size_limit(REGEX_SIZE_LIMIT).nest_limit(64).build().map_err(|e| match e {
        regex::Error::CompiledTooBig(limit) => {
            format!("pattern compiles to more than the limit of {limit} bytes")
        }
        regex::Error::Syntax(text) => {
            let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("invalid pattern");
            format!("invalid pattern: {}", last.trim().trim_start_matches("error: "))
        }
        _ => "invalid pattern".to_string(),
    })
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn to_u16(v: usize) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}
