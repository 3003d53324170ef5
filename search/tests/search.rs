//! `ndvm search` as a library: determinism, lane decomposition, the records against an
//! independent evaluation, the shared streams' skeletons, and every proposer, including
//! external ones that crash, hang or print garbage.

use ndvm_components::scene::Scene;
use ndvm_engine::prelude::*;
use ndvm_search::symbolic::expr::skeleton;
use ndvm_search::{Event, Record, Search, SearchOptions, SearchReport};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn load(name: &str) -> Scene {
    let text = std::fs::read_to_string(scenes().join(name)).expect("scene");
    Scene::from_ron(&text).expect("scene parses")
}

/// The scalar task's data, with `proposers` and `calibration` spliced in.
fn scalar_scene(proposers: &str, extra: &str) -> Scene {
    Scene::from_ron(&format!(
        r#"Scene(
            candidates: [],
            data: Some(Synthetic(
                program: "(* (exp (* -0.3 x)) (cos (* 2 x)))",
                inputs: {{"x": Linspace(0.1, 6.0, 64)}},
                noise_sd: 0.02, seed: 1, split: Split(train: 0.7, seed: 3),
            )),
            loss: Mse,
            search: Some(Search(proposers: [{proposers}], {extra})),
        )"#
    ))
    .expect("scene")
}

/// Runs a search, returning its records (in log order) and its report.
fn run(
    scene: &Scene,
    base: &Path,
    options: SearchOptions,
) -> (Vec<Record>, SearchReport, Vec<String>) {
    let mut search = Search::new(scene, base, &options).expect("search starts");
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let report = search.run(|e| match e {
        Event::Calibrated(r, _) => records.push(r.clone()),
        Event::Warning(w) => warnings.push(w.to_string()),
        Event::Progress(_) => {}
    });
    (records, report, warnings)
}

fn budget(calibrations: u64, threads: usize) -> SearchOptions {
    SearchOptions {
        threads: Some(threads),
        calibrations: Some(calibrations),
        ..SearchOptions::default()
    }
}

/// A record as the log writes it (NaN as null, so equal records compare equal).
fn json(r: &Record) -> String {
    serde_json::to_string(r).expect("json")
}

fn without_timing(report: &SearchReport) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    v.as_object_mut().expect("object").remove("timing");
    v.to_string()
}

#[test]
fn results_are_byte_identical_at_1_2_and_4_threads() {
    for (name, n) in [
        ("search_scalar.scene.ron", 1500),
        ("search_recurrence.scene.ron", 600),
        ("search_feynman.scene.ron", 800),
    ] {
        let scene = load(name);
        let (log1, rep1, _) = run(&scene, &scenes(), budget(n, 1));
        assert_eq!(log1.len() as u64, n, "{name}");
        assert_eq!(rep1.summary.stopped_by, "calibrations");
        let json1 = without_timing(&rep1);
        for threads in [2, 4] {
            let (log, rep, _) = run(&scene, &scenes(), budget(n, threads));
            assert_eq!(log.len(), log1.len(), "{name} at {threads} threads");
            if let Some(i) = (0..log.len()).find(|&i| json(&log[i]) != json(&log1[i])) {
                panic!(
                    "{name} at {threads} threads: record {i}\n{:?}\n{:?}",
                    log[i], log1[i]
                );
            }
            assert_eq!(without_timing(&rep), json1, "{name} at {threads} threads");
        }
        // Positions are 0, 1, 2, … and every draw of a candidate is one calibration.
        for (i, r) in log1.iter().enumerate() {
            assert_eq!(r.calibration, i as u64);
        }
    }
}

