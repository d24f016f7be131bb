//! `spec.policy`: its layers (inline or in `kind: Policy` files), their
//! rules with cel-lite conditions compiled at load, and each rule's example
//! calls.

use super::model::{Effect, EnforceMode, ExampleExpect, PolicyExample, PolicyLayer, PolicyRule};
use crate::check::Checker;
use crate::manifest::{self, check_header};
use crate::yaml::{Node, NodeValue, Pos};

/// A policy layer whose rules live in another file, read after harness.yaml.
pub(super) struct LayerFile {
    /// Index of the layer in `HarnessSpec::layers`.
    pub(super) layer: usize,
    /// The file as written.
    pub(super) file: String,
    /// Where `file` is written.
    pub(super) pos: Pos,
    /// Its field path.
    pub(super) path: String,
}

/// What `spec.policy` holds: the layers, the inline rules, and layer files to read.
#[derive(Default)]
pub(super) struct ParsedPolicy {
    /// The layers, highest first, the inline `harness` layer last.
    pub(super) layers: Vec<PolicyLayer>,
    /// Every inline rule, in layer order.
    pub(super) rules: Vec<PolicyRule>,
    /// Layers whose rules are in files.
    pub(super) files: Vec<LayerFile>,
}

const MODES: &[(&str, EnforceMode)] = &[("enforce", EnforceMode::Enforce), ("shadow", EnforceMode::Shadow)];
const DEFAULTS: &[(&str, bool)] = &[("allow", true), ("deny", false)];

pub(super) fn parse_policy(node: &Node, cx: &mut Checker, harness_file: &str) -> ParsedPolicy {
    let mut out = ParsedPolicy::default();
    let Some(mut p) = cx.map(node, "spec.policy") else {
        out.layers.push(PolicyLayer { name: "harness".into(), mode: EnforceMode::Enforce, default_allow: true, file: None });
        return out;
    };
    let mode = p.get("mode").and_then(|n| cx.choice(n, "spec.policy.mode", MODES)).unwrap_or(EnforceMode::Enforce);
    let default_allow = p.get("default").and_then(|n| cx.choice(n, "spec.policy.default", DEFAULTS)).unwrap_or(true);
    if let Some(n) = p.get("layers") {
        match &n.value {
            NodeValue::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("spec.policy.layers[{i}]");
                    let Some(mut l) = cx.map(item, &path) else { continue };
                    let name = l.require(cx, "name").and_then(|n| cx.string(n, &format!("{path}.name")));
                    let lmode = l.get("mode").and_then(|n| cx.choice(n, &format!("{path}.mode"), MODES)).unwrap_or(mode);
                    let ldefault = l.get("default").and_then(|n| cx.choice(n, &format!("{path}.default"), DEFAULTS)).unwrap_or(true);
                    let file = l.get("file").and_then(|n| cx.string(n, &format!("{path}.file")).map(|f| (f, n.pos)));
                    let rules_node = l.get("rules");
                    l.finish(cx);
                    let Some(name) = name else { continue };
                    if name == "harness" || out.layers.iter().any(|x| x.name == name) {
                        cx.report(
                            "invalid_value",
                            item.pos,
                            &format!("{path}.name"),
                            format!("policy layer `{name}` is named twice (`harness` is the inline rules)"),
                        );
                        continue;
                    }
                    let index = out.layers.len();
                    out.layers.push(PolicyLayer { name, mode: lmode, default_allow: ldefault, file: file.as_ref().map(|(f, _)| f.clone()) });
                    match (file, rules_node) {
                        (Some(_), Some(r)) => {
                            cx.report("forbidden_field", r.pos, &format!("{path}.rules"), format!("`{path}` names a `file`; its rules go there"))
                        }
                        (Some((file, pos)), None) => out.files.push(LayerFile { layer: index, file, pos, path: format!("{path}.file") }),
                        (None, Some(r)) => parse_rules(r, cx, &format!("{path}.rules"), index, lmode, harness_file, &mut out.rules),
                        (None, None) => {}
                    }
                }
            }
            _ => cx.report("wrong_type", n.pos, "spec.policy.layers", format!("`spec.policy.layers` must be a list, not {}", n.kind())),
        }
    }
    let harness_layer = out.layers.len();
    out.layers.push(PolicyLayer { name: "harness".into(), mode, default_allow, file: None });
    if let Some(n) = p.get("rules") {
        parse_rules(n, cx, "spec.policy.rules", harness_layer, mode, harness_file, &mut out.rules);
    }
    p.finish(cx);
    out
}

