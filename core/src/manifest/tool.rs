//! The loaded [`Tool`]: a checked manifest with where it came from, its
//! definition digest and pin state, and its description as one JSON object.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::model::{risk_name, sanitizer_name, side_effect_name, transport_name, Constraint, ContentKinds, Manifest, PinState, TrustLabel};
use crate::canonical;
use crate::cel_lite::Program;
use crate::error::Error;
use crate::validate::SchemaValidator;

/// A loaded tool: its manifest, where it came from, and its digest.
#[derive(Debug, Clone)]
pub struct Tool {
    pub(super) manifest: Manifest,
    pub(super) digest: String,
    pub(super) pin: PinState,
    pub(super) file: Option<String>,
    pub(super) path: Option<PathBuf>,
    pub(super) max_output_bytes: u64,
    pub(super) validator: SchemaValidator,
    /// The compiled `spec.output_schema` (issue 22; what step 9 checks the output with).
    pub(super) output_validator: Option<SchemaValidator>,
    /// `spec.approval.when`, compiled once when the manifest was checked.
    pub(super) approval_when: Option<Arc<Program>>,
}

impl Tool {
    /// The tool as one of the governed built-in tools (issue 20): reached by
    /// the core itself, never a host handler; `egress` is the harness's
    /// `spec.builtins.egress` for `fetch`, otherwise empty.
    pub(crate) fn into_builtin(mut self, egress: Vec<String>, max_output_bytes: u64) -> Tool {
        self.manifest.transport = super::model::Transport::Builtin;
        self.manifest.handler = None;
        self.manifest.egress_declared = !egress.is_empty();
        self.manifest.egress = egress;
        self.max_output_bytes = max_output_bytes;
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The pin state.
    pub fn pin(&self) -> PinState {
        self.pin
    }

    /// The digest of the current `{name, description, input_schema}`.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The compiled `spec.input_schema` (what step 2 validates arguments with).
    pub fn validator(&self) -> &SchemaValidator {
        &self.validator
    }

    /// The compiled `spec.output_schema` (issue 22), when the manifest gives one.
    pub fn output_validator(&self) -> Option<&SchemaValidator> {
        self.output_validator.as_ref()
    }

    /// The compiled `spec.approval.when` (shared with the governor, which
    /// evaluates it at step 7), when the manifest has an approval.
    pub fn approval_program(&self) -> Option<&Arc<Program>> {
        self.approval_when.as_ref()
    }

    /// The parsed manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The manifest file relative to the harness directory (`/` separators),
    /// or the origin given for a manifest loaded on its own.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The manifest file's absolute path, when it came from a file.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// The effective `output.max_bytes` (the manifest's, or `tools.max_output_bytes`).
    pub fn max_output_bytes(&self) -> u64 {
        self.manifest.output.max_bytes.unwrap_or(self.max_output_bytes)
    }

    /// Everything about the tool as one JSON object: name, description,
    /// input_schema, digest, pin, and every spec field with defaults filled in.
    /// Durations are strings (`"30s"`) with a `*_ms` number beside them.
    pub fn describe(&self) -> Value {
        let m = &self.manifest;
        let mut o = Map::new();
        o.insert("name".into(), json!(m.name));
        o.insert("description".into(), json!(m.description));
        o.insert("input_schema".into(), m.input_schema.clone());
        // Only a tool that declares one has the key (issue 22).
        if let Some(schema) = &m.output_schema {
            o.insert("output_schema".into(), schema.clone());
        }
        o.insert("digest".into(), json!(self.digest));
        o.insert("pinned_digest".into(), json!(m.definition_digest));
        o.insert("pin".into(), json!(self.pin.as_str()));
        o.insert("file".into(), json!(self.file));
        o.insert("version".into(), json!(m.version));
        o.insert("owner".into(), json!(m.owner));
        // Only a tool with a title has the key, so other tools' describe and
        // lock digests stay as they were (issue 22).
        if let Some(title) = &m.title {
            o.insert("title".into(), json!(title));
        }
        o.insert("transport".into(), json!(transport_name(m.transport)));
        o.insert("handler".into(), json!(m.handler));
        o.insert("url".into(), json!(m.url));
        o.insert("headers_env".into(), json!(m.headers_env));
        o.insert("server".into(), json!(m.server));
        o.insert("sandbox".into(), json!(m.sandbox));
        o.insert("code_arg".into(), json!(m.code_arg));
        if let Some(p) = &m.process {
            o.insert("process".into(), describe_process(p));
        }
        // Only tools that declare them have these keys (issue 21).
        if let super::EffectField::Contract(c) = &m.effect {
            o.insert("effect".into(), c.describe());
        }
        if !m.secrets.is_empty() {
            o.insert("secrets".into(), json!(m.secrets));
        }
        if m.native_secrets {
            o.insert("secrets_delivery".into(), json!("native"));
        }
        // Only an mcp tool that declares them has the key (issue 22).
        if !m.client_capabilities.is_empty() {
            o.insert("client_capabilities".into(), json!(m.client_capabilities.iter().map(|c| c.as_str()).collect::<Vec<_>>()));
        }
        // Only tools that write `spec.flow` (even `sinks: []`) have the key:
        // it decides, so it is part of the policy version (issue 23).
        if let Some(flow) = describe_flow(m) {
            o.insert("flow".into(), flow);
        }
        o.insert(
            "limits".into(),
            json!({
                "timeout": m.limits.timeout.to_text(),
                "timeout_ms": m.limits.timeout.ms,
                "max_memory_mb": m.limits.max_memory_mb,
                "max_output_bytes": m.limits.max_output_bytes,
            }),
        );
        o.insert("timeout".into(), json!(m.timeout.to_text()));
        o.insert("timeout_ms".into(), json!(m.timeout.ms));
        o.insert("side_effect".into(), json!(side_effect_name(m.side_effect)));
        o.insert("risk".into(), json!(risk_name(m.risk)));
        o.insert("data_access".into(), json!(m.data_access));
        o.insert("egress".into(), json!(m.egress));
        o.insert("scopes".into(), json!(m.scopes));
        o.insert("tenants".into(), json!(m.tenants));
        o.insert("enabled".into(), json!(m.enabled));
        o.insert(
            "rate_limit".into(),
            match &m.rate_limit {
                None => Value::Null,
                Some(r) => json!({
                    "per_principal": r.per_principal.map(|x| x.to_text()),
                    "per_tenant": r.per_tenant.map(|x| x.to_text()),
                }),
            },
        );
        o.insert(
            "approval".into(),
            match &m.approval {
                None => Value::Null,
                Some(a) => json!({"when": a.when, "approver_role": a.approver_role, "by": a.by.as_str()}),
            },
        );
        let mut output = Map::new();
        output.insert("max_bytes".into(), json!(self.max_output_bytes()));
        output.insert("sanitize".into(), json!(m.output.sanitize.iter().map(|s| sanitizer_name(*s)).collect::<Vec<_>>()));
        output.insert(
            "label".into(),
            json!(match m.output.label {
                TrustLabel::Untrusted => "untrusted",
                TrustLabel::Trusted => "trusted",
            }),
        );
        // Only a tool that narrows its content has the key (as `effect`), so
        // describe and lock digests of every other tool stay as they were.
        if m.output.content == ContentKinds::TextOnly {
            output.insert("content".into(), json!("text_only"));
        }
        o.insert("output".into(), Value::Object(output));
        o.insert(
            "payload_constraints".into(),
            match &m.payload_constraints {
                None => Value::Null,
                Some(pc) => json!({"input": constraints_json(&pc.input), "output": constraints_json(&pc.output)}),
            },
        );
        Value::Object(o)
    }
}

impl Tool {
    /// Appends the canonical JSON text of [`Tool::describe`] (as
    /// [`canonical::write_value`] would write it at `depth`) without
    /// building the value: the governor's policy version hashes it for every
    /// tool at load. Keys are written in code point order; a test holds the
    /// two texts equal.
    pub(crate) fn write_description(&self, out: &mut String, depth: usize) -> Result<(), Error> {
        let m = &self.manifest;
        // The depth of the description's fields (and of the nested objects' own check).
        let depth = canonical::enter(depth)?;
        out.push_str("{\"approval\":");
        match &m.approval {
            None => out.push_str("null"),
            Some(a) => {
                canonical::enter(depth)?;
                out.push_str("{\"approver_role\":");
                canonical::write_opt_str(out, a.approver_role.as_deref());
                out.push_str(",\"by\":");
                canonical::write_str(out, a.by.as_str());
                out.push_str(",\"when\":");
                canonical::write_str(out, &a.when);
                out.push('}');
            }
        }
        if !m.client_capabilities.is_empty() {
            out.push_str(",\"client_capabilities\":");
            let names: Vec<String> = m.client_capabilities.iter().map(|c| c.as_str().to_string()).collect();
            canonical::write_strs(out, &names, depth)?;
        }
        out.push_str(",\"code_arg\":");
        canonical::write_str(out, &m.code_arg);
        out.push_str(",\"data_access\":");
        canonical::write_strs(out, &m.data_access, depth)?;
        out.push_str(",\"description\":");
        canonical::write_str(out, &m.description);
        out.push_str(",\"digest\":");
        canonical::write_str(out, &self.digest);
        if let super::EffectField::Contract(c) = &m.effect {
            // Only tools with a contract have the key; small: built as a value.
            out.push_str(",\"effect\":");
            canonical::write_value(out, &c.describe(), depth)?;
        }
        out.push_str(",\"egress\":");
        canonical::write_strs(out, &m.egress, depth)?;
        out.push_str(",\"enabled\":");
        out.push_str(if m.enabled { "true" } else { "false" });
        out.push_str(",\"file\":");
        canonical::write_opt_str(out, self.file.as_deref());
        if let Some(flow) = describe_flow(m) {
            // Only tools that write `spec.flow` have the key; small: built as a value.
            out.push_str(",\"flow\":");
            canonical::write_value(out, &flow, depth)?;
        }
        out.push_str(",\"handler\":");
        canonical::write_opt_str(out, m.handler.as_deref());
        out.push_str(",\"headers_env\":");
        canonical::enter(depth)?;
        out.push('{');
        // A BTreeMap: already in code point (UTF-8 byte) order.
        for (i, (name, var)) in m.headers_env.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            canonical::write_str(out, name);
            out.push(':');
            canonical::write_str(out, var);
        }
        out.push('}');
        out.push_str(",\"input_schema\":");
        canonical::write_value(out, &m.input_schema, depth)?;
        out.push_str(",\"limits\":");
        canonical::enter(depth)?;
        out.push_str("{\"max_memory_mb\":");
        canonical::write_u64(out, m.limits.max_memory_mb)?;
        out.push_str(",\"max_output_bytes\":");
        canonical::write_u64(out, m.limits.max_output_bytes)?;
        out.push_str(",\"timeout\":");
        canonical::write_str(out, &m.limits.timeout.to_text());
        out.push_str(",\"timeout_ms\":");
        canonical::write_u64(out, m.limits.timeout.ms)?;
        out.push_str("},\"name\":");
        canonical::write_str(out, &m.name);
        out.push_str(",\"output\":");
        canonical::enter(depth)?;
        out.push('{');
        if m.output.content == ContentKinds::TextOnly {
            out.push_str("\"content\":\"text_only\",");
        }
        out.push_str("\"label\":");
        out.push_str(match m.output.label {
            TrustLabel::Untrusted => "\"untrusted\"",
            TrustLabel::Trusted => "\"trusted\"",
        });
        out.push_str(",\"max_bytes\":");
        canonical::write_u64(out, self.max_output_bytes())?;
        out.push_str(",\"sanitize\":");
        canonical::enter(depth + 1)?;
        out.push('[');
        for (i, s) in m.output.sanitize.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            canonical::write_str(out, sanitizer_name(*s));
        }
        out.push_str("]}");
        if let Some(schema) = &m.output_schema {
            out.push_str(",\"output_schema\":");
            canonical::write_value(out, schema, depth)?;
        }
        out.push_str(",\"owner\":");
        canonical::write_opt_str(out, m.owner.as_deref());
        out.push_str(",\"payload_constraints\":");
        match &m.payload_constraints {
            None => out.push_str("null"),
            // Rare and small: built as a value.
            Some(pc) => {
                let v = json!({"input": constraints_json(&pc.input), "output": constraints_json(&pc.output)});
                canonical::write_value(out, &v, depth)?;
            }
        }
        out.push_str(",\"pin\":");
        canonical::write_str(out, self.pin.as_str());
        out.push_str(",\"pinned_digest\":");
        canonical::write_opt_str(out, m.definition_digest.as_deref());
        if let Some(p) = &m.process {
            // Only process tools have the key; rare and small: built as a value.
            out.push_str(",\"process\":");
            canonical::write_value(out, &describe_process(p), depth)?;
        }
        out.push_str(",\"rate_limit\":");
        match &m.rate_limit {
            None => out.push_str("null"),
            Some(r) => {
                canonical::enter(depth)?;
                out.push_str("{\"per_principal\":");
                canonical::write_opt_str(out, r.per_principal.map(|x| x.to_text()).as_deref());
                out.push_str(",\"per_tenant\":");
                canonical::write_opt_str(out, r.per_tenant.map(|x| x.to_text()).as_deref());
                out.push('}');
            }
        }
        out.push_str(",\"risk\":");
        canonical::write_str(out, risk_name(m.risk));
        out.push_str(",\"sandbox\":");
        canonical::write_opt_str(out, m.sandbox.as_deref());
        out.push_str(",\"scopes\":");
        canonical::write_strs(out, &m.scopes, depth)?;
        if !m.secrets.is_empty() {
            out.push_str(",\"secrets\":");
            canonical::write_strs(out, &m.secrets, depth)?;
        }
        if m.native_secrets {
            out.push_str(",\"secrets_delivery\":\"native\"");
        }
        out.push_str(",\"server\":");
        canonical::write_opt_str(out, m.server.as_deref());
        out.push_str(",\"side_effect\":");
        canonical::write_str(out, side_effect_name(m.side_effect));
        out.push_str(",\"tenants\":");
        canonical::write_strs(out, &m.tenants, depth)?;
        out.push_str(",\"timeout\":");
        canonical::write_str(out, &m.timeout.to_text());
        out.push_str(",\"timeout_ms\":");
        canonical::write_u64(out, m.timeout.ms)?;
        if let Some(title) = &m.title {
            out.push_str(",\"title\":");
            canonical::write_str(out, title);
        }
        out.push_str(",\"transport\":");
        canonical::write_str(out, transport_name(m.transport));
        out.push_str(",\"url\":");
        canonical::write_opt_str(out, m.url.as_deref());
        out.push_str(",\"version\":");
        canonical::write_opt_str(out, m.version.as_deref());
        out.push('}');
        Ok(())
    }
}

