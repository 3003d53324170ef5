//! GPU: replay a lane group's tape on the device (docs/gpu.md).
//!
//! **Wide groups, one walked lane.** While a device is in use the schedule cuts a candidate's
//! lanes into groups as wide as the population ([`GPU_LANES_PER_GROUP`]). This stage walks
//! **one** lane of such a group on the CPU (its first), uploads that lane's tape once as a
//! broadcast tape, and from then on every step sends each lane's parameters up and runs the
//! forward pass, every guard and the backward pass for all the group's lanes at once in one
//! fixed WGSL interpreter; the result, the gradient rows and the guard flags come back. Lanes
//! never mix, so one lane's walk stands for every lane whose guards hold; a lane whose guard
//! fails leaves the group exactly as in the replay stage — a new group of the CPU's width,
//! walked on the CPU this step, whose own (full-width) tape the device then replays. The
//! group's outputs and gradients are in when this stage ends ([`Route::Device`]); the replay,
//! walk and backward stages skip it. So the CPU never walks the population at its full width,
//! and its payload does not bound the device's groups.
//!
//! Which groups: with `device: Gpu` every group the device can run; with `Auto` those the cost
//! model ([`CostModel::wins`]) picks, on a hardware GPU only, judged on the group's first lane
//! walked on the CPU — and the device is opened only when the first group goes to it
//! ([`GpuContext::adapter`]). A candidate the device cannot run (a custom primitive, a node
//! longer than a software adapter runs, a result that is not one number) or that `auto`
//! declines is marked [`OnHost`]: its group is cut to the CPU's width at once, its other groups
//! in the next run, and from then on it stays on the CPU, in the pipeline's tasks when the fit
//! has them ([`Piped`]). A device that fails mid-fit (lost, out of memory) is reported once,
//! every group is the CPU's from then on (cut to its width), and the fit goes on on the CPU:
//! every result so far stands. Groups run one after another (the device is one queue).

mod cost;
mod tape;

pub use cost::CostModel;

use crate::device::DeviceUsed;
use crate::machine::{Machine, positions};
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::{DeviceWidth, FitSettings, StopSignal};
use crate::stages::pacing::{Pacing, Piped};
use crate::stages::replay::split_off;
use crate::stages::schedule::OnHost;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_components::scene::{Device, Precision};
use ndvm_engine::tape::GuardKind;
use ndvm_gpu::{Adapter, DeviceRun, Gpu};
use std::sync::Arc;
use std::time::Instant;
use tape::Verdict;

/// Lanes per group while a device replays them: one lane of a group is walked on the CPU and
/// the device replays them all (a broadcast tape), so groups are as wide as the population, up
/// to this. The device's payload is 8 bytes per slot per lane (primal and adjoint): 34 GB for
/// the 8-D Kalman filter at this width, which the device then runs in slices
/// ([`ndvm_gpu::Gpu::resident_bytes`]).
pub const GPU_LANES_PER_GROUP: usize = 65_536;

/// The fit's device, if any, and what happened to it.
#[derive(Resource, Debug, Default)]
pub struct GpuContext {
    /// The device, once open.
    pub gpu: Option<Arc<Gpu>>,
    /// Under `Auto`, a hardware adapter found but not opened yet: it opens when the cost
    /// model first sends it a group (opening compiles the interpreter's per-lane entry).
    pub adapter: Option<Adapter>,
    pub device: Device,
    /// What `Auto` decides with.
    pub model: CostModel,
    /// Why the device stopped being used mid-fit.
    pub lost: Option<String>,
    /// Seconds `Gpu` took to open the device before the fit started.
    pub open_s: f64,
}

impl GpuContext {
    /// Whether a device serves the fit, or may (`Auto`, not opened yet): its GPU stage runs
    /// and its candidates step at that stage's pace.
    pub fn in_use(&self) -> bool {
        self.gpu.is_some() || self.adapter.is_some()
    }

    /// Opens the adapter `Auto` found, now that a group goes to it.
    fn open(&mut self, profile: &mut Profile) -> Result<Arc<Gpu>, String> {
        let (gpu, open_s) = shared_timed().map_err(|e| format!("could not open it: {e}"))?;
        profile.device.open_s = open_s;
        self.adapter = None;
        self.gpu = Some(gpu.clone());
        profile.used = DeviceUsed::gpu(gpu.describe(), gpu.is_software());
        Ok(gpu)
    }
}

/// The process's device ([`Gpu::shared`]) and the seconds this call took to get it: the
/// opening, for the first fit that uses it.
fn shared_timed() -> Result<(Arc<Gpu>, f64), ndvm_gpu::GpuError> {
    let start = Instant::now();
    let gpu = Gpu::shared()?;
    Ok((gpu, start.elapsed().as_secs_f64()))
}

