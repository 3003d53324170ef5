//! Scalar numeric primitives: forward formulas, VJPs and their lane kernels
//! (docs/language-reference.md §6.1, §6.3, §6.8, §8.3).
//!
//! Each op is defined once, as a scalar formula ([`Op::eval1`], [`Op::eval2`]) and a scalar VJP
//! ([`Op::vjp1`], [`Op::vjp2`]). Constants fold through the scalar formula; lane values go through
//! the lane kernels, which monomorphize the same formula per op into a loop over lanes, so a
//! constant and a lane value give the same bits.

use crate::real::Real;

/// A numeric tape op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    // unary
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Log,
    Sqrt,
    Abs,
    Square,
    Floor,
    Ceiling,
    Round,
    Truncate,
    /// The identity: copies a number into a tensor element (`vec`, `mat`, `transpose` rows).
    Copy,
    // binary
    Add,
    /// `(0 + a) + b`: the first step of a variadic `+`, which folds from 0
    /// (docs/language-reference.md §6.1).
    Add0,
    Sub,
    Mul,
    Div,
    Pow,
    Min,
    Max,
    Modulo,
    Remainder,
    Atan2,
    /// A custom primitive ([`crate::extension`]): its operands live in [`crate::tape::Tape::ext`],
    /// indexed by the node's `a`; the walk and the backward pass call its kernels directly.
    Ext,
    /// The per-lane merge of a split branch: the then-lanes take `a`, the else-lanes `b`. Its
    /// lane sets live on the tape node; the walk and the backward pass handle it directly.
    Select,
    // Linear algebra over whole tensors (docs/language-reference.md §6.5–§6.6): not elementwise, so
    // the lane kernels skip them; [`crate::prims::linalg`] runs them and their VJPs.
    Dot,
    Cross,
    Norm,
    Normalize,
    VSum,
    Trace,
    Transpose,
    MatMul,
    MatVec,
    Outer,
    Det,
    LogDet,
    Inv,
}

impl Op {
    /// Whether a lane of this op costs a few instructions (arithmetic, selection, rounding),
    /// as opposed to a transcendental function worth vectorizing at any price.
    pub fn is_cheap(self) -> bool {
        matches!(
            self,
            Op::Abs
                | Op::Square
                | Op::Floor
                | Op::Ceiling
                | Op::Round
                | Op::Truncate
                | Op::Copy
                | Op::Add
                | Op::Add0
                | Op::Sub
                | Op::Mul
                | Op::Div
                | Op::Min
                | Op::Max
        )
    }

    pub fn is_binary(self) -> bool {
        (Op::Add as u8..=Op::Atan2 as u8).contains(&(self as u8))
    }

    /// Whether this is a linear-algebra op (run by [`crate::prims::linalg`], not elementwise).
    pub fn is_linalg(self) -> bool {
        self as u8 > Op::Select as u8
    }

