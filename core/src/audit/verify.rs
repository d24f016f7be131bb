//! Verifying a chained audit trail: every deleted, inserted, reordered or
//! modified record, a record cut mid-write, the checkpoints' signatures, and
//! the last checkpoint before the first problem (the trail is proven up to it).
//!
//! The input is the trail's items in storage order (JSON Lines lines, or
//! SQLite rows then checkpoint rows), each with where it was found; the
//! reading is the runtime's, the judging is here.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::chain::{record_digest, record_link, Checkpoint, GENESIS};
use crate::codes::AuditFinding;

/// One line or row of a trail.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// Where it is (`audit.jsonl:12`, `hw_audit seq 12`).
    pub at: &'a str,
    /// Its bytes (a line without its newline).
    pub bytes: &'a [u8],
    /// False for a last line with no newline (a write that did not finish).
    pub complete: bool,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found.
    pub code: AuditFinding,
    /// Where.
    pub at: String,
    /// The record's `seq`, when known.
    pub seq: Option<u64>,
    /// A sentence saying what is wrong.
    pub message: String,
    /// True for what is not proof of tampering: an unproven tail (a trail
    /// still being written) or checkpoint keys nobody vouched for.
    pub warning: bool,
}

/// A checkpoint that verified, and where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoodCheckpoint {
    /// Where it was found.
    pub at: String,
    /// The newest record it covers.
    pub seq: u64,
    /// The key that signed it.
    pub key_id: String,
    /// Whether the sink wrote it at close.
    pub closing: bool,
}

/// What `audit verify` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Chained records read.
    pub records: u64,
    /// Checkpoints read.
    pub checkpoints: u64,
    /// Every problem, in the order found.
    pub findings: Vec<Finding>,
    /// The last checkpoint (signature valid, trusted key, head matching) before the first problem.
    pub last_good_checkpoint: Option<GoodCheckpoint>,
}

impl Report {
    /// True when nothing but warnings was found.
    pub fn intact(&self) -> bool {
        self.findings.iter().all(|f| f.warning)
    }
}

struct Record<'a> {
    at: &'a str,
    seq: u64,
    prev: String,
    digest: String,
}

