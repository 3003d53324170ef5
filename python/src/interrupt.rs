//! Ctrl-C while the engine works: Python's signal handlers run only when the interpreter gets
//! control, and a call into the engine keeps it for the whole search. [`interruptible`] runs the
//! work on a thread of its own while this one wakes every [`POLL`] to let Python see signals; a
//! `KeyboardInterrupt` (or any exception a handler raises) sets the work's interrupt flag — the
//! engine stops at its next pass and writes what it found — and is raised once it has ended.

use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the waiting thread lets Python handle signals.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` (given the interrupt flag it should stop on) with the GIL released, raising what
/// a signal handler raised meanwhile once `work` has stopped.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(Arc<AtomicBool>) -> T + Send,
) -> PyResult<T> {
    let flag = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let handle = s.spawn({
            let flag = flag.clone();
            move || work(flag)
        });
        let mut raised = None;
        while !handle.is_finished() {
            py.detach(|| std::thread::sleep(POLL));
            if raised.is_none()
                && let Err(e) = py.check_signals()
            {
                flag.store(true, Ordering::Relaxed);
                raised = Some(e);
            }
        }
        let out = match handle.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match raised {
            Some(e) => Err(e),
            None => Ok(out),
        }
    })
}
