//! Walk: the structural walk of every lane group the replay stage did not replay.
//!
//! That is a group's first step, a group whose tape went stale or whose lanes all changed path,
//! a group split off by the replay stage (the lanes whose guards failed), and every group on
//! every step with `walk_every_step` (the reference behaviour).
//!
//! A group's bindings are its candidate's parameters spread over the group's lanes (each
//! restart's values repeated over its data points), the data columns tiled over restarts, and
//! the shared inputs. The engine walks the program once over all the group's lanes, running the
//! numeric kernels inline and recording the tape, and the group's backward pass follows in the
//! same task, while its values are still in cache (as after a replay: one parallel pass per
//! step instead of two). Groups are walked in parallel (rayon); one group's walk is sequential,
//! so its numbers do not depend on the thread count.

use crate::machine::{Machine, bind, locate};
use crate::profile::{Counters, Profile, Stage, StageTimer};
use crate::resources::StopSignal;
use crate::stages::backward::differentiate;
use crate::stages::pacing::Piped;
use bevy_ecs::prelude::*;
use ndvm_bytecode::Executable;
use ndvm_components::prelude::*;
use ndvm_engine::prelude::*;
use rayon::prelude::*;
use std::time::{Duration, Instant};

pub fn walk<R: Real>(
    mut profile: ResMut<Profile>,
    stop: Res<StopSignal>,
    settings: Res<crate::resources::FitSettings>,
    candidates: Query<(&Candidate, &FitSpec, &ParamValues, &Compiled, &Status), Without<Piped>>,
    mut groups: Query<(&LaneGroup, &Route, &mut Machine<R>, &mut GroupOutputs)>,
) {
    let timer = StageTimer::start(Stage::Walk);
    let mut todo: Vec<_> = groups
        .iter_mut()
        .filter(|(_, route, ..)| **route == Route::Walk)
        .filter(|(g, ..)| {
            candidates
                .get(g.candidate)
                .is_ok_and(|c| *c.4 == Status::Active)
        })
        .collect();
    let candidates = &candidates;
    let payload = settings.payload_bytes;
    // Each group: whether it was walked and differentiated, its tape nodes, and the time its
    // walk and its backward pass took.
    let done: Vec<Walked> = todo
        .par_iter_mut()
        .map(|(group, _, machine, out)| {
            let Ok((cand, spec, values, compiled, _)) = candidates.get(group.candidate) else {
                return Walked::default();
            };
            let inputs = Inputs {
                spec,
                values,
                exe: &compiled.0,
                src: &cand.source,
            };
            walk_differentiate(group, machine, out, &inputs, &stop.0, payload)
        })
        .collect();
    let mut times = [Duration::ZERO; 2];
    for w in done {
        w.count(&mut profile.counters);
        times = [times[0] + w.times[0], times[1] + w.times[1]];
    }
    profile.record_shared(timer, Stage::Backward, (times[0], times[1]));
}

/// What a group's walk needs of its candidate.
pub(crate) struct Inputs<'a> {
    pub spec: &'a FitSpec,
    pub values: &'a ParamValues,
    pub exe: &'a Executable,
    pub src: &'a str,
}

/// One group's walk and backward pass: whether each ran, the tape nodes, the lanes walked, and
/// the time each took.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub ran: [bool; 2],
    pub tape_nodes: u64,
    pub lanes: u64,
    pub times: [Duration; 2],
}

impl Walked {
    pub fn count(&self, c: &mut Counters) {
        c.walks += u64::from(self.ran[0]);
        c.backward_passes += u64::from(self.ran[1]);
        c.tape_nodes += self.tape_nodes;
        c.lanes += self.lanes;
    }
}

/// Walks one group with its candidate's current parameters and runs its backward pass right
/// after, while its values are still in cache (one parallel task for both). Shared by this
/// stage and the pipelined steps (`stages::pipeline`).
pub(crate) fn walk_differentiate<R: Real>(
    group: &LaneGroup,
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    inputs: &Inputs<'_>,
    stop: &Stop,
    payload: Option<u64>,
) -> Walked {
    let start = Instant::now();
    machine.bindings = bind(&group.lanes, inputs.spec, inputs.values);
    machine.walked.clone_from(&group.lanes);
    machine.walks += 1;
    machine.vm.stop.clone_from(stop);
    if let Some(bytes) = payload {
        machine.vm.limits.payload_bytes = bytes;
    }
    let lanes = group.lanes.len();
    walk_group(machine, out, inputs.exe, inputs.src, lanes);
    let walked = start.elapsed();
    let ran = machine.result.is_some();
    differentiate(group, machine, out, inputs.spec);
    Walked {
        ran: [true, ran],
        tape_nodes: out.tape_nodes,
        lanes: lanes as u64,
        times: [walked, start.elapsed() - walked],
    }
}

/// Walks one group, leaving its result in the machine and its per-lane outputs in `out`.
fn walk_group<R: Real>(
    machine: &mut Machine<R>,
    out: &mut GroupOutputs,
    exe: &Executable,
    src: &str,
    lanes: usize,
) {
    out.error = None;
    out.replayed = false;
    machine.result = None;
    let m = &mut *machine;
    match exe.run(&mut m.vm, &mut m.runner, &m.bindings, true) {
        Ok(v) => match machine.numbers(v) {
            Some(xs) => {
                out.out = xs;
                machine.result = Some(v);
            }
            None => {
                out.out = vec![f64::NAN; lanes];
                out.error = Some(format!(
                    "the program returned `{}`, not a number",
                    machine.vm.render(exe.program(), v, 0)
                ));
            }
        },
        Err(e) => {
            out.out = vec![f64::NAN; lanes];
            out.error = Some(locate(&e, src));
        }
    }
    out.tape_nodes = machine.vm.stats().tape_nodes;
}

#[cfg(test)]
mod tests {
    use crate::machine::fill_restarts;

    /// Consecutive lanes (filled by runs) and split ones (lane by lane) both give each lane its
    /// restart's value.
    #[test]
    fn each_lane_gets_its_restarts_value() {
        let per_restart = [1.5, -2.0, 3.25, 7.0];
        for points in [1, 3, 5] {
            let all: Vec<usize> = (0..points * per_restart.len()).collect();
            let mut cases: Vec<Vec<usize>> = Vec::new();
            for first in 0..all.len() {
                for last in first..all.len() {
                    cases.push(all[first..=last].to_vec());
                }
            }
            // Split groups: every other lane, and a gap in the middle.
            cases.push(all.iter().copied().step_by(2).collect());
            cases.push(all.iter().copied().filter(|&l| l != points).collect());
            for lanes in cases {
                let mut xs = vec![f64::NAN; lanes.len()];
                fill_restarts(&mut xs, &lanes, points, &per_restart);
                let want: Vec<f64> = lanes.iter().map(|l| per_restart[l / points]).collect();
                assert_eq!(xs, want, "points {points}, lanes {lanes:?}");
            }
        }
    }
}