/// Reads a layer file (`kind: Policy`, `spec: {mode, default, rules}`);
/// its problems are reported against that file.
/// Returns the file's `spec.runs` node (issue 21), which narrows harness.yaml's.
pub(super) fn parse_layer_file<'n>(
    node: &'n Node,
    cx: &mut Checker,
    layer: &mut PolicyLayer,
    index: usize,
    file: &str,
    rules: &mut Vec<PolicyRule>,
) -> Option<&'n Node> {
    let mut doc = cx.map(node, "")?;
    check_header(&mut doc, cx, "Policy");
    if let Some(meta) = doc.get("metadata") {
        if let Some(mut m) = cx.map(meta, "metadata") {
            let _ = cx.opt_string(m.get("name"), "metadata.name");
            m.finish(cx);
        }
    }
    let spec = doc.require(cx, "spec");
    doc.finish(cx);
    let mut sp = spec.and_then(|n| cx.map(n, "spec"))?;
    if let Some(m) = sp.get("mode").and_then(|n| cx.choice(n, "spec.mode", MODES)) {
        layer.mode = m;
    }
    if let Some(d) = sp.get("default").and_then(|n| cx.choice(n, "spec.default", DEFAULTS)) {
        layer.default_allow = d;
    }
    if let Some(r) = sp.get("rules") {
        parse_rules(r, cx, "spec.rules", index, layer.mode, file, rules);
    }
    let runs = sp.get("runs");
    sp.finish(cx);
    runs
}

fn parse_rules(n: &Node, cx: &mut Checker, base: &str, layer: usize, layer_mode: EnforceMode, file: &str, rules: &mut Vec<PolicyRule>) {
    let NodeValue::Seq(items) = &n.value else {
        cx.report("wrong_type", n.pos, base, format!("`{base}` must be a list, not {}", n.kind()));
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("{base}[{i}]");
        let Some(mut r) = cx.map(item, &path) else { continue };
        let name = r.require(cx, "name").and_then(|n| cx.string(n, &format!("{path}.name")));
        let effect = r
            .require(cx, "effect")
            .and_then(|n| cx.choice(n, &format!("{path}.effect"), &[("allow", Effect::Allow), ("deny", Effect::Deny), ("approve", Effect::Approve)]));
        let tools = r.get("tools").and_then(|n| cx.strings(n, &format!("{path}.tools"))).unwrap_or_else(|| vec!["*".to_string()]);
        for t in &tools {
            if glob::Pattern::new(t).is_err() {
                let pos = r.get("tools").map_or(item.pos, |n| n.pos);
                cx.report("invalid_value", pos, &format!("{path}.tools"), format!("`{t}` is not a valid glob"));
            }
        }
        let (when, loc) = match r.get("when") {
            None => (Some("true".to_string()), item.pos),
            Some(n) => match n.value {
                NodeValue::Bool(b) => (Some(b.to_string()), n.pos),
                _ => (cx.string(n, &format!("{path}.when")), n.pos),
            },
        };
        let mode = r.get("mode").and_then(|n| cx.choice(n, &format!("{path}.mode"), MODES)).unwrap_or(layer_mode);
        let examples = r.get("examples").map(|n| parse_examples(n, cx, &format!("{path}.examples"))).unwrap_or_default();
        r.finish(cx);
        if let Some(text) = &when {
            let _ = manifest::check_condition(cx, text, loc.into(), &format!("{path}.when"));
        }
        let when = when.unwrap_or_default();
        if let (Some(name), Some(effect)) = (name, effect) {
            rules.push(PolicyRule { name, effect, tools, when, when_location: loc.into(), layer, mode, examples, file: file.to_string() });
        }
    }
}

fn parse_examples(node: &Node, cx: &mut Checker, base: &str) -> Vec<PolicyExample> {
    let mut out = Vec::new();
    let Some(mut m) = cx.map(node, base) else { return out };
    for (key, expect) in [("refuse", ExampleExpect::Refuse), ("allow", ExampleExpect::Allow)] {
        let Some(list) = m.get(key) else { continue };
        let NodeValue::Seq(items) = &list.value else {
            cx.report("wrong_type", list.pos, &format!("{base}.{key}"), format!("`{base}.{key}` must be a list of calls"));
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let path = format!("{base}.{key}[{i}]");
            let Some(mut c) = cx.map(item, &path) else { continue };
            let tool = c.require(cx, "tool").and_then(|n| cx.string(n, &format!("{path}.tool")));
            let mut json_of = |field: &'static str, default: serde_json::Value, cx: &mut Checker| match c.get(field) {
                None => Some(default),
                Some(n) => match n.to_json() {
                    Ok(v) => Some(v),
                    Err((pos, message)) => {
                        cx.report("invalid_value", pos, &format!("{path}.{field}"), message);
                        None
                    }
                },
            };
            let args = json_of("args", serde_json::json!({}), cx);
            let principal = json_of("principal", serde_json::json!({"id": "example"}), cx);
            let tenant = c.get("tenant").and_then(|n| cx.string(n, &format!("{path}.tenant")));
            c.finish(cx);
            if let (Some(tool), Some(args), Some(principal)) = (tool, args, principal) {
                out.push(PolicyExample { expect, tool, args, principal, tenant, location: item.pos.into(), path: path.clone() });
            }
        }
    }
    m.finish(cx);
    out
}