    /// Whether the op's lane kernel over a tensor has a vectorized variant that is not its
    /// scalar formula (`exp`, `sin`, `cos`, `log`): a one-lane tensor node runs the kernel,
    /// every other elementwise op its scalar formula (the same bits).
    #[inline]
    pub fn has_vector_kernel(self) -> bool {
        matches!(self, Op::Exp | Op::Sin | Op::Cos | Op::Log)
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Sin => "sin",
            Op::Cos => "cos",
            Op::Tan => "tan",
            Op::Asin => "asin",
            Op::Acos => "acos",
            Op::Atan | Op::Atan2 => "atan",
            Op::Sinh => "sinh",
            Op::Cosh => "cosh",
            Op::Tanh => "tanh",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Sqrt => "sqrt",
            Op::Abs => "abs",
            Op::Square => "square",
            Op::Floor => "floor",
            Op::Ceiling => "ceiling",
            Op::Round => "round",
            Op::Truncate => "truncate",
            Op::Add | Op::Add0 => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Pow => "pow",
            Op::Min => "min",
            Op::Max => "max",
            Op::Modulo => "modulo",
            Op::Remainder => "remainder",
            Op::Copy => "vec",
            Op::Select => "if",
            Op::Ext => "custom primitive",
            Op::Dot => "dot",
            Op::Cross => "cross",
            Op::Norm => "norm",
            Op::Normalize => "normalize",
            Op::VSum => "vsum",
            Op::Trace => "trace",
            Op::Transpose => "transpose",
            Op::MatMul => "matmul",
            Op::MatVec => "matvec",
            Op::Outer => "outer",
            Op::Det => "det",
            Op::LogDet => "logdet",
            Op::Inv => "inv",
        }
    }

    /// A unary op's value.
    #[inline(always)]
    pub fn eval1<R: Real>(self, x: R) -> R {
        match self {
            Op::Sin => x.sin_l(),
            Op::Cos => x.cos_l(),
            Op::Tan => x.tan(),
            Op::Asin => x.asin(),
            Op::Acos => x.acos(),
            Op::Atan => x.atan(),
            Op::Sinh => x.sinh(),
            Op::Cosh => x.cosh(),
            Op::Tanh => x.tanh(),
            Op::Exp => x.exp_l(),
            Op::Log => clamp(x).ln_l(),
            Op::Sqrt => clamp(x).sqrt(),
            Op::Abs => x.abs(),
            Op::Square => x * x,
            Op::Floor => x.floor(),
            Op::Ceiling => x.ceil(),
            Op::Round => round_even(x),
            Op::Truncate => x.trunc(),
            Op::Copy => x,
            _ => R::nan(),
        }
    }

    /// A binary op's value.
    #[inline(always)]
    pub fn eval2<R: Real>(self, a: R, b: R) -> R {
        match self {
            Op::Add => a + b,
            Op::Add0 => (R::zero() + a) + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div => a / b,
            Op::Pow => a.powf(b),
            Op::Min => {
                if a.is_nan() || b.is_nan() {
                    R::nan()
                } else if b < a {
                    b
                } else {
                    a
                }
            }
            Op::Max => {
                if a.is_nan() || b.is_nan() {
                    R::nan()
                } else if b > a {
                    b
                } else {
                    a
                }
            }
            Op::Modulo => {
                let r = a.fmod(b);
                if r != R::zero() && (r < R::zero()) != (b < R::zero()) {
                    r + b
                } else {
                    r
                }
            }
            Op::Remainder => a.fmod(b),
            Op::Atan2 => a.atan2(b),
            _ => R::nan(),
        }
    }

    /// The adjoint a unary op sends to its operand, given operand `x`, result `z` and adjoint `g`.
    #[inline(always)]
    pub fn vjp1<R: Real>(self, x: R, z: R, g: R) -> R {
        let one = R::one();
        match self {
            Op::Sin => g * x.cos_l(),
            Op::Cos => -(g * x.sin_l()),
            Op::Tan => g * (one + z * z),
            Op::Asin => g / (one - x * x).sqrt(),
            Op::Acos => -(g / (one - x * x).sqrt()),
            Op::Atan => g / (one + x * x),
            Op::Sinh => g * x.cosh(),
            Op::Cosh => g * x.sinh(),
            Op::Tanh => g * (one - z * z),
            Op::Exp => g * z,
            Op::Log => {
                if x > R::clamp_eps() {
                    g / x
                } else {
                    R::zero()
                }
            }
            Op::Sqrt => {
                if x > R::clamp_eps() {
                    g / (z + z)
                } else {
                    R::zero()
                }
            }
            Op::Abs => {
                if x > R::zero() {
                    g
                } else if x < R::zero() {
                    -g
                } else if x.is_nan() {
                    R::nan()
                } else {
                    R::zero()
                }
            }
            Op::Square => (g + g) * x,
            Op::Copy => g,
            _ => R::zero(),
        }
    }

    /// The adjoints a binary op sends to its operands.
    #[inline(always)]
    pub fn vjp2<R: Real>(self, a: R, b: R, z: R, g: R) -> (R, R) {
        let zero = R::zero();
        match self {
            Op::Add | Op::Add0 => (g, g),
            Op::Sub => (g, -g),
            Op::Mul => (g * b, g * a),
            Op::Div => (g / b, -(g * z / b)),
            Op::Pow => {
                let da = if b == zero {
                    zero
                } else {
                    g * b * a.powf(b - R::one())
                };
                let db = if a == zero && b >= zero {
                    zero
                } else {
                    g * z * a.ln()
                };
                (da, db)
            }
            Op::Min | Op::Max => {
                if a.is_nan() || b.is_nan() {
                    (g, g)
                } else if a == b {
                    let h = g / (R::one() + R::one());
                    (h, h)
                } else if (self == Op::Min) == (a < b) {
                    (g, zero)
                } else {
                    (zero, g)
                }
            }
            Op::Modulo => (g, -(g * (a / b).floor())),
            Op::Remainder => (g, -(g * (a / b).trunc())),
            Op::Atan2 => {
                // a = y, b = x
                let d = a * a + b * b;
                if d == zero {
                    (zero, zero)
                } else {
                    (g * b / d, -(g * a / d))
                }
            }
            _ => (zero, zero),
        }
    }
}

