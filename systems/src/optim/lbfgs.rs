//! L-BFGS with a backtracking line search, one trial point per restart and step.
//!
//! For any scalar loss (a likelihood, the program's own output) with its exact gradient. At
//! the accepted point the direction is `−H·g`, `H` the limited-memory inverse-Hessian estimate
//! from the last `memory` steps (the two-loop recursion, scaled by `sᵀy/yᵀy`); components that
//! would push a parameter already on a bound further out are dropped (a projected search), and
//! every trial is clamped into the bounds. A trial that meets the Armijo condition
//! (`f(x + s) ≤ f(x) + 10⁻⁴·gᵀs`) is accepted; otherwise the step shrinks by quadratic
//! interpolation (to between 0.1 and 0.5 of itself). Each restart works on its own numbers only.

use super::dense::{dot, norm};
use ndvm_components::optimizer::{Bounds, TrialState};

#[derive(Clone, Debug)]
pub struct Settings {
    pub memory: usize,
    pub ftol: f64,
    pub xtol: f64,
    /// The scene's tolerance: an accepted step that moves the loss by less stops the restart.
    pub tolerance: Option<f64>,
}

/// Sufficient decrease (Armijo) constant.
const ARMIJO: f64 = 1e-4;

/// Line-search tries at one point before the restart gives up.
const MAX_TRIES: u32 = 40;

/// Takes the evaluation of the point `x` (its `loss` and gradient `g`) and returns the next
/// point to evaluate: a new trial, or the accepted point once the restart has finished.
pub fn advance(
    st: &mut TrialState,
    x: &[f64],
    loss: f64,
    g: &[f64],
    bounds: &[Bounds],
    s: &Settings,
) -> Vec<f64> {
    let finite = loss.is_finite() && g.iter().all(|v| v.is_finite());
    if !st.started {
        st.started = true;
        st.at_accepted = true;
        accept(st, x, loss, g);
        if !finite {
            st.finished = true;
        } else {
            direction(st, bounds, s);
        }
    } else if st.finished {
        st.at_accepted = true;
    } else {
        let step: Vec<f64> = x.iter().zip(&st.x).map(|(a, b)| a - b).collect();
        let slope = dot(&st.grad, &step);
        // A trial clamped into the bounds may no longer point downhill: never accept a rise.
        if finite && slope < 0.0 && loss <= st.loss + ARMIJO * slope {
            let y: Vec<f64> = g.iter().zip(&st.grad).map(|(a, b)| a - b).collect();
            if dot(&step, &y) > 1e-10 * norm(&step) * norm(&y) {
                st.pairs.push((step, y));
                if st.pairs.len() > s.memory {
                    st.pairs.remove(0);
                }
            }
            let decrease = st.loss - loss;
            accept(st, x, loss, g);
            st.at_accepted = true;
            let small =
                decrease <= s.ftol * loss.abs() || s.tolerance.is_some_and(|t| decrease < t);
            if small || g.iter().all(|&v| v == 0.0) {
                finish(st, true);
            } else {
                direction(st, bounds, s);
            }
        } else {
            st.at_accepted = false;
            st.tries += 1;
            // The minimum of the quadratic through f(x), its slope and f(x + step).
            let curvature = loss - st.loss - slope;
            let shrink = if finite && curvature > 0.0 {
                (-slope / (2.0 * curvature)).clamp(0.1, 0.5)
            } else {
                0.1
            };
            st.alpha *= shrink;
            if st.tries > MAX_TRIES {
                finish(st, false);
            } else {
                trial(st, bounds, s);
            }
        }
    }
    if st.finished {
        st.x.clone()
    } else {
        st.direction
            .iter()
            .zip(&st.x)
            .enumerate()
            .map(|(i, (d, x))| clamp(bounds, i, x + st.alpha * d))
            .collect()
    }
}

fn accept(st: &mut TrialState, x: &[f64], loss: f64, g: &[f64]) {
    st.x = x.to_vec();
    st.loss = loss;
    st.grad = g.to_vec();
    st.tries = 0;
}

fn finish(st: &mut TrialState, converged: bool) {
    st.finished = true;
    st.converged = converged;
}

fn clamp(bounds: &[Bounds], i: usize, x: f64) -> f64 {
    bounds.get(i).copied().unwrap_or_default().clamp(x)
}

/// The quasi-Newton direction at the accepted point, projected onto the bounds, and the first
/// step along it.
fn direction(st: &mut TrialState, bounds: &[Bounds], s: &Settings) {
    let mut d = two_loop(&st.pairs, &st.grad);
    project(&mut d, &st.x, bounds);
    if dot(&d, &st.grad) >= 0.0 {
        // Not a descent direction (curvature information gone stale): steepest descent.
        st.pairs.clear();
        d = two_loop(&st.pairs, &st.grad);
        project(&mut d, &st.x, bounds);
    }
    if d.iter().all(|&v| v == 0.0) {
        // The projected gradient vanishes: a minimum on the bounds (or an exact stationary point).
        finish(st, true);
        return;
    }
    st.alpha = if st.pairs.is_empty() {
        (1.0 / norm(&st.grad)).min(1.0)
    } else {
        1.0
    };
    // The first trial's predicted decrease (to first order): below `ftol` of the loss there is
    // nothing left to gain (a stationary point, or the evaluation's rounding floor).
    if -st.alpha * dot(&d, &st.grad) <= s.ftol * st.loss.abs() {
        finish(st, true);
        return;
    }
    st.direction = d;
    trial(st, bounds, s);
}

