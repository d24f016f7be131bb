//! The console's audit view: the harness's trail (JSON Lines or SQLite),
//! filtered by tool, principal, decision, code and time, and counted per code
//! and time bucket for the chart. Events carry digests, never arguments.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use harnessweaver_core::audit::Checkpoint;
use harnessweaver_core::harness::{AuditSink, Harness};

/// The newest events listed.
const LISTED: usize = 200;

#[derive(Debug, Default)]
struct Filter {
    tool: Option<String>,
    principal: Option<String>,
    decision: Option<String>,
    code: Option<String>,
    since_ms: Option<u64>,
    until_ms: Option<u64>,
    bucket_ms: u64,
}

fn parse(query: &str) -> Filter {
    let mut f = Filter { bucket_ms: 60_000, ..Filter::default() };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = decode(v);
        if v.is_empty() {
            continue;
        }
        match k {
            "tool" => f.tool = Some(v),
            "principal" => f.principal = Some(v),
            "decision" => f.decision = Some(v),
            "code" => f.code = Some(v),
            "since_ms" => f.since_ms = v.parse().ok(),
            "until_ms" => f.until_ms = v.parse().ok(),
            "bucket_ms" => f.bucket_ms = v.parse().ok().filter(|b| *b >= 1000).unwrap_or(60_000),
            _ => {}
        }
    }
    f
}

/// `%XX` and `+` decoded.
fn decode(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => match bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(byte) => {
                    out.push(byte);
                    i += 2;
                }
                None => out.push(b),
            },
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Filter {
    fn keeps(&self, e: &Value) -> bool {
        let s = |k: &str| e.get(k).and_then(Value::as_str);
        let ts = e.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        self.tool.as_deref().is_none_or(|t| s("tool") == Some(t))
            && self.principal.as_deref().is_none_or(|p| s("principal") == Some(p))
            && self.decision.as_deref().is_none_or(|d| s("decision") == Some(d))
            && self.code.as_deref().is_none_or(|c| s("code") == Some(c))
            && self.since_ms.is_none_or(|since| ts >= since)
            && self.until_ms.is_none_or(|until| ts < until)
    }
}

/// Every event of the harness's trail, oldest first.
fn events(harness: &Harness) -> Result<Vec<Value>, String> {
    match &harness.spec().audit_sink {
        AuditSink::Jsonl(file) => {
            let path = harness.dir().join(file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
            };
            Ok(text
                .lines()
                .filter(|l| Checkpoint::from_line(l.as_bytes()).is_none())
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v.get("tool").is_some())
                .collect())
        }
        AuditSink::Sqlite(file) => {
            let path = harness.dir().join(file);
            if !path.exists() {
                return Ok(Vec::new());
            }
            let cannot = |e: rusqlite::Error| format!("cannot read the audit table of `{}`: {e}", path.display());
            let conn = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(cannot)?;
            let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
            let has: i64 =
                conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'hw_audit'", [], |r| r.get(0)).map_err(cannot)?;
            if has == 0 {
                return Ok(Vec::new());
            }
            let mut stmt = conn.prepare("SELECT event FROM hw_audit ORDER BY seq").map_err(cannot)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(cannot)?;
            Ok(rows.filter_map(Result::ok).filter_map(|t| serde_json::from_str(&t).ok()).collect())
        }
        AuditSink::None | AuditSink::Callback => {
            Err("the harness keeps no audit trail the console can read (`spec.audit.sink`: a JSON Lines file or `sqlite:<path>`)".into())
        }
    }
}

/// The filtered events (newest first, at most 200) and the chart's series: calls per code (or `allowed`) per time bucket.
pub(super) fn query(harness: &Harness, query: &str) -> Result<Value, String> {
    let filter = parse(query);
    let all = events(harness)?;
    let kept: Vec<&Value> = all.iter().filter(|e| filter.keeps(e)).collect();
    let mut counts: BTreeMap<String, BTreeMap<u64, u64>> = BTreeMap::new();
    let mut buckets: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    for e in &kept {
        let ts = e.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        let bucket = ts - ts % filter.bucket_ms;
        buckets.insert(bucket);
        let label = e
            .get("code")
            .and_then(Value::as_str)
            .map_or_else(|| e.get("decision").and_then(Value::as_str).unwrap_or("?").to_string(), str::to_string);
        *counts.entry(label).or_default().entry(bucket).or_default() += 1;
    }
    let buckets: Vec<u64> = buckets.into_iter().collect();
    let series: Vec<Value> = counts
        .iter()
        .map(|(label, per)| json!({"label": label, "data": buckets.iter().map(|b| per.get(b).copied().unwrap_or(0)).collect::<Vec<_>>()}))
        .collect();
    let listed: Vec<Value> = kept
        .iter()
        .rev()
        .take(LISTED)
        .map(|e| {
            let mut e = (*e).clone();
            // The chain's fields are for `audit verify`, not for reading.
            if let Some(o) = e.as_object_mut() {
                o.remove("prev");
            }
            e
        })
        .collect();
    Ok(json!({"total": kept.len(), "events": listed, "chart": {"bucket_ms": filter.bucket_ms, "buckets": buckets, "series": series}}))
}
