//! Branch-free f32 `exp`, `sin`, `cos` and `ln` that vectorize over lanes.
//!
//! libm's scalar calls cost 5–6 ns per lane and never vectorize; transcendental-heavy models
//! (oscillators, decays) spend most of their lane time there. These are the Cephes polynomials
//! (`expf`, `sinf`, `cosf`, `logf`: within 2 ulp of the true value) written without branches, so
//! a loop over lanes compiles to SIMD. Outside the polynomials' range (|x| > 8192 for sin/cos, x
//! outside [−87, 88] for exp, x not a positive normal number for ln, and non-finite inputs) the
//! value comes from libm.
//!
//! Every lane gets the same function of its input whichever loop computed it: the total
//! functions ([`exp`], [`sin`], [`cos`]) pick the polynomial exactly when the vectorized loop
//! would, so batches stay byte-identical to their lanes run alone.

/// Largest |x| for the sin/cos polynomials.
pub const TRIG_MAX: f32 = 8192.0;
/// The exp polynomial's range (2^n stays a normal number).
pub const EXP_MIN: f32 = -87.0;
pub const EXP_MAX: f32 = 88.0;

#[inline(always)]
pub fn trig_in_range(x: f32) -> bool {
    x.abs() <= TRIG_MAX
}

#[inline(always)]
pub fn exp_in_range(x: f32) -> bool {
    (EXP_MIN..=EXP_MAX).contains(&x)
}

/// 1.5 · 2^23: adding and subtracting it rounds an f32 below 2^22 in magnitude to an integer,
/// and the sum's low mantissa bits hold that integer.
const MAGIC: f32 = 12_582_912.0;

/// `floor(t)` as a float and an integer, for |t| < 2^22, with float adds and bit operations only
/// (Rust's saturating `as i32` does not vectorize).
#[inline(always)]
fn floor_i(t: f32) -> (f32, i32) {
    let r = (t + MAGIC) - MAGIC;
    let f = if r > t { r - 1.0 } else { r };
    let i = ((f + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    (f, i)
}

/// e^x for x in [`EXP_MIN`], [`EXP_MAX`].
#[inline(always)]
pub fn exp_poly(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    let (fx, n) = floor_i(x * LOG2E + 0.5);
    let r = x - fx * C1 - fx * C2;
    let z = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * z + r + 1.0;
    y * f32::from_bits(((n + 127) as u32) << 23)
}

const FOPI: f32 = 1.273_239_5; // 4/π
const DP1: f32 = 0.785_156_25;
const DP2: f32 = 2.418_756_5e-4;
const DP3: f32 = 3.774_895e-8;

/// Octant reduction: the reduced argument, its square and the octant (0, 2, 4 or 6).
#[inline(always)]
fn reduce(ax: f32) -> (f32, f32, u32) {
    let j = (floor_i(ax * FOPI).1 + 1) & !1;
    let y = j as f32;
    let r = ((ax - y * DP1) - y * DP2) - y * DP3;
    (r, r * r, (j & 7) as u32)
}

#[inline(always)]
fn sin_poly(r: f32, z: f32) -> f32 {
    ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * r + r
}

#[inline(always)]
fn cos_poly(z: f32) -> f32 {
    ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0
}

/// sin x for |x| ≤ [`TRIG_MAX`].
#[inline(always)]
pub fn sin_poly_range(x: f32) -> f32 {
    let (r, z, o) = reduce(x.abs());
    let (s, c) = (sin_poly(r, z), cos_poly(z));
    let y = if o & 2 != 0 { c } else { s };
    let negate = ((o >> 2) & 1) ^ (x.to_bits() >> 31);
    f32::from_bits(y.to_bits() ^ (negate << 31))
}

/// cos x for |x| ≤ [`TRIG_MAX`].
#[inline(always)]
pub fn cos_poly_range(x: f32) -> f32 {
    let (r, z, o) = reduce(x.abs());
    let (s, c) = (sin_poly(r, z), cos_poly(z));
    let y = if o & 2 != 0 { s } else { c };
    let negate = ((o >> 2) ^ (o >> 1)) & 1;
    f32::from_bits(y.to_bits() ^ (negate << 31))
}

#[inline(always)]
pub fn ln_in_range(x: f32) -> bool {
    (f32::MIN_POSITIVE..f32::INFINITY).contains(&x)
}

/// ln x for a positive normal x: x = m·2^e with m in [√½, √2), ln x = ln m + e·ln 2.
#[inline(always)]
pub fn ln_poly(x: f32) -> f32 {
    let bits = x.to_bits();
    // m in [0.5, 1), x = m · 2^e
    let e = ((bits >> 23) as i32) - 126;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let small = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = (if small { e - 1 } else { e }) as f32;
    let r = if small { m + m - 1.0 } else { m - 1.0 };
    let z = r * r;
    let p = ((((((((7.037_683_6e-2 * r - 1.151_461e-1) * r + 1.167_699_9e-1) * r
        - 1.242_014_1e-1)
        * r
        + 1.424_932_3e-1)
        * r
        - 1.666_805_8e-1)
        * r
        + 2.000_071_4e-1)
        * r
        - 2.499_999_4e-1)
        * r
        + 0.333_333_3)
        * r
        * z;
    let y = p + -2.121_944_4e-4 * e - 0.5 * z;
    r + y + 0.693_359_4 * e
}

/// ln x: the polynomial for positive normal numbers, libm elsewhere.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    if ln_in_range(x) { ln_poly(x) } else { x.ln() }
}

/// e^x: the polynomial in range, libm elsewhere.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    if exp_in_range(x) {
        exp_poly(x)
    } else {
        x.exp()
    }
}

