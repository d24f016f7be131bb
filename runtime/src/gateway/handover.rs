//! A gateway whose calls a host runs on a thread of its own (Node: handlers
//! and callbacks live on the JavaScript thread).
//!
//! The gateway serves on a thread of its own and hands each `tools/call` over
//! whole through a queue: the host takes the next one with [`HandOver::next`]
//! (blocking; from a worker of its own, never its main thread), begins it
//! with [`HandedCall::begin`] on its thread, runs it as its own `call` does
//! and answers with [`HandedCall::reply`]. A call dropped unanswered ends
//! `handler_error`.
//!
//! Relays (issue 22): an allowed call's relay is registered by its call id
//! when it begins ([`crate::transport::relay::register`]) until its reply,
//! so the transport it runs on the host's pool relays to its caller as the
//! gateway's own calls do (progress, log messages, sampling, elicitation).

use std::net::SocketAddr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use harnessweaver_core::host::{host_failure, ArgumentCode, Begun, CallContext, CallResult, Error, Host, Principal};
use harnessweaver_core::runtime::Runtime;
use serde_json::Value;

use super::relay::{RelaySink, TicketRelay};
use super::server::{serve_harness, ServeError};
use super::{CallExecutor, Gateway, GatewayResult, HostRuntime};
use crate::transport::relay::{register, Registered};

/// One `tools/call` handed to the host, and where its result goes.
#[derive(Debug)]
pub struct HandedCall {
    tool: String,
    args: Value,
    ctx: CallContext,
    reply: Sender<CallResult>,
    /// Where the running call's relays go, and the runtime that decides them.
    relay: Option<(RelaySink, Arc<Runtime>)>,
    /// The relay registered for the call once it began, until the reply.
    registered: Mutex<Option<Registered>>,
}

impl HandedCall {
    /// Steps 1–7 of the call on `host` (the harness the gateway serves), as
    /// the host's `call` begins one; an allowed call's relay is registered.
    pub fn begin(&self, host: &Host) -> Result<Begun, Error> {
        let begun = host.begin(&self.tool, self.args.clone(), &self.ctx)?;
        if let (Begun::Allowed(ticket), Some((sink, runtime))) = (&begun, &self.relay) {
            let runtime: Arc<dyn HostRuntime> = Arc::clone(runtime) as _;
            let relay = Arc::new(TicketRelay::new(runtime, ticket.call().clone(), sink.clone()));
            *self.registered.lock().unwrap_or_else(PoisonError::into_inner) = Some(register(&ticket.call().call_id, relay));
        }
        Ok(begun)
    }

    /// Hands back the call's result; none (the host failed to run it) ends it `handler_error`.
    pub fn reply(self, result: Option<CallResult>) {
        if let Some(result) = result {
            // The gateway stops waiting only when the connection closed: nobody is left to tell.
            let _ = self.reply.send(result);
        }
    }
}

/// The queue of calls a running gateway hands over; closed once the gateway stops.
#[derive(Debug)]
pub struct HandOver(Mutex<Receiver<HandedCall>>);

impl HandOver {
    /// The next call, blocking; `None` once the gateway has stopped.
    pub fn next(&self) -> Option<HandedCall> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).recv().ok()
    }
}

fn invalid(code: ArgumentCode, message: String) -> Error {
    Error::InvalidArgument { code: code.as_str(), message }
}

/// Starts serving `host`'s harness over MCP on a thread of its own, handing
/// every call over: stdio (as `who`/`tenant`, else `spec.gateway.stdio`) or,
/// with `http` (`127.0.0.1:PORT`), streamable HTTP checked against
/// `spec.gateway.http`. Serving errors after the start go to stderr, and
/// close the queue.
pub fn serve_handed_over(host: &Host, http: Option<&str>, who: Option<Principal>, tenant: Option<String>) -> Result<HandOver, Error> {
    let address = |text: &str| {
        text.parse::<SocketAddr>().map_err(|_| invalid(ArgumentCode::InvalidArgument, format!("http `{text}` is not an address like 127.0.0.1:8080")))
    };
    let http = http.map(address).transpose()?;
    let runtime = host
        .runtime()
        .ok_or_else(|| invalid(ArgumentCode::NotLoadedForCalls, "this harness was opened with inspect() and cannot take calls; use load()".into()))?;
    let (tx, rx) = channel::<HandedCall>();
    let tx = Mutex::new(tx);
    let relaying = Arc::clone(&runtime);
    let executor: CallExecutor = Arc::new(move |ctx, tool, args, sink| {
        let (reply, answer) = channel();
        let relay = sink.map(|sink| (sink, Arc::clone(&relaying)));
        let call = HandedCall { tool: tool.to_string(), args, ctx: ctx.clone(), reply, relay, registered: Mutex::default() };
        let sent = tx.lock().unwrap_or_else(PoisonError::into_inner).send(call);
        // No answer (the call was dropped unanswered): the host failed to run it.
        let result = sent.ok().and_then(|()| answer.recv().ok());
        GatewayResult::new(&result.unwrap_or_else(|| host_failure(tool, "the host dropped the call")), None)
    });
    let gateway = Arc::new(Gateway::with_executor(runtime, executor));
    let spawned = std::thread::Builder::new().name("harnessweaver-gateway".into()).spawn(move || {
        let url = |addr| super::front::HttpOptions::default().mcp_url(&gateway, addr);
        let served =
            serve_harness(Arc::clone(&gateway), http, who, tenant, &mut |addr| eprintln!("harnessweaver gateway: serving MCP at {}", url(addr)));
        if let Err(ServeError::Usage(m) | ServeError::Failed(m)) = served {
            eprintln!("harnessweaver gateway: {m}");
        }
        // Dropping the gateway closes the queue: `next` answers `None`.
    });
    spawned.map_err(|e| invalid(ArgumentCode::GatewayFailed, format!("cannot start the gateway thread: {e}")))?;
    Ok(HandOver(Mutex::new(rx)))
}
