//! `harnessweaver audit verify`: checks the hash chain and the signed
//! checkpoints of a JSON Lines or SQLite trail (the judging is the core's
//! `audit::verify`); `harnessweaver audit keygen`: a checkpoint signing key.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::args::{Opt, Spec, JSON};
use super::ui::{harness_path, Io, Paint};
use harnessweaver_core::audit::{self as audit, parse_public_key, CheckpointKey, Item, Report};
use harnessweaver_core::harness::AuditSink;

pub(crate) const VERIFY: Spec = Spec {
    path: "audit verify",
    synopsis: "[harness.yaml] [--file PATH] [--sqlite PATH] [--key PUBLIC]... [--json]",
    about: "Verifies the audit trail the harness writes (or --file, a JSON Lines trail, or --sqlite,
a SQLite file): every record's `prev` must be the digest of the record before
it and the `seq` numbers must run 1, 2, 3, ...; every checkpoint's Ed25519
signature must verify with a trusted public key and match the record it names.
Reports each modified, deleted, inserted or reordered record, a record cut
mid-write, and the last good checkpoint (the trail is proven up to it).
Trusted keys: each --key (64 hex digits, or a file holding them); without
--key, the public half of the harness's own `spec.audit.signing_key` when it
can be read. Records after the last checkpoint of a trail not closed are a
warning (a trail still being written has them). Exit 0 intact, 1 tampered.",
    opts: &[
        Opt::value("file", "PATH", "a JSON Lines trail to verify instead of the harness's sink"),
        Opt::value("sqlite", "PATH", "a SQLite trail to verify instead of the harness's sink"),
        Opt::value("key", "PUBLIC", "a trusted public key: 64 hex digits or a file holding them (repeatable: old and new keys after a rotation)"),
        JSON,
    ],
    positionals: &[("harness.yaml", false)],
};

pub(crate) const KEYGEN: Spec = Spec {
    path: "audit keygen",
    synopsis: "--out FILE",
    about: "Writes a new Ed25519 checkpoint signing key (64 hex digits, mode 0600) to FILE, which must
not exist, and prints its public key and key id. Name the file (or an
environment variable holding its text) in `spec.audit.signing_key`, and give
the public key to `audit verify --key`.",
    opts: &[Opt::value("out", "FILE", "where to write the secret key"), JSON],
    positionals: &[],
};

enum Trail {
    Jsonl(PathBuf),
    Sqlite(PathBuf),
}

pub(crate) fn verify(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&VERIFY, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let json = a.flag("json");
    let mut trusted: HashSet<String> = HashSet::new();
    for k in a.values("key") {
        let text = std::fs::read_to_string(k).unwrap_or_else(|_| k.to_string());
        match parse_public_key(&text) {
            Some(key) => {
                trusted.insert(audit::key_id(&key));
            }
            None => return io.usage(&VERIFY, &format!("`--key {k}` is neither 64 hex digits nor a file holding them")),
        }
    }
    let trail = if let Some(f) = a.value("file") {
        Trail::Jsonl(PathBuf::from(f))
    } else if let Some(f) = a.value("sqlite") {
        Trail::Sqlite(PathBuf::from(f))
    } else {
        let path = harness_path(a.pos(0));
        let harness = match io.load_harness(&path, json) {
            Ok(h) => h,
            Err(code) => return code,
        };
        if trusted.is_empty() {
            if let Ok(Some(key)) = audit::signing_key(&harness) {
                trusted.insert(key.id().to_string());
            }
        }
        match &harness.spec().audit_sink {
            AuditSink::Jsonl(file) => Trail::Jsonl(harness.dir().join(file)),
            AuditSink::Sqlite(file) => Trail::Sqlite(harness.dir().join(file)),
            AuditSink::None | AuditSink::Callback => {
                let _ = writeln!(
                    io.err,
                    "harnessweaver audit verify: `{}` keeps no JSON Lines or SQLite trail (`spec.audit.sink`) [no_audit_sink]",
                    path.display()
                );
                return 1;
            }
        }
    };
    let trusted = (!trusted.is_empty()).then_some(&trusted);
    let result = match &trail {
        Trail::Jsonl(file) => verify_jsonl(file, trusted),
        Trail::Sqlite(file) => crate::store::verify_sqlite(file, trusted),
    };
    match result {
        Ok(report) => print(io, &report, json),
        Err(message) => {
            let _ = writeln!(io.err, "harnessweaver audit verify: {message} [io_error]");
            1
        }
    }
}

/// Reads a JSON Lines trail and verifies it.
pub fn verify_jsonl(file: &Path, trusted: Option<&HashSet<String>>) -> Result<Report, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
    let name = file.display().to_string();
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // A file ending in a newline leaves an empty last piece; anything else there was cut mid-write.
    let cut = lines.last().is_some_and(|l| !l.is_empty());
    if !cut {
        lines.pop();
    }
    let at: Vec<String> = (1..=lines.len()).map(|n| format!("{name}:{n}")).collect();
    let last = lines.len();
    let items = lines.iter().zip(at.iter()).enumerate().map(|(i, (bytes, at))| Item { at, bytes, complete: !(cut && i + 1 == last) });
    Ok(audit::verify(items, trusted))
}

fn print(io: &mut Io<'_>, report: &Report, json: bool) -> i32 {
    let code = i32::from(!report.intact());
    if json {
        io.json(&json!({"ok": report.intact(), "report": report}));
        return code;
    }
    for f in &report.findings {
        let (paint, label) = if f.warning { (Paint::Yellow, "warning") } else { (Paint::Red, "tampered") };
        let label = io.paint(paint, label);
        let _ = writeln!(io.out, "{}: {label}: {} [{}]", f.at, f.message, f.code);
    }
    let good = report.last_good_checkpoint.as_ref().map_or_else(
        || "no good checkpoint".to_string(),
        |g| format!("last good checkpoint: seq {} at {} ({}{})", g.seq, g.at, g.key_id, if g.closing { ", closing" } else { "" }),
    );
    let verdict = if report.intact() { io.paint(Paint::Green, "intact") } else { io.paint(Paint::Red, "TAMPERED") };
    let _ = writeln!(io.out, "{verdict}: {} records, {} checkpoints; {good}", report.records, report.checkpoints);
    code
}

pub(crate) fn keygen(args: &[&str], io: &mut Io<'_>) -> i32 {
    let a = match io.parse(&KEYGEN, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let Some(out) = a.value("out") else { return io.usage(&KEYGEN, "`--out FILE` is required") };
    let key = match CheckpointKey::generate() {
        Ok(k) => k,
        Err(e) => {
            let _ = writeln!(io.err, "harnessweaver audit keygen: {e}");
            return 1;
        }
    };
    if let Err(e) = write_secret(Path::new(out), &key.seed_hex()) {
        let _ = writeln!(io.err, "harnessweaver audit keygen: cannot write `{out}`: {e} [io_error]");
        return 1;
    }
    if a.flag("json") {
        io.json(&json!({"ok": true, "file": out, "public_key": key.public_hex(), "key_id": key.id()}));
    } else {
        let _ = writeln!(io.out, "wrote `{out}`\npublic key: {}\nkey id: {}", key.public_hex(), key.id());
    }
    0
}

/// Creates `path` (it must not exist) readable by its owner only.
fn write_secret(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(path)?;
    writeln!(f, "{text}")
}
