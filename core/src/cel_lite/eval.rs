//! The cel-lite evaluator: a tree walk over borrowed values with CEL's
//! semantics and a budget.
//!
//! Every node evaluated, every item scanned and every 64 bytes of string read
//! costs from a budget ([`super::MAX_COST`] by default), and every string or
//! list built is charged against an allocation budget, so no input makes an
//! evaluation run or allocate without bound: it becomes unevaluable instead.
//! Errors are reasons (strings) that name the part of the expression that
//! failed; `&&`, `||`, `exists` and `all` absorb them as CEL does.

use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::cmp::Ordering;
use std::rc::Rc;

use super::parser::{build_regex, BinOp, Comprehension, Expr, Func, Kind, MacroKind};
use super::value::{cmp_num, double_to_int, double_to_uint, format_double, CelValue, Val};
use super::{truncate, Bindings, Part, Program, MAX_ALLOC_BYTES, MAX_LIST_ITEMS, MAX_STRING_BYTES};

/// How deep values may nest when compared or converted.
const MAX_VALUE_DEPTH: usize = 128;

/// What the caller wants back.
pub(crate) enum Want {
    Json,
    Cel,
    Bool,
}

pub(crate) enum Done {
    Json(Value),
    Cel(CelValue),
    Bool(bool),
}

type R<T> = Result<T, String>;

const SLOTS: usize = 8;

/// Evaluates `program` against `vars`, or against the `parts` a host gathered
/// (one per read of the program) when given.
pub(crate) fn run<B: Bindings + ?Sized>(program: &Program, vars: &B, parts: Option<&[Part]>, want: Want) -> R<Done> {
    // Variables are looked up when first read: a host whose bindings build
    // values on demand builds only those the evaluation reaches.
    let fixed: [Slot<'_>; SLOTS] = Default::default();
    let heap: Vec<Slot<'_>>;
    let slots: &[Slot<'_>] = if program.names.len() <= SLOTS {
        fixed.get(..program.names.len()).unwrap_or_default()
    } else {
        heap = program.names.iter().map(|_| Slot::default()).collect();
        &heap
    };
    let resolve = |name: &str| vars.binding(name);
    let mut cx = Cx {
        src: &program.source,
        names: &program.names,
        slots,
        resolve: &resolve,
        parts: parts.map(|parts| (program, parts)),
        locals: Vec::new(),
        cost: program.max_cost,
        alloc: MAX_ALLOC_BYTES,
        exhausted: false,
        regex_cache: None,
    };
    let v = cx.eval(&program.root)?;
    match want {
        Want::Bool => match v {
            Val::Bool(b) => Ok(Done::Bool(b)),
            other => Err(format!("the expression gave {}, not a bool", other.a_type())),
        },
        Want::Json => to_json(&v, 0).map(Done::Json),
        Want::Cel => to_cel(&v, 0).map(Done::Cel),
    }
}

/// The value of the part of read `read`; `None` when absent.
fn part(parts: &[Part], read: usize) -> Option<Val<'_>> {
    match parts.get(read)? {
        Part::Absent => None,
        Part::Map => Some(Val::Part(read)),
        Part::Value(v) => Some(Val::from_json(v)),
    }
}

/// A variable's binding once looked up (`Some(None)`: unbound).
type Slot<'a> = Cell<Option<Option<&'a Value>>>;

struct Cx<'a, 's> {
    src: &'a str,
    names: &'a [String],
    slots: &'s [Slot<'a>],
    resolve: &'s dyn Fn(&str) -> Option<&'a Value>,
    /// The parts gathered by a host, with the program whose reads they follow.
    parts: Option<(&'a Program, &'a [Part])>,
    locals: Vec<Val<'a>>,
    cost: u64,
    alloc: u64,
    exhausted: bool,
    regex_cache: Option<(String, regex::Regex)>,
}

#[cold]
fn internal() -> String {
    "internal: unbound macro variable".to_string()
}

#[cold]
fn budget_reason() -> String {
    "evaluation exceeded its cost limit".to_string()
}

