//! Levenberg–Marquardt on the exact Jacobian, one trial point per restart and step.
//!
//! With `loss: Mse` the data points are lanes, so the walk that gives the loss also gives every
//! residual's gradient: the Jacobian `J` (training points × parameters) comes with every
//! evaluation. At the accepted point the step solves `(JᵀJ + λ·D) δ = −Jᵀe` (`D` the diagonal
//! of `JᵀJ`, Marquardt's scaling, floored so a parameter the data ignores cannot make it
//! singular); the trial `x + δ` is clamped into the bounds and evaluated on the next step. A
//! trial whose loss fell by a fair share of what the quadratic model predicted (ρ > 10⁻⁴) is
//! accepted and λ shrinks by Nielsen's rule; otherwise λ grows (×2, ×4, …) and the next trial
//! starts from the same point. Every restart does this on its own numbers only, so a batch of
//! restarts steps exactly as each would alone.

use super::dense::{cholesky, dot, norm, solve};
use ndvm_components::optimizer::{Bounds, TrialState};

/// Least squares: the loss is `Σ eₖ² / n` over the `n` training points.
#[derive(Clone, Debug)]
pub struct Settings {
    pub damping: f64,
    pub ftol: f64,
    pub xtol: f64,
    /// The scene's tolerance: an accepted step that moves the loss by less stops the restart.
    pub tolerance: Option<f64>,
    /// Training points (the `n` of the loss).
    pub points: f64,
}

/// The minimum fraction of the predicted decrease an accepted trial must achieve.
const ACCEPT: f64 = 1e-4;

/// Damping beyond which a restart gives up moving.
const MAX_DAMPING: f64 = 1e32;

/// The smallest damping (it shrinks on every good step; at 0 it could not grow again).
const MIN_DAMPING: f64 = 1e-15;

/// Takes the evaluation of the point `x` (its `loss`, `JᵀJ` and `Jᵀe`) and returns the next
/// point to evaluate: a new trial, or the accepted point once the restart has finished.
pub fn advance(
    st: &mut TrialState,
    x: &[f64],
    loss: f64,
    (jtj, jte): (Vec<f64>, Vec<f64>),
    bounds: &[Bounds],
    s: &Settings,
) -> Vec<f64> {
    let finite = loss.is_finite() && jtj.iter().chain(&jte).all(|v| v.is_finite());
    if !st.started {
        st.started = true;
        st.damping = s.damping.max(MIN_DAMPING);
        st.growth = 2.0;
        st.at_accepted = true;
        accept(st, x, loss, jtj, jte);
        if !finite {
            st.finished = true;
        } else if loss == 0.0 || nothing_left(st, s) {
            finish(st, true);
        }
    } else if st.finished {
        st.at_accepted = true;
    } else {
        let actual = st.loss - loss;
        let rho = actual / st.predicted;
        if finite && actual > 0.0 && rho > ACCEPT {
            let small = (actual <= s.ftol * st.loss && st.predicted <= s.ftol * st.loss)
                || s.tolerance.is_some_and(|t| actual < t);
            st.damping =
                (st.damping * (1.0 / 3.0f64).max(1.0 - (2.0 * rho - 1.0).powi(3))).max(MIN_DAMPING);
            st.growth = 2.0;
            accept(st, x, loss, jtj, jte);
            st.at_accepted = true;
            if small || loss == 0.0 || nothing_left(st, s) {
                finish(st, true);
            }
        } else {
            st.damping *= st.growth;
            st.growth *= 2.0;
            st.at_accepted = false;
        }
    }
    if !st.finished {
        propose(st, bounds, s);
    }
    if st.finished {
        st.x.clone()
    } else {
        st.direction.clone()
    }
}

fn accept(st: &mut TrialState, x: &[f64], loss: f64, jtj: Vec<f64>, jte: Vec<f64>) {
    st.x = x.to_vec();
    st.loss = loss;
    st.normal = jtj;
    st.jte = jte;
}

