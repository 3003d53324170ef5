//! The Candidate entity: one program of the population and everything its fit keeps.
//!
//! A candidate is spawned with [`Candidate`], [`FitSpec`], [`ParamValues`] and [`Status`]; the
//! decode system adds [`Compiled`], the schedule system admits it (spawning its lane groups,
//! listed in [`Groups`]), and the optimize system merges its groups into [`LaneResults`] (the
//! merge-masks work), then moves [`ParamValues`] and appends to [`History`]. Everything here is
//! plain data.

use crate::dataset::Dataset;
use crate::optimizer::{Bounds, Optimizer};
use crate::scene::Loss;
use bevy_ecs::prelude::*;
use ndvm_bytecode::{Executable, Form};
use std::sync::Arc;

/// One candidate program: its position in the population, its name, its source text and how
/// that text is read (dialect source for the walk, or bytecode for the bytecode client).
#[derive(Component, Clone, Debug)]
pub struct Candidate {
    pub index: usize,
    pub name: String,
    pub source: String,
    pub form: Form,
}

/// What a candidate fits and how.
#[derive(Component, Clone, Debug)]
pub struct FitSpec {
    /// Parameter names, in the order of [`ParamValues`].
    pub params: Vec<String>,
    /// One entry per parameter (unbounded ones are `Bounds::default()`).
    pub bounds: Vec<Bounds>,
    pub restarts: usize,
    pub loss: Loss,
    /// The data fitted against (`None` when the output is the loss).
    pub data: Option<Arc<Dataset>>,
    /// Inputs the same in every lane.
    pub shared: Arc<SharedInputs>,
    pub optimizer: Optimizer,
    pub steps: u32,
    pub tolerance: Option<f64>,
}

impl FitSpec {
    /// Data points per restart (1 when the output is the loss).
    pub fn points(&self) -> usize {
        self.data.as_ref().map_or(1, |d| d.points())
    }

    /// Lanes of the whole candidate: restarts × points, restart-major.
    pub fn lanes(&self) -> usize {
        self.restarts * self.points()
    }

    /// Every input name a program of this candidate may use, in binding order.
    pub fn input_names(&self) -> Vec<String> {
        let mut names = self.params.clone();
        if let Some(d) = &self.data {
            names.extend(d.inputs.keys().cloned());
        }
        names.extend(self.shared.numbers.iter().map(|(n, _)| n.clone()));
        names.extend(self.shared.matrices.iter().map(|m| m.name.clone()));
        names
    }
}

/// Inputs shared by every lane: numbers and matrices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SharedInputs {
    pub numbers: Vec<(String, f64)>,
    pub matrices: Vec<SharedMatrix>,
}

/// A row-major matrix input.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedMatrix {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

/// The decoded program (a walked program shared through the program cache, or linked
/// bytecode); [`Executable::program`] is what the replay and the GPU stage take.
#[derive(Component, Clone, Debug)]
pub struct Compiled(pub Executable);

/// Current parameter values, parameter-major and restart-minor (`p * restarts + r`).
#[derive(Component, Clone, Debug, PartialEq)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct ParamValues(pub Vec<f64>);

/// Where a candidate is in its life.
#[derive(Component, Clone, Debug, PartialEq)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub enum Status {
    /// Waiting to be admitted (the schedule keeps a bounded window of active candidates).
    Pending,
    /// Being fitted.
    Active,
    /// Finished: every restart ran its steps or met the tolerance.
    Done { converged: bool },
    /// Stopped before the end (wall-clock budget or an interrupt); its last results stand.
    Stopped { reason: String },
    /// The program could not be decoded or failed in every lane.
    Failed { error: String },
}

impl Status {
    /// Whether the candidate has left the fit for good.
    pub fn is_final(&self) -> bool {
        !matches!(self, Status::Pending | Status::Active)
    }
}

/// The lane groups of an active candidate, in lane order.
#[derive(Component, Clone, Debug, Default)]
pub struct Groups(pub Vec<Entity>);

/// Per-lane results of the current step, gathered from the groups in lane order.
#[derive(Component, Clone, Debug, Default)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct LaneResults {
    /// The program's output per lane.
    pub out: Vec<f64>,
    /// `∂loss_restart/∂out_lane` per lane: what the backward pass scales each lane by.
    pub weights: Vec<f64>,
    /// The loss per restart at the current parameters.
    pub loss: Vec<f64>,
    /// `∂loss_restart/∂param` at the parameters the last step evaluated, parameter-major
    /// (`p · restarts + r`): what the optimizer stepped on (kept to reuse its buffer).
    pub grads: Vec<f64>,
}

/// The fit so far.
#[derive(Component, Clone, Debug, Default)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct History {
    /// Optimizer steps taken.
    pub steps: u32,
    /// `losses[step][restart]`: the loss at the parameters of each step (the last entry is
    /// the loss at the final parameters).
    pub losses: Vec<Vec<f64>>,
    /// The parameters the last entry of `losses` was evaluated at (as [`ParamValues`]).
    pub evaluated: Vec<f64>,
    /// The loss gradient's Euclidean norm per restart at `evaluated`.
    pub grad_norm: Vec<f64>,
    /// Per restart, set when the candidate finishes: whether the restart met its stopping
    /// rule (the scene's `tolerance` over the last step, or a trial-based optimizer's own test)
    /// rather than the step limit.
    pub converged: Vec<bool>,
    /// Per parameter: whether its gradient was ever nonzero (in any restart, on any step); a
    /// parameter whose gradient stayed exactly zero is not identified by the data.
    pub grad_seen: Vec<bool>,
    /// The last evaluation was (for some restart) a rejected trial of a trial-based optimizer:
    /// the outputs in [`LaneResults`] are not those of the accepted constants.
    pub pending_trial: bool,
    /// Per restart, the held-out R² at the final constants, scored inside the candidate's own
    /// task as it finished (a search's scorer; `None` where nothing scored it).
    pub held_out_r2: Option<Vec<Option<f64>>>,
    /// Walks, tape replays and tape nodes spent on this candidate.
    pub walks: u64,
    pub replays: u64,
    pub tape_nodes: u64,
}
