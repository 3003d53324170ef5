//! Optimize: one optimizer step per candidate, each restart its own lane.
//!
//! Each candidate's task first merges its groups' outputs into its losses and weights (the
//! merge-masks stage's work, [`merge_candidate`]: one parallel pass for both), then the stage
//! reduces each candidate's weighted per-lane gradients (from its groups, in lane
//! order) to one gradient per parameter and restart, records the step's losses in [`History`],
//! and either finishes the candidate (its step count reached, or every restart's loss moved by
//! less than the tolerance) or moves its parameters with [`crate::optim::step`]. The
//! trial-based optimizers (Levenberg–Marquardt, L-BFGS) decide both in [`crate::optim::trial`]:
//! their history records each step's accepted losses, and Levenberg–Marquardt reads the
//! per-lane gradients unweighted — the Jacobian of the outputs.
//!
//! Parameters, gradients and moments are parameter-major, lane-minor (`p * lanes + lane`), the
//! layout of the engine's per-lane gradients. Every lane is updated by the same arithmetic in
//! the same order, from its own numbers only: a batch of restarts steps exactly as each restart
//! would alone, whatever the thread count.

use crate::optim::trial::{self, LeastSquares, Verdict};
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::StopSignal;
use crate::stages::merge_masks::{GroupView, merge_candidate};
use crate::stages::pacing::Piped;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use rayon::prelude::*;
use std::time::{Duration, Instant};

type Active<'a> = (
    &'a FitSpec,
    &'a Groups,
    &'a mut LaneResults,
    &'a mut ParamValues,
    &'a mut OptimizerState,
    &'a mut History,
    &'a mut Status,
);

/// Past a candidate's first steps, one step in this many is timed (see [`sample_weight`]).
pub(crate) const SAMPLE: usize = 8;

/// How many steps the time of task `task`'s step stands for in the profile, its candidate
/// having taken `steps`: with `first`, its first [`SAMPLE`] steps are each timed (a short fit
/// still shows every stage); then one step in [`SAMPLE`], scaled up to stand for the others; 0
/// when this one is not timed. Reading the clock around every step's replay, merge and
/// optimizer cost 3–9% of a search's one-thread time ([`crate::resources::FitSettings::time_first_steps`]).
pub(crate) fn sample_weight(task: usize, steps: u32, first: bool) -> u32 {
    match steps as usize {
        s if first && s < SAMPLE => 1,
        s if (task + s).is_multiple_of(SAMPLE) => SAMPLE as u32,
        _ => 0,
    }
}

pub fn optimize(
    mut profile: ResMut<Profile>,
    stop: Res<StopSignal>,
    mut candidates: Query<Active<'static>, Without<Piped>>,
    groups: Query<(&LaneGroup, &GroupOutputs)>,
) {
    let timer = StageTimer::start(Stage::Optimize);
    let mut todo: Vec<_> = candidates
        .iter_mut()
        .filter(|c| *c.6 == Status::Active)
        .collect();
    let groups = &groups;
    // A walk that failed because the fit is stopping stops its candidate (its last results
    // stand) rather than failing it.
    let stopping = stop.0.reason();
    // Each candidate's merge and optimizer step, timed by sample (`sample_weight`): the pass's
    // wall time is shared between the two stages in the proportion the sampled tasks spent.
    let sampled: Vec<[Duration; 2]> = todo
        .par_iter_mut()
        .enumerate()
        .map(
            |(i, (spec, ids, results, values, state, history, status))| {
                let views: Vec<GroupView<'_>> =
                    ids.0.iter().filter_map(|&g| groups.get(g).ok()).collect();
                let weight = sample_weight(i, history.steps, true);
                let fitting = Fitting {
                    spec,
                    results,
                    values,
                    state,
                    history,
                    status,
                };
                merge_and_step(fitting, &views, stopping, weight)
            },
        )
        .collect();
    let [own, merge] = sampled
        .iter()
        .fold([Duration::ZERO; 2], |[o, m], t| [o + t[0], m + t[1]]);
    profile.record_shared(timer, Stage::MergeMasks, (own, merge));
    // The merge has no system of its own: each step counts as one of its calls.
    profile.stages[Stage::MergeMasks as usize].calls += 1;
}

