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
use ndvm_components::prelude::*;
use ndvm_engine::value::Value;
use ndvm_engine::{Bindings, Input, Real, Vm};

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
    pub device: Option<OnDevice>,
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

/// Rewrites the parameter values of `bindings` (made by [`bind`] for `lanes`) in place.
#[inline]
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
            fill_restarts(xs, lanes, points, per_restart);
        }
    }
}

#[cfg(feature = "gpu")]
/// A tape on the device and what it runs for (run by `stages::gpu`).
#[derive(Debug)]
pub struct OnDevice {
    /// The machine's walk it came from ([`Machine::walks`]).
    pub(crate) walk: u64,
    pub(crate) tape: ndvm_gpu::DeviceTape,
    /// A broadcast tape's candidate lanes and their inputs (parameters rewritten each step);
    /// `None` for a tape that runs the walked lanes ([`Machine::walked`]) with the walk's own
    /// bindings.
    pub(crate) broadcast: Option<(Vec<usize>, Bindings<f32>)>,
}

/// Writes into `xs[i]` the value of the restart lane `lanes[i]` belongs to (`points` lanes per
/// restart). Lanes ascend, so each restart's lanes are one run.
#[inline]
pub(crate) fn fill_restarts<R: Real>(
    xs: &mut [R],
    lanes: &[usize],
    points: usize,
    per_restart: &[f64],
) {
    let n = xs.len().min(lanes.len());
    if n > 0 && lanes[n - 1] - lanes[0] == n - 1 {
        // Consecutive lanes (a group as cut, not split): each run is known without reading
        // the lanes, which are often out of cache by the next step (the loop below, reading a
        // lane beside each store, was 7% of a search's one-thread time).
        let (mut at, first) = (0, lanes[0]);
        while at < n {
            let r = (first + at) / points;
            let run = ((r + 1) * points - first).min(n) - at;
            xs[at..at + run].fill(R::from_f64(per_restart[r]));
            at += run;
        }
        return;
    }
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
