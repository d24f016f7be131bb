//! One watchdog thread for every handler that runs on its caller's thread,
//! for a host language that can interrupt a thread (Python raises
//! `HandlerOverrun` in it). When a handler overruns its deadline the
//! watchdog asks the host to interrupt that thread; the call ends `timeout`
//! either way, because [`super::Host::finish`] judges the deadline.
//!
//! A call registers and unregisters under one mutex (no thread switch); the
//! watchdog sleeps until the earliest deadline it knows and is woken only
//! when a call with an earlier one registers.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// What the host does for the watchdog.
pub trait Interrupter: Send + Sync + 'static {
    /// Runs `f` holding what the host's threads hold when they call
    /// [`Watchdog::watch`] and [`Watchdog::unwatch`] (Python: the GIL), so an
    /// interrupt and an unwatch never interleave.
    fn hold(&self, f: &mut dyn FnMut());
    /// Interrupts `thread` (called inside [`Interrupter::hold`]).
    fn interrupt(&self, thread: u64);
    /// Withdraws an interrupt of `thread` not yet delivered (called by
    /// [`Watchdog::unwatch`] on that thread, so it cannot hit later code).
    fn withdraw(&self, thread: u64);
}

struct Watch {
    id: u64,
    thread: u64,
    deadline: Instant,
    fired: bool,
}

#[derive(Default)]
struct State {
    calls: Vec<Watch>,
    next: u64,
    /// When the watchdog wakes next (`None`: it waits for a call).
    wake: Option<Instant>,
    started: bool,
}

/// The watchdog of one host language (one per process).
pub struct Watchdog {
    state: Mutex<State>,
    cv: Condvar,
    host: Box<dyn Interrupter>,
}

impl Watchdog {
    /// A watchdog interrupting through `host`; its thread starts with the first watch.
    pub fn new(host: impl Interrupter) -> Arc<Self> {
        Arc::new(Self { state: Mutex::default(), cv: Condvar::new(), host: Box::new(host) })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches `thread` until `deadline`; returns the watch's id for [`Watchdog::unwatch`].
    pub fn watch(self: &Arc<Self>, thread: u64, deadline: Instant) -> u64 {
        let mut s = self.lock();
        s.next += 1;
        let id = s.next;
        s.calls.push(Watch { id, thread, deadline, fired: false });
        if !s.started {
            let dog = Arc::clone(self);
            s.started = std::thread::Builder::new().name("harnessweaver-watchdog".into()).spawn(move || dog.run()).is_ok();
        }
        if s.wake.is_none_or(|wake| deadline < wake) {
            self.cv.notify_one();
        }
        id
    }

    /// Stops watching; true when the watchdog interrupted this call (an
    /// interrupt not yet delivered is withdrawn).
    pub fn unwatch(&self, id: u64) -> bool {
        let mut s = self.lock();
        let Some(at) = s.calls.iter().position(|c| c.id == id) else { return false };
        let c = s.calls.swap_remove(at);
        if c.fired {
            self.host.withdraw(c.thread);
        }
        c.fired
    }

    fn run(&self) {
        let mut s = self.lock();
        loop {
            let now = Instant::now();
            if s.calls.iter().any(|c| !c.fired && c.deadline <= now) {
                drop(s);
                // What the callers hold first, then the lock: a caller holds it when it takes the lock.
                self.host.hold(&mut || {
                    let mut s = self.lock();
                    for c in s.calls.iter_mut().filter(|c| !c.fired && c.deadline <= Instant::now()) {
                        c.fired = true;
                        self.host.interrupt(c.thread);
                    }
                });
                s = self.lock();
                continue;
            }
            s.wake = s.calls.iter().filter(|c| !c.fired).map(|c| c.deadline).min();
            s = match s.wake {
                Some(wake) => self.cv.wait_timeout(s, wake.saturating_duration_since(now)).map_or_else(|e| e.into_inner().0, |(g, _)| g),
                None => self.cv.wait(s).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}
