//! The mcp transport against real third-party servers started by the test:
//! `@modelcontextprotocol/server-everything` (npm, tests/mcp/package.json) and
//! tests/mcp/py_server.py (the official Python SDK, tests/mcp/requirements.txt).
//! `make mcp-servers` installs both; these tests install them when missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

mod transport_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use harnessweaver_core::harness::McpServer;
use harnessweaver_core::{definition_digest, CallContext, CallResult, LoadOptions, Principal, Runtime};
use harnessweaver_runtime::transport::mcp::list_served;
use serde_json::{json, Value};
use transport_support::{root, Dir};

/// node + server-everything's entry point (npm ci in tests/mcp when missing).
fn everything() -> (String, Vec<String>) {
    static READY: OnceLock<()> = OnceLock::new();
    let dir = root().join("tests/mcp");
    READY.get_or_init(|| {
        if !dir.join("node_modules/@modelcontextprotocol/server-everything").is_dir() {
            let ok = Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&dir).status().unwrap().success();
            assert!(ok, "npm ci in tests/mcp failed");
        }
    });
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    ("node".into(), vec![entry.to_string_lossy().into_owned(), "stdio".into()])
}

/// A Python with the `mcp` SDK: the project venv (pip install when missing),
/// or a venv of its own under target/ when there is no project venv.
fn mcp_python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let mut py = root().join(".venv/bin/python");
        if !py.is_file() {
            let venv = root().join("target/mcp-venv");
            py = venv.join("bin/python");
            if !py.is_file() {
                assert!(Command::new("python3").arg("-m").arg("venv").arg(&venv).status().unwrap().success());
            }
        }
        let has = Command::new(&py).args(["-c", "import mcp.server.mcpserver"]).status().unwrap().success();
        if !has {
            let req = root().join("tests/mcp/requirements.txt");
            let ok =
                Command::new(&py).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"]).arg(req).status().unwrap().success();
            assert!(ok, "pip install -r tests/mcp/requirements.txt failed");
        }
        py
    })
    .clone()
}

fn py_server(env: &[(&str, &str)]) -> McpServer {
    let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    McpServer::Command {
        command: mcp_python().to_string_lossy().into_owned(),
        args: vec![root().join("tests/mcp/py_server.py").to_string_lossy().into_owned()],
        env,
    }
}

fn yaml_server(name: &str, server: &McpServer) -> String {
    match server {
        McpServer::Command { command, args, env } => {
            format!("      {name}: {}\n", json!({"command": command, "args": args, "env": env}))
        }
        McpServer::Url { url, headers_env } => format!("      {name}: {}\n", json!({"url": url, "headers_env": headers_env})),
    }
}

/// A manifest for `def` (a served definition), pinned to it; `edit` may change it first.
fn manifest(server: &str, def: &Value, timeout: &str, edit: impl Fn(&mut Value)) -> (String, String) {
    let mut def = def.clone();
    edit(&mut def);
    let name = def["name"].as_str().unwrap().to_string();
    let digest = definition_digest(&name, def["description"].as_str().unwrap(), &def["input_schema"]).unwrap();
    let text = format!(
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: {name}\nspec:\n  transport: mcp\n  server: mcp://{server}\n  timeout: {timeout}\n  description: {}\n  input_schema: {}\n  definition_digest: \"{digest}\"\n",
        def["description"], def["input_schema"]
    );
    (format!("tools/{name}.yaml"), text)
}

fn served(name: &str, server: &McpServer, tool: &str) -> Value {
    let tools = list_served(name, server).unwrap_or_else(|e| panic!("{e}"));
    tools.into_iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("`{tool}` is not served by {name}"))
}

fn harness(dir_name: &str, servers: &str, connect: &str, tools: Vec<(String, String)>) -> Dir {
    harness_in("test", dir_name, servers, connect, tools)
}

fn harness_in(mode: &str, dir_name: &str, servers: &str, connect: &str, tools: Vec<(String, String)>) -> Dir {
    let yaml = format!(
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: {mode}\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  mcp:\n    connect: {connect}\n    servers:\n{servers}"
    );
    let mut files = vec![("harness.yaml".to_string(), yaml)];
    files.extend(tools);
    Dir::new(dir_name, files)
}

fn call(rt: &Runtime, tool: &str, args: Value) -> CallResult {
    rt.call(tool, args, &CallContext { principal: Principal::new("alice"), ..CallContext::default() })
}

