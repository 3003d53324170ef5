//! Whether a fit finished or merely stopped: the figures that tell convergence from a step
//! limit reached while the loss was still falling.
//!
//! `converged` means the best restart — the one whose constants are reported — met its
//! stopping rule (the scene's tolerance, or a Levenberg–Marquardt or L-BFGS test); `done` that
//! it reached the step limit first. Other restarts do not change the verdict: a poor start
//! still wandering at the step limit says nothing about the best one. Beside the status, every
//! candidate reports for its best restart the gradient norm at the final constants, the
//! relative loss change over the last step, and the parameters sitting on a bound — a
//! constant pinned to its bound is the bound, not a fitted value.

use ndvm_components::prelude::*;
use serde::Serialize;

/// Relative loss decrease per step above which a `done` fit is called still improving.
pub const STILL_IMPROVING: f64 = 1e-4;

/// The convergence figures of one restart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Convergence {
    /// This restart met its stopping rule (see the module docs).
    pub converged: bool,
    /// ‖∂loss/∂constants‖ at the final constants (`null` before the first step).
    pub gradient_norm: Option<f64>,
    /// (previous loss − final loss) / |previous loss| over the last step: positive while the
    /// loss still falls (`null` with fewer than two evaluations).
    pub last_relative_change: Option<f64>,
    /// Constants on a bound, as `name=min` or `name=max`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at_bounds: Vec<String>,
}

impl Convergence {
    /// Of restart `r`, whose final constants are `at` (parameter-major, as [`ParamValues`]).
    pub fn of_restart(
        spec: &FitSpec,
        history: &History,
        at: &[f64],
        r: usize,
        converged: bool,
    ) -> Self {
        let n = history.losses.len();
        let last_relative_change = (n >= 2)
            .then(|| {
                let (prev, last) = (history.losses[n - 2].get(r)?, history.losses[n - 1].get(r)?);
                Some((prev - last) / prev.abs().max(f64::MIN_POSITIVE))
            })
            .flatten()
            .filter(|x| x.is_finite());
        let at_bounds = spec
            .params
            .iter()
            .enumerate()
            .filter_map(|(p, name)| {
                let x = *at.get(p * spec.restarts + r)?;
                let b = spec.bounds.get(p)?;
                match (b.min, b.max) {
                    (Some(lo), _) if x <= lo => Some(format!("{name}=min")),
                    (_, Some(hi)) if x >= hi => Some(format!("{name}=max")),
                    _ => None,
                }
            })
            .collect();
        Convergence {
            converged,
            gradient_norm: history.grad_norm.get(r).copied(),
            last_relative_change,
            at_bounds,
        }
    }

    /// Stopped by the step limit while the loss was still falling noticeably.
    pub fn still_improving(&self) -> bool {
        !self.converged
            && self
                .last_relative_change
                .is_some_and(|d| d > STILL_IMPROVING)
    }

    /// A short note for the ranked table (empty when there is nothing to say).
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        if self.still_improving() {
            parts.push(format!(
                "still improving: loss −{:.1e} in the last step; more steps?",
                self.last_relative_change.unwrap_or(0.0)
            ));
        }
        if !self.at_bounds.is_empty() {
            parts.push(format!("at a bound: {}", self.at_bounds.join(" ")));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn spec() -> FitSpec {
        FitSpec {
            params: vec!["a".into(), "k".into()],
            bounds: vec![
                Bounds::default(),
                Bounds {
                    min: Some(0.0),
                    max: Some(1.0),
                },
            ],
            restarts: 2,
            loss: ndvm_components::scene::Loss::Mse,
            data: None,
            shared: Arc::default(),
            optimizer: Optimizer::default(),
            steps: 10,
            tolerance: None,
        }
    }

    #[test]
    fn figures_are_read_per_restart() {
        let history = History {
            losses: vec![vec![2.0, 1.0], vec![1.0, 1.0]],
            grad_norm: vec![0.5, 0.0],
            ..History::default()
        };
        // a: [1.5, 2.5] (restarts 0, 1); k: [1.0, 0.3].
        let at = [1.5, 2.5, 1.0, 0.3];
        let c0 = Convergence::of_restart(&spec(), &history, &at, 0, false);
        assert_eq!(c0.last_relative_change, Some(0.5));
        assert_eq!(c0.gradient_norm, Some(0.5));
        assert_eq!(c0.at_bounds, ["k=max"]);
        assert!(c0.still_improving());
        assert_eq!(
            c0.note(),
            "still improving: loss −5.0e-1 in the last step; more steps?; at a bound: k=max"
        );
        let c1 = Convergence::of_restart(&spec(), &history, &at, 1, false);
        assert_eq!(c1.last_relative_change, Some(0.0));
        assert!(c1.at_bounds.is_empty() && !c1.still_improving() && c1.note().is_empty());
    }
}
