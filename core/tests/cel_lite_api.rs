//! The public cel-lite API: errors and their rendering, the borrowed `Vars`,
//! typed values, the approval rule, options.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]

use harnessweaver_core::cel_lite::{self, ApprovalVerdict, CelValue, Options, Outcome, Vars};
use serde_json::{json, Map, Value};

#[test]
fn compile_error_has_code_position_and_caret() {
    let e = cel_lite::compile("args.amount_usd > 100 &&\n  principal.rolez.exists(r, r == 'x') || bogus").unwrap_err();
    assert_eq!(e.code(), "cel_unknown_name");
    assert_eq!((e.line(), e.column()), (2, 42));
    assert!(e.message().starts_with("unknown name `bogus`"), "{}", e.message());
    assert_eq!(
        e.render(),
        "line 2, column 42: unknown name `bogus`; expressions can use `principal`, `tenant`, `task`, `tool`, `args`, `labels`, `run`\n  \
         \x20 principal.rolez.exists(r, r == 'x') || bogus\n  \
         \x20                                        ^"
    );
    assert_eq!(e.to_string(), format!("{} at line 2, column 42", e.message()));
    // Inside a file: the expression starts at line 10, column 11.
    assert_eq!(e.position_in(10, 11), (11, 42));
    let e = cel_lite::compile("args.x == nope").unwrap_err();
    assert_eq!(e.position_in(10, 11), (10, 21));
}

#[test]
fn render_windows_long_lines() {
    let expr = format!("{} + nope", "1 + ".repeat(100).trim_end_matches(" + "));
    let e = cel_lite::compile_with(&expr, &Options { max_depth: 1000, ..Options::default() }).unwrap_err();
    assert_eq!(e.code(), "cel_unknown_name");
    let r = e.render();
    let lines: Vec<&str> = r.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("  …"), "{r}");
    let caret_col = lines[2].chars().count();
    let nope_col = lines[1].find("nope").map(|b| lines[1][..b].chars().count() + 1).unwrap();
    assert_eq!(caret_col, nope_col, "{r}");
}

#[test]
fn messages_are_lowercase_and_quote_input() {
    for expr in ["args.x ==", "frob(1)", "x", "'a'.startsWith()", "'x'.matches('(')", "b'x'"] {
        let e = cel_lite::compile(expr).unwrap_err();
        let first = e.message().chars().next().unwrap();
        assert!(!first.is_uppercase(), "{expr}: {}", e.message());
    }
}

#[test]
fn borrowed_vars_and_json_map_agree() {
    let program = cel_lite::compile("args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'").unwrap();
    let args = json!({"amount_usd": 250});
    let principal = json!({"roles": ["engineer"]});
    let tool = json!({"risk": "low"});
    let vars = Vars { args: Some(&args), principal: Some(&principal), tool: Some(&tool), ..Vars::default() };
    assert_eq!(program.evaluate_with(&vars), Outcome::Value(json!(true)));
    let mut map = Map::new();
    map.insert("args".into(), args.clone());
    map.insert("principal".into(), principal.clone());
    map.insert("tool".into(), tool.clone());
    assert_eq!(program.evaluate(&map), Outcome::Value(json!(true)));
    assert_eq!(program.approval_required(&map), ApprovalVerdict { required: true, reason: None });
    assert_eq!(program.names(), ["args", "principal", "tool"]);
    assert_eq!(program.source(), "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'");
}

#[test]
fn approval_rule() {
    let vars: Map<String, Value> = serde_json::from_value(json!({"args": {"n": 5, "s": "x"}})).unwrap();
    let verdict = |expr: &str| cel_lite::compile(expr).unwrap().approval_required(&vars);
    assert_eq!(verdict("args.n > 1"), ApprovalVerdict { required: true, reason: None });
    assert_eq!(verdict("args.n > 10"), ApprovalVerdict { required: false, reason: None });
    let v = verdict("args.amount_usd > 10");
    assert!(v.required);
    assert_eq!(v.reason.as_deref(), Some("no such key `amount_usd` in `args`"));
    let v = verdict("args.s");
    assert!(v.required);
    assert_eq!(v.reason.as_deref(), Some("the expression gave a string, not a bool"));
    let v = verdict("tenant.plan == 'free'");
    assert_eq!(v.reason.as_deref(), Some("`tenant` is not set"));
}