#[test]
fn each_draw_is_calibrated_as_if_alone() {
    // Draw 0 of every candidate takes the same starting values whatever the number of draws;
    // riding as a lane beside three others must not change a bit of its calibration.
    let four = scalar_scene("Stream(path: \"scalar_stream_247.jsonl\")", "");
    let one = scalar_scene(
        "Stream(path: \"scalar_stream_247.jsonl\")",
        "calibration: Calibration(draws: 1)",
    );
    let (log4, ..) = run(&four, &scenes(), budget(4 * 60, 2));
    let (log1, ..) = run(&one, &scenes(), budget(60, 1));
    let firsts: Vec<&Record> = log4.iter().filter(|r| r.draw == 0).collect();
    assert_eq!(firsts.len(), 60);
    for (a, b) in firsts.iter().zip(&log1) {
        assert_eq!(a.candidate, b.candidate);
        assert_eq!(a.params, b.params, "{}", a.src);
        assert_eq!(a.train_loss.to_bits(), b.train_loss.to_bits(), "{}", a.src);
        assert_eq!(
            a.held_out_r2.map(f64::to_bits),
            b.held_out_r2.map(f64::to_bits)
        );
    }
}

#[test]
fn every_record_holds_the_loss_and_r2_of_its_own_constants() {
    // Re-evaluate each calibrated program at its reported constants with the engine alone and
    // recompute train MSE and held-out R² from the data: they must be the record's numbers.
    // Both ways of scoring: in each candidate's last pipeline task (the default), and by the
    // search as it records (a fit stepped a draw at a time through the stages).
    let scene = load("search_scalar.scene.ron");
    for steps_per_pass in [None, Some(1)] {
        let options = SearchOptions {
            steps_per_pass,
            ..budget(400, 2)
        };
        let (log, report, _) = run(&scene, &scenes(), options);
        let by_search = report.timing.search_loop.held_out_s;
        match steps_per_pass {
            None => assert_eq!(by_search, 0.0, "every candidate scored in its task"),
            Some(_) => assert!(
                by_search > 0.0,
                "the stepwise fit leaves scoring to the search"
            ),
        }
        check_records_against_the_engine(&scene, &log);
    }
}

fn check_records_against_the_engine(scene: &Scene, log: &[Record]) {
    let data = ndvm_systems::population::data::load(scene.data.as_ref().expect("data"), &scenes())
        .expect("data");
    let x = &data.inputs["x"];
    let mut checked = 0;
    for r in log.iter().filter(|r| r.status == "done") {
        let names: Vec<&str> = r.params.keys().map(String::as_str).chain(["x"]).collect();
        let program = Program::new(&r.src, &names).expect("program");
        let mut b = Bindings::<f32>::new();
        for (k, v) in &r.params {
            b.scalar(k, *v as f32);
        }
        b.lane_data("x", x.iter().map(|&v| v as f32).collect());
        let mut vm = Vm::<f32>::default();
        let out = evaluate(&mut vm, &program, &b, false).expect("evaluates");
        let Output::Numbers(ys) = out.result else {
            panic!("numbers")
        };
        let (mut sse, mut n) = (0.0, 0.0);
        let held: Vec<(f64, f64)> = ys
            .iter()
            .zip(&data.target)
            .zip(&data.train)
            .filter_map(|((&y, &t), &train)| {
                if train {
                    sse += (f64::from(y) - t).powi(2);
                    n += 1.0;
                    None
                } else {
                    Some((f64::from(y), t))
                }
            })
            .collect();
        let mse = sse / n;
        assert!(
            (mse - r.train_loss).abs() <= 1e-9 * (1.0 + mse.abs()),
            "{}: loss {} vs {mse}",
            r.src,
            r.train_loss
        );
        let mean = held.iter().map(|h| h.1).sum::<f64>() / held.len() as f64;
        let tot: f64 = held.iter().map(|h| (h.1 - mean).powi(2)).sum();
        let res: f64 = held.iter().map(|h| (h.0 - h.1).powi(2)).sum();
        let r2 = 1.0 - res / tot;
        let got = r.held_out_r2.expect("r2");
        assert!((r2 - got).abs() <= 1e-9, "{}: R² {got} vs {r2}", r.src);
        assert_eq!(r.success, r2 > 0.9);
        checked += 1;
    }
    assert!(checked > 300, "{checked}");
}

