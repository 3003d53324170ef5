//! How sure a fit is: standard errors and correlations of the fitted constants.
//!
//! - `loss: Mse` — the covariance of least squares, `σ²(JᵀJ)⁻¹` at the best restart's
//!   constants, `J` the Jacobian of the outputs at the training points (exact: one walk with
//!   the points as lanes gives every row) and `σ² = SSR / (n − k)` from the residuals — what
//!   scipy's `curve_fit` reports with `absolute_sigma=False`.
//! - `loss: NegLogLikelihood` — the program's output is a negative log-likelihood, whose
//!   covariance is the inverse Hessian. The Hessian comes from central differences of the exact
//!   gradient, `Hᵢⱼ = (∂ⱼL(x + hᵢeᵢ) − ∂ⱼL(x − hᵢeᵢ)) / 2hᵢ` with `hᵢ = 6·10⁻⁶·max(|xᵢ|, 10⁻³)`
//!   (about the cube root of f64's epsilon, relative),
//!   the 2k perturbed points run as lanes of one walk, then symmetrized.
//! - `loss: Output` — no standard errors: an arbitrary objective (a summed squared misfit, say)
//!   is not a likelihood, and its `H⁻¹` is no covariance (for a misfit it is off by `2σ²`).
//!
//! A constant on one of its bounds is the bound, not an estimate: such a fit gets no standard
//! errors either, and a warning names the constant.
//!
//! Both evaluate in f64 whatever the fit's precision. A singular `JᵀJ` or a Hessian that is not
//! positive definite gives no standard errors but a warning: a constant the data does not
//! pin down, or a point that is not a minimum.

use crate::machine::bind;
use crate::optim::dense::{inverse, normal_equations};
use ndvm_bytecode::Executable;
use ndvm_components::prelude::*;
use ndvm_engine::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The relative step of the Hessian's central differences: ∛ε for f64, which balances the
/// truncation error (∝ h²) against cancellation (∝ ε/h).
const STEP: f64 = 6e-6;

/// The standard errors and correlations of one restart's constants.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Uncertainty {
    /// `jacobian` (least squares) or `hessian` (likelihood).
    pub method: &'static str,
    /// One standard error per constant.
    pub std_errors: BTreeMap<String, f64>,
    /// The correlation matrix; rows and columns in the order of the scene's parameter names.
    pub correlation: Vec<Vec<f64>>,
    /// Least squares: the residual variance `SSR / (n − k)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma2: Option<f64>,
    /// Least squares: the degrees of freedom `n − k`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dof: Option<usize>,
}

