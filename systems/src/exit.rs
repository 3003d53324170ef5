//! Leaving at once — a second Ctrl-C or SIGTERM — without leaving a broken file behind.
//!
//! The first signal stops a run cleanly (it writes what it found). A second one must end the
//! process now, yet the rule that a run's files are whole still holds: [`now`] waits for a log
//! write in progress to end (the log writes whole lines, programs before the calibrations that
//! name them, under [`writing`]), removes the temporary files a sharded search keeps its
//! shards' records in ([`temporary`]), then exits. A write that does not end within
//! [`GRACE`] (a stalled disk) is abandoned.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long [`now`] waits for a log write in progress.
pub const GRACE: Duration = Duration::from_secs(3);

static WRITING: Mutex<()> = Mutex::new(());
static TEMPORARY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Held while a log's lines go to disk: [`now`] does not exit in the middle of them.
pub fn writing() -> std::sync::MutexGuard<'static, ()> {
    WRITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file or folder [`now`] removes; it stops being one when the guard is dropped.
#[derive(Debug)]
pub struct Temporary(PathBuf);

/// Registers `path` as temporary until the returned guard is dropped.
pub fn temporary(path: PathBuf) -> Temporary {
    let mut paths = TEMPORARY.lock().unwrap_or_else(|e| e.into_inner());
    paths.push(path.clone());
    Temporary(path)
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let mut paths = TEMPORARY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = paths.iter().position(|p| *p == self.0) {
            paths.swap_remove(i);
        }
    }
}

/// Exits with `code` once no log write is in progress (or after [`GRACE`]), the temporary files
/// removed first.
pub fn now(code: i32) -> ! {
    let until = Instant::now() + GRACE;
    let guard = loop {
        match WRITING.try_lock() {
            Ok(g) => break Some(g),
            Err(std::sync::TryLockError::Poisoned(g)) => break Some(g.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(std::sync::TryLockError::WouldBlock) => break None,
        }
    };
    let paths = TEMPORARY.lock().map(|p| p.clone()).unwrap_or_default();
    for path in paths {
        if path.is_dir() {
            let _ = std::fs::remove_dir_all(&path);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    // Held to the end: no line starts after the check.
    let _held = guard;
    std::process::exit(code)
}
