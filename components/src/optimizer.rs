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

/// The optimizer's memory for a set of parameters over lanes: first and second moments, laid
/// out like the parameters (parameter-major, lane-minor), and the step count.
#[derive(Component, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OptimizerState {
    pub step: u64,
    pub m: Vec<f64>,
    pub v: Vec<f64>,
}
