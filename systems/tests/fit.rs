//! The fit pipeline as a whole: determinism across threads, runs and lane layouts; gradients
//! against finite differences; failures, interrupts and budgets.

use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use ndvm_systems::report;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn scene_file(name: &str) -> Scene {
    let text = std::fs::read_to_string(scenes().join(name)).expect("scene");
    Scene::from_ron(&text).expect("parses")
}

fn run(scene: &Scene, options: &FitOptions) -> FitReport {
    Fit::new(scene, &scenes(), options)
        .expect("starts")
        .run(|_| {})
}

/// The results JSON without its timing: what must not change.
fn results(scene: &Scene, options: &FitOptions) -> String {
    report::to_json(&run(scene, options), None, 0)
}

fn threads(n: usize) -> FitOptions {
    FitOptions {
        threads: Some(n),
        ..FitOptions::default()
    }
}

/// A mixed population: a stream of closed forms (some failing), a data fit with divergent
/// loops (Lotka–Volterra), and a likelihood over a matrix input (Kalman), scaled down.
fn population() -> Vec<Scene> {
    let mut cosearch = scene_file("cosearch.scene.ron");
    cosearch.steps = 15;
    if let Some(ndvm_components::scene::Candidates::Stream { take, .. }) =
        cosearch.candidates.first_mut()
    {
        *take = Some(60);
    }
    let mut lv = scene_file("lotka_volterra.scene.ron");
    lv.steps = 8;
    let mut kalman = scene_file("kalman2d.scene.ron");
    kalman.steps = 10;
    vec![cosearch, lv, kalman]
}

#[test]
fn results_are_byte_identical_at_1_2_and_4_threads_and_across_runs() {
    for scene in population() {
        let one = results(&scene, &threads(1));
        assert!(one.contains("\"loss\""), "{one}");
        assert_eq!(one, results(&scene, &threads(2)));
        assert_eq!(one, results(&scene, &threads(4)));
        assert_eq!(one, results(&scene, &threads(2)), "rerun");
    }
}

#[test]
fn results_do_not_depend_on_the_steps_per_pass() {
    // A candidate's steps inside one task (the pipeline) or a step per schedule run through the
    // stages: the same bytes, with first-order and trial-based optimizers, at 1 and 2 threads.
    let mut scenes = population();
    scenes.push(decay_scene("LevenbergMarquardt", 30, 1.5, -0.2));
    scenes.push(decay_scene("Lbfgs()", 30, 1.5, -0.2));
    for scene in scenes {
        let passes = |steps_per_pass, pass_millis, threads| FitOptions {
            threads: Some(threads),
            settings: FitSettings {
                steps_per_pass,
                pass_millis,
                ..FitSettings::default()
            },
            ..FitOptions::default()
        };
        let stepwise = results(&scene, &passes(1, None, 1));
        assert!(stepwise.contains("\"loss\""), "{stepwise}");
        // Passes cut by time (a millisecond: after the first step of each) change nothing.
        for (k, ms, t) in [
            (3, None, 1),
            (16, None, 2),
            (1000, None, 2),
            (1000, Some(1), 2),
        ] {
            let piped = results(&scene, &passes(k, ms, t));
            assert_eq!(stepwise, piped, "{k} steps per pass, {ms:?} ms");
        }
    }
}

#[test]
fn a_batch_of_lanes_fits_exactly_as_each_lane_alone() {
    // One lane per group walks every (restart, point) alone; 7 cuts restarts mid-way; 4096
    // puts a candidate's lanes in one walk. The admission window only changes who runs when.
    for scene in population() {
        let layout = |lanes_per_group, window| FitOptions {
            settings: FitSettings {
                lanes_per_group,
                window,
                ..FitSettings::default()
            },
            ..FitOptions::default()
        };
        let batched = results(&scene, &layout(4096, 1024));
        assert_eq!(batched, results(&scene, &layout(1, 1024)));
        assert_eq!(batched, results(&scene, &layout(7, 3)));
    }
}

fn decay_scene(optimizer: &str, steps: u32, a: f64, b: f64) -> Scene {
    Scene::from_ron(&format!(
        r#"Scene(
            candidates: [Inline(name: "decay", src: "(* a (exp (* b x)))")],
            parameters: Parameters(names: ["a", "b"], init: {{"a": {a}, "b": {b}}},
                                   restarts: Restarts(count: 3, scale: 0.2, seed: 4)),
            data: Some(Synthetic(program: "(+ 0.1 (* 2 (exp (* -0.4 x))))", constants: {{}},
                                 inputs: {{"x": Linspace(0.0, 4.0, 25)}}, noise: 0.05, seed: 2,
                                 split: Split(train: 0.6, seed: 1))),
            loss: Mse,
            optimizer: {optimizer},
            steps: {steps},
        )"#
    ))
    .expect("scene")
}

