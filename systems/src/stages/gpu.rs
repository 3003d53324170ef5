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
//! model ([`wins`]) picks, on a hardware GPU only. A candidate the device cannot run (a custom
//! primitive, a node longer than a software adapter runs, a result that is not one number) or
//! that `auto` declines is marked [`OnHost`]: its group is cut to the CPU's width at once and it
//! stays on the CPU. A device that fails mid-fit (lost, out of memory) is reported once, every
//! wide group is cut to the CPU's width, and the fit goes on on the CPU: every result so far
//! stands. Groups run one after another (the device is one queue).

mod tape;

pub use tape::OnDevice;

use crate::machine::{Machine, positions};
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::{DeviceWidth, FitSettings, StopSignal};
use crate::stages::replay::split_off;
use crate::stages::schedule::OnHost;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_components::scene::{Device, Precision};
use ndvm_engine::tape::GuardKind;
use ndvm_gpu::{DeviceRun, Gpu};
use std::sync::Arc;
use tape::Verdict;

/// Lanes per group while a device replays them: one lane of a group is walked on the CPU and
/// the device replays them all (a broadcast tape), so groups are as wide as the population, up
/// to this. The device's payload is 8 bytes per slot per lane (primal and adjoint): 34 GB for
/// the 8-D Kalman filter at this width, which the device then runs in slices
/// ([`ndvm_gpu::Gpu::resident_bytes`]).
pub const GPU_LANES_PER_GROUP: usize = 65_536;

/// Tape work ([`ndvm_gpu::tape_work`], multiply-adds) one CPU core replays and differentiates
/// per second. Fitted to the Kalman sweep on a 16-core Xeon host (docs/gpu.md, "Measured"):
/// 11–22 × 10⁹ per second on its 16 cores, the faster end taken so the CPU is never
/// underestimated.
pub const CPU_WORK_PER_CORE_S: f64 = 1.4e9;

/// Tape work the device runs per second with the faster entry for the tape, on the sweep's
/// slowest row (an H200: 42 × 10⁹ at D = 8 on the lane entry; 46–68 × 10⁹ cooperating at
/// D = 16 and 32, and over 150 × 10⁹ at D = 2): the model's device is never faster than that.
pub const GPU_WORK_S: f64 = 4.0e10;

/// A device run's fixed cost, seconds: the rows' upload, the dispatches, the read-back. A
/// 65,536-lane run of the D = 2 filter took 7.1 ms on the H200, work included.
pub const GPU_RUN_S: f64 = 0.002;

/// Lanes a group needs for the device's rate to hold: fewer leave it idle, and a lane's steps
/// run one after another at a GPU core's speed, far below a CPU core's.
pub const GPU_MIN_LANES: usize = 256;

/// The cost model of `Auto` (docs/gpu.md): a group of `lanes` lanes whose tape has `work`
/// multiply-adds per lane goes to the device when the device's estimate (a fixed cost per run
/// and its rate) beats the CPU's on `cores` cores; never on a software adapter.
pub fn wins(lanes: usize, work: u64, software: bool, cores: usize) -> bool {
    let total = lanes as f64 * work as f64;
    let cpu_s = total / (CPU_WORK_PER_CORE_S * cores.max(1) as f64);
    let gpu_s = GPU_RUN_S + total / GPU_WORK_S;
    !software && lanes >= GPU_MIN_LANES && cpu_s > gpu_s
}

/// Lanes from which `auto` opens a device at all. Opening one costs a fixed time, and a fit
/// with a device steps a step at a time (the GPU stage's pace) even for the candidates the
/// device declines, so a population too small to use it must not open it. The model ([`wins`])
/// would send a D = 32 Kalman filter to the device from 256 lanes; this gate, judged before any
/// tape exists, keeps such a fit of fewer than 2,048 lanes on the CPU (docs/gpu.md).
pub const AUTO_OPENS_FROM: usize = 2048;

/// The fit's device, if any, and what happened to it.
#[derive(Resource, Debug, Default)]
pub struct GpuContext {
    pub gpu: Option<Arc<Gpu>>,
    pub device: Device,
    /// Why the device stopped being used mid-fit.
    pub lost: Option<String>,
}

