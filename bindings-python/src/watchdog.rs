//! One watchdog thread for every sync handler that runs on its caller's
//! thread: when a handler overruns its deadline, the watchdog raises
//! `HandlerOverrun` in that thread (`PyThreadState_SetAsyncExc`). Python
//! delivers it at the handler's next bytecode; a handler blocked in C code
//! (a `time.sleep`, a socket read) sees it when that returns. Either way the
//! core ends the call `timeout`, because the deadline has passed.
//!
//! A call registers and unregisters under one mutex (no thread switch); the
//! watchdog sleeps until the earliest deadline it knows and is woken only
//! when a call with an earlier one registers.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use pyo3::ffi;
use pyo3::prelude::*;

use crate::HandlerOverrun;

struct Watch {
    id: u64,
    /// The thread's id as `PyThreadState_SetAsyncExc` takes it (CPython casts it the same way).
    thread: std::os::raw::c_long,
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

#[derive(Default)]
struct Watchdog {
    state: Mutex<State>,
    cv: Condvar,
}

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

fn dog() -> &'static Watchdog {
    WATCHDOG.get_or_init(Watchdog::default)
}

fn lock(w: &Watchdog) -> MutexGuard<'_, State> {
    w.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Watches the calling thread until `deadline`; returns the watch's id for [`unwatch`].
pub(crate) fn watch(_py: Python<'_>, deadline: Instant) -> u64 {
    let w = dog();
    let mut s = lock(w);
    s.next += 1;
    let id = s.next;
    // SAFETY: reads the calling thread's id; the GIL is held (`_py`).
    let thread = unsafe { ffi::PyThread_get_thread_ident() } as std::os::raw::c_long;
    s.calls.push(Watch { id, thread, deadline, fired: false });
    if !s.started {
        s.started = true;
        if std::thread::Builder::new().name("harnessweaver-watchdog".into()).spawn(run).is_err() {
            s.started = false;
        }
    }
    if s.wake.is_none_or(|wake| deadline < wake) {
        w.cv.notify_one();
    }
    id
}

/// Stops watching; true when the watchdog fired for this call (a pending
/// exception not yet delivered is cleared, so it cannot hit later code).
pub(crate) fn unwatch(_py: Python<'_>, id: u64) -> bool {
    let mut s = lock(dog());
    let Some(at) = s.calls.iter().position(|c| c.id == id) else { return false };
    let c = s.calls.swap_remove(at);
    if c.fired {
        // SAFETY: the GIL is held; a null exception clears the thread's pending one.
        unsafe { ffi::PyThreadState_SetAsyncExc(c.thread, std::ptr::null_mut()) };
    }
    c.fired
}

fn run() {
    let w = dog();
    let mut s = lock(w);
    loop {
        let now = Instant::now();
        if s.calls.iter().any(|c| !c.fired && c.deadline <= now) {
            drop(s);
            // The GIL first, then the lock: a caller holds the GIL when it takes the lock.
            Python::attach(|py| {
                let mut s = lock(w);
                let exc = py.get_type::<HandlerOverrun>();
                for c in s.calls.iter_mut().filter(|c| !c.fired && c.deadline <= Instant::now()) {
                    c.fired = true;
                    // SAFETY: the GIL is held; `exc` is a live exception type.
                    unsafe { ffi::PyThreadState_SetAsyncExc(c.thread, exc.as_ptr()) };
                }
            });
            s = lock(w);
            continue;
        }
        s.wake = s.calls.iter().filter(|c| !c.fired).map(|c| c.deadline).min();
        s = match s.wake {
            Some(wake) => w.cv.wait_timeout(s, wake.saturating_duration_since(now)).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0),
            None => w.cv.wait(s).unwrap_or_else(PoisonError::into_inner),
        };
    }
}
