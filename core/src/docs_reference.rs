//! The reference pages agree with the parsers: every field the manifest and
//! harness parsers read is a row of the field tables of `docs/manifest.md` and
//! `docs/harness.md`, and every row names a field the parsers read. The field
//! set comes from the parsers themselves (`check::fields_read` records each key
//! a parser asks for while it reads documents that set every mapping), so a
//! field added to a parser without a row, or a row for a field that is gone,
//! fails here.
//!
//! Paths are written as the problems write them (`spec.rate_limit.per_tenant`),
//! `[]` for a list item and `<…>` for a key the user chooses (a tool name, a
//! server name, a payload path).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::check::fields_read;
use crate::harness::Harness;
use crate::manifest::Tool;

/// A manifest that sets every mapping the manifest parser descends into.
const FULL_MANIFEST: &str = r#"
apiVersion: harnessweaver/v1
kind: Tool
metadata: { name: every_field, version: "1", owner: team, title: Every field }
spec:
  definition_digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"
  transport: native
  handler: "app:every_field"
  url: "https://example.invalid/x"
  headers_env: { Authorization: TOKEN }
  server: "mcp://s"
  sandbox: monty
  code_arg: code
  limits: { timeout: 1s, max_memory_mb: 8, max_output_bytes: 10 }
  description: every field
  input_schema: { type: object }
  timeout: 1s
  side_effect: read
  risk: low
  data_access: [a]
  egress: [b]
  flow: { sinks: [to], links: [body], identifies: { to: "$[*].sender" }, identifies_when_named: { cc: "$[*].cc" }, links_when_named: { bcc: "$.body" }, intent: [send] }
  scopes: [c]
  tenants: [d]
  enabled: true
  rate_limit: { per_principal: 1/s, per_tenant: 1/s }
  effect: { kind: external_write, retry_mode: reconcile, compensation: t, reconcile: t }
  secrets: [K]
  approval: { when: "true", approver_role: r, by: caller }
  output: { max_bytes: 10, sanitize: [pii_redact], label: trusted, content: text_only }
  payload_constraints:
    input: { KEY: { non_empty: true, max_length: 1, min: 0, max: 1, allowed_values: [1], min_items: 0, max_items: 1 } }
    output: { KEY: { non_empty: true } }
"#;

/// A process tool with every field (its `sandbox` is a mapping, unlike a code tool's).
const FULL_PROCESS_MANIFEST: &str = r#"
apiVersion: harnessweaver/v1
kind: Tool
metadata: { name: every_process_field }
spec:
  transport: process
  command: /bin/sh
  args: [a]
  cwd: .
  env: { LANG: LANG }
  max_payload_bytes: 10
  sandbox:
    required: true
    profile: default
    grants: [network, network_local, filesystem_read, filesystem_write, process]
    read_paths: [r]
    write_paths: [w]
    code_paths: [c]
    local_sockets: [s]
"#;

/// A harness that sets every mapping the harness parser descends into.
const FULL_HARNESS: &str = r#"
apiVersion: harnessweaver/v1
kind: Harness
metadata: { name: every_field }
spec:
  mode: test
  tools:
    manifests: ["tools/*.yaml"]
    require_manifest: true
    require_pins: false
    max_output_bytes: 10
    approval_by_risk: [critical]
    require_lock: false
  policy:
    mode: enforce
    default: allow
    rules:
      - name: r
        effect: allow
        tools: ["*"]
        when: "true"
        mode: enforce
        examples:
          allow: [{ tool: t, args: {}, principal: { id: p }, tenant: x }]
          refuse: [{ tool: t }]
    layers:
      - { name: inline, mode: enforce, default: allow, rules: [] }
      - { name: from_file, file: layer.yaml }
  flow: { trifecta: block, tainted_arguments: refuse, unrequested_actions: refuse, trust_single_value: [email] }
  budgets: { max_tool_calls: 1, per_tool: { KEY: 1 } }
  approvals: { allow_self_approval: false, max_open_per_principal: 3 }
  audit: { sink: none }
  effects: { require_contract: true, journal: memory }
  secrets: { K: { env: V }, F: { file: f } }
  secret_scopes: { KEY: [K] }
  runs: { sources: { KEY: { enabled: true, max_runs_per_day: 3, timeout: 1h } } }
  state: memory
  state_options: { rate_limits_on_store_error: closed, run_ttl: 1h, timeout: 1s }
  mcp:
    connect: lazy
    servers:
      KEY: { command: c, args: [a], env: { X: Y } }
      KEY2: { url: "https://example.invalid/mcp", headers_env: { Authorization: TOKEN } }
  builtins:
    workspace: .
    tools: [read_file, run_command]
    egress: ["https://docs.example.com"]
    shell: false
    sandbox: required
    host_reads: ["/usr/share/doc"]
    permission_file: permissions.yaml
    access:
      - { effect: allow, kind: network, origins: ["https://docs.example.com"] }
      - { effect: deny, kind: command.execute, command: [rm] }
      - { effect: allow, kind: filesystem.write, paths: ["docs/**"] }
  gateway:
    run: principal
    stdio: { principal: { id: p }, tenant: x }
    http:
      keys:
        - { token_sha256: "sha256:0000000000000000000000000000000000000000000000000000000000000000", principal: p, tenant: x }
        - { token_env: TOKEN, principal: p }
      jwt:
        algorithm: RS256
        secret_env: S
        public_key_file: k.pem
        jwks_file: k.json
        jwks_url: "https://idp.example/jwks.json"
        issuer: i
        audience: a
        leeway: 1
        claims: { principal: sub, roles: roles, scopes: scope, tenant: tenant }
    oauth:
      authorization_servers: ["https://idp.example"]
      resource: "https://gw.example/mcp"
      scopes_supported: [s]
      resource_name: n
      resource_documentation: "https://gw.example/doc"
    tls: { cert_file: c.pem, key_file: k.pem }
    console: true