/// `spec.flow` as written (`identifies`, `identifies_when_named`, `intent`, `links`, `links_when_named`, `sinks`), or `None`.
fn describe_flow(m: &super::model::Manifest) -> Option<Value> {
    let mut flow = Map::new();
    if !m.identifies.is_empty() {
        flow.insert("identifies".into(), json!(m.identifies));
    }
    if !m.identifies_when_named.is_empty() {
        flow.insert("identifies_when_named".into(), json!(m.identifies_when_named));
    }
    if !m.links_when_named.is_empty() {
        flow.insert("links_when_named".into(), json!(m.links_when_named));
    }
    if let Some(intent) = &m.intent {
        flow.insert("intent".into(), json!(intent));
    }
    if let Some(links) = &m.links {
        flow.insert("links".into(), json!(links));
    }
    if let Some(sinks) = &m.sinks {
        flow.insert("sinks".into(), json!(sinks));
    }
    (!flow.is_empty()).then_some(Value::Object(flow))
}

fn constraints_json(map: &BTreeMap<String, Constraint>) -> Value {
    let mut out = Map::new();
    for (path, c) in map {
        let mut o = Map::new();
        if let Some(v) = c.non_empty {
            o.insert("non_empty".into(), json!(v));
        }
        if let Some(v) = c.max_length {
            o.insert("max_length".into(), json!(v));
        }
        if let Some(v) = c.min {
            o.insert("min".into(), number_json(v));
        }
        if let Some(v) = c.max {
            o.insert("max".into(), number_json(v));
        }
        if let Some(v) = &c.allowed_values {
            o.insert("allowed_values".into(), Value::Array(v.clone()));
        }
        if let Some(v) = c.min_items {
            o.insert("min_items".into(), json!(v));
        }
        if let Some(v) = c.max_items {
            o.insert("max_items".into(), json!(v));
        }
        out.insert(path.clone(), Value::Object(o));
    }
    Value::Object(out)
}

