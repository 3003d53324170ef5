//! Screening generated programs with the oracle: which ones are fit to check at all, and which
//! are well conditioned enough to hold an f32 walk to the reference's tolerances.

use crate::oracle::{self, OracleResult};

/// Smallest accepted switching margin, in parameter space (see `oracle::OracleResult::margin`).
pub const MIN_MARGIN: f64 = 0.02;
/// Largest accepted |value| and |gradient|.
pub const MAX_MAGNITUDE: f64 = 1e6;
/// Largest accepted intermediate value: well inside f32's range even when squared, so an f32 walk
/// never overflows in a part of the program whose value is then dropped. (An overflow there
/// still poisons the f32 gradient with 0·inf = NaN; see the differential-testing notes.)
pub const MAX_PEAK: f64 = 1e15;

/// Why the oracle turns a generated program away, if it does.
pub fn unsuitable(o: &OracleResult) -> Option<&'static str> {
    let big = |x: f64| !x.is_finite() || x.abs() > MAX_MAGNITUDE;
    if big(o.value) || o.grad.iter().any(|&g| big(g)) || o.peak > MAX_PEAK {
        Some("large")
    } else if o.grad.iter().all(|&g| g == 0.0) {
        Some("constant")
    } else if o.margin < MIN_MARGIN {
        Some("near a switch")
    } else {
        None
    }
}

/// Whether an f32 walk can be held to the reference's tolerances. Two perturbed oracle runs
/// stand in for f32's errors: one with every parameter moved by about eight f32 ulps (2⁻²⁰
/// relative, signs alternating: input rounding), one with every intermediate value and derivative
/// that depends on a parameter perturbed by ±2⁻²⁴ (stochastic arithmetic: rounding in every
/// operation). If either moves the value or gradient by a tenth of G1's or G2's f32 tolerance,
/// rounding alone could break them, and the program is checked in f64 only.
pub fn f32_conditioned(src: &str, params: &[(String, f64)], o: &OracleResult) -> bool {
    let nudged: Vec<(String, f64)> = params
        .iter()
        .enumerate()
        .map(|(i, (n, p))| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            (n.clone(), p + sign * p.abs().max(1.0) * 2f64.powi(-20))
        })
        .collect();
    let moved = |m: &OracleResult| {
        let far = |a: f64, b: f64, tol: f64| {
            let err = (a - b).abs();
            err.is_nan() || err > 0.1 * tol * (1.0 + b.abs())
        };
        far(m.value, o.value, 1e-4) || m.grad.iter().zip(&o.grad).any(|(&a, &b)| far(a, b, 2e-3))
    };
    let runs = [
        oracle::evaluate(src, &nudged),
        oracle::evaluate_with_noise(src, params, 2f64.powi(-24), 0x9E37_79B9),
    ];
    runs.iter().all(|r| r.as_ref().is_ok_and(|m| !moved(m)))
}
