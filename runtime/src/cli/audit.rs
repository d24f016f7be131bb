//! `harnessweaver audit tail`: the last events of the harness's audit sink
//! (a JSON Lines file or the `hw_audit` table of a SQLite file), and with
//! `--follow` every event written after them.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::args::{Opt, Spec, JSON};
use super::ui::{harness_path, Io, Paint};
use harnessweaver_core::harness::AuditSink;

const USAGE: &str = "usage: harnessweaver audit tail [harness.yaml] [-n N] [--follow] [--json]
       harnessweaver audit verify [harness.yaml] [--file PATH] [--key PUBLIC]... [--json]
       harnessweaver audit keygen --out FILE";

const TAIL: Spec = Spec {
    path: "audit tail",
    synopsis: "[harness.yaml] [-n N] [--follow] [--json]",
    about: "Prints the last N events (default 10) of the audit trail the harness writes
(`spec.audit.sink`: a JSON Lines file, or `sqlite:<path>`), oldest first, one
line each: time, decision, tool, principal, tenant, code and step. --follow
keeps printing events as they are written (until interrupted). --json prints
each event as one JSON object per line (JSON Lines), as recorded. Exit 1 when
the harness does not load, when its sink is `none` or `callback` (there is
nothing to read), or when the sink cannot be read; a sink not written yet has
no events (exit 0).",
    opts: &[
        Opt::value("lines", "N", "how many of the last events to print (default 10; 0 with --follow: only new ones)").short('n'),
        Opt::flag("follow", "keep printing new events as they are written").short('f'),
        JSON,
    ],
    positionals: &[("harness.yaml", false)],
};

/// How often `--follow` looks for new events.
const POLL: std::time::Duration = std::time::Duration::from_millis(250);

pub(crate) fn run(args: &[&str], io: &mut Io<'_>) -> i32 {
    match args {
        ["tail", rest @ ..] => tail(rest, io),
        ["verify", rest @ ..] => super::audit_verify::verify(rest, io),
        ["keygen", rest @ ..] => super::audit_verify::keygen(rest, io),
        ["--help" | "-h", ..] => {
            let _ =
                writeln!(io.out, "{USAGE}\n\n{}\n\n{}\n\n{}", TAIL.help(), super::audit_verify::VERIFY.help(), super::audit_verify::KEYGEN.help());
            0
        }
        [] => {
            let _ = writeln!(io.err, "{USAGE}");
            2
        }
        [other, ..] => {
            let _ = writeln!(io.err, "harnessweaver audit: unknown subcommand `{other}`\n\n{USAGE}");
            2
        }
    }
}

enum Source {
    Jsonl(PathBuf),
    Sqlite(PathBuf),
}

fn tail(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&TAIL, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let n: usize = match a.value("lines").map(str::parse).transpose() {
        Ok(n) => n.unwrap_or(10),
        Err(_) => return io.usage(&TAIL, "`--lines` takes a whole number"),
    };
    let path = harness_path(a.pos(0));
    let harness = match io.load_harness(&path, json) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let source = match &harness.spec().audit_sink {
        AuditSink::Jsonl(file) => Source::Jsonl(harness.dir().join(file)),
        AuditSink::Sqlite(file) => Source::Sqlite(harness.dir().join(file)),
        AuditSink::None => {
            let why = format!(
                "`{}` keeps no audit trail (`spec.audit.sink` is `none`); set it to a JSON Lines path \
                 (`audit: {{sink: audit.jsonl}}`) or `sqlite:<path>` to keep one",
                path.display()
            );
            return no_sink(io, &why, json);
        }
        AuditSink::Callback => {
            let why = format!(
                "`{}` sends audit events to a host callback (`spec.audit.sink: callback`), which the CLI cannot read; \
                 set it to a JSON Lines path or `sqlite:<path>` to tail it",
                path.display()
            );
            return no_sink(io, &why, json);
        }
    };
    let result = match source {
        Source::Jsonl(file) => tail_jsonl(&file, n, a.flag("follow"), json, io),
        Source::Sqlite(file) => tail_sqlite(&file, n, a.flag("follow"), json, io),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            let _ = writeln!(io.err, "harnessweaver audit tail: {message} [io_error]");
            1
        }
    }
}

/// A sink the CLI cannot read: says how to configure one; exit 1.
fn no_sink(io: &mut Io<'_>, why: &str, json: bool) -> i32 {
    if json {
        io.json(&json!({"ok": false, "problems": [{"code": "no_audit_sink", "message": why}]}));
    } else {
        let _ = writeln!(io.err, "harnessweaver audit tail: {why} [no_audit_sink]");
    }
    1
}

/// Prints one event; `false` when stdout is gone (a closed pipe ends `--follow`).
fn print(io: &mut Io<'_>, event: &Value, json: bool) -> bool {
    let line = if json { event.to_string() } else { event_line(io, event) };
    writeln!(io.out, "{line}").and_then(|()| io.out.flush()).is_ok()
}

