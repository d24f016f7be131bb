//! Hostile expressions and hostile variables, tried as a new user (or a
//! prompt-injected model) would: each gives a clear load error or an
//! unevaluable outcome in bounded time, never a crash, a hang or a runaway
//! allocation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use harnessweaver_core::cel_lite::{self, Options, Outcome, Vars};
use serde_json::{json, Map, Value};
use std::io::Write as _;
use std::time::{Duration, Instant};

/// Generous for a debug build on a shared 2-core machine; the point is "ends".
const BOUND: Duration = Duration::from_secs(30);

fn compile_error(expr: &str) -> cel_lite::CompileError {
    match cel_lite::compile(expr) {
        Ok(_) => panic!("expected a compile error for an expression of {} bytes", expr.len()),
        Err(e) => e,
    }
}

fn big_options() -> Options {
    Options { max_length: 4 << 20, ..Options::default() }
}

fn eval_args(expr: &str, args: &Value) -> (Outcome, Duration) {
    let program = cel_lite::compile(expr).unwrap_or_else(|e| panic!("{}", e.render()));
    let vars = Vars { args: Some(args), ..Vars::default() };
    let t = Instant::now();
    let out = program.evaluate_with(&vars);
    let took = t.elapsed();
    assert!(took < BOUND, "`{expr}` took {took:?}");
    (out, took)
}

fn unevaluable(out: &Outcome) -> &str {
    match out {
        Outcome::Unevaluable { reason } => reason,
        Outcome::Value(v) => panic!("expected unevaluable, got {}", cut(&v.to_string())),
    }
}

fn value(out: Outcome) -> Value {
    match out {
        Outcome::Value(v) => v,
        Outcome::Unevaluable { reason } => panic!("expected a value, got unevaluable: {reason}"),
    }
}

fn cut(s: &str) -> String {
    s.chars().take(200).collect()
}

#[test]
fn deep_nesting_is_a_load_error_not_a_stack_overflow() {
    let n = 50_000;
    let shapes = [
        format!("{}1{}", "(".repeat(n), ")".repeat(n)),
        format!("{}true", "!".repeat(n)),
        format!("{}1", "-".repeat(n)),
        format!("{}{}", "[".repeat(n), "]".repeat(n)),
        format!("{}{}", "{1:".repeat(n), "}".repeat(n)),
        format!("{}1{}", "size(".repeat(n), ")".repeat(n)),
        format!("args{}", ".x".repeat(n)),
        format!("args{}", "[0]".repeat(n)),
        format!("{}1", "true ? 1 : ".repeat(n)),
        format!("{}1{}", "[1].map(x, ".repeat(n), ")".repeat(n)),
        std::iter::repeat_n("1", n).collect::<Vec<_>>().join(" + "),
        std::iter::repeat_n("'a'", n).collect::<Vec<_>>().join(" + "),
    ];
    for expr in &shapes {
        // Default options: refused for size before parsing.
        let e = compile_error(expr);
        assert_eq!(e.code(), "cel_too_large", "{}", cut(expr));
        // With the size limit lifted, the depth limit refuses it.
        let e = cel_lite::compile_with(expr, &big_options()).expect_err("deep expression compiled");
        assert_eq!(e.code(), "cel_too_deep", "{}: {}", cut(expr), e);
        assert!(e.render().len() < 400, "render stays short: {}", e.render());
    }
}

#[test]
fn nesting_just_inside_the_limit_compiles_and_runs() {
    let depth = cel_lite::MAX_DEPTH - 1;
    let expr = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    assert_eq!(value(cel_lite::compile(&expr).unwrap().evaluate(&Map::new())), json!(1));
    let expr = format!("{}true", "!".repeat(depth));
    let want = depth.is_multiple_of(2);
    assert_eq!(value(cel_lite::compile(&expr).unwrap().evaluate(&Map::new())), json!(want));
    // A long flat `||` chain is not deep.
    let expr = std::iter::repeat_n("false", 400).collect::<Vec<_>>().join(" || ");
    assert_eq!(value(cel_lite::compile(&expr).unwrap().evaluate(&Map::new())), json!(false));
}

#[test]
fn huge_expressions_are_refused_for_size() {
    let expr = "1 + ".repeat(1 << 18) + "1";
    let t = Instant::now();
    let e = compile_error(&expr);
    assert!(t.elapsed() < Duration::from_secs(1));
    assert_eq!(e.code(), "cel_too_large");
    assert!(e.message().contains("limit of 4096"), "{}", e.message());
}

