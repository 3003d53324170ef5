//! Forward-mode dual numbers: a value and its partial derivatives with respect to every
//! parameter. Each operation applies the textbook derivative; nothing is clever.

use std::cell::Cell;

thread_local! {
    /// The largest |value| made on this thread since [`reset_peak`].
    static PEAK: Cell<f64> = const { Cell::new(0.0) };
    /// Simulated rounding: the relative size and a xorshift state (0: off).
    static NOISE: Cell<(f64, u64)> = const { Cell::new((0.0, 0)) };
}

/// Perturbs every parameter-dependent value and every derivative made from now on by
/// ±`relative` (signs from `seed`), as rounding to a shorter format would; `relative = 0` turns
/// it off. Constants are left exact, so loop counters and indices stay integral. Used to tell whether a
/// program is well conditioned enough for an f32 walk to agree with the f64 oracle.
pub fn set_noise(relative: f64, seed: u64) {
    NOISE.with(|n| n.set((relative, seed | 1)));
}

fn noisy(x: f64) -> f64 {
    NOISE.with(|n| {
        let (eps, mut s) = n.get();
        if eps == 0.0 {
            return x;
        }
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        n.set((eps, s));
        if s & 1 == 0 {
            x * (1.0 + eps)
        } else {
            x * (1.0 - eps)
        }
    })
}

/// Starts tracking the largest intermediate value afresh.
pub fn reset_peak() {
    PEAK.with(|p| p.set(0.0));
}

/// The largest |value| of any dual number made since [`reset_peak`] (NaN counts as infinite).
pub fn peak() -> f64 {
    PEAK.with(Cell::get)
}

fn seen(v: f64) {
    let m = if v.is_nan() { f64::INFINITY } else { v.abs() };
    PEAK.with(|p| p.set(p.get().max(m)));
}

/// `v + Σ dᵢ εᵢ`: a value with one derivative per parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Dual {
    pub v: f64,
    pub d: Vec<f64>,
}

impl Dual {
    /// A constant (every derivative 0).
    pub fn constant(v: f64, n: usize) -> Dual {
        Dual { v, d: vec![0.0; n] }
    }

    /// Parameter `i` of `n`, with value `v`.
    pub fn param(v: f64, i: usize, n: usize) -> Dual {
        let mut d = vec![0.0; n];
        d[i] = 1.0;
        Dual { v, d }
    }

    /// Whether the value depends on any parameter.
    pub fn varies(&self) -> bool {
        self.d.iter().any(|&x| x != 0.0)
    }

    /// `f(x)` with derivative `f'(x)` given as `slope`.
    pub fn chain(&self, v: f64, slope: f64) -> Dual {
        let v = if self.varies() { noisy(v) } else { v };
        seen(v);
        Dual {
            v,
            d: self.d.iter().map(|&x| noisy(slope * x)).collect(),
        }
    }

    /// `a·x + b·y` in the derivatives, with the value `v`.
    fn combine(&self, other: &Dual, v: f64, a: f64, b: f64) -> Dual {
        let v = if self.varies() || other.varies() {
            noisy(v)
        } else {
            v
        };
        seen(v);
        Dual {
            v,
            d: self
                .d
                .iter()
                .zip(&other.d)
                .map(|(&x, &y)| noisy(a * x + b * y))
                .collect(),
        }
    }

    pub fn add(&self, o: &Dual) -> Dual {
        self.combine(o, self.v + o.v, 1.0, 1.0)
    }

    pub fn sub(&self, o: &Dual) -> Dual {
        self.combine(o, self.v - o.v, 1.0, -1.0)
    }

    pub fn mul(&self, o: &Dual) -> Dual {
        self.combine(o, self.v * o.v, o.v, self.v)
    }

    pub fn div(&self, o: &Dual) -> Dual {
        let z = self.v / o.v;
        self.combine(o, z, 1.0 / o.v, -z / o.v)
    }

    pub fn neg(&self) -> Dual {
        self.chain(0.0 - self.v, -1.0)
    }
}
