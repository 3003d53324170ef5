//! The largest sizes a scene may ask for (`docs/limits.md`).
//!
//! Each bounds an allocation made before any program runs — grid points, restarts, lanes, worker
//! threads — so a typo such as `Linspace(0, 5, 1000000000000)` is a clean error rather than an
//! out-of-memory abort. The evaluator's own limits (steps, heap, depth, payload) are
//! `ndvm_engine::Limits`.

/// Worker threads (`threads`, `--threads`).
pub const THREADS: usize = 1024;

/// Restarts of one candidate (`restarts.count`), and draws of a search calibration.
pub const RESTARTS: u32 = 100_000;

/// Points of one data set (a synthetic grid's `n`, `Values`).
pub const POINTS: usize = 10_000_000;

/// Lanes of one candidate: restarts × data points.
pub const LANES: usize = 1 << 24;

/// Numeric payload a search's window of candidates may allocate together: each candidate's
/// walk gets this divided by the window (64 MiB at the default window of 64), instead of the
/// engine's 1 GiB each (64 candidates just under it once took 3.4 GB and aborted).
pub const SEARCH_PAYLOAD: u64 = 4 << 30;

/// Candidates of one fit (a search streams any number through its window): each keeps its
/// spec, its results and its report (a 1,000,000-line stream once took 5.7 GB and aborted).
pub const CANDIDATES: usize = 100_000;

/// Candidates a search keeps in flight (`window`).
pub const WINDOW: usize = 1 << 16;

/// Lanes a search keeps in flight: `window` × draws × training points. Each lane holds its
/// tape's values and adjoints (a few hundred bytes for a small program), so this bounds a
/// search's memory at a few GiB whatever its settings (`draws: 30000` once took 6.3 GB and
/// aborted). The default window of 64 leaves 65,536 lanes per calibration.
pub const LANES_IN_FLIGHT: usize = 1 << 22;

/// Parameters of one candidate (Levenberg–Marquardt and the uncertainties hold `P × P`
/// matrices and solve them in `P³`).
pub const PARAMS: usize = 1000;

/// Values of one data set: points × columns (a synthetic grid's inputs, a CSV file's bound
/// columns and target), and of all a scene's data sets together.
pub const DATA_VALUES: usize = 40_000_000;

/// A wall-clock budget in seconds (`budget_seconds`, `search.budget.seconds`,
/// `--budget-seconds`) must be finite and ≥ 0 (0 stops before the first step); `what` names the
/// setting in the message.
pub fn check_seconds(what: &str, seconds: f64) -> Result<(), String> {
    if seconds.is_finite() && seconds >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{what} must be a finite number of seconds ≥ 0, got {seconds}"
        ))
    }
}
