//! Every scene shipped in `scenes/` runs as `ndvm fit` would run it, and its outcome is
//! checked against the truth it was made from.

use ndvm_components::prelude::*;
use ndvm_components::scene::{Candidates, Data, Scene};
use ndvm_systems::prelude::*;
use std::path::PathBuf;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn load(name: &str) -> Scene {
    let path = scenes().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scene::from_ron(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A fit stepped one step per schedule run (these tests look inside after single steps).
fn fit(scene: &Scene) -> Fit {
    let options = FitOptions {
        settings: FitSettings {
            steps_per_pass: 1,
            ..FitSettings::default()
        },
        ..FitOptions::default()
    };
    Fit::new(scene, &scenes(), &options).expect("fit starts")
}

fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

/// The conformance oracle of `kalman2d_T80`: (value, dL/dq, dL/dr).
fn kalman_oracle() -> (f64, f64, f64) {
    let k = ndvm_testdata::conformance_program("kalman2d_T80");
    let f = |v: &serde_json::Value| v.as_f64().expect("number");
    (
        f(&k["oracle_result"]),
        f(&k["grads"]["q"]),
        f(&k["grads"]["r"]),
    )
}

#[test]
fn kalman_likelihood_starts_at_the_oracle_and_decreases() {
    let scene = load("kalman2d.scene.ron");
    let mut fit = fit(&scene);
    fit.step();
    // After one step, restart 0 (the conformance point) has been walked and differentiated.
    let world = fit.world_mut();
    let results = world
        .query::<&LaneResults>()
        .single(world)
        .expect("one candidate")
        .clone();
    let groups: Vec<(LaneGroup, GroupOutputs)> = world
        .query::<(&LaneGroup, &GroupOutputs)>()
        .iter(world)
        .map(|(g, o)| (g.clone(), o.clone()))
        .collect();
    let (value, dq, dr) = kalman_oracle();
    assert!(
        rel(results.loss[0], value) < 1e-5,
        "{} vs {value}",
        results.loss[0]
    );
    let (g0, out) = groups
        .iter()
        .find(|(g, _)| g.lanes[0] == 0)
        .expect("group 0");
    let n = g0.lanes.len();
    assert!(
        rel(out.grads[0], dq) < 1e-4,
        "dL/dq {} vs {dq}",
        out.grads[0]
    );
    assert!(
        rel(out.grads[n], dr) < 1e-4,
        "dL/dr {} vs {dr}",
        out.grads[n]
    );

    let report = fit.run(|_| {});
    let c = &report.candidates[0];
    assert_eq!(c.status, "done");
    assert_eq!(c.losses.len(), scene.steps as usize + 1);
    for r in 0..16 {
        let first = c.losses[0][r];
        let last = c.losses[scene.steps as usize][r];
        assert!(last < first, "restart {r}: {first} -> {last}");
    }
    assert!(c.loss < 0.25 * value, "best {}", c.loss);
}

#[test]
fn feynman_constants_are_recovered_within_one_percent() {
    let scene = load("feynman.scene.ron");
    let report = fit(&scene).run(|_| {});
    let mut recovered = Vec::new();
    let mut missed = Vec::new();
    for (c, cand) in report.candidates.iter().zip(&scene.candidates) {
        let Candidates::Inline {
            data: Some(data), ..
        } = cand
        else {
            panic!("inline candidate with data");
        };
        let Data::Synthetic { constants, .. } = &**data else {
            panic!("synthetic data");
        };
        // A·cos(ωt + φ) = A·cos(−ωt − φ) = A·cos(ωt + φ + 2πk): the mirrored oscillator and
        // any whole turn of the phase are the same law.
        let mut params = c.params.clone();
        if c.name == "oscillator" {
            if params["omega"] < 0.0 {
                for k in ["omega", "phi"] {
                    params.insert(k.into(), -params[k]);
                }
            }
            let turn = std::f64::consts::TAU;
            let phi = params["phi"] - turn * ((params["phi"] - constants["phi"]) / turn).round();
            params.insert("phi".into(), phi);
        }
        let worst = constants
            .iter()
            .map(|(name, truth)| rel(params[name], *truth))
            .fold(0.0, f64::max);
        if worst < 0.01 {
            recovered.push(c.name.clone());
        } else {
            missed.push((c.name.clone(), worst));
        }
    }
    assert_eq!(recovered.len() + missed.len(), 15);
    // Levenberg–Marquardt from four starts finds all 15 (Adam stalled on the oscillator).
    assert_eq!(recovered.len(), 15, "missed {missed:?}");
}

#[test]
fn heat_diffusivity_is_recovered_within_a_tenth_of_a_percent() {
    let report = fit(&load("heat1d.scene.ron")).run(|_| {});
    let alpha = report.candidates[0].params["alpha"];
    assert!(rel(alpha, 0.01) < 1e-3, "alpha = {alpha}");
}

#[test]
fn lotka_volterra_rates_are_recovered_within_two_percent() {
    let report = fit(&load("lotka_volterra.scene.ron")).run(|_| {});
    let c = &report.candidates[0];
    for (name, truth) in [
        ("alpha", 1.0),
        ("beta", 0.1),
        ("delta", 0.075),
        ("gamma", 1.5),
    ] {
        assert!(
            rel(c.params[name], truth) < 0.02,
            "{name} = {}",
            c.params[name]
        );
    }
    assert!(c.held_out_r2.expect("held-out data") > 0.99);
}

#[test]
fn cosearch_stream_ranks_the_true_structure_first() {
    let mut scene = load("cosearch.scene.ron");
    scene.steps = 120;
    let report = fit(&scene).run(|_| {});
    assert_eq!(report.candidates.len(), 247);
    let best = &report.candidates[report.ranking()[0]];
    // y = exp(-0.3 x) cos(2 x): the winner has a decay 0.3 and a frequency 2 among its constants.
    let has = |x: f64| best.params.values().any(|v| (v.abs() - x).abs() < 0.02);
    assert!(has(0.3) && has(2.0), "{best:?}");
    assert!(best.held_out_r2.expect("held out") > 0.99);
}

/// The CSV scene: the right law ranks first, and its constants are the least-squares minimum
/// of the training rows, computed here independently by Gauss–Newton.
#[test]
fn decay_csv_fits_the_least_squares_minimum_of_the_training_rows() {
    let scene = load("decay_csv.scene.ron");
    let report = fit(&scene).run(|_| {});
    assert_eq!(report.ranking()[0], 0);
    let best = &report.candidates[0];
    assert_eq!(best.name, "exponential_with_offset");
    let data = ndvm_systems::population::data::load(scene.data.as_ref().expect("data"), &scenes())
        .expect("the CSV loads");
    let rows: Vec<(f64, f64)> = data.inputs["t"]
        .iter()
        .zip(&data.target)
        .zip(&data.train)
        .filter(|(_, train)| **train)
        .map(|((&t, &y), _)| (t, y))
        .collect();
    assert_eq!(rows.len(), 30);
    // y ≈ A·exp(−k t) + C: Gauss–Newton from the truth the data was made from.
    let mut p = [2.5, 0.7, 0.3];
    for _ in 0..50 {
        let (mut jtj, mut jtr) = ([[0.0; 3]; 3], [0.0; 3]);
        for &(t, y) in &rows {
            let e = (-p[1] * t).exp();
            let r = p[0] * e + p[2] - y;
            let j = [e, -p[0] * t * e, 1.0];
            for a in 0..3 {
                jtr[a] += j[a] * r;
                for b in 0..3 {
                    jtj[a][b] += j[a] * j[b];
                }
            }
        }
        let step = solve3(jtj, jtr);
        for a in 0..3 {
            p[a] -= step[a];
        }
    }
    for (name, truth) in [("A", p[0]), ("k", p[1]), ("C", p[2])] {
        assert!(
            rel(best.params[name], truth) < 1e-6,
            "{name}: {} vs {truth}",
            best.params[name]
        );
    }
    let r2 = best.held_out_r2.expect("held-out R²");
    assert!(r2 > 0.98, "{r2}");
    // Standard errors and correlations: σ²(JᵀJ)⁻¹ at the minimum, σ² = SSR/(n − 3), with the
    // inverse by Cramer's rule here.
    let (mut jtj, mut ssr) = ([[0.0; 3]; 3], 0.0);
    for &(t, y) in &rows {
        let e = (-p[1] * t).exp();
        ssr += (p[0] * e + p[2] - y).powi(2);
        let j = [e, -p[0] * t * e, 1.0];
        for a in 0..3 {
            for b in 0..3 {
                jtj[a][b] += j[a] * j[b];
            }
        }
    }
    let sigma2 = ssr / (rows.len() - 3) as f64;
    let columns: Vec<[f64; 3]> = (0..3)
        .map(|c| {
            let mut unit = [0.0; 3];
            unit[c] = 1.0;
            solve3(jtj, unit)
        })
        .collect();
    let cov = |a: usize, b: usize| sigma2 * columns[b][a];
    let u = best.uncertainty.as_ref().expect("standard errors");
    assert_eq!((u.method, u.dof), ("jacobian", Some(27)));
    assert!(rel(u.sigma2.expect("σ²"), sigma2) < 1e-9);
    // The scene's parameters in order: A, k, C.
    for (i, name) in ["A", "k", "C"].into_iter().enumerate() {
        let se = cov(i, i).sqrt();
        assert!(
            rel(u.std_errors[name], se) < 1e-6,
            "{name}: {} vs {se}",
            u.std_errors[name]
        );
        for j in 0..3 {
            let corr = cov(i, j) / (cov(i, i) * cov(j, j)).sqrt();
            assert!((u.correlation[i][j] - corr).abs() < 1e-6, "{i},{j}");
        }
    }
    assert!(
        u.correlation[0][1].abs() > 0.1,
        "A and k are correlated: {:?}",
        u.correlation
    );
    // The predictions are the fitted curve at every row; the held-out rows are the others.
    let pred = best.predictions.as_ref().expect("predictions");
    assert_eq!(pred.values.len(), 40);
    for (i, (&t, &y)) in data.inputs["t"].iter().zip(&pred.values).enumerate() {
        let (a, k, c) = (best.params["A"], best.params["k"], best.params["C"]);
        assert!((y - (a * (-k * t).exp() + c)).abs() < 1e-12, "row {i}");
    }
    let held: Vec<usize> = (0..40).filter(|&i| !data.train[i]).collect();
    assert_eq!(pred.held_out_rows, held);
    assert_eq!(held.len(), 10);
    // Model selection, recomputed from the residuals of the fitted constants.
    let (a, k, c) = (best.params["A"], best.params["k"], best.params["C"]);
    let n = rows.len() as f64;
    let rss: f64 = rows
        .iter()
        .map(|&(t, y)| (a * (-k * t).exp() + c - y).powi(2))
        .sum();
    let mean = rows.iter().map(|r| r.1).sum::<f64>() / n;
    let tss: f64 = rows.iter().map(|r| (r.1 - mean).powi(2)).sum();
    let s = best.selection.as_ref().expect("selection figures");
    assert_eq!((s.params, s.points), (3, 30));
    assert!((s.train_r2 - (1.0 - rss / tss)).abs() < 1e-9, "{s:?}");
    assert!((s.aic - (n * (rss / n).ln() + 6.0)).abs() < 1e-6, "{s:?}");
    assert!(
        (s.bic - (n * (rss / n).ln() + 3.0 * n.ln())).abs() < 1e-6,
        "{s:?}"
    );
    // The two-constant laws fit worse by more than their saving in constants.
    for other in &report.candidates[1..] {
        let o = other.selection.as_ref().expect("selection figures");
        assert_eq!(o.params, 2);
        assert!(
            o.aic > s.aic + 10.0 && o.bic > s.bic + 10.0,
            "{o:?} vs {s:?}"
        );
    }
}

/// `m x = b` for a 3×3 system (Cramer's rule).
fn solve3(m: [[f64; 3]; 3], b: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(m);
    let mut x = [0.0; 3];
    for (c, xc) in x.iter_mut().enumerate() {
        let mut mc = m;
        for r in 0..3 {
            mc[r][c] = b[r];
        }
        *xc = det(mc) / d;
    }
    x
}

#[test]
fn bytecode_decay_both_clients_calibrate_bit_for_bit() {
    let scene = load("bytecode_decay.scene.ron");
    let report = fit(&scene).run(|_| {});
    let [walk, vm] = &report.candidates[..] else {
        panic!("two candidates");
    };
    assert_eq!(
        (walk.name.as_str(), vm.name.as_str()),
        ("walk", "decay_offset")
    );
    assert_eq!(walk.status, "converged");
    assert_eq!(vm.status, walk.status);
    assert_eq!(vm.steps, walk.steps);
    assert_eq!(vm.loss.to_bits(), walk.loss.to_bits());
    for (name, x) in &walk.params {
        assert_eq!(vm.params[name].to_bits(), x.to_bits(), "{name}");
    }
    // Every restart's whole history, and the standard errors.
    let json = |c: &ndvm_systems::report::CandidateResult| {
        let mut v = serde_json::to_value(c).expect("serializes");
        v["name"] = serde_json::Value::Null;
        v["src"] = serde_json::Value::Null;
        v["index"] = serde_json::Value::Null;
        v
    };
    assert_eq!(json(walk), json(vm));
    // The truth the data was made from, as decay_csv.scene.ron finds it.
    assert!(rel(vm.params["k"], 0.691) < 0.01, "k = {}", vm.params["k"]);
}
