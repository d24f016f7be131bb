//! Per-call cost of the core's transports (release build; `make bench-transports`):
//!
//! - http: a governed call to the test server's `/echo` beside a bare ureq
//!   POST to the same URL (the difference is what the transport and the
//!   governor add);
//! - code: a trivial call (`x * 2`) on a warm worker, and cold (a fresh
//!   worker process per call);
//! - mcp: a governed `tools/call` on tests/mcp/py_server.py (warm session),
//!   and a cold load (start, initialize, tools/list, compare).
//!
//! Needs python3 (and `make mcp-servers` for the MCP part) and the release
//! sandbox worker (`HARNESSWEAVER_SANDBOX_WORKER`, or built into
//! target/sandbox-worker/<triple>/release/).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "bench code")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use harnessweaver_core::governor::GovernorOptions;
use harnessweaver_core::harness::McpServer;
use harnessweaver_core::{definition_digest, CallContext, LoadOptions, Principal};
use harnessweaver_runtime::transport::code::CodePool;
use harnessweaver_runtime::transport::mcp::list_served;
use harnessweaver_runtime::transport::TransportOptions;
use serde_json::{json, Value};
use std::hint::black_box;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn worker() -> PathBuf {
    if let Some(p) = std::env::var_os("HARNESSWEAVER_SANDBOX_WORKER") {
        return PathBuf::from(p);
    }
    let triple = std::env::var("CARGO_BUILD_TARGET").unwrap_or_default();
    let base = root().join("target/sandbox-worker");
    [base.join(&triple).join("release/harnessweaver-sandbox"), base.join("release/harnessweaver-sandbox")]
        .into_iter()
        .find(|p| p.is_file())
        .expect("build the release worker: cargo build --release --manifest-path sandbox/Cargo.toml --target-dir target/sandbox-worker")
}

