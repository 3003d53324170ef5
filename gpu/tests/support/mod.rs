//! The GPU tests' shared body: a program walked on the CPU, its tape run on the device, every
//! lane compared with the CPU (f32) within the documented tolerance.
#![allow(dead_code)]

use ndvm_engine::prelude::*;
use ndvm_gpu::{DeviceRun, Gpu, Kernel};

/// `|gpu − cpu| ≤ ATOL + RTOL · max(|gpu|, |cpu|)` (docs/gpu.md).
pub const RTOL: f64 = 2e-4;
pub const ATOL: f64 = 1e-5;

/// The device, or `None` (skip) when there is none — unless `REQUIRE_GPU=1`, where a missing
/// adapter fails the test.
pub fn gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(g) => Some(g),
        Err(e) if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("REQUIRE_GPU=1 but no GPU: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

pub fn agree(gpu: f32, cpu: f32) -> bool {
    let (a, b) = (gpu as f64, cpu as f64);
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= ATOL + RTOL * a.abs().max(b.abs())
}

/// Counts of what one comparison saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    pub lanes: usize,
    pub failed: usize,
    pub values: usize,
}

/// [`gpu_matches_cpu_with`] under each interpreter entry (one invocation per lane, a
/// workgroup per lane, node-major): all must agree with the CPU and see the same lanes and
/// values. Returns what the per-lane entry saw.
pub fn gpu_matches_cpu(
    gpu: &Gpu,
    what: &str,
    program: &Program,
    bindings: (&Bindings<f32>, &Bindings<f32>),
    max_width: usize,
) -> Option<Seen> {
    let seen = gpu_matches_cpu_with(gpu, what, program, bindings, max_width, Kernel::Lane);
    for kernel in [Kernel::Cooperative, Kernel::Batched] {
        let label = format!("{what} [{}]", kernel.name());
        let other = gpu_matches_cpu_with(gpu, &label, program, bindings, max_width, kernel);
        assert_eq!(
            seen.map(|s| (s.failed, s.values)),
            other.map(|s| (s.failed, s.values)),
            "{label}"
        );
    }
    seen
}

/// Walks `first` on the CPU (recording), uploads the tape for `kernel`, rebinds `next` and
/// runs it on the device; walks `next` afresh on the CPU and compares every lane the device did not flag —
/// result and each number input's gradient. The lanes the device flags must be exactly those
/// whose CPU replay flags them too, up to lanes where a comparison sits within rounding of its
/// threshold. Returns what it saw, or `None` when the fresh walk fails (or has no number).
pub fn gpu_matches_cpu_with(
    gpu: &Gpu,
    what: &str,
    program: &Program,
    (first, next): (&Bindings<f32>, &Bindings<f32>),
    max_width: usize,
    kernel: Kernel,
) -> Option<Seen> {
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(program, first, true).ok()?;
    vm.numbers(v)?;
    let mut tape = {
        let rec = vm.recording()?;
        match gpu.upload_with(&rec, rec.lanes, max_width, kernel) {
            Ok(t) => t,
            Err(e) => panic!("{what}: upload: {e}"),
        }
    };
    if vm.rebind(program, next).is_err() {
        return None;
    }
    let rec = vm.recording().expect("still recorded");
    let run: DeviceRun = tape
        .run(gpu, &rec, true)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    // The CPU replay of the same tape flags the same lanes.
    let mut cpu = Vm::<f32>::default();
    let c = cpu.eval(program, first, true).ok()?;
    cpu.backward(c);
    let cpu_failed = match cpu.replay(program, next) {
        Replay::Held(_) => Vec::new(),
        Replay::Partial { lanes, .. } => lanes,
        Replay::Stale(why) => panic!("{what}: stale ({why})"),
    };
    assert_eq!(run.failed, cpu_failed, "{what}: lanes whose guards failed");
    let mut fresh = Vm::<f32>::default();
    let w = fresh.eval(program, next, true).ok()?;
    let want = fresh.numbers(w)?;
    fresh.backward(w);
    let lanes = want.len();
    let mut seen = Seen {
        lanes,
        failed: run.failed.len(),
        values: 0,
    };
    for l in 0..lanes {
        if run.failed.contains(&(l as u32)) {
            continue;
        }
        assert!(
            agree(run.result[l], want[l]),
            "{what} lane {l}: result gpu {} cpu {}",
            run.result[l],
            want[l]
        );
        seen.values += 1;
        for (i, g) in run.grads.iter().enumerate() {
            let cpu = fresh.grad(i);
            if g.is_empty() || cpu.is_empty() {
                continue;
            }
            assert!(
                agree(g[l], cpu[l]),
                "{what} lane {l}: d/d{} gpu {} cpu {}",
                program.inputs[i],
                g[l],
                cpu[l]
            );
            seen.values += 1;
        }
    }
    Some(seen)
}
