//! A JavaScript fast path of a compiled expression, for a host whose values
//! are JavaScript's (Node's `celLite`): crossing into Rust and converting the
//! parts costs more than a small expression's evaluation.
//!
//! The fast path covers a subset whose outcome it can decide exactly: field
//! selections, literals, `==`, `!=`, the number orderings, `in` over a list,
//! `!`, `&&` and `||`, where every gathered part is a bool, null, finite
//! number, well-formed string of at most 256 units, or a list of at most 100
//! of them. It answers `true` or `false`, or `undefined` for anything else
//! (another type, an error to word, a part it cannot vouch for), and then the
//! host evaluates in the core as before: the fast path never answers
//! differently from the core, it only answers less often. Its bounds keep an
//! evaluation far below the cost limit, so the budget never decides it.
//!
//! [`gather_js`] writes the JavaScript a host runs per evaluation: it checks
//! the variables' names, gathers exactly the parts the expression reads
//! ([`Program::reads`](super::Program::reads): own enumerable properties, a
//! map field by field where only fields are read), runs the fast path, and
//! otherwise hands the parts to the host's native evaluation as the kind words
//! `k0, k1, …` (2 bits per read after pair 0, which says what is wanted: 0 for
//! the value, 1 for the approval verdict; 0 absent, 1 a value, 2 a map read
//! field by field; 16 pairs a word) and one value `p0, p1, …` per read.

use std::fmt::Write as _;

use serde_json::Value;

use super::parser::{BinOp, Expr, Kind};
use super::{Program, MAX_COST, NAMES};

/// Kind pairs per word, as the host packs them (pair 0 is the host's own).
const PAIRS: usize = 16;

/// The helpers every fast path uses: tri-state logic (`undefined`: the core decides) and
/// cel-lite's equality and number ordering restricted to the values the fast path accepts.
const HELPERS: &str = r"const $prim = (v) => typeof v === 'string' ? v.length <= 256 && v.isWellFormed() : typeof v === 'number' ? Number.isFinite(v) : typeof v === 'boolean' || v === null
const $ok = (v) => {
  if ($prim(v)) return true
  if (!Array.isArray(v) || v.length > 100) return false
  for (let i = 0; i < v.length; i++) if (!$prim(v[i])) return false
  return true
}
const $and = (a, b) => (a === false || b === false ? false : a === true && b === true ? true : undefined)
const $or = (a, b) => (a === true || b === true ? true : a === false && b === false ? false : undefined)
const $not = (a) => (a === true ? false : a === false ? true : undefined)
const $scalar = (a) => a !== undefined && (a === null || typeof a !== 'object')
const $eq = (a, b) => ($scalar(a) && $scalar(b) ? a === b : undefined)
const $num = (a, b) => typeof a === 'number' && typeof b === 'number'
const $lt = (a, b) => ($num(a, b) ? a < b : undefined)
const $le = (a, b) => ($num(a, b) ? a <= b : undefined)
const $gt = (a, b) => ($num(a, b) ? a > b : undefined)
const $ge = (a, b) => ($num(a, b) ? a >= b : undefined)
const $in = (x, list) => {
  if (!$scalar(x) || !Array.isArray(list)) return undefined
  for (let i = 0; i < list.length; i++) if (list[i] === x) return true
  return false
}
";

/// The names of the kind words and parts of `program`'s reads, as the gather function passes them.
fn arguments(program: &Program) -> String {
    let n = program.reads.len();
    let words = (0..(n + 1).div_ceil(PAIRS)).map(|w| format!("k{w}"));
    words.chain((0..n).map(|i| format!("p{i}"))).collect::<Vec<_>>().join(", ")
}