"#;

const LAYER_FILE: &str = "apiVersion: harnessweaver/v1\nkind: Policy\nmetadata: { name: l }\nspec: { mode: enforce, default: allow, rules: [] }\n";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Turns recorded paths into the form the tables use: list indexes become
/// `[]`, keys of free-form mappings (recorded as `P.*`) become `<*>`.
fn normalise(read: &BTreeSet<String>) -> BTreeSet<String> {
    let strip_index = |p: &str| -> String {
        let mut out = String::new();
        let mut in_index = false;
        for c in p.chars() {
            match c {
                '[' if !in_index => {
                    in_index = true;
                    out.push('[');
                }
                ']' if in_index => {
                    in_index = false;
                    out.push(']');
                }
                c if in_index && c.is_ascii_digit() => {}
                c => out.push(c),
            }
        }
        out
    };
    let mut paths: BTreeSet<String> = read.iter().map(|p| strip_index(p)).collect();
    // Innermost last: a free-form mapping inside another (`servers.KEY.env.*`)
    // is renamed with its parent's key first, then handled itself.
    while let Some(free) = paths.iter().find(|p| p.ends_with(".*")).cloned() {
        paths.remove(&free);
        let prefix = free.trim_end_matches(".*");
        let renamed: Vec<(String, String)> = paths
            .iter()
            .filter_map(|p| {
                let rest = p.strip_prefix(prefix)?.strip_prefix('.')?;
                let tail = rest.find('.').map_or("", |i| &rest[i..]);
                Some((p.clone(), format!("{prefix}.<*>{tail}")))
            })
            .collect();
        for (old, new) in renamed {
            paths.remove(&old);
            paths.insert(new);
        }
    }
    paths
}

/// The field paths in the first column of every table whose header's first
/// cell is `Field`, with `<anything>` as `<*>`.
fn documented(page: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
    let mut out = BTreeSet::new();
    let mut in_table = false;
    for line in text.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        if cells[0] == "Field" {
            in_table = true;
            continue;
        }
        if !in_table || cells[0].starts_with("---") {
            continue;
        }
        for (i, chunk) in cells[0].split('`').enumerate() {
            if i % 2 == 1 {
                let mut path = String::new();
                let mut in_placeholder = false;
                for c in chunk.chars() {
                    match c {
                        '<' => {
                            in_placeholder = true;
                            path.push_str("<*>");
                        }
                        '>' => in_placeholder = false,
                        c if !in_placeholder => path.push(c),
                        _ => {}
                    }
                }
                out.insert(path);
            }
        }
    }
    out
}

/// Every recorded leaf is documented; every documented path was read (as a
/// leaf or as a mapping on the way to one).
fn compare(page: &str, read: &BTreeSet<String>, doc: &BTreeSet<String>) {
    let leaves: BTreeSet<&String> = read
        .iter()
        .filter(|p| !read.iter().any(|q| q.len() > p.len() && (q.starts_with(&format!("{p}.")) || q.starts_with(&format!("{p}[")))))
        .collect();
    let undocumented: Vec<&&String> = leaves.iter().filter(|p| !doc.contains(p.as_str())).collect();
    let unknown: Vec<&String> = doc.iter().filter(|p| !read.contains(*p)).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "{page} and the parser disagree.\n  read by the parser, no row in {page}: {undocumented:?}\n  rows in {page} the parser never reads: {unknown:?}\n\
         Add a row to a `| Field | … |` table of {page} for each field the parser reads, or remove the row of a field it no longer reads. \
         A new mapping (a field with fields of its own) must also be set in FULL_MANIFEST / FULL_HARNESS in core/src/docs_reference.rs, \
         or the parser never descends into it here."
    );
}

fn manifest_fields() -> BTreeSet<String> {
    let (_, mut read) = fields_read::record(|| Tool::from_manifest_text(FULL_MANIFEST, "every_field.yaml"));
    let (_, process) = fields_read::record(|| Tool::from_manifest_text(FULL_PROCESS_MANIFEST, "every_process_field.yaml"));
    read.extend(process);
    normalise(&read)
}

