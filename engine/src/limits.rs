//! Resource limits: every evaluation is bounded (docs/architecture.md, invariant 6).
//!
//! Limits count the walk, not lanes (docs/language-reference.md §9.6). Exceeding one is a clean
//! `limit` error that names the limit and its value.

/// Bounds on one evaluation. The defaults let real models run and stop runaway programs within
/// about a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Form evaluations and tail calls of the walk, all lanes together.
    pub eval_steps: u64,
    /// Pairs, closures and retained environment frames allocated by the walk.
    pub heap_cells: u64,
    /// Numeric tape nodes recorded.
    pub tape_nodes: u64,
    /// Nested non-tail evaluations: non-tail calls and mixed branches.
    pub recursion_depth: u64,
    /// Numeric payload (primal values of every lane) allocated by the walk.
    pub payload_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            eval_steps: 100_000_000,
            heap_cells: 16_000_000,
            tape_nodes: 16_000_000,
            recursion_depth: 2_000_000,
            payload_bytes: 1 << 30,
        }
    }
}

impl Limits {
    /// Small limits for untrusted fuzz inputs: every evaluation ends within milliseconds.
    pub fn small() -> Self {
        Limits {
            eval_steps: 200_000,
            heap_cells: 100_000,
            tape_nodes: 100_000,
            recursion_depth: 10_000,
            payload_bytes: 16 << 20,
        }
    }
}

/// How a [`Stop`]ped evaluation's error message begins.
pub const STOPPED: &str = "stopped: the run was interrupted or its time budget ran out";

/// Steps between two looks at a [`Stop`] (a clock read costs about as much as a few hundred
/// steps' bookkeeping; 2¹⁴ steps take a few milliseconds).
pub const STOP_EVERY: u64 = 1 << 14;

/// An outside request to end an evaluation early: a flag (Ctrl-C, SIGTERM) and a deadline (a
/// time budget). The walk looks at it every [`STOP_EVERY`] steps, so a budget or a signal is
/// honoured within milliseconds even inside a 10⁸-step loop; the evaluation then ends with a
/// `limit` error saying it was stopped.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    pub flag: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    pub deadline: Option<std::time::Instant>,
}

impl Stop {
    /// Why to stop now, if at all: `interrupted` (the flag is set) or `wall-clock budget spent`
    /// (the deadline has passed).
    pub fn reason(&self) -> Option<&'static str> {
        if self.interrupted() {
            Some("interrupted")
        } else if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            Some("wall-clock budget spent")
        } else {
            None
        }
    }

    /// Whether to stop now.
    pub fn requested(&self) -> bool {
        self.reason().is_some()
    }

    /// Whether the flag is set (Ctrl-C, SIGTERM): [`Stop::requested`] without reading the
    /// clock for the deadline.
    pub fn interrupted(&self) -> bool {
        let flag = self.flag.as_ref();
        flag.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }
}