fn size_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl<'a> Cx<'a, '_> {
    /// The value bound to variable `slot`, looked up on first use.
    fn var(&self, slot: usize) -> Option<&'a Value> {
        let cell = self.slots.get(slot)?;
        if let Some(found) = cell.get() {
            return found;
        }
        let found = self.names.get(slot).and_then(|name| (self.resolve)(name));
        cell.set(Some(found));
        found
    }

    fn charge(&mut self, units: u64) -> R<()> {
        if self.exhausted || units > self.cost {
            self.exhausted = true;
            self.cost = 0;
            return Err(budget_reason());
        }
        self.cost -= units;
        Ok(())
    }

    /// Charges the scan of `bytes` bytes of string.
    fn charge_scan(&mut self, bytes: usize) -> R<()> {
        self.charge(1 + size_u64(bytes / 64))
    }

    fn allocate(&mut self, bytes: u64) -> R<()> {
        if bytes > self.alloc {
            self.exhausted = true;
            self.cost = 0;
            return Err("evaluation exceeded its memory limit".to_string());
        }
        self.alloc -= bytes;
        Ok(())
    }

    /// The source text of a node, cut short.
    fn snip(&self, e: &Expr) -> String {
        let text = self.src.get(e.start as usize..e.end as usize).unwrap_or("?");
        truncate(text, 48)
    }

    /// A double that cel-lite may hold: NaN and the infinities make the
    /// expression unevaluable (a deny rule denies, an approval asks), as
    /// canonical JSON refuses them; CEL itself would carry them on, and a NaN
    /// compares false with everything, which would skip a rule.
    #[inline]
    fn finite(&self, d: f64, e: &Expr) -> R<Val<'a>> {
        if d.is_finite() {
            Ok(Val::Double(d))
        } else {
            Err(self.not_finite(e))
        }
    }

    #[cold]
    fn not_finite(&self, e: &Expr) -> String {
        self.no_overload("not a finite double (NaN or infinity)", e)
    }

    #[cold]
    fn no_overload(&self, what: &str, e: &Expr) -> String {
        format!("{what} in `{}`", self.snip(e))
    }

    /// The hot path: literals, variables, selection, operators. Everything
    /// else is out of line so this frame stays small.
    fn eval(&mut self, e: &'a Expr) -> R<Val<'a>> {
        match &e.kind {
            Kind::Select(operand, field) => {
                self.charge(1)?;
                let base = self.operand(operand)?;
                match &base {
                    Val::JMap(map) => map.get(&**field).map(Val::from_json),
                    Val::Part(read) => self.field_part(*read, field),
                    _ => None,
                }
                .map_or_else(|| self.select(&base, field, operand), Ok)
            }
            Kind::Not(inner) => {
                self.charge(1)?;
                match self.eval(inner)? {
                    Val::Bool(b) => Ok(Val::Bool(!b)),
                    other => Err(self.not_bool(&other, e)),
                }
            }
            Kind::Binary(op, left, right) => {
                self.charge(1)?;
                let l = self.operand(left)?;
                let r = self.operand(right)?;
                self.binary(*op, l, r, e)
            }
            Kind::And(items) => {
                self.charge(1)?;
                self.logic(items, false)
            }
            Kind::Or(items) => {
                self.charge(1)?;
                self.logic(items, true)
            }
            _ => self.operand(e),
        }
    }

    /// Literals and variables without a call of their own (the leaves of
    /// most expressions); anything else through [`Cx::eval`] or out of line.
    #[inline(always)]
    fn operand(&mut self, e: &'a Expr) -> R<Val<'a>> {
        match &e.kind {
            Kind::Select(..) | Kind::Not(_) | Kind::Binary(..) | Kind::And(_) | Kind::Or(_) => return self.eval(e),
            _ => self.charge(1)?,
        }
        match &e.kind {
            Kind::Null => Ok(Val::Null),
            Kind::Bool(b) => Ok(Val::Bool(*b)),
            Kind::Int(i) => Ok(Val::Int(*i)),
            Kind::Uint(u) => Ok(Val::Uint(*u)),
            Kind::Double(d) => Ok(Val::Double(*d)),
            Kind::Str(s) => Ok(Val::Str(s)),
            Kind::Const(v) => Ok(Val::from_json(v)),
            Kind::Var(slot) => {
                if let Some((program, parts)) = self.parts {
                    let read = program.roots.get(usize::from(*slot)).copied().unwrap_or(usize::MAX);
                    return part(parts, read).ok_or_else(|| self.unset(*slot));
                }
                match self.var(usize::from(*slot)) {
                    Some(v) => Ok(Val::from_json(v)),
                    None => Err(self.unset(*slot)),
                }
            }
            Kind::Local(level) => match self.locals.get(usize::from(*level)) {
                Some(v) => Ok(v.clone()),
                None => Err(internal()),
            },
            _ => self.eval_rest(e),
        }
    }

    #[cold]
    fn not_bool(&self, other: &Val<'_>, e: &Expr) -> String {
        self.no_overload(&format!("`!` needs a bool, not {}", other.a_type()), e)
    }

    #[cold]
    fn unset(&self, slot: u16) -> String {
        let name = self.names.get(usize::from(slot)).map_or("?", String::as_str);
        format!("`{name}` is not set")
    }

    /// Every other kind (already charged).
    #[inline(never)]
    fn eval_rest(&mut self, e: &'a Expr) -> R<Val<'a>> {
        match &e.kind {
            Kind::Has(operand, field) => {
                let base = self.eval(operand)?;
                match &base {
                    Val::JMap(map) => Ok(Val::Bool(map.contains_key(&**field))),
                    Val::Part(read) => Ok(Val::Bool(self.field_part(*read, field).is_some())),
                    Val::Map(_) => Ok(Val::Bool(self.lookup(&base, &Val::Str(field))?.is_some())),
                    other => Err(format!("`has` needs a map but `{}` is {}", self.snip(operand), other.a_type())),
                }
            }
            Kind::Index(operand, index) => {
                let base = self.eval(operand)?;
                let key = self.eval(index)?;
                self.index(&base, &key, operand, e)
            }
            Kind::Neg(inner) => match self.eval(inner)? {
                Val::Int(i) => i.checked_neg().map(Val::Int).ok_or_else(|| self.no_overload("int overflow", e)),
                Val::Double(d) => Ok(Val::Double(-d)),
                other => Err(self.no_overload(&format!("`-` needs an int or double, not {}", other.a_type()), e)),
            },
            Kind::Cond(cond, then, otherwise) => match self.eval(cond)? {
                Val::Bool(true) => self.eval(then),
                Val::Bool(false) => self.eval(otherwise),
                other => Err(format!("the condition `{}` is {}, not a bool", self.snip(cond), other.a_type())),
            },
            Kind::List(items) => {
                self.allocate(size_u64(items.len()) * 32)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.eval(item)?);
                }
                Ok(Val::List(Rc::new(out)))
            }
            Kind::Map(entries) => self.map_literal(entries),
            Kind::Call(func, args) => self.call(*func, args, e),
            Kind::MatchesConst(text, regex) => {
                let t = self.eval(text)?;
                match t.as_str() {
                    Some(s) => {
                        self.charge_scan(s.len())?;
                        Ok(Val::Bool(regex.is_match(s)))
                    }
                    None => Err(self.no_overload(&format!("`matches` needs a string, not {}", t.a_type()), e)),
                }
            }
            Kind::Macro(c) => self.comprehension(c, e),
            // The hot kinds are handled in `eval` and never reach here.
            _ => Err("internal: unexpected expression kind".to_string()),
        }
    }

    /// `&&` (stop at false) and `||` (stop at true), commutative: an error or
    /// a non-bool on one side is absorbed when another side decides.
    #[inline(never)]
    fn logic(&mut self, items: &'a [Expr], stop_at: bool) -> R<Val<'a>> {
        let mut first_error: Option<String> = None;
        for item in items {
            match self.eval(item) {
                Ok(Val::Bool(b)) if b == stop_at => return Ok(Val::Bool(stop_at)),
                Ok(Val::Bool(_)) => {}
                Ok(other) => {
                    if first_error.is_none() {
                        let op = if stop_at { "||" } else { "&&" };
                        first_error = Some(format!("`{op}` needs bools but `{}` is {}", self.snip(item), other.a_type()));
                    }
                }
                Err(reason) => {
                    if self.exhausted {
                        return Err(reason);
                    }
                    first_error.get_or_insert(reason);
                }
            }
        }
        match first_error {
            Some(reason) => Err(reason),
            None => Ok(Val::Bool(!stop_at)),
        }
    }

    #[inline(never)]
    fn select(&mut self, base: &Val<'a>, field: &str, operand: &Expr) -> R<Val<'a>> {
        match base {
            Val::JMap(map) => match map.get(field) {
                Some(v) => Ok(Val::from_json(v)),
                None => Err(format!("no such key `{}` in `{}`", truncate(field, 40), self.snip(operand))),
            },
            Val::Map(_) => match self.lookup(base, &Val::Str(field))? {
                Some(v) => Ok(v),
                None => Err(format!("no such key `{}` in `{}`", truncate(field, 40), self.snip(operand))),
            },
            Val::Part(read) => match self.field_part(*read, field) {
                Some(v) => Ok(v),
                None => Err(format!("no such key `{}` in `{}`", truncate(field, 40), self.snip(operand))),
            },
            other => Err(format!("cannot select `{}` from `{}`, {}", truncate(field, 40), self.snip(operand), other.a_type())),
        }
    }

    /// The field `field` of the map gathered for read `read`; `None` when absent.
    fn field_part(&self, read: usize, field: &str) -> Option<Val<'a>> {
        let (program, parts) = self.parts?;
        let child = program.reads.iter().enumerate().skip(read + 1).find(|(_, r)| r.parent == Some(read) && r.name == field)?.0;
        part(parts, child)
    }

    /// Looks a key up in a map; `None` when absent.
    fn lookup(&mut self, map: &Val<'a>, key: &Val<'_>) -> R<Option<Val<'a>>> {
        match map {
            Val::JMap(m) => Ok(key.as_str().and_then(|k| m.get(k)).map(Val::from_json)),
            Val::Map(entries) => {
                self.charge(size_u64(entries.len()))?;
                for (k, v) in entries.iter() {
                    if key_eq(k, key) {
                        return Ok(Some(v.clone()));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    fn index(&mut self, base: &Val<'a>, key: &Val<'a>, operand: &Expr, e: &Expr) -> R<Val<'a>> {
        if base.is_map() {
            if !matches!(key, Val::Int(_) | Val::Uint(_) | Val::Double(_) | Val::Bool(_) | Val::Str(_) | Val::OwnedStr(_)) {
                return Err(self.no_overload(&format!("a map key cannot be {}", key.a_type()), e));
            }
            return match self.lookup(base, key)? {
                Some(v) => Ok(v),
                None => Err(format!("no such key {} in `{}`", describe_key(key), self.snip(operand))),
            };
        }
        let len = match base.len() {
            Some(len) if base.is_list() => len,
            _ => {
                return Err(format!("cannot index `{}`, {}", self.snip(operand), base.a_type()));
            }
        };
        let i: Option<i128> = match key {
            Val::Int(i) => Some(i128::from(*i)),
            Val::Uint(u) => Some(i128::from(*u)),
            Val::Double(d) => double_to_int(*d).filter(|i| (*i as f64) == *d).map(i128::from),
            _ => None,
        };
        let Some(i) = i else {
            return Err(self.no_overload(&format!("a list index must be an int, not {}", key.a_type()), e));
        };
        let item = usize::try_from(i).ok().and_then(|i| match base {
            Val::List(items) => items.get(i).cloned(),
            Val::JList(items) => items.get(i).map(Val::from_json),
            _ => None,
        });
        item.ok_or_else(|| format!("index {i} is out of range for `{}` of size {len}", self.snip(operand)))
    }

    fn map_literal(&mut self, entries: &'a [(Expr, Expr)]) -> R<Val<'a>> {
        self.allocate(size_u64(entries.len()) * 64)?;
        let mut out: Vec<(Val<'a>, Val<'a>)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let key = self.eval(k)?;
            if !matches!(key, Val::Int(_) | Val::Uint(_) | Val::Bool(_) | Val::Str(_) | Val::OwnedStr(_)) {
                return Err(format!("unsupported key type: `{}` is {}", self.snip(k), key.a_type()));
            }
            self.charge(size_u64(out.len()))?;
            if out.iter().any(|(existing, _)| key_eq(existing, &key)) {
                return Err(format!("repeated key {} in a map literal", describe_key(&key)));
            }
            let value = self.eval(v)?;
            out.push((key, value));
        }
        Ok(Val::Map(Rc::new(out)))
    }

    #[inline(never)]
    fn binary(&mut self, op: BinOp, l: Val<'a>, r: Val<'a>, e: &Expr) -> R<Val<'a>> {
        match op {
            BinOp::Eq => Ok(Val::Bool(self.equals(&l, &r, 0)?)),
            BinOp::Ne => Ok(Val::Bool(!self.equals(&l, &r, 0)?)),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let ord = self.order(&l, &r, op, e)?;
                Ok(Val::Bool(match (op, ord) {
                    (_, None) => false,
                    (BinOp::Lt, Some(o)) => o == Ordering::Less,
                    (BinOp::Le, Some(o)) => o != Ordering::Greater,
                    (BinOp::Gt, Some(o)) => o == Ordering::Greater,
                    (_, Some(o)) => o != Ordering::Less,
                }))
            }
            BinOp::In => self.contains(&r, &l, e),
            BinOp::Add => self.add(l, r, e),
            BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => self.arith(op, &l, &r, e),
        }
    }

    #[cold]
    fn mismatch(&self, op: BinOp, l: &Val<'_>, r: &Val<'_>, e: &Expr) -> String {
        self.no_overload(&format!("no operator `{}` for {} and {}", op.symbol(), l.type_name(), r.type_name()), e)
    }

    fn order(&mut self, l: &Val<'a>, r: &Val<'a>, op: BinOp, e: &Expr) -> R<Option<Ordering>> {
        if let (Some(a), Some(b)) = (l.num(), r.num()) {
            return Ok(cmp_num(a, b));
        }
        if let (Some(a), Some(b)) = (l.as_str(), r.as_str()) {
            self.charge_scan(a.len().min(b.len()))?;
            return Ok(Some(a.cmp(b)));
        }
        if let (Val::Bool(a), Val::Bool(b)) = (l, r) {
            return Ok(Some(a.cmp(b)));
        }
        Err(self.mismatch(op, l, r, e))
    }

    /// CEL's heterogeneous equality: numbers compare by value across int,
    /// uint and double; values of different kinds are unequal.
    fn equals(&mut self, l: &Val<'a>, r: &Val<'a>, depth: usize) -> R<bool> {
        if depth > MAX_VALUE_DEPTH {
            return Err(format!("values nest deeper than {MAX_VALUE_DEPTH} levels"));
        }
        self.charge(1)?;
        if let (Some(a), Some(b)) = (l.num(), r.num()) {
            return Ok(cmp_num(a, b) == Some(Ordering::Equal));
        }
        if let (Some(a), Some(b)) = (l.as_str(), r.as_str()) {
            if a.len() != b.len() {
                return Ok(false);
            }
            self.charge_scan(a.len())?;
            return Ok(a == b);
        }
        match (l, r) {
            (Val::Null, Val::Null) => Ok(true),
            (Val::Bool(a), Val::Bool(b)) => Ok(a == b),
            _ if l.is_list() && r.is_list() => {
                if l.len() != r.len() {
                    return Ok(false);
                }
                let (Some(a), Some(b)) = (l.items(), r.items()) else { return Ok(false) };
                for (x, y) in a.zip(b) {
                    if !self.equals(&x, &y, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            _ if l.is_map() && r.is_map() => {
                if l.len() != r.len() {
                    return Ok(false);
                }
                let Some(keys) = l.items() else { return Ok(false) };
                for k in keys {
                    let (Some(x), Some(y)) = (self.lookup(l, &k)?, self.lookup(r, &k)?) else {
                        return Ok(false);
                    };
                    if !self.equals(&x, &y, depth + 1)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn contains(&mut self, container: &Val<'a>, item: &Val<'a>, e: &Expr) -> R<Val<'a>> {
        if container.is_map() {
            return Ok(Val::Bool(self.lookup(container, item)?.is_some()));
        }
        if let Some(items) = container.items() {
            for x in items {
                if self.equals(&x, item, 0)? {
                    return Ok(Val::Bool(true));
                }
            }
            return Ok(Val::Bool(false));
        }
        Err(self.no_overload(&format!("`in` needs a list or map, not {}", container.a_type()), e))
    }

    fn add(&mut self, l: Val<'a>, r: Val<'a>, e: &Expr) -> R<Val<'a>> {
        if let (Some(a), Some(b)) = (l.as_str(), r.as_str()) {
            let len = a.len() + b.len();
            if len > MAX_STRING_BYTES {
                return Err(self.no_overload(&format!("string result would exceed {MAX_STRING_BYTES} bytes"), e));
            }
            self.allocate(size_u64(len))?;
            self.charge_scan(len)?;
            let mut s = String::with_capacity(len);
            s.push_str(a);
            s.push_str(b);
            return Ok(Val::OwnedStr(Rc::from(s)));
        }
        if l.is_list() && r.is_list() {
            let len = l.len().unwrap_or(0) + r.len().unwrap_or(0);
            if len > MAX_LIST_ITEMS {
                return Err(self.no_overload(&format!("list result would exceed {MAX_LIST_ITEMS} items"), e));
            }
            self.allocate(size_u64(len) * 32)?;
            self.charge(size_u64(len))?;
            let mut out = Vec::with_capacity(len);
            if let (Some(a), Some(b)) = (l.items(), r.items()) {
                out.extend(a);
                out.extend(b);
            }
            return Ok(Val::List(Rc::new(out)));
        }
        self.arith(BinOp::Add, &l, &r, e)
    }

    fn arith(&mut self, op: BinOp, l: &Val<'a>, r: &Val<'a>, e: &Expr) -> R<Val<'a>> {
        let overflow = |cx: &Self, t: &str| cx.no_overload(&format!("{t} overflow"), e);
        match (l, r) {
            (Val::Int(a), Val::Int(b)) => {
                let (a, b) = (*a, *b);
                let v = match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::Div if b == 0 => return Err(self.no_overload("division by zero", e)),
                    BinOp::Div => a.checked_div(b),
                    BinOp::Rem if b == 0 => return Err(self.no_overload("modulus by zero", e)),
                    _ => a.checked_rem(b),
                };
                v.map(Val::Int).ok_or_else(|| overflow(self, "int"))
            }
            (Val::Uint(a), Val::Uint(b)) => {
                let (a, b) = (*a, *b);
                let v = match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::Div if b == 0 => return Err(self.no_overload("division by zero", e)),
                    BinOp::Div => a.checked_div(b),
                    BinOp::Rem if b == 0 => return Err(self.no_overload("modulus by zero", e)),
                    _ => a.checked_rem(b),
                };
                v.map(Val::Uint).ok_or_else(|| overflow(self, "uint"))
            }
            (Val::Double(a), Val::Double(b)) => match op {
                BinOp::Add => self.finite(a + b, e),
                BinOp::Sub => self.finite(a - b, e),
                BinOp::Mul => self.finite(a * b, e),
                BinOp::Div => self.finite(a / b, e),
                _ => Err(self.mismatch(op, l, r, e)),
            },
            _ => Err(self.mismatch(op, l, r, e)),
        }
    }

    fn call(&mut self, func: Func, args: &'a [Expr], e: &Expr) -> R<Val<'a>> {
        let mut vals: [Val<'a>; 2] = [Val::Null, Val::Null];
        for (slot, arg) in vals.iter_mut().zip(args) {
            *slot = self.eval(arg)?;
        }
        let [a, b] = vals;
        let name = func.name();
        let bad = |cx: &Self, v: &Val<'_>| cx.no_overload(&format!("`{name}` is not defined for {}", v.a_type()), e);
        match func {
            Func::Dyn => Ok(a),
            Func::Size => {
                if let Some(s) = a.as_str() {
                    self.charge_scan(s.len())?;
                    let n = s.chars().count();
                    return Ok(Val::Int(i64::try_from(n).unwrap_or(i64::MAX)));
                }
                match a.len() {
                    Some(n) => Ok(Val::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                    None => Err(bad(self, &a)),
                }
            }
            Func::StartsWith | Func::EndsWith | Func::Contains => {
                let (Some(s), Some(t)) = (a.as_str(), b.as_str()) else {
                    let culprit = if a.as_str().is_none() { &a } else { &b };
                    return Err(bad(self, culprit));
                };
                self.charge_scan(s.len())?;
                Ok(Val::Bool(match func {
                    Func::StartsWith => s.starts_with(t),
                    Func::EndsWith => s.ends_with(t),
                    _ => s.contains(t),
                }))
            }
            Func::Matches => {
                let (Some(s), Some(p)) = (a.as_str(), b.as_str()) else {
                    let culprit = if a.as_str().is_none() { &a } else { &b };
                    return Err(bad(self, culprit));
                };
                let cached = matches!(&self.regex_cache, Some((cp, _)) if cp == p);
                if !cached {
                    self.charge(5_000 + 50 * size_u64(p.len()))?;
                    let regex = build_regex(p).map_err(|m| self.no_overload(&m, e))?;
                    self.regex_cache = Some((p.to_string(), regex));
                }
                self.charge_scan(s.len())?;
                Ok(Val::Bool(self.regex_cache.as_ref().is_some_and(|(_, r)| r.is_match(s))))
            }
            Func::Int => match &a {
                Val::Int(_) => Ok(a),
                Val::Uint(u) => i64::try_from(*u).map(Val::Int).map_err(|_| self.no_overload("int range error", e)),
                Val::Double(d) => double_to_int(*d).map(Val::Int).ok_or_else(|| self.no_overload("int range error", e)),
                _ => match a.as_str() {
                    Some(s) => s.parse::<i64>().map(Val::Int).map_err(|_| self.no_overload(&format!("`{}` is not an int", truncate(s, 40)), e)),
                    None => Err(bad(self, &a)),
                },
            },
            Func::Uint => match &a {
                Val::Uint(_) => Ok(a),
                Val::Int(i) => u64::try_from(*i).map(Val::Uint).map_err(|_| self.no_overload("uint range error", e)),
                Val::Double(d) => double_to_uint(*d).map(Val::Uint).ok_or_else(|| self.no_overload("uint range error", e)),
                _ => match a.as_str() {
                    Some(s) => s.parse::<u64>().map(Val::Uint).map_err(|_| self.no_overload(&format!("`{}` is not a uint", truncate(s, 40)), e)),
                    None => Err(bad(self, &a)),
                },
            },
            Func::Double => match &a {
                Val::Double(_) => Ok(a),
                Val::Int(i) => Ok(Val::Double(*i as f64)),
                Val::Uint(u) => Ok(Val::Double(*u as f64)),
                _ => match a.as_str() {
                    Some(s) => match s.parse::<f64>() {
                        Ok(d) => self.finite(d, e),
                        Err(_) => Err(self.no_overload(&format!("`{}` is not a double", truncate(s, 40)), e)),
                    },
                    None => Err(bad(self, &a)),
                },
            },
            Func::String => match &a {
                Val::Str(_) | Val::OwnedStr(_) => Ok(a),
                Val::Int(i) => Ok(Val::OwnedStr(Rc::from(i.to_string()))),
                Val::Uint(u) => Ok(Val::OwnedStr(Rc::from(u.to_string()))),
                Val::Double(d) => Ok(Val::OwnedStr(Rc::from(format_double(*d)))),
                Val::Bool(b) => Ok(Val::Str(if *b { "true" } else { "false" })),
                _ => Err(bad(self, &a)),
            },
        }
    }

    fn comprehension(&mut self, c: &'a Comprehension, e: &Expr) -> R<Val<'a>> {
        let range = self.eval(&c.range)?;
        let Some(items) = range.items() else {
            return Err(format!("`{}` needs a list or map but `{}` is {}", macro_name(c.kind), self.snip(&c.range), range.a_type()));
        };
        let base = self.locals.len();
        let result = self.iterate(c, items, e);
        self.locals.truncate(base);
        result
    }

    fn iterate(&mut self, c: &'a Comprehension, items: super::value::Items<'a>, e: &Expr) -> R<Val<'a>> {
        let base = self.locals.len();
        let mut first_error: Option<String> = None;
        let mut count: u64 = 0;
        let mut built: Vec<Val<'a>> = Vec::new();
        for item in items {
            self.charge(1)?;
            self.locals.truncate(base);
            self.locals.push(item.clone());
            match c.kind {
                MacroKind::Exists | MacroKind::All => {
                    let decide = c.kind == MacroKind::Exists;
                    match self.eval(&c.body) {
                        Ok(Val::Bool(b)) if b == decide => return Ok(Val::Bool(decide)),
                        Ok(Val::Bool(_)) => {}
                        Ok(other) => {
                            first_error.get_or_insert_with(|| self.predicate_error(c, &other));
                        }
                        Err(reason) => {
                            if self.exhausted {
                                return Err(reason);
                            }
                            first_error.get_or_insert(reason);
                        }
                    }
                }
                MacroKind::ExistsOne => match self.eval(&c.body)? {
                    Val::Bool(true) => count += 1,
                    Val::Bool(false) => {}
                    other => return Err(self.predicate_error(c, &other)),
                },
                MacroKind::Filter => match self.eval(&c.body)? {
                    Val::Bool(true) => self.push_built(&mut built, item, e)?,
                    Val::Bool(false) => {}
                    other => return Err(self.predicate_error(c, &other)),
                },
                MacroKind::Map => {
                    if let Some(filter) = &c.filter {
                        match self.eval(filter)? {
                            Val::Bool(true) => {}
                            Val::Bool(false) => continue,
                            other => return Err(self.predicate_error(c, &other)),
                        }
                    }
                    let v = self.eval(&c.body)?;
                    self.push_built(&mut built, v, e)?;
                }
            }
        }
        match c.kind {
            MacroKind::Exists | MacroKind::All => match first_error {
                Some(reason) => Err(reason),
                None => Ok(Val::Bool(c.kind == MacroKind::All)),
            },
            MacroKind::ExistsOne => Ok(Val::Bool(count == 1)),
            MacroKind::Filter | MacroKind::Map => Ok(Val::List(Rc::new(built))),
        }
    }

    fn push_built(&mut self, built: &mut Vec<Val<'a>>, v: Val<'a>, e: &Expr) -> R<()> {
        if built.len() >= MAX_LIST_ITEMS {
            return Err(self.no_overload(&format!("list result would exceed {MAX_LIST_ITEMS} items"), e));
        }
        self.allocate(32)?;
        built.push(v);
        Ok(())
    }

    fn predicate_error(&self, c: &Comprehension, v: &Val<'_>) -> String {
        format!("the condition `{}` of `{}` is {}, not a bool", self.snip(c.filter.as_ref().unwrap_or(&c.body)), macro_name(c.kind), v.a_type())
    }
}

fn macro_name(kind: MacroKind) -> &'static str {
    match kind {
        MacroKind::Exists => "exists",
        MacroKind::All => "all",
        MacroKind::ExistsOne => "exists_one",
        MacroKind::Map => "map",
        MacroKind::Filter => "filter",
    }
}

/// Map key equality: numbers across types, strings, bools.
fn key_eq(a: &Val<'_>, b: &Val<'_>) -> bool {
    if let (Some(x), Some(y)) = (a.num(), b.num()) {
        return cmp_num(x, y) == Some(Ordering::Equal);
    }
    if let (Some(x), Some(y)) = (a.as_str(), b.as_str()) {
        return x == y;
    }
    matches!((a, b), (Val::Bool(x), Val::Bool(y)) if x == y)
}

fn describe_key(key: &Val<'_>) -> String {
    match key {
        Val::Int(i) => format!("`{i}`"),
        Val::Uint(u) => format!("`{u}u`"),
        Val::Double(d) => format!("`{}`", format_double(*d)),
        Val::Bool(b) => format!("`{b}`"),
        Val::Null => "`null`".to_string(),
        other => match other.as_str() {
            Some(s) => format!("`{}`", truncate(s, 40)),
            None => other.a_type().to_string(),
        },
    }
}

fn key_text(key: &Val<'_>) -> R<String> {
    match key {
        Val::Int(i) => Ok(i.to_string()),
        Val::Uint(u) => Ok(u.to_string()),
        Val::Bool(b) => Ok(b.to_string()),
        other => other.as_str().map(str::to_string).ok_or_else(|| "a map key has no JSON form".to_string()),
    }
}

fn to_json(v: &Val<'_>, depth: usize) -> R<Value> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("the result nests deeper than {MAX_VALUE_DEPTH} levels"));
    }
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => Value::from(*i),
        Val::Uint(u) => Value::from(*u),
        Val::Double(d) => Value::Number(Number::from_f64(*d).ok_or_else(|| format!("the result `{}` has no JSON form", format_double(*d)))?),
        Val::Str(s) => Value::String((*s).to_string()),
        Val::OwnedStr(s) => Value::String(s.to_string()),
        Val::List(items) => Value::Array(items.iter().map(|x| to_json(x, depth + 1)).collect::<R<_>>()?),
        Val::JList(items) => Value::Array(items.iter().map(|x| to_json(&Val::from_json(x), depth + 1)).collect::<R<_>>()?),
        Val::JMap(map) => {
            let mut out = Map::new();
            for (k, x) in map.iter() {
                out.insert(k.clone(), to_json(&Val::from_json(x), depth + 1)?);
            }
            Value::Object(out)
        }
        Val::Map(entries) => {
            let mut out = Map::new();
            for (k, x) in entries.iter() {
                let key = key_text(k)?;
                if out.contains_key(&key) {
                    return Err(format!("map keys collide as JSON text `{}`", truncate(&key, 40)));
                }
                out.insert(key, to_json(x, depth + 1)?);
            }
            Value::Object(out)
        }
        Val::Part(_) => return Err(part_as_value()),
    })
}

#[cold]
fn part_as_value() -> String {
    "internal: a map gathered field by field used as a value".to_string()
}

fn to_cel(v: &Val<'_>, depth: usize) -> R<CelValue> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("the result nests deeper than {MAX_VALUE_DEPTH} levels"));
    }
    Ok(match v {
        Val::Null => CelValue::Null,
        Val::Bool(b) => CelValue::Bool(*b),
        Val::Int(i) => CelValue::Int(*i),
        Val::Uint(u) => CelValue::Uint(*u),
        Val::Double(d) => CelValue::Double(*d),
        Val::Str(_) | Val::OwnedStr(_) => CelValue::String(v.as_str().unwrap_or_default().to_string()),
        Val::List(_) | Val::JList(_) => CelValue::List(v.items().into_iter().flatten().map(|x| to_cel(&x, depth + 1)).collect::<R<_>>()?),
        Val::Map(entries) => CelValue::Map(entries.iter().map(|(k, x)| Ok((to_cel(k, depth + 1)?, to_cel(x, depth + 1)?))).collect::<R<_>>()?),
        Val::JMap(map) => {
            CelValue::Map(map.iter().map(|(k, x)| Ok((CelValue::String(k.clone()), to_cel(&Val::from_json(x), depth + 1)?))).collect::<R<_>>()?)
        }
        Val::Part(_) => return Err(part_as_value()),
    })
}