/// `s0` → `sC`: the shared streams' skeletons replace every digit run, even inside a name.
fn digits_in_names_as_c(s: &str) -> String {
    let mut out = String::new();
    let mut prev_letter = false;
    let mut in_run = false;
    for c in s.chars() {
        if c.is_ascii_digit() && (prev_letter || in_run) {
            if !in_run {
                out.push('C');
            }
            in_run = true;
            continue;
        }
        in_run = false;
        prev_letter = c.is_alphabetic();
        out.push(c);
    }
    out
}

#[test]
fn skeletons_match_the_reference_streams() {
    for file in ndvm_testdata::STREAMS {
        let mut n = 0;
        for v in ndvm_testdata::stream(file) {
            let params: Vec<String> = v["params"]
                .as_array()
                .expect("params")
                .iter()
                .map(|p| p.as_str().expect("name").to_string())
                .collect();
            let src = v["src"].as_str().expect("src");
            // The stream keeps the source's spacing; ours is one space between items.
            let theirs = v["skeleton"].as_str().expect("skeleton");
            let theirs = theirs.split_whitespace().collect::<Vec<_>>().join(" ");
            let theirs = theirs.replace("( ", "(").replace(" )", ")");
            // And it writes digits inside names as `C` too (`s0` as `sC`).
            let ours = skeleton(src, &params).map(|s| digits_in_names_as_c(&s));
            assert_eq!(ours.as_deref(), Ok(theirs.as_str()), "{src}");
            n += 1;
        }
        assert!(n >= 80, "{file}: {n}");
    }
}

/// The bundled search scenes use copies of the reference streams beside them: the same bytes.
#[test]
fn the_scenes_streams_are_the_reference_streams() {
    for file in ndvm_testdata::STREAMS {
        let ours = std::fs::read(scenes().join(file)).expect("scene stream");
        let theirs = std::fs::read(ndvm_testdata::path(&format!("cosearch/{file}"))).expect("ref");
        assert!(
            ours == theirs,
            "scenes/{file} differs from testdata/cosearch/{file}"
        );
    }
}

#[test]
fn the_scalar_task_succeeds_early_and_the_stream_cycles() {
    let scene = load("search_scalar.scene.ron");
    // Twice through the 247 candidates, four draws each.
    let (log, report, warnings) = run(&scene, &scenes(), budget(2 * 247 * 4, 2));
    assert!(warnings.is_empty(), "{warnings:?}");
    let s = &report.summary;
    assert!(s.first_success.is_some_and(|i| i < 1000), "{s:?}");
    assert!(s.distinct_successful_skeletons >= 4, "{s:?}");
    assert!(s.best_held_out_r2.is_some_and(|r| r > 0.95), "{s:?}");
    // The second pass proposes the same programs with fresh draws (the log is in finishing
    // order: a program that fails to decode finishes first).
    let mut by_candidate: std::collections::BTreeMap<(u64, u32), &Record> = Default::default();
    for r in &log {
        by_candidate.insert((r.candidate, r.draw), r);
    }
    assert_eq!(by_candidate.len(), log.len());
    for c in 0..247u64 {
        for draw in 0..4 {
            let (a, b) = (by_candidate[&(c, draw)], by_candidate[&(c + 247, draw)]);
            assert_eq!(a.src, b.src);
            if a.status == "done" {
                assert_ne!(a.params, b.params, "{}", a.src);
            }
        }
    }
    // The one malformed program of the stream fails with its location, every cycle; draws
    // whose loss is not a number are `non-finite`, and both count as failed.
    let failed: Vec<&Record> = log.iter().filter(|r| r.status == "failed").collect();
    let non_finite: Vec<&Record> = log.iter().filter(|r| r.status == "non-finite").collect();
    assert_eq!((failed.len() + non_finite.len()) as u64, s.failed);
    assert!(
        non_finite
            .iter()
            .all(|r| !r.train_loss.is_finite() && !r.success)
    );
    assert!(
        log.iter()
            .all(|r| r.status == "non-finite" || r.status == "failed" || r.train_loss.is_finite())
    );
    assert!(failed.iter().all(|r| {
        r.detail
            .as_deref()
            .is_some_and(|d| d.contains("line 1, column"))
    }));
    // The best per skeleton are ranked, distinct, and really the best of the log.
    let top = &report.top;
    assert!(top.windows(2).all(|w| w[0].held_out_r2 >= w[1].held_out_r2));
    let best = log
        .iter()
        .filter_map(|r| r.held_out_r2)
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(top[0].held_out_r2, Some(best));
}

