//! A device lost in the middle of a fit whose groups are wider than the CPU walks: the fit goes
//! on on the CPU, every wide group is cut to the CPU's width, and the results agree with a fit
//! on the CPU alone. Its own test binary: it destroys the process's shared device.
#![cfg(feature = "gpu")]

mod lose_device;

use lose_device::{have_gpu, losing, run, scene};
use ndvm_components::scene::Device;
use ndvm_systems::prelude::*;

#[test]
fn a_device_lost_mid_fit_leaves_the_fit_on_the_cpu_at_its_width() {
    if !have_gpu() {
        return;
    }
    let (cpu, _) = run(&scene(Device::Cpu), 64, Plugins::default());
    let (gpu, profile) = run(&scene(Device::Gpu), 64, losing());
    let lost = profile.used.lost.as_deref().expect("the loss is reported");
    assert!(!lost.is_empty());
    // Three device runs of the one 320-lane group (8 restarts × 40 points), then the CPU: its
    // groups of at most 64 lanes, each walked once.
    assert_eq!(profile.device.runs, 3, "{:?}", profile.device);
    let c = &profile.counters;
    assert!(c.lanes > 320 && c.walks > 5, "{c:?}");
    let (a, b) = (&cpu.candidates[0], &gpu.candidates[0]);
    assert_eq!((a.status, b.status), ("done", "done"));
    assert!(
        (a.loss - b.loss).abs() <= 1e-4 * a.loss.abs(),
        "{} {}",
        a.loss,
        b.loss
    );
}
