//! Templates with holes and searches over trajectories: a stream and `Evolve` filling holes,
//! the fillings checked against what each hole may read, the Lotka–Volterra system discovered
//! from one trajectory and judged on a second, and the scene errors.

use ndvm_components::scene::Scene;
use ndvm_engine::prelude::*;
use ndvm_engine::{Output, evaluate};
use ndvm_search::{Event, Record, Search, SearchOptions, SearchReport};
use ndvm_systems::population::template::Template;
use std::path::{Path, PathBuf};

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn run(scene: &Scene, base: &Path, options: SearchOptions) -> (Vec<Record>, SearchReport) {
    let mut search = Search::new(scene, base, &options).expect("search starts");
    let mut records = Vec::new();
    let report = search.run(|e| {
        if let Event::Calibrated(r, _) = e {
            records.push(r.clone());
        }
    });
    (records, report)
}

fn budget(calibrations: u64, threads: usize) -> SearchOptions {
    SearchOptions {
        calibrations: Some(calibrations),
        threads: Some(threads),
        ..SearchOptions::default()
    }
}

/// A closed-form template over data columns, `y = c + f(x)`, with `c` a scene parameter of the
/// known part: a stream's fillings are calibrated with it, and one that reads a name its hole
/// does not declare fails with the reason.
#[test]
fn a_stream_fills_the_template_and_a_filling_reads_only_what_its_hole_declares() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("fills.jsonl"),
        r#"{"src": "(holes (* a (sin x)))", "params": ["a"]}
{"src": "(holes (* a z))", "params": ["a"]}
{"src": "(holes (* a x) (* a x))", "params": ["a"]}
"#,
    )
    .expect("stream");
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [],
            parameters: Parameters(names: ["c"], init: {"c": 0.0}),
            data: Some(Synthetic(
                program: "(+ 2 (* 3 (sin x)))",
                inputs: {"x": Linspace(0.0, 6.0, 40), "z": Linspace(1.0, 2.0, 40)},
                split: Split(train: 0.75, seed: 1),
            )),
            loss: Mse,
            search: Some(Search(
                template: Some("(+ c (hole f (x)))"),
                proposers: [Stream(path: "fills.jsonl", cycle: false)],
                calibration: Calibration(steps: 30, optimizer: LevenbergMarquardt(), draws: 2),
            )),
        )"#,
    )
    .expect("scene");
    let (records, report) = run(&scene, dir.path(), budget(100, 1));
    assert_eq!(records.len(), 6);
    let by_src = |src: &str| records.iter().find(|r| r.src == src).expect("recorded");
    let fitted = by_src("(holes (* a (sin x)))");
    assert!(
        (fitted.params["c"] - 2.0).abs() < 1e-4,
        "{:?}",
        fitted.params
    );
    assert!(
        (fitted.params["a"] - 3.0).abs() < 1e-4,
        "{:?}",
        fitted.params
    );
    assert!(fitted.held_out_r2.expect("scored") > 0.999_999);
    let undeclared = by_src("(holes (* a z))");
    assert_eq!(undeclared.status, "failed");
    let why = undeclared.detail.as_deref().unwrap_or_default();
    assert!(
        why.contains("hole `f` reads `z`, which it does not declare"),
        "{why}"
    );
    let too_many = by_src("(holes (* a x) (* a x))")
        .detail
        .as_deref()
        .unwrap_or_default();
    assert!(
        too_many.contains("one expression for each of its 1 holes (f)"),
        "{too_many}"
    );
    // The front prints the hole's equation.
    let chosen = report.front.chosen().expect("a front");
    assert_eq!(chosen.equations.len(), 1);
    assert_eq!(chosen.equations[0].hole, "f");
    assert!(chosen.text().starts_with("f = "), "{}", chosen.text());
    // One hole of three atoms: its complexity, without the filling's head.
    assert_eq!(chosen.complexity, 4);
}