fn event_line(io: &Io<'_>, e: &Value) -> String {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
    let time = e.get("ts_ms").and_then(Value::as_u64).map_or_else(String::new, iso_time);
    let decision = s("decision");
    let painted = match decision {
        "allowed" => io.paint(Paint::Green, &format!("{decision:8}")),
        "refused" => io.paint(Paint::Red, &format!("{decision:8}")),
        _ => io.paint(Paint::Yellow, &format!("{decision:8}")),
    };
    let mut line = format!("{} {painted} {} principal={}", io.paint(Paint::Dim, &time), s("tool"), s("principal"));
    if !s("tenant").is_empty() {
        line.push_str(&format!(" tenant={}", s("tenant")));
    }
    if !s("code").is_empty() {
        line.push_str(&format!(" [{}", s("code")));
        if !s("step").is_empty() {
            line.push_str(&format!(" at {}", s("step")));
        }
        line.push(']');
    }
    if !s("approval_id").is_empty() {
        line.push_str(&format!(" approval={}", s("approval_id")));
    }
    line.push_str(&format!(" call={}", s("call_id")));
    line
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// Parses the complete lines of `chunk` (numbered from `first_line`); bad
/// lines are reported on stderr as file:line and skipped.
fn parse_lines(io: &mut Io<'_>, file: &Path, chunk: &str, first_line: usize) -> Vec<Value> {
    let mut events = Vec::new();
    for (i, line) in chunk.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            // Signed checkpoints of the chain (`audit verify` reads them) are not events.
            Ok(v) if v.get("checkpoint").is_some() => {}
            Ok(v) => events.push(v),
            Err(e) => {
                let _ = writeln!(io.err, "warning: {}:{}: not an audit event: {e}", file.display(), first_line + i);
            }
        }
    }
    events
}

fn tail_jsonl(file: &Path, n: usize, follow: bool, json: bool, io: &mut Io<'_>) -> Result<(), String> {
    let mut f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !follow => {
            if !json {
                let _ = writeln!(io.out, "no audit events yet (`{}` does not exist)", file.display());
            }
            return Ok(());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // --follow waits for the file to appear.
            loop {
                std::thread::sleep(POLL);
                if let Ok(f) = std::fs::File::open(file) {
                    break f;
                }
            }
        }
        Err(e) => return Err(format!("cannot read `{}`: {e}", file.display())),
    };
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
    // Only complete lines: a writer may be half-way through the last one.
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    let head = text.get(..complete).unwrap_or_default();
    let events = parse_lines(io, file, head, 1);
    let mut line_no = head.lines().count() + 1;
    if events.is_empty() && !follow && !json {
        let _ = writeln!(io.out, "no audit events yet in `{}`", file.display());
    }
    for e in events.iter().skip(events.len().saturating_sub(n)) {
        if !print(io, e, json) {
            return Ok(());
        }
    }
    if !follow {
        return Ok(());
    }
    let mut offset = complete as u64;
    let mut partial = String::new();
    loop {
        std::thread::sleep(POLL);
        let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        if len < offset {
            // Truncated or replaced: start again from its beginning.
            offset = 0;
            partial.clear();
            line_no = 1;
            f = std::fs::File::open(file).map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
        }
        if len == offset {
            continue;
        }
        f.seek(SeekFrom::Start(offset)).map_err(|e| e.to_string())?;
        let mut more = String::new();
        let read = f.read_to_string(&mut more).map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
        offset += read as u64;
        partial.push_str(&more);
        let complete = partial.rfind('\n').map_or(0, |i| i + 1);
        let chunk: String = partial.drain(..complete).collect();
        let events = parse_lines(io, file, &chunk, line_no);
        line_no += chunk.lines().count();
        for e in &events {
            if !print(io, e, json) {
                return Ok(());
            }
        }
    }
}

fn tail_sqlite(file: &Path, n: usize, follow: bool, json: bool, io: &mut Io<'_>) -> Result<(), String> {
    use rusqlite::OpenFlags;
    let cannot = |e: rusqlite::Error| format!("cannot read the audit table of `{}`: {e}", file.display());
    if !file.exists() && !follow {
        if !json {
            let _ = writeln!(io.out, "no audit events yet (`{}` does not exist)", file.display());
        }
        return Ok(());
    }
    while !file.exists() {
        std::thread::sleep(POLL);
    }
    let conn = rusqlite::Connection::open_with_flags(file, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(cannot)?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
    let rows = |after: i64, limit: i64| -> Result<Vec<(i64, String)>, String> {
        let has_table: bool = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'hw_audit'", [], |r| r.get::<_, i64>(0))
            .map_err(cannot)?
            > 0;
        if !has_table {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare_cached("SELECT seq, event FROM hw_audit WHERE seq > ?1 ORDER BY seq DESC LIMIT ?2").map_err(cannot)?;
        let got = stmt
            .query_map([after, limit], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(cannot)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(cannot)?;
        Ok(got.into_iter().rev().collect())
    };
    let mut last = 0i64;
    let mut limit = i64::try_from(n).unwrap_or(i64::MAX);
    let mut first = true;
    loop {
        if !first {
            std::thread::sleep(POLL);
        }
        let batch = rows(last, limit)?;
        if first && batch.is_empty() && !follow && !json {
            let _ = writeln!(io.out, "no audit events yet in `{}`", file.display());
        }
        if first && n == 0 {
            // Only new events: start after the newest.
            last = conn.query_row("SELECT coalesce(max(seq), 0) FROM hw_audit", [], |r| r.get(0)).unwrap_or(0);
        }
        for (seq, text) in batch {
            last = seq;
            let event = serde_json::from_str::<Value>(&text).unwrap_or_else(|e| json!({"unreadable": e.to_string(), "seq": seq}));
            if !print(io, &event, json) {
                return Ok(());
            }
        }
        if !follow {
            return Ok(());
        }
        first = false;
        limit = i64::MAX;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_time() {
        assert_eq!(super::iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso_time(1_796_012_108_123), "2026-11-30T04:15:08.123Z");
        assert_eq!(super::iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