#[test]
fn manifest_reference_lists_every_field_the_parser_reads() {
    let read = manifest_fields();
    assert!(read.contains("spec.payload_constraints.input.<*>.max_items"), "the full manifest did not reach every mapping: {read:?}");
    compare("docs/manifest.md", &read, &documented("docs/manifest.md"));
}

#[test]
fn harness_reference_lists_every_field_the_parser_reads() {
    let dir = std::env::temp_dir().join(format!("hw-docs-reference-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("harness.yaml"), FULL_HARNESS).unwrap();
    std::fs::write(dir.join("layer.yaml"), LAYER_FILE).unwrap();
    std::fs::write(dir.join("tools/t.yaml"), "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: t }\nspec: { handler: \"app:t\" }\n")
        .unwrap();
    let (_, read) = fields_read::record(|| Harness::load(dir.join("harness.yaml")));
    let _ = std::fs::remove_dir_all(&dir);
    let read = normalise(&read);
    // The harness load reads the manifests and the layer file too: keep the
    // harness's own fields (those of `kind: Policy` files are in docs/policy.md).
    let tool = manifest_fields();
    let shared = ["apiVersion", "kind", "metadata", "metadata.name", "spec"];
    let harness: BTreeSet<String> =
        read.into_iter().filter(|p| shared.contains(&p.as_str()) || !tool.contains(p)).filter(|p| !is_layer_file_field(p)).collect();
    assert!(harness.contains("spec.mcp.servers.<*>.headers_env"), "the full harness did not reach every mapping: {harness:?}");
    compare("docs/harness.md", &harness, &documented("docs/harness.md"));
}

/// `spec.mode`, `spec.default` and `spec.rules` of a `kind: Policy` file, which
/// the harness has no field for.
fn is_layer_file_field(p: &str) -> bool {
    matches!(p, "spec.default" | "spec.rules") || p.starts_with("spec.rules[")
}

/// The rows of every table of `page` whose first header cell is `first`,
/// as cells.
fn table_rows(page: &str, first: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.trim_start().starts_with('|') {
            inside = false;
            continue;
        }
        let cells: Vec<String> = line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
        if cells[0] == first {
            inside = true;
        } else if inside && !cells[0].starts_with("---") {
            rows.push(cells);
        }
    }
    rows
}

/// The `ticked` words of a cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The codes in the first column of the `| Code | … |` tables of `page`.
fn code_table(page: &str) -> BTreeSet<String> {
    table_rows(page, "Code").iter().flat_map(|row| ticked(&row[0])).collect()
}

fn differ(page: &str, what: &str, documented: &BTreeSet<String>, defined: &BTreeSet<String>) {
    let undocumented: Vec<&String> = defined.difference(documented).collect();
    let unknown: Vec<&String> = documented.difference(defined).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "{page} and {what} in core/src/codes.rs disagree.\n  defined, no row in {page}: {undocumented:?}\n  rows in {page} that no code has: {unknown:?}"
    );
}

#[test]
fn governor_step_table_lists_the_steps_and_the_refusal_codes_of_each() {
    use crate::codes::{RefusalCode, Step};
    let rows = table_rows("docs/governor.md", "Step");
    let documented: Vec<(String, String)> = rows.iter().map(|r| (r[0].clone(), ticked(&r[1]).concat())).collect();
    let defined: Vec<(String, String)> = Step::ALL.iter().map(|s| (s.number().to_string(), s.as_str().to_string())).collect();
    assert_eq!(documented, defined, "docs/governor.md's step table differs from `Step` in core/src/codes.rs");
    for (row, step) in rows.iter().zip(Step::ALL) {
        let documented: BTreeSet<String> = ticked(&row[3]).into_iter().collect();
        let defined: BTreeSet<String> = RefusalCode::at(*step).map(|c| c.as_str().to_string()).collect();
        differ("docs/governor.md", &format!("the refusal codes of step `{step}`"), &documented, &defined);
    }
}

#[test]
fn governor_code_table_lists_every_argument_and_value_code() {
    use crate::codes::{ArgumentCode, ValueCode};
    let defined: BTreeSet<String> =
        ArgumentCode::ALL.iter().map(|c| c.as_str()).chain(ValueCode::ALL.iter().map(|c| c.as_str())).map(str::to_string).collect();
    differ("docs/governor.md", "`ArgumentCode` and `ValueCode`", &code_table("docs/governor.md"), &defined);
}

#[test]
fn threat_model_audit_table_lists_every_audit_finding() {
    use crate::codes::AuditFinding;
    let defined: BTreeSet<String> = AuditFinding::ALL.iter().map(|c| c.as_str().to_string()).collect();
    differ("docs/threat-model.md", "`AuditFinding`", &code_table("docs/threat-model.md"), &defined);
}

#[test]
fn manifest_code_table_lists_every_load_problem_code() {
    use crate::codes::ProblemCode;
    let defined: BTreeSet<String> = ProblemCode::ALL.iter().map(|c| c.as_str().to_string()).collect();
    differ("docs/manifest.md", "`ProblemCode`", &code_table("docs/manifest.md"), &defined);
}
