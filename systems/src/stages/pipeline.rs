//! Pipeline: each candidate's next steps in one task, with no barrier between them.
//!
//! Stepping through the stages costs two parallel passes over the whole window per step (the
//! groups' replays and walks, then the candidates' merges and optimizer steps), each ending in
//! a barrier, plus the schedule's and the caller's work between steps. A search's steps are
//! small — ~60 candidates of a few microseconds each — so these fixed costs, paid every step
//! whatever the work, kept it from scaling across cores (docs/performance.md).
//!
//! With [`FitSettings::steps_per_pass`] above 1 this stage does the replay, walk, backward,
//! merge-masks and optimize stages' work itself for the candidates marked [`Piped`] (the stage
//! systems step the others, [`Pacing`]): one parallel task per active candidate takes it
//! `steps_per_pass` steps, each replaying (or walking) its groups, differentiating them,
//! merging them and moving its parameters with the stages' own functions
//! (`replay_differentiate`, `walk_differentiate`, `merge_and_step`), on one core while its tape
//! and bindings are in that core's cache — the same core from pass to pass where it can
//! ([`crate::homes`]). Lanes whose guards fail are split off into a new group
//! inside the task and walked at once, as the walk stage would; new groups become entities
//! when the pass ends. A candidate leaves the pass when it finishes, fails or stops, when the
//! stop signal fires, or — in a fit, after its first step of the pass — when the pass has run
//! [`FitSettings::pass_millis`] (250 ms), so a heavy fit still reports progress every quarter
//! second. The profile shares the pass's wall time among the five stages in the proportion
//! their work took.
//!
//! A candidate's numbers depend only on its own steps, so a fit's results are the same for any
//! `steps_per_pass` and any thread count. What moves is when a finished candidate's slot is
//! refilled (between passes): a search's admissions, and so its proposals, depend on
//! `steps_per_pass` — never on the thread count. Plugin hooks (which expect to see every step)
//! and `walk_every_step` keep the fit stepwise ([`crate::fit::Fit`]); while a device is in use,
//! its candidates step at the GPU stage's pace and only those it leaves on the CPU are piped.

use crate::homes::run_at_home;
use crate::machine::{Machine, spawn_group};
use crate::profile::{Counters, Profile, Stage};
use crate::resources::{FitSettings, ScoreFn, Scorer, StopSignal};
use crate::stages::merge_masks::GroupView;
use crate::stages::optimize::{Fitting, merge_and_step, sample_weight};
use crate::stages::pacing::{Pacing, Piped};
use crate::stages::replay::{Outcome, replay_differentiate};
use crate::stages::walk::{Inputs, walk_differentiate};
use crate::trace::TaskTime;
use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_engine::Real;
use rayon::prelude::*;
use std::time::{Duration, Instant};

type Active<'a> = (
    Entity,
    &'a Candidate,
    &'a FitSpec,
    &'a Compiled,
    &'a mut Groups,
    &'a mut LaneResults,
    &'a mut ParamValues,
    &'a mut OptimizerState,
    &'a mut History,
    &'a mut Status,
);

type GroupParts<'a, R> = (
    Entity,
    &'a mut LaneGroup,
    &'a mut Machine<R>,
    &'a mut GroupOutputs,
);

/// One of a candidate's groups in its task: an entity's components, or a group split off
/// inside the task (spawned when the pass ends). An entity's components are marked changed once,
/// when the pass takes them, and then held as plain borrows: writing a change tick at every
/// step would store into the tick arrays, whose cache lines the neighbouring entities' ticks
/// share, from every worker at once.
enum Slot<'a, R: Real> {
    Entity {
        group: &'a mut LaneGroup,
        machine: &'a mut Machine<R>,
        out: &'a mut GroupOutputs,
    },
    Born(Box<(LaneGroup, Machine<R>, GroupOutputs)>),
}

