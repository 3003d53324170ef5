//! Whole-run benchmarks of `ndvm search` (docs/search.md, docs/performance.md):
//!
//! - `scalar`: the reference protocol on `scenes/search_scalar.scene.ron`, a 10 s budget at 1
//!   and 2 threads — calibrations per second, time to first success, best held-out R², distinct
//!   successful skeletons — and the R² ceiling of the data (the true law fitted to convergence).
//! - `seeds`: the scalar task on five noise realizations: ceiling and best R² within 10 s.
//! - `recurrence`: `scenes/search_recurrence.scene.ron`, 10 s at 2 threads.
//! - `feynman`: an `Evolve` search per law of `scenes/feynman.scene.ron`, 60 s each on 2
//!   threads, and whether (and when) it found the law up to constants.
//! - `reference`: with `NDVM_REF_COSEARCH` naming the reference harness
//!   (`benches/peers/cosearch.cpp`), both tasks on one thread, ndvm and the reference runtime in
//!   alternating rounds (3 rounds of 10 s each by default), and the median ratio of their rates.
//!
//! ```sh
//! cargo bench -p ndvm-benches --bench search                 # everything (about 18 minutes)
//! cargo bench -p ndvm-benches --bench search -- scalar       # one part
//! cargo bench -p ndvm-benches --bench search -- feynman 20   # 20 s per law
//! NDVM_REF_COSEARCH=/tmp/refbuild/cosearch cargo bench -p ndvm-benches --bench search -- reference
//! ```
//!
//! Under `cargo test --benches` (no `--bench` flag) every part runs once with a small budget.

use ndvm_benches::feynman;
use ndvm_components::scene::Scene;
use ndvm_search::{Search, SearchOptions, SearchReport};
use ndvm_systems::prelude::*;

fn load(name: &str) -> Scene {
    let text = std::fs::read_to_string(feynman::scenes().join(name)).expect("scene");
    Scene::from_ron(&text).expect("scene parses")
}

fn search(scene: &Scene, seconds: f64, threads: usize) -> SearchReport {
    let options = SearchOptions {
        threads: Some(threads),
        seconds: Some(seconds),
        ..SearchOptions::default()
    };
    Search::new(scene, &feynman::scenes(), &options)
        .expect("search starts")
        .run(|_| {})
}

fn row(task: &str, threads: usize, r: &SearchReport) {
    let s = &r.summary;
    println!(
        "{task:<11} {threads:>7} {:>12} {:>10.0} {:>15} {:>8.4} {:>10}",
        s.calibrations,
        r.timing.calibrations_per_second,
        r.timing
            .first_success_s
            .map_or_else(|| "-".to_string(), |t| format!("{t:.3}")),
        s.best_held_out_r2.unwrap_or(f64::NAN),
        s.distinct_successful_skeletons,
    );
}

/// The held-out R² of the true structure fitted to convergence: the best any search can do.
fn ceiling(scene: &Scene) -> f64 {
    let data = ron::to_string(&scene.data).expect("data");
    let text = format!(
        r#"Scene(
            candidates: [Inline(name: "truth", src: "(* a (* (exp (* b x)) (cos (* c x))))")],
            parameters: Parameters(names: ["a", "b", "c"], init: {{"a": 1.0, "b": -0.3, "c": 2.0}}),
            data: {data},
            loss: Mse, optimizer: Adam(lr: 0.002), steps: 3000,
        )"#
    );
    let scene = Scene::from_ron(&text).expect("truth scene");
    let mut fit = Fit::new(&scene, &feynman::scenes(), &FitOptions::default()).expect("fit");
    let report = fit.run(|_| {});
    report.candidates[0].held_out_r2.unwrap_or(f64::NAN)
}

fn header() {
    println!(
        "{:<11} {:>7} {:>12} {:>10} {:>15} {:>8} {:>10}",
        "task", "threads", "calibrations", "per second", "first success s", "best R²", "skeletons"
    );
}

fn scalar(seconds: f64) {
    let scene = load("search_scalar.scene.ron");
    header();
    for threads in [1, 2] {
        row("scalar", threads, &search(&scene, seconds, threads));
    }
    println!(
        "R² ceiling of the data (true law fitted): {:.4}\n",
        ceiling(&scene)
    );
}

fn seeds(seconds: f64, n: u64) {
    let base = load("search_scalar.scene.ron");
    println!("{:>5} {:>8} {:>8}", "seed", "ceiling", "best R²");
    for seed in 1..=n {
        let mut scene = base.clone();
        if let Some(ndvm_components::scene::Data::Synthetic { seed: s, .. }) = &mut scene.data {
            *s = seed;
        }
        let best = search(&scene, seconds, 2).summary.best_held_out_r2;
        println!(
            "{seed:>5} {:>8.4} {:>8.4}",
            ceiling(&scene),
            best.unwrap_or(f64::NAN)
        );
    }
    println!();
}