/// The device a fit uses: `Gpu` must find one (and run f32); `Auto` takes a hardware GPU for
/// an f32 fit with a population wide enough to use it; `Cpu`, none.
pub fn open(device: Device, precision: Precision, widest: usize) -> Result<GpuContext, String> {
    let gpu = match device {
        Device::Cpu => None,
        Device::Gpu => {
            if precision != Precision::F32 {
                return Err(
                    "the GPU computes in f32: set `precision: Some(F32)` in the scene \
                            (or run with `--device cpu`)"
                        .into(),
                );
            }
            Some(Gpu::shared().map_err(|e| format!("--device gpu: {e}"))?)
        }
        Device::Auto if precision == Precision::F32 && widest >= AUTO_OPENS_FROM => {
            Gpu::shared().ok().filter(|g| !g.is_software())
        }
        Device::Auto => None,
    };
    Ok(GpuContext {
        gpu,
        device,
        lost: None,
    })
}

type Group<'a> = (
    &'a mut LaneGroup,
    &'a mut Route,
    &'a mut Machine<f32>,
    &'a mut GroupOutputs,
);

type Owner<'a> = (
    &'a FitSpec,
    &'a ParamValues,
    &'a Compiled,
    &'a Status,
    &'a mut Groups,
    Has<OnHost>,
);

/// What the stage reads besides the world's groups.
#[derive(bevy_ecs::system::SystemParam, Debug)]
pub struct Context<'w> {
    settings: Res<'w, FitSettings>,
    stop: Res<'w, StopSignal>,
    width: ResMut<'w, DeviceWidth>,
    ctx: ResMut<'w, GpuContext>,
    profile: ResMut<'w, Profile>,
}

pub fn gpu(
    mut commands: Commands,
    mut cx: Context,
    mut candidates: Query<Owner<'static>>,
    mut groups: Query<Group<'static>>,
) {
    let Some(gpu) = cx.ctx.gpu.clone() else {
        return;
    };
    let timer = StageTimer::start(Stage::Gpu);
    let host = cx.settings.lanes_per_group.max(1);
    let auto = cx.ctx.device != Device::Gpu;
    for (mut group, mut route, mut machine, mut out) in &mut groups {
        if *route == Route::Device {
            *route = Route::Walk;
        }
        let Ok((spec, values, compiled, status, _, on_host)) = candidates.get(group.candidate)
        else {
            continue;
        };
        if *status != Status::Active || cx.settings.walk_every_step || on_host {
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
        let verdict = tape::run(&gpu, auto, m, &group, &walk, &mut cx.profile);
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
        // The CPU takes over: no group may stay wider than it walks. A wide group the device
        // served before it failed is evaluated again on the CPU, at the CPU's width.
        cx.width.0 = None;
        for (mut group, mut route, ..) in &mut groups {
            let rest = cut_to(&mut group, host);
            if !rest.is_empty() {
                *route = Route::Walk;
            }
            cx.profile.counters.groups +=
                spawn_all(&mut commands, &mut candidates, group.candidate, rest, host);
        }
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
        if let Ok((.., mut ids, _)) = candidates.get_mut(candidate) {
            ids.0.push(id);
        }
    }
    lanes.len().div_ceil(width) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep's rows as measured on an H200 beside its host's 16 cores (docs/gpu.md,
    /// "Measured"): D, lanes, the tape's work per lane (`ndvm_gpu::tape_work` of the bench's
    /// filter), the CPU's and the faster device entry's milliseconds.
    const ROWS: [(usize, usize, u64, f64, f64); 7] = [
        (2, 1_024, 17_124, 0.96, 20.6),
        (2, 65_536, 17_124, 50.1, 7.1),
        (8, 16_384, 500_964, 733.0, 197.0),
        (8, 65_536, 500_964, 5_367.0, 789.0),
        (16, 4_096, 3_619_044, 1_010.0, 321.0),
        (32, 1_024, 27_549_924, 1_290.0, 414.0),
        (32, 4_096, 27_549_924, 7_290.0, 1_650.0),
    ];

    #[test]
    fn auto_picks_the_faster_side_on_every_measured_row() {
        for (d, lanes, work, cpu_ms, gpu_ms) in ROWS {
            assert_eq!(
                wins(lanes, work, false, 16),
                gpu_ms < cpu_ms,
                "D = {d}, {lanes} lanes"
            );
            assert!(!wins(lanes, work, true, 16), "never on a software adapter");
        }
    }

    #[test]
    fn more_cores_raise_the_bar() {
        // The D = 2 filter on 65,536 lanes: the device's fixed cost is won back against 16
        // cores, not against 256.
        assert!(wins(65_536, 17_124, false, 16));
        assert!(!wins(65_536, 17_124, false, 256));
        // Too few lanes never go, however long the tape: one lane of the D = 32 filter.
        assert!(!wins(1, 27_549_924, false, 1));
        assert!(wins(GPU_MIN_LANES, 27_549_924, false, 1));
    }
}