/// The smallest diagonal entry Marquardt's scaling uses, so a parameter the data ignores cannot
/// make the damped system singular.
fn floor(st: &TrialState) -> f64 {
    let p = st.x.len();
    let top = (0..p).map(|i| st.normal[i * p + i]).fold(0.0, f64::max);
    1e-12 * top.max(1e-300)
}

/// Whether even the undamped (Gauss–Newton) step from the accepted point promises less than
/// `ftol` of its loss: nothing is left to gain (a stationary point, or the evaluation's rounding
/// floor, where trials would only be rejected until the step limit). Checked once per accepted
/// point: the promise does not depend on the damping.
fn nothing_left(st: &TrialState, s: &Settings) -> bool {
    let p = st.x.len();
    let mut a = st.normal.clone();
    let floor = floor(st);
    for i in 0..p {
        a[i * p + i] += floor;
    }
    let rhs: Vec<f64> = st.jte.iter().map(|g| -g).collect();
    cholesky(p, &a)
        .is_some_and(|l| dot(&st.jte, &solve(p, &l, &rhs)).abs() / s.points <= s.ftol * st.loss)
}

fn finish(st: &mut TrialState, converged: bool) {
    st.finished = true;
    st.converged = converged;
}

/// Solves for the damped step from the accepted point and leaves the clamped trial point in
/// `st.direction` (or finishes the restart when the step is negligible or cannot descend).
fn propose(st: &mut TrialState, bounds: &[Bounds], s: &Settings) {
    let p = st.x.len();
    let floor = floor(st);
    let rhs: Vec<f64> = st.jte.iter().map(|g| -g).collect();
    while st.damping < MAX_DAMPING {
        let mut a = st.normal.clone();
        for i in 0..p {
            a[i * p + i] += st.damping * st.normal[i * p + i].max(floor);
        }
        if let Some(l) = cholesky(p, &a) {
            let delta = solve(p, &l, &rhs);
            let trial: Vec<f64> = (0..p)
                .map(|i| {
                    let b = bounds.get(i).copied().unwrap_or_default();
                    b.clamp(st.x[i] + delta[i])
                })
                .collect();
            let d: Vec<f64> = trial.iter().zip(&st.x).map(|(t, x)| t - x).collect();
            if norm(&d) <= s.xtol * (norm(&st.x) + s.xtol) {
                finish(st, true);
                return;
            }
            // The model's decrease of Σe²/n: −(2·Jᵀe·d + dᵀJᵀJd)/n.
            let quad: f64 = (0..p)
                .map(|i| d[i] * dot(&st.normal[i * p..(i + 1) * p], &d))
                .sum();
            let predicted = -(2.0 * dot(&st.jte, &d) + quad) / s.points;
            if predicted > 0.0 && predicted.is_finite() {
                st.predicted = predicted;
                st.direction = trial;
                return;
            }
        }
        st.damping *= st.growth;
        st.growth *= 2.0;
    }
    finish(st, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::dense::normal_equations;

    /// Residuals and Jacobian of y = a·exp(−b·t) against `data` at (a, b).
    fn model(x: &[f64], data: &[(f64, f64)]) -> (f64, (Vec<f64>, Vec<f64>)) {
        let (a, b) = (x[0], x[1]);
        let mut e = Vec::new();
        let mut j = Vec::new();
        for &(t, y) in data {
            let f = a * (-b * t).exp();
            e.push(f - y);
            j.extend([(-b * t).exp(), -a * t * (-b * t).exp()]);
        }
        let loss = e.iter().map(|e| e * e).sum::<f64>() / data.len() as f64;
        (loss, normal_equations(2, &j, &e))
    }

    fn settings(points: usize) -> Settings {
        Settings {
            damping: 1e-3,
            ftol: 1e-12,
            xtol: 1e-12,
            tolerance: None,
            points: points as f64,
        }
    }

    #[test]
    fn reaches_an_exact_fit_from_far_away() {
        let data: Vec<(f64, f64)> = (0..20)
            .map(|i| {
                let t = i as f64 * 0.25;
                (t, 3.0 * (-0.7 * t).exp())
            })
            .collect();
        let mut st = TrialState::default();
        let mut x = vec![1.0, 0.1];
        for _ in 0..200 {
            let (loss, ne) = model(&x, &data);
            x = advance(&mut st, &x, loss, ne, &[], &settings(data.len()));
            if st.finished {
                break;
            }
        }
        assert!(st.finished && st.converged, "{st:?}");
        assert!(
            (st.x[0] - 3.0).abs() < 1e-9 && (st.x[1] - 0.7).abs() < 1e-9,
            "{:?}",
            st.x
        );
        assert_eq!(x, st.x, "a finished restart returns its accepted point");
    }

    #[test]
    fn a_restart_at_the_minimum_stops_converged_whatever_the_damping() {
        // Noisy data: the minimum's loss is not 0, and its Gauss–Newton step promises nothing.
        let data = [(0.0, 1.02), (1.0, 0.49), (2.0, 0.21), (3.0, 0.11)];
        let mut x = vec![1.0, 0.7];
        let mut st = TrialState::default();
        for _ in 0..200 {
            let (loss, ne) = model(&x, &data);
            x = advance(&mut st, &x, loss, ne, &[], &settings(data.len()));
            if st.finished {
                break;
            }
        }
        assert!(st.converged, "{st:?}");
        let at_minimum = st.x.clone();
        for damping in [1e-3, 1e6] {
            let mut again = TrialState::default();
            let (loss, ne) = model(&at_minimum, &data);
            let s = Settings {
                damping,
                ftol: 1e-10,
                ..settings(data.len())
            };
            let next = advance(&mut again, &at_minimum, loss, ne, &[], &s);
            assert!(
                again.finished && again.converged,
                "damping {damping}: {again:?}"
            );
            assert_eq!(next, at_minimum);
        }
    }

    #[test]
    fn a_rejected_trial_keeps_the_accepted_point_and_raises_the_damping() {
        let data = [(0.0, 1.0), (1.0, 0.5), (2.0, 0.2)];
        let mut st = TrialState::default();
        let x0 = vec![1.0, 0.5];
        let (loss, ne) = model(&x0, &data);
        let trial = advance(&mut st, &x0, loss, ne, &[], &settings(3));
        let damping = st.damping;
        // Report a worse loss at the trial: it must be rejected.
        let (_, ne) = model(&trial, &data);
        let next = advance(&mut st, &trial, loss * 10.0, ne, &[], &settings(3));
        assert!(!st.at_accepted);
        assert_eq!(st.x, x0);
        assert_eq!(st.damping, damping * 2.0);
        assert_ne!(next, trial, "a smaller step from the same point");
    }

    #[test]
    fn a_tiny_initial_damping_still_converges() {
        // Damping shrinks on every good step; a floor keeps it able to grow again.
        let data: Vec<(f64, f64)> = (0..8)
            .map(|i| (i as f64, (-0.5 * i as f64).exp()))
            .collect();
        let s = Settings {
            damping: 1e-300,
            ..settings(data.len())
        };
        let mut st = TrialState::default();
        let mut x = vec![0.5, 0.1];
        for _ in 0..500 {
            let (loss, ne) = model(&x, &data);
            x = advance(&mut st, &x, loss, ne, &[], &s);
            if st.finished {
                break;
            }
        }
        assert!(st.finished && st.converged, "{st:?}");
        assert!((st.x[0] - 1.0).abs() < 1e-8 && (st.x[1] - 0.5).abs() < 1e-8);
    }

    #[test]
    fn trials_stay_inside_the_bounds() {
        let data: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 2.0 * (-0.3 * i as f64).exp()))
            .collect();
        let bounds = [
            Bounds {
                min: None,
                max: Some(1.5),
            },
            Bounds::default(),
        ];
        let mut st = TrialState::default();
        let mut x = vec![1.0, 0.3];
        for _ in 0..100 {
            let (loss, ne) = model(&x, &data);
            x = advance(&mut st, &x, loss, ne, &bounds, &settings(data.len()));
            assert!(x[0] <= 1.5);
            if st.finished {
                break;
            }
        }
        assert_eq!(
            st.x[0], 1.5,
            "the best fit inside the bounds sits on a = 1.5"
        );
    }
}
