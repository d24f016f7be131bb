//! The short fuzz pass of `make test`: every committed corpus input of every
//! cargo-fuzz target (fuzz/corpus/<target>/), then mutations of them for a
//! bounded time (HW_FUZZ_SECONDS per target, default 2), through the same
//! target bodies libFuzzer runs (fuzz/src/targets.rs). No instrumentation,
//! no nightly: a plain test, so a cold CI run only builds what `cargo test`
//! already builds. `make fuzz` runs the real libFuzzer for as long as asked.
//! Regressions found by fuzzing live in fuzz/corpus/<target>/regression-*.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

#[path = "../../fuzz/src/targets.rs"]
mod targets;

use std::path::PathBuf;
use std::time::{Duration, Instant};

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus for {target}");
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// A small xorshift generator: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const DICT: &[&[u8]] = &[
    b"\0", b"{", b"}", b"[", b"]", b"\"", b"\\u0000", b"1e309", b"-0.0", b"9223372036854775808", b"18446744073709551616u", b"&&", b"||", b"?", b":",
    b".exists(x, ", b"has(", b"size(", b"matches('(a*)*b')", b"null", b"true", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\n  ", b"*a", b"&a ",
    b"!!binary ", b"risk: critical\n", b"pattern: \"(a|aa)+$\"\n",
];

fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(6) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let end = (at + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            2 => {
                let word = DICT[rng.below(DICT.len())];
                out.splice(at..at, word.iter().copied());
            }
            3 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + rng.below(64)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            4 if !out.is_empty() => {
                let from = rng.below(out.len());
                let end = (from + rng.below(32)).min(out.len());
                let chunk: Vec<u8> = out[from..end].to_vec();
                out.splice(at..at, chunk);
            }
            _ => out.insert(at, rng.next() as u8),
        }
    }
    out
}

fn pass(target: &str, body: fn(&[u8])) {
    let seeds = corpus(target);
    for seed in &seeds {
        body(seed);
    }
    let seconds: f64 = std::env::var("HW_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let seed = &seeds[rng.below(seeds.len())];
        let other = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, seed, other);
        body(&input);
        runs += 1;
    }
    eprintln!("fuzz short pass `{target}`: {} corpus inputs, {runs} mutations in {seconds} s", seeds.len());
}

#[test]
fn canonical() {
    pass("canonical", targets::canonical);
}

#[test]
fn cel_lite() {
    pass("cel_lite", targets::cel_lite);
}

#[test]
fn sanitize() {
    pass("sanitize", targets::sanitize);
}

#[test]
fn manifest_parse() {
    pass("manifest_parse", targets::manifest_parse);
}

#[test]
fn harness_load() {
    pass("harness_load", targets::harness_load);
}

#[test]
fn call() {
    pass("call", targets::call);
}
