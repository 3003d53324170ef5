//! The built-in scalar primitives seen through the [`Primitive`] interface, so the same
//! finite-difference check that custom primitives use covers them too.

use super::Primitive;
use crate::prims::scalar::Op;

/// A built-in unary or binary scalar op as a [`Primitive`] (forward and VJP are the engine's own
/// `f64` formulas).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin(pub Op);

impl Builtin {
    /// Every built-in scalar op with a derivative (rounding ops and `select` excluded).
    pub fn all() -> Vec<Builtin> {
        use Op::*;
        [
            Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Exp, Log, Sqrt, Abs, Square, Add,
            Sub, Mul, Div, Pow, Min, Max, Modulo, Remainder, Atan2,
        ]
        .into_iter()
        .map(Builtin)
        .collect()
    }
}

impl Primitive for Builtin {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn arity(&self) -> usize {
        if self.0.is_binary() { 2 } else { 1 }
    }

    fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
        for (l, o) in out.iter_mut().enumerate() {
            *o = if self.0.is_binary() {
                self.0.eval2(args[0][l], args[1][l])
            } else {
                self.0.eval1(args[0][l])
            };
        }
    }

    fn vjp(&self, args: &[&[f64]], out: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
        for l in 0..g.len() {
            if self.0.is_binary() {
                let (da, db) = self.0.vjp2(args[0][l], args[1][l], out[l], g[l]);
                grads[0][l] = da;
                grads[1][l] = db;
            } else {
                grads[0][l] = self.0.vjp1(args[0][l], out[l], g[l]);
            }
        }
    }
}
