//! The audit trail proves itself (issue 24): a real trail written by the
//! governor through the JSON Lines and SQLite sinks, signed with a key from a
//! file, then edited, cut, reordered and forged; `harnessweaver audit verify`
//! must find each, and must pass the untouched trail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessweaver_core::audit::CheckpointKey;
use harnessweaver_core::governor::Governor;
use harnessweaver_core::{CallContext, Harness, Principal};
use harnessweaver_runtime::cli::run_with;
use serde_json::{json, Value};

static NEXT: AtomicUsize = AtomicUsize::new(0);

const TOOL: &str = "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: ping}\nspec:\n  handler: \"m:ping\"\n  description: Ping.\n  input_schema: {type: object, properties: {n: {type: integer}}}\n";

struct Trail {
    dir: PathBuf,
    key: CheckpointKey,
}

impl Trail {
    fn harness(&self) -> String {
        self.dir.join("harness.yaml").to_str().unwrap().to_string()
    }
    fn file(&self) -> PathBuf {
        self.dir.join("audit.jsonl")
    }
}

/// A harness writing to `sink`, signed by a fresh key in `audit.key`, a checkpoint every 3 records.
fn trail(sink: &str) -> Trail {
    trail_with(sink, "")
}

/// As [`trail`], with `extra` (`, key: value`) added to `spec.audit`.
fn trail_with(sink: &str, extra: &str) -> Trail {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("hw-audit-chain-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("tools")).unwrap();
    let key = CheckpointKey::generate().unwrap();
    fs::write(dir.join("audit.key"), key.seed_hex()).unwrap();
    fs::write(
        dir.join("harness.yaml"),
        format!(
            "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n  audit: {{sink: \"{sink}\", signing_key: audit.key, checkpoint_every: 3{extra}}}\n"
        ),
    )
    .unwrap();
    fs::write(dir.join("tools/ping.yaml"), TOOL).unwrap();
    Trail { dir, key }
}

fn governor(t: &Trail) -> Governor {
    let h = Harness::load(t.dir.join("harness.yaml")).unwrap();
    Governor::from_harness(&h, harnessweaver_runtime::governor_options()).unwrap()
}

/// `n` calls (one in three refused: bad args), then the governor is dropped (the closing checkpoint).
fn write_calls(t: &Trail, n: usize) {
    let g = governor(t);
    calls(&g, n);
}

fn calls(g: &Governor, n: usize) {
    let handler: harnessweaver_core::governor::Handler = std::sync::Arc::new(|_, _| Ok(json!("pong")));
    let handlers = std::collections::HashMap::from([("ping".to_string(), handler)]);
    for i in 0..n {
        let ctx = CallContext { principal: Principal::new(if i % 2 == 0 { "alice" } else { "bob" }), ..CallContext::default() };
        let args = if i % 3 == 2 { json!({"n": "not a number"}) } else { json!({"n": i}) };
        let _ = g.call("ping", args, &ctx, &handlers);
    }
}

fn verify(args: &[&str]) -> (i32, Value) {
    let mut all: Vec<String> = ["audit", "verify"].iter().chain(args).map(|s| s.to_string()).collect();
    all.push("--json".into());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&all, &mut out, &mut err);
    let out = String::from_utf8(out).unwrap();
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {}", String::from_utf8_lossy(&err))))
}

