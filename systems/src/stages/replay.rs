//! Replay: walk once, replay many — each group replays the tape its last walk recorded.
//!
//! Between optimizer steps only the parameter values change, so a group that walked last step
//! does not walk again: its evaluator still holds the tape (every numeric node in walk order)
//! and the guards (every decision the walk took on numbers). The engine's [`Vm::replay`]
//! writes the new parameters into their input slots, reruns the nodes through the same kernels
//! and re-checks the guards. Where every guard holds, the outputs equal a fresh walk's bit for
//! bit and the backward pass runs on the replayed tape as it would on a new one.
//!
//! A guard that fails names the lanes that would now take another path. Those lanes — exactly
//! those — leave the group: they become a new group that the walk stage walks this step (and
//! that replays its own tape from then on); the group keeps replaying its tape for the lanes
//! that still agree. A lane's numbers do not depend on which group it is in
//! (docs/language-reference.md §9.1), so splitting changes no result. When every lane of a group
//! fails, when the tape is stale (an input's structure changed) or when a group has lost more than
//! half of the lanes its tape was walked for, the group walks again as a whole.
//!
//! A replayed group's backward pass follows its replay in the same parallel task (its values
//! are still in cache); the backward stage differentiates the groups walked this step. (A
//! candidate that the merge-masks stage then stops — a walk error in another of its groups —
//! has had its replayed groups differentiated for nothing; they count in `backward_passes`.)
//!
//! This stage runs before the walk (the architecture's diagram lists the walk first: the two
//! are one step's two ways of evaluating a group, and the walk must see the lanes this stage
//! sends back). `walk_every_step` ([`FitSettings`]) turns replay off. Groups replay in
//! parallel; each group's replay is sequential.
//!
//! [`Vm::replay`]: ndvm_engine::Vm::replay

use crate::machine::update_params;
use crate::machine::{Machine, spawn_group};
use crate::profile::{Counters, Profile, Stage, StageTimer};
use crate::resources::FitSettings;
use crate::stages::backward::differentiate;
use crate::stages::pacing::Piped;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_engine::tape::GuardKind;
use ndvm_engine::value::Value;
use ndvm_engine::{Real, Replay};
use rayon::prelude::*;
use std::time::{Duration, Instant};

type Replaying<'a, R> = (
    &'a mut LaneGroup,
    &'a mut Route,
    &'a mut Machine<R>,
    &'a mut GroupOutputs,
);

/// What happened to one group.
pub(crate) enum Outcome {
    /// No tape to replay (first step, an error, `walk_every_step`): the walk takes it.
    Walk,
    /// The tape could not be used; the group walks as a whole.
    Rewalk {
        stale: bool,
        failures: Vec<(GuardKind, u32)>,
        /// Lanes whose guards failed (all of the group's).
        failed: usize,
    },
    /// Replayed; `split` lanes (if any) failed their guards and need a new group.
    Replayed {
        failures: Vec<(GuardKind, u32)>,
        split: Vec<usize>,
    },
}

pub fn replay<R: Real>(
    mut commands: Commands,
    settings: Res<FitSettings>,
    mut profile: ResMut<Profile>,
    mut candidates: Query<
        (&FitSpec, &ParamValues, &Compiled, &Status, &mut Groups),
        Without<Piped>,
    >,
    mut groups: Query<Replaying<'static, R>>,
) {
    let timer = StageTimer::start(Stage::Replay);
    let active = |g: &LaneGroup| {
        candidates
            .get(g.candidate)
            .is_ok_and(|c| *c.3 == Status::Active)
    };
    // Groups the GPU stage ran this step are done.
    let mut todo: Vec<_> = groups
        .iter_mut()
        .filter(|(g, route, ..)| active(g) && **route != Route::Device)
        .collect();
    let walk_every_step = settings.walk_every_step;
    let cands = &candidates;
    // Each group: what happened, and the time its replay and its backward pass took.
    let outcomes: Vec<(Outcome, [Duration; 2])> = todo
        .par_iter_mut()
        .map(|(group, route, machine, out)| {
            **route = Route::Walk;
            let Ok((spec, values, compiled, ..)) = cands.get(group.candidate) else {
                return (Outcome::Walk, [Duration::ZERO; 2]);
            };
            if walk_every_step {
                return (Outcome::Walk, [Duration::ZERO; 2]);
            }
            let done = replay_differentiate(group, machine, out, (spec, values, compiled), 1);
            if matches!(done.0, Outcome::Replayed { .. }) {
                **route = Route::Replay;
            }
            done
        })
        .collect();
    // Each replayed group's backward pass ran here, right after its replay (its values still in
    // cache, one parallel pass instead of two): the stage's time is shared between the two
    // stages in proportion to what the groups spent on each.
    let [replay_time, backward_time] = outcomes
        .iter()
        .fold([Duration::ZERO; 2], |[r, b], o| [r + o.1[0], b + o.1[1]]);
    for ((group, ..), (outcome, _)) in todo.iter().zip(outcomes) {
        if let Some(split) = outcome.count(group.lanes.len(), &mut profile.counters) {
            let id = split_off::<R>(&mut commands, group.candidate, split);
            if let Ok((.., mut ids)) = candidates.get_mut(group.candidate) {
                ids.0.push(id);
            }
        }
    }
    profile.record_shared(timer, Stage::Backward, (replay_time, backward_time));
}

