//! The evaluator a lane group keeps between stages and between steps.
//!
//! The walk stage evaluates the group's program and leaves the result and the recorded tape in
//! the group's [`Machine`]; the backward stage replays that tape in reverse from the same
//! machine, and on later steps the replay stage replays it forward with new parameters. The
//! machine remembers which candidate lanes its evaluator's lanes are (`walked`): after a split
//! the group keeps only some of them. Arenas, payload and tape buffers stay allocated from step
//! to step.
//!
//! The machine is generic over the payload precision `R` (a fit's whole world uses one: the
//! stages are instantiated for it, [`crate::fit::stage_schedule`]); parameters, losses and
//! gradients outside the evaluator stay `f64`.

use bevy_ecs::prelude::*;
use ndvm_engine::value::Value;
use ndvm_engine::{Real, Vm};

/// A lane group's evaluator and the value its last walk returned.
#[derive(Component, Debug)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct Machine<R: Real> {
    pub vm: Vm<R>,
    /// The bytecode client's executor (for bytecode candidates).
    pub runner: ndvm_bytecode::Runner,
    /// The result of this step's walk or replay, until its backward pass takes it (right after
    /// a replay, in the replay stage; in the backward stage after a walk).
    pub result: Option<Value>,
    /// The candidate lanes the evaluator's lanes stand for, in order (those of its last walk).
    pub walked: Vec<usize>,
    /// The inputs of those lanes (kept so a replay only rewrites the parameter values).
    pub bindings: ndvm_engine::Bindings<R>,
    /// Walks so far: a tape uploaded to the GPU belongs to one walk.
    pub walks: u64,
    /// The tape on the GPU, the walk it came from and the lanes it runs (see `stages::gpu`).
    #[cfg(feature = "gpu")]
    pub device: Option<crate::stages::gpu::OnDevice>,
}

impl<R: Real> Default for Machine<R> {
    fn default() -> Self {
        Machine {
            vm: Vm::default(),
            runner: ndvm_bytecode::Runner::new(),
            result: None,
            walked: Vec::new(),
            bindings: ndvm_engine::Bindings::new(),
            walks: 0,
            #[cfg(feature = "gpu")]
            device: None,
        }
    }
}

impl<R: Real> Machine<R> {
    /// Whether `lanes` (a subset of [`Machine::walked`], both ascending) are all the walked
    /// lanes: then evaluator lane `i` is `lanes[i]`, and [`Machine::columns`] is `0..n`.
    pub fn is_whole(&self, lanes: &[usize]) -> bool {
        lanes.len() == self.walked.len()
    }

    /// The evaluator lane of each of `lanes` (a subset of [`Machine::walked`], both ascending).
    pub fn columns(&self, lanes: &[usize]) -> Vec<usize> {
        positions(&self.walked, lanes)
    }

    /// The numbers of `v` per lane, widened to f64 (`None` when `v` is not a number).
    pub fn numbers(&self, v: Value) -> Option<Vec<f64>> {
        let mut out = Vec::new();
        self.vm.numbers_into(v, &mut out).then_some(out)
    }
}

/// The position in `all` of each of `lanes` (a subset of `all`, both ascending).
pub fn positions(all: &[usize], lanes: &[usize]) -> Vec<usize> {
    if lanes.len() == all.len() {
        return (0..lanes.len()).collect();
    }
    let mut cols = Vec::with_capacity(lanes.len());
    let mut c = 0;
    for &l in lanes {
        while all.get(c).is_some_and(|&w| w < l) {
            c += 1;
        }
        cols.push(c);
    }
    cols
}

/// Spawns a lane group entity: its lanes, its evaluator and its outputs (routed to the walk
/// until a replay serves it). The schedule's cuts, the replay's split-off lanes and the groups
/// the pipeline splits off inside its tasks all become entities here.
pub fn spawn_group<R: Real>(
    commands: &mut Commands,
    group: ndvm_components::prelude::LaneGroup,
    machine: Machine<R>,
    out: ndvm_components::prelude::GroupOutputs,
) -> Entity {
    let route = ndvm_components::prelude::Route::Walk;
    commands.spawn((group, route, out, machine)).id()
}

/// An engine error as one line: where (line and column in the candidate's source) and what.
pub fn locate(e: &ndvm_engine::Error, src: &str) -> String {
    match e.span {
        Some(span) => {
            let (line, col) = span.line_col(src);
            format!("line {line}, column {col}: {e}")
        }
        None => e.to_string(),
    }
}