#[test]
fn unknown_names_and_functions_are_load_errors() {
    for (expr, code, column) in [
        ("process.env.HOME == ''", "cel_unknown_name", 1),
        ("system('rm -rf /')", "cel_unknown_function", 1),
        ("args.cmd.exec()", "cel_unknown_function", 10),
        ("import('os')", "cel_unknown_function", 1),
        ("__proto__", "cel_unknown_name", 1),
        ("args.x == self", "cel_unknown_name", 11),
        ("timestamp(args.t) > now", "cel_unknown_function", 1),
        ("args['x'] == \u{0}", "cel_syntax", 14),
        ("args.🙂", "cel_syntax", 6),
    ] {
        let e = compile_error(expr);
        assert_eq!((e.code(), e.line(), e.column()), (code, 1, column), "{expr}: {e}");
    }
    // A long unknown name is cut in the message.
    let name = "a".repeat(3000);
    let e = compile_error(&name);
    assert_eq!(e.code(), "cel_unknown_name");
    assert!(e.message().len() < 300, "{}", e.message());
}

#[test]
fn catastrophic_regexes_run_in_linear_time() {
    let s = "a".repeat(1 << 20) + "!";
    let args = json!({"s": s, "p": "^(a+)+$", "q": "(x+x+)+y", "big": "a{1000}{1000}", "long": "a".repeat(5000)});
    for expr in
        ["args.s.matches('^(a+)+$')", "args.s.matches('^(a|aa)+$')", "args.s.matches('(a*)*b')", "args.s.matches(args.p)", "args.s.matches(args.q)"]
    {
        let (out, _) = eval_args(expr, &args);
        assert_eq!(value(out), json!(false), "{expr}");
    }
    let (out, _) = eval_args("args.s.matches(args.big)", &args);
    assert!(unevaluable(&out).contains("limit"), "{out:?}");
    let (out, _) = eval_args("'x'.matches(args.long)", &args);
    assert!(unevaluable(&out).contains("more than the limit of 1024"), "{out:?}");
    // Literal patterns are checked at load.
    let e = compile_error("args.s.matches('a{1000}{1000}')");
    assert_eq!(e.code(), "cel_bad_regex");
}

#[test]
fn ten_megabyte_strings() {
    let s = "x".repeat(10 << 20);
    let args = json!({"s": s, "t": s.clone()});
    let cases: &[(&str, Value)] = &[
        ("size(args.s)", json!(10 << 20)),
        ("args.s.contains('needle')", json!(false)),
        ("args.s.startsWith('xx') && args.s.endsWith('xx')", json!(true)),
        ("args.s == args.t", json!(true)),
        ("args.s < args.t", json!(false)),
        ("args.s.matches('y$')", json!(false)),
        ("'x' in [args.s]", json!(false)),
    ];
    for (expr, want) in cases {
        let (out, _) = eval_args(expr, &args);
        assert_eq!(&value(out), want, "{expr}");
    }
    for expr in ["args.s + args.t", "args.s + 'x'", "[args.s].map(a, a + a)"] {
        let (out, _) = eval_args(expr, &args);
        assert!(unevaluable(&out).contains("would exceed"), "{expr}: {out:?}");
    }
    // Reasons never echo the value.
    let (out, _) = eval_args("int(args.s)", &args);
    assert!(unevaluable(&out).len() < 200, "{out:?}");
    let (out, _) = eval_args("args[args.s]", &args);
    assert!(unevaluable(&out).len() < 200, "{out:?}");
}

#[test]
fn million_item_lists() {
    let list: Vec<Value> = (0..1_000_000).map(Value::from).collect();
    let args = json!({"list": list});
    let cases: &[(&str, Value)] = &[
        ("args.list.exists(x, x == -1)", json!(false)),
        ("args.list.all(x, x >= 0)", json!(true)),
        ("-1 in args.list", json!(false)),
        ("size(args.list)", json!(1_000_000)),
        ("size(args.list.filter(x, x % 2 == 0))", json!(500_000)),
        ("args.list.exists_one(x, x == 999999)", json!(true)),
    ];
    for (expr, want) in cases {
        let (out, took) = eval_args(expr, &args);
        assert_eq!(&value(out), want, "{expr} ({took:?})");
    }
    for (expr, why) in [
        ("args.list + args.list", "would exceed"),
        ("args.list.exists(x, args.list.exists(y, x + y < 0))", "cost limit"),
        ("args.list.all(x, args.list.all(y, y >= 0))", "cost limit"),
        ("args.list.map(x, args.list.map(y, y))", "limit"),
        ("args.list.map(x, [x, x, x, x]).size() > 0", "limit"),
    ] {
        let (out, took) = eval_args(expr, &args);
        if let Outcome::Value(v) = &out {
            panic!("{expr}: expected unevaluable, got {} ({took:?})", cut(&v.to_string()));
        }
        assert!(unevaluable(&out).contains(why), "{expr}: {out:?} ({took:?})");
    }
}

