//! Losses over named lane axes.
//!
//! A data fit runs every (restart, data point) pair as one lane: the lanes are the two axes
//! flattened, restart-major (`lane = restart · points + point`), so one walk evaluates every
//! point of every restart. A restart's parameters are repeated over its points; the program's
//! per-lane output and per-lane gradients then reduce, per restart, to the training loss and its
//! gradient. A program whose own output is the loss (a negative log-likelihood, say) has one
//! point per restart and reduces to itself.

/// The lane layout of a fit: `restarts × points`, restart-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneAxes {
    pub restarts: usize,
    pub points: usize,
}

impl LaneAxes {
    pub fn lanes(self) -> usize {
        self.restarts * self.points
    }

    /// The lane of `point` in `restart`.
    pub fn lane(self, restart: usize, point: usize) -> usize {
        restart * self.points + point
    }

    /// Per-lane values of a per-restart parameter: each restart's value repeated over its points.
    pub fn spread(self, per_restart: &[f64]) -> Vec<f64> {
        per_restart
            .iter()
            .flat_map(|&x| std::iter::repeat_n(x, self.points))
            .collect()
    }

    /// Per-lane values of a data column: the points repeated for every restart.
    pub fn tile(self, column: &[f64]) -> Vec<f64> {
        (0..self.restarts)
            .flat_map(|_| column.iter().copied())
            .collect()
    }
}

/// A loss and its gradient for every restart.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduced {
    /// `loss[restart]`.
    pub loss: Vec<f64>,
    /// `grad[param][restart]`: ∂loss/∂param.
    pub grad: Vec<Vec<f64>>,
}

/// Mean squared error per restart, `(1/n) Σ (out − y)²` over the points whose `mask` is set
/// (the training split), and each lane's weight `∂loss/∂out = 2(out − y)/n` (zero for a point
/// outside the mask). Points are summed in increasing order, so the result is the same whatever
/// the grouping of lanes. `y` and `mask` hold one entry per point (a point past the end of
/// either adds nothing).
pub fn mse_weights(axes: LaneAxes, out: &[f64], y: &[f64], mask: &[bool]) -> (Vec<f64>, Vec<f64>) {
    let (mut loss, mut weights) = (Vec::new(), Vec::new());
    mse_weights_into(axes, out, (y, mask), (&mut loss, &mut weights));
    (loss, weights)
}

/// [`mse_weights`] into reused buffers (the merge-masks stage calls it every step).
pub fn mse_weights_into(
    axes: LaneAxes,
    out: &[f64],
    (y, mask): (&[f64], &[bool]),
    (loss, weights): (&mut Vec<f64>, &mut Vec<f64>),
) {
    let n = mask.iter().filter(|&&m| m).count().max(1) as f64;
    loss.clear();
    loss.resize(axes.restarts, 0.0);
    weights.clear();
    weights.resize(axes.lanes(), 0.0);
    for (r, l) in loss.iter_mut().enumerate() {
        let lanes = axes.lane(r, 0)..axes.lane(r, 0) + axes.points;
        let (out, weights) = (&out[lanes.clone()], &mut weights[lanes]);
        // No branch on the mask (the held-out points fall anywhere): a point outside it adds
        // +0.0, which leaves the sum's bits as they are (the sum is never −0.0).
        let mut sum = 0.0;
        for ((&o, &y), &m) in out.iter().zip(y).zip(mask) {
            let e = o - y;
            sum += keep_if(m, e * e);
        }
        for (((w, &o), &y), &m) in weights.iter_mut().zip(out).zip(y).zip(mask) {
            *w = keep_if(m, 2.0 * (o - y) / n);
        }
        *l = sum / n;
    }
}

/// `x` where `keep`, else +0.0 (even where `x` is NaN), without a branch.
fn keep_if(keep: bool, x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0u64.wrapping_sub(u64::from(keep)))
}

