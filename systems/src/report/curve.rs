//! The fitted curve on a dense grid, with its 95% confidence band: what a data plot draws.
//!
//! Drawn through the predictions at the data points alone, a curve is only as smooth as the
//! data is dense, and bends at every point. Here the program runs again (f64, one walk with the
//! grid as lanes) at [`POINTS`] evenly spaced values of the data's input, at the best restart's
//! constants, with gradients. The band is the delta method's: for the gradient `g` of the
//! prediction with respect to the constants and their covariance `Σ` (rebuilt from the
//! reported standard errors and correlations), the half-width is `q·√(gᵀΣg)` — a 95% interval
//! for the curve itself (not for new observations). `q` is Student's t quantile at the fit's
//! `n − k` degrees of freedom for least squares, whose `σ²` is estimated from the residuals
//! (2.31 at 8, tending to 1.96), and the normal 1.96 for a likelihood's inverse Hessian.
//!
//! Only data with one input column has a curve (with several, the prediction is not a function
//! of the x axis alone).

use crate::report::CandidateResult;
use crate::report::uncertainty::walk;
use ndvm_bytecode::Executable;
use ndvm_components::prelude::*;
use std::sync::Arc;

/// Grid points of a curve.
pub const POINTS: usize = 200;

/// The two-sided 95% quantile of the standard normal.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The two-sided 95% quantile of Student's t at `dof` degrees of freedom (the normal's without).
pub fn quantile95(dof: Option<usize>) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    dof.filter(|&d| d > 0)
        .and_then(|d| StudentsT::new(0.0, 1.0, d as f64).ok())
        .map_or(Z95, |t| t.inverse_cdf(0.975))
}

/// A fitted curve: `y[i]` at `x[i]`, and the band's half-width at each point where the
/// constants have standard errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub band: Option<Vec<f64>>,
}

/// The curve of `result` (its best restart's constants) over its data's only input, or `None`
/// (no data, several inputs, an empty range, or an evaluation that fails).
pub fn of(result: &CandidateResult, spec: &FitSpec, program: &Executable) -> Option<Curve> {
    let data = spec.data.as_ref()?;
    let [(name, xs)] = data.inputs.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let (lo, hi) = xs
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if lo >= hi || !lo.is_finite() {
        return None;
    }
    let x: Vec<f64> = (0..POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / (POINTS - 1) as f64)
        .collect();
    let grid = Dataset {
        inputs: [(name.clone(), x.clone())].into(),
        target: vec![0.0; POINTS],
        train: vec![true; POINTS],
        dropped_rows: Vec::new(),
        names: data.names.clone(),
    };
    let at: Vec<f64> = spec
        .params
        .iter()
        .map(|p| result.params.get(p).copied())
        .collect::<Option<_>>()?;
    let one = FitSpec {
        restarts: 1,
        data: Some(Arc::new(grid)),
        ..spec.clone()
    };
    let (y, grads) = walk(&one, program, at).ok()?;
    let band = result.uncertainty.as_ref().and_then(|u| {
        let se: Vec<f64> = spec
            .params
            .iter()
            .map(|p| u.std_errors.get(p).copied())
            .collect::<Option<_>>()?;
        let k = se.len();
        let q = quantile95(u.dof);
        let half = (0..POINTS).map(|g| {
            let mut var = 0.0;
            for i in 0..k {
                for j in 0..k {
                    let cov = se[i] * se[j] * u.correlation[i][j];
                    var += grads[i][g] * cov * grads[j][g];
                }
            }
            q * var.max(0.0).sqrt()
        });
        Some(half.collect::<Vec<f64>>())
    });
    Some(Curve { x, y, band })
}
