//! Time and identifiers, injectable so that fixtures and tests are exact.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the governor reads the time (milliseconds since the Unix epoch).
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        // In 64-bit arithmetic (`as_millis` divides a 128-bit number; this runs on every call).
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs().saturating_mul(1000).saturating_add(u64::from(d.subsec_millis())))
    }
}

/// A clock that only moves when told to: for fixtures, tests and simulations.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A manual clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self { now: Arc::new(AtomicU64::new(start_ms)) }
    }

    /// Moves the time forward.
    pub fn advance_ms(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// How run, call and approval identifiers are made.
#[derive(Debug)]
pub enum IdSource {
    /// `<prefix>_<64 random bits><counter>`, hex (the default): unique in
    /// the process and, through the random part, across processes and hosts.
    Random {
        /// Drawn once from the OS.
        seed: u64,
        /// Counts ids made.
        counter: AtomicU64,
    },
    /// `<prefix>-1`, `<prefix>-2`, …: deterministic, for fixtures.
    Sequential(AtomicU64),
}

impl Default for IdSource {
    fn default() -> Self {
        Self::random()
    }
}

impl IdSource {
    /// Random ids: one draw of 64 bits from the OS, then a counter.
    pub fn random() -> Self {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // Without an entropy source, fall back to the time: unique
            // across restarts, though guessable.
            bytes = SystemClock.now_ms().to_be_bytes();
        }
        Self::Random { seed: u64::from_be_bytes(bytes), counter: AtomicU64::new(0) }
    }

    /// A deterministic source starting at 1.
    pub fn sequential() -> Self {
        Self::Sequential(AtomicU64::new(0))
    }

    /// A new identifier with `prefix` (`run`, `call`, `apr`).
    pub fn next(&self, prefix: &str) -> String {
        match self {
            Self::Sequential(n) => format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed) + 1),
            // As `format!("{prefix}_{seed:016x}{counter:08x}")`, without the
            // formatting machinery (an id is made on every call).
            Self::Random { seed, counter } => {
                let count = counter.fetch_add(1, Ordering::Relaxed);
                // The counter takes 8 digits until it outgrows them.
                let count_digits = usize::try_from((64 - count.leading_zeros()).div_ceil(4)).unwrap_or(16).max(8);
                let mut digits = [0u8; 32];
                let (seed_part, count_part) = digits.split_at_mut(16);
                seed_part.copy_from_slice(&hex16(*seed));
                count_part.copy_from_slice(&hex16(count));
                // The counter's digits follow the seed's.
                count_part.copy_within(16 - count_digits.., 0);
                let hex = std::str::from_utf8(digits.get(..16 + count_digits).unwrap_or_default()).unwrap_or_default();
                let mut out = String::with_capacity(prefix.len() + 1 + hex.len());
                out.push_str(prefix);
                out.push('_');
                out.push_str(hex);
                out
            }
        }
    }
}

/// The 16 lowercase hex digits of `v`, most significant first, computed
/// eight at a time in a word (ids are made on every call).
fn hex16(v: u64) -> [u8; 16] {
    // Eight nibbles of `x` (< 2^32), one per byte, the highest nibble in the highest byte.
    let spread = |x: u64| {
        let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
    };
    // Each byte 0..=15 to `0`..`9`, `a`..`f`: bytes from 10 up get 0x27 more.
    let ascii = |n: u64| {
        let letters = ((n + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        (n + 0x3030_3030_3030_3030 + letters * 0x27).to_be_bytes()
    };
    let (high, low) = (ascii(spread(v >> 32)), ascii(spread(v & 0xffff_ffff)));
    let mut out = [0u8; 16];
    let (first, second) = out.split_at_mut(8);
    first.copy_from_slice(&high);
    second.copy_from_slice(&low);
    out
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn random_ids_keep_their_format() {
        let cases = [
            (0u64, 0u64),
            (0xdead_beef, 7),
            (u64::MAX, 0xffff_ffff),
            (1, 0x1_0000_0000),
            (42, u64::MAX),
            (0x0123_4567_89ab_cdef, 0xa),
            (0xfedc_ba98_7654_3210, 0x9_ffff_fff9),
            (0xa0b0_c0d0_e0f0_9080, 0x1000_0000_0000_0000),
        ];
        for (seed, count) in cases {
            let ids = IdSource::Random { seed, counter: AtomicU64::new(count) };
            assert_eq!(ids.next("call"), format!("call_{seed:016x}{count:08x}"));
        }
    }
}