/// The source of a JavaScript arrow function `(evaluate, wrong) => gather` for `program`:
/// `gather(vars, want)` checks and gathers `vars` (see the module's note), calls `wrong(type)` for
/// variables that are not a mapping and `wrong(undefined, key)` for an unknown key (the host throws
/// the core's error), and answers the fast path's value or `evaluate(k…, p…)`'s. Without `fast`,
/// every evaluation goes to `evaluate`.
pub(crate) fn gather_js(program: &Program, fast: bool) -> String {
    let reads = &program.reads;
    let n = reads.len();
    let mut out = String::from("(evaluate, wrong) => {\n'use strict'\n");
    out.push_str(
        "const { hasOwn, getPrototypeOf } = Object\nconst isEnumerable = Object.prototype.propertyIsEnumerable\n\
         const isPlain = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && (getPrototypeOf(v) === Object.prototype || getPrototypeOf(v) === null)\n",
    );
    let cases: String = NAMES.iter().map(|n| format!("case {}: ", serde_json::to_string(n).unwrap_or_default())).collect();
    let _ = writeln!(out, "const known = (key) => {{ switch (key) {{ {cases}return true }} return false }}");
    out.push_str(
        "const checkVars = (vars) => {\n  if (typeof vars !== 'object' || Array.isArray(vars)) wrong(Array.isArray(vars) ? 'array' : typeof vars)\n  \
         for (const key in vars) if (!known(key) && hasOwn(vars, key)) wrong(undefined, key)\n}\n",
    );
    let fast = if fast { fast_js(program) } else { None };
    if let Some(fast) = &fast {
        out.push_str(fast);
    }
    let args = arguments(program);
    let words = (n + 1).div_ceil(PAIRS);
    let mut lets: Vec<String> = (0..words).map(|w| format!("k{w} = {}", if w == 0 { "want" } else { "0" })).collect();
    lets.extend((0..n).map(|i| format!("p{i}")));
    let _ = writeln!(
        out,
        "return function gather(vars, want) {{\n  let {}\n  if (vars !== undefined && vars !== null) {{\n    checkVars(vars)",
        lets.join(", ")
    );
    for i in (0..n).filter(|i| reads.get(*i).is_some_and(|r| r.parent.is_none())) {
        gather_read(program, i, &mut out);
    }
    out.push_str("  }\n");
    if fast.is_some() {
        let _ = writeln!(out, "  const decided = fast({args})\n  if (decided !== undefined) return decided");
    }
    let _ = write!(out, "  return evaluate({args})\n}}\n}}");
    out
}

/// The statements that gather read `i` (and its fields) into `p{i}` and its kind bits.
fn gather_read(program: &Program, i: usize, out: &mut String) {
    let Some(read) = program.reads.get(i) else { return };
    let key = serde_json::to_string(&read.name).unwrap_or_default();
    let pair = i + 1;
    let kind = |k: u32| format!("k{} |= {}", pair / PAIRS, (k << (2 * (pair % PAIRS))) as i32);
    let (from, has) = match read.parent {
        // A variable must be own (an own `undefined` is unbound); a field own and enumerable.
        None => ("vars".to_string(), format!("hasOwn(vars, {key})")),
        Some(p) => (format!("v{p}"), format!("isEnumerable.call(v{p}, {key})")),
    };
    let unbound = if read.parent.is_none() { format!("if (v{i} !== undefined) ") } else { String::new() };
    let _ = write!(out, "if ({has}) {{ const v{i} = {from}[{key}]; {unbound}{{ ");
    if read.whole {
        let _ = write!(out, "p{i} = v{i}; {}", kind(1));
    } else {
        let _ = writeln!(out, "if (isPlain(v{i})) {{ {}", kind(2));
        for j in (i + 1..program.reads.len()).filter(|j| program.reads.get(*j).is_some_and(|r| r.parent == Some(i))) {
            gather_read(program, j, out);
        }
        let _ = write!(out, "}} else {{ p{i} = v{i}; {} }}", kind(1));
    }
    out.push_str(" } }\n");
}

/// The fast path's helpers and `function fast(k…, p…)`: `true` or `false`, or `undefined` (the core
/// decides); `None` when the expression is outside its subset.
fn fast_js(program: &Program) -> Option<String> {
    if program.max_cost < MAX_COST || !is_bool(&program.root) {
        return None;
    }
    let mut consts = Vec::new();
    let body = expr(program, &program.root, &mut consts)?;
    let mut out = String::from(HELPERS);
    for (i, c) in consts.iter().enumerate() {
        let _ = writeln!(out, "const c{i} = Object.freeze({c})");
    }
    let _ = writeln!(out, "function fast({}) {{", arguments(program));
    // Every part the core would convert must be one the fast path vouches for (else the core
    // converts it, and may refuse it).
    for i in 0..program.reads.len() {
        let pair = i + 1;
        let _ = writeln!(out, "  if (((k{} >>> {}) & 3) === 1 && !$ok(p{i})) return undefined", pair / PAIRS, 2 * (pair % PAIRS));
    }
    let _ = writeln!(out, "  return {body}\n}}");
    Some(out)
}

