//! The core's watchdog (`host::Watchdog`) for sync handlers that run on their
//! caller's thread: an overrun raises `HandlerOverrun` in that thread
//! (`PyThreadState_SetAsyncExc`). Python delivers it at the handler's next
//! bytecode; a handler blocked in C code (a `time.sleep`, a socket read) sees
//! it when that returns. Either way the core ends the call `timeout`.

use std::os::raw::c_long;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use harnessweaver_core::host::{Interrupter, Watchdog};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::HandlerOverrun;

/// Interrupts a thread by raising `HandlerOverrun` in it, under the GIL.
struct Raise;

impl Interrupter for Raise {
    fn hold(&self, f: &mut dyn FnMut()) {
        Python::attach(|_| f());
    }
    fn interrupt(&self, thread: u64) {
        Python::attach(|py| {
            // SAFETY: the GIL is held; the exception type lives as long as the interpreter.
            unsafe { ffi::PyThreadState_SetAsyncExc(thread as c_long, py.get_type::<HandlerOverrun>().as_ptr()) };
        });
    }
    fn withdraw(&self, thread: u64) {
        // SAFETY: called by `unwatch` with the GIL held; a null exception clears the thread's pending one.
        unsafe { ffi::PyThreadState_SetAsyncExc(thread as c_long, std::ptr::null_mut()) };
    }
}

static DOG: OnceLock<Arc<Watchdog>> = OnceLock::new();

/// Watches the calling thread until `deadline`; returns the watch's id for [`unwatch`].
pub(crate) fn watch(_py: Python<'_>, deadline: Instant) -> u64 {
    // SAFETY: reads the calling thread's id; the GIL is held (`_py`).
    let thread = unsafe { ffi::PyThread_get_thread_ident() };
    #[allow(clippy::useless_conversion, reason = "c_ulong is u64 here and u32 on Windows")]
    let thread = u64::from(thread);
    DOG.get_or_init(|| Watchdog::new(Raise)).watch(thread, deadline)
}

/// Stops watching (whether it fired, the core judges from the ticket's deadline).
pub(crate) fn unwatch(_py: Python<'_>, id: u64) {
    if let Some(dog) = DOG.get() {
        dog.unwatch(id);
    }
}
