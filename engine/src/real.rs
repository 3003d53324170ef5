//! Payload precision: every kernel is generic over [`Real`], implemented for `f32` (the default,
//! matching the reference systems) and `f64` (for likelihood-heavy science).

use num_traits::Float;
use std::fmt::{Debug, Display};

/// A payload number type.
pub trait Real:
    Float + Default + Debug + Display + Send + Sync + bytemuck::Pod + std::iter::Sum + 'static
{
    /// The name used on the command line (`f32`, `f64`).
    const NAME: &'static str;
    /// Parses a numeric literal body (already validated by the reader) with correct rounding.
    fn parse_literal(text: &str) -> Self;
    /// A numeric literal in this precision (each precision is rounded from the decimal text).
    fn from_literal(l: crate::syntax::reader::Literal) -> Self;
    /// Converts from f64 (used for host inputs given as JSON numbers), rounding to nearest.
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The bits of this value, zero-extended, for storing a constant inline in a value.
    fn to_bits64(self) -> u64;
    fn from_bits64(bits: u64) -> Self;
    /// The `sqrt`/`log`/`normalize` clamp, 1e-8 rounded to this precision.
    fn clamp_eps() -> Self;
    /// IEEE remainder of truncating division (C `fmod`).
    fn fmod(self, b: Self) -> Self;
    /// e^x, sin x, cos x as every kernel computes them (f32: [`crate::prims::fastmath`]).
    fn exp_l(self) -> Self;
    fn sin_l(self) -> Self;
    fn cos_l(self) -> Self;
    fn ln_l(self) -> Self;
    /// Whether every value is in the range where the vectorizable forms below equal the
    /// total ones above.
    fn exp_vectorizable(xs: &[Self]) -> bool;
    fn trig_vectorizable(xs: &[Self]) -> bool;
    /// Whether every value, clamped as `log` clamps it, is in the `ln` polynomial's range.
    fn log_vectorizable(xs: &[Self]) -> bool;
    fn ln_v(self) -> Self;
    fn exp_v(self) -> Self;
    fn sin_v(self) -> Self;
    fn cos_v(self) -> Self;
}

use crate::prims::fastmath;

macro_rules! impl_real {
    ($t:ty, $name:literal, $bits:ty, $field:ident) => {
        impl Real for $t {
            const NAME: &'static str = $name;
            fn from_literal(l: crate::syntax::reader::Literal) -> Self {
                l.$field
            }
            fn parse_literal(text: &str) -> Self {
                text.parse::<$t>().unwrap_or(<$t>::NAN)
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_bits64(self) -> u64 {
                self.to_bits() as u64
            }
            fn from_bits64(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
            fn clamp_eps() -> Self {
                1e-8
            }
            fn fmod(self, b: Self) -> Self {
                self % b
            }
            impl_real!(@math $field);
        }
    };
    (@math f32) => {
        #[inline(always)]
        fn exp_l(self) -> Self {
            fastmath::exp(self)
        }
        #[inline(always)]
        fn sin_l(self) -> Self {
            fastmath::sin(self)
        }
        #[inline(always)]
        fn cos_l(self) -> Self {
            fastmath::cos(self)
        }
        #[inline(always)]
        fn ln_l(self) -> Self {
            fastmath::ln(self)
        }
        fn log_vectorizable(xs: &[Self]) -> bool {
            // Clamped to ≥ 1e-8, every finite value is a positive normal number.
            xs.iter().fold(true, |ok, &x| ok & x.is_finite())
        }
        #[inline(always)]
        fn ln_v(self) -> Self {
            fastmath::ln_poly(self)
        }
        fn exp_vectorizable(xs: &[Self]) -> bool {
            // A branch-free fold (not `all`) so the check itself vectorizes.
            xs.iter().fold(true, |ok, &x| ok & fastmath::exp_in_range(x))
        }
        fn trig_vectorizable(xs: &[Self]) -> bool {
            xs.iter().fold(true, |ok, &x| ok & fastmath::trig_in_range(x))
        }
        #[inline(always)]
        fn exp_v(self) -> Self {
            fastmath::exp_poly(self)
        }
        #[inline(always)]
        fn sin_v(self) -> Self {
            fastmath::sin_poly_range(self)
        }
        #[inline(always)]
        fn cos_v(self) -> Self {
            fastmath::cos_poly_range(self)
        }
    };
    (@math f64) => {
        fn exp_l(self) -> Self {
            self.exp()
        }
        fn sin_l(self) -> Self {
            self.sin()
        }
        fn cos_l(self) -> Self {
            self.cos()
        }
        fn ln_l(self) -> Self {
            self.ln()
        }
        fn log_vectorizable(_: &[Self]) -> bool {
            false
        }
        fn ln_v(self) -> Self {
            self.ln()
        }
        fn exp_vectorizable(_: &[Self]) -> bool {
            false
        }
        fn trig_vectorizable(_: &[Self]) -> bool {
            false
        }
        fn exp_v(self) -> Self {
            self.exp()
        }
        fn sin_v(self) -> Self {
            self.sin()
        }
        fn cos_v(self) -> Self {
            self.cos()
        }
    };
}

impl_real!(f32, "f32", u32, f32);
impl_real!(f64, "f64", u64, f64);
