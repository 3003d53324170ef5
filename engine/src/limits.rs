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