/// Each draw's status is its own: eight Levenberg–Marquardt draws of one candidate, eight steps
/// each, some reaching the minimum and some still moving at the step limit.
#[test]
fn each_draw_converges_or_stops_on_its_own() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [],
            parameters: Parameters(init: {"a": 1.0, "b": 1.0}),
            data: Some(Synthetic(program: "(/ (* 2.3 S) (+ 0.7 S))",
                inputs: {"S": Linspace(0.05, 5.0, 40)}, noise_sd: 0.03, seed: 2,
                split: Split(train: 0.75, seed: 3))),
            loss: Mse,
            search: Some(Search(
                proposers: [Evolve(seeds: ["(/ (* a S) (+ b S))"])],
                calibration: Calibration(steps: 8, optimizer: LevenbergMarquardt, draws: 8,
                    draw: Normal(sd: 0.5)),
                success: HeldOutR2(0.9),
            )),
        )"#,
    )
    .expect("scene");
    let (log, _, _) = run(&scene, Path::new("."), budget(8, 1));
    let statuses: Vec<&str> = log.iter().map(|r| r.status).collect();
    assert!(log.iter().all(|r| r.candidate == 0), "{statuses:?}");
    assert!(
        statuses.contains(&"converged") && statuses.contains(&"done"),
        "{statuses:?}"
    );
}

#[test]
fn an_evolve_seed_that_does_not_parse_says_why() {
    let scene = scalar_scene(r#"Evolve(seeds: ["(* a (exp x)"])"#, "");
    let e = Search::new(&scene, Path::new("."), &budget(10, 1)).expect_err("bad seed");
    assert_eq!(
        e.to_string(),
        "`Evolve` seed `(* a (exp x)` is not one small program: line 1, column 1: `(` is never closed"
    );
}

#[test]
fn evolve_finds_a_law_from_nothing() {
    // y = 2.5·exp(−0.7 t) + noise; Evolve starts from (* a t) alone.
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [],
            parameters: Parameters(init: {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}),
            data: Some(Synthetic(
                program: "(* 2.5 (exp (* -0.7 t)))",
                inputs: {"t": Uniform(0.0, 4.0, 120)},
                noise: 0.01, seed: 5, split: Split(train: 0.75, seed: 6),
            )),
            loss: Mse,
            search: Some(Search(
                proposers: [Evolve(seeds: ["(* a t)"])],
                calibration: Calibration(steps: 100, optimizer: Adam(lr: 0.1), draw: Normal(sd: 1.0)),
                success: HeldOutR2(0.999),
                budget: Budget(calibrations: Some(20000)),
                seed: 3,
            )),
        )"#,
    )
    .expect("scene");
    let (log, report, _) = run(&scene, Path::new("."), budget(20000, 2));
    assert_eq!(log[0].src, "(* a t)");
    let found = report.successes.first().expect("a success");
    assert!(found.held_out_r2.is_some_and(|r| r > 0.999), "{found:?}");
    // No skeleton is proposed twice.
    let mut skeletons: Vec<&str> = log
        .iter()
        .filter(|r| r.draw == 0)
        .map(|r| r.skeleton.as_str())
        .collect();
    let n = skeletons.len();
    skeletons.sort_unstable();
    skeletons.dedup();
    assert_eq!(skeletons.len(), n);
}

