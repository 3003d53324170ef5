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

use crate::machine::{Machine, locate};
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::StopSignal;
use crate::stages::backward::differentiate;
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
    candidates: Query<(&Candidate, &FitSpec, &ParamValues, &Compiled, &Status)>,
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
    let done: Vec<([bool; 2], u64, [Duration; 2])> = todo
        .par_iter_mut()
        .map(|(group, _, machine, out)| {
            let Ok((cand, spec, values, compiled, _)) = candidates.get(group.candidate) else {
                return ([false; 2], 0, [Duration::ZERO; 2]);
            };
            let start = Instant::now();
            machine.bindings = bind(&group.lanes, spec, values);
            machine.walked.clone_from(&group.lanes);
            machine.walks += 1;
            machine.vm.stop.clone_from(&stop.0);
            if let Some(bytes) = payload {
                machine.vm.limits.payload_bytes = bytes;
            }
            walk_group(machine, out, &compiled.0, &cand.source, group.lanes.len());
            let walked = start.elapsed();
            // The backward pass right after the walk, as after a replay: one parallel pass.
            let ran = machine.result.is_some();
            differentiate(group, machine, out, spec);
            (
                [true, ran],
                out.tape_nodes,
                [walked, start.elapsed() - walked],
            )
        })
        .collect();
    let mut times = [Duration::ZERO; 2];
    for ([walked, differentiated], nodes, [w, b]) in done {
        profile.counters.walks += u64::from(walked);
        profile.counters.backward_passes += u64::from(differentiated);
        profile.counters.tape_nodes += nodes;
        times = [times[0] + w, times[1] + b];
    }
    profile.counters.lanes += todo.iter().map(|(g, ..)| g.lanes.len() as u64).sum::<u64>();
    profile.record_shared(timer, Stage::Backward, (times[0], times[1]));
}

/// Rewrites the parameter values of `bindings` (made by [`bind`] for `lanes`) in place.
pub fn update_params<R: Real>(
    bindings: &mut Bindings<R>,
    lanes: &[usize],
    spec: &FitSpec,
    values: &ParamValues,
) {
    let points = spec.points().max(1);
    for (p, item) in bindings
        .items
        .iter_mut()
        .take(spec.params.len())
        .enumerate()
    {
        let per_restart = &values.0[p * spec.restarts..(p + 1) * spec.restarts];
        if let Input::Lanes(xs) = &mut item.value {
            // Lanes ascend, so each restart's lanes are one run: no division per lane.
            let (mut x, mut end) = (R::zero(), 0);
            for (slot, &l) in xs.iter_mut().zip(lanes) {
                if l >= end {
                    let r = l / points;
                    x = R::from_f64(per_restart[r]);
                    end = (r + 1) * points;
                }
                *slot = x;
            }
        }
    }
}

/// The inputs of a candidate's `lanes` (the parameters first, in order).
pub fn bind<R: Real>(lanes: &[usize], spec: &FitSpec, values: &ParamValues) -> Bindings<R> {
    let points = spec.points();
    let mut b = Bindings::new();
    for name in &spec.params {
        b.lanes(name, vec![R::zero(); lanes.len()]);
    }
    update_params(&mut b, lanes, spec, values);
    if let Some(data) = &spec.data {
        for (name, column) in &data.inputs {
            let xs = lanes.iter().map(|l| R::from_f64(column[l % points]));
            b.lane_data(name, xs.collect());
        }
    }
    for (name, x) in &spec.shared.numbers {
        b.constant(name, R::from_f64(*x));
    }
    for m in &spec.shared.matrices {
        let data = m.data.iter().map(|&x| R::from_f64(x)).collect();
        b.matrix(&m.name, m.rows, m.cols, data);
    }
    b
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