#[test]
fn long_concatenation_chains() {
    // Within the size limit, a long chain is refused for depth at load.
    let chain = std::iter::repeat_n("args.s", 400).collect::<Vec<_>>().join(" + ");
    assert_eq!(compile_error(&chain).code(), "cel_too_deep");
    // Doubling inside macros hits the string cap, not the machine's memory.
    let expr = format!("['{}']{}", "x".repeat(100), ".map(a, a + a)".repeat(30));
    let (out, _) = eval_args(&expr, &json!({}));
    assert!(unevaluable(&out).contains("would exceed"), "{out:?}");
    // List doubling likewise.
    let expr = format!("[[1]]{}", ".map(a, a + a + a + a)".repeat(20));
    let (out, _) = eval_args(&expr, &json!({}));
    assert!(unevaluable(&out).contains("exceed"), "{out:?}");
}

#[test]
fn deep_and_wide_json_variables() {
    let mut deep = json!(1);
    for _ in 0..1000 {
        deep = json!([deep]);
    }
    let args = json!({"a": deep.clone(), "b": deep});
    let (out, _) = eval_args("args.a == args.b", &args);
    assert!(unevaluable(&out).contains("nest deeper"), "{out:?}");
    let (out, _) = eval_args("args.a", &args);
    assert!(unevaluable(&out).contains("nests deeper"), "{out:?}");
    let (out, _) = eval_args("size(args.a) == 1", &args);
    assert_eq!(value(out), json!(true));

    let mut wide = Map::new();
    for i in 0..200_000 {
        wide.insert(format!("k{i}"), json!(i));
    }
    let args = json!({"m": wide});
    let (out, _) = eval_args("'k199999' in args.m && args.m.k5 == 5", &args);
    assert_eq!(value(out), json!(true));
    let (out, _) = eval_args("args.m.exists(k, k == 'nope')", &args);
    assert_eq!(value(out), json!(false));
}

#[test]
fn many_dynamic_patterns_are_bounded() {
    let patterns: Vec<Value> = (0..100_000).map(|i| json!(format!("^p{i}$"))).collect();
    let args = json!({"patterns": patterns});
    let (out, took) = eval_args("args.patterns.exists(p, 'x'.matches(p))", &args);
    assert!(unevaluable(&out).contains("cost limit"), "{out:?} ({took:?})");
}

#[test]
fn programs_are_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<cel_lite::Program>();
    let program = std::sync::Arc::new(cel_lite::compile("args.n > 1").unwrap());
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let p = std::sync::Arc::clone(&program);
            std::thread::spawn(move || {
                let args = json!({"n": i});
                p.approval_required_with(&Vars { args: Some(&args), ..Vars::default() }).required
            })
        })
        .collect();
    let got: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, vec![false, false, true, true]);
}

