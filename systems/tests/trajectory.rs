//! Trajectory data (`data: Some(Trajectory(…))`): a right-hand side integrated over whole
//! trajectories by the dialect's ODE library, checked against closed-form solutions, and the
//! errors a malformed scene or file gets.

use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use std::path::Path;

/// A scene fitting `rhs` (with `params` starting at `init`) to the trajectory file `csv`.
fn scene(rhs: &str, params: &[(&str, f64)], data: &str) -> Scene {
    let names: Vec<String> = params.iter().map(|(n, _)| format!("{n:?}")).collect();
    let init: Vec<String> = params
        .iter()
        .map(|(n, v)| format!("{n:?}: {v:?}"))
        .collect();
    Scene::from_ron(&format!(
        r#"Scene(
            candidates: [Inline(name: "model", src: {rhs:?})],
            data: Some({data}),
            parameters: Parameters(names: [{}], init: {{{}}}),
            optimizer: Lbfgs(),
            steps: 200,
        )"#,
        names.join(", "),
        init.join(", ")
    ))
    .expect("the scene parses")
}

fn fit(scene: &Scene, dir: &Path) -> FitReport {
    let options = FitOptions {
        threads: Some(1),
        ..FitOptions::default()
    };
    Fit::new(scene, dir, &options)
        .expect("the fit starts")
        .run(|_| {})
}

/// Writes `rows` (one per line) under `header` as `name` in `dir`.
fn csv(dir: &Path, name: &str, header: &str, rows: impl IntoIterator<Item = String>) {
    let mut text = format!("{header}\n");
    for r in rows {
        text += &r;
        text.push('\n');
    }
    std::fs::write(dir.join(name), text).expect("written");
}

#[test]
fn decay_from_two_trajectories_recovers_its_rate() {
    // dx/dt = -k x: x0 e^(-k t), from x0 = 1 and x0 = 3, 40 observations each over [0, 4].
    let k = 1.3;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rows = [1.0, 3.0].into_iter().enumerate().flat_map(|(i, x0)| {
        (0..40).map(move |j| {
            let t = 4.0 * j as f64 / 39.0;
            format!("{i},{t},{}", x0 * f64::exp(-k * t))
        })
    });
    csv(dir.path(), "decay.csv", "run,t,x", rows);
    let s = scene(
        "(define (rhs t x) [(* -1 k x)])",
        &[("k", 0.5)],
        r#"Trajectory(path: "decay.csv", time: "t", states: ["x"], id: Some("run"))"#,
    );
    let r = fit(&s, dir.path());
    let c = &r.candidates[0];
    assert_eq!(c.status, "converged", "{c:?}");
    // RK4 with 10 steps of 0.01 between observations: a global error far below the tolerance.
    assert!((c.params["k"] - k).abs() < 1e-7, "{:?}", c.params);
    assert!(c.loss < 1e-12, "{}", c.loss);
}

#[test]
fn an_oscillator_recovers_its_frequency_and_substeps_set_the_error() {
    // x'' = -w² x as two states: x = cos(w t), v = -w sin(w t).
    let w = 2.1;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rows = (0..60).map(|j| {
        let t = 6.0 * j as f64 / 59.0;
        format!("{t},{},{}", f64::cos(w * t), -w * f64::sin(w * t))
    });
    csv(dir.path(), "spring.csv", "time,x,v", rows);
    let rhs = "(define (rhs t x v) [v (* -1 (* w w) x)])";
    let data = |n: u32| {
        format!(
            r#"Trajectory(path: "spring.csv", time: "time", states: ["x", "v"], substeps: {n})"#
        )
    };
    let fine = fit(&scene(rhs, &[("w", 1.8)], &data(20)), dir.path());
    assert!(
        (fine.candidates[0].params["w"] - w).abs() < 1e-6,
        "{:?}",
        fine.candidates[0]
    );
    // One RK4 step between observations (h ≈ 0.1, w h ≈ 0.21) leaves a visible error: the
    // substeps are honoured, and more of them fit better.
    let coarse = fit(&scene(rhs, &[("w", 1.8)], &data(1)), dir.path());
    assert!(coarse.candidates[0].loss > 100.0 * fine.candidates[0].loss.max(1e-30));
}