#[test]
fn typed_values_keep_cel_types() {
    let empty = Map::new();
    let eval = |expr: &str| cel_lite::compile(expr).unwrap().evaluate_value(&empty).unwrap();
    assert_eq!(eval("1"), CelValue::Int(1));
    assert_eq!(eval("1u"), CelValue::Uint(1));
    assert_eq!(eval("1.0"), CelValue::Double(1.0));
    assert_eq!(eval("[1, 'a']"), CelValue::List(vec![CelValue::Int(1), CelValue::String("a".into())]));
    assert_eq!(eval("{1: true}"), CelValue::Map(vec![(CelValue::Int(1), CelValue::Bool(true))]));
    assert_eq!(eval("null").type_name(), "null_type");
    // JSON numbers: integers read as int, others as double.
    let vars: Map<String, Value> = serde_json::from_value(json!({"args": {"i": 3, "d": 2.5, "big": 18446744073709551615u64}})).unwrap();
    let p = |expr: &str| cel_lite::compile(expr).unwrap().evaluate_value(&vars).unwrap();
    assert_eq!(p("args.i"), CelValue::Int(3));
    assert_eq!(p("args.d"), CelValue::Double(2.5));
    assert_eq!(p("args.big"), CelValue::Uint(u64::MAX));
}

#[test]
fn options_allow_other_names_and_limits() {
    let options = Options { names: vec!["x".into()], ..Options::default() };
    let p = cel_lite::compile_with("x + 1", &options).unwrap();
    let vars: Map<String, Value> = serde_json::from_value(json!({"x": 41})).unwrap();
    assert_eq!(p.evaluate(&vars), Outcome::Value(json!(42)));
    assert_eq!(cel_lite::compile_with("args", &options).unwrap_err().code(), "cel_unknown_name");
    let small = Options { max_cost: 10, ..Options::default() };
    let p = cel_lite::compile_with("[1, 2, 3, 4, 5, 6, 7, 8].all(x, x > 0)", &small).unwrap();
    assert_eq!(p.evaluate(&Map::new()), Outcome::Unevaluable { reason: "evaluation exceeded its cost limit".into() });
    // `dyn` is only for the conformance runner.
    assert_eq!(cel_lite::compile("dyn(1)").unwrap_err().code(), "cel_unknown_function");
    let with_dyn = Options { dyn_identity: true, ..Options::default() };
    assert!(cel_lite::compile_with("dyn(1) == 1u", &with_dyn).is_ok());
}

#[test]
fn every_code_is_reachable() {
    for (expr, code) in [
        ("1 +", "cel_syntax"),
        ("b'x'", "cel_unsupported"),
        ("nope", "cel_unknown_name"),
        ("nope()", "cel_unknown_function"),
        ("size(1, 2)", "cel_wrong_arguments"),
        ("'a'.matches('[')", "cel_bad_regex"),
        (&"1".repeat(5000), "cel_too_large"),
        (&format!("{}1{}", "(".repeat(70), ")".repeat(70)), "cel_too_deep"),
    ] {
        assert_eq!(cel_lite::compile(expr).unwrap_err().code(), code, "{}", &expr[..expr.len().min(20)]);
    }
}

#[test]
fn hints_for_habits_from_other_languages() {
    for (expr, part) in [
        ("args.a and args.b", "the and operator is `&&`"),
        ("args.a or args.b", "the or operator is `||`"),
        ("args.ok == True", "the literal is `true`"),
        ("args.x == None", "the literal is `null`"),
        ("len(args.items) > 2", "did you mean `size`?"),
        ("args.name.startswith('a')", "did you mean `startsWith`?"),
        ("args.a = 1", "compare with `==`"),
        ("args.a & args.b", "the and operator is `&&`"),
    ] {
        let e = cel_lite::compile(expr).unwrap_err();
        assert!(e.message().contains(part), "{expr}: {}", e.message());
    }
}