/// Token soup and byte noise: compiling and evaluating never panics.
#[test]
fn random_inputs_never_panic() {
    const PIECES: &[&str] = &[
        "args", "principal", "tool", "labels", "tenant", "task", "x", "y", ".", "[", "]", "(", ")", "{", "}", ",", ":", "?", "!", "-", "+", "*", "/",
        "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", " in ", "0", "1", "-1", "2u", "0.5", "1e308", "9223372036854775807",
        "-9223372036854775808", "18446744073709551615u", "'a'", "\"b\"", "'''c'''", "r'\\d'", "'\\u00e9'", "'\\x'", "'", "null", "true", "false",
        "size", "has", "int", "uint", "double", "string", "matches", ".exists(x, ", ".all(y, ", ".map(x, ", ".filter(y, ", ".exists_one(x, ",
        ".startsWith(", ".contains(", ".matches(", "'(a+)+$'", "'['", "amount", "items", "roles", "`k`", "é", "🙂", " ", "\n", "\t", "//c\n", "b'x'",
        "Foo{", "0x", "0xFFFFFFFFFFFFFFFFF", ".5", "1.", "e", "_",
    ];
    let args = json!({
        "amount": 250, "items": [1, 2.5, "x", null, [1], {"k": 1}], "roles": ["a", "b"], "k": {"k": {"k": 1}},
        "big": 18446744073709551615u64, "neg": -9223372036854775808i64, "s": "(a+)+$"
    });
    let principal = json!({"roles": ["finance"], "id": 7});
    let vars = Vars { args: Some(&args), principal: Some(&principal), ..Vars::default() };
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let started = Instant::now();
    let (mut compiled, mut total) = (0, 0);
    // `CEL_FUZZ_ITERATIONS=1000000` for a longer hunt.
    let iterations: usize = std::env::var("CEL_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    for _ in 0..iterations {
        let n = 1 + (next() % 24) as usize;
        let mut expr = String::new();
        for _ in 0..n {
            expr.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
        }
        if next() % 8 == 0 {
            // Raw noise: control characters, non-ASCII, unpaired quotes.
            let noise: String = (0..(next() % 12)).map(|_| char::from_u32((next() % 0x3000) as u32).unwrap_or('?')).collect();
            let mut at = next() as usize % (expr.len() + 1);
            while !expr.is_char_boundary(at) {
                at -= 1;
            }
            expr.insert_str(at, &noise);
        }
        total += 1;
        let result = std::panic::catch_unwind(|| match cel_lite::compile(&expr) {
            Ok(p) => {
                let _ = p.evaluate_with(&vars);
                let _ = p.approval_required_with(&vars);
                let _ = p.evaluate_value(&vars);
                true
            }
            Err(e) => {
                assert!(e.line() >= 1 && e.column() >= 1);
                let _ = e.render();
                false
            }
        });
        match result {
            Ok(true) => compiled += 1,
            Ok(false) => {}
            Err(_) => panic!("panicked on {expr:?}"),
        }
    }
    // Grammar-shaped expressions: most compile, so evaluation gets exercised.
    fn gen(next: &mut dyn FnMut() -> u64, depth: u32) -> String {
        const LEAVES: &[&str] = &[
            "args.amount", "args.items", "args.roles", "args.k", "args.k.k", "args.big", "args.neg", "args.s", "args", "principal.roles",
            "principal.id", "tool", "x", "0", "1", "-1", "3u", "0.5", "-0.0", "1e308", "'a'", "''", "'(a|b)+'", "null", "true", "false", "[]", "{}",
            "9223372036854775807", "-9223372036854775808", "18446744073709551615u", "args.missing", "args.items[3]", "args.items[-1]",
        ];
        const BIN: &[&str] = &[" + ", " - ", " * ", " / ", " % ", " < ", " <= ", " > ", " >= ", " == ", " != ", " && ", " || ", " in "];
        let pick = |next: &mut dyn FnMut() -> u64, n: usize| (next() % n as u64) as usize;
        if depth == 0 {
            return LEAVES[pick(next, LEAVES.len())].to_string();
        }
        let d = depth - 1;
        match pick(next, 14) {
            0 | 1 => format!("{}{}{}", gen(next, d), BIN[pick(next, BIN.len())], gen(next, d)),
            2 => format!("!{}", gen(next, d)),
            3 => format!("-{}", gen(next, d)),
            4 => format!("({})", gen(next, d)),
            5 => format!("[{}, {}]", gen(next, d), gen(next, d)),
            6 => format!("{{'k': {}, 1: {}}}", gen(next, d), gen(next, d)),
            7 => format!("{} ? {} : {}", gen(next, d), gen(next, d), gen(next, d)),
            8 => {
                let m = ["exists", "all", "exists_one", "map", "filter"][pick(next, 5)];
                format!("{}.{m}(x, {})", gen(next, d), gen(next, d))
            }
            9 => {
                let f = ["size", "int", "uint", "double", "string"][pick(next, 5)];
                format!("{f}({})", gen(next, d))
            }
            10 => {
                let m = ["startsWith", "endsWith", "contains", "matches"][pick(next, 4)];
                format!("{}.{m}({})", gen(next, d), gen(next, d))
            }
            11 => format!("has({}.k)", gen(next, d)),
            12 => format!("{}[{}]", gen(next, d), gen(next, d)),
            _ => format!("{}.k", gen(next, d)),
        }
    }
    let (mut shaped, mut shaped_ok) = (0, 0);
    for _ in 0..iterations {
        let depth = (next() % 6) as u32;
        let expr = gen(&mut next, depth);
        shaped += 1;
        let result = std::panic::catch_unwind(|| match cel_lite::compile(&expr) {
            Ok(p) => {
                let _ = p.evaluate_with(&vars);
                let _ = p.evaluate_value(&vars);
                true
            }
            Err(_) => false,
        });
        match result {
            Ok(true) => shaped_ok += 1,
            Ok(false) => {}
            Err(_) => panic!("panicked on {expr:?}"),
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "random expressions: {compiled} of {total} token soups and {shaped_ok} of {shaped} grammar-shaped ones compiled, none panicked"
    );
    assert!(iterations > 20_000 || started.elapsed() < BOUND);
    assert!(compiled > 100, "only {compiled} of {total} random expressions compiled; the generator is too noisy");
}