/// The device a fit uses: `Gpu` opens one (and must run f32); `Auto` looks for a hardware
/// adapter (or one the model allows) for an f32 fit whose widest candidate could go to it, and
/// leaves it closed until a group does; `Cpu`, none.
pub fn open(
    device: Device,
    precision: Precision,
    widest: usize,
    model: CostModel,
) -> Result<GpuContext, String> {
    let mut ctx = GpuContext {
        device,
        model,
        ..GpuContext::default()
    };
    match device {
        Device::Cpu => {}
        Device::Gpu => {
            if precision != Precision::F32 {
                return Err(
                    "the GPU computes in f32: set `precision: Some(F32)` in the scene \
                            (or run with `--device cpu`)"
                        .into(),
                );
            }
            let (gpu, open_s) = shared_timed().map_err(|e| format!("--device gpu: {e}"))?;
            (ctx.gpu, ctx.open_s) = (Some(gpu), open_s);
        }
        Device::Auto if precision == Precision::F32 && model.could_win(widest) => {
            ctx.adapter = Gpu::probe().ok().filter(|a| model.software || !a.software);
        }
        Device::Auto => {}
    }
    Ok(ctx)
}

type Group<'a> = (
    &'a mut LaneGroup,
    &'a mut Route,
    &'a mut Machine<f32>,
    &'a mut GroupOutputs,
);

type Owner<'a> = (
    Entity,
    &'a FitSpec,
    &'a ParamValues,
    &'a Compiled,
    &'a Status,
    &'a mut Groups,
    Has<OnHost>,
    Has<Piped>,
);

/// What the stage reads besides the world's groups.
#[derive(bevy_ecs::system::SystemParam, Debug)]
pub struct Context<'w> {
    settings: Res<'w, FitSettings>,
    stop: Res<'w, StopSignal>,
    width: ResMut<'w, DeviceWidth>,
    pacing: ResMut<'w, Pacing>,
    ctx: ResMut<'w, GpuContext>,
    profile: ResMut<'w, Profile>,
}

pub fn gpu(
    mut commands: Commands,
    mut cx: Context,
    mut candidates: Query<Owner<'static>>,
    mut groups: Query<Group<'static>>,
) {
    if !cx.ctx.in_use() {
        return;
    }
    let timer = StageTimer::start(Stage::Gpu);
    let host = cx.settings.lanes_per_group.max(1);
    // `Auto` judges each tape by its cost model; `Gpu` takes every tape it can run.
    let model = (cx.ctx.device != Device::Gpu).then_some(cx.ctx.model);
    // A candidate left on the CPU takes its steps in the pipeline's tasks, if the fit has one.
    let piped = cx.settings.pipelined();
    for (mut group, mut route, mut machine, mut out) in &mut groups {
        if *route == Route::Device {
            *route = Route::Walk;
        }
        let Ok((_, spec, values, compiled, status, _, on_host, is_piped)) =
            candidates.get(group.candidate)
        else {
            continue;
        };
        if *status != Status::Active || cx.settings.walk_every_step {
            continue;
        }
        if on_host {
            // Declined last run (this run the stage systems stepped it, its declined group cut):
            // from now on its groups are the CPU's width, and the pipeline steps it.
            if piped && !is_piped {
                commands.entity(group.candidate).insert(Piped);
            }
            let rest = cut_to(&mut group, host);
            cx.profile.counters.groups +=
                spawn_all(&mut commands, &mut candidates, group.candidate, rest, host);
            continue;
        }
        let walk = tape::Walk {
            spec,
            values,
            exe: &compiled.0,
            stop: &cx.stop.0,
            payload: cx.settings.payload_bytes,
        };
        let m = &mut *machine;
        let verdict = if let Some(gpu) = cx.ctx.gpu.clone() {
            tape::run(
                &gpu,
                model.as_ref(),
                m,
                (&group, false),
                &walk,
                &mut cx.profile,
            )
        } else if let (Some(adapter), Some(model)) = (cx.ctx.adapter.clone(), model) {
            // `Auto` with the device still closed: it opens for the first group it would win.
            match tape::judge(&adapter, &model, m, &group, &walk, &mut cx.profile) {
                Ok(()) => match cx.ctx.open(&mut cx.profile) {
                    Ok(gpu) => {
                        let judged = (&*group, true);
                        tape::run(&gpu, Some(&model), m, judged, &walk, &mut cx.profile)
                    }
                    Err(e) => Verdict::Lost(e),
                },
                Err(v) => v,
            }
        } else {
            continue;
        };
        let run = match verdict {
            Verdict::Ran(run) => run,
            Verdict::Cpu | Verdict::Never => {
                if matches!(verdict, Verdict::Never) {
                    commands.entity(group.candidate).insert(OnHost);
                }
                let rest = cut_to(&mut group, host);
                cx.profile.counters.groups +=
                    spawn_all(&mut commands, &mut candidates, group.candidate, rest, host);
                continue;
            }
            Verdict::Lost(e) => {
                if let Some(a) = cx.ctx.adapter.take() {
                    // The device did not open.
                    cx.profile.used = DeviceUsed::gpu(a.name, a.software);
                }
                cx.ctx.lost = Some(e);
                break;
            }
        };
        let lanes = m
            .device
            .as_ref()
            .map_or(&m.walked[..], |d| d.lanes(&m.walked));
        let failed = take_outputs(&mut group, &mut out, lanes, &run, spec.params.len());
        *route = Route::Device;
        m.result = None;
        out.tape_nodes = m.vm.tape().nodes.len() as u64;
        let c = &mut cx.profile.counters;
        c.replays += 1;
        c.backward_passes += 1;
        c.replayed_lanes += group.lanes.len() as u64;
        if !failed.is_empty() {
            for (kind, k) in &run.failures {
                match kind {
                    GuardKind::Compare => c.guard_failures.comparison += u64::from(*k),
                    GuardKind::Index => c.guard_failures.index += u64::from(*k),
                }
            }
            c.rewalked_lanes += failed.len() as u64;
            c.groups += spawn_all(
                &mut commands,
                &mut candidates,
                group.candidate,
                failed,
                host,
            );
        }
    }
    if cx.ctx.lost.is_some() {
        // The CPU takes over: no group may stay wider than it walks, and every group is the
        // CPU's to evaluate — this run too, one the device served before it failed (or in the
        // last run, after the failing group in this one) included. In a fit that pipes, the
        // pipeline steps every candidate from now on.
        cx.width.0 = None;
        for (mut group, mut route, ..) in &mut groups {
            *route = Route::Walk;
            let rest = cut_to(&mut group, host);
            cx.profile.counters.groups +=
                spawn_all(&mut commands, &mut candidates, group.candidate, rest, host);
        }
        if piped {
            for (entity, .., is_piped) in &candidates {
                if !is_piped {
                    commands.entity(entity).insert(Piped);
                }
            }
        }
        *cx.pacing = Pacing::all_piped(&cx.settings);
        cx.ctx.gpu = None;
        cx.profile.used.lost.clone_from(&cx.ctx.lost);
    }
    cx.profile.record(timer);
}

