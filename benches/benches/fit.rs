//! Whole fits through the ECS engine (`ndvm fit`'s path):
//!
//! - `population/kalman64x16`: 64 Kalman-80 candidates (each its own initial state covariance)
//!   x 16 restarts as lanes, 30 Adam steps, at 1 and 2 threads (target: >= 1.8x from 2 threads),
//!   and at 1 thread walking every step (`-walk`: tape replay off) to show what replay saves.
//! - `population/tiny512`: 512 one-lane scalar candidates, 50 steps: what the ECS costs when
//!   the numeric work is tiny (target: the `ecs` share of `ndvm profile` under 10%).
//!
//! - `population/cosearch`: `scenes/cosearch.scene.ron` (247 proposed laws × 8 restarts × 45
//!   training points, 200 Adam steps) at 1 and 2 threads (target of the speed issue: ≥ 1.9×).
//!
//! Before timing, each workload's per-stage profile is printed once (standard error). Like
//! `ndvm`, these fits run on mimalloc.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use std::path::PathBuf;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

/// 64 variants of docs/examples/kalman2d.scm: candidate `i` starts from covariance
/// `(1 + i/64) I`.
fn kalman_population() -> Scene {
    let src = std::fs::read_to_string(scenes().join("../docs/examples/kalman2d.scm"))
        .expect("kalman2d.scm");
    let candidates: Vec<String> = (0..64)
        .map(|i| {
            let p0 = format!("{:.6}", 1.0 + i as f64 / 64.0);
            let variant = src.replace(
                "(mat (vec 1.0 0.0) (vec 0.0 1.0))",
                &format!("(mat (vec {p0} 0.0) (vec 0.0 {p0}))"),
            );
            format!("Inline(name: \"kalman{i}\", src: {variant:?})")
        })
        .collect();
    Scene::from_ron(&format!(
        r#"Scene(
            candidates: [{}],
            inputs: {{"obs": MatrixCsv("kalman_obs.csv")}},
            parameters: Parameters(names: ["q", "r"], init: {{"q": 0.05, "r": 0.1}},
                restarts: Restarts(count: 16, scale: 0.04, seed: 7),
                bounds: {{"q": Bounds(min: Some(0.001)), "r": Bounds(min: Some(0.001))}}),
            optimizer: Adam(lr: 0.02),
            steps: 30,
        )"#,
        candidates.join(",\n")
    ))
    .expect("population scene")
}

/// 512 one-lane quadratic bowls: almost no numeric work per candidate.
fn tiny_population() -> Scene {
    let candidates: Vec<String> = (0..512)
        .map(|i| {
            let c = i as f64 / 100.0;
            format!("Inline(name: \"bowl{i}\", src: \"(+ (* (- a {c}) (- a {c})) (* 0.5 b b))\")")
        })
        .collect();
    Scene::from_ron(&format!(
        r#"Scene(
            candidates: [{}],
            parameters: Parameters(names: ["a", "b"], init: {{"a": 0.0, "b": 1.0}}),
            optimizer: Adam(lr: 0.1),
            steps: 50,
        )"#,
        candidates.join(",\n")
    ))
    .expect("tiny scene")
}

/// The runs timed: (threads, walk every step).
const RUNS: [(usize, bool); 3] = [(1, false), (2, false), (1, true)];

fn fit(scene: &Scene, (threads, walk_every_step): (usize, bool)) -> Fit {
    let options = FitOptions {
        threads: Some(threads),
        settings: FitSettings {
            walk_every_step,
            ..FitSettings::default()
        },
        ..FitOptions::default()
    };
    Fit::new(scene, &scenes(), &options).expect("fit")
}

fn population(c: &mut Criterion) {
    let cosearch = Scene::from_ron(
        &std::fs::read_to_string(scenes().join("cosearch.scene.ron")).expect("cosearch scene"),
    )
    .expect("cosearch scene");
    let workloads = [
        ("kalman64x16", kalman_population()),
        ("tiny512", tiny_population()),
        ("cosearch", cosearch),
    ];
    let label = |name: &str, walk: bool| {
        if walk {
            format!("{name}-walk")
        } else {
            name.to_string()
        }
    };
    // Walking every step is timed for the Kalman and tiny populations only.
    let runs = |name: &str| -> Vec<(usize, bool)> {
        RUNS.into_iter()
            .filter(|r| !(r.1 && name == "cosearch"))
            .collect()
    };
    for (name, scene) in &workloads {
        for run in runs(name) {
            let mut f = fit(scene, run);
            f.run(|_| {});
            eprintln!(
                "\n{}, {} thread(s):\n{}",
                label(name, run.1),
                run.0,
                f.profile().report().table()
            );
        }
    }
    let mut group = c.benchmark_group("population");
    group.sample_size(10);
    for (name, scene) in &workloads {
        for run in runs(name) {
            group.bench_function(BenchmarkId::new(label(name, run.1), run.0), |b| {
                b.iter(|| fit(scene, run).run(|_| {}))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, population);
criterion_main!(benches);
