//! Sanitizes one file (argument) with `pii_redact` and `strip_instructions`
//! separately and prints the time each took; for profiling large outputs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
use harnessweaver_core::sanitize::{pii_redact, strip_instructions};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: sanitize_file FILE");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = Instant::now();
    let (a, _) = pii_redact(&text);
    let pii = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (b, _) = strip_instructions(&text);
    let strip = t.elapsed().as_secs_f64();
    let mb = text.len() as f64 / 1e6;
    println!(
        "{mb:.1} MB: pii_redact {pii:.3} s ({:.1} MB/s), strip_instructions {strip:.3} s ({:.1} MB/s), out {} + {} bytes",
        mb / pii,
        mb / strip,
        a.len(),
        b.len()
    );
}