fn recurrence(seconds: f64) {
    let scene = load("search_recurrence.scene.ron");
    header();
    row("recurrence", 2, &search(&scene, seconds, 2));
    println!();
}

fn feynman_laws(seconds: f64, only: usize, max_checks: usize) {
    println!(
        "{:<20} {:>12} {:>10} {:>8} {:>10}  first found / simplest found",
        "law", "calibrations", "recovered", "after s", "checked"
    );
    let mut recovered = 0;
    let laws = feynman::laws();
    for (i, law) in laws.iter().enumerate().take(only) {
        let o = feynman::run(law, seconds, 2, i as u64 + 1, max_checks);
        let (yes, at, src) = match &o.recovered {
            Some((t, r)) => {
                recovered += 1;
                let simplest = o.simplest.as_ref().map_or("", |s| s.src.as_str());
                ("yes", format!("{t:.2}"), format!("{} / {simplest}", r.src))
            }
            None => ("no", "-".into(), String::new()),
        };
        println!(
            "{:<20} {:>12} {:>10} {:>8} {:>10}  {src}",
            o.law,
            o.calibrations,
            yes,
            at,
            format!("{}/{}", o.checked, o.successes)
        );
    }
    println!("recovered {recovered} of {}\n", laws.len().min(only));
}

/// The reference harness's rate (one JSON object on standard output).
fn reference_rate(binary: &str, stream: &str, task: &str, seconds: f64) -> serde_json::Value {
    let out = std::process::Command::new(binary)
        .arg(stream)
        .arg(task)
        .arg(seconds.to_string())
        .output()
        .expect("the reference harness runs");
    serde_json::from_slice(&out.stdout).expect("the reference harness prints JSON")
}

fn reference(seconds: f64, rounds: usize) {
    let Ok(binary) = std::env::var("NDVM_REF_COSEARCH") else {
        println!("reference: set NDVM_REF_COSEARCH to the harness (benches/peers/README.md)\n");
        return;
    };
    println!(
        "{:<11} {:>5} {:>14} {:>14} {:>7}  (1 thread each; reference: first success s, best R², skeletons)",
        "task", "round", "ndvm per s", "ref per s", "ratio"
    );
    for (task, scene, stream) in [
        (
            "scalar",
            "search_scalar.scene.ron",
            "scalar_stream_247.jsonl",
        ),
        (
            "recurrence",
            "search_recurrence.scene.ron",
            "recurrence_stream_80.jsonl",
        ),
    ] {
        let scene = load(scene);
        let stream = feynman::scenes().join(stream).display().to_string();
        let mut ratios = Vec::new();
        for round in 0..rounds {
            let ours = search(&scene, seconds, 1).timing.calibrations_per_second;
            let theirs = reference_rate(&binary, &stream, task, seconds);
            let rate = theirs["per_second"].as_f64().unwrap_or(f64::NAN);
            ratios.push(ours / rate);
            println!(
                "{task:<11} {round:>5} {ours:>14.0} {rate:>14.0} {:>7.2}  ({}, {}, {})",
                ours / rate,
                theirs["first_success_s"],
                theirs["best_r2"],
                theirs["distinct_successes"]
            );
        }
        ratios.sort_by(f64::total_cmp);
        println!("{task}: median ratio {:.2}\n", ratios[ratios.len() / 2]);
    }
}

fn main() {
    let (full, words) = ndvm_benches::bench_args();
    let part = words.first().map_or("all", String::as_str);
    let seconds = words.get(1).and_then(|s| s.parse::<f64>().ok());
    let all = part == "all";
    if !full {
        // A smoke run: every part once, with small budgets.
        scalar(0.5);
        seeds(0.3, 1);
        recurrence(0.5);
        feynman_laws(2.0, 1, 10);
        return;
    }
    if all || part == "scalar" {
        scalar(seconds.unwrap_or(10.0));
    }
    if all || part == "seeds" {
        seeds(seconds.unwrap_or(10.0), 5);
    }
    if all || part == "recurrence" {
        recurrence(seconds.unwrap_or(10.0));
    }
    if all || part == "reference" {
        reference(seconds.unwrap_or(10.0), 3);
    }
    if all || part == "feynman" {
        feynman_laws(seconds.unwrap_or(60.0), usize::MAX, feynman::MAX_CHECKS);
    }
}