/// What one candidate's merge and optimizer step read and move.
pub(crate) struct Fitting<'a> {
    pub spec: &'a FitSpec,
    pub results: &'a mut LaneResults,
    pub values: &'a mut ParamValues,
    pub state: &'a mut OptimizerState,
    pub history: &'a mut History,
    pub status: &'a mut Status,
}

impl Fitting<'_> {
    /// The same borrows for one more step (the pipeline steps a candidate several times).
    pub fn reborrow(&mut self) -> Fitting<'_> {
        Fitting {
            spec: self.spec,
            results: self.results,
            values: self.values,
            state: self.state,
            history: self.history,
            status: self.status,
        }
    }
}

/// One candidate's merge ([`merge_candidate`]) and, if it is still active, its optimizer
/// step, over its `groups` in lane order: the time of its own step and its merge's, times
/// `weight` ([`sample_weight`]; zero, and no clock read, when that is 0). Shared by this stage
/// and the pipelined steps (`stages::pipeline`).
pub(crate) fn merge_and_step(
    f: Fitting<'_>,
    groups: &[GroupView<'_>],
    stopping: Option<&'static str>,
    weight: u32,
) -> [Duration; 2] {
    let start = (weight > 0).then(Instant::now);
    merge_candidate(f.spec, groups, f.history, f.status, f.results, stopping);
    let merged = start.map(|s| s.elapsed());
    if *f.status == Status::Active {
        step_candidate(
            f.spec, groups, f.results, f.values, f.state, f.history, f.status,
        );
    }
    start.zip(merged).map_or([Duration::ZERO; 2], |(s, m)| {
        [s.elapsed() - m, m].map(|t| t * weight)
    })
}

/// One candidate's optimizer step, after its merge (see the module docs).
fn step_candidate(
    spec: &FitSpec,
    groups: &[GroupView<'_>],
    results: &mut LaneResults,
    values: &mut ParamValues,
    state: &mut OptimizerState,
    history: &mut History,
    status: &mut Status,
) {
    let per_lane = gather(spec, groups);
    let mut grads = std::mem::take(&mut results.grads);
    reduce(spec, &per_lane, &results.weights, &mut grads);
    let fitting = (values, state, history, status);
    step_on(spec, groups, (&per_lane, &grads), results, fitting);
    results.grads = grads;
}

/// [`step_candidate`] once the restarts' gradients are reduced.
fn step_on(
    spec: &FitSpec,
    groups: &[GroupView<'_>],
    (per_lane, grads): (&[f64], &[f64]),
    results: &LaneResults,
    (values, state, history, status): (
        &mut ParamValues,
        &mut OptimizerState,
        &mut History,
        &mut Status,
    ),
) {
    history.losses.push(results.loss.clone());
    history.evaluated.clone_from(&values.0);
    history.grad_norm.clear();
    history.grad_norm.extend((0..spec.restarts).map(|r| {
        (0..spec.params.len())
            .map(|p| grads[p * spec.restarts + r].powi(2))
            .sum::<f64>()
            .sqrt()
    }));
    history.grad_seen.resize(spec.params.len(), false);
    for (p, seen) in history.grad_seen.iter_mut().enumerate() {
        *seen |= grads[p * spec.restarts..(p + 1) * spec.restarts]
            .iter()
            .any(|&g| g != 0.0);
    }
    for (_, out) in groups {
        history.tape_nodes += out.tape_nodes;
        if out.replayed {
            history.replays += 1;
        } else {
            history.walks += 1;
        }
    }
    if spec.optimizer.is_trial_based() {
        step_trials(
            spec, results, per_lane, grads, values, state, history, status,
        );
        return;
    }
    // Each restart's verdict, counted without a buffer every step (it is kept at the end).
    let n = history.losses.len();
    let pair = spec.tolerance.filter(|_| n >= 2);
    let pair = pair.map(|tol| (tol, &history.losses[n - 1], &history.losses[n - 2]));
    let restarts = pair.map_or(spec.restarts, |(_, a, b)| a.len().min(b.len()));
    let restart_converged = |r: usize| pair.is_some_and(|(tol, a, b)| (a[r] - b[r]).abs() < tol);
    let converged = (0..restarts).all(restart_converged);
    if converged || history.steps >= spec.steps {
        let verdicts = (0..restarts).map(restart_converged).collect();
        history.converged = verdicts;
        *status = Status::Done { converged };
        return;
    }
    crate::optim::step(
        &spec.optimizer,
        state,
        &mut values.0,
        grads,
        spec.restarts,
        &spec.bounds,
    );
    history.steps += 1;
}

/// A trial-based optimizer's step (see [`crate::optim::trial`]).
#[allow(clippy::too_many_arguments)]
fn step_trials(
    spec: &FitSpec,
    results: &LaneResults,
    per_lane: &[f64],
    grads: &[f64],
    values: &mut ParamValues,
    state: &mut OptimizerState,
    history: &mut History,
    status: &mut Status,
) {
    let lsq = spec.data.as_ref().map(|d| LeastSquares {
        out: &results.out,
        jacobian: per_lane,
        target: &d.target,
        train: &d.train,
    });
    let lsq = lsq.filter(|_| spec.loss == Loss::Mse);
    let verdict = trial::advance(
        &spec.optimizer,
        state,
        &mut values.0,
        (&results.loss, grads),
        lsq.as_ref(),
        &spec.bounds,
        spec.tolerance,
        history.steps + 1 >= spec.steps,
    );
    // The step's record is the accepted points: should the fit stop before another step
    // (a budget, an interrupt), its loss and constants belong together.
    if let Some(points) = trial::accepted_points(state, spec.params.len()) {
        history.evaluated = points;
    }
    history.pending_trial = !state.restarts.iter().all(|r| r.at_accepted);
    match verdict {
        Verdict::Done { converged } if state.finishing => {
            // The accepted points evaluated once more: the previous entry already holds
            // their losses.
            history.losses.pop();
            history.pending_trial = false;
            history.converged = state.restarts.iter().map(|r| r.converged).collect();
            *status = Status::Done { converged };
        }
        Verdict::Done { converged } => {
            if let Some(last) = history.losses.last_mut() {
                *last = trial::accepted_losses(state);
            }
            history.converged = state.restarts.iter().map(|r| r.converged).collect();
            *status = Status::Done { converged };
        }
        Verdict::Finishing | Verdict::Continue => {
            if let Some(last) = history.losses.last_mut() {
                *last = trial::accepted_losses(state);
            }
            history.steps += 1;
        }
    }
}

/// `∂out/∂param` per lane, parameter-major in lane order (`p · lanes + lane`), whichever
/// groups the lanes are in (unweighted: the Jacobian of the outputs for least squares).
fn gather<'a>(spec: &FitSpec, groups: &[GroupView<'a>]) -> std::borrow::Cow<'a, [f64]> {
    let (params, lanes) = (spec.params.len(), spec.lanes());
    // One group holding every lane: its gradients are already in lane order.
    if let [(group, out)] = groups
        && group.lanes.len() == lanes
        && out.grads.len() == params * lanes
        && out.error.is_none()
    {
        return std::borrow::Cow::Borrowed(&out.grads);
    }
    let mut per_lane = vec![0.0; params * lanes];
    for (group, out) in groups {
        let n = group.lanes.len();
        // A group whose walk failed at a trial point has no gradients (its lanes' outputs are
        // NaN, which rejects the trial): its lanes keep zeros.
        if out.error.is_some() || out.grads.len() != params * n {
            continue;
        }
        for p in 0..params {
            for (&lane, &x) in group.lanes.iter().zip(&out.grads[p * n..(p + 1) * n]) {
                per_lane[p * lanes + lane] = x;
            }
        }
    }
    std::borrow::Cow::Owned(per_lane)
}

/// `∂loss/∂param` per restart (parameter-major): each lane's gradient times its loss weight,
/// summed over the restart's lanes in lane order by [`crate::loss::weighted_lane_sum`]. A lane of
/// weight zero (a held-out point) contributes exactly zero, even with a non-finite gradient.
fn reduce(spec: &FitSpec, per_lane: &[f64], weights: &[f64], grads: &mut Vec<f64>) {
    let (restarts, points, lanes) = (spec.restarts, spec.points(), spec.lanes());
    let params = spec.params.len();
    grads.clear();
    grads.resize(params * restarts, 0.0);
    if per_lane.len() != params * lanes || weights.len() != lanes {
        return;
    }
    for p in 0..params {
        for r in 0..restarts {
            let lanes_of_r = r * points..(r + 1) * points;
            grads[p * restarts + r] = crate::loss::weighted_lane_sum(
                &weights[lanes_of_r.clone()],
                &per_lane[p * lanes..(p + 1) * lanes][lanes_of_r],
            );
        }
    }
}