impl<R: Real> Slot<'_, R> {
    fn parts(&mut self) -> (&mut LaneGroup, &mut Machine<R>, &mut GroupOutputs) {
        match self {
            Slot::Entity {
                group,
                machine,
                out,
            } => (group, machine, out),
            Slot::Born(b) => (&mut b.0, &mut b.1, &mut b.2),
        }
    }

    fn view(&self) -> GroupView<'_> {
        match self {
            Slot::Entity { group, out, .. } => (group, out),
            Slot::Born(b) => (&b.0, &b.2),
        }
    }
}

/// The run condition of the stage systems the pipeline stands in for.
pub fn stepped(pacing: Res<Pacing>) -> bool {
    pacing.stepped
}

/// The run condition of the pipeline: it may have candidates.
pub fn pipelined(settings: Res<FitSettings>) -> bool {
    settings.pipelined()
}

/// What the pass shares with every task.
struct Shared<'a> {
    steps: u32,
    /// When the pass stops taking steps ([`FitSettings::pass_millis`], or the stop's deadline
    /// if sooner).
    until: Option<Instant>,
    /// Every one of a candidate's first steps is timed ([`FitSettings::time_first_steps`]).
    first: bool,
    stop: &'a ndvm_engine::Stop,
    payload: Option<u64>,
    /// What a candidate's task computes as it finishes ([`Scorer`]).
    score: Option<&'a ScoreFn>,
}

/// What one task did: its counters and the time each stage's work took.
#[derive(Default)]
struct Done {
    /// Steps taken.
    steps: u32,
    counters: Counters,
    /// Replay, walk, backward, merge, optimize.
    times: [Duration; 5],
    /// The whole task's time, in a traced fit ([`crate::trace`]).
    took: Option<Duration>,
}