struct Server(Child, u16);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_server() -> Server {
    let mut child = Command::new("python3")
        .arg(root().join("tests/servers/http_fixture_server.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap();
    Server(child, port)
}

#[path = "../tests/harness_dir/mod.rs"]
mod harness_dir;

/// A harness of `tools`, kept until the bench ends (its directory is left
/// behind, as the loaded runtime may still read it).
fn write_harness(name: &str, extra: &str, tools: &[(String, String)]) -> PathBuf {
    let tools: Vec<(&str, &str)> = tools.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
    let dir = harness_dir::write(&format!("bench-{name}"), extra, &tools);
    let path = dir.harness();
    std::mem::forget(dir);
    path
}

fn ctx() -> CallContext {
    CallContext { principal: Principal::new("bench"), ..CallContext::default() }
}

fn mean_us(label: &str, n: u32, mut f: impl FnMut()) -> f64 {
    f();
    let started = Instant::now();
    for _ in 0..n {
        f();
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("{label:<48} {us:>10.1} µs/call  (mean of {n})");
    us
}

fn main() {
    let mut c =
        Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500)).configure_from_args();
    let mut summary = Vec::new();

    // http ---------------------------------------------------------------------
    let server = http_server();
    let url = format!("http://127.0.0.1:{}/echo", server.1);
    let path = write_harness("http", "  mode: production\n", &[("echo".into(), format!("  transport: http\n  url: \"{url}\"\n"))]);
    let rt = harnessweaver_runtime::load(&path, LoadOptions::default()).unwrap();
    let args = json!({"order_id": "A-1234", "amount_usd": 12.5});
    assert!(rt.call("echo", args.clone(), &ctx()).is_allowed());
    let agent = ureq::Agent::new_with_defaults();
    let body = serde_json::to_vec(&args).unwrap();
    c.bench_function("http/bare ureq POST", |b| {
        b.iter(|| {
            let mut r = agent.post(&url).header("Content-Type", "application/json").send(&body[..]).unwrap();
            black_box(r.body_mut().read_to_vec().unwrap());
        });
    });
    c.bench_function("http/governed call", |b| b.iter(|| black_box(rt.call("echo", args.clone(), &ctx()))));
    let bare = mean_us("http: bare ureq POST (python server)", 300, || {
        let mut r = agent.post(&url).header("Content-Type", "application/json").send(&body[..]).unwrap();
        black_box(r.body_mut().read_to_vec().unwrap());
    });
    let governed = mean_us("http: governed call (steps 1-9 + transport)", 300, || {
        black_box(rt.call("echo", args.clone(), &ctx()));
    });
    summary.push(format!("http: governed {governed:.0} µs, bare {bare:.0} µs, added {:.0} µs", governed - bare));
    drop(rt);
    drop(server);

    // code ---------------------------------------------------------------------
    let worker = worker();
    let path = write_harness("code", "  mode: test\n", &[("py".into(), "  transport: code\n  sandbox: monty\n".into())]);
    let options = || LoadOptions {
        governor: GovernorOptions {
            backends: Some(harnessweaver_runtime::RuntimeBackends::shared(TransportOptions {
                sandbox_worker: Some(worker.clone()),
                ..TransportOptions::default()
            })),
            ..GovernorOptions::default()
        },
        ..LoadOptions::default()
    };
    let rt = harnessweaver_runtime::load(&path, options()).unwrap();
    let code_args = json!({"code": "x * 2", "x": 21});
    assert_eq!(rt.call("py", code_args.clone(), &ctx()).output.unwrap()["value"], 42);
    c.bench_function("code/warm worker, x * 2", |b| b.iter(|| black_box(rt.call("py", code_args.clone(), &ctx()))));
    let warm = mean_us("code: warm worker, `x * 2`", 500, || {
        black_box(rt.call("py", code_args.clone(), &ctx()));
    });
    // Cold: a pool that keeps no idle worker starts a process per call.
    let cold_pool = CodePool::new(Some(worker.clone()), Some(0));
    let rt_cold = harnessweaver_runtime::load(&path, options()).unwrap();
    let ticket = match rt_cold.begin("py", code_args.clone(), &ctx()) {
        harnessweaver_core::governor::Begin::Invoke(t) => t,
        harnessweaver_core::governor::Begin::Done(r) => panic!("{r:?}"),
    };
    let tool = harnessweaver_runtime::transport::code::CodeTool { code_arg: "code".into(), limits: Default::default() };
    let cold = mean_us("code: cold (spawn worker + call)", 50, || {
        black_box(cold_pool.invoke(&tool, &ticket));
    });
    summary.push(format!("code: warm {warm:.0} µs, cold {cold:.0} µs"));
    drop(rt);

    // mcp ----------------------------------------------------------------------
    let py = [root().join(".venv/bin/python"), root().join("target/mcp-venv/bin/python")].into_iter().find(|p| p.is_file());
    if let Some(py) = py {
        let server = McpServer::Command {
            command: py.to_string_lossy().into_owned(),
            args: vec![root().join("tests/mcp/py_server.py").to_string_lossy().into_owned()],
            env: Default::default(),
        };
        let served = list_served("py", &server).unwrap();
        let add: &Value = served.iter().find(|t| t["name"] == "add").unwrap();
        let digest = definition_digest("add", add["description"].as_str().unwrap(), &add["input_schema"]).unwrap();
        let McpServer::Command { command, args, .. } = &server else { unreachable!() };
        let path = write_harness(
            "mcp",
            &format!("  mcp:\n    servers:\n      py: {}\n", json!({"command": command, "args": args})),
            &[(
                "add".into(),
                format!(
                    "  transport: mcp\n  server: mcp://py\n  description: {}\n  input_schema: {}\n  definition_digest: \"{digest}\"\n",
                    add["description"], add["input_schema"]
                ),
            )],
        );
        let connect = mean_us("mcp: cold load (start, initialize, tools/list)", 5, || {
            black_box(harnessweaver_runtime::load(&path, LoadOptions::default()).unwrap());
        });
        let rt = harnessweaver_runtime::load(&path, LoadOptions::default()).unwrap();
        let a = json!({"a": 2, "b": 3});
        assert_eq!(rt.call("add", a.clone(), &ctx()).output, Some(json!("5")));
        c.bench_function("mcp/governed tools/call (python SDK server)", |b| b.iter(|| black_box(rt.call("add", a.clone(), &ctx()))));
        let warm = mean_us("mcp: governed tools/call, warm session", 200, || {
            black_box(rt.call("add", a.clone(), &ctx()));
        });
        summary.push(format!("mcp: warm call {warm:.0} µs, cold load {connect:.0} µs"));
    } else {
        println!("mcp: skipped (no python with the mcp SDK: make mcp-servers)");
    }
    println!("\nsummary:\n  {}", summary.join("\n  "));
    c.final_summary();
}
