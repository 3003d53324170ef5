//! Merge-masks: per-lane results of a candidate's groups become its losses.
//!
//! Divergent branches were already merged per lane inside each walk (the engine's lane masks);
//! this stage merges the candidate's lane groups (walked or replayed, consecutive lanes or
//! split off), each lane into its place, into [`LaneResults`]: the
//! output per lane, the loss per restart, each lane's loss weight `∂loss/∂out` (what the
//! backward stage scales that lane's gradient by). (Held-out R² is computed from the outputs
//! when the results are read, not every step.)
//! A walk error fails the candidate at its first step and stops it later on (its last
//! results stand) — except under a trial-based optimizer (Levenberg–Marquardt, L-BFGS), whose
//! trial points may stray where the program fails: there the failing group's lanes read NaN,
//! so their restarts' trials are rejected.
//!
//! The merge is a fraction of a microsecond per candidate, less than a parallel pass costs to
//! start, so it runs in the optimize stage's pass, first thing in each candidate's task
//! ([`merge_candidate`]); its time is booked to this stage in the profile.

use crate::loss::{self, LaneAxes};
use ndvm_components::prelude::*;

/// A candidate's lane group as the merge and the optimizer read it: its lanes and outputs.
pub(crate) type GroupView<'a> = (&'a LaneGroup, &'a GroupOutputs);

/// Merges one candidate's groups into its [`LaneResults`]; a walk error fails or stops it
/// (see the module docs) — stops it with `stopping`'s reason when the fit is stopping (the walk
/// was cut short by the stop). Called by the optimize stage, in the same parallel task as the
/// candidate's optimizer step.
pub(crate) fn merge_candidate(
    spec: &FitSpec,
    groups: &[GroupView<'_>],
    history: &History,
    status: &mut Status,
    results: &mut LaneResults,
    stopping: Option<&'static str>,
) {
    let outputs = groups.iter().copied();
    let trial = spec.optimizer.is_trial_based() && history.steps > 0;
    if let Some(e) = outputs.clone().find_map(|(_, o)| o.error.as_ref())
        && !trial
    {
        // The last step's results stand.
        *status = if let Some(reason) = stopping {
            Status::Stopped {
                reason: reason.to_string(),
            }
        } else if history.steps == 0 {
            Status::Failed { error: e.clone() }
        } else {
            Status::Stopped {
                reason: format!("step {}: {e}", history.steps),
            }
        };
        return;
    }
    let mut out = std::mem::take(&mut results.out);
    out.clear();
    out.resize(spec.lanes(), f64::NAN);
    for (group, o) in outputs.filter(|(_, o)| o.error.is_none()) {
        if group.lanes.len() == out.len() && o.out.len() == out.len() {
            out.copy_from_slice(&o.out);
            continue;
        }
        for (&lane, &y) in group.lanes.iter().zip(&o.out) {
            out[lane] = y;
        }
    }
    merge(spec, out, results);
}

/// Losses, weights and held-out R² from the per-lane outputs.
fn merge(spec: &FitSpec, out: Vec<f64>, results: &mut LaneResults) {
    let axes = LaneAxes {
        restarts: spec.restarts,
        points: spec.points(),
    };
    match &spec.data {
        Some(data) if spec.loss == Loss::Mse => {
            loss::mse_weights_into(
                axes,
                &out,
                (&data.target, &data.train),
                (&mut results.loss, &mut results.weights),
            );
        }
        _ => {
            // The output is the loss: lane r is restart r (one point each).
            results.loss.clear();
            results
                .loss
                .extend((0..spec.restarts).map(|r| out[axes.lane(r, 0)]));
            results.weights.clear();
            results.weights.resize(out.len(), 1.0);
        }
    }
    results.out = out;
}
