//! Which tape a group runs on the device, and running it.
//!
//! A wide group (the schedule's cut) gets a **broadcast** tape: its first lane is walked on the
//! CPU, that one-lane tape is uploaded once to run over all the group's lanes, and each step
//! every lane's inputs go up (the parameters rewritten in place). A group the CPU walked at its
//! width (lanes split off a wide group when their guards failed) has a tape that covers every
//! path of its lanes: that tape is uploaded as it is. Either way a tape is uploaded once per walk
//! and replayed until the group walks again.

use super::CostModel;
use crate::machine::{Machine, OnDevice, bind, update_params};
use crate::profile::Profile;
use ndvm_bytecode::Executable;
use ndvm_components::prelude::*;
use ndvm_engine::prelude::*;
use ndvm_gpu::{Adapter, DeviceRun, Gpu, GpuError, Kernel, Segmenting};

impl OnDevice {
    /// The candidate lanes the tape runs, in the order of its columns.
    pub fn lanes<'a>(&'a self, walked: &'a [usize]) -> &'a [usize] {
        self.broadcast.as_ref().map_or(walked, |(lanes, _)| lanes)
    }
}

/// What a walk of the group needs of its candidate.
pub(super) struct Walk<'a> {
    pub spec: &'a FitSpec,
    pub values: &'a ParamValues,
    pub exe: &'a Executable,
    pub stop: &'a Stop,
    pub payload: Option<u64>,
}

/// What became of a group.
pub(super) enum Verdict {
    /// The device ran it; at least one of the group's lanes held its guards.
    Ran(DeviceRun),
    /// The CPU takes the group this step (an error to report, every lane on another path).
    Cpu,
    /// The device cannot run this candidate (or `auto` declines it): it stays on the CPU.
    Never,
    /// The device failed.
    Lost(String),
}

/// Runs the group on the device: its current tape, or a new one (uploaded here). When every
/// lane of the group fails an older tape's guards, the group's first lane is walked afresh once.
/// `judged`: [`judge`] has just walked the group's first lane, and that tape is uploaded.
pub(super) fn run(
    gpu: &Gpu,
    model: Option<&CostModel>,
    m: &mut Machine<f32>,
    (group, judged): (&LaneGroup, bool),
    walk: &Walk<'_>,
    profile: &mut Profile,
) -> Verdict {
    let n = group.lanes.len();
    let current = m
        .device
        .as_ref()
        .is_some_and(|d| d.walk == m.walks && n * 2 >= d.lanes(&m.walked).len());
    if !current {
        m.device = None;
    }
    // Whether the tape is one lane walked by this call: if it fails, so would another walk.
    let mut walked_now = false;
    for attempt in 0..2 {
        if m.device.is_none() {
            let uploaded = if attempt == 0 && judged {
                walked_now = true;
                upload_one(gpu, model, m, group, walk)
            } else if attempt == 0 && walked_for(m, group) {
                upload_walked(gpu, model, m)
            } else {
                walked_now = true;
                walk_one(m, group, walk, profile)
                    .and_then(|()| upload_one(gpu, model, m, group, walk))
            };
            match uploaded {
                Ok(d) => {
                    let entries = &mut profile.device.entries;
                    *match d.tape.kernel() {
                        Kernel::Cooperative => &mut entries.coop,
                        Kernel::Batched => &mut entries.batched,
                        _ => &mut entries.lane,
                    } += 1;
                    m.device = Some(d);
                }
                Err(v) => return v,
            }
            profile.device.uploads += 1;
        }
        let run = match execute(gpu, m, walk) {
            Ok(run) => run,
            Err(v) => return v,
        };
        let Some(d) = m.device.as_ref() else {
            return Verdict::Cpu;
        };
        let t = d.tape.timings;
        let lanes = d.lanes(&m.walked);
        let p = &mut profile.device;
        p.runs += 1;
        p.lanes += lanes.len() as u64;
        p.upload_s += t.upload.as_secs_f64();
        p.kernel_s += t.kernel.as_secs_f64();
        p.download_s += t.download.as_secs_f64();
        let failed: Vec<usize> = run.failed.iter().map(|&c| lanes[c as usize]).collect();
        if group.lanes.iter().any(|l| failed.binary_search(l).is_err()) {
            return Verdict::Ran(run);
        }
        if walked_now {
            break;
        }
        // Every lane changed path since the tape was walked: walk the first lane again.
        m.device = None;
    }
    Verdict::Cpu
}

/// Whether the machine's last walk was the CPU's, of (at most twice) the group's lanes: its
/// tape covers every path they take.
fn walked_for(m: &Machine<f32>, group: &LaneGroup) -> bool {
    let n = group.lanes.len();
    m.vm.can_replay() && n <= m.walked.len() && n * 2 >= m.walked.len()
}

/// Walks the group's first lane on the CPU, recording its tape.
fn walk_one(
    m: &mut Machine<f32>,
    group: &LaneGroup,
    walk: &Walk<'_>,
    profile: &mut Profile,
) -> Result<(), Verdict> {
    let first = [group.lanes[0]];
    m.bindings = bind(&first, walk.spec, walk.values);
    m.walked = first.to_vec();
    m.walks += 1;
    m.result = None;
    m.vm.stop.clone_from(walk.stop);
    if let Some(bytes) = walk.payload {
        m.vm.limits.payload_bytes = bytes;
    }
    let walked = walk.exe.run(&mut m.vm, &mut m.runner, &m.bindings, true);
    let c = &mut profile.counters;
    c.walks += 1;
    c.lanes += 1;
    c.tape_nodes += m.vm.stats().tape_nodes;
    // An error, or a result that is not a number: the CPU's walk of the group reports it.
    match walked {
        Ok(v) if m.vm.numbers(v).is_some() => Ok(()),
        _ => Err(Verdict::Cpu),
    }
}