impl Outcome {
    /// Adds the outcome to the counters (`lanes`: the group's lanes after the replay); returns
    /// the lanes to split off into a new group, if any.
    pub(crate) fn count(self, lanes: usize, c: &mut Counters) -> Option<Vec<usize>> {
        let (failures, split) = match self {
            Outcome::Walk => return None,
            Outcome::Rewalk {
                stale,
                failures,
                failed,
            } => {
                c.stale_tapes += u64::from(stale);
                c.rewalked_lanes += failed as u64;
                (failures, None)
            }
            Outcome::Replayed { failures, split } => {
                c.replays += 1;
                c.backward_passes += 1;
                c.replayed_lanes += lanes as u64;
                let split = (!split.is_empty()).then(|| {
                    c.rewalked_lanes += split.len() as u64;
                    c.groups += 1;
                    split
                });
                (failures, split)
            }
        };
        for (kind, n) in failures {
            match kind {
                GuardKind::Compare => c.guard_failures.comparison += u64::from(n),
                GuardKind::Index => c.guard_failures.index += u64::from(n),
            }
        }
        split
    }
}

/// Replays one group's tape with its candidate's current parameters and, when that worked,
/// runs its backward pass right after (its values still in cache); the outcome and the time
/// each took, times `weight` (the pipelined steps time by sample,
/// [`sample_weight`](super::optimize::sample_weight); zero, and no clock read, when it is 0).
/// Shared by this stage and the pipelined steps (`stages::pipeline`).
pub(crate) fn replay_differentiate<R: Real>(
    group: &mut LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    (spec, values, compiled): (&FitSpec, &ParamValues, &Compiled),
    weight: u32,
) -> (Outcome, [Duration; 2]) {
    if !machine.vm.can_replay() {
        return (Outcome::Walk, [Duration::ZERO; 2]);
    }
    let start = (weight > 0).then(Instant::now);
    let outcome = replay_group(group, machine, out, spec, values, compiled.0.program());
    let replayed = start.map(|s| s.elapsed());
    if matches!(outcome, Outcome::Replayed { .. }) {
        differentiate(group, machine, out, spec);
    }
    let times = start.zip(replayed).map_or([Duration::ZERO; 2], |(s, r)| {
        [r, s.elapsed() - r].map(|t| t * weight)
    });
    (outcome, times)
}

/// A new group for `lanes` of `candidate` (lanes whose guards failed), walked this step.
pub(crate) fn split_off<R: Real>(
    commands: &mut Commands,
    candidate: Entity,
    lanes: Vec<usize>,
) -> Entity {
    let group = LaneGroup { candidate, lanes };
    spawn_group(
        commands,
        group,
        Machine::<R>::default(),
        GroupOutputs::default(),
    )
}

/// Replays one group's tape with its candidate's current parameters.
fn replay_group<R: Real>(
    group: &mut LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    spec: &FitSpec,
    values: &ParamValues,
    program: &ndvm_engine::Program,
) -> Outcome {
    // A tape walked for fewer lanes than the group has is a GPU broadcast tape (one lane walked
    // for all, `stages::gpu`): the CPU walks the group.
    if group.lanes.len() > machine.walked.len() {
        return Outcome::Rewalk {
            stale: false,
            failures: Vec::new(),
            failed: 0,
        };
    }
    // A tape walked for many more lanes than the group still has costs more than a new walk.
    if group.lanes.len() * 2 < machine.walked.len() {
        return Outcome::Rewalk {
            stale: false,
            failures: Vec::new(),
            failed: 0,
        };
    }
    update_params(&mut machine.bindings, &machine.walked, spec, values);
    let (result, failed, failures) = match machine.vm.replay(program, &machine.bindings) {
        Replay::Held(v) => (v, Vec::new(), Vec::new()),
        Replay::Partial {
            result,
            lanes,
            failures,
        } => (result, lanes, failures),
        Replay::Stale(_) => {
            return Outcome::Rewalk {
                stale: true,
                failures: Vec::new(),
                failed: 0,
            };
        }
    };
    // The group's lanes whose guards failed (lanes split off earlier may fail too: ignored).
    let failed: Vec<usize> = failed
        .iter()
        .map(|&c| machine.walked[c as usize])
        .filter(|l| group.lanes.binary_search(l).is_ok())
        .collect();
    if failed.len() == group.lanes.len() {
        return Outcome::Rewalk {
            stale: false,
            failures,
            failed: failed.len(),
        };
    }
    let failures = if failed.is_empty() {
        Vec::new()
    } else {
        failures
    };
    group.lanes.retain(|l| failed.binary_search(l).is_err());
    if !finish(group, machine, out, result) {
        return Outcome::Rewalk {
            stale: true,
            failures: Vec::new(),
            failed: 0,
        };
    }
    Outcome::Replayed {
        failures,
        split: failed,
    }
}

/// The replayed outputs of the group's lanes; false when the result is not a number.
fn finish<R: Real>(
    group: &LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    v: Value,
) -> bool {
    if machine.is_whole(&group.lanes) {
        // Into the last step's buffer: no allocation a step.
        if !machine.vm.numbers_into(v, &mut out.out) {
            return false;
        }
    } else {
        let Some(ys) = machine.numbers(v) else {
            return false;
        };
        out.out = machine
            .columns(&group.lanes)
            .into_iter()
            .map(|c| ys[c])
            .collect();
    }
    out.error = None;
    out.replayed = true;
    out.tape_nodes = machine.vm.tape().nodes.len() as u64;
    machine.result = Some(v);
    true
}