/// Finishes the restart when the step to the trial point is negligible.
fn trial(st: &mut TrialState, bounds: &[Bounds], s: &Settings) {
    let step: Vec<f64> = st
        .direction
        .iter()
        .zip(&st.x)
        .enumerate()
        .map(|(i, (d, x))| clamp(bounds, i, x + st.alpha * d) - x)
        .collect();
    if norm(&step) <= s.xtol * (norm(&st.x) + s.xtol) {
        finish(st, true);
    }
}

/// Drops the components that would move a parameter on a bound further out.
fn project(d: &mut [f64], x: &[f64], bounds: &[Bounds]) {
    for (i, di) in d.iter_mut().enumerate() {
        let b = bounds.get(i).copied().unwrap_or_default();
        if b.min.is_some_and(|lo| x[i] <= lo && *di < 0.0)
            || b.max.is_some_and(|hi| x[i] >= hi && *di > 0.0)
        {
            *di = 0.0;
        }
    }
}

/// `−H·g` by the two-loop recursion over the correction pairs (oldest first).
fn two_loop(pairs: &[(Vec<f64>, Vec<f64>)], g: &[f64]) -> Vec<f64> {
    let mut q = g.to_vec();
    let mut alphas = Vec::with_capacity(pairs.len());
    for (s, y) in pairs.iter().rev() {
        let a = dot(s, &q) / dot(y, s);
        q.iter_mut().zip(y).for_each(|(q, y)| *q -= a * y);
        alphas.push(a);
    }
    if let Some((s, y)) = pairs.last() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|q| *q *= gamma);
    }
    for ((s, y), a) in pairs.iter().zip(alphas.iter().rev()) {
        let b = dot(y, &q) / dot(y, s);
        q.iter_mut().zip(s).for_each(|(q, s)| *q += s * (a - b));
    }
    q.iter_mut().for_each(|q| *q = -*q);
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            memory: 10,
            ftol: 1e-14,
            xtol: 1e-12,
            tolerance: None,
        }
    }

    /// Rosenbrock's function and its gradient.
    fn rosenbrock(x: &[f64]) -> (f64, Vec<f64>) {
        let (a, b) = (x[0], x[1]);
        let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        let g = vec![
            -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
            200.0 * (b - a * a),
        ];
        (f, g)
    }

    #[test]
    fn minimizes_rosenbrock() {
        let mut st = TrialState::default();
        let mut x = vec![-1.2, 1.0];
        let mut evaluations = 0;
        while !st.finished && evaluations < 1000 {
            let (f, g) = rosenbrock(&x);
            x = advance(&mut st, &x, f, &g, &[], &settings());
            evaluations += 1;
        }
        assert!(st.converged, "{st:?}");
        assert!(
            (st.x[0] - 1.0).abs() < 1e-6 && (st.x[1] - 1.0).abs() < 1e-6,
            "{:?}",
            st.x
        );
        assert!(evaluations < 200, "{evaluations} evaluations");
    }

    #[test]
    fn a_gradient_at_the_rounding_floor_is_convergence() {
        // f = 1 + (x − 3)² evaluated at x = 3 + 1e-9: nothing is left to gain, and a line
        // search at this scale would only chase rounding.
        let mut st = TrialState::default();
        let x = [3.0 + 1e-9];
        let f = 1.0 + (x[0] - 3.0f64).powi(2);
        let s = Settings {
            ftol: 1e-10,
            ..settings()
        };
        let next = advance(&mut st, &x, f, &[2.0 * (x[0] - 3.0)], &[], &s);
        assert!(st.finished && st.converged, "{st:?}");
        assert_eq!(next, x);
    }

    #[test]
    fn stops_on_a_bound_when_the_minimum_lies_beyond_it() {
        // f = (x − 3)² with x ≤ 2: the answer is 2.
        let bounds = [Bounds {
            min: None,
            max: Some(2.0),
        }];
        let mut st = TrialState::default();
        let mut x = vec![0.0];
        for _ in 0..100 {
            let f = (x[0] - 3.0f64).powi(2);
            x = advance(&mut st, &x, f, &[2.0 * (x[0] - 3.0)], &bounds, &settings());
            assert!(x[0] <= 2.0);
            if st.finished {
                break;
            }
        }
        assert!(st.finished && st.converged);
        assert_eq!(st.x, vec![2.0]);
    }

    #[test]
    fn the_two_loop_recursion_solves_a_quadratic_in_n_steps() {
        // On f = ½xᵀAx with exact line searches, BFGS is exact after n steps; here we check
        // that H·y = s holds for the newest pair (the secant condition).
        let pairs = vec![
            (vec![1.0, 0.0], vec![4.0, 1.0]),
            (vec![0.0, 1.0], vec![1.0, 3.0]),
        ];
        let d = two_loop(&pairs, &[1.0, 3.0]);
        assert!(
            (d[0] - 0.0).abs() < 1e-12 && (d[1] + 1.0).abs() < 1e-12,
            "{d:?}"
        );
    }
}