#[test]
fn a_model_that_blows_up_fails_instead_of_running_on() {
    // dx/dt = a x² from x = 1 reaches infinity at t = 1/a: the trajectory lasts to t = 4.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rows = (0..20).map(|j| format!("{},{}", j as f64 * 0.2, 1.0 + j as f64 * 0.2));
    csv(dir.path(), "line.csv", "t,x", rows);
    let s = scene(
        "(define (rhs t x) [(* a x x)])",
        &[("a", 1.0)],
        r#"Trajectory(path: "line.csv", time: "t", states: ["x"])"#,
    );
    let r = fit(&s, dir.path());
    let c = &r.candidates[0];
    assert!(matches!(c.status, "failed" | "non-finite"), "{c:?}");
}

#[test]
fn the_shipped_lotka_volterra_trajectory_gives_back_its_rates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenes");
    let text = std::fs::read_to_string(dir.join("lotka_volterra_trajectory.scene.ron"))
        .expect("the scene");
    let r = fit(&Scene::from_ron(&text).expect("parses"), &dir);
    assert_lotka_volterra_rates(&r.candidates[0], 1e-6, "whole");
}

/// The four rates of the shipped trajectory, each within `tolerance` (relative).
fn assert_lotka_volterra_rates(c: &CandidateResult, tolerance: f64, how: &str) {
    let rates = [
        ("alpha", 1.0),
        ("beta", 0.1),
        ("delta", 0.075),
        ("gamma", 1.5),
    ];
    for (name, truth) in rates {
        let got = c.params[name];
        assert!(
            (got - truth).abs() < tolerance * truth,
            "{how}, {name}: {:?}",
            c.params
        );
    }
}

/// The shipped trajectory fitted one interval at a time (`window: Some(1)`, least squares by
/// Levenberg–Marquardt) and in windows of ten intervals: the same rates.
#[test]
fn windows_give_back_the_lotka_volterra_rates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenes");
    let text = std::fs::read_to_string(dir.join("lotka_volterra_trajectory.scene.ron"))
        .expect("the scene");
    let data = r#"data: Some(Trajectory(path: "lotka_volterra_trajectory.csv", time: "t", states: ["prey", "predator"]))"#;
    assert!(text.contains(data));
    for (window, rest) in [
        ("Some(1)", "loss: Mse, optimizer: LevenbergMarquardt(),"),
        ("Some(10)", "optimizer: Lbfgs(),"),
    ] {
        let changed = text
            .replace(data, &data.replace("])", &format!("], window: {window})")))
            .replace("optimizer: Lbfgs(),", rest);
        let r = fit(&Scene::from_ron(&changed).expect("parses"), &dir);
        assert_lotka_volterra_rates(&r.candidates[0], 1e-5, &format!("window {window}"));
    }
}

/// The predator of the shipped Lotka–Volterra trajectory left out of the data (`hidden`): its
/// starting value is calibrated with the rates, from the prey alone. (`beta` is known: with
/// the predator unseen, only `beta` times its scale is identifiable.)
#[test]
fn an_unobserved_predator_is_recovered_from_the_prey_alone() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenes");
    let s = scene(
        "(define (rhs t x y) [(- (* alpha x) (* 0.1 x y)) (- (* delta x y) (* gamma y))])",
        &[("alpha", 0.9), ("delta", 0.07), ("gamma", 1.4)],
        r#"Trajectory(path: "lotka_volterra_trajectory.csv", time: "t", states: ["prey"],
                      hidden: [(name: "predator", start: 4.0)])"#,
    );
    let c = &fit(&s, &dir).candidates[0];
    assert_eq!(c.status, "converged", "{c:?}");
    for (name, truth) in [
        ("alpha", 1.0),
        ("delta", 0.075),
        ("gamma", 1.5),
        ("predator_0", 5.0),
    ] {
        let got = c.params[name];
        assert!((got - truth).abs() < 1e-5 * truth, "{name}: {:?}", c.params);
    }
}

