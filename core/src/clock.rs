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
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
                write_hex(seed_part, *seed);
                write_hex(count_part.get_mut(..count_digits).unwrap_or_default(), count);
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

/// Writes the low `out.len()` hex digits of `v` into `out`, lowercase,
/// most significant first (ids are made on every call: no formatting
/// machinery).
fn write_hex(out: &mut [u8], v: u64) {
    for (slot, shift) in out.iter_mut().rev().zip((0..64).step_by(4)) {
        let nibble = ((v >> shift) & 0xf) as u8;
        *slot = if nibble < 10 { b'0' + nibble } else { b'a' - 10 + nibble };
    }
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn random_ids_keep_their_format() {
        for (seed, count) in [(0u64, 0u64), (0xdead_beef, 7), (u64::MAX, 0xffff_ffff), (1, 0x1_0000_0000), (42, u64::MAX)] {
            let ids = IdSource::Random { seed, counter: AtomicU64::new(count) };
            assert_eq!(ids.next("call"), format!("call_{seed:016x}{count:08x}"));
        }
    }
}
