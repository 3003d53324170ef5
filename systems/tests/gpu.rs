//! A fit on the GPU (`device: Gpu`) against the same fit on the CPU: the 2-D Kalman scene in
//! f32, one lane walked and its 16 restarts replayed by the device from the first step on; and
//! a data fit whose lanes take different paths (split off, walked on the CPU, replayed on the
//! device). Without any adapter the tests skip (with `REQUIRE_GPU=1`, they fail).
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

/// Whether a device is there to test; without one, the test skips unless `REQUIRE_GPU=1`.
fn have_gpu() -> bool {
    match ndvm_gpu::Gpu::shared() {
        Ok(_) => true,
        Err(e) if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("REQUIRE_GPU=1 but {e}")
        }
        Err(_) => false,
    }
}

#[test]
fn a_gpu_fit_agrees_with_the_cpu_fit() {
    if !have_gpu() {
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
    // Every evaluation the CPU fit made (one walk of 16 lanes, then replays), the GPU fit made
    // on the device, from one walked lane uploaded once.
    assert!(cpu_profile.counters.replays >= 5);
    assert_eq!(
        gpu_profile.device.runs,
        cpu_profile.counters.replays + cpu_profile.counters.walks,
        "{:?}",
        gpu_profile.device
    );
    assert_eq!(gpu_profile.device.uploads, 1);
    // A 2-D filter: one invocation per lane on any adapter (docs/gpu.md, "The interpreter").
    assert_eq!(gpu_profile.device.entries.lane, 1);
    assert_eq!(gpu_profile.counters.walks, cpu_profile.counters.walks);
    assert_eq!(
        (gpu_profile.counters.lanes, cpu_profile.counters.lanes),
        (1, 16)
    );
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

/// A data fit in f32 whose lanes (restart × data point) take either branch of a comparison of
/// the data with a parameter, and move between them as the parameter is fitted.
fn piecewise(device: Device) -> Scene {
    let text = r#"Scene(
        candidates: [
            Inline(name: "ramp", src: "(if (< t k) (* A t) (+ (* A k) (* B (- t k))))"),
            Inline(name: "decay", src: "(* A (exp (- 0 (* k t))))"),
        ],
        parameters: Parameters(
            names: ["A", "k", "B"],
            init: {"A": 1.0, "k": 2.0, "B": -0.5},
            restarts: Restarts(count: 6, scale: 0.3, seed: 4),
        ),
        data: Some(Csv(path: "decay.csv", columns: {"t": "t"}, target: "counts")),
        loss: Mse,
        optimizer: Adam(lr: 0.05),
        precision: Some(F32),
        steps: 25,
    )"#;
    let mut scene = Scene::from_ron(text).expect("parses");
    scene.device = Some(device);
    scene
}

#[test]
fn lanes_on_other_paths_leave_a_wide_device_group_and_agree_with_the_cpu() {
    if !have_gpu() {
        return;
    }
    let run = |device| {
        let options = FitOptions {
            // Split-off lanes are walked on the CPU in groups of at most 16.
            settings: FitSettings {
                lanes_per_group: 16,
                ..FitSettings::default()
            },
            ..FitOptions::default()
        };
        let mut fit = Fit::new(&piecewise(device), &scenes(), &options).expect("starts");
        let report = fit.run(|_| {});
        (report, fit.profile().report())
    };
    let (cpu, cpu_profile) = run(Device::Cpu);
    let (gpu, gpu_profile) = run(Device::Gpu);
    let c = &gpu_profile.counters;
    // 6 restarts × 40 points = 240 lanes per candidate: the CPU cuts 15 groups of 16 and walks
    // every lane; the device takes each candidate as one group and walks one lane of it (and
    // on the CPU, the ramp's lanes past its corner: about 190).
    assert!(
        cpu_profile.counters.lanes >= 480,
        "{:?}",
        cpu_profile.counters
    );
    assert!(
        c.lanes * 2 < cpu_profile.counters.lanes,
        "{} lanes walked against {}",
        c.lanes,
        cpu_profile.counters.lanes
    );
    // The ramp's lanes past its corner failed the walked lane's guard and were split off.
    assert!(
        c.guard_failures.comparison > 0 && c.rewalked_lanes > 0,
        "{c:?}"
    );
    assert!(gpu_profile.device.runs > 25, "{:?}", gpu_profile.device);
    for (c, g) in cpu.candidates.iter().zip(&gpu.candidates) {
        assert_eq!((c.status, g.status), ("done", "done"), "{}", c.name);
        assert!(
            (c.loss - g.loss).abs() <= 1e-4 * c.loss.abs().max(1e-6),
            "{}: loss cpu {} gpu {}",
            c.name,
            c.loss,
            g.loss
        );
        for (name, &v) in &c.params {
            let w = g.params[name];
            assert!(
                (v - w).abs() <= 1e-3 * v.abs().max(1e-2),
                "{}: {name} {v} {w}",
                c.name
            );
        }
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

#[path = "../examples/hill_plugin.rs"]
#[allow(dead_code)]
mod hill;

#[test]
fn a_candidate_the_device_cannot_run_stays_on_the_cpu_at_its_width() {
    if !have_gpu() {
        return;
    }
    // A plugin's primitive (Rust code) cannot run on the device.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = std::fs::read_to_string(dir.join("hill.scene.ron")).expect("scene");
    let mut scene = Scene::from_ron(&text).expect("parses");
    scene.precision = Some(Precision::F32);
    scene.steps = 30;
    let (cpu, cpu_profile) = scene_run(&scene, &dir, Device::Cpu);
    let (gpu, profile) = scene_run(&scene, &dir, Device::Gpu);
    assert_eq!(profile.device.runs, 0, "{:?}", profile.device);
    // One lane walked to find out, then the CPU's groups of 64 lanes (a wide group would have
    // been walked whole): the same groups, so the same bits.
    let (c, g) = (&cpu_profile.counters, &profile.counters);
    assert_eq!((g.lanes, g.walks), (c.lanes + 1, c.walks + 1), "{g:?}");
    assert_eq!(c.groups, 7);
    // Declined in the first schedule run, piped from the next: its 30 steps took a few runs.
    assert!(g.steps < 8, "{} schedule runs", g.steps);
    let (c, g) = (&cpu.candidates[0], &gpu.candidates[0]);
    assert_eq!(c.status, "done");
    assert_eq!(c.loss.to_bits(), g.loss.to_bits());
    assert_eq!(c.params, g.params);
}

fn scene_run(
    scene: &Scene,
    dir: &std::path::Path,
    device: Device,
) -> (FitReport, ndvm_systems::profile::ProfileReport) {
    scene_run_with(scene, dir, device, Default::default())
}

/// The hill law twice: through the plugin's primitive (which the device cannot run) and
/// written out in arithmetic (which it can).
fn hill_pair(dir: &std::path::Path) -> Scene {
    let text = std::fs::read_to_string(dir.join("hill.scene.ron")).expect("scene");
    let mut scene = Scene::from_ron(&text).expect("parses");
    scene.candidates.push(
        Scene::from_ron(
            r#"Scene(candidates: [Inline(name: "written", src: "(* vmax (/ (pow x n) (+ (pow k n) (pow x n))))")])"#,
        )
        .expect("parses")
        .candidates
        .remove(0),
    );
    scene.precision = Some(Precision::F32);
    scene.steps = 30;
    scene
}

/// `auto` on the only adapter CI has: a cost model that allows a software adapter, with a
/// device run costing `run_s` and its work free.
fn auto_model(run_s: f64) -> ndvm_systems::stages::gpu::CostModel {
    ndvm_systems::stages::gpu::CostModel {
        gpu_work_s: 1e30,
        gpu_run_s: run_s,
        min_lanes: 1,
        software: true,
        ..Default::default()
    }
}

#[test]
fn auto_opens_the_device_for_the_first_group_it_would_win_and_pipes_the_rest() {
    if !have_gpu() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let scene = hill_pair(&dir);
    let [(cpu, cpu_profile), (auto, profile)] = cpu_and_auto(&scene, &dir, 0.0);
    // The written-out law ran on the device, opened for it; the plugin's stayed on the CPU.
    let gpu = ndvm_gpu::Gpu::shared().expect("gpu");
    assert_eq!(profile.used.kind, "gpu");
    assert_eq!(profile.used.adapter.as_deref(), Some(&*gpu.describe()));
    assert_eq!(
        ndvm_gpu::Gpu::probe().expect("probe").name,
        gpu.describe(),
        "the probe finds the adapter the device opens"
    );
    assert!(profile.device.runs >= 29, "{:?}", profile.device);
    assert_eq!(profile.device.uploads, 1, "{:?}", profile.device);
    // This fit opened it (the process's device is open already: `open` only returns it).
    assert!(profile.device.open_s > 0.0, "{:?}", profile.device);
    assert_eq!(cpu_profile.used, ndvm_systems::device::DeviceUsed::cpu());
    // The plugin's candidate was piped at the CPU's width: the CPU fit's bits.
    let (c, a) = (&cpu.candidates[0], &auto.candidates[0]);
    assert_eq!((c.name.as_str(), c.status), ("hill", "done"));
    assert_eq!(c.loss.to_bits(), a.loss.to_bits());
    assert_eq!(c.params, a.params);
    // The other agrees with its CPU fit to f32 rounding.
    let (c, a) = (&cpu.candidates[1], &auto.candidates[1]);
    assert_eq!((c.name.as_str(), a.status), ("written", "done"));
    assert!(
        (c.loss - a.loss).abs() <= 1e-3 * c.loss.abs(),
        "loss cpu {} auto {}",
        c.loss,
        a.loss
    );
}

#[test]
fn auto_never_opens_a_device_it_would_not_win_and_the_fit_stays_piped() {
    if !have_gpu() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let scene = hill_pair(&dir);
    let [(cpu, cpu_profile), (auto, profile)] = cpu_and_auto(&scene, &dir, 1e9);
    // Never opened (opening names the adapter and is timed), never run.
    assert_eq!(profile.used, ndvm_systems::device::DeviceUsed::cpu());
    assert_eq!(profile.device.open_s, 0.0);
    assert_eq!(profile.device.runs, 0);
    // One lane of each candidate walked to judge it, then the CPU fit's groups: its bits.
    let (c, g) = (&cpu_profile.counters, &profile.counters);
    assert_eq!((g.lanes, g.walks), (c.lanes + 2, c.walks + 2), "{g:?}");
    for (c, a) in cpu.candidates.iter().zip(&auto.candidates) {
        assert_eq!(c.status, "done", "{}", c.name);
        assert_eq!(c.loss.to_bits(), a.loss.to_bits(), "{}", c.name);
        assert_eq!(c.params, a.params, "{}", c.name);
    }
    // Both candidates took their 30 steps in the pipeline's passes, not a schedule run each.
    assert!(g.steps < 15, "{} schedule runs", g.steps);
}

#[test]
fn auto_never_opens_the_device_for_a_tape_it_cannot_run() {
    if !have_gpu() {
        return;
    }
    // The plugin's law alone, with a model that would send any tape to the device: its tape
    // has a custom primitive, so the device must stay closed.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut scene = hill_pair(&dir);
    scene.candidates.truncate(1);
    let [(cpu, _), (auto, profile)] = cpu_and_auto(&scene, &dir, 0.0);
    assert_eq!(profile.used, ndvm_systems::device::DeviceUsed::cpu());
    assert_eq!(profile.device.open_s, 0.0);
    let (c, a) = (&cpu.candidates[0], &auto.candidates[0]);
    assert_eq!((c.name.as_str(), c.status), ("hill", "done"));
    assert_eq!(c.loss.to_bits(), a.loss.to_bits());
}

#[test]
fn auto_never_opens_a_software_device_for_a_node_longer_than_it_runs() {
    if !have_gpu() {
        return;
    }
    // A 40 x 40 product is 65,640 loop iterations in one invocation of the per-lane entry,
    // more than software Vulkan runs (it leaves loops early): the upload would refuse it, so
    // `auto` must not open a software device for it, even with a model that allows software.
    let dir = std::env::temp_dir().join(format!("ndvm-long-node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let n = 40;
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let row = (0..n).map(|j| format!("{}", ((i * n + j) * 17 % 23) as f64 / 230.0));
            row.collect::<Vec<_>>().join(",")
        })
        .collect();
    let header: Vec<String> = (0..n).map(|j| format!("c{j}")).collect();
    let csv = format!("{}\n{}\n", header.join(","), rows.join("\n"));
    std::fs::write(dir.join("m.csv"), csv).expect("csv");
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "long", src: "(let ((t (trace (matmul (scale s m) m)))) (* t t))")],
            inputs: {"m": MatrixCsv("m.csv")},
            parameters: Parameters(names: ["s"], init: {"s": 0.5},
                restarts: Restarts(count: 4, scale: 0.1, seed: 1)),
            loss: NegLogLikelihood,
            optimizer: Adam(lr: 0.01),
            precision: Some(F32),
            steps: 3,
        )"#,
    )
    .expect("parses");
    let [(cpu, _), (auto, profile)] = cpu_and_auto(&scene, &dir, 0.0);
    let _ = std::fs::remove_dir_all(&dir);
    let (c, a) = (&cpu.candidates[0], &auto.candidates[0]);
    assert_eq!((c.name.as_str(), c.status), ("long", "done"));
    assert_eq!(c.loss.to_bits(), a.loss.to_bits());
    let gpu = ndvm_gpu::Gpu::shared().expect("gpu");
    if gpu.is_software() {
        assert_eq!(profile.used, ndvm_systems::device::DeviceUsed::cpu());
        assert_eq!(profile.device.open_s, 0.0);
    } else {
        assert_eq!(profile.used.kind, "gpu");
    }
}

/// The scene fitted on the CPU, then under `auto` with [`auto_model`]`(run_s)`.
fn cpu_and_auto(
    scene: &Scene,
    dir: &std::path::Path,
    run_s: f64,
) -> [(FitReport, ndvm_systems::profile::ProfileReport); 2] {
    [Device::Cpu, Device::Auto].map(|d| scene_run_with(scene, dir, d, auto_model(run_s)))
}

fn scene_run_with(
    scene: &Scene,
    dir: &std::path::Path,
    device: Device,
    cost_model: ndvm_systems::stages::gpu::CostModel,
) -> (FitReport, ndvm_systems::profile::ProfileReport) {
    let mut scene = scene.clone();
    scene.device = Some(device);
    let options = FitOptions {
        plugins: PluginsBuilder::new()
            .plugin(&hill::Pharmacology)
            .build()
            .expect("engine"),
        settings: FitSettings {
            lanes_per_group: 64,
            ..FitSettings::default()
        },
        cost_model,
        ..FitOptions::default()
    };
    let mut fit = Fit::new(&scene, dir, &options).expect("starts");
    let report = fit.run(|_| {});
    (report, fit.profile().report())
}
