//! Backward: the reverse pass of every group, scaled by each lane's loss weight.
//!
//! The engine replays the group's tape in reverse over its lanes (seeded with 1 per lane) —
//! the tape this step's walk or replay recorded — leaving each lane's
//! `∂out/∂param` in the group's outputs. The optimize stage weighs them by each lane's
//! `∂loss/∂out` (and Levenberg–Marquardt reads them as they are: the Jacobian).
//!
//! The pass runs where the tape was made, in the same parallel task: [`differentiate`] is
//! called by the replay and walk stages right after a group's replay or walk, while its values
//! are still in cache, so a step costs one parallel pass fewer, and the time is booked here. This
//! stage differentiates whatever is still pending after them — nothing, with the built-in
//! stages (the GPU stage runs its own); it keeps the place plugins order their systems against.
//! Groups run in parallel, each sequentially.

use crate::machine::Machine;
use crate::profile::{Profile, Stage, StageTimer};
use crate::stages::pacing::Piped;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_engine::Real;
use rayon::prelude::*;

pub fn backward<R: Real>(
    mut profile: ResMut<Profile>,
    candidates: Query<(&FitSpec, &Status), Without<Piped>>,
    mut groups: Query<(&LaneGroup, &mut Machine<R>, &mut GroupOutputs)>,
) {
    let timer = StageTimer::start(Stage::Backward);
    let mut todo: Vec<_> = groups
        .iter_mut()
        .filter(|(g, m, _)| {
            m.result.is_some()
                && candidates
                    .get(g.candidate)
                    .is_ok_and(|c| *c.1 == Status::Active)
        })
        .collect();
    let candidates = &candidates;
    todo.par_iter_mut().for_each(|(group, machine, out)| {
        if let Ok((spec, _)) = candidates.get(group.candidate) {
            differentiate(group, machine, out, spec);
        }
    });
    profile.counters.backward_passes += todo.len() as u64;
    profile.record(timer);
}

/// The backward pass of one group whose result is pending: each lane's raw `∂out/∂param` into
/// `out.grads` (parameter-major). The replay stage calls it right after a replay, while the
/// replayed values are still in cache; this stage, for the groups walked this step.
pub(crate) fn differentiate<R: Real>(
    group: &LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    spec: &FitSpec,
) {
    let Some(result) = machine.result.take() else {
        return;
    };
    machine.vm.backward(result);
    let n = group.lanes.len();
    let whole = machine.is_whole(&group.lanes);
    let cols = if whole {
        Vec::new()
    } else {
        machine.columns(&group.lanes)
    };
    // The parameters are the program's first inputs, in order (`FitSpec::input_names`). Each
    // row is written once (no zeroing first); a parameter without a gradient gets zeros.
    out.grads.clear();
    out.grads.reserve(spec.params.len() * n);
    for p in 0..spec.params.len() {
        let g = machine.vm.grad(p);
        let start = out.grads.len();
        if whole {
            out.grads.extend(g.iter().take(n).map(|&g| g.to_f64()));
        } else if !g.is_empty() {
            out.grads
                .extend(cols.iter().take(n).map(|&c| g[c].to_f64()));
        }
        out.grads.resize(start + n, 0.0);
    }
}
