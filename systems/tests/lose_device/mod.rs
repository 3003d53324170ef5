//! What the lost-device tests share: a small f32 data fit and a plugin that destroys the
//! process's shared device after the GPU stage's third run (each test that uses it is a test
//! binary of its own: a destroyed device stays destroyed).

use bevy_ecs::prelude::*;
use ndvm_components::scene::{Device, Scene};
use ndvm_systems::prelude::*;
use ndvm_systems::profile::ProfileReport;
use std::path::PathBuf;

/// Whether a device is there to lose; without one the test skips (with `REQUIRE_GPU=1`, fails).
pub fn have_gpu() -> bool {
    match ndvm_gpu::Gpu::shared() {
        Ok(_) => true,
        Err(e) => {
            let required = std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1");
            assert!(!required, "REQUIRE_GPU=1 but {e}");
            false
        }
    }
}

/// Fits `scene` (relative to `scenes/`) with the CPU walking groups of `lanes_per_group`.
pub fn run(scene: &Scene, lanes_per_group: usize, plugins: Plugins) -> (FitReport, ProfileReport) {
    let scenes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes");
    let options = FitOptions {
        plugins,
        settings: FitSettings {
            lanes_per_group,
            ..FitSettings::default()
        },
        ..FitOptions::default()
    };
    let mut fit = Fit::new(scene, &scenes, &options).expect("starts");
    let report = fit.run(|_| {});
    (report, fit.profile().report())
}

/// The plugin [`LoseIt`] as an engine.
pub fn losing() -> Plugins {
    PluginsBuilder::new()
        .plugin(&LoseIt)
        .build()
        .expect("engine")
}

pub fn scene(device: Device) -> Scene {
    let text = r#"Scene(
        candidates: [Inline(name: "decay", src: "(* A (exp (- 0 (* k t))))")],
        parameters: Parameters(
            names: ["A", "k"],
            init: {"A": 1.0, "k": 0.5},
            restarts: Restarts(count: 8, scale: 0.3, seed: 4),
        ),
        data: Some(Csv(path: "decay.csv", columns: {"t": "t"}, target: "counts")),
        loss: Mse,
        optimizer: Adam(lr: 0.05),
        precision: Some(F32),
        steps: 12,
    )"#;
    let mut scene = Scene::from_ron(text).expect("parses");
    scene.device = Some(device);
    scene
}

/// Destroys the shared device after the gpu stage's third run.
pub struct LoseIt;

impl Plugin for LoseIt {
    fn build(&self, plugins: &mut PluginsBuilder) {
        plugins.schedule(|s| {
            s.add_systems(lose.after(Stage::Gpu).before(Stage::Replay));
        });
    }
}

fn lose(mut runs: Local<u32>) {
    *runs += 1;
    if *runs == 3 {
        ndvm_gpu::Gpu::shared().expect("gpu").destroy();
    }
}
