//! Checking a primitive's VJP against central finite differences.

use super::Primitive;

/// A VJP that disagrees with finite differences (or a primitive that misbehaves).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "`{name}` at {point:?}: ∂/∂operand {operand} is {vjp} by the VJP but {fd} by finite differences"
)]
pub struct CheckError {
    pub name: String,
    pub point: Vec<f64>,
    pub operand: usize,
    pub vjp: f64,
    pub fd: f64,
}

/// Checks `p`'s VJP at every point (one value per operand) against central differences:
/// Richardson-extrapolated `(4·D(h) − D(2h)) / 3` with `h = 1e-4·max(1, |x|)`, which must agree
/// within `1e-6·(1 + |∂|)` plus the extrapolation's own error estimate. The VJP is also checked
/// to be linear in the cotangent (a seed of 2.5 must give 2.5 times the partials). All points are
/// evaluated as lanes of one batch, so the kernels' lane handling is exercised as well.
pub fn check_primitive(p: &dyn Primitive, points: &[Vec<f64>]) -> Result<(), CheckError> {
    let n = p.arity();
    let lanes = points.len();
    let column = |i: usize, shift: &dyn Fn(usize, f64) -> f64| -> Vec<f64> {
        points
            .iter()
            .enumerate()
            .map(|(l, pt)| shift(l, pt[i]))
            .collect()
    };
    let eval = |cols: &[Vec<f64>]| {
        let args: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let mut out = vec![0.0; lanes];
        p.forward(&args, &mut out);
        out
    };
    let base: Vec<Vec<f64>> = (0..n).map(|i| column(i, &|_, x| x)).collect();
    let out = eval(&base);
    let args: Vec<&[f64]> = base.iter().map(Vec::as_slice).collect();
    let partials = |seed: f64| {
        let mut grads = vec![vec![0.0; lanes]; n];
        p.vjp(&args, &out, &vec![seed; lanes], &mut grads);
        grads
    };
    let (unit, scaled) = (partials(1.0), partials(2.5));
    for i in 0..n {
        let step = |l: usize, k: f64| 1e-4 * points[l][i].abs().max(1.0) * k;
        let shifted = |k: f64| -> Vec<f64> {
            let mut cols = base.clone();
            cols[i] = column(i, &|l, x| x + step(l, k));
            eval(&cols)
        };
        let (p1, m1, p2, m2) = (shifted(1.0), shifted(-1.0), shifted(2.0), shifted(-2.0));
        for l in 0..lanes {
            let h = step(l, 1.0);
            let d1 = (p1[l] - m1[l]) / (2.0 * h);
            let d2 = (p2[l] - m2[l]) / (4.0 * h);
            let fd = (4.0 * d1 - d2) / 3.0;
            let vjp = unit[i][l];
            let tol = 1e-6 * (1.0 + fd.abs()) + (d1 - d2).abs();
            let linear = (scaled[i][l] - 2.5 * vjp).abs() <= 1e-12 * (1.0 + vjp.abs());
            if !(vjp - fd).abs().le(&tol) || !linear {
                return Err(CheckError {
                    name: p.name().to_string(),
                    point: points[l].clone(),
                    operand: i,
                    vjp,
                    fd,
                });
            }
        }
    }
    Ok(())
}