/// A first observation recorded 20% off pins a trajectory started from it; with `fit_start`
/// each trajectory's starting value is calibrated (`x_0_1`, `x_0_2`) and the rate comes back.
#[test]
fn fit_start_calibrates_past_a_wrong_first_observation() {
    let k = 0.8;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rows = [1.0, 3.0].into_iter().enumerate().flat_map(|(i, x0)| {
        (0..30).map(move |j| {
            let t = 3.0 * j as f64 / 29.0;
            let x = x0 * f64::exp(-k * t);
            format!("{i},{t},{}", if j == 0 { 1.2 * x } else { x })
        })
    });
    csv(dir.path(), "decay.csv", "run,t,x", rows);
    let data = |fit_start: bool| {
        format!(
            r#"Trajectory(path: "decay.csv", time: "t", states: ["x"], id: Some("run"),
                          fit_start: {fit_start})"#
        )
    };
    let rhs = "(define (rhs t x) [(* -1 k x)])";
    let pinned = fit(&scene(rhs, &[("k", 0.5)], &data(false)), dir.path());
    let freed = fit(&scene(rhs, &[("k", 0.5)], &data(true)), dir.path());
    let (pinned, freed) = (&pinned.candidates[0], &freed.candidates[0]);
    // Pinned to the wrong start, the rate comes out 22% high.
    assert!((pinned.params["k"] - k).abs() > 0.1, "{pinned:?}");
    assert_eq!(freed.status, "converged", "{freed:?}");
    for (name, truth) in [("k", k), ("x_0_1", 1.0), ("x_0_2", 3.0)] {
        let got = freed.params[name];
        assert!(
            (got - truth).abs() < 1e-6 * truth,
            "{name}: {:?}",
            freed.params
        );
    }
    assert!(freed.loss < 1e-12, "{}", freed.loss);
}

#[test]
fn malformed_trajectory_scenes_are_refused_with_a_reason() {
    let base = r#"candidates: [Inline(name: "m", src: "(define (rhs t x) [x])")],
        parameters: Parameters(names: ["a"], init: {"a": 1.0})"#;
    let cases = [
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"])), loss: Mse"#,
            "leave `loss` out (or fit one interval at a time",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: []))"#,
            "at least one state",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x", "t"]))"#,
            "the column `t` is named twice",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"], substeps: 0))"#,
            "`substeps` must be between 1 and 10000",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"],
                                     hidden: [(name: "x")]))"#,
            "the hidden state `x` has a column's name",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"],
                                     hidden: [(name: "z"), (name: "z")]))"#,
            "the hidden state `z` is listed twice",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"],
                                     hidden: [(name: "a b")]))"#,
            "not a name the dialect can read",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"],
                                     hidden: [(name: "z")], window: Some(1))), loss: Mse"#,
            "it cannot have `hidden` states or `fit_start`",
        ),
        (
            r#"data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"], fit_start: true,
                                     window: Some(1))), loss: Mse"#,
            "it cannot have `hidden` states or `fit_start`",
        ),
    ];
    for (data, want) in cases {
        let err = Scene::from_ron(&format!("Scene({base}, {data})")).expect_err(want);
        assert!(err.to_string().contains(want), "{err} ≠ {want}");
    }
    let search = r#"Scene(
        candidates: [],
        data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"])),
        search: Some(Search(proposers: [Evolve()], budget: Budget(calibrations: Some(64)))),
    )"#;
    let err = Scene::from_ron(search).expect_err("held-out R² without a trajectory held out");
    assert!(
        err.to_string().contains("needs trajectories to hold out"),
        "{err}"
    );
    let held = r#"Scene(candidates: [Inline(name: "m", src: "(define (rhs t x) [x])")],
        data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"], id: Some("i"),
                              held_out: ["b"])))"#;
    let err = Scene::from_ron(held).expect_err("a fit holding a trajectory out");
    assert!(
        err.to_string()
            .contains("`held_out` trajectories are for a search"),
        "{err}"
    );
    for (window, want) in [
        ("window: Some(0)", "at least 1"),
        ("window: Some(1)", "write `loss: Mse`"),
    ] {
        let text = format!(
            r#"Scene(candidates: [Inline(name: "m", src: "(define (rhs t x) [x])")],
            data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"], {window})))"#
        );
        let err = Scene::from_ron(&text).expect_err(want);
        assert!(err.to_string().contains(want), "{err} ≠ {want}");
    }
    let own = r#"Scene(candidates: [Inline(name: "m", src: "(define (rhs t x) [x])",
        data: Some(Trajectory(path: "f.csv", time: "t", states: ["x"])))])"#;
    let err = Scene::from_ron(own).expect_err("a candidate's own trajectory");
    assert!(
        err.to_string().contains("give it as the scene's `data`"),
        "{err}"
    );
}

#[test]
fn a_missing_column_is_named_when_the_fit_starts() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    csv(dir.path(), "f.csv", "t,x", ["0,1".into(), "1,2".into()]);
    let s = scene(
        "(define (rhs t x y) [x y])",
        &[("a", 1.0)],
        r#"Trajectory(path: "f.csv", time: "t", states: ["x", "y"])"#,
    );
    let err = Fit::new(&s, dir.path(), &FitOptions::default()).expect_err("no column y");
    assert!(
        err.to_string().contains("no column `y` (columns: t, x)"),
        "{err}"
    );
}