#[test]
fn the_loss_gradient_matches_central_differences() {
    // One SGD step moves each restart by -lr * gradient. Shifting `init` shifts every restart
    // by the same amount (the restart offsets come from the seed), so zero-step fits at
    // shifted starts give each restart's (training) loss for central differences.
    let lr = 1e-3;
    let (a, b) = (1.5, -0.2);
    let sgd = format!("Sgd(lr: {lr})");
    let stepped = run(&decay_scene(&sgd, 1, a, b), &threads(2));
    let start = run(&decay_scene(&sgd, 0, a, b), &threads(2));
    let h = 1e-6;
    let shifted = |da: f64, db: f64| run(&decay_scene(&sgd, 0, a + da, b + db), &threads(1));
    let mut fd_squares = [0.0; 3];
    for (name, da, db) in [("a", h, 0.0), ("b", 0.0, h)] {
        let (up, down) = (shifted(da, db), shifted(-da, -db));
        for (r, square) in fd_squares.iter_mut().enumerate() {
            let before = &start.candidates[0].restarts[r];
            let after = &stepped.candidates[0].restarts[r];
            let grad = (before.params[name] - after.params[name]) / lr;
            let fd = (up.candidates[0].restarts[r].loss - down.candidates[0].restarts[r].loss)
                / (2.0 * h);
            assert!(
                (grad - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "restart {r}, {name}: {grad} vs {fd}"
            );
            assert!(
                grad.abs() > 1e-3,
                "{name}: gradient {grad} is not informative"
            );
            *square += fd * fd;
        }
    }
    // The reported gradient norm (of the best restart, at the final constants: here the
    // start, no step taken) is the norm of the finite-difference gradient.
    let c = &start.candidates[0];
    let norm = c
        .convergence
        .as_ref()
        .and_then(|v| v.gradient_norm)
        .expect("a gradient norm");
    let fd_norm = fd_squares[c.best_restart].sqrt();
    assert!(
        (norm - fd_norm).abs() <= 1e-6 * (1.0 + fd_norm),
        "{norm} vs {fd_norm}"
    );
}

#[test]
fn a_parameter_with_a_zero_gradient_on_every_step_is_not_identified() {
    // `k` only picks a branch: the loss never depends on it smoothly.
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "step", src: "(if (> k 0) (* A t) (* 2 A t))")],
            parameters: Parameters(names: ["A", "k"], init: {"A": 1.0, "k": 0.3}),
            data: Some(Synthetic(program: "(* 2 t)", inputs: {"t": Linspace(0.0, 3.0, 20)})),
            loss: Mse,
        )"#,
    )
    .expect("scene");
    let report = run(&scene, &threads(1));
    let c = &report.candidates[0];
    assert_eq!(
        c.warnings,
        [
            "the parameter `k` is not identified: its gradient was exactly zero on every step \
          (the loss does not depend on it here), so its value is its starting value",
            "no standard errors: JᵀJ is singular at the fitted constants (a constant the data \
             does not pin down)"
        ]
    );
    assert_eq!(c.params["k"], 0.3);
    assert!(
        (c.params["A"] - 1.0).abs() > 0.5,
        "A moved: {}",
        c.params["A"]
    );
}

#[test]
fn progress_counts_optimizer_steps_and_tracks_the_best_loss() {
    // 40 steps: three passes of 16 (the default steps per pass) report on the way.
    let scene = decay_scene("Adam(lr: 0.01)", 40, 1.5, -0.2);
    let mut seen = Vec::new();
    let report = Fit::new(&scene, &scenes(), &threads(1))
        .expect("starts")
        .run(|p| seen.push(p));
    let last = seen.last().expect("progress");
    assert_eq!((last.work_done, last.work_total), (40, 40));
    assert_eq!((last.finished, last.total), (1, 1));
    assert!(seen.windows(2).all(|w| w[0].work_done <= w[1].work_done));
    assert!(seen.iter().any(|p| p.work_done > 0 && p.work_done < 40));
    assert_eq!(last.best_loss, Some(report.candidates[0].loss));
}