/// Whether `auto`'s cost model sends `lanes` lanes of this tape to the device, on the fit's
/// cores.
fn wins_here(
    model: &CostModel,
    software: bool,
    rec: &ndvm_gpu::Recording<'_, f32>,
    lanes: usize,
) -> bool {
    let work = ndvm_gpu::tape_work(rec);
    model.wins(lanes, work, software, rayon::current_num_threads())
}

/// `auto`'s verdict on a group while the device is still closed: its first lane is walked on
/// the CPU and the model judges that tape over the group's lanes. `Ok` means the device would
/// win (open it and [`run`] the group); `Never`, the candidate stays on the CPU; `Cpu`, the
/// walk failed (the CPU's walk of the group reports it).
pub(super) fn judge(
    adapter: &Adapter,
    model: &CostModel,
    m: &mut Machine<f32>,
    group: &LaneGroup,
    walk: &Walk<'_>,
    profile: &mut Profile,
) -> Result<(), Verdict> {
    if !model.could_win(group.lanes.len()) {
        return Err(Verdict::Never);
    }
    walk_one(m, group, walk, profile)?;
    let rec = m.vm.recording().ok_or(Verdict::Never)?;
    if rec.result.len() != 1 || !wins_here(model, adapter.software, &rec, group.lanes.len()) {
        return Err(Verdict::Never);
    }
    // A tape the device would refuse once open — one the interpreter cannot encode (a custom
    // primitive), or with a node longer than the adapter runs — must not open it.
    let limits = Segmenting::of(adapter.software);
    let enc = ndvm_gpu::Encoded::new(&rec, limits).map_err(refused)?;
    Kernel::preferred()
        .for_tape(&enc, adapter.software, limits)
        .map_err(refused)?;
    Ok(())
}

/// Uploads the one-lane tape [`walk_one`] recorded, to run over the group's lanes.
fn upload_one(
    gpu: &Gpu,
    model: Option<&CostModel>,
    m: &Machine<f32>,
    group: &LaneGroup,
    walk: &Walk<'_>,
) -> Result<OnDevice, Verdict> {
    // A result that is a constant in the walked lane records nothing to replay.
    let rec = m.vm.recording().ok_or(Verdict::Never)?;
    let lanes = group.lanes.len();
    let declined = model.is_some_and(|c| !wins_here(c, gpu.is_software(), &rec, lanes));
    if rec.result.len() != 1 || declined {
        return Err(Verdict::Never);
    }
    let tape = gpu.upload_broadcast(&rec, lanes).map_err(refused)?;
    Ok(OnDevice {
        walk: m.walks,
        tape,
        broadcast: Some((
            group.lanes.clone(),
            bind(&group.lanes, walk.spec, walk.values),
        )),
    })
}

/// Uploads the tape the CPU walked for the group's lanes.
fn upload_walked(
    gpu: &Gpu,
    model: Option<&CostModel>,
    m: &Machine<f32>,
) -> Result<OnDevice, Verdict> {
    let rec = m.vm.recording().ok_or(Verdict::Cpu)?;
    if rec.result.len() != 1 {
        return Err(Verdict::Never);
    }
    if model.is_some_and(|c| !wins_here(c, gpu.is_software(), &rec, m.walked.len())) {
        return Err(Verdict::Cpu);
    }
    let tape = gpu.upload(&rec).map_err(refused)?;
    Ok(OnDevice {
        walk: m.walks,
        tape,
        broadcast: None,
    })
}

/// Runs the machine's tape with the candidate's current parameters.
fn execute(gpu: &Gpu, m: &mut Machine<f32>, walk: &Walk<'_>) -> Result<DeviceRun, Verdict> {
    let Machine {
        vm,
        bindings,
        walked,
        device,
        ..
    } = m;
    let d = device.as_mut().ok_or(Verdict::Cpu)?;
    let program = walk.exe.program();
    let ran = match &mut d.broadcast {
        Some((lanes, inputs)) => {
            update_params(inputs, lanes, walk.spec, walk.values);
            let rec = vm.recording().ok_or(Verdict::Cpu)?;
            let given: Vec<Option<&[f32]>> = program
                .inputs
                .iter()
                .enumerate()
                .map(
                    |(i, name)| match inputs.for_input(i, name).map(|b| &b.value) {
                        Some(Input::Lanes(xs)) => Some(xs.as_slice()),
                        _ => None,
                    },
                )
                .collect();
            d.tape.run_lanes(gpu, &rec, &given, true)
        }
        None => {
            update_params(bindings, walked, walk.spec, walk.values);
            // A stale tape: the CPU walks the group.
            vm.rebind(program, bindings).map_err(|_| Verdict::Cpu)?;
            let rec = vm.recording().ok_or(Verdict::Cpu)?;
            d.tape.run(gpu, &rec, true)
        }
    };
    ran.map_err(refused)
}

/// A device error as a verdict: what the device cannot run stays on the CPU; anything else
/// means the device is gone.
fn refused(e: GpuError) -> Verdict {
    match e {
        GpuError::Unsupported(_) => Verdict::Never,
        e => Verdict::Lost(e.to_string()),
    }
}
