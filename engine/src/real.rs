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
}

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
        }
    };
}

impl_real!(f32, "f32", u32, f32);
impl_real!(f64, "f64", u64, f64);
