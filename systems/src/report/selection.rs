//! Model-selection figures for least-squares fits: how many constants a candidate spends, how
//! much of the training variance it explains, and the information criteria that weigh the two.
//!
//! For a fit by mean squared error over `n` training points with `k` constants, assuming
//! Gaussian residuals: `AIC = n·ln(MSE) + 2k` and `BIC = n·ln(MSE) + k·ln(n)` (constant terms
//! dropped: only differences between candidates on the same data mean anything). Lower is
//! better; a difference above about 10 is strong evidence.

use ndvm_components::prelude::*;
use serde::Serialize;

/// The figures of one candidate's best restart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    /// Fitted constants.
    pub params: usize,
    /// Training points.
    pub points: usize,
    /// 1 − MSE / variance of the training targets.
    pub train_r2: f64,
    pub aic: f64,
    pub bic: f64,
}

impl Selection {
    /// For an `Mse` fit with data and a finite loss; `None` otherwise.
    pub fn of(spec: &FitSpec, mse: f64) -> Option<Selection> {
        let data = spec.data.as_ref().filter(|_| spec.loss == Loss::Mse)?;
        if !mse.is_finite() {
            return None;
        }
        let train: Vec<f64> = data
            .target
            .iter()
            .zip(&data.train)
            .filter(|(_, t)| **t)
            .map(|(y, _)| *y)
            .collect();
        let n = train.len();
        if n == 0 {
            return None;
        }
        let mean = train.iter().sum::<f64>() / n as f64;
        let var = train.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64;
        let k = spec.params.len();
        let fit = n as f64 * mse.max(f64::MIN_POSITIVE).ln();
        Some(Selection {
            params: k,
            points: n,
            train_r2: 1.0 - mse / var,
            aic: fit + 2.0 * k as f64,
            bic: fit + k as f64 * (n as f64).ln(),
        })
    }
}
