//! Optimizer settings and per-lane state: what a scene's `optimizer:` field holds and what the
//! optimize system keeps between steps. Each lane is an independent restart with its own
//! moments, so a batch of lanes updates exactly as each lane would alone.

use bevy_ecs::component::Component;
use serde::{Deserialize, Serialize};

/// How parameters move along their gradients. Externally tagged, as scenes write it:
/// `Adam(lr: 0.05)` or `Sgd(lr: 0.01)`; omitted fields take the usual defaults.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Optimizer {
    /// Adam (Kingma & Ba) with bias correction.
    Adam {
        #[serde(default = "defaults::lr")]
        lr: f64,
        #[serde(default = "defaults::beta1")]
        beta1: f64,
        #[serde(default = "defaults::beta2")]
        beta2: f64,
        #[serde(default = "defaults::eps")]
        eps: f64,
    },
    /// Plain gradient descent: `p ← p − lr·g`.
    Sgd {
        #[serde(default = "defaults::lr")]
        lr: f64,
    },
    /// Levenberg–Marquardt on the exact Jacobian (`loss: Mse` only): the data points are lanes,
    /// so one walk yields every residual's gradient. Each step evaluates one trial point per
    /// restart; a trial that lowers the loss is accepted and the damping falls, otherwise the
    /// damping rises (Nielsen's rule). A restart stops when an accepted step lowers the loss by
    /// less than `ftol` relative (actual and predicted) or the step is below `xtol` relative.
    LevenbergMarquardt {
        /// The initial damping λ (Marquardt's scaling: λ·diag(JᵀJ)).
        #[serde(default = "defaults::damping")]
        damping: f64,
        #[serde(default = "defaults::tol")]
        ftol: f64,
        #[serde(default = "defaults::tol")]
        xtol: f64,
    },
    /// L-BFGS with a backtracking (Armijo) line search, for any scalar loss: each step
    /// evaluates one trial point per restart. A restart stops when an accepted step lowers the
    /// loss by less than `ftol` relative or the step is below `xtol` relative.
    Lbfgs {
        /// Correction pairs kept.
        #[serde(default = "defaults::memory")]
        memory: usize,
        #[serde(default = "defaults::tol")]
        ftol: f64,
        #[serde(default = "defaults::tol")]
        xtol: f64,
    },
}

mod defaults {
    pub fn lr() -> f64 {
        0.05
    }
    pub fn beta1() -> f64 {
        0.9
    }
    pub fn beta2() -> f64 {
        0.999
    }
    pub fn eps() -> f64 {
        1e-8
    }
    pub fn damping() -> f64 {
        1e-3
    }
    pub fn tol() -> f64 {
        1e-10
    }
    pub fn memory() -> usize {
        10
    }
}

/// Reads a written optimizer into `Some` (scenes write `optimizer: Adam(...)`, not
/// `Some(Adam(...))`; a missing field is `None`).
pub fn written<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Optimizer>, D::Error> {
    Optimizer::deserialize(d).map(Some)
}