fn codes(report: &Value) -> Vec<String> {
    report["report"]["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_string()).collect()
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// The index of the line holding record `seq`.
fn line_of(lines: &[String], seq: u64) -> usize {
    lines.iter().position(|l| serde_json::from_str::<Value>(l).unwrap()["seq"] == seq).unwrap()
}

#[test]
fn an_untouched_trail_verifies_up_to_its_closing_checkpoint() {
    for sink in ["audit.jsonl", "sqlite:audit.db"] {
        let t = trail(sink);
        write_calls(&t, 7);
        let (code, report) = verify(&[&t.harness()]);
        assert_eq!(code, 0, "{sink}: {report}");
        assert_eq!(codes(&report), Vec::<String>::new(), "{sink}");
        assert_eq!(report["report"]["records"], 7);
        // Checkpoints after records 3 and 6, and the closing one after 7.
        assert_eq!(report["report"]["checkpoints"], 3);
        let good = &report["report"]["last_good_checkpoint"];
        assert_eq!((good["seq"].as_u64(), good["closing"].as_bool()), (Some(7), Some(true)), "{sink}: {report}");
        // The public key on the command line: trusted. Another key: not.
        let (code, _) = verify(&[&t.harness(), "--key", &t.key.public_hex()]);
        assert_eq!(code, 0);
        let other = CheckpointKey::generate().unwrap();
        let (code, report) = verify(&[&t.harness(), "--key", &other.public_hex()]);
        assert_eq!(code, 1, "{report}");
        assert!(codes(&report).iter().all(|c| c == "audit_untrusted_key" || c == "audit_unsigned_tail"), "{report}");
        assert_eq!(report["report"]["last_good_checkpoint"], Value::Null);
    }
}

#[test]
fn an_edited_record_is_found_and_the_last_good_checkpoint_named() {
    let t = trail("audit.jsonl");
    write_calls(&t, 7);
    let mut l = lines(&t.file());
    let i = line_of(&l, 5);
    assert!(l[i].contains("\"principal\":\"alice\""));
    l[i] = l[i].replace("\"principal\":\"alice\"", "\"principal\":\"mallory\"");
    write_lines(&t.file(), &l);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1, "{report}");
    let f = &report["report"]["findings"][0];
    assert_eq!((f["code"].as_str(), f["seq"].as_u64()), (Some("audit_modified"), Some(5)), "{report}");
    assert!(f["at"].as_str().unwrap().ends_with(&format!("audit.jsonl:{}", i + 1)), "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 3, "{report}");
}

#[test]
fn a_deleted_record_is_found() {
    let t = trail("audit.jsonl");
    write_calls(&t, 7);
    let mut l = lines(&t.file());
    l.remove(line_of(&l, 2));
    write_lines(&t.file(), &l);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    assert!(codes(&report).contains(&"audit_deleted".to_string()), "{report}");
    assert!(report["report"]["findings"][0]["message"].as_str().unwrap().contains("seq 2 is missing"), "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"], Value::Null, "{report}");
}

#[test]
fn reordered_records_are_found() {
    let t = trail("audit.jsonl");
    write_calls(&t, 7);
    let mut l = lines(&t.file());
    let (a, b) = (line_of(&l, 4), line_of(&l, 5));
    l.swap(a, b);
    write_lines(&t.file(), &l);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    let found = codes(&report);
    assert!(found.contains(&"audit_reordered".to_string()), "{report}");
    // Nothing was deleted or changed: only moved.
    assert!(!found.contains(&"audit_deleted".to_string()) && !found.contains(&"audit_modified".to_string()), "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 3, "{report}");
}

#[test]
fn an_inserted_record_is_found() {
    let t = trail("audit.jsonl");
    write_calls(&t, 4);
    let mut l = lines(&t.file());
    let i = line_of(&l, 2);
    // A copy of record 2 with another principal, and a line without chain fields.
    l.insert(i + 1, l[i].replace("bob", "eve"));
    l.insert(0, r#"{"tool":"ping","principal":"eve","decision":"allowed"}"#.to_string());
    write_lines(&t.file(), &l);
    let (_, report) = verify(&[&t.harness()]);
    assert_eq!(codes(&report).iter().filter(|c| *c == "audit_inserted").count(), 2, "{report}");
}

#[test]
fn a_record_cut_mid_write_is_found_and_the_sink_goes_on_after_it() {
    let t = trail("audit.jsonl");
    write_calls(&t, 4);
    // A crash in the middle of writing a record: half of a line, no newline.
    let text = fs::read_to_string(t.file()).unwrap();
    let l = lines(&t.file());
    let last_record = &l[line_of(&l, 4)];
    let cut = text.find(last_record.as_str()).unwrap() + last_record.len() / 2;
    fs::write(t.file(), &text[..cut]).unwrap();
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    assert!(codes(&report).contains(&"audit_truncated".to_string()), "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 3, "{report}");
    // A restarted sink continues the chain from record 3 on a fresh line.
    write_calls(&t, 2);
    let (_, report) = verify(&[&t.harness()]);
    assert_eq!(codes(&report), vec!["audit_truncated".to_string()], "{report}");
    assert_eq!(report["report"]["records"], 5);
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 5, "{report}");
}

#[test]
fn a_recomputed_chain_is_caught_by_the_signed_checkpoints() {
    use harnessweaver_core::audit::{record_digest, GENESIS};
    let t = trail("audit.jsonl");
    write_calls(&t, 7);
    // An attacker edits record 2 and rewrites every later `prev`, so the chain links again.
    let mut prev = GENESIS.to_string();
    let forged: Vec<String> = lines(&t.file())
        .into_iter()
        .map(|line| {
            let mut v: Value = serde_json::from_str(&line).unwrap();
            if v.get("checkpoint").is_some() {
                return line;
            }
            if v["seq"] == 2 {
                v["principal"] = json!("mallory");
            }
            v["prev"] = json!(prev);
            // Keep `seq` and `prev` first, as the sink writes them.
            let mut text = format!("{{\"seq\":{},\"prev\":\"{}\",", v["seq"], prev);
            let obj = v.as_object_mut().unwrap();
            obj.remove("seq");
            obj.remove("prev");
            text.push_str(&serde_json::to_string(obj).unwrap()[1..]);
            prev = record_digest(text.as_bytes());
            text
        })
        .collect();
    write_lines(&t.file(), &forged);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1, "{report}");
    let f = &report["report"]["findings"];
    assert!(f.as_array().unwrap().iter().any(|f| f["code"] == "audit_modified" && f["message"].as_str().unwrap().contains("checkpoint")), "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"], Value::Null, "{report}");
}

#[test]
fn a_cut_tail_of_a_signed_trail_is_reported() {
    let t = trail("audit.jsonl");
    write_calls(&t, 7);
    let l = lines(&t.file());
    // Records 7 and the closing checkpoint gone: proven up to 6, not closed.
    write_lines(&t.file(), &l[..line_of(&l, 7)]);
    let (_, report) = verify(&[&t.harness()]);
    assert_eq!(codes(&report), vec!["audit_unsigned_tail".to_string()], "{report}");
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 6);
}

