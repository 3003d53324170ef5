//! Walk once, replay many, at the level of whole fits: a 30-step Adam fit that replays tapes
//! moves every parameter of every restart through exactly the same bits, step by step, as the
//! same fit walking every step — for every conformance, fuzz-corpus and divergence program —
//! and when parameters carry lanes across a branch boundary mid-fit, exactly those lanes are
//! walked again. The pipelined fit (several steps per pass, each candidate in one task) goes
//! through the same bits too, seen every `PASS` steps.

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use common::*;
use ndvm_components::prelude::*;
use ndvm_components::scene::{Candidates, Parameters, Restarts, Scene, SceneInput};
use ndvm_systems::prelude::*;
use ndvm_systems::profile::Counters;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every candidate's parameter bits after every schedule run.
type Trajectory = Vec<Vec<(usize, Vec<u64>)>>;

/// Steps per pass of the pipelined fits.
const PASS: u32 = 4;

/// Runs `scene` schedule run by schedule run (`steps_per_pass` steps each), recording each
/// candidate's parameters at the start and after every run.
fn trajectory(
    scene: &Scene,
    base: &Path,
    walk_every_step: bool,
    steps_per_pass: u32,
) -> (Trajectory, Counters) {
    let options = FitOptions {
        settings: FitSettings {
            walk_every_step,
            steps_per_pass,
            // Exactly `steps_per_pass` steps each pass, however long it takes.
            pass_millis: None,
            ..FitSettings::default()
        },
        ..FitOptions::default()
    };
    let mut fit = Fit::new(scene, base, &options).expect("starts");
    let mut steps = Vec::new();
    let mut more = true;
    loop {
        let world = fit.world_mut();
        let mut q = world.query::<(&Candidate, &ParamValues)>();
        let mut now: Vec<(usize, Vec<u64>)> = q
            .iter(world)
            .map(|(c, v)| (c.index, v.0.iter().map(|x| x.to_bits()).collect()))
            .collect();
        now.sort();
        steps.push(now);
        if !more {
            break;
        }
        more = fit.step();
    }
    (steps, fit.profile().counters)
}

/// Fits `scene` walking every step, replaying step by step, and pipelined; asserts the same
/// trajectories (the pipelined one at every `PASS`-th step, each pass taking every candidate
/// `PASS` steps from the first); returns the stepwise replaying fit's counters.
fn same_both_ways(what: &str, scene: &Scene, base: &Path) -> Counters {
    let (walked, walk_counters) = trajectory(scene, base, true, 1);
    let (replayed, counters) = trajectory(scene, base, false, 1);
    let (piped, piped_counters) = trajectory(scene, base, false, PASS);
    assert_eq!(walk_counters.replays, 0, "{what}: walk_every_step replayed");
    assert!(walked.len() > 30, "{what}: {} steps", walked.len());
    assert_eq!(walked.len(), replayed.len(), "{what}: step count");
    for (step, (w, r)) in walked.iter().zip(&replayed).enumerate() {
        for (cw, cr) in w.iter().zip(r) {
            assert_eq!(
                cw, cr,
                "{what}: candidate {} differs after step {step}",
                cw.0
            );
        }
    }
    assert!(piped.len() < walked.len(), "{what}: {} passes", piped.len());
    for (pass, p) in piped.iter().enumerate() {
        let step = (pass * PASS as usize).min(walked.len() - 1);
        for (cw, cp) in walked[step].iter().zip(p) {
            assert_eq!(
                cw, cp,
                "{what}: pipelined candidate {} differs after pass {pass} (step {step})",
                cw.0
            );
        }
    }
    assert!(counters.replays > 0, "{what}: nothing was replayed");
    let work = |c: &Counters| (c.replays, c.walks, c.rewalked_lanes, c.guard_failures);
    assert_eq!(
        work(&piped_counters),
        work(&counters),
        "{what}: the pipeline replays and walks as the stages do"
    );
    counters
}

/// A scene of inline candidates, each with its own parameters (every input a parameter),
/// fitted by Adam for 30 steps on the program's own output.
fn scene(candidates: Vec<Candidates>, inputs: BTreeMap<String, SceneInput>) -> Scene {
    let mut s = Scene::from_ron(
        r#"Scene(candidates: [Inline(name: "-", src: "0")], optimizer: Adam(lr: 0.05), steps: 30)"#,
    )
    .expect("parses");
    s.candidates = candidates;
    s.inputs = inputs;
    s
}

fn inline(name: String, src: &str, init: BTreeMap<String, f64>, restarts: u32) -> Candidates {
    Candidates::Inline {
        name,
        src: src.to_string(),
        bytecode: false,
        parameters: Some(Box::new(Parameters {
            names: init.keys().cloned().collect(),
            init,
            restarts: Restarts {
                count: restarts,
                scale: 0.3,
                seed: 11,
            },
            bounds: BTreeMap::new(),
        })),
        data: None,
    }
}

