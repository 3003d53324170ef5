//! Adam and SGD: every step moves every lane along its gradient (no trial is rejected).

use ndvm_components::optimizer::{Bounds, Optimizer, OptimizerState};

/// One step: moves `params` (`n_params × lanes`) along `grads` (same layout), then clamps each
/// parameter into its bounds (`bounds` has one entry per parameter, or is empty). Non-finite
/// gradients leave their lane's parameter where it is (the moments keep their last value), so
/// one lane's overflow cannot spread.
pub fn step(
    opt: &Optimizer,
    state: &mut OptimizerState,
    params: &mut [f64],
    grads: &[f64],
    lanes: usize,
    bounds: &[Bounds],
) {
    assert_eq!(params.len(), grads.len(), "one gradient per parameter lane");
    if state.m.len() != params.len() {
        state.m = vec![0.0; params.len()];
        state.v = vec![0.0; params.len()];
        state.step = 0;
    }
    state.step += 1;
    match *opt {
        Optimizer::Sgd { lr } => {
            for (p, &g) in params.iter_mut().zip(grads) {
                if g.is_finite() {
                    *p -= lr * g;
                }
            }
        }
        // Trial-based optimizers move in `optim::trial`; they never reach here.
        Optimizer::LevenbergMarquardt { .. } | Optimizer::Lbfgs { .. } => {}
        Optimizer::Adam {
            lr,
            beta1,
            beta2,
            eps,
        } => {
            let t = state.step as i32;
            let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
            for (i, p) in params.iter_mut().enumerate() {
                let g = grads[i];
                if !g.is_finite() {
                    continue;
                }
                let m = beta1 * state.m[i] + (1.0 - beta1) * g;
                let v = beta2 * state.v[i] + (1.0 - beta2) * g * g;
                state.m[i] = m;
                state.v[i] = v;
                *p -= lr * (m / c1) / ((v / c2).sqrt() + eps);
            }
        }
    }
    if !bounds.is_empty() && lanes > 0 {
        for (i, p) in params.iter_mut().enumerate() {
            if let Some(b) = bounds.get(i / lanes) {
                *p = b.clamp(*p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adam(lr: f64) -> Optimizer {
        Optimizer::Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }

    #[test]
    fn adams_first_step_is_lr_times_the_gradients_sign() {
        // Bias correction makes m̂ = g and v̂ = g² after one step.
        let mut s = OptimizerState::default();
        let mut p = vec![1.0, 1.0, 1.0];
        step(&adam(0.1), &mut s, &mut p, &[4.0, -0.5, 0.0], 3, &[]);
        assert!((p[0] - 0.9).abs() < 1e-7 && (p[1] - 1.1).abs() < 1e-7);
        assert_eq!(p[2], 1.0);
        assert_eq!(s.step, 1);
    }

    #[test]
    fn sgd_steps_against_the_gradient_and_bounds_clamp() {
        let mut s = OptimizerState::default();
        let mut p = vec![1.0, 1.0, 5.0, 5.0];
        let bounds = [
            Bounds {
                min: Some(0.5),
                max: None,
            },
            Bounds {
                min: None,
                max: Some(4.0),
            },
        ];
        step(
            &Optimizer::Sgd { lr: 0.1 },
            &mut s,
            &mut p,
            &[2.0, 10.0, -1.0, 1.0],
            2,
            &bounds,
        );
        assert_eq!(p, vec![0.8, 0.5, 4.0, 4.0]);
    }

    #[test]
    fn adam_minimizes_a_quadratic_in_every_lane() {
        // f(x) = (x − c)² per lane, with a different c and start per lane.
        let c = [3.0, -2.0, 0.5];
        let mut x = vec![0.0, 1.0, -4.0];
        let mut s = OptimizerState::default();
        for _ in 0..2000 {
            let g: Vec<f64> = x.iter().zip(&c).map(|(x, c)| 2.0 * (x - c)).collect();
            step(&adam(0.05), &mut s, &mut x, &g, 3, &[]);
        }
        for (x, c) in x.iter().zip(&c) {
            assert!((x - c).abs() < 1e-3, "{x} vs {c}");
        }
    }

    #[test]
    fn a_batch_steps_exactly_as_its_lanes_alone() {
        let grads = [[0.3, -1.7, 2.5e-3], [1e3, 0.0, -0.25]];
        let mut batch = vec![0.1, 0.2, 0.3];
        let mut sb = OptimizerState::default();
        let mut alone: Vec<(f64, OptimizerState)> = batch
            .iter()
            .map(|&x| (x, OptimizerState::default()))
            .collect();
        for g in grads {
            step(&adam(0.05), &mut sb, &mut batch, &g, 3, &[]);
            for (l, (x, s)) in alone.iter_mut().enumerate() {
                let mut one = [*x];
                step(&adam(0.05), s, &mut one, &[g[l]], 1, &[]);
                *x = one[0];
            }
        }
        for (l, (x, _)) in alone.iter().enumerate() {
            assert_eq!(batch[l].to_bits(), x.to_bits());
        }
    }

    #[test]
    fn a_non_finite_gradient_freezes_only_its_lane() {
        let mut s = OptimizerState::default();
        let mut p = vec![1.0, 1.0];
        step(&adam(0.1), &mut s, &mut p, &[f64::NAN, 1.0], 2, &[]);
        assert_eq!(p[0], 1.0);
        assert!((p[1] - 0.9).abs() < 1e-7);
    }

    #[test]
    fn scenes_write_optimizers_in_ron() {
        let o: Optimizer = ron::from_str("Adam(lr: 0.01)").expect("ron");
        assert_eq!(
            o,
            Optimizer::Adam {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8
            }
        );
        assert_eq!(
            ron::from_str::<Optimizer>("Sgd()").expect("ron"),
            Optimizer::Sgd { lr: 0.05 }
        );
        let e = ron::from_str::<Optimizer>("Adam(lr: 0.01, momentum: 2)").expect_err("unknown");
        assert!(e.to_string().contains("momentum"), "{e}");
    }
}
