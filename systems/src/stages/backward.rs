//! Backward: the reverse pass of every walked group, scaled by each lane's loss weight.
//!
//! The engine replays the group's tape in reverse over its lanes (seeded with 1 per lane) —
//! the tape this step's walk recorded or the numeric stage replayed — and each of the group's
//! lanes' parameter gradient is multiplied by the lane's `∂loss/∂out` from merge-masks.
//! A lane whose weight is zero (a held-out data point) contributes exactly zero, even when its
//! gradient is not finite. Groups run in parallel; each is sequential.

use crate::machine::Machine;
use crate::profile::{Profile, Stage, StageTimer};
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use rayon::prelude::*;

pub fn backward(
    mut profile: ResMut<Profile>,
    candidates: Query<(&FitSpec, &Compiled, &LaneResults, &Status)>,
    mut groups: Query<(&LaneGroup, &mut Machine, &mut GroupOutputs)>,
) {
    let timer = StageTimer::start(Stage::Backward);
    let mut todo: Vec<_> = groups
        .iter_mut()
        .filter(|(g, m, _)| {
            m.result.is_some()
                && candidates
                    .get(g.candidate)
                    .is_ok_and(|c| *c.3 == Status::Active)
        })
        .collect();
    let candidates = &candidates;
    todo.par_iter_mut().for_each(|(group, machine, out)| {
        let Ok((spec, compiled, results, _)) = candidates.get(group.candidate) else {
            return;
        };
        let Some(result) = machine.result.take() else {
            return;
        };
        machine.vm.backward(result);
        let n = group.lanes.len();
        let cols = machine.columns(&group.lanes);
        out.grads.clear();
        out.grads.resize(spec.params.len() * n, 0.0);
        for (p, name) in spec.params.iter().enumerate() {
            let g = machine.vm.input_grad(&compiled.0, name);
            for (i, (&lane, &c)) in group.lanes.iter().zip(&cols).enumerate() {
                let w = results.weights[lane];
                if w != 0.0 {
                    out.grads[p * n + i] = w * g[c];
                }
            }
        }
    });
    profile.counters.backward_passes += todo.len() as u64;
    profile.record(timer);
}