#[test]
fn a_tampered_sqlite_trail_is_found() {
    let t = trail("sqlite:audit.db");
    write_calls(&t, 7);
    let db = t.dir.join("audit.db");
    let exec = |sql: &str| {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(sql).unwrap();
    };
    exec("UPDATE hw_audit SET event = replace(event, '\"alice\"', '\"mallory\"') WHERE seq = 5");
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    assert_eq!(
        (report["report"]["findings"][0]["code"].as_str(), report["report"]["findings"][0]["seq"].as_u64()),
        (Some("audit_modified"), Some(5)),
        "{report}"
    );
    exec("DELETE FROM hw_audit WHERE seq = 2");
    let (_, report) = verify(&[&t.harness()]);
    assert!(codes(&report).contains(&"audit_deleted".to_string()), "{report}");
    // Rows 3 and 4 swap places (their row numbers).
    exec("UPDATE hw_audit SET seq = -3 WHERE seq = 3; UPDATE hw_audit SET seq = 3 WHERE seq = 4; UPDATE hw_audit SET seq = 4 WHERE seq = -3;");
    let (_, report) = verify(&[&t.harness()]);
    assert!(codes(&report).contains(&"audit_reordered".to_string()), "{report}");
}

#[test]
fn two_sinks_on_one_file_keep_one_chain() {
    for sink in ["audit.jsonl", "sqlite:audit.db"] {
        let t = trail(sink);
        let (a, b) = (governor(&t), governor(&t));
        for _ in 0..3 {
            calls(&a, 2);
            calls(&b, 3);
        }
        drop((a, b));
        let (code, report) = verify(&[&t.harness()]);
        assert_eq!(code, 0, "{sink}: {report}");
        assert_eq!(report["report"]["records"], 15, "{sink}");
    }
}