/// The shipped discovery scene: `Evolve` fills one hole per state of the Lotka–Volterra
/// system, calibrated one interval at a time on run `a`; run `b`, held out, is predicted whole
/// from its start. The chosen law is the generating one: its skeleton, a training loss at
/// rounding level and run `b` (solved to 1e-12) predicted with R² > 0.99999.
#[test]
fn the_lotka_volterra_system_is_discovered_from_one_trajectory_and_predicts_another() {
    let text =
        std::fs::read_to_string(scenes().join("search_lotka_volterra.scene.ron")).expect("scene");
    let scene = Scene::from_ron(&text).expect("scene parses");
    let (_, report) = run(&scene, &scenes(), budget(2000, 2));
    let chosen = report.front.chosen().expect("a front");
    let eq: Vec<(&str, &str)> = chosen
        .equations
        .iter()
        .map(|e| (e.hole.as_str(), e.sympy.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(eq.len(), 2, "{}", chosen.text());
    assert_eq!((eq[0].0, eq[1].0), ("dprey/dt", "dpredator/dt"));
    // Each hole's expression, evaluated by the engine at fitted constants over a grid of
    // states, is the true right-hand side.
    assert!(
        chosen.record.train_loss < 1e-10,
        "{}",
        chosen.record.train_loss
    );
    let r2 = chosen.record.held_out_r2.expect("run b predicted");
    assert!(r2 > 0.999_99, "held-out R² {r2}");
    let template = Template::of_scene(&scene).expect("template").expect("one");
    let parts = template.expressions(&chosen.record.src).expect("a filling");
    let (prey, predator): (Vec<f64>, Vec<f64>) = (0..25)
        .map(|i| (2.0 + f64::from(i % 5) * 7.0, 1.0 + f64::from(i / 5) * 5.0))
        .unzip();
    let truth: [Box<dyn Fn(f64, f64) -> f64>; 2] = [
        Box::new(|x, y| x - 0.1 * x * y),
        Box::new(|x, y| 0.075 * x * y - 1.5 * y),
    ];
    for (part, truth) in parts.iter().zip(&truth) {
        let params = &chosen.record.params;
        let names: Vec<&str> = (params.keys().map(String::as_str))
            .chain(["prey", "predator"])
            .collect();
        let program = Program::new(part, &names).expect("program");
        let mut b = Bindings::<f64>::new();
        for (k, v) in params {
            b.scalar(k, *v);
        }
        b.lane_data("prey", prey.clone());
        b.lane_data("predator", predator.clone());
        let out = evaluate(&mut Vm::<f64>::default(), &program, &b, false).expect("evaluates");
        let Output::Numbers(ys) = out.result else {
            panic!("numbers")
        };
        for ((x, y), got) in prey.iter().zip(&predator).zip(&ys) {
            let want = truth(*x, *y);
            assert!(
                (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{part} at ({x}, {y}): {got} ≠ {want}"
            );
        }
    }
    // The same records at one thread as at two.
    let (one, _) = run(&scene, &scenes(), budget(300, 1));
    let (two, _) = run(&scene, &scenes(), budget(300, 2));
    assert_eq!(one.len(), 300);
    assert_eq!(format!("{one:?}"), format!("{two:?}"));
}

/// A search calibrated one interval at a time measures each front calibration's trajectory
/// integrated whole (its reconstruction R²): held out as a copy of the fitted run, the same
/// trajectory gives every such calibration the same figure as its held-out R², bit for bit. The
/// chosen entry's reconstruction is within 0.01 of the front's best; a search calibrated on the
/// whole trajectory measures none.
#[test]
fn front_calibrations_carry_their_whole_trajectory_and_the_choice_respects_it() {
    let dir = tempfile::tempdir().expect("dir");
    let text =
        std::fs::read_to_string(scenes().join("lotka_volterra_trajectories.csv")).expect("data");
    let mut csv = String::from("run,t,prey,predator\n");
    for copy in ["a", "a2"] {
        for line in text.lines().filter(|l| l.starts_with("a,")) {
            csv += &format!("{copy}{}\n", &line[1..]);
        }
    }
    std::fs::write(dir.path().join("runs.csv"), csv).expect("csv");
    let scene_of = |window: &str, held: &str| {
        Scene::from_ron(&format!(
            r#"Scene(
                candidates: [],
                data: Some(Trajectory(path: "runs.csv", time: "t", states: ["prey", "predator"],
                    id: Some("run"), {window} held_out: [{held}])),
                loss: {loss},
                search: Some(Search(
                    proposers: [Evolve()],
                    calibration: Calibration(steps: 30, optimizer: {optimizer}, draws: 2),
                    success: TrainLoss(0.0),
                    seed: 3,
                )),
            )"#,
            loss = if window.is_empty() { "Output" } else { "Mse" },
            optimizer = if window.is_empty() {
                "Lbfgs()"
            } else {
                "LevenbergMarquardt()"
            },
        ))
        .expect("scene")
    };
    let (records, report) = run(
        &scene_of("window: Some(1),", "\"a2\""),
        dir.path(),
        budget(400, 2),
    );
    let measured: Vec<&Record> = records.iter().filter(|r| r.front).collect();
    assert!(measured.len() > 3, "{} joined the front", measured.len());
    for r in &measured {
        let (whole, held) = (r.reconstruction_r2, r.held_out_r2);
        assert_eq!(
            whole.map(f64::to_bits),
            held.map(f64::to_bits),
            "{}: {whole:?} ≠ {held:?}",
            r.src
        );
    }
    // Calibrations that never reached the front are not integrated whole.
    assert!(
        records
            .iter()
            .any(|r| !r.front && r.reconstruction_r2.is_none())
    );
    let entries = &report.front.entries;
    let best = (entries.iter())
        .filter_map(|e| e.record.reconstruction_r2)
        .fold(f64::NEG_INFINITY, f64::max);
    let chosen = report.front.chosen().expect("chosen");
    let whole = chosen.record.reconstruction_r2.expect("measured");
    assert!(whole >= best - 0.01, "chosen {whole}, best {best}");
    assert!(report.front.criterion.contains("reconstruction"));
    // Calibrated on the whole trajectory, the loss is the reconstruction itself.
    let (records, report) = run(&scene_of("", ""), dir.path(), budget(40, 2));
    assert!(records.iter().all(|r| r.reconstruction_r2.is_none()));
    assert!(!report.front.criterion.contains("reconstruction"));
}

/// A search whose model carries a state the data do not hold (`hidden`): every filling is
/// calibrated with that state's starting value (`predator_0`), which a filling may not use as
/// its own parameter's name.
#[test]
fn a_hidden_state_starts_where_the_calibration_puts_it() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(
        scenes().join("lotka_volterra_trajectory.csv"),
        dir.path().join("lv.csv"),
    )
    .expect("copied");
    std::fs::write(
        dir.path().join("fills.jsonl"),
        r#"{"src": "(holes (- prey (* 0.1 prey predator)) (- (* 0.075 prey predator) (* 1.5 predator)))", "params": []}
{"src": "(holes (* predator_0 prey) predator)", "params": ["predator_0"]}
"#,
    )
    .expect("stream");
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [],
            data: Some(Trajectory(path: "lv.csv", time: "t", states: ["prey"],
                                  hidden: [(name: "predator", start: 4.0)])),
            search: Some(Search(
                proposers: [Stream(path: "fills.jsonl", cycle: false)],
                calibration: Calibration(steps: 200, optimizer: Lbfgs(), draws: 2,
                                         draw: Normal(sd: 0.2)),
                success: TrainLoss(1e-9),
            )),
        )"#,
    )
    .expect("scene");
    let (records, _) = run(&scene, dir.path(), budget(100, 1));
    let truth = (records.iter())
        .find(|r| r.src.contains("0.075"))
        .expect("the true model calibrated");
    assert!(truth.success && truth.front, "{truth:?}");
    assert!(
        (truth.params["predator_0"] - 5.0).abs() < 1e-5,
        "{:?}",
        truth.params
    );
    let clash = records
        .iter()
        .find(|r| r.status == "failed")
        .expect("refused");
    let why = clash.detail.as_deref().unwrap_or_default();
    assert!(why.contains("`predator_0` is a name the template"), "{why}");
}

