//! Merge-masks: per-lane results of a candidate's groups become its losses.
//!
//! Divergent branches were already merged per lane inside each walk (the engine's lane masks);
//! this stage merges the candidate's lane groups (walked or replayed, consecutive lanes or
//! split off), each lane into its place, into [`LaneResults`]: the
//! output per lane, the loss per restart, each lane's loss weight `∂loss/∂out` (what the
//! backward stage scales that lane's gradient by). (Held-out R² is computed from the outputs
//! when the results are read, not every step.)
//! A walk error fails the candidate at its first step and stops it later on (its last
//! results stand).

use crate::loss::{self, LaneAxes};
use crate::profile::{Profile, Stage, StageTimer};
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use rayon::prelude::*;

pub fn merge_masks(
    mut profile: ResMut<Profile>,
    mut candidates: Query<(&FitSpec, &Groups, &History, &mut Status, &mut LaneResults)>,
    groups: Query<(&LaneGroup, &GroupOutputs)>,
) {
    let timer = StageTimer::start(Stage::MergeMasks);
    let mut todo: Vec<_> = candidates
        .iter_mut()
        .filter(|c| *c.3 == Status::Active)
        .collect();
    let groups = &groups;
    todo.par_iter_mut()
        .for_each(|(spec, ids, history, status, results)| {
            let mut out = vec![f64::NAN; spec.lanes()];
            for &g in &ids.0 {
                let Ok((group, o)) = groups.get(g) else {
                    continue;
                };
                if let Some(e) = &o.error {
                    **status = if history.steps == 0 {
                        Status::Failed { error: e.clone() }
                    } else {
                        Status::Stopped {
                            reason: format!("step {}: {e}", history.steps),
                        }
                    };
                    return;
                }
                for (&lane, &y) in group.lanes.iter().zip(&o.out) {
                    out[lane] = y;
                }
            }
            merge(spec, out, results);
        });
    profile.record(timer);
}

/// Losses, weights and held-out R² from the per-lane outputs.
fn merge(spec: &FitSpec, out: Vec<f64>, results: &mut LaneResults) {
    let axes = LaneAxes {
        restarts: spec.restarts,
        points: spec.points(),
    };
    match &spec.data {
        Some(data) if spec.loss == Loss::Mse => {
            let (l, w) = loss::mse_weights(axes, &out, &data.target, &data.train);
            results.loss = l;
            results.weights = w;
        }
        _ => {
            // The output is the loss: lane r is restart r (one point each).
            results.loss = (0..spec.restarts).map(|r| out[axes.lane(r, 0)]).collect();
            results.weights = vec![1.0; out.len()];
        }
    }
    results.out = out;
}
