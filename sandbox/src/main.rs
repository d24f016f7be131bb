//! `harnessweaver-sandbox`: the worker process of the `code` transport (S4:
//! code never runs in the host process).
//!
//! The host (`harnessweaver_core::transport::code`) starts it with an empty
//! environment and talks JSON lines over stdin/stdout, one request and one
//! response per line, many calls per worker:
//!
//! ```text
//! → {"code": "x * 2", "globals": {"x": 21}, "timeout_ms": 5000, "max_memory_bytes": 67108864, "max_output_bytes": 100000}
//! ← {"ok": true, "value": 42, "stdout": ""}
//! ← {"ok": false, "error": "ZeroDivisionError: division by zero (line 1)"}
//! ```
//!
//! Limits are enforced twice. Monty's own: `max_duration`, and `max_memory`
//! through `monty-alloc`, which must be this binary's global allocator (it
//! counts every byte; past the hard ceiling the process exits with
//! `OOM_EXIT_CODE`); print output is collected with a byte cap. And the OS's:
//! `--max-memory-mb` sets `RLIMIT_AS` (a backstop for memory that does not go
//! through the allocator), `RLIMIT_FSIZE` is 0 and `RLIMIT_CORE` is 0; the host
//! kills a worker that overruns its time or answers with too many bytes.
//!
//! Monty has no filesystem, network or environment access unless the host
//! answers its OS calls; this worker answers none (`MontyRun::run` turns them
//! into `NotImplementedError`).

use std::io::{BufRead, Write};
use std::time::Duration;

use monty::MontyRun;
use monty_types::{CompileOptions, MontyException, MontyObject, PrintWriter, ResourceLimits, ResourceTracker};
use serde_json::{json, Map, Value};

#[global_allocator]
static ALLOC: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

/// Address space beyond the sandbox's budget that the worker itself may use
/// (its binary, stack, the interpreter's own tables).
const AS_SLACK_MB: u64 = 256;

fn main() {
    let mut max_memory_mb: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--max-memory-mb" => max_memory_mb = args.next().and_then(|v| v.parse().ok()),
            "--version" => {
                println!("harnessweaver-sandbox {} (monty 0.0.23)", env!("CARGO_PKG_VERSION"));
                return;
            }
            _ => {}
        }
    }
    os_limits(max_memory_mb);
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut line = String::new();
    loop {
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(request) => handle(&request),
            Err(e) => json!({"ok": false, "error": format!("bad request: {e}")}),
        };
        let mut text = reply.to_string();
        text.push('\n');
        if stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).is_err() {
            return;
        }
    }
}

/// OS limits for the whole worker: no files written, no core dumps, and an
/// address-space cap above the memory budget.
fn os_limits(max_memory_mb: Option<u64>) {
    set_rlimit(libc::RLIMIT_FSIZE, 0);
    set_rlimit(libc::RLIMIT_CORE, 0);
    if let Some(mb) = max_memory_mb {
        let bytes = mb.saturating_mul(2).saturating_add(AS_SLACK_MB).saturating_mul(1024 * 1024);
        set_rlimit(libc::RLIMIT_AS, bytes);
    }
}

#[cfg(target_os = "linux")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_os = "linux"))]
type Resource = libc::c_int;

fn set_rlimit(resource: Resource, value: u64) {
    let limit = libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
    // SAFETY: setrlimit reads the struct we pass and touches nothing else.
    #[expect(unsafe_code, reason = "setrlimit has no safe wrapper in std")]
    let rc = unsafe { libc::setrlimit(resource, &limit) };
    if rc != 0 {
        eprintln!("harnessweaver-sandbox: setrlimit failed");
    }
}

fn handle(request: &Value) -> Value {
    let Some(code) = request.get("code").and_then(Value::as_str) else {
        return json!({"ok": false, "error": "bad request: no `code`"});
    };
    let timeout_ms = request.get("timeout_ms").and_then(Value::as_u64).unwrap_or(5_000);
    let max_memory = request.get("max_memory_bytes").and_then(Value::as_u64).unwrap_or(64 * 1024 * 1024);
    let max_output = request.get("max_output_bytes").and_then(Value::as_u64).unwrap_or(100_000);
    let empty = Map::new();
    let globals = request.get("globals").and_then(Value::as_object).unwrap_or(&empty);
    let names: Vec<String> = globals.keys().cloned().collect();
    let inputs: Vec<MontyObject> = globals.values().map(to_monty).collect();

    let max_memory = usize::try_from(max_memory).unwrap_or(usize::MAX);
    let max_output = usize::try_from(max_output).unwrap_or(usize::MAX);
    // Arm the allocator for this call (the baseline is the worker at rest).
    let _ = monty_alloc::set_limit(Some(max_memory), false);
    let mut stdout = String::new();
    let outcome = MontyRun::new(code.to_string(), "tool.py", names, CompileOptions::default()).and_then(|runner| {
        let limits =
            ResourceLimits { max_duration: Some(Duration::from_millis(timeout_ms)), max_memory: Some(max_memory), ..ResourceLimits::default() };
        runner.run(inputs, ResourceTracker::new(limits), PrintWriter::CollectString(&mut stdout, Some(max_output)))
    });
    // The reply is the worker's own work: lift the limit to build it.
    let _ = monty_alloc::set_limit(None, false);
    match outcome {
        Ok(value) => {
            let value = to_json(&value);
            let size = value.to_string().len().saturating_add(stdout.len());
            if size > max_output {
                return json!({"ok": false, "error": format!("MemoryError: the output is larger than the limit of {max_output} bytes")});
            }
            json!({"ok": true, "value": value, "stdout": stdout})
        }
        Err(e) => {
            // Monty reports the print cap as a memory error; say what it was.
            let summary = e.summary();
            if summary.starts_with("MemoryError") && summary.ends_with(&format!("> {max_output} bytes")) {
                return json!({"ok": false, "error": format!("MemoryError: the printed output is larger than the limit of {max_output} bytes")});
            }
            json!({"ok": false, "error": message(&e)})
        }
    }
}

/// `Type: message (line N)`, the way Python prints the last line of a traceback.
fn message(e: &MontyException) -> String {
    let summary = e.summary();
    match e.traceback().last() {
        Some(frame) => format!("{summary} (line {})", frame.start.line),
        None => summary,
    }
}

fn to_monty(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => MontyObject::Int(i),
            (None, Some(f)) => MontyObject::Float(f),
            (None, None) => MontyObject::None,
        },
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(items.iter().map(to_monty).collect()),
        Value::Object(map) => MontyObject::dict(map.iter().map(|(k, v)| (MontyObject::String(k.clone()), to_monty(v))).collect::<Vec<_>>()),
    }
}

/// The value as JSON: containers map to arrays and objects; what JSON cannot
/// hold (bytes, big integers, non-finite floats, dates, …) becomes its repr.
fn to_json(value: &MontyObject) -> Value {
    match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => json!(i),
        MontyObject::Float(f) if f.is_finite() => json!(f),
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) | MontyObject::Set(items) | MontyObject::FrozenSet(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        MontyObject::NamedTuple { values, .. } => Value::Array(values.iter().map(to_json).collect()),
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                let key = match k {
                    MontyObject::String(s) => s.clone(),
                    MontyObject::Int(i) => i.to_string(),
                    other => other.py_repr(),
                };
                map.insert(key, to_json(v));
            }
            Value::Object(map)
        }
        other => Value::String(other.py_repr()),
    }
}
