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

    /// Sets the time.
    pub fn set_ms(&self, ms: u64) {
        self.now.store(ms, Ordering::SeqCst);
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
    /// 128 random bits, hex (the default).
    Random,
    /// `<prefix>-1`, `<prefix>-2`, …: deterministic, for fixtures.
    Sequential(AtomicU64),
}

impl IdSource {
    /// A deterministic source starting at 1.
    pub fn sequential() -> Self {
        Self::Sequential(AtomicU64::new(0))
    }

    /// A new identifier with `prefix` (`run`, `call`, `apr`).
    pub fn next(&self, prefix: &str) -> String {
        match self {
            Self::Sequential(n) => format!("{prefix}-{}", n.fetch_add(1, Ordering::SeqCst) + 1),
            Self::Random => {
                let mut bytes = [0u8; 16];
                if getrandom::fill(&mut bytes).is_err() {
                    // Without an entropy source, fall back to time and a counter:
                    // unique, though guessable.
                    static FALLBACK: AtomicU64 = AtomicU64::new(0);
                    let t = u128::from(SystemClock.now_ms());
                    let n = u128::from(FALLBACK.fetch_add(1, Ordering::SeqCst));
                    bytes = ((t << 64) | n).to_be_bytes();
                }
                let mut out = String::with_capacity(prefix.len() + 33);
                out.push_str(prefix);
                out.push('_');
                for b in bytes {
                    out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
                    out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
                }
                out
            }
        }
    }
}
