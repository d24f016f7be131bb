//! The load benchmark's harness: `n` generated manifests, the same ones
//! bench/python/bench_load.py writes (YAML, each pinned, with a schema,
//! scopes, a rate limit, an approval condition and an output policy; http
//! transport), shared by `benches/load.rs` (criterion) and
//! `examples/profile_call.rs load N` (callgrind, perf).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use harnessweaver_core::definition_digest;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The schema of every manifest, as `json.dumps` writes it in bench_load.py.
const SCHEMA: &str = r#"{"type": "object", "additionalProperties": false, "required": ["record_id", "amount_usd"], "properties": {"record_id": {"type": "string", "pattern": "^R-[0-9]{6}$"}, "amount_usd": {"type": "number", "minimum": 0}, "note": {"type": "string", "maxLength": 500}, "notify": {"type": "boolean"}}}"#;

/// Writes a harness of `n` manifests under `root` (emptied first) and
/// returns the path of its harness.yaml.
pub fn write_load_harness(root: &Path, n: usize) -> PathBuf {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root.join("tools")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
    for i in 0..n {
        let name = format!("tool_{i:05}");
        let team = format!("t{}", i % 37);
        let description = format!("Update record kind {i} in the {team} service and notify its owner.");
        let digest = definition_digest(&name, &description, &schema).unwrap();
        let limit = 100 + i % 900;
        let mut text = String::with_capacity(1024);
        write!(
            text,
            "apiVersion: harnessweaver/v1\n\
             kind: Tool\n\
             metadata: {{ name: {name}, version: 1.{i}.0, owner: team-{team} }}\n\
             spec:\n  \
               definition_digest: \"{digest}\"\n  \
               transport: http\n  \
               url: https://svc-{team}.internal/v1/{name}\n  \
               description: {description}\n  \
               input_schema: {SCHEMA}\n  \
               side_effect: write_external\n  \
               effect: {{ kind: external_write, retry_mode: idempotency_key }}\n  \
               risk: medium\n  \
               egress: [svc-{team}.internal]\n  \
               scopes: [\"{team}:write\"]\n  \
               rate_limit: {{ per_principal: 100/m, per_tenant: 5000/h }}\n  \
               approval: {{ when: \"args.amount_usd > {limit} && !('finance' in principal.roles)\", approver_role: finance }}\n  \
               output: {{ max_bytes: 20000, sanitize: [pii_redact] }}\n  \
               timeout: 10s\n"
        )
        .unwrap();
        std::fs::write(root.join("tools").join(format!("{name}.yaml")), text).unwrap();
    }
    let harness = root.join("harness.yaml");
    std::fs::write(
        &harness,
        "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {name: bench-load}\n\
         spec:\n  mode: test\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  audit: {sink: none}\n",
    )
    .unwrap();
    harness
}
