//! Drives a trial-based optimizer over a candidate's restarts.
//!
//! Each step hands every restart the evaluation of the point it asked for last (loss, gradient
//! and, for least squares, the Jacobian's normal equations) and writes the point each restart
//! wants next into the candidate's parameters. A restart that has finished asks for its accepted
//! point again. When every restart has finished, or the step limit is reached, the candidate
//! ends — after one more evaluation if some restart's last evaluated point was a rejected
//! trial, so that the last evaluation (what the report reads) is at the accepted points.

use super::dense::normal_equations;
use super::{lbfgs, lm};
use ndvm_components::optimizer::{Bounds, Optimizer, OptimizerState, TrialState};

/// Least-squares data of one step: each lane's output and parameter gradients, the targets and
/// the training mask (`lane = restart · points + point`).
#[derive(Clone, Copy, Debug)]
pub struct LeastSquares<'a> {
    pub out: &'a [f64],
    /// `∂out/∂param` per lane, parameter-major (`p · lanes + lane`).
    pub jacobian: &'a [f64],
    pub target: &'a [f64],
    pub train: &'a [bool],
}

impl LeastSquares<'_> {
    /// `JᵀJ`, `Jᵀe` of one restart over its training points, and the training point count.
    fn normal_equations(&self, restart: usize, params: usize) -> ((Vec<f64>, Vec<f64>), usize) {
        let points = self.target.len();
        let lanes = self.out.len();
        let rows: Vec<usize> = (0..points).filter(|&k| self.train[k]).collect();
        let mut e = Vec::with_capacity(rows.len());
        let mut j = Vec::with_capacity(rows.len() * params);
        for &k in &rows {
            let lane = restart * points + k;
            e.push(self.out[lane] - self.target[k]);
            j.extend((0..params).map(|p| self.jacobian[p * lanes + lane]));
        }
        (normal_equations(params, &j, &e), rows.len())
    }
}

/// What became of the candidate after this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Evaluate the new parameters.
    Continue,
    /// Every restart finished and the last evaluation was at the accepted points.
    Done { converged: bool },
    /// Evaluate the accepted points once more, then end.
    Finishing,
}

/// One step of a trial-based optimizer. `values` (parameter-major, restart-minor) were
/// evaluated to `loss` (per restart) and `grad` (parameter-major); on return they hold the next
/// points. `last` is set when the step limit is reached.
#[allow(clippy::too_many_arguments)]
pub fn advance(
    opt: &Optimizer,
    state: &mut OptimizerState,
    values: &mut [f64],
    (loss, grad): (&[f64], &[f64]),
    lsq: Option<&LeastSquares>,
    bounds: &[Bounds],
    tolerance: Option<f64>,
    last: bool,
) -> Verdict {
    let restarts = loss.len();
    let params = values.len() / restarts.max(1);
    let all_converged = |s: &OptimizerState| s.restarts.iter().all(|r| r.converged);
    if state.finishing {
        return Verdict::Done {
            converged: all_converged(state),
        };
    }
    state.restarts.resize(restarts, TrialState::default());
    state.step += 1;
    for (r, st) in state.restarts.iter_mut().enumerate() {
        let x: Vec<f64> = (0..params).map(|p| values[p * restarts + r]).collect();
        let next = match *opt {
            Optimizer::LevenbergMarquardt {
                damping,
                ftol,
                xtol,
            } => {
                let Some(lsq) = lsq else {
                    continue;
                };
                let (ne, points) = lsq.normal_equations(r, params);
                let s = lm::Settings {
                    damping,
                    ftol,
                    xtol,
                    tolerance,
                    points: points.max(1) as f64,
                };
                lm::advance(st, &x, loss[r], ne, bounds, &s)
            }
            Optimizer::Lbfgs { memory, ftol, xtol } => {
                let g: Vec<f64> = (0..params).map(|p| grad[p * restarts + r]).collect();
                let s = lbfgs::Settings {
                    memory,
                    ftol,
                    xtol,
                    tolerance,
                };
                lbfgs::advance(st, &x, loss[r], &g, bounds, &s)
            }
            Optimizer::Adam { .. } | Optimizer::Sgd { .. } => continue,
        };
        for (p, v) in next.into_iter().enumerate() {
            values[p * restarts + r] = v;
        }
    }
    let finished = state.restarts.iter().all(|r| r.finished);
    if !(finished || last) {
        return Verdict::Continue;
    }
    // From here on every restart stays at its accepted point (no trial is left unevaluated in
    // the parameters).
    for (r, st) in state.restarts.iter().enumerate() {
        for (p, &v) in st.x.iter().enumerate() {
            values[p * restarts + r] = v;
        }
    }
    if state.restarts.iter().all(|r| r.at_accepted) {
        return Verdict::Done {
            converged: finished && all_converged(state),
        };
    }
    for st in state.restarts.iter_mut() {
        if !st.finished {
            st.finished = true;
            st.converged = false;
        }
    }
    state.finishing = true;
    Verdict::Finishing
}

/// The loss of every restart's accepted point (what a step's history records for a
/// trial-based optimizer: the best loss so far, not a rejected trial's).
pub fn accepted_losses(state: &OptimizerState) -> Vec<f64> {
    state.restarts.iter().map(|r| r.loss).collect()
}

/// Every restart's accepted point, parameter-major (as [`ParamValues`]); `None` before the
/// first evaluation.
///
/// [`ParamValues`]: ndvm_components::candidate::ParamValues
pub fn accepted_points(state: &OptimizerState, params: usize) -> Option<Vec<f64>> {
    let restarts = state.restarts.len();
    let mut out = vec![0.0; params * restarts];
    for (r, st) in state.restarts.iter().enumerate() {
        if st.x.len() != params {
            return None;
        }
        for (p, &v) in st.x.iter().enumerate() {
            out[p * restarts + r] = v;
        }
    }
    Some(out)
}
