//! GPU: replay a lane group's tape on the device (docs/gpu.md).
//!
//! A group whose last walk recorded a tape can replay it on the GPU instead of the CPU: its
//! tape is uploaded once per walk (instructions, lane sets and leaf rows), and each step the
//! new parameter rows go up, one fixed WGSL interpreter runs the forward pass, every guard and
//! the backward pass for all the group's lanes at once, and the result, the gradient rows and
//! the guard flags come back. A lane whose guard failed leaves the group exactly as in the
//! replay stage (a new group, walked this step). The group's outputs and gradients are in
//! when this stage ends ([`Route::Device`]); the replay and backward stages skip it.
//!
//! Which groups: with `device: Gpu` every group the device can run (a custom primitive keeps a
//! group on the CPU); with `Auto` those the cost model ([`wins`]) picks, on a hardware GPU only.
//! A device that fails mid-fit (lost, out of memory) is reported once and the fit goes on on the
//! CPU: every result so far stands. Groups run one after another (the device is one queue).

use crate::machine::Machine;
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::FitSettings;
use crate::stages::replay::split_off;
use crate::stages::walk::update_params;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_components::scene::{Device, Precision};
use ndvm_engine::tape::GuardKind;
use ndvm_gpu::{Gpu, GpuError};
use std::sync::Arc;

/// Lanes per group when the GPU runs them: the device wants wide groups, and each group is
/// first walked on the CPU at its full width (the walk's payload bounds it: an 8-D Kalman
/// filter holds ~270 MB at 1,024 lanes).
pub const GPU_LANES_PER_GROUP: usize = 1024;

/// The cost model of `Auto` (docs/gpu.md): the device wins when the group is wide and its tape
/// long enough that the per-run overhead (uploading rows, a few dispatches, reading back) is
/// small beside the work, and never on a software adapter.
pub fn wins(lanes: usize, nodes: usize, software: bool) -> bool {
    !software && lanes >= 2048 && lanes.saturating_mul(nodes.max(1)) >= 1 << 22
}

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
        Device::Auto if precision == Precision::F32 && widest >= 2048 => {
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

type OnDevice<'a> = (
    &'a mut LaneGroup,
    &'a mut Route,
    &'a mut Machine<f32>,
    &'a mut GroupOutputs,
);

pub fn gpu(
    mut commands: Commands,
    settings: Res<FitSettings>,
    mut ctx: ResMut<GpuContext>,
    mut profile: ResMut<Profile>,
    mut candidates: Query<(&FitSpec, &ParamValues, &Compiled, &Status, &mut Groups)>,
    mut groups: Query<OnDevice<'static>>,
) {
    let Some(gpu) = ctx.gpu.clone() else { return };
    let timer = StageTimer::start(Stage::Gpu);
    for (mut group, mut route, mut machine, mut out) in &mut groups {
        if *route == Route::Device {
            *route = Route::Walk;
        }
        let Ok((spec, values, compiled, status, _)) = candidates.get(group.candidate) else {
            continue;
        };
        let m = &mut *machine;
        let wanted = *status == Status::Active
            && !settings.walk_every_step
            && m.vm.can_replay()
            && group.lanes.len() * 2 >= m.walked.len()
            && (ctx.device == Device::Gpu
                || wins(m.walked.len(), m.vm.tape().nodes.len(), gpu.is_software()));
        if !wanted {
            continue;
        }
        update_params(&mut m.bindings, &m.walked, spec, values);
        // A stale tape: the replay stage sees nothing to replay and the group walks.
        if m.vm.rebind(compiled.0.program(), &m.bindings).is_err() {
            continue;
        }
        let Some(rec) = m.vm.recording() else {
            continue;
        };
        if rec.result.len() != 1 {
            continue;
        }
        if m.device.as_ref().is_none_or(|(w, _)| *w != m.walks) {
            m.device = None;
            match gpu.upload(&rec) {
                Ok(t) => m.device = Some((m.walks, t)),
                Err(GpuError::Unsupported(_)) => continue,
                Err(e) => {
                    ctx.lost = Some(e.to_string());
                    break;
                }
            }
            profile.device.uploads += 1;
        }
        let Some((_, tape)) = m.device.as_mut() else {
            continue;
        };
        let run = match tape.run(&gpu, &rec, true) {
            Ok(run) => run,
            Err(GpuError::Unsupported(_)) => continue,
            Err(e) => {
                ctx.lost = Some(e.to_string());
                break;
            }
        };
        let t = tape.timings;
        let d = &mut profile.device;
        d.runs += 1;
        d.lanes += m.walked.len() as u64;
        d.upload_s += t.upload.as_secs_f64();
        d.kernel_s += t.kernel.as_secs_f64();
        d.download_s += t.download.as_secs_f64();
        // The group's lanes whose guards failed (lanes split off earlier may fail too).
        let failed: Vec<usize> = run
            .failed
            .iter()
            .map(|&c| m.walked[c as usize])
            .filter(|l| group.lanes.binary_search(l).is_ok())
            .collect();
        if failed.len() == group.lanes.len() {
            // Every lane changed path: the replay stage finds out again and the group walks.
            continue;
        }
        group.lanes.retain(|l| failed.binary_search(l).is_err());
        let cols = m.columns(&group.lanes);
        out.out = cols.iter().map(|&c| f64::from(run.result[c])).collect();
        let n = group.lanes.len();
        out.grads.clear();
        out.grads.resize(spec.params.len() * n, 0.0);
        for p in 0..spec.params.len() {
            let Some(g) = run.grads.get(p).filter(|g| !g.is_empty()) else {
                continue;
            };
            for (o, &c) in out.grads[p * n..(p + 1) * n].iter_mut().zip(&cols) {
                *o = f64::from(g[c]);
            }
        }
        out.error = None;
        out.replayed = true;
        out.tape_nodes = m.vm.tape().nodes.len() as u64;
        m.result = None;
        *route = Route::Device;
        let c = &mut profile.counters;
        c.replays += 1;
        c.backward_passes += 1;
        c.replayed_lanes += n as u64;
        if !failed.is_empty() {
            for (kind, k) in &run.failures {
                match kind {
                    GuardKind::Compare => c.guard_failures.comparison += u64::from(*k),
                    GuardKind::Index => c.guard_failures.index += u64::from(*k),
                }
            }
            c.rewalked_lanes += failed.len() as u64;
            c.groups += 1;
            let id = split_off::<f32>(&mut commands, group.candidate, failed);
            if let Ok((.., mut ids)) = candidates.get_mut(group.candidate) {
                ids.0.push(id);
            }
        }
    }
    if ctx.lost.is_some() {
        ctx.gpu = None;
        profile.used.lost.clone_from(&ctx.lost);
    }
    profile.record(timer);
}