#[test]
fn a_step_limit_reached_while_improving_is_told_from_convergence() {
    let short = run(&decay_scene("Adam(lr: 0.01)", 10, 1.5, -0.2), &threads(2));
    let c = short.candidates[0].convergence.clone().expect("figures");
    assert_eq!(short.candidates[0].status, "done");
    assert!(!c.converged && c.still_improving(), "{c:?}");
    assert!(
        short.table(5).contains("still improving"),
        "{}",
        short.table(5)
    );
    let mut scene = decay_scene("Adam(lr: 0.05)", 5000, 1.5, -0.2);
    scene.tolerance = Some(1e-12);
    let long = run(&scene, &threads(2));
    let c = long.candidates[0].convergence.clone().expect("figures");
    assert_eq!(long.candidates[0].status, "converged");
    assert!(c.converged && !c.still_improving(), "{c:?}");
    assert!(c.gradient_norm.is_some_and(|g| g < 1e-3), "{c:?}");
}

/// The verdict is the best restart's: Michaelis–Menten from 8 starts, 8 steps of
/// Levenberg–Marquardt — the best restart reaches the minimum (no loss change, a gradient at
/// the rounding floor) while a poor start is still moving at the step limit.
#[test]
fn the_convergence_verdict_is_the_best_restarts_own() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "mm", src: "(/ (* a S) (+ b S))")],
            parameters: Parameters(names: ["a", "b"], init: {"a": 1.0, "b": 1.0},
                restarts: Restarts(count: 8, scale: 0.5, seed: 1)),
            data: Some(Synthetic(program: "(/ (* 2.3 S) (+ 0.7 S))", constants: {},
                inputs: {"S": Linspace(0.05, 5.0, 40)}, noise_sd: 0.03, seed: 2,
                split: Split(train: 0.75, seed: 3))),
            loss: Mse,
            optimizer: LevenbergMarquardt,
            steps: 8,
        )"#,
    )
    .expect("scene");
    let c = &run(&scene, &threads(2)).candidates[0];
    let figures = c.convergence.clone().expect("figures");
    assert_eq!(c.status, "converged", "{figures:?}");
    assert!(figures.converged, "{figures:?}");
    assert_eq!(figures.last_relative_change, Some(0.0));
    assert!(
        figures.gradient_norm.is_some_and(|g| g < 1e-6),
        "{figures:?}"
    );
    // The worst restart is nowhere near (it is not what the verdict is about).
    let worst = c.restarts.iter().map(|r| r.loss).fold(0.0, f64::max);
    assert!(worst > 100.0 * c.loss, "{worst} vs {}", c.loss);
}

/// A straight line's curve and band have a closed form: y = a + b·x, and the band's half-width
/// t·√(σa² + x²·σb² + 2x·ρ·σa·σb), t Student's 97.5% quantile at n − 2 degrees of freedom.
#[test]
fn the_plotted_curve_and_band_are_the_fit_and_its_delta_method_interval() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "line", src: "(+ a (* b x))")],
            parameters: Parameters(names: ["a", "b"], init: {"a": 0.0, "b": 0.0}),
            data: Some(Synthetic(program: "(+ 1 (* 2 x))", constants: {},
                inputs: {"x": Uniform(-1.0, 3.0, 30)}, noise_sd: 0.1, seed: 4)),
            loss: Mse,
            steps: 50,
        )"#,
    )
    .expect("scene");
    let mut fit = Fit::new(&scene, &scenes(), &threads(1)).expect("starts");
    let report = fit.run(|_| {});
    let c = &report.candidates[0];
    let curves = fit.curves(&report, 5);
    let curve = &curves[&0];
    let xs = &fit.datasets()[&0].inputs["x"];
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    assert_eq!(curve.x.len(), ndvm_systems::report::curve::POINTS);
    assert_eq!((curve.x[0], *curve.x.last().expect("x")), (lo, hi));
    let (a, b) = (c.params["a"], c.params["b"]);
    let u = c.uncertainty.as_ref().expect("standard errors");
    let (sa, sb, rho) = (u.std_errors["a"], u.std_errors["b"], u.correlation[0][1]);
    let band = curve.band.as_ref().expect("a band");
    for ((&x, &y), &h) in curve.x.iter().zip(&curve.y).zip(band) {
        assert!((y - (a + b * x)).abs() < 1e-12, "y({x}) = {y}");
        // 30 points, all training: 28 degrees of freedom, t = 2.048407141795244 (scipy).
        let t = 2.048_407_141_795_244;
        let want = t * (sa * sa + x * x * sb * sb + 2.0 * x * rho * sa * sb).sqrt();
        assert!(
            (h - want).abs() <= 1e-8 * want,
            "band({x}) = {h}, want {want}"
        );
    }
}