#[test]
fn server_everything_echo_and_a_manifest_that_differs() {
    let (command, args) = everything();
    let server = McpServer::Command { command, args, env: BTreeMap::new() };
    let echo = served("everything", &server, "echo");
    let dir = harness("mcp-everything", &yaml_server("everything", &server), "eager", vec![manifest("everything", &echo, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let r = call(&rt, "echo", json!({"message": "hello from harnessweaver"}));
    assert!(r.is_allowed(), "{r:?}");
    assert!(r.output.as_ref().unwrap().to_string().contains("hello from harnessweaver"), "{:?}", r.output);
    // A manifest pinned to other wording than the server serves: blocked at step 3.
    let reworded = harness(
        "mcp-everything-reworded",
        &yaml_server("everything", &server),
        "eager",
        vec![manifest("everything", &echo, "30s", |d| d["description"] = json!("Echoes, reviewed wording."))],
    );
    let rt2 = harnessweaver_runtime::load(reworded.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let r = call(&rt2, "echo", json!({"message": "x"}));
    assert_eq!((r.code.map(|c| c.as_str()), r.step.map(|s| s.as_str())), (Some("digest_mismatch"), Some("pin")), "{r:?}");
    assert!(r.reasons.iter().any(|x| x.contains("another definition of `echo`")), "{r:?}");
    // Step 2 still applies to MCP tools: the manifest's schema checks the args.
    let r = call(&rt, "echo", json!({}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("invalid_args"), "{r:?}");
}

#[test]
fn python_sdk_server_calls_errors_and_timeouts() {
    let server = py_server(&[]);
    let defs: Vec<Value> = ["add", "fail", "slow"].iter().map(|t| served("py", &server, t)).collect();
    let dir = harness(
        "mcp-py",
        &yaml_server("py", &server),
        "eager",
        vec![manifest("py", &defs[0], "30s", |_| {}), manifest("py", &defs[1], "30s", |_| {}), manifest("py", &defs[2], "300ms", |_| {})],
    );
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call(&rt, "add", json!({"a": 2, "b": 3})).output, Some(json!("5")));
    let r = call(&rt, "fail", json!({"reason": "because"}));
    assert_eq!((r.code.map(|c| c.as_str()), r.message.as_str()), (Some("handler_error"), "`fail` failed (the tool reported an error)"), "{r:?}");
    let r = call(&rt, "slow", json!({"ms": 3000}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("timeout"), "{r:?}");
    // The session survives both.
    assert_eq!(call(&rt, "add", json!({"a": 40, "b": 2})).output, Some(json!("42")));
}

#[test]
fn a_rug_pull_between_two_loads_is_a_digest_mismatch() {
    let honest = py_server(&[]);
    let add = served("py", &honest, "add");
    let tools = || vec![manifest("py", &add, "30s", |_| {})];
    let dir = harness("mcp-rug-1", &yaml_server("py", &honest), "eager", tools());
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap();
    assert!(call(&rt, "add", json!({"a": 1, "b": 1})).is_allowed());
    drop(rt);

    // Same manifests; the server now describes `add` differently.
    std::env::set_var("HW_TEST_RUG_PULL_ON", "1");
    let pulled = py_server(&[("HW_MCP_RUG_PULL", "HW_TEST_RUG_PULL_ON")]);
    let dir2 = harness("mcp-rug-2", &yaml_server("py", &pulled), "eager", tools());
    let rt = harnessweaver_runtime::load(dir2.harness(), LoadOptions::default()).unwrap();
    for _ in 0..2 {
        let r = call(&rt, "add", json!({"a": 1, "b": 1}));
        assert_eq!((r.code.map(|c| c.as_str()), r.step.map(|s| s.as_str())), (Some("digest_mismatch"), Some("pin")), "{r:?}");
        assert!(r.reasons.iter().any(|x| x.contains("another definition of `add`")), "{r:?}");
    }
    // `doctor` reports it too, and fails.
    let args = vec!["doctor".to_string(), dir2.harness().to_string_lossy().into_owned()];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = harnessweaver_runtime::cli::run_with(&args, &mut out, &mut err);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("tool `add`: MCP server `py` now serves another definition") && out.contains("[digest_mismatch]"), "{out}");
}

#[test]
fn the_server_gets_its_env_from_named_variables_and_nothing_else() {
    std::env::set_var("HW_TEST_MCP_TOKEN", "tok-123");
    std::env::set_var("HW_MCP_EXPECT_TOKEN", "tok-123");
    std::env::set_var("HW_MCP_SECRET_NOT_PASSED", "x");
    let server = py_server(&[("TOKEN", "HW_TEST_MCP_TOKEN"), ("HW_MCP_EXPECT_TOKEN", "HW_MCP_EXPECT_TOKEN")]);
    let whoami = served("py", &server, "whoami");
    let dir = harness("mcp-env", &yaml_server("py", &server), "lazy", vec![manifest("py", &whoami, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap();
    assert_eq!(call(&rt, "whoami", json!({})).output, Some(json!("token matches; unrelated variable passed: False")));

    let missing = py_server(&[("TOKEN", "HW_TEST_MCP_UNSET_VAR")]);
    std::env::remove_var("HW_TEST_MCP_UNSET_VAR");
    let dir = harness("mcp-env-missing", &yaml_server("py", &missing), "eager", vec![manifest("py", &whoami, "30s", |_| {})]);
    let err = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "mcp_unavailable", "{err}");
    assert!(err.to_string().contains("`HW_TEST_MCP_UNSET_VAR`"), "{err}");
}

#[test]
fn an_unreachable_server_fails_the_load_when_eager_and_the_call_when_lazy() {
    let def = json!({"name": "t", "description": "", "input_schema": {"type": "object"}});
    let server = McpServer::Command { command: "/nonexistent/mcp-server".into(), args: vec![], env: BTreeMap::new() };
    let dir = harness("mcp-down-eager", &yaml_server("down", &server), "eager", vec![manifest("down", &def, "30s", |_| {})]);
    let err = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "mcp_unavailable", "{err}");
    assert_eq!(err.problems()[0].path, "spec.mcp.servers.down");
    let dir = harness("mcp-down-lazy", &yaml_server("down", &server), "lazy", vec![manifest("down", &def, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap();
    let r = call(&rt, "t", json!({}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("transport_refused"), "{r:?}");
    assert!(r.message.contains("could not start"), "{}", r.message);
}

#[test]
fn a_streamable_http_server() {
    let web = HttpMcp::start();
    let server = web.server();
    let add = served("web", &server, "add");
    // A URL server is another party: test mode would refuse it (R14).
    let dir = harness_in("production", "mcp-http", &yaml_server("web", &server), "eager", vec![manifest("web", &add, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call(&rt, "add", json!({"a": 20, "b": 22})).output, Some(json!("42")));
}

/// Issue 17 item 4: a server process that dies (here mid-call, so the test
/// knows when) is started again by the next call, which re-lists and
/// re-checks the pins and then succeeds, answered by a new process.
#[test]
fn a_crashed_server_is_restarted_by_the_next_call() {
    std::env::set_var("HW_TEST_RECONNECT_RUG_1", "");
    let server = py_server(&[("HW_MCP_RUG_PULL", "HW_TEST_RECONNECT_RUG_1")]);
    let defs: Vec<Value> = ["add", "crash", "pid"].iter().map(|t| served("py", &server, t)).collect();
    let dir = harness("mcp-crash", &yaml_server("py", &server), "eager", defs.iter().map(|d| manifest("py", d, "30s", |_| {})).collect());
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let first = call(&rt, "pid", json!({})).output.unwrap();
    assert_eq!(call(&rt, "add", json!({"a": 2, "b": 3})).output, Some(json!("5")));
    let r = call(&rt, "crash", json!({}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("transport_refused"), "{r:?}");
    assert!(r.message.contains("closed the connection"), "{}", r.message);
    for _ in 0..2 {
        let r = call(&rt, "add", json!({"a": 40, "b": 2}));
        assert_eq!(r.output, Some(json!("42")), "{r:?}");
    }
    let second = call(&rt, "pid", json!({})).output.unwrap();
    assert_ne!(first, second, "the same process answered");
    // And again: every crash is followed by a restart.
    assert_eq!(call(&rt, "crash", json!({})).code.map(|c| c.as_str()), Some("transport_refused"));
    assert_eq!(call(&rt, "add", json!({"a": 1, "b": 1})).output, Some(json!("2")));
}

/// Issue 17 item 4: the restarted server serves another definition of `add`
/// (a rug pull timed with a crash): the reconnect re-checks the pins, and the
/// call is refused `digest_mismatch` at step 3, every time.
#[test]
fn a_restarted_server_with_a_changed_definition_is_a_digest_mismatch() {
    std::env::set_var("HW_TEST_RECONNECT_RUG_2", "");
    let server = py_server(&[("HW_MCP_RUG_PULL", "HW_TEST_RECONNECT_RUG_2")]);
    let defs: Vec<Value> = ["add", "crash"].iter().map(|t| served("py", &server, t)).collect();
    let dir = harness("mcp-crash-rug", &yaml_server("py", &server), "eager", defs.iter().map(|d| manifest("py", d, "30s", |_| {})).collect());
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call(&rt, "add", json!({"a": 2, "b": 3})).output, Some(json!("5")));
    std::env::set_var("HW_TEST_RECONNECT_RUG_2", "1");
    assert_eq!(call(&rt, "crash", json!({})).code.map(|c| c.as_str()), Some("transport_refused"));
    for _ in 0..2 {
        let r = call(&rt, "add", json!({"a": 1, "b": 1}));
        assert_eq!((r.code.map(|c| c.as_str()), r.step.map(|s| s.as_str())), (Some("digest_mismatch"), Some("pin")), "{r:?}");
        assert!(r.reasons.iter().any(|x| x.contains("another definition of `add`")), "{r:?}");
    }
}

/// A pinned manifest for `def` with `extra` spec lines (indented two spaces).
fn manifest_with(server: &str, def: &Value, extra: &str) -> (String, String) {
    let (path, text) = manifest(server, def, "30s", |_| {});
    (path, format!("{text}{extra}"))
}

/// A streamable-HTTP py_server.py on a free port; killed on drop.
struct HttpMcp {
    child: std::process::Child,
    port: u16,
}

impl HttpMcp {
    fn start() -> HttpMcp {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(mcp_python())
            .arg(root().join("tests/mcp/py_server.py"))
            .args(["--http", &port.to_string()])
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "the streamable HTTP server did not start");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        HttpMcp { child, port }
    }

    fn server(&self) -> McpServer {
        McpServer::Url { url: format!("http://127.0.0.1:{}/mcp", self.port), headers_env: BTreeMap::new() }
    }
}

impl Drop for HttpMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn in_run(rt: &Runtime, run: &str, tool: &str, args: Value) -> CallResult {
    rt.call(tool, args, &CallContext { principal: Principal::new("alice"), run_id: Some(run.into()), ..CallContext::default() })
}

fn code(r: &CallResult) -> Option<&'static str> {
    r.code.map(|c| c.as_str())
}

/// Issue 17 item 5: an MCP tool sends its arguments to another party, so in a
/// private + untrusted run it is refused `trifecta` like any tool with egress,
/// whether its server is a command or a URL, unless its manifest says
/// explicitly `egress: []`. The same calls run in a clean run.
#[test]
fn issue17_item5_mcp_tools_are_egress_in_a_private_untrusted_run() {
    let web = HttpMcp::start();
    let local = py_server(&[]);
    let defs: BTreeMap<&str, Value> = ["shout", "add", "pid", "whoami"].iter().map(|t| (*t, served("py", &local, t))).collect();
    let web_slow = served("web", &web.server(), "slow");
    let servers = format!("{}{}", yaml_server("py", &local), yaml_server("web", &web.server()));
    let mut tools = vec![
        // Reads personal data: the run becomes private (its output is trusted).
        manifest_with("py", &defs["shout"], "  data_access: [\"pii:customer\"]\n  output:\n    label: trusted\n"),
        // Its output is untrusted: the run becomes untrusted.
        manifest_with("py", &defs["add"], "  output:\n    label: untrusted\n"),
        // No `egress` written: the command server is egress.
        manifest_with("py", &defs["pid"], ""),
        // `egress: []` written: the manifest says it sends nothing out.
        manifest_with("py", &defs["whoami"], "  egress: []\n"),
    ];
    // A tool of the URL server, no `egress` written.
    tools.push(manifest_with("web", &web_slow, ""));
    let dir = harness_in("production", "mcp-egress", &servers, "eager", tools);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));

    // A clean run: every tool runs.
    for (tool, args) in [("pid", json!({})), ("slow", json!({"ms": 1})), ("whoami", json!({}))] {
        let r = in_run(&rt, "clean", tool, args);
        assert!(r.is_allowed(), "{tool}: {r:?}");
    }
    // Private, then untrusted.
    assert!(in_run(&rt, "dirty", "shout", json!({"text": "ada@example.com"})).is_allowed());
    assert!(in_run(&rt, "dirty", "add", json!({"a": 1, "b": 1})).is_allowed());
    for (tool, args, server) in [("pid", json!({}), "mcp://py"), ("slow", json!({"ms": 1}), "mcp://web")] {
        let r = in_run(&rt, "dirty", tool, args.clone());
        assert_eq!((code(&r), r.step.map(|s| s.as_str())), (Some("trifecta"), Some("flow")), "{tool}: {r:?}");
        let ctx = CallContext { principal: Principal::new("alice"), run_id: Some("dirty".into()), ..CallContext::default() };
        let explained = rt.explain(tool, args, &ctx);
        assert!(format!("{explained:?}").contains(server), "{tool}: {explained:?}");
    }
    // Said explicitly: no egress, so it runs in the same run.
    let r = in_run(&rt, "dirty", "whoami", json!({}));
    assert!(r.is_allowed(), "{r:?}");
}

/// Issue 17 item 5: in `mode: test` a URL MCP server is refused at step 8 like
/// the http transport (R14), and not even connected at load; a command
/// server still runs.
#[test]
fn issue17_item5_test_mode_refuses_url_mcp_servers() {
    let web = HttpMcp::start();
    let add = served("web", &web.server(), "add");
    let servers = yaml_server("web", &web.server());
    // In production the same harness calls the server.
    let prod = harness_in("production", "mcp-url-prod", &servers, "eager", vec![manifest("web", &add, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(prod.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call(&rt, "add", json!({"a": 20, "b": 22})).output, Some(json!("42")));
    drop(rt);
    let test = harness_in("test", "mcp-url-test", &servers, "eager", vec![manifest("web", &add, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(test.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let r = call(&rt, "add", json!({"a": 20, "b": 22}));
    assert_eq!((code(&r), r.step.map(|s| s.as_str())), (Some("transport_refused"), Some("invoke")), "{r:?}");
    assert!(r.message.contains("test mode"), "{}", r.message);
    drop(rt);
    // Not connected at load either: a URL with no server behind it loads in test mode.
    drop(web);
    let dead = harness_in("test", "mcp-url-dead", &servers, "eager", vec![manifest("web", &add, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dead.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(&call(&rt, "add", json!({"a": 1, "b": 1}))), Some("transport_refused"));
}

/// Issue 17 item 10: a server that echoes the token it was started with (its
/// `env`), raw or encoded, never gets it to the model: step 9 masks every
/// form before the sanitizers and counts them in the output report.
#[test]
fn issue17_item10_mcp_env_token_echo_is_masked() {
    let token = "tok/9f8e\"7d6c+5b4a é";
    std::env::set_var("HW_TEST_MCP_ECHO_TOKEN", token);
    let server = py_server(&[("TOKEN", "HW_TEST_MCP_ECHO_TOKEN")]);
    let echo = served("py", &server, "echo_token");
    let dir = harness("mcp-echo-token", &yaml_server("py", &server), "eager", vec![manifest("py", &echo, "30s", |_| {})]);
    let rt = harnessweaver_runtime::load(dir.harness(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let base64_token = {
        let out = Command::new("python3")
            .args(["-c", "import base64,sys; print(base64.b64encode(sys.argv[1].encode()).decode())", token])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    for encoding in ["raw", "url", "base64", "base64_inside", "json"] {
        let r = call(&rt, "echo_token", json!({"encoding": encoding}));
        assert!(r.is_allowed(), "{encoding}: {r:?}");
        let text = r.output.as_ref().unwrap().as_str().unwrap().to_string();
        assert!(text.contains("[SECRET]"), "{encoding}: {text}");
        for leak in ["9f8e", "7d6c", &base64_token] {
            assert!(!text.contains(leak), "{encoding}: `{leak}` in {text}");
        }
        assert_eq!(r.output_report.as_ref().unwrap().redactions.get("secret.echoed"), Some(&1), "{encoding}: {r:?}");
    }
}
