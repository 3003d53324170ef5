//! A device lost in the middle of a fit of several candidates, each one group no wider than the
//! CPU walks: every group the device served is the CPU's from then on, the one it failed on and
//! the ones it ran before (or in the last run) alike. Its own test binary: it destroys the
//! process's shared device.
#![cfg(feature = "gpu")]

mod lose_device;

use lose_device::{have_gpu, losing, run, scene};
use ndvm_components::scene::Device;
use ndvm_systems::prelude::*;

#[test]
fn every_group_the_device_served_is_the_cpus_after_it_is_lost() {
    if !have_gpu() {
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
    let mut on_cpu = scene.clone();
    on_cpu.device = Some(Device::Cpu);
    let (cpu, _) = run(&on_cpu, 512, Plugins::default());
    let (gpu, profile) = run(&scene, 512, losing());
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