#[test]
fn template_errors_are_located_and_a_fit_refuses_a_hole() {
    let search = |template: &str, data: &str| {
        let scene = Scene::from_ron(&format!(
            r#"Scene(
                candidates: [],
                data: Some({data}),
                loss: Mse,
                search: Some(Search(template: Some({template:?}), proposers: [Evolve()],
                    success: TrainLoss(0.1))),
            )"#
        ))
        .expect("scene");
        Search::new(&scene, &scenes(), &SearchOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let data = r#"Synthetic(program: "(* 2 x)", inputs: {"x": Linspace(0.0, 1.0, 10)})"#;
    let e = search("(+ 1\n  (hole f))", data);
    assert!(e.contains("`template`, line 2, column 3: a hole is"), "{e}");
    let e = search("(+ (hole f (x)) (holes x))", data);
    assert!(e.contains("`holes` is a filling's head"), "{e}");
    let e = search("(* 2 x)", data);
    assert!(e.contains("this template has none"), "{e}");
    let fit = Scene::from_ron(
        r#"Scene(
            candidates: [Inline(name: "m", src: "(+ a\n   (hole f (x)))")],
            parameters: Parameters(names: ["a"]),
            data: Some(Synthetic(program: "(* 2 x)", inputs: {"x": Linspace(0.0, 1.0, 10)})),
            loss: Mse,
        )"#,
    )
    .expect("scene");
    let e = ndvm_systems::population::build(&fit, &scenes())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("line 2, column 4: a program with a `(hole …)` is a template"),
        "{e}"
    );
}
