//! Traced runs ([`ndvm_systems::trace`]): tracing changes no result, the trace accounts for
//! every pass's tasks, and its projection onto more workers keeps the bounds any schedule must.

use ndvm_components::scene::Scene;
use ndvm_search::{Event, Search, SearchOptions};
use ndvm_systems::prelude::*;
use ndvm_systems::trace::Trace;
use std::path::PathBuf;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn load(name: &str) -> Scene {
    let text = std::fs::read_to_string(scenes().join(name)).expect("scene");
    Scene::from_ron(&text).expect("scene parses")
}

/// A search's log and its trace.
fn search(threads: usize, trace_passes: bool) -> (String, Option<Trace>) {
    let options = SearchOptions {
        threads: Some(threads),
        calibrations: Some(1200),
        trace_passes,
        ..SearchOptions::default()
    };
    let scene = load("search_scalar.scene.ron");
    let mut search = Search::new(&scene, &scenes(), &options).expect("search starts");
    let mut log = String::new();
    search.run(|e| {
        if let Event::Calibrated(r, _) = e {
            log += &serde_json::to_string(r).expect("json");
            log.push('\n');
        }
    });
    (log, search.trace().cloned())
}

/// A fit's results (no timing), its candidates and its trace.
fn fit(threads: usize, trace_passes: bool) -> (String, usize, Option<Trace>) {
    let mut scene = load("cosearch.scene.ron");
    scene.steps = 20;
    let options = FitOptions {
        threads: Some(threads),
        settings: FitSettings {
            trace_passes,
            ..FitSettings::default()
        },
        ..FitOptions::default()
    };
    let mut fit = Fit::new(&scene, &scenes(), &options).expect("fit starts");
    let report = fit.run(|_| {});
    let json = ndvm_systems::report::to_json(&report, None, 0);
    (json, report.candidates.len(), fit.profile().trace.clone())
}

/// What every trace must hold, whatever the clock said: each pass's tasks are distinct
/// candidates, and a projection is no faster than a perfect split of the work nor slower than
/// one worker.
fn check(trace: &Trace, candidates: usize) {
    let with_tasks = trace.passes.iter().filter(|p| !p.tasks.is_empty()).count();
    assert!(with_tasks > 1, "{with_tasks} passes with tasks");
    for p in &trace.passes {
        let mut homes: Vec<usize> = p.tasks.iter().map(|t| t.home).collect();
        homes.sort_unstable();
        homes.dedup();
        assert_eq!(homes.len(), p.tasks.len(), "a candidate twice in one pass");
        assert!(homes.iter().all(|&h| h < candidates), "{homes:?}");
        assert!(p.tasks.iter().all(|t| t.secs >= 0.0));
        assert!(p.serial_s >= 0.0 && p.beside_s >= 0.0 && p.spread_s >= 0.0);
    }
    let total = trace.total_s();
    let one = trace.project(1).seconds(0.0);
    assert!((one - total).abs() <= 1e-9 * total, "{one} vs {total}");
    for workers in [2, 3, 16, 64] {
        let p = trace.project(workers);
        let secs = p.seconds(0.0);
        let perfect = (total - trace.serial_s()) / workers as f64 + trace.serial_s();
        assert!(
            secs >= perfect * (1.0 - 1e-9),
            "{workers}: {secs} < {perfect}"
        );
        assert!(secs <= total * (1.0 + 1e-9), "{workers}: {secs} > {total}");
        assert_eq!(p.passes as usize, with_tasks);
        // Waking the workers costs every pass that ran tasks.
        assert!((p.seconds(1e-3) - secs - 1e-3 * with_tasks as f64).abs() < 1e-9);
    }
}

#[test]
fn a_traced_search_logs_the_same_calibrations_and_traces_its_passes() {
    let (plain, none) = search(2, false);
    assert!(none.is_none());
    for threads in [1, 2] {
        let (log, trace) = search(threads, true);
        assert_eq!(plain, log, "{threads} threads");
        let trace = trace.expect("a trace");
        // The window is 64: never more tasks in a pass; 1,200 calibrations are 300 candidates.
        assert!(trace.passes.iter().all(|p| p.tasks.len() <= 64));
        check(&trace, 300);
        // Every pass after the first few records what the one before finished beside it.
        assert!(trace.passes.iter().any(|p| p.beside_s > 0.0));
    }
}

#[test]
fn a_traced_fit_gives_the_same_results_and_traces_its_passes() {
    let (plain, _, none) = fit(1, false);
    assert!(none.is_none());
    let (traced, candidates, trace) = fit(2, true);
    assert_eq!(plain, traced);
    let trace = trace.expect("a trace");
    // A fit has nothing beside its passes.
    assert!(trace.passes.iter().all(|p| p.beside_s == 0.0));
    check(&trace, candidates);
}
