//! Optimizers: how a candidate's constants move between steps.
//!
//! Two families. [`first_order`] (Adam, SGD) moves every lane along its gradient on every step.
//! The trial-based ones — [`lm`] (Levenberg–Marquardt on the exact Jacobian, least squares) and
//! [`lbfgs`] (any scalar loss) — evaluate one trial point per restart and step, accept it or
//! not, and stop each restart on their own convergence tests; [`trial`] drives them over a
//! candidate's restarts and makes sure the last evaluation is at the accepted points, so the
//! reported loss, constants and predictions belong together. [`dense`] holds the small
//! symmetric solves they (and the uncertainties) need.

pub mod dense;
pub mod first_order;
pub mod lbfgs;
pub mod lm;
pub mod trial;

pub use first_order::step;

use ndvm_components::prelude::{History, ParamValues};

/// The constants the last recorded loss was evaluated at (parameter-major).
pub fn final_values<'a>(history: &'a History, values: &'a ParamValues) -> &'a [f64] {
    if history.evaluated.len() == values.0.len() {
        &history.evaluated
    } else {
        &values.0
    }
}
