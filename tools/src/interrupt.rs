//! Ctrl-C and SIGTERM: the long commands (fit, profile, search) stop cleanly and write what
//! they finished; a second signal exits at once, leaving whole files ([`ndvm_systems::exit`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A flag Ctrl-C (or SIGTERM, what job schedulers send) sets; a second one exits at once.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let seen = flag.clone();
    // Only one handler per process; if one is set already, the fit simply cannot be interrupted.
    let _ = ctrlc::set_handler(move || {
        if seen.swap(true, Ordering::Relaxed) {
            ndvm_systems::exit::now(130);
        }
    });
    flag
}