pub fn pipeline<R: Real>(
    mut commands: Commands,
    settings: Res<FitSettings>,
    stop: Res<StopSignal>,
    scorer: Option<Res<Scorer>>,
    mut profile: ResMut<Profile>,
    mut candidates: Query<Active<'static>, With<Piped>>,
    mut groups: Query<GroupParts<'static, R>>,
) {
    // The stop's deadline is looked at here, once a pass; inside the pass a fit's candidates
    // read the clock once a step (for the pass's end, or the deadline if sooner) and a search's
    // never (its passes are a few milliseconds).
    if stop.0.requested() {
        return;
    }
    let span = tracing::info_span!("pipeline").entered();
    let start = Instant::now();
    let mut todo: Vec<_> = candidates
        .iter_mut()
        .filter(|c| *c.9 == Status::Active)
        .collect();
    if todo.is_empty() {
        return;
    }
    // Each candidate's groups, in the order of its `Groups`.
    let at: EntityHashMap<usize> = todo.iter().enumerate().map(|(i, c)| (c.0, i)).collect();
    let mut slots: Vec<Vec<(usize, Slot<'_, R>)>> = todo.iter().map(|_| Vec::new()).collect();
    for (entity, group, machine, out) in groups.iter_mut() {
        let Some(&i) = at.get(&group.candidate) else {
            continue;
        };
        let Some(rank) = todo[i].4.0.iter().position(|&g| g == entity) else {
            continue;
        };
        slots[i].push((
            rank,
            Slot::Entity {
                group: group.into_inner(),
                machine: machine.into_inner(),
                out: out.into_inner(),
            },
        ));
    }
    let until = settings.pass_millis.map(|ms| {
        let end = start + Duration::from_millis(u64::from(ms));
        stop.0.deadline.map_or(end, |d| end.min(d))
    });
    let shared = Shared {
        steps: settings.steps_per_pass,
        until,
        first: settings.time_first_steps,
        stop: &stop.0,
        payload: settings.payload_bytes,
        score: scorer.as_ref().and_then(|s| s.0.as_deref()),
    };
    let mut tasks: Vec<_> = todo
        .iter_mut()
        .zip(slots)
        .map(|(c, mut s)| {
            s.sort_unstable_by_key(|(rank, _)| *rank);
            (c, s.into_iter().map(|(_, slot)| slot).collect::<Vec<_>>())
        })
        .collect();
    // The costliest tasks first, so the pass does not end waiting for one large candidate
    // started last: a candidate costs about its last step's tape nodes times its lanes, and
    // one not walked yet goes first (a walk costs more than a replay).
    tasks.sort_by_cached_key(|(_, slots)| std::cmp::Reverse(cost(slots)));
    // Each candidate's task at home on one worker from pass to pass (crate::homes).
    let traced = profile.trace.is_some();
    let done: Vec<Done> = run_at_home(
        &mut tasks,
        |(c, _)| c.1.index,
        |i, (c, slots)| {
            let (_, cand, spec, compiled, _, results, values, state, history, status) = c;
            let task = Task {
                source: &cand.source,
                spec,
                compiled,
                fitting: Fitting {
                    spec,
                    results,
                    values,
                    state,
                    history,
                    status,
                },
            };
            let began = traced.then(Instant::now);
            let mut done = advance(task, slots, &shared, i);
            done.took = began.map(|t| t.elapsed());
            done
        },
    );
    let traced_tasks: Option<Vec<TaskTime>> = traced.then(|| {
        let times = tasks.iter().zip(&done).map(|((c, slots), d)| TaskTime {
            home: c.1.index,
            secs: d.took.unwrap_or_default().as_secs_f64(),
            wide: slots.len() > 1,
        });
        times.collect()
    });
    // The groups split off inside the tasks join their candidates.
    for (c, slots) in &mut tasks {
        for slot in slots.drain(..) {
            if let Slot::Born(b) = slot {
                let (group, machine, out) = *b;
                c.4.0.push(spawn_group(&mut commands, group, machine, out));
            }
        }
    }
    let mut all = Done::default();
    for d in &done {
        all.add(d);
    }
    profile.counters += all.counters;
    let stages = [
        Stage::Replay,
        Stage::Walk,
        Stage::Backward,
        Stage::MergeMasks,
        Stage::Optimize,
    ];
    let wall = start.elapsed();
    profile.record_parts(wall, &stages, &all.times);
    if let (Some(trace), Some(tasks)) = (profile.trace.as_mut(), traced_tasks) {
        trace.push(tasks, wall.as_secs_f64());
    }
    drop(span);
}

/// One candidate in its task.
struct Task<'a> {
    source: &'a str,
    spec: &'a FitSpec,
    compiled: &'a Compiled,
    fitting: Fitting<'a>,
}