impl Optimizer {
    /// Settings that make no sense (a learning rate that is not a positive number, β ≥ 1, …).
    pub fn check(&self) -> Result<(), String> {
        let positive = |name: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "`{}` of `{}` must be a positive number, got {x}",
                    name,
                    self.name()
                ))
            }
        };
        let unit = |name: &str, x: f64| {
            if (0.0..1.0).contains(&x) {
                Ok(())
            } else {
                Err(format!(
                    "`{}` of `{}` must be in [0, 1), got {x}",
                    name,
                    self.name()
                ))
            }
        };
        match *self {
            Optimizer::Adam {
                lr,
                beta1,
                beta2,
                eps,
            } => {
                positive("lr", lr)?;
                unit("beta1", beta1)?;
                unit("beta2", beta2)?;
                positive("eps", eps)
            }
            Optimizer::Sgd { lr } => positive("lr", lr),
            Optimizer::LevenbergMarquardt {
                damping,
                ftol,
                xtol,
            } => {
                positive("damping", damping)?;
                unit("ftol", ftol)?;
                unit("xtol", xtol)
            }
            Optimizer::Lbfgs { memory, ftol, xtol } => {
                if memory == 0 {
                    return Err("`memory` of `Lbfgs` must be at least 1".into());
                }
                unit("ftol", ftol)?;
                unit("xtol", xtol)
            }
        }
    }

    /// Levenberg–Marquardt with its default settings: the default optimizer for `loss: Mse`.
    pub fn levenberg_marquardt() -> Self {
        Optimizer::LevenbergMarquardt {
            damping: defaults::damping(),
            ftol: defaults::tol(),
            xtol: defaults::tol(),
        }
    }

    /// L-BFGS with its default settings.
    pub fn lbfgs() -> Self {
        Optimizer::Lbfgs {
            memory: defaults::memory(),
            ftol: defaults::tol(),
            xtol: defaults::tol(),
        }
    }

    /// Whether each step evaluates a trial point that is accepted or rejected (Levenberg–Marquardt
    /// and L-BFGS), rather than always moving (Adam, SGD).
    pub fn is_trial_based(&self) -> bool {
        matches!(
            self,
            Optimizer::LevenbergMarquardt { .. } | Optimizer::Lbfgs { .. }
        )
    }

    /// The scene name of the optimizer.
    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Adam { .. } => "Adam",
            Optimizer::Sgd { .. } => "Sgd",
            Optimizer::LevenbergMarquardt { .. } => "LevenbergMarquardt",
            Optimizer::Lbfgs { .. } => "Lbfgs",
        }
    }
}

impl Default for Optimizer {
    /// Adam with learning rate 0.05, the reference protocol's setting.
    fn default() -> Self {
        Optimizer::Adam {
            lr: defaults::lr(),
            beta1: defaults::beta1(),
            beta2: defaults::beta2(),
            eps: defaults::eps(),
        }
    }
}

/// Optional bounds of one parameter; a step that leaves them is clamped back (as the reference
/// calibration does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

impl Bounds {
    pub fn clamp(self, x: f64) -> f64 {
        let x = self.min.map_or(x, |lo| x.max(lo));
        self.max.map_or(x, |hi| x.min(hi))
    }
}

/// The optimizer's memory for a set of parameters over lanes: Adam's first and second moments,
/// laid out like the parameters (parameter-major, lane-minor), and the step count; for the
/// trial-based optimizers, one [`TrialState`] per restart.
#[derive(Component, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct OptimizerState {
    pub step: u64,
    pub m: Vec<f64>,
    pub v: Vec<f64>,
    pub restarts: Vec<TrialState>,
    /// Every restart has stopped and the parameters were set back to the accepted points: the
    /// next evaluation is the last.
    pub finishing: bool,
}

/// One restart of a trial-based optimizer: the accepted point and what was learnt there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialState {
    /// The first evaluation was seen.
    pub started: bool,
    /// No further trial will be proposed (converged, or unable to move).
    pub finished: bool,
    /// Stopped by a convergence test (not by a failure to start).
    pub converged: bool,
    /// The point evaluated last is the accepted one.
    pub at_accepted: bool,
    /// The accepted point (one value per parameter), its loss and gradient.
    pub x: Vec<f64>,
    pub loss: f64,
    pub grad: Vec<f64>,
    /// Levenberg–Marquardt: the Gauss–Newton matrix `JᵀJ` (row-major) and `Jᵀe` at `x`, the
    /// damping, its growth factor, and the loss decrease the model predicted for the trial.
    pub normal: Vec<f64>,
    pub jte: Vec<f64>,
    pub damping: f64,
    pub growth: f64,
    pub predicted: f64,
    /// L-BFGS: correction pairs `(s, y)`, oldest first; the search direction, the step along
    /// it and the line-search tries at this point.
    pub pairs: Vec<(Vec<f64>, Vec<f64>)>,
    pub direction: Vec<f64>,
    pub alpha: f64,
    pub tries: u32,
}
