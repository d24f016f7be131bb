//! Governed calls with and without an OpenTelemetry observer, for instruction
//! counts under callgrind (`make profile-otel`, issue 24): `profile_otel MODE N`
//! runs N calls of a plain lookup tool through the host API with no
//! observer (`none`), one that does not listen (`off`: the API without an SDK)
//! or one that listens (`on`). The per-call cost is the difference between
//! the counts for two N, divided by their difference.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "profiling code")]

#[path = "../benches/support/otel_hosts.rs"]
mod otel_hosts;
use otel_hosts::{call, host, Mode};

fn parse(text: &str) -> Option<Mode> {
    match text {
        "none" => Some(Mode::NoObserver),
        "off" => Some(Mode::NotListening),
        "on" => Some(Mode::Listening),
        _ => None,
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let mode = argv.next().and_then(|m| parse(&m)).expect("profile_otel none|off|on N");
    let n: u64 = argv.next().and_then(|a| a.parse().ok()).expect("profile_otel none|off|on N");
    let (h, ctx, args, count) = host(mode);
    for _ in 0..n {
        call(&h, &ctx, &args);
    }
    let seen = count.0.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(seen, if mode == Mode::Listening { n } else { 0 }, "events the observer took");
}