/// A law with no constant to fit is proposed and calibrated as it is, and a spare constant that
/// only fits the noise does not push it off the front: `(* x z)` is the chosen entry, not
/// `(* a (* x z))` or `(* (+ x a) z)` beside it.
#[test]
fn evolve_proposes_laws_without_constants() {
    let scene = Scene::from_ron(
        r#"Scene(
            candidates: [],
            parameters: Parameters(init: {"a": 1.0, "b": 1.0}),
            data: Some(Synthetic(
                program: "(* x z)",
                inputs: {"x": Uniform(1.0, 5.0, 200), "z": Uniform(1.0, 5.0, 200)},
                noise: 0.01, seed: 5, split: Split(train: 0.75, seed: 6),
            )),
            loss: Mse,
            search: Some(Search(
                proposers: [Evolve(seeds: ["(* a (* x z))", "(* (+ x a) z)", "(* x z)"])],
                calibration: Calibration(steps: 20, optimizer: LevenbergMarquardt, draws: 2),
                success: HeldOutR2(0.99),
                budget: Budget(calibrations: Some(60)),
                seed: 1,
            )),
        )"#,
    )
    .expect("scene");
    let (log, report, _) = run(&scene, Path::new("."), budget(60, 1));
    let bare = log.iter().find(|r| r.src == "(* x z)").expect("proposed");
    assert!(bare.params.is_empty(), "{bare:?}");
    assert_eq!(bare.status, "converged");
    let scaled = log
        .iter()
        .find(|r| r.src == "(* a (* x z))")
        .expect("proposed");
    assert!(
        scaled.train_loss < bare.train_loss,
        "a free scale fits the noise a little"
    );
    let front = &report.front;
    let chosen = &front.entries[front.chosen.expect("a pick")];
    assert_eq!(chosen.record.src, "(* x z)", "{:?}", front.entries);
    assert_eq!(chosen.complexity, 3);
    assert!(chosen.truth);
}