/// The uncertainty of the constants `at` (one value per parameter) of a candidate, or why
/// there is none.
pub fn of(spec: &FitSpec, program: &Executable, at: &[f64]) -> Result<Uncertainty, String> {
    let k = spec.params.len();
    if k == 0 {
        return Err("no constants".into());
    }
    let pinned: Vec<&str> = spec
        .params
        .iter()
        .zip(at)
        .zip(&spec.bounds)
        .filter(|((_, x), b)| {
            b.min.is_some_and(|lo| **x <= lo) || b.max.is_some_and(|hi| **x >= hi)
        })
        .map(|((name, _), _)| name.as_str())
        .collect();
    if !pinned.is_empty() {
        return Err(format!("{} on a bound", pinned.join(", ")));
    }
    let (cov, sigma2, dof, method) = match (&spec.loss, &spec.data) {
        (Loss::Mse, Some(data)) => {
            let one = FitSpec {
                restarts: 1,
                ..spec.clone()
            };
            let (out, grads) = walk(&one, program, at.to_vec())?;
            let points = data.points();
            let rows: Vec<usize> = (0..points).filter(|&i| data.train[i]).collect();
            let n = rows.len();
            if n <= k {
                return Err(format!(
                    "{n} training points for {k} constants: no degrees of freedom left"
                ));
            }
            let e: Vec<f64> = rows.iter().map(|&i| out[i] - data.target[i]).collect();
            let j: Vec<f64> = rows
                .iter()
                .flat_map(|&i| grads.iter().map(move |g| g[i]))
                .collect();
            let (jtj, _) = normal_equations(k, &j, &e);
            let sigma2 = e.iter().map(|e| e * e).sum::<f64>() / (n - k) as f64;
            let inv = inverse(k, &jtj).ok_or(
                "JᵀJ is singular at the fitted constants (a constant the data does not pin down)",
            )?;
            let cov = inv.iter().map(|c| c * sigma2).collect();
            (cov, Some(sigma2), Some(n - k), "jacobian")
        }
        (Loss::Mse, None) => return Err("least squares without data".into()),
        (Loss::Output, _) => return Err("`loss: Output` is not a likelihood".into()),
        (Loss::NegLogLikelihood, _) => {
            if spec.points() != 1 {
                return Err("the loss has several points per restart".into());
            }
            let h: Vec<f64> = at.iter().map(|x| STEP * x.abs().max(1e-3)).collect();
            let perturbed = FitSpec {
                restarts: 2 * k,
                ..spec.clone()
            };
            // Restart 2i is x + hᵢeᵢ, restart 2i + 1 is x − hᵢeᵢ.
            let mut values = vec![0.0; k * 2 * k];
            for p in 0..k {
                for r in 0..2 * k {
                    let (i, sign) = (r / 2, if r % 2 == 0 { 1.0 } else { -1.0 });
                    let shift = if i == p { sign * h[p] } else { 0.0 };
                    values[p * 2 * k + r] = at[p] + shift;
                }
            }
            let (_, grads) = walk(&perturbed, program, values)?;
            let mut hess = vec![0.0; k * k];
            for i in 0..k {
                for j in 0..k {
                    hess[i * k + j] = (grads[j][2 * i] - grads[j][2 * i + 1]) / (2.0 * h[i]);
                }
            }
            for i in 0..k {
                for j in 0..i {
                    let m = 0.5 * (hess[i * k + j] + hess[j * k + i]);
                    hess[i * k + j] = m;
                    hess[j * k + i] = m;
                }
            }
            let cov = inverse(k, &hess).ok_or(
                "the loss's Hessian is not positive definite at the fitted constants \
                 (not a minimum, or a constant the data does not pin down)",
            )?;
            (cov, None, None, "hessian")
        }
    };
    let se: Vec<f64> = (0..k).map(|i| cov[i * k + i].sqrt()).collect();
    if se.iter().any(|s| !s.is_finite()) {
        return Err("the covariance is not finite at the fitted constants".into());
    }
    let correlation = (0..k)
        .map(|i| {
            (0..k)
                .map(|j| {
                    if i == j {
                        1.0
                    } else {
                        cov[i * k + j] / (se[i] * se[j])
                    }
                })
                .collect()
        })
        .collect();
    Ok(Uncertainty {
        method,
        std_errors: spec.params.iter().cloned().zip(se).collect(),
        correlation,
        sigma2,
        dof,
    })
}

/// One f64 walk with gradients of `spec`'s lanes at `values` (parameter-major, restart-minor):
/// each lane's output and `grads[param][lane]`.
pub(crate) fn walk(
    spec: &FitSpec,
    exe: &Executable,
    values: Vec<f64>,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), String> {
    let lanes: Vec<usize> = (0..spec.lanes()).collect();
    let bindings: Bindings<f64> = bind(&lanes, spec, &ParamValues(values));
    let mut vm = Vm::<f64>::default();
    let mut runner = ndvm_bytecode::Runner::new();
    let e = exe
        .evaluate(&mut vm, &mut runner, &bindings, true)
        .map_err(|e| e.to_string())?;
    let Output::Numbers(out) = e.result else {
        return Err("the output is not a number per lane".into());
    };
    let grads = spec
        .params
        .iter()
        .map(|name| {
            e.grads
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, g)| g.clone())
                .unwrap_or_else(|| vec![0.0; out.len()])
        })
        .collect();
    Ok((out, grads))
}

/// `value ± error` with the error to two significant digits and the value to the same decimal
/// place (`0.6956 ± 0.0031`); scientific notation outside 10⁻⁴ … 10⁶.
pub fn format(value: f64, error: f64) -> String {
    if !(error.is_finite() && error > 0.0) {
        return format!("{value:.6}");
    }
    let decimals = 1 - error.log10().floor() as i32;
    let big = value.abs().max(error);
    if !(1e-4..1e6).contains(&big) || decimals > 10 {
        return format!("{value:.4e} ± {error:.1e}");
    }
    let d = decimals.max(0) as usize;
    format!("{value:.d$} ± {error:.d$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_values_to_the_precision_of_their_error() {
        assert_eq!(format(0.695_612, 0.003_14), "0.6956 ± 0.0031");
        assert_eq!(format(6.621_024, 0.2), "6.62 ± 0.20");
        assert_eq!(format(1234.4, 56.0), "1234 ± 56");
        assert_eq!(format(2.5e-7, 1e-8), "2.5000e-7 ± 1.0e-8");
        assert_eq!(format(1.5, f64::NAN), "1.500000");
    }
}
