//! Hostile expressions and hostile variables, tried as a new user (or a
//! prompt-injected model) would: each gives a clear load error or an
//! unevaluable outcome in bounded time, never a crash, a hang or a runaway
//! allocation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use harnessweaver_core::cel_lite::{self, Options, Outcome, Vars};
use serde_json::{json, Map, Value};
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
    for expr in [
        "args.s.matches('^(a+)+$')",
        "args.s.matches('^(a|aa)+$')",
        "args.s.matches('(a*)*b')",
        "args.s.matches(args.p)",
        "args.s.matches(args.q)",
    ] {
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