/// Integral values print as integers so every host shows the same number.
fn number_json(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
        #[expect(clippy::cast_possible_truncation, reason = "integral and within ±2^53")]
        let i = f as i64;
        json!(i)
    } else {
        json!(f)
    }
}

/// A process tool's fields; `confined` says whether the OS sandbox is required.
fn describe_process(p: &super::model::ProcessSpec) -> Value {
    let sb = &p.sandbox;
    json!({
        "command": p.command,
        "resolved_command": p.resolved.as_ref().map(|r| r.command.to_string_lossy().into_owned()),
        "args": p.args,
        "cwd": p.cwd,
        "env": p.env,
        "max_payload_bytes": p.max_payload_bytes,
        "confined": sb.required,
        "sandbox": {
            "required": sb.required,
            "profile": sb.profile,
            "grants": sb.grants.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
            "read_paths": sb.read_paths,
            "write_paths": sb.write_paths,
            "code_paths": sb.code_paths,
            "local_sockets": sb.local_sockets,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(spec: Value) -> Tool {
        Tool::from_manifest_value(
            &json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "t", "version": "1.0", "owner": "ö"}, "spec": spec}),
            "t.yaml",
        )
        .unwrap()
    }

    fn written(t: &Tool, depth: usize) -> Result<String, String> {
        let mut out = String::new();
        t.write_description(&mut out, depth).map(|()| out).map_err(|e| e.code().to_string())
    }

    fn canonical(t: &Tool, depth: usize) -> Result<String, String> {
        let mut out = String::new();
        canonical::write_value(&mut out, &t.describe(), depth).map(|()| out).map_err(|e| e.code().to_string())
    }

    #[test]
    fn output_content_and_title_are_described_only_when_given() {
        let narrow = tool(json!({"transport": "mcp", "server": "mcp://up", "output": {"content": "text_only"}}));
        assert_eq!(narrow.manifest().output.content, ContentKinds::TextOnly);
        assert_eq!(narrow.describe()["output"]["content"], json!("text_only"));
        let any = tool(json!({"transport": "mcp", "server": "mcp://up", "output": {"content": "any"}}));
        assert_eq!(any.manifest().output.content, ContentKinds::Any);
        assert!(any.describe()["output"].get("content").is_none());
        let bad = Tool::from_manifest_value(
            &json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "t"}, "spec": {"output": {"content": "images"}}}),
            "t.yaml",
        );
        assert!(bad.is_err());
        // A title is described only when given, and written as describe() says.
        let titled = Tool::from_manifest_value(
            &json!({"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": "t", "title": "Tëst"}, "spec": {"handler": "m:f"}}),
            "t.yaml",
        )
        .unwrap();
        assert_eq!(titled.describe()["title"], json!("Tëst"));
        assert!(narrow.describe().get("title").is_none());
        assert_eq!(written(&titled, 0), canonical(&titled, 0));
    }

    #[test]
    fn the_written_description_is_the_canonical_text_of_describe() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        for spec in [
            json!({"handler": "m:f"}),
            json!({"transport": "http", "url": "https://a.example/x", "headers_env": {"X-Ké": "TOKEN", "A": "B_1"}, "egress": ["a.example"],
                   "description": "line\nbreak \"quoted\" \u{1f600} \u{7f}", "risk": "critical", "side_effect": "destructive",
                   "data_access": ["pii:email", "db"], "scopes": ["a:b"], "tenants": ["acme", "beta"], "enabled": false,
                   "rate_limit": {"per_tenant": "5/h"}, "approval": {"when": "args.x > 1.5"},
                   "output": {"max_bytes": 1234, "sanitize": ["strip_instructions", "pii_redact"], "label": "trusted"},
                   "payload_constraints": {"input": {"x": {"min": 1.5, "max": 3, "allowed_values": [1, "a", null, true]}, "$": {"non_empty": true}},
                                           "output": {"items": {"min_items": 1, "max_items": 2, "max_length": 10}}},
                   "timeout": "1500ms", "flow": {"sinks": ["to", "Kö"], "links": ["body"], "identifies": {"to": "$[*].from", "cc": "$"}}}),
            json!({"handler": "m:f", "flow": {"sinks": []}}),
            json!({"transport": "code", "sandbox": "monty", "code_arg": "src", "limits": {"timeout": "2m", "max_memory_mb": 16, "max_output_bytes": 99},
                   "approval": {"when": true, "approver_role": "finance"}, "rate_limit": {"per_principal": "10/s"}}),
            json!({"handler": "m:f", "input_schema": deep, "definition_digest": format!("sha256:{}", "0".repeat(64))}),
            // Issue 22: only `text_only` adds the `content` key; only a title adds `title`.
            json!({"transport": "mcp", "server": "mcp://up", "output": {"content": "text_only", "max_bytes": 10}}),
            json!({"transport": "mcp", "server": "mcp://up", "output": {"content": "any"}}),
        ] {
            let t = tool(spec);
            for depth in [0, 2, 300] {
                assert_eq!(written(&t, depth), canonical(&t, depth), "{}", t.describe());
            }
            // Too deep for the schema (or the whole object): both refuse alike.
            assert_eq!(written(&t, 511).is_err(), canonical(&t, 511).is_err());
            assert_eq!(written(&t, 512), canonical(&t, 512));
        }
    }
}
