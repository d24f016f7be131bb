//! The loaded [`Tool`]: a checked manifest with where it came from, its
//! definition digest and pin state, and its description as one JSON object.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::model::{risk_name, sanitizer_name, side_effect_name, transport_name, Constraint, Manifest, PinState, TrustLabel};
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
}

impl Tool {
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
        o.insert("digest".into(), json!(self.digest));
        o.insert("pinned_digest".into(), json!(m.definition_digest));
        o.insert("pin".into(), json!(self.pin.as_str()));
        o.insert("file".into(), json!(self.file));
        o.insert("version".into(), json!(m.version));
        o.insert("owner".into(), json!(m.owner));
        o.insert("transport".into(), json!(transport_name(m.transport)));
        o.insert("handler".into(), json!(m.handler));
        o.insert("url".into(), json!(m.url));
        o.insert("headers_env".into(), json!(m.headers_env));
        o.insert("server".into(), json!(m.server));
        o.insert("sandbox".into(), json!(m.sandbox));
        o.insert("code_arg".into(), json!(m.code_arg));
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
                Some(a) => json!({"when": a.when, "approver_role": a.approver_role}),
            },
        );
        o.insert(
            "output".into(),
            json!({
                "max_bytes": self.max_output_bytes(),
                "sanitize": m.output.sanitize.iter().map(|s| sanitizer_name(*s)).collect::<Vec<_>>(),
                "label": match m.output.label { TrustLabel::Untrusted => "untrusted", TrustLabel::Trusted => "trusted" },
            }),
        );
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