/// sin x: the polynomial in range, libm elsewhere.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    if trig_in_range(x) {
        sin_poly_range(x)
    } else {
        x.sin()
    }
}

/// cos x: the polynomial in range, libm elsewhere.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    if trig_in_range(x) {
        cos_poly_range(x)
    } else {
        x.cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between `got` and the correctly rounded value.
    fn ulps(got: f32, exact: f64) -> u32 {
        let want = exact as f32;
        if got == want {
            return 0;
        }
        (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn within_two_ulp_of_the_true_values() {
        let mut worst = (0, 0, 0);
        for i in 0..2_000_000 {
            let x = -100.0 + i as f32 * 1e-4;
            worst.0 = worst.0.max(ulps(sin(x), (x as f64).sin()));
            worst.1 = worst.1.max(ulps(cos(x), (x as f64).cos()));
            if exp_in_range(x) {
                worst.2 = worst.2.max(ulps(exp(x), (x as f64).exp()));
            }
        }
        assert!(
            worst.0 <= 2 && worst.1 <= 2 && worst.2 <= 2,
            "worst ulps (sin, cos, exp): {worst:?}"
        );
    }

    #[test]
    fn ln_within_two_ulp_over_the_normal_range() {
        let mut worst = 0;
        // Every 97th f32 from the smallest normal number to the largest finite one.
        let mut bits = f32::MIN_POSITIVE.to_bits();
        while bits < f32::MAX.to_bits() {
            let x = f32::from_bits(bits);
            worst = worst.max(ulps(ln(x), (x as f64).ln()));
            bits += 97;
        }
        assert!(worst <= 2, "worst ln ulps: {worst}");
        assert_eq!(ln(1.0), 0.0);
        assert!(ln(0.0) == f32::NEG_INFINITY && ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn edges_follow_libm() {
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(-200.0), 0.0);
        assert!(exp(f32::NAN).is_nan() && sin(f32::NAN).is_nan() && cos(f32::INFINITY).is_nan());
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(sin(0.0), 0.0);
        assert_eq!(sin(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos(0.0), 1.0);
        assert_eq!(sin(1e6), 1e6f32.sin());
    }
}