#[test]
fn a_failing_candidate_is_reported_with_its_location_and_the_others_go_on() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [
                Inline(name: "good", src: "(* (- a 2) (- a 2))"),
                Inline(name: "syntax", src: "(+ a\n   (* 2 a)"),
                Inline(name: "type", src: "(+ a (car 5))"),
                Inline(name: "unbound", src: "(+ a zeta)"),
            ],
            parameters: Parameters(names: ["a"], init: {"a": 0.0}),
            optimizer: Adam(lr: 0.1),
            steps: 100,
        )"#,
    )
    .expect("scene");
    let report = run(&scene, &threads(2));
    let status: Vec<&str> = report.candidates.iter().map(|c| c.status).collect();
    assert_eq!(status, ["done", "failed", "failed", "failed"]);
    assert!((report.candidates[0].params["a"] - 2.0).abs() < 0.05);
    let detail = |i: usize| report.candidates[i].detail.clone().unwrap_or_default();
    assert!(detail(1).contains("syntax error"), "{}", detail(1));
    assert!(
        detail(2).starts_with("line 1, column 6: type error"),
        "{}",
        detail(2)
    );
    assert!(detail(3).contains("zeta"), "{}", detail(3));
    assert_eq!(report.ranking()[0], 0);
    // The table shows each located error under the source line it points at.
    let table = report.table(10);
    assert!(
        table.contains(&format!(
            "error: candidate `type`: {}\n    1 | (+ a (car 5))\n      |      ^\n",
            detail(2)
        )),
        "{table}"
    );
    assert_eq!(report.candidates[2].src, "(+ a (car 5))");
}

#[test]
fn a_non_finite_loss_is_its_own_status_naming_the_row_and_ranks_last() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [
                Inline(name: "reciprocal", src: "(/ A t)"),
                Inline(name: "linear", src: "(* A t)"),
            ],
            parameters: Parameters(names: ["A"], init: {"A": 1.0}),
            data: Some(Synthetic(program: "(* 2 t)", inputs: {"t": Values([0.0, 1.0, 2.0, 3.0])})),
            loss: Mse,
            steps: 20,
        )"#,
    )
    .expect("scene");
    let report = run(&scene, &threads(2));
    let status: Vec<&str> = report.candidates.iter().map(|c| c.status).collect();
    assert_eq!(status, ["non-finite", "converged"]);
    assert_eq!(
        report.candidates[0].detail.as_deref(),
        Some(
            "the loss is inf in every restart: the output is inf at data row 1 (lane 0, restart 0)"
        )
    );
    assert_eq!(report.ranking(), [1, 0]);
}