#[test]
fn keygen_writes_a_key_the_harness_signs_with() {
    let t = trail("audit.jsonl");
    let out = t.dir.join("new.key");
    let args: Vec<String> = ["audit", "keygen", "--out", out.to_str().unwrap(), "--json"].iter().map(|s| s.to_string()).collect();
    let (mut o, mut e) = (Vec::new(), Vec::new());
    assert_eq!(run_with(&args, &mut o, &mut e), 0);
    let printed: Value = serde_json::from_slice(&o).unwrap();
    let key = CheckpointKey::parse(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(printed["public_key"], key.public_hex());
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&out).unwrap().permissions()) & 0o777, 0o600);
    // It will not overwrite a key.
    assert_eq!(run_with(&args, &mut Vec::new(), &mut Vec::new()), 1);
}

#[test]
fn a_forged_checkpoint_does_not_verify() {
    let t = trail("audit.jsonl");
    write_calls(&t, 4);
    // Someone moves the first checkpoint's claim to the next record without the key.
    let forged: Vec<String> = lines(&t.file())
        .into_iter()
        .map(|l| if l.contains("\"checkpoint\"") && !l.contains("\"closing\":true") { l.replace("\"seq\":3", "\"seq\":4") } else { l })
        .collect();
    write_lines(&t.file(), &forged);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    assert!(codes(&report).contains(&"audit_bad_signature".to_string()), "{report}");
}

#[test]
fn a_line_that_is_not_json_is_unreadable() {
    let t = trail("audit.jsonl");
    write_calls(&t, 3);
    let mut l = lines(&t.file());
    l.insert(1, "}{ not json".to_string());
    write_lines(&t.file(), &l);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 1);
    assert_eq!(report["report"]["findings"][0]["code"], "audit_unreadable", "{report}");
    assert!(report["report"]["findings"][0]["at"].as_str().unwrap().ends_with("audit.jsonl:2"));
}

#[test]
fn a_single_writer_trail_verifies_and_goes_on_after_a_cut_record() {
    let t = trail_with("audit.jsonl", ", single_writer: true");
    write_calls(&t, 7);
    let (code, report) = verify(&[&t.harness()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["report"]["records"], 7);
    // A crash in the middle of a record: the next single writer reads the file's end once and starts a fresh line.
    let text = fs::read_to_string(t.file()).unwrap();
    let l = lines(&t.file());
    let last_record = &l[line_of(&l, 7)];
    let cut = text.find(last_record.as_str()).unwrap() + last_record.len() / 2;
    fs::write(t.file(), &text[..cut]).unwrap();
    write_calls(&t, 2);
    let (_, report) = verify(&[&t.harness()]);
    assert_eq!(codes(&report), vec!["audit_truncated".to_string()], "{report}");
    assert_eq!(report["report"]["records"], 8);
    assert_eq!(report["report"]["last_good_checkpoint"]["seq"], 8, "{report}");
}

/// The codes of a load error's problems.
fn problem_codes(e: &harnessweaver_core::Error) -> Vec<&'static str> {
    e.problems().iter().map(|p| p.code.as_str()).collect()
}

#[test]
fn a_single_writer_refuses_to_share_its_file() {
    let t = trail_with("audit.jsonl", ", single_writer: true");
    let h = Harness::load(t.dir.join("harness.yaml")).unwrap();
    let single = Governor::from_harness(&h, harnessweaver_runtime::governor_options()).unwrap();
    // A second single writer, or a default (locking) sink, cannot open the file while it is open.
    let again = Governor::from_harness(&h, harnessweaver_runtime::governor_options()).map(|_| ()).unwrap_err();
    assert_eq!(problem_codes(&again), ["audit_single_writer_conflict"], "{again:?}");
    let shared = trail("audit.jsonl");
    fs::copy(shared.dir.join("harness.yaml"), t.dir.join("shared.yaml")).unwrap();
    let hs = Harness::load(t.dir.join("shared.yaml")).unwrap();
    let other = Governor::from_harness(&hs, harnessweaver_runtime::governor_options()).map(|_| ()).unwrap_err();
    assert_eq!(problem_codes(&other), ["audit_single_writer_conflict"], "{other:?}");
    calls(&single, 2);
    drop(single);
    // Closed: the file is free for a locking sink, which continues the chain.
    let g = Governor::from_harness(&hs, harnessweaver_runtime::governor_options()).unwrap();
    calls(&g, 2);
    drop(g);
    let (code, report) = verify(&[&t.dir.join("shared.yaml").to_string_lossy()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["report"]["records"], 4);
}