/// Whether `e`'s fast value is a bool (or undefined).
fn is_bool(e: &Expr) -> bool {
    matches!(
        &e.kind,
        Kind::Bool(_)
            | Kind::Not(_)
            | Kind::And(_)
            | Kind::Or(_)
            | Kind::Binary(BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::In, _, _)
    )
}

/// The read a variable or a chain of selections names, when it is read whole.
fn read_of(program: &Program, e: &Expr) -> Option<usize> {
    let read = match &e.kind {
        Kind::Var(slot) => program.roots.get(usize::from(*slot)).copied()?,
        Kind::Select(operand, field) => {
            let parent = read_of_chain(program, operand)?;
            child(program, parent, field)?
        }
        _ => return None,
    };
    program.reads.get(read).filter(|r| r.whole).map(|_| read)
}

/// The read of a variable or selection anywhere in a chain (whole or not).
fn read_of_chain(program: &Program, e: &Expr) -> Option<usize> {
    match &e.kind {
        Kind::Var(slot) => program.roots.get(usize::from(*slot)).copied(),
        Kind::Select(operand, field) => child(program, read_of_chain(program, operand)?, field),
        _ => None,
    }
}

fn child(program: &Program, parent: usize, field: &str) -> Option<usize> {
    program.reads.iter().enumerate().skip(parent + 1).find(|(_, r)| r.parent == Some(parent) && r.name == field).map(|(i, _)| i)
}

/// An integer a JavaScript number holds exactly.
fn exact_int(i: i64) -> bool {
    i.unsigned_abs() <= 1 << 53
}

fn literal(v: &Value) -> Option<String> {
    match v {
        Value::Null | Value::Bool(_) | Value::String(_) => serde_json::to_string(v).ok(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if exact_int(i) => Some(i.to_string()),
            (None, Some(d)) if n.as_u64().is_none() && d.is_finite() => Some(format!("{d:?}")),
            _ => None,
        },
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn expr(program: &Program, e: &Expr, consts: &mut Vec<String>) -> Option<String> {
    let mut sub = |e: &Expr| expr(program, e, consts);
    Some(match &e.kind {
        Kind::Null => "null".into(),
        Kind::Bool(b) => b.to_string(),
        Kind::Int(i) if exact_int(*i) => i.to_string(),
        Kind::Double(d) if d.is_finite() => format!("{d:?}"),
        Kind::Str(s) => serde_json::to_string(&**s).ok()?,
        Kind::Const(Value::Array(items)) => {
            let items = items.iter().map(literal).collect::<Option<Vec<_>>>()?;
            consts.push(format!("[{}]", items.join(", ")));
            format!("c{}", consts.len() - 1)
        }
        Kind::Var(_) | Kind::Select(..) => format!("p{}", read_of(program, e)?),
        Kind::Not(inner) => format!("$not({})", sub(inner)?),
        Kind::Binary(op, l, r) => {
            let (l, r) = (sub(l)?, sub(r)?);
            match op {
                BinOp::Eq => format!("$eq({l}, {r})"),
                BinOp::Ne => format!("$not($eq({l}, {r}))"),
                BinOp::Lt => format!("$lt({l}, {r})"),
                BinOp::Le => format!("$le({l}, {r})"),
                BinOp::Gt => format!("$gt({l}, {r})"),
                BinOp::Ge => format!("$ge({l}, {r})"),
                BinOp::In => format!("$in({l}, {r})"),
                _ => return None,
            }
        }
        Kind::And(items) | Kind::Or(items) => {
            let f = if matches!(e.kind, Kind::And(_)) { "$and" } else { "$or" };
            let mut items = items.iter().rev().map(sub);
            let last = items.next()??;
            items.try_fold(last, |acc, item| Some(format!("{f}({}, {acc})", item?)))?
        }
        _ => return None,
    })
}