#[test]
fn a_malformed_stream_line_is_skipped_with_its_place_and_counted() {
    let dir = std::env::temp_dir().join(format!("ndvm-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("s.jsonl"),
        "{\"src\": \"(* (- a 1) (- a 1))\", \"params\": [\"a\"]}\n{\"src\": (+ a}\n\n{\"src\": \"(* a a)\", \"params\": [\"a\"]}\n",
    )
    .expect("write");
    std::fs::write(dir.join("bad.jsonl"), "not json\n").expect("write");
    let scene = |stream: &str| {
        Scene::from_ron(&format!(
            r#"Scene(candidates: [Stream(path: "{stream}")], steps: 5)"#
        ))
        .expect("scene")
    };
    let report = Fit::new(&scene("s.jsonl"), &dir, &threads(1))
        .expect("starts")
        .run(|_| {});
    let names: Vec<&str> = report.candidates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["s:1", "s:4"]);
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    assert!(
        report.warnings[0].starts_with("s.jsonl, line 2: skipped: "),
        "{:?}",
        report.warnings
    );
    assert_eq!(
        report.warnings[1],
        "s.jsonl: 1 malformed line skipped, 2 candidates read"
    );
    assert!(
        report
            .table(10)
            .contains("warning: s.jsonl, line 2: skipped")
    );
    let e = Fit::new(&scene("bad.jsonl"), &dir, &threads(1)).expect_err("nothing valid");
    assert!(e.to_string().starts_with("bad.jsonl, line 1: "), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_interrupt_or_a_spent_budget_stops_the_fit_with_results() {
    let mut scene = scene_file("kalman2d.scene.ron");
    scene.steps = 5;
    let interrupted = FitOptions {
        interrupted: Some(Arc::new(AtomicBool::new(true))),
        ..FitOptions::default()
    };
    let report = run(&scene, &interrupted);
    assert_eq!(report.candidates[0].status, "stopped");
    assert_eq!(report.candidates[0].detail.as_deref(), Some("interrupted"));
    scene.budget_seconds = Some(0.0);
    let report = run(&scene, &FitOptions::default());
    assert_eq!(report.candidates[0].status, "stopped");
    // Budget checks happen between steps: the starting parameters are still reported.
    assert_eq!(report.candidates[0].params["q"], 0.05);
}

#[test]
fn missing_files_are_errors_naming_the_file() {
    let scene =
        Scene::from_ron(r#"Scene(candidates: [File("no-such-model.scm")])"#).expect("scene");
    let e = Fit::new(&scene, Path::new("."), &FitOptions::default()).expect_err("missing");
    assert!(e.to_string().contains("no-such-model.scm"), "{e}");
}

#[test]
fn a_csv_data_fit_converges_by_tolerance() {
    // y = 3x − 1 + small wiggle, from a CSV whose columns are renamed for the program.
    let dir = std::env::temp_dir().join(format!("ndvm-csv-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut csv = String::from("time,signal\n");
    for i in 0..40 {
        let x = i as f64 / 10.0;
        csv += &format!("{x},{}\n", 3.0 * x - 1.0 + 0.01 * (i as f64 * 1.7).sin());
    }
    std::fs::write(dir.join("line.csv"), csv).expect("write");
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "line", src: "(+ (* a t) b)")],
            parameters: Parameters(names: ["a", "b"], init: {"a": 0.0, "b": 0.0}),
            data: Some(Csv(path: "line.csv", columns: {"t": "time"}, target: "signal",
                           split: Split(train: 0.75, seed: 2))),
            loss: Mse,
            optimizer: Adam(lr: 0.1, beta2: 0.99),
            steps: 5000,
            tolerance: Some(1e-12),
        )"#,
    )
    .expect("scene");
    let report = Fit::new(&scene, &dir, &FitOptions::default())
        .expect("fit")
        .run(|_| {});
    let c = &report.candidates[0];
    assert_eq!(c.status, "converged");
    assert!(c.steps < 5000, "{} steps", c.steps);
    assert!(
        (c.params["a"] - 3.0).abs() < 0.01 && (c.params["b"] + 1.0).abs() < 0.02,
        "{c:?}"
    );
    assert!(c.held_out_r2.expect("10 held-out points") > 0.999);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `drop_non_finite: true` leaves out the rows with a NaN or infinite cell, says so in the
/// warnings, and fits the rest exactly as a file without them.
#[test]
fn rows_with_non_finite_cells_are_dropped_and_counted_when_the_scene_asks() {
    let dir = std::env::temp_dir().join(format!("ndvm-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let rows: Vec<(f64, f64)> = (0..12)
        .map(|i| (i as f64 * 0.5, 3.0 - 0.4 * i as f64 * 0.5))
        .collect();
    let mut with_bad = String::from("t,y\n");
    let mut clean = String::from("t,y\n");
    for (i, (t, y)) in rows.iter().enumerate() {
        clean += &format!("{t},{y}\n");
        with_bad += &format!("{t},{y}\n");
        if i == 3 {
            with_bad += "7.5,NaN\ninf,1.0\n";
        }
    }
    std::fs::write(dir.join("bad.csv"), with_bad).expect("write");
    std::fs::write(dir.join("clean.csv"), clean).expect("write");
    let scene = |file: &str, drop: bool| {
        Scene::from_ron(&format!(
            r#"Scene(
                candidates: [Inline(name: "line", src: "(+ a (* b t))")],
                parameters: Parameters(names: ["a", "b"]),
                data: Some(Csv(path: "{file}", columns: {{"t": "t"}}, target: "y",
                               drop_non_finite: {drop})),
                loss: Mse,
            )"#
        ))
        .expect("scene")
    };
    let fit = |s: &Scene| {
        Fit::new(s, &dir, &FitOptions::default())
            .map(|mut f| f.run(|_| {}))
            .map_err(|e| e.to_string())
    };
    let e = fit(&scene("bad.csv", false)).expect_err("refused");
    assert!(e.contains("row 6: column `y` holds `NaN`"), "{e}");
    let dropped = fit(&scene("bad.csv", true)).expect("fits");
    assert_eq!(
        dropped.warnings,
        [
            "bad.csv: 2 row(s) with a NaN or infinite cell left out (`drop_non_finite: true`): row 6, 7"
        ]
    );
    let reference = fit(&scene("clean.csv", false)).expect("fits");
    let (a, b) = (&dropped.candidates[0], &reference.candidates[0]);
    assert_eq!(a.loss.to_bits(), b.loss.to_bits());
    assert_eq!(a.params, b.params);
    assert!((a.params["b"] + 0.4).abs() < 1e-9 && (a.params["a"] - 3.0).abs() < 1e-9);
    let _ = std::fs::remove_dir_all(&dir);
}
