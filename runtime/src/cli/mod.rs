//! The `harnessweaver` command line, shared by the Rust binary, the Python
//! console script and the npm bin (all three call [`run`]).
//!
//! Each command lives in its own file and declares its options once in an
//! [`args::Spec`]: parsing, `--help` and usage errors come from it. Output is
//! plain text, coloured only when stdout is a terminal (never with `NO_COLOR`
//! or `--json`); `--json` prints one JSON document. Exit codes: 0 clean, 1
//! problems found or call refused, 2 usage error, 3 not available here. The
//! commands, their `--json` shapes and exit codes are in `docs/cli.md`.

mod approvals;
mod args;
mod audit;
mod audit_verify;
mod console;

mod doctor;
mod effects;
mod explain;
mod gateway;
mod lock;
mod python_handlers;
mod sandbox;
mod tools;
mod ui;

use std::io::{IsTerminal as _, Write};

pub(crate) use ui::Io;

const USAGE: &str = "usage: harnessweaver <command> [options]

commands:
  doctor [harness.yaml]                     load the harness and every manifest; report every problem
  tools list [harness.yaml]                 a table of the tools: transport, risk, side effect, pin state
  tools show NAME [--harness FILE]          one tool's resolved manifest, schema, pin state and digest
  tools pin [harness.yaml] [--tool NAME]    write each manifest's current definition digest into it
  tools add MANIFEST [--harness FILE]       add a manifest's directory to tools.manifests and pin it
  explain TOOL [--args JSON] [--principal JSON|ID] [--tenant T] [--harness FILE]
                                            run the nine steps without invoking anything; print each verdict
  audit tail [harness.yaml] [-n N] [--follow]
                                            print the last audit events from the harness's audit sink
  audit verify [harness.yaml] [--key PUBLIC]...
                                            check the audit trail's hash chain and signed checkpoints
  audit keygen --out FILE                   write a new checkpoint signing key; print its public key
  console [harness.yaml] [--http ADDR]     the approvals console in the browser: approve, deny, read the audit trail
  gateway mcp [harness.yaml] [--stdio | --http ADDR]
                                            serve the harness's tools over MCP, every call governed
  approvals list|approve ID|deny ID [--reason TEXT] [--harness FILE]
                                            list, grant or deny pending approvals in the shared state store
  lock [harness.yaml] | lock verify [harness.yaml]
                                            write harness.lock (definitions, manifests, handler code), or report drift since
  effects list|resolve ID|compensate ID [--harness FILE]
                                            the effect journal: list entries, resolve an unknown one, compensate a call
  sandbox probe [--launcher PATH]           report the OS sandbox of process tools on this machine; run a confined check
  add tool module:function | ./tools.ts#name
                                            write a manifest from a function (Python package / npm bin only)

Commands that print results take --json. Colour only on a terminal, never with NO_COLOR.
exit codes: 0 clean, 1 problems found or call refused, 2 usage error, 3 not available here
run `harnessweaver <command> --help` for more";

/// Runs the command line with `args` (without the program name) and returns
/// the exit code: 0 clean, 1 problems found or call refused, 2 usage error,
/// 3 not available here. Colour is on when stdout is a terminal and
/// `NO_COLOR` is unset or empty.
pub fn run(args: &[String]) -> i32 {
    // The MCP gateway writes to stdout from its own threads: hold no lock.
    if args.first().is_some_and(|a| a == "gateway") {
        return run_with(args, &mut std::io::stdout(), &mut std::io::stderr());
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let colour = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let code = dispatch(args, &mut Io::new(&mut stdout.lock(), &mut stderr.lock(), colour));
    let _ = std::io::stdout().flush();
    code
}

/// [`run`] writing to the given streams, never coloured (for tests and bindings).
pub fn run_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    dispatch(args, &mut Io::new(out, err, false))
}

fn dispatch(args: &[String], io: &mut Io<'_>) -> i32 {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => {
            let _ = writeln!(io.err, "{USAGE}");
            2
        }
        ["--help" | "-h" | "help", ..] => {
            let _ = writeln!(io.out, "{USAGE}");
            0
        }
        ["--version" | "-V", ..] => {
            let _ = writeln!(io.out, "harnessweaver {}", env!("CARGO_PKG_VERSION"));
            0
        }
        ["doctor", rest @ ..] => doctor::run(rest, io),
        ["tools", rest @ ..] => tools::run(rest, io),
        ["explain", rest @ ..] => explain::run(rest, io),
        ["audit", rest @ ..] => audit::run(rest, io),
        ["console", rest @ ..] => console::run(rest, io),
        ["gateway", rest @ ..] => gateway::run(rest, io),
        ["approvals", rest @ ..] => approvals::run(rest, io),
        ["sandbox", rest @ ..] => sandbox::run(rest, io),
        ["effects", rest @ ..] => effects::run(rest, io),
        ["lock", rest @ ..] => lock::run(rest, io),

        ["add", ..] => {
            let _ = writeln!(
                io.err,
                "harnessweaver add: the only thing to add is a tool, and `add tool` introspects a function, so only the \
                 Python package (`pip install harnessweaver`; `harnessweaver add tool module:function`) and the npm \
                 package (`npx harnessweaver add tool ./tools.ts#name`) run it, not the standalone binary"
            );
            3
        }
        // Hidden: the worker of the multi-process store tests and benchmark.
        ["_stress-limit", rest @ ..] => crate::store::stress::run(rest, io.out, io.err),
        // Hidden: the worker the effect crash tests kill between intent and outcome.
        ["_effect-call", rest @ ..] => effects::worker(rest, io),
        [cmd, ..] => {
            let _ = writeln!(io.err, "harnessweaver: unknown command `{cmd}`\n\n{USAGE}");
            2
        }
    }
}