/// Up to `shared.steps` steps of one candidate (see the module docs).
fn advance<R: Real>(
    task: Task<'_>,
    slots: &mut Vec<Slot<'_, R>>,
    shared: &Shared<'_>,
    index: usize,
) -> Done {
    let Task {
        source,
        spec,
        compiled,
        fitting: mut f,
    } = task;
    let mut done = Done::default();
    for _ in 0..shared.steps {
        if *f.status != Status::Active || shared.stop.interrupted() {
            break;
        }
        // At least one step per pass, then none past the pass's time.
        if done.steps > 0 && shared.until.is_some_and(|t| Instant::now() >= t) {
            break;
        }
        let inputs = Inputs {
            spec,
            values: f.values,
            exe: &compiled.0,
            src: source,
        };
        // This step's replays, merge and optimizer step are timed by sample.
        let weight = sample_weight(index, f.history.steps, shared.first);
        // A wide candidate's groups spread over the cores, as in the stages.
        let one = |slot: &mut Slot<'_, R>| {
            let (group, machine, out) = slot.parts();
            let mut d = Done::default();
            let split = evaluate(
                group,
                machine,
                out,
                &inputs,
                (compiled, weight),
                shared,
                &mut d,
            );
            let split = split.map(|lanes| LaneGroup {
                candidate: group.candidate,
                lanes,
            });
            (split, d)
        };
        let mut splits = Vec::new();
        let mut keep = |(split, d): (Option<LaneGroup>, Done)| {
            done.add(&d);
            splits.extend(split);
        };
        match slots.as_mut_slice() {
            [slot] => keep(one(slot)),
            many => many
                .par_iter_mut()
                .map(one)
                .collect::<Vec<_>>()
                .into_iter()
                .for_each(keep),
        }
        for group in splits {
            let mut born = Box::new((group, Machine::<R>::default(), GroupOutputs::default()));
            let (group, machine, out) = (&born.0, &mut born.1, &mut born.2);
            let walked =
                walk_differentiate(group, machine, out, &inputs, shared.stop, shared.payload);
            walked.count(&mut done.counters);
            add(&mut done.times, [1, 2], walked.times);
            slots.push(Slot::Born(born));
        }
        // One group (the usual case) needs no list of views a step.
        let (single, many): ([GroupView<'_>; 1], Vec<GroupView<'_>>);
        let views: &[GroupView<'_>] = match slots.as_slice() {
            [slot] => {
                single = [slot.view()];
                &single
            }
            all => {
                many = all.iter().map(Slot::view).collect();
                &many
            }
        };
        // The stop's reason matters only to a walk it cut short (one clock read fewer a step).
        let failed = views.iter().any(|(_, out)| out.error.is_some());
        let stopping = if failed { shared.stop.reason() } else { None };
        let times = merge_and_step(f.reborrow(), views, stopping, weight);
        add(&mut done.times, [4, 3], times);
        done.steps += 1;
    }
    // A candidate that finished is scored here, on its core, while its data is in cache (not
    // once the fit is stopped: a step cut short is not recorded, and Ctrl-C must not wait).
    if let Some(score) = shared.score
        && matches!(*f.status, Status::Done { .. } | Status::Stopped { .. })
        && !shared.stop.requested()
    {
        let at = crate::optim::final_values(f.history, f.values);
        f.history.held_out_r2 = Some(score(source, &spec.params, at, spec.restarts));
    }
    done
}

/// One group's step: its replay, or its walk where the replay cannot serve, and its backward
/// pass; the lanes to split off into a new group, if any.
fn evaluate<R: Real>(
    group: &mut LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    inputs: &Inputs<'_>,
    (compiled, weight): (&Compiled, u32),
    shared: &Shared<'_>,
    done: &mut Done,
) -> Option<Vec<usize>> {
    let of = (inputs.spec, inputs.values, compiled);
    let (outcome, times) = replay_differentiate(group, machine, out, of, weight);
    add(&mut done.times, [0, 2], times);
    let replayed = matches!(outcome, Outcome::Replayed { .. });
    let split = outcome.count(group.lanes.len(), &mut done.counters);
    if replayed {
        return split;
    }
    let walked = walk_differentiate(group, machine, out, inputs, shared.stop, shared.payload);
    walked.count(&mut done.counters);
    add(&mut done.times, [1, 2], walked.times);
    None
}

/// A candidate's expected cost per step, from its groups' last step (see [`pipeline`]).
fn cost<R: Real>(slots: &[Slot<'_, R>]) -> u64 {
    slots
        .iter()
        .map(|s| match s.view() {
            (_, out) if out.tape_nodes == 0 => u64::MAX / 1024,
            (group, out) => out.tape_nodes.saturating_mul(group.lanes.len() as u64),
        })
        .fold(0, u64::saturating_add)
}

impl Done {
    fn add(&mut self, o: &Done) {
        self.counters += o.counters;
        for (t, d) in self.times.iter_mut().zip(o.times) {
            *t += d;
        }
    }
}

/// Adds `[a, b]` to the times at indices `at`.
fn add(times: &mut [Duration; 5], at: [usize; 2], [a, b]: [Duration; 2]) {
    times[at[0]] += a;
    times[at[1]] += b;
}
