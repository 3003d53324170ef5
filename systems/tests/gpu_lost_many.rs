//! A device lost in the middle of a fit of several candidates, each one group no wider than the
//! CPU walks: every group the device served is the CPU's from then on, the one it failed on and
//! the ones it ran before (or in the last run) alike. Its own test binary: it destroys the
//! process's shared device.
#![cfg(feature = "gpu")]

mod lose_device;

use lose_device::{LoseIt, scene};
use ndvm_components::scene::{Device, Scene};
use ndvm_systems::prelude::*;
use std::path::PathBuf;

#[test]
fn every_group_the_device_served_is_the_cpus_after_it_is_lost() {
    if let Err(e) = ndvm_gpu::Gpu::shared() {
        assert!(
            !std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1"),
            "REQUIRE_GPU=1 but {e}"
        );
        return;
    }
    // Two candidates, each one group the CPU's width would not cut (320 lanes under 512): the
    // device fails on the first, and the second, served last run, must be evaluated too.
    let mut scene = scene(Device::Gpu);
    let mut other = scene.candidates[0].clone();
    if let ndvm_components::scene::Candidates::Inline { name, src, .. } = &mut other {
        *name = "decay2".into();
        *src = "(* A (exp (* (- 0 k) t)))".into();
    }
    scene.candidates.push(other);
    let scenes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes");
    let run = |scene: &Scene, engine: Engine| {
        let options = FitOptions {
            engine,
            settings: FitSettings {
                lanes_per_group: 512,
                ..FitSettings::default()
            },
            ..FitOptions::default()
        };
        let mut fit = Fit::new(scene, &scenes, &options).expect("starts");
        let report = fit.run(|_| {});
        (report, fit.profile().report())
    };
    let mut on_cpu = scene.clone();
    on_cpu.device = Some(Device::Cpu);
    let (cpu, _) = run(&on_cpu, Engine::default());
    let lose_it = EngineBuilder::new()
        .plugin(&LoseIt)
        .build()
        .expect("engine");
    let (gpu, profile) = run(&scene, lose_it);
    assert!(profile.used.lost.is_some(), "{:?}", profile.used);
    for (a, b) in cpu.candidates.iter().zip(&gpu.candidates) {
        assert_eq!((a.status, b.status), ("done", "done"), "{}", a.name);
        assert!(
            (a.loss - b.loss).abs() <= 1e-4 * a.loss.abs(),
            "{}: cpu {} gpu {}",
            a.name,
            a.loss,
            b.loss
        );
    }
}
