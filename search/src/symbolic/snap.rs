//! Nice constants: small fractions and multiples of π, found near fitted values and named
//! exactly when printed.
//!
//! A search on noise-free data fits `cos(θ − 1.5707963)` where the law is `sin θ`, and
//! `n·α/(0.99999999 − 0.33333331·n·α) + 1.00000002` where it is `n·α/(1 − n·α/3) + 1`. Rounded
//! to three decimals (as SRBench judges), `1.571` is not `π/2` and `0.333` is not `1/3`: the
//! law is found and not recognised. So [`Evolve`](crate::proposers::evolve) proposes, beside a program
//! that joins its front, the same program with a fitted constant replaced by the nice value
//! next to it ([`nice`]); the search calibrates it like any proposal, and with one constant fewer
//! it takes the place of the fitted one on the front only where it fits as well. The equations
//! then print such a literal exactly ([`name`]): `pi/2`, `1/3`.

use std::f64::consts::PI;

/// Denominators of the fractions tried, simplest first.
const FRACTIONS: [i64; 3] = [2, 3, 4];
/// Denominators of the multiples of π tried.
const OF_PI: [i64; 5] = [1, 2, 3, 4, 6];
/// Largest magnitude of a nice value.
const LARGEST: f64 = 12.0;

/// A nice value: `p/q`, or `p·π/q` when `pi`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Nice {
    p: i64,
    q: i64,
    pi: bool,
}

impl Nice {
    /// The value as the dialect reads it (the same bits [`name`] recognises).
    fn value(self) -> f64 {
        if self.pi {
            self.p as f64 * PI / self.q as f64
        } else {
            self.p as f64 / self.q as f64
        }
    }
}

/// Nice values in order of simplicity: integers, fractions, multiples of π (never 0: a
/// constant near 0 stands for a term that should go, which mutation finds).
fn candidates() -> impl Iterator<Item = Nice> {
    let whole = (1..=LARGEST as i64).map(|p| Nice { p, q: 1, pi: false });
    let fractions = FRACTIONS.iter().flat_map(|&q| {
        (1..=(LARGEST as i64) * q)
            .filter(move |p| gcd(*p, q) == 1)
            .map(move |p| Nice { p, q, pi: false })
    });
    let of_pi = OF_PI.iter().flat_map(|&q| {
        (1..=3 * q)
            .filter(move |p| gcd(*p, q) == 1)
            .map(move |p| Nice { p, q, pi: true })
    });
    whole
        .chain(fractions)
        .chain(of_pi)
        .flat_map(|n| [n, Nice { p: -n.p, ..n }])
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The simplest nice value within a relative `tolerance` of `x`, other than `x` itself.
pub fn nice(x: f64, tolerance: f64) -> Option<f64> {
    if !x.is_finite() || x == 0.0 {
        return None;
    }
    candidates()
        .map(Nice::value)
        .find(|&v| (v - x).abs() <= tolerance * v.abs())
        .filter(|&v| v != x)
}

/// How sympy and LaTeX write `x` when it is exactly a nice value without a short decimal
/// form: `pi/2`, `-3*pi/4`, `1/3` and `\frac{\pi}{2}`, `-\frac{3 \pi}{4}`, `\frac{1}{3}`
/// (halves and quarters print as decimals: `0.5` is exact).
pub fn name(x: f64) -> Option<(String, String)> {
    if x.fract() == 0.0 {
        return None;
    }
    let n = candidates().find(|n| n.value() == x && (n.pi || n.q == 3))?;
    let sign = if n.p < 0 { "-" } else { "" };
    let p = n.p.abs();
    Some(match (n.pi, p, n.q) {
        (false, p, q) => (
            format!("{sign}{p}/{q}"),
            format!("{sign}\\frac{{{p}}}{{{q}}}"),
        ),
        (true, 1, 1) => (format!("{sign}pi"), format!("{sign}\\pi")),
        (true, p, 1) => (format!("{sign}{p}*pi"), format!("{sign}{p} \\pi")),
        (true, 1, q) => (
            format!("{sign}pi/{q}"),
            format!("{sign}\\frac{{\\pi}}{{{q}}}"),
        ),
        (true, p, q) => (
            format!("{sign}{p}*pi/{q}"),
            format!("{sign}\\frac{{{p} \\pi}}{{{q}}}"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_constants_snap_to_the_nice_value_next_to_them() {
        assert_eq!(nice(1.5707962881856794, 1e-3), Some(PI / 2.0));
        assert_eq!(nice(3.1415925780872374, 1e-3), Some(PI));
        assert_eq!(nice(4.712388754905365, 1e-3), Some(3.0 * PI / 2.0));
        assert_eq!(nice(0.33333330872936207, 1e-3), Some(1.0 / 3.0));
        assert_eq!(nice(0.9999999951526002, 1e-3), Some(1.0));
        assert_eq!(nice(-2.0004, 1e-3), Some(-2.0));
        // The simplest first: 1.5 before anything near it with π.
        assert_eq!(nice(1.5004, 1e-3), Some(1.5));
        // Nothing near, already nice, zero, or not a number.
        assert_eq!(nice(0.7, 1e-3), None);
        assert_eq!(nice(2.0, 1e-3), None);
        assert_eq!(nice(1e-9, 1e-3), None);
        assert_eq!(nice(f64::NAN, 1e-3), None);
    }

    #[test]
    fn nice_literals_print_exactly() {
        let both = |x: f64| name(x).map(|(s, l)| format!("{s} | {l}"));
        assert_eq!(both(PI / 2.0).as_deref(), Some("pi/2 | \\frac{\\pi}{2}"));
        assert_eq!(both(-PI).as_deref(), Some("-pi | -\\pi"));
        assert_eq!(both(2.0 * PI).as_deref(), Some("2*pi | 2 \\pi"));
        assert_eq!(
            both(-3.0 * PI / 4.0).as_deref(),
            Some("-3*pi/4 | -\\frac{3 \\pi}{4}")
        );
        assert_eq!(both(1.0 / 3.0).as_deref(), Some("1/3 | \\frac{1}{3}"));
        assert_eq!(both(-4.0 / 3.0).as_deref(), Some("-4/3 | -\\frac{4}{3}"));
        assert_eq!(name(-2.5), None, "exact as a decimal");
        // Whole numbers print as they are; a fitted value is not nice.
        assert_eq!(name(3.0), None);
        assert_eq!(name(PI / 2.0 + 1e-7), None);
        // Every nice value a snap proposes prints by name.
        for x in [1.5707962881856794, 0.33333330872936207, 4.712388754905365] {
            assert!(nice(x, 1e-3).and_then(name).is_some());
        }
    }
}
