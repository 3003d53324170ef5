//! A search's budget: the caller's (a CLI flag, a Python argument) replaces the scene's whole
//! budget; with neither seconds nor calibrations, [`DEFAULT_SECONDS`]. One place resolves it for
//! a plain search and for a sharded one's plan.

use crate::run::SearchError;
use ndvm_components::scene::search::Search as Spec;

/// The budget when neither the scene nor the caller gives one.
pub const DEFAULT_SECONDS: f64 = 60.0;

/// A resolved budget: a wall-clock limit, a calibration count, or both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub seconds: Option<f64>,
    pub calibrations: Option<u64>,
}

impl Budget {
    /// The caller's `seconds` and `calibrations` (either replaces the scene's budget) over the
    /// scene's, the time limit checked.
    pub fn resolve(
        seconds: Option<f64>,
        calibrations: Option<u64>,
        spec: &Spec,
    ) -> Result<Budget, SearchError> {
        let (seconds, calibrations) = match (seconds, calibrations) {
            (None, None) => (spec.budget.seconds, spec.budget.calibrations),
            given => given,
        };
        let seconds = match (seconds, calibrations) {
            (None, None) => Some(DEFAULT_SECONDS),
            (s, _) => s,
        };
        if let Some(s) = seconds {
            ndvm_components::limits::check_seconds("the time budget", s)
                .map_err(SearchError::Setting)?;
        }
        Ok(Budget {
            seconds,
            calibrations,
        })
    }
}