/// `max(x, 1e-8)` for `sqrt` and `log`, letting NaN through.
#[inline(always)]
fn clamp<R: Real>(x: R) -> R {
    if x <= R::clamp_eps() {
        R::clamp_eps()
    } else {
        x
    }
}

/// Round to nearest, ties to even.
#[inline(always)]
fn round_even<R: Real>(x: R) -> R {
    let r = x.round();
    let half = R::one() / (R::one() + R::one());
    if (r - x).abs() == half {
        r - r.fmod(R::one() + R::one())
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::Op;

    #[test]
    fn edge_semantics() {
        assert_eq!(Op::Sqrt.eval1(-1.0f32), 1e-4); // f32 9.99999975e-05
        assert_eq!(Op::Log.eval1(0.0f32), -18.420681);
        assert!(Op::Sqrt.eval1(f32::NAN).is_nan());
        assert_eq!(Op::Modulo.eval2(-7.0f64, 3.0), 2.0);
        assert_eq!(Op::Modulo.eval2(7.0f64, -3.0), -2.0);
        assert_eq!(Op::Modulo.eval2(7.5f64, 2.0), 1.5);
        assert_eq!(Op::Remainder.eval2(-7.0f64, 3.0), -1.0);
        assert_eq!(Op::Remainder.eval2(7.0f64, -3.0), 1.0);
        assert!(Op::Modulo.eval2(1.0f64, 0.0).is_nan());
        assert_eq!(Op::Round.eval1(2.5f64), 2.0);
        assert_eq!(Op::Round.eval1(-2.5f64), -2.0);
        assert_eq!(Op::Round.eval1(3.5f64), 4.0);
        assert_eq!(Op::Pow.eval2(0.0f64, 0.0), 1.0);
        assert_eq!(Op::Pow.eval2(0.0f64, -1.0), f64::INFINITY);
        assert!(Op::Pow.eval2(-8.0f64, 1.0 / 3.0).is_nan());
        assert!(Op::Min.eval2(f64::NAN, 1.0).is_nan() && Op::Min.eval2(1.0, f64::NAN).is_nan());
        assert_eq!(Op::Min.vjp2(2.0f64, 2.0, 2.0, 1.0), (0.5, 0.5));
        assert_eq!(Op::Pow.vjp2(0.0f64, 0.0, 1.0, 1.0), (0.0, 0.0));
        assert_eq!(Op::Sqrt.vjp1(1e-8f32, 1e-4, 1.0), 0.0);
        assert_eq!(Op::Atan2.vjp2(0.0f64, 0.0, 0.0, 1.0), (0.0, 0.0));
        assert_eq!(Op::Abs.vjp1(0.0f64, 0.0, 1.0), 0.0);
    }
}