/// Verifies `items`. `trusted` lists the key ids (`ed25519:…`) whose
/// checkpoints count; `None` trusts the key each checkpoint carries (the
/// signature still has to verify) and says so in a finding.
pub fn verify<'a>(items: impl IntoIterator<Item = Item<'a>>, trusted: Option<&HashSet<String>>) -> Report {
    let mut report = Report::default();
    let mut records: Vec<Record<'a>> = Vec::new();
    let mut checkpoints: Vec<(&'a str, Checkpoint)> = Vec::new();
    for item in items {
        if item.bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(cp) = Checkpoint::from_line(item.bytes) {
            checkpoints.push((item.at, cp));
            continue;
        }
        match record_link(item.bytes) {
            Some((seq, prev)) => records.push(Record { at: item.at, seq, prev, digest: record_digest(item.bytes) }),
            // A record cut mid-write: the last line without its newline, or (after a
            // restart appended behind it) a line holding only the start of a record.
            None if !item.complete || (item.bytes.starts_with(b"{\"seq\":") && serde_json::from_slice::<serde_json::Value>(item.bytes).is_err()) => {
                find(&mut report, AuditFinding::Truncated, item.at, None, "a record cut mid-write (not whole JSON)")
            }
            None if serde_json::from_slice::<serde_json::Value>(item.bytes).is_err() => {
                find(&mut report, AuditFinding::Unreadable, item.at, None, "not a JSON record")
            }
            None => find(&mut report, AuditFinding::Inserted, item.at, None, "a record without `seq` and `prev` (not written by the chained sink)"),
        }
    }
    report.records = records.len() as u64;
    report.checkpoints = checkpoints.len() as u64;
    check_order(&records, &mut report);
    check_links(&records, &mut report);
    check_checkpoints(&records, &checkpoints, trusted, &mut report);
    report
}

fn find(report: &mut Report, code: AuditFinding, at: &str, seq: Option<u64>, message: impl Into<String>) {
    report.findings.push(Finding { code, at: at.to_string(), seq, message: message.into(), warning: false });
}

fn warn(report: &mut Report, code: AuditFinding, at: &str, seq: Option<u64>, message: impl Into<String>) {
    report.findings.push(Finding { code, at: at.to_string(), seq, message: message.into(), warning: true });
}

/// Gaps, repeats and records out of order, from the `seq` of each record.
fn check_order(records: &[Record<'_>], report: &mut Report) {
    let present: HashSet<u64> = records.iter().map(|r| r.seq).collect();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut max = records.first().map_or(0, |r| r.seq.saturating_sub(1));
    if let Some(first) = records.first().filter(|r| r.seq > 1 && r.prev != GENESIS) {
        // A trail starts at seq 1 unless it was cut at the front.
        let missing = (1..first.seq).filter(|s| !present.contains(s)).count();
        if missing > 0 {
            find(report, AuditFinding::Deleted, first.at, Some(first.seq), format!("{missing} record(s) before seq {} are missing", first.seq));
        }
    }
    for r in records {
        if !seen.insert(r.seq) {
            find(report, AuditFinding::Inserted, r.at, Some(r.seq), format!("a second record with seq {}", r.seq));
        } else if r.seq <= max {
            find(report, AuditFinding::Reordered, r.at, Some(r.seq), format!("seq {} comes after seq {max}", r.seq));
        } else {
            let missing: Vec<u64> = (max + 1..r.seq).filter(|s| !present.contains(s)).collect();
            if let (Some(first), Some(last)) = (missing.first(), missing.last()) {
                let which = if first == last { format!("seq {first} is") } else { format!("seq {first}..{last} ({} records) are", missing.len()) };
                find(report, AuditFinding::Deleted, r.at, Some(r.seq), format!("{which} missing before this record"));
            }
            max = r.seq;
        }
    }
}

/// Each record's `prev` against the digest of the record before it in seq order.
fn check_links(records: &[Record<'_>], report: &mut Report) {
    let mut by_seq: HashMap<u64, &Record<'_>> = HashMap::new();
    for r in records {
        by_seq.entry(r.seq).or_insert(r);
    }
    for r in records {
        if by_seq.get(&r.seq).is_some_and(|first| !std::ptr::eq(*first, r)) {
            continue; // a repeat, reported already
        }
        let expected = if r.seq == 1 { Some(GENESIS) } else { by_seq.get(&(r.seq - 1)).map(|p| p.digest.as_str()) };
        match expected {
            Some(digest) if digest != r.prev => {
                let (at, seq) = match by_seq.get(&(r.seq - 1)) {
                    Some(p) if r.seq > 1 => (p.at, p.seq),
                    _ => (r.at, r.seq),
                };
                find(
                    report,
                    AuditFinding::Modified,
                    at,
                    Some(seq),
                    format!("changed after it was written: its digest is not the `prev` of seq {}", r.seq),
                );
            }
            _ => {}
        }
    }
}

/// Signatures, keys and heads of the checkpoints; the last good one before
/// the first problem; an unproven tail.
fn check_checkpoints(records: &[Record<'_>], checkpoints: &[(&str, Checkpoint)], trusted: Option<&HashSet<String>>, report: &mut Report) {
    let by_seq: HashMap<u64, &Record<'_>> = records.iter().map(|r| (r.seq, r)).collect();
    let first_bad = report.findings.iter().filter_map(|f| f.seq).min();
    let mut untrusted_noted = false;
    let mut newest_proven = 0u64;
    let mut closed = false;
    for (at, cp) in checkpoints {
        if !cp.signature_ok() {
            find(report, AuditFinding::BadSignature, at, Some(cp.seq), format!("the checkpoint at seq {} does not verify", cp.seq));
            continue;
        }
        if let Some(keys) = trusted {
            if !keys.contains(&cp.key_id) {
                find(report, AuditFinding::UntrustedKey, at, Some(cp.seq), format!("signed by `{}`, not one of the keys given", cp.key_id));
                continue;
            }
        } else if !untrusted_noted {
            untrusted_noted = true;
            warn(report, AuditFinding::UntrustedKey, at, Some(cp.seq), format!("signed by `{}`; pass its public key (--key) to trust it", cp.key_id));
        }
        match by_seq.get(&cp.seq) {
            Some(r) if r.digest == cp.head => {}
            Some(r) => {
                find(report, AuditFinding::Modified, r.at, Some(cp.seq), format!("does not match the checkpoint at {at}"));
                continue;
            }
            None => continue, // its record is missing: reported as deleted
        }
        newest_proven = newest_proven.max(cp.seq);
        closed |= cp.closing && records.iter().map(|r| r.seq).max() == Some(cp.seq);
        let before_problem = first_bad.is_none_or(|bad| cp.seq < bad);
        if before_problem && report.last_good_checkpoint.as_ref().is_none_or(|g| g.seq <= cp.seq) {
            report.last_good_checkpoint = Some(GoodCheckpoint { at: at.to_string(), seq: cp.seq, key_id: cp.key_id.clone(), closing: cp.closing });
        }
    }
    let newest = records.iter().map(|r| r.seq).max().unwrap_or(0);
    // A signed trail that was not closed may have lost its end; an unsigned
    // one proves nothing after its last checkpoint.
    if newest > 0 && !closed && (newest > newest_proven || !checkpoints.is_empty()) {
        let at = by_seq.get(&newest).map_or("", |r| r.at);
        let message = if newest > newest_proven {
            format!(
                "records {}..{newest} are covered by no checkpoint, and no closing checkpoint follows (still being written, or cut)",
                newest_proven + 1
            )
        } else {
            format!("no closing checkpoint after seq {newest} (still being written, or records after it were cut)")
        };
        warn(report, AuditFinding::UnsignedTail, at, Some(newest), message);
    }
}