/// `Σ weight·grad` over one restart's lanes in a fixed order that depends on the lane count
/// alone: four interleaved partial sums (lane `i` into sum `i mod 4`, each in lane order), then
/// `(s0 + s1) + (s2 + s3)`. Independent of grouping and threads, and four times shorter than one
/// chain of dependent additions. A lane of weight zero (a held-out point) contributes exactly
/// zero, even when its gradient is not finite.
pub fn weighted_lane_sum(weights: &[f64], grads: &[f64]) -> f64 {
    let term = |w: f64, g: f64| keep_if(w != 0.0, w * g);
    let n = weights.len().min(grads.len());
    let (weights, grads) = (weights[..n].chunks_exact(4), grads[..n].chunks_exact(4));
    let tail = weights.remainder().iter().zip(grads.remainder());
    // The four sums indexed by constants, so that they stay in registers (indexed by `k % 4`
    // they lived on the stack, each addition waiting for the last one's store), and no branch
    // on the weight (held-out points fall anywhere): 6–8% of a search's time on one core
    // before. The same additions in the same order.
    let mut s = [0.0; 4];
    for (w, g) in weights.zip(grads) {
        s[0] += term(w[0], g[0]);
        s[1] += term(w[1], g[1]);
        s[2] += term(w[2], g[2]);
        s[3] += term(w[3], g[3]);
    }
    for (k, (&w, &g)) in tail.enumerate() {
        s[k] += term(w, g);
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// Per-restart gradient `Σ_point weight·∂out/∂p` from per-lane weights and gradients
/// (`grads[param][lane]`), summed by [`weighted_lane_sum`] (what the optimize stage does).
pub fn reduce(axes: LaneAxes, weights: &[f64], grads: &[Vec<f64>]) -> Vec<Vec<f64>> {
    grads
        .iter()
        .map(|g| {
            (0..axes.restarts)
                .map(|r| {
                    let lanes = axes.lane(r, 0)..axes.lane(r, 0) + axes.points;
                    weighted_lane_sum(&weights[lanes.clone()], &g[lanes])
                })
                .collect()
        })
        .collect()
}

/// MSE per restart with its gradient, from the per-lane gradients `grads[param][lane]`: the
/// composition of [`mse_weights`] and [`reduce`].
pub fn mse(axes: LaneAxes, out: &[f64], grads: &[Vec<f64>], y: &[f64], mask: &[bool]) -> Reduced {
    let (loss, weights) = mse_weights(axes, out, y, mask);
    Reduced {
        loss,
        grad: reduce(axes, &weights, grads),
    }
}

/// The program's output as the loss: one point per restart.
pub fn output(out: &[f64], grads: &[Vec<f64>]) -> Reduced {
    Reduced {
        loss: out.to_vec(),
        grad: grads.to_vec(),
    }
}

/// Held-out R² per restart: `1 − Σ (out − y)² / Σ (y − ȳ)²` over the points whose `mask` is set.
pub fn r_squared(axes: LaneAxes, out: &[f64], y: &[f64], mask: &[bool]) -> Vec<f64> {
    let held: Vec<(usize, f64)> = y
        .iter()
        .zip(mask)
        .enumerate()
        .filter(|(_, (_, m))| **m)
        .map(|(k, (&yk, _))| (k, yk))
        .collect();
    // The ratio does not change when every deviation is divided by one scale, and divided the
    // squares cannot overflow (a target of 1e300 once gave NaN): the mean is taken term by term
    // for the same reason.
    let n = held.len().max(1) as f64;
    let mean = held.iter().fold(0.0, |m, (_, y)| m + y / n);
    let scale = held
        .iter()
        .map(|(_, y)| (y - mean).abs())
        .fold(0.0, f64::max);
    let scale = if scale > 0.0 && scale.is_finite() {
        scale
    } else {
        1.0
    };
    let total: f64 = held.iter().map(|(_, y)| ((y - mean) / scale).powi(2)).sum();
    (0..axes.restarts)
        .map(|r| {
            let resid: f64 = held
                .iter()
                .map(|&(k, yk)| ((out[axes.lane(r, k)] - yk) / scale).powi(2))
                .sum();
            1.0 - resid / total
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndvm_engine::prelude::*;

    /// y = a·exp(−b·x) at 6 points, 3 restarts, evaluated by the engine over 18 lanes.
    fn model(axes: LaneAxes, a: &[f64], b: &[f64], x: &[f64]) -> (Vec<f64>, Vec<Vec<f64>>) {
        let program = Program::new("(* a (exp (- 0 (* b x))))", &["a", "b", "x"]).expect("program");
        let mut inputs = Bindings::<f64>::new();
        inputs.lanes("a", axes.spread(a)).lanes("b", axes.spread(b));
        inputs.lane_data("x", axes.tile(x));
        let mut vm = Vm::<f64>::default();
        let e = evaluate(&mut vm, &program, &inputs, true).expect("evaluate");
        let Output::Numbers(out) = e.result else {
            panic!("numbers")
        };
        (out, e.grads.into_iter().map(|(_, g)| g).collect())
    }

    /// R² is scale-free: targets of 1e300 give the figure of the same data at 1 (not NaN).
    #[test]
    fn r_squared_does_not_overflow_on_huge_targets() {
        let axes = LaneAxes {
            restarts: 1,
            points: 4,
        };
        let mask = [true; 4];
        let (y, out) = ([1.0, 2.0, 3.0, 5.0], [1.0, 2.1, 3.0, 4.5]);
        let small = r_squared(axes, &out, &y, &mask)[0];
        let big = |v: &[f64; 4]| v.map(|x| x * 1e300);
        let huge = r_squared(axes, &big(&out), &big(&y), &mask)[0];
        // 1 − (0.01 + 0.25) / 8.75
        assert!((small - (1.0 - 0.26 / 8.75)).abs() < 1e-12, "{small}");
        assert!((huge - small).abs() < 1e-12, "{huge} vs {small}");
    }

    #[test]
    fn mse_and_its_gradient_match_finite_differences_per_restart() {
        let axes = LaneAxes {
            restarts: 3,
            points: 6,
        };
        let x = [0.1, 0.5, 1.0, 1.7, 2.4, 3.0];
        let y: Vec<f64> = x.iter().map(|&x: &f64| 2.0 * (-0.7 * x).exp()).collect();
        let mask = [true, true, false, true, true, false];
        let (a, b) = ([1.0, 2.5, 0.3], [0.2, 0.9, -0.1]);
        let (out, grads) = model(axes, &a, &b, &x);
        assert_eq!(grads.len(), 2, "x is not a parameter");
        let r = mse(axes, &out, &grads, &y, &mask);
        let loss_at = |a: &[f64], b: &[f64]| {
            let (out, grads) = model(axes, a, b, &x);
            mse(axes, &out, &grads, &y, &mask).loss
        };
        let h = 1e-6;
        for restart in 0..3 {
            for (p, g) in r.grad.iter().enumerate() {
                let (mut ap, mut am, mut bp, mut bm) = (a, a, b, b);
                if p == 0 {
                    ap[restart] += h;
                    am[restart] -= h;
                } else {
                    bp[restart] += h;
                    bm[restart] -= h;
                }
                let fd = (loss_at(&ap, &bp)[restart] - loss_at(&am, &bm)[restart]) / (2.0 * h);
                assert!(
                    (g[restart] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
                    "{restart} {p}: {} vs {fd}",
                    g[restart]
                );
            }
        }
        // The true constants fit exactly: zero loss, R² = 1 on the held-out points.
        let (out, grads) = model(axes, &[2.0; 3], &[0.7; 3], &x);
        let r = mse(axes, &out, &grads, &y, &mask);
        assert!(r.loss.iter().all(|&l| l < 1e-28));
        let held: Vec<bool> = mask.iter().map(|m| !m).collect();
        assert!(
            r_squared(axes, &out, &y, &held)
                .iter()
                .all(|&r2| (r2 - 1.0).abs() < 1e-12)
        );
    }

    #[test]
    fn a_restart_reduces_the_same_alone_as_in_a_batch() {
        let x = [0.1, 0.5, 1.0, 1.7];
        let y = [1.0, 0.8, 0.5, 0.2];
        let mask = [true; 4];
        let all = LaneAxes {
            restarts: 3,
            points: 4,
        };
        let (out, grads) = model(all, &[1.0, 2.0, 3.0], &[0.5, 0.6, 0.7], &x);
        let batch = mse(all, &out, &grads, &y, &mask);
        for r in 0..3 {
            let one = LaneAxes {
                restarts: 1,
                points: 4,
            };
            let (a, b) = ([1.0 + r as f64], [0.5 + 0.1 * r as f64]);
            let (out, grads) = model(one, &a, &b, &x);
            let alone = mse(one, &out, &grads, &y, &mask);
            assert_eq!(batch.loss[r].to_bits(), alone.loss[0].to_bits());
            for p in 0..2 {
                assert_eq!(batch.grad[p][r].to_bits(), alone.grad[p][0].to_bits());
            }
        }
    }

    /// The sum's order is its definition (lane `k` into partial sum `k mod 4`, each in lane
    /// order): the unrolled loop must give the same bits for every length and tail.
    #[test]
    fn weighted_lane_sum_keeps_its_order_bit_for_bit() {
        let rule = |w: &[f64], g: &[f64]| {
            let mut s = [0.0; 4];
            for (k, (&w, &g)) in w.iter().zip(g).enumerate() {
                s[k % 4] += if w != 0.0 { w * g } else { 0.0 };
            }
            (s[0] + s[1]) + (s[2] + s[3])
        };
        // Values of mixed magnitudes, so that a different order changes the low bits.
        let at =
            |k: usize, salt: f64| (k as f64 * 0.7548 + salt).sin() * 10f64.powi(k as i32 % 7 - 3);
        for n in 0..=19 {
            let mut w: Vec<f64> = (0..n).map(|k| at(k, 0.3)).collect();
            let mut g: Vec<f64> = (0..n).map(|k| at(k, 1.9)).collect();
            if n > 5 {
                // A held-out lane (weight zero) adds exactly zero, even with a NaN gradient.
                (w[5], g[5]) = (0.0, f64::NAN);
            }
            let got = weighted_lane_sum(&w, &g);
            assert_eq!(got.to_bits(), rule(&w, &g).to_bits(), "{n} lanes");
            assert!(got.is_finite());
            // A longer gradient slice than weights: only the common lanes count.
            g.push(1e300);
            assert_eq!(weighted_lane_sum(&w, &g).to_bits(), got.to_bits());
        }
    }

    /// The branch-free MSE gives the bits of its definition (points in order, held-out points
    /// skipped), and a held-out point whose output is NaN or infinite changes nothing.
    #[test]
    fn mse_weights_match_their_definition_bit_for_bit() {
        let axes = LaneAxes {
            restarts: 3,
            points: 7,
        };
        let mask = [true, false, true, true, false, true, false];
        let y: Vec<f64> = (0..7)
            .map(|k| (k as f64 * 1.3).cos() * 10f64.powi(k % 3))
            .collect();
        let mut out: Vec<f64> = (0..21).map(|i| (i as f64 * 0.77).sin() * 3.0).collect();
        (out[1], out[11], out[20]) = (f64::NAN, f64::INFINITY, f64::NAN);
        let (loss, weights) = mse_weights(axes, &out, &y, &mask);
        let n = 4.0;
        for r in 0..3 {
            let mut sum = 0.0;
            for k in 0..7 {
                let e = out[r * 7 + k] - y[k];
                let w = if mask[k] { 2.0 * e / n } else { 0.0 };
                assert_eq!(weights[r * 7 + k].to_bits(), w.to_bits(), "{r} {k}");
                if mask[k] {
                    sum += e * e;
                }
            }
            assert_eq!(loss[r].to_bits(), (sum / n).to_bits(), "restart {r}");
            assert!(loss[r].is_finite());
        }
    }
}