/// Takes the run's values for the group's lanes (`lanes`: the lanes the tape ran, a superset)
/// into `out`, dropping from the group the lanes whose guards failed; returns those.
fn take_outputs(
    group: &mut LaneGroup,
    out: &mut GroupOutputs,
    lanes: &[usize],
    run: &DeviceRun,
    params: usize,
) -> Vec<usize> {
    // The group's lanes whose guards failed (lanes split off earlier may fail too).
    let failed: Vec<usize> = run
        .failed
        .iter()
        .map(|&c| lanes[c as usize])
        .filter(|l| group.lanes.binary_search(l).is_ok())
        .collect();
    group.lanes.retain(|l| failed.binary_search(l).is_err());
    let cols = positions(lanes, &group.lanes);
    out.out = cols.iter().map(|&c| f64::from(run.result[c])).collect();
    let n = group.lanes.len();
    out.grads.clear();
    out.grads.resize(params * n, 0.0);
    for p in 0..params {
        let Some(g) = run.grads.get(p).filter(|g| !g.is_empty()) else {
            continue;
        };
        for (o, &c) in out.grads[p * n..(p + 1) * n].iter_mut().zip(&cols) {
            *o = f64::from(g[c]);
        }
    }
    out.error = None;
    out.replayed = true;
    failed
}

/// Keeps the group's first `width` lanes; returns the others.
fn cut_to(group: &mut LaneGroup, width: usize) -> Vec<usize> {
    if group.lanes.len() <= width {
        return Vec::new();
    }
    group.lanes.split_off(width)
}

/// New groups of at most `width` of `candidate`'s `lanes` each, walked on the CPU this step;
/// how many.
fn spawn_all(
    commands: &mut Commands,
    candidates: &mut Query<Owner<'static>>,
    candidate: Entity,
    lanes: Vec<usize>,
    width: usize,
) -> u64 {
    for chunk in lanes.chunks(width) {
        let id = split_off::<f32>(commands, candidate, chunk.to_vec());
        if let Ok((.., mut ids, _, _)) = candidates.get_mut(candidate) {
            ids.0.push(id);
        }
    }
    lanes.len().div_ceil(width) as u64
}