#[test]
fn an_external_proposer_sees_every_result_in_order_and_can_end() {
    let dir = std::env::temp_dir().join(format!("ndvm-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let seen = dir.join("seen.jsonl");
    let scene = scalar_scene(
        &format!(
            "Command(argv: [\"python3\", \"proposers/echo.py\", {:?}], batch: 5)",
            seen.display().to_string()
        ),
        "calibration: Calibration(draws: 2), window: 4",
    );
    let (log, report, warnings) = run(&scene, &here(), SearchOptions::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    // Three answers of five candidates, two draws each; then it said it has no more.
    assert_eq!(log.len(), 30);
    assert_eq!(report.summary.stopped_by, "proposers");
    assert_eq!(log[0].src, "(+ (* a x) 0)");
    assert_eq!(log[0].skeleton, "(+ (* P x) C)");
    let text = std::fs::read_to_string(&seen).expect("what it saw");
    let msgs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(msgs[0]["event"], "start");
    assert_eq!(msgs[0]["inputs"], serde_json::json!(["x"]));
    let results: Vec<&serde_json::Value> = msgs.iter().filter(|m| m["event"] == "result").collect();
    assert_eq!(results.len(), 30);
    for (m, r) in results.iter().zip(&log) {
        assert_eq!(m["calibration"], r.calibration);
        assert_eq!(m["src"], r.src.as_str());
        assert_eq!(m["train_loss"].as_f64(), Some(r.train_loss));
    }
    assert_eq!(msgs.last().map(|m| m["event"].clone()), Some("stop".into()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A round whose every proposal is refused (over the parameter limit) is logged, each draw a
/// failed calibration with the reason, and the search asks again: it once ended there, "stopped
/// by every proposer finished", with the proposer still answering.
#[test]
fn a_round_of_refused_proposals_does_not_end_the_search() {
    let scene = scalar_scene(
        "Command(argv: [\"python3\", \"proposers/wide.py\"], batch: 4)",
        "calibration: Calibration(draws: 1), window: 4",
    );
    let (log, report, _) = run(&scene, &here(), SearchOptions::default());
    assert_eq!(report.summary.stopped_by, "proposers");
    assert_eq!(
        log.len(),
        12,
        "two refused answers and one calibrated, four each"
    );
    for r in &log[..8] {
        assert_eq!(r.status, "failed");
        let why = r.detail.as_deref().unwrap_or_default();
        assert!(
            why.contains("1001 parameters, over the limit of 1000"),
            "{why}"
        );
    }
    assert!(log[8..].iter().all(|r| r.src.starts_with("(+ (* a x)")));
    assert!(
        log[8..].iter().all(|r| r.status != "failed"),
        "{:?}",
        &log[8..]
    );
    // The text table shows a long program's start and how much more there is.
    let table = report.table(10);
    let wide = table.lines().find(|l| l.contains("(+ (* p0 x)"));
    let wide = wide.unwrap_or_else(|| panic!("{table}"));
    assert!(
        wide.ends_with("more characters)") && wide.len() < 300,
        "{wide}"
    );
}

/// A program over the size limit is refused unparsed and kept only by its start, so a 100 KB
/// program costs a record of a few hundred bytes, not its size per draw; a stream's oversized
/// line is skipped once, when the stream is read, not copied out at every pass of its cycle.
#[test]
fn an_oversized_program_is_refused_by_its_start() {
    let dir = std::env::temp_dir().join(format!("ndvm-oversized-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let huge = format!("(+ {} x)", "(* a x) ".repeat(13_000));
    let lines = [
        serde_json::json!({"src": huge, "params": ["a"]}),
        serde_json::json!({"src": "(* a x)", "params": ["a"]}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = dir.join("huge.jsonl").display().to_string();
    std::fs::write(&path, text).expect("stream");
    let budget = "calibration: Calibration(draws: 2), budget: Budget(calibrations: Some(4))";
    // From a proposer: each draw a failed calibration, the program kept by its start.
    let scene = scalar_scene(
        &format!("Command(argv: [\"python3\", \"proposers/file.py\", {path:?}], batch: 1)"),
        budget,
    );
    let (log, report, _) = run(&scene, &here(), SearchOptions::default());
    assert_eq!(report.summary.stopped_by, "calibrations");
    assert_eq!(log.len(), 4);
    for r in &log[..2] {
        assert_eq!(r.status, "failed");
        let why = r.detail.as_deref().unwrap_or_default();
        assert!(why.contains("over the 64 KiB limit"), "{why}");
        let more = huge.chars().count() - 200;
        assert!(r.src.len() < 300 && r.src.ends_with(&format!("({more} more characters)")));
        assert!(r.skeleton.len() <= 200);
    }
    assert!(
        log[2..]
            .iter()
            .all(|r| r.src == "(* a x)" && r.status != "failed")
    );
    // From a stream: skipped when read, with its line and size.
    let scene = scalar_scene(&format!("Stream(path: {path:?})"), budget);
    let (log, _, warnings) = run(&scene, &here(), SearchOptions::default());
    assert!(log.iter().all(|r| r.src == "(* a x)"), "{log:?}");
    let said = format!(
        "huge.jsonl, line 1: skipped: the program is {} bytes, over the 64 KiB limit",
        huge.len()
    );
    assert!(warnings.iter().any(|w| w.contains(&said)), "{warnings:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_example_proposer_is_deterministic() {
    let scene = load("search_command.scene.ron");
    let (a, rep, w) = run(&scene, &scenes(), budget(600, 1));
    assert!(w.is_empty(), "{w:?}");
    assert!(rep.summary.successes > 0, "{:?}", rep.summary);
    let (b, ..) = run(&scene, &scenes(), budget(600, 2));
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| json(x) == json(y)));
}

#[test]
fn a_crashing_proposer_is_named_and_the_others_go_on() {
    let scene = scalar_scene(
        "Command(argv: [\"python3\", \"proposers/crash.py\"], batch: 8), \
         Stream(path: \"../../scenes/scalar_stream_247.jsonl\")",
        "",
    );
    let (log, report, warnings) = run(&scene, &here(), budget(400, 2));
    assert_eq!(log.len(), 400);
    let crash = &report.proposers[0];
    let error = crash.error.as_deref().expect("crash reported");
    assert!(
        error.contains("exited") && error.contains("out of ideas"),
        "{error}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("crash.py")),
        "{warnings:?}"
    );
    // Its one answer was calibrated; the stream supplied the rest.
    assert_eq!(crash.candidates, 8);
    assert!(log.iter().any(|r| r.src == "(* a (exp (* b x)))"));
}

#[test]
fn a_hanging_proposer_is_stopped_after_its_timeout() {
    let scene = scalar_scene(
        "Command(argv: [\"python3\", \"proposers/hang.py\"], timeout_seconds: 1.0)",
        "",
    );
    let started = Instant::now();
    let (log, report, _) = run(&scene, &here(), budget(100, 1));
    assert!(started.elapsed().as_secs_f64() < 20.0);
    assert!(log.is_empty());
    assert_eq!(report.summary.stopped_by, "proposers");
    let error = report.proposers[0].error.as_deref().expect("hang reported");
    assert!(error.contains("no answer within 1 s"), "{error}");
}

#[test]
fn garbage_lines_are_skipped_with_their_place_and_a_silent_proposer_is_dropped() {
    let scene = scalar_scene(
        "Command(argv: [\"python3\", \"proposers/garbage.py\"], batch: 4)",
        "",
    );
    let (log, report, warnings) = run(&scene, &here(), budget(100, 1));
    // The one valid candidate was calibrated (four draws).
    assert_eq!(log.len(), 4);
    assert_eq!(log[0].src, "(* a x)");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("output line 2") && w.contains("longer than")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("output line 3") && w.contains("not a candidate")),
        "{warnings:?}"
    );
    let error = report.proposers[0].error.as_deref().expect("dropped");
    assert!(error.contains("no valid candidate in 3 answers"), "{error}");
}

#[test]
fn a_proposer_that_cannot_start_is_an_error_naming_it() {
    let scene = scalar_scene("Command(argv: [\"./no-such-proposer\"])", "");
    let e = Search::new(&scene, &here(), &SearchOptions::default()).expect_err("no proposer");
    assert!(e.to_string().contains("no-such-proposer"), "{e}");
}

#[test]
fn bad_candidates_fail_alone_with_a_reason() {
    let dir = std::env::temp_dir().join(format!("ndvm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("bad.jsonl"),
        [
            r#"{"src": "(* a x)", "params": ["a", "a"]}"#,
            r#"{"src": "(* x x)", "params": ["x"]}"#,
            r#"{"src": "(* a (car x))", "params": ["a"]}"#,
            "not json",
            r#"{"src": "(* a x)", "params": ["a"]}"#,
        ]
        .join("\n"),
    )
    .expect("write");
    let scene = scalar_scene(
        "Stream(path: \"bad.jsonl\", cycle: false)",
        "calibration: Calibration(draws: 1)",
    );
    let (log, report, warnings) = run(&scene, &dir, SearchOptions::default());
    let details: Vec<String> = log
        .iter()
        .map(|r| r.detail.clone().unwrap_or_default())
        .collect();
    assert_eq!(log.len(), 4, "{details:?}");
    assert!(details[0].contains("listed twice"), "{details:?}");
    assert!(
        details[1].contains("both a parameter and a data column"),
        "{details:?}"
    );
    assert!(
        details[2].contains("car") && details[2].contains("line 1, column"),
        "{details:?}"
    );
    assert_eq!(log[3].status, "done");
    assert_eq!(report.summary.failed, 3);
    assert!(
        warnings.iter().any(|w| w.contains("bad.jsonl, line 4")),
        "{warnings:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_scenes_refuse_settings_they_would_ignore() {
    for (bad, says) in [
        ("steps: 20,", "search.calibration"),
        ("optimizer: Sgd(lr: 0.1),", "search.calibration"),
        ("budget_seconds: Some(3.0),", "search.budget"),
    ] {
        let text = format!(
            r#"Scene(candidates: [], {bad}
                data: Some(Synthetic(program: "x", inputs: {{"x": Linspace(0.0, 1.0, 10)}},
                    split: Split(train: 0.5))),
                loss: Mse,
                search: Some(Search(proposers: [Evolve()])))"#
        );
        let e = Scene::from_ron(&text).expect_err(bad);
        assert!(e.message.contains(says), "{bad}: {e}");
    }
    let e =
        Scene::from_ron(r#"Scene(candidates: [], search: Some(Search(proposers: [Evolve()])))"#)
            .expect_err("R² without held-out data");
    assert!(e.message.contains("held-out"), "{e}");
}

#[test]
fn what_a_proposer_forks_ends_with_the_search() {
    let pid_file = std::env::temp_dir().join(format!("ndvm-forks-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pid_file);
    let scene = scalar_scene(
        &format!(
            "Command(argv: [\"python3\", \"proposers/forks.py\", {:?}], batch: 4)",
            pid_file.to_string_lossy()
        ),
        "",
    );
    let (log, report, _) = run(&scene, &here(), budget(40, 1));
    assert_eq!(log.len(), 40);
    assert!(
        report.proposers[0].error.is_none(),
        "{:?}",
        report.proposers
    );
    let pid = std::fs::read_to_string(&pid_file).expect("the proposer wrote its child's pid");
    let _ = std::fs::remove_file(&pid_file);
    // The child is gone (or a zombie waiting for a reaper): no `sleep 60` left running.
    let stat = format!("/proc/{}/stat", pid.trim());
    let alive = || {
        std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .is_some_and(|zombie| !zombie)
    };
    let until = Instant::now() + std::time::Duration::from_secs(5);
    while alive() && Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !alive(),
        "the proposer's child {} is still running",
        pid.trim()
    );
}

#[test]
fn a_search_shares_one_payload_bound_among_its_window() {
    // 300,000 iterations over 4 draws × 45 training points: ~200 MB of lane values, fine for
    // one walk alone (1 GiB) but over a window-of-64's share (64 MiB) of the search's 4 GiB.
    let stream = std::env::temp_dir().join(format!("ndvm-payload-{}.jsonl", std::process::id()));
    let big = "(loop ((i 0) (s a)) (if (< i 300000) (recur (+ i 1) (+ s x)) s))";
    std::fs::write(
        &stream,
        format!("{{\"src\": \"{big}\", \"params\": [\"a\"]}}\n{{\"src\": \"(* a x)\", \"params\": [\"a\"]}}\n"),
    )
    .expect("stream");
    let scene = scalar_scene(
        &format!("Stream(path: {:?}, cycle: false)", stream.to_string_lossy()),
        "calibration: Calibration(steps: 2, optimizer: Adam(lr: 0.1), draws: 4)",
    );
    let (log, report, _) = run(&scene, &here(), budget(8, 1));
    let _ = std::fs::remove_file(&stream);
    assert_eq!(report.summary.calibrations, 8);
    let (heavy, light): (Vec<&Record>, Vec<&Record>) = log.iter().partition(|r| r.src == big);
    assert_eq!((heavy.len(), light.len()), (4, 4));
    for r in heavy {
        assert_eq!(r.status, "failed");
        let detail = r.detail.as_deref().unwrap_or("");
        assert!(
            detail.contains("payload bytes") && detail.contains("67108864"),
            "{detail}"
        );
    }
    assert!(light.iter().all(|r| r.status != "failed"));
}
