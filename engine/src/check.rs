//! Gradient checking by central finite differences.
//!
//! Lanes are independent, so perturbing a parameter in every lane at once gives every lane's
//! partial derivative from two evaluations. Used by the property tests of every primitive and by
//! differential testing; custom primitives will use it too.

use crate::bindings::{Bindings, Input};
use crate::error::Result;
use crate::eval::{Output, evaluate};
use crate::program::Program;
use crate::real::Real;
use crate::walk::Vm;

/// Central differences `(f(p + h) − f(p − h)) / 2h` per lane, for every scalar or per-lane
/// parameter, in binding order. The result must be a number.
pub fn finite_differences<R: Real>(
    vm: &mut Vm<R>,
    program: &Program,
    bindings: &Bindings<R>,
    step: R,
) -> Result<Vec<(String, Vec<R>)>> {
    finite_differences_of(bindings, step, |b| {
        evaluate(vm, program, b, false).map(|e| e.result)
    })
}

/// [`finite_differences`] of any evaluation `f` (another client's, say).
pub fn finite_differences_of<R: Real>(
    bindings: &Bindings<R>,
    step: R,
    mut f: impl FnMut(&Bindings<R>) -> Result<Output<R>>,
) -> Result<Vec<(String, Vec<R>)>> {
    let mut out = Vec::new();
    for (i, b) in bindings.items.iter().enumerate() {
        if !b.param || matches!(b.value, Input::Matrix { .. }) {
            continue;
        }
        let shifted = |sign: R| {
            let mut bs = bindings.clone();
            bs.items[i].value = match &b.value {
                Input::Scalar(x) => Input::Scalar(*x + sign * step),
                Input::Lanes(xs) => Input::Lanes(xs.iter().map(|&x| x + sign * step).collect()),
                other => other.clone(),
            };
            bs
        };
        let plus = numbers(f(&shifted(R::one()))?);
        let minus = numbers(f(&shifted(-R::one()))?);
        let two_h = step + step;
        out.push((
            b.name.clone(),
            plus.iter()
                .zip(&minus)
                .map(|(&p, &m)| (p - m) / two_h)
                .collect(),
        ));
    }
    Ok(out)
}

fn numbers<R: Real>(o: Output<R>) -> Vec<R> {
    match o {
        Output::Numbers(v) => v,
        Output::Vector(data) | Output::Matrix { data, .. } => {
            data.iter().map(|d| d.iter().copied().sum()).collect()
        }
        Output::Data(d) => vec![R::nan(); d.len()],
    }
}

/// `|a − b| ≤ atol + rtol·|b|`, with equal non-finite values accepted.
pub fn close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}
