//! libFuzzer entry for `targets::sanitize` (the body is shared with the short
//! pass in core/tests/fuzz_corpus.rs).
#![no_main]

#[path = "../src/targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::sanitize(data));
