//! A fit on the GPU (`device: Gpu`) against the same fit on the CPU: the 2-D Kalman scene in
//! f32, its 16 restarts replayed by the device from the second step on. Without any adapter the
//! test skips (with `REQUIRE_GPU=1`, it fails).
#![cfg(feature = "gpu")]

use ndvm_components::scene::{Device, Precision, Scene};
use ndvm_systems::prelude::*;
use std::path::PathBuf;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn kalman(device: Device) -> Scene {
    let text = std::fs::read_to_string(scenes().join("kalman2d.scene.ron")).expect("scene");
    let mut scene = Scene::from_ron(&text).expect("parses");
    scene.precision = Some(Precision::F32);
    scene.device = Some(device);
    scene.steps = 6;
    scene
}

#[test]
fn a_gpu_fit_agrees_with_the_cpu_fit() {
    if let Err(e) = ndvm_gpu::Gpu::shared() {
        assert!(
            std::env::var("REQUIRE_GPU").is_ok_and(|v| v != "1")
                || std::env::var("REQUIRE_GPU").is_err(),
            "REQUIRE_GPU=1 but {e}"
        );
        return;
    }
    let run = |device| {
        let mut fit = Fit::new(&kalman(device), &scenes(), &FitOptions::default()).expect("starts");
        let report = fit.run(|_| {});
        (report, fit.profile().report())
    };
    let (cpu, cpu_profile) = run(Device::Cpu);
    let (gpu, gpu_profile) = run(Device::Gpu);
    assert_eq!(cpu_profile.device.runs, 0);
    // The first step walks; every replay the CPU fit made, the GPU fit made on the device.
    assert!(cpu_profile.counters.replays >= 5);
    assert_eq!(
        gpu_profile.device.runs, cpu_profile.counters.replays,
        "{:?}",
        gpu_profile.device
    );
    assert_eq!(gpu_profile.counters.walks, cpu_profile.counters.walks);
    // The results name the device; a software adapter is called what it is, and warned about.
    assert_eq!(cpu.device, ndvm_systems::device::DeviceUsed::cpu());
    assert_eq!(gpu.device.kind, "gpu");
    let adapter = gpu.device.adapter.as_deref().expect("the adapter is named");
    let software = ndvm_gpu::Gpu::shared().expect("gpu").is_software();
    assert_eq!(gpu.device.software, software, "{adapter}");
    assert_eq!(
        gpu.warnings
            .iter()
            .any(|w| w.contains("a CPU emulating a GPU")),
        software,
        "{:?}",
        gpu.warnings
    );
    assert!(cpu.warnings.is_empty(), "{:?}", cpu.warnings);
    let (c, g) = (&cpu.candidates[0], &gpu.candidates[0]);
    assert!(
        (c.loss - g.loss).abs() <= 1e-4 * c.loss.abs(),
        "loss cpu {} gpu {}",
        c.loss,
        g.loss
    );
    for (name, &v) in &c.params {
        assert!(
            (v - g.params[name]).abs() <= 1e-4 * v.abs().max(1e-3),
            "{name}"
        );
    }
}

#[test]
fn device_gpu_needs_f32() {
    let mut scene = kalman(Device::Gpu);
    scene.precision = Some(Precision::F64);
    match Fit::new(&scene, &scenes(), &FitOptions::default()) {
        Err(FitError::Device(msg)) => assert!(msg.contains("f32"), "{msg}"),
        other => panic!("expected a device error, got {:?}", other.map(|_| ())),
    }
}