/// A scratch directory for files a scene reads.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ndvm-replay-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn conformance_fits_replay_the_same_trajectories_as_walking() {
    let dir = scratch("conformance");
    for p in conformance_programs() {
        if !p["error"].is_null() {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("?").to_string();
        let init: BTreeMap<String, f64> = p["scalars"]
            .as_object()
            .expect("scalars")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_f64().expect("number")))
            .collect();
        if init.is_empty() {
            continue; // nothing to fit
        }
        let mut inputs = BTreeMap::new();
        if let Some((m, rows, cols, data)) = conformance_matrix(&p) {
            let mut csv: String = (0..cols)
                .map(|c| format!("c{c}"))
                .collect::<Vec<_>>()
                .join(",");
            for r in 0..rows {
                let row: Vec<String> = data[r * cols..(r + 1) * cols]
                    .iter()
                    .map(f32::to_string)
                    .collect();
                csv += &format!("\n{}", row.join(","));
            }
            std::fs::write(dir.join(format!("{name}.csv")), csv).expect("csv");
            inputs.insert(m, SceneInput::MatrixCsv(format!("{name}.csv")));
        }
        let src = p["src"].as_str().expect("src");
        let s = scene(vec![inline(name.clone(), src, init, 4)], inputs);
        same_both_ways(&name, &s, &dir);
    }
}

#[test]
fn fuzz_corpus_fits_replay_the_same_trajectories_as_walking() {
    let corpus = read_jsonl("fuzz/seed1234_n200.jsonl");
    let candidates = corpus
        .iter()
        .map(|p| {
            let init = p["params"]
                .as_object()
                .expect("params")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_f64().expect("param")))
                .collect();
            let id = p["id"].as_u64().unwrap_or(0);
            inline(
                format!("fuzz{id}"),
                p["src"].as_str().expect("src"),
                init,
                4,
            )
        })
        .collect();
    let c = same_both_ways(
        "fuzz corpus",
        &scene(candidates, BTreeMap::new()),
        Path::new("."),
    );
    assert!(
        c.replays > c.walks,
        "replay should be the common case: {c:?}"
    );
}

#[test]
fn divergence_fits_replay_the_same_trajectories_as_walking() {
    let candidates = divergence_programs()
        .into_iter()
        .map(|(name, src, inputs)| {
            let init = inputs
                .iter()
                .map(|i| (i.clone(), divergence_value(i, 0, 0) as f64))
                .collect();
            inline(name, &src, init, 16)
        })
        .collect();
    let c = same_both_ways(
        "divergence programs",
        &scene(candidates, BTreeMap::new()),
        Path::new("."),
    );
    // Parameters cross branch boundaries and loop exits mid-fit: some lanes walk again.
    assert!(c.guard_failures.comparison > 0, "{c:?}");
    assert!(c.rewalked_lanes > 0, "{c:?}");
}

#[test]
fn lanes_that_cross_a_branch_mid_fit_and_only_those_walk_again() {
    // A data fit whose parameter `a` moves the boundary x = 1/a across some of the data points
    // (each a lane): those lanes change branch at some step, the others never do.
    let text = r#"Scene(
        candidates: [Inline(name: "kink", src: "(if (> (* a x) 1) (* a b x) (* b x x))")],
        parameters: Parameters(names: ["a", "b"], init: {"a": 0.9, "b": 1.0},
                               restarts: Restarts(count: 3, scale: 0.05, seed: 2)),
        data: Some(Synthetic(program: "(if (> (* a x) 1) (* a b x) (* b x x))",
                             constants: {"a": 1.25, "b": 1.5},
                             inputs: {"x": Linspace(0.0, 2.0, 40)})),
        loss: Mse,
        optimizer: Adam(lr: 0.01),
        steps: 30,
    )"#;
    let s = Scene::from_ron(text).expect("parses");
    let (walked, _) = trajectory(&s, Path::new("."), true, 1);
    let counters = same_both_ways("kink", &s, Path::new("."));
    // Lanes whose branch differs between consecutive steps' parameters, from the walked fit.
    let xs: Vec<f64> = (0..40).map(|i| 2.0 * i as f64 / 39.0).collect();
    let side = |params: &[u64], r: usize, x: f64| f64::from_bits(params[r]) * x > 1.0;
    let mut crossings = 0;
    for pair in walked.windows(2) {
        let (before, after) = (&pair[0][0].1, &pair[1][0].1);
        for r in 0..3 {
            crossings += xs
                .iter()
                .filter(|&&x| side(before, r, x) != side(after, r, x))
                .count();
        }
    }
    assert!(
        crossings > 0,
        "no lane crossed: the test does not exercise guards"
    );
    assert!(crossings < 60, "{crossings}: most lanes crossed");
    assert_eq!(counters.rewalked_lanes as usize, crossings, "{counters:?}");
    assert_eq!(counters.guard_failures.index, 0);
}
