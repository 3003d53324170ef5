//! Hostile input (#23): each case must end with a clean message and exit status 1 (bad input)
//! or 2 (bad usage) — never a panic (101), an abort or a hang — and must never report numbers
//! that are not what was computed.

mod common;
use common::ndvm;
use std::path::PathBuf;
use std::process::Stdio;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("ndvm-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn file(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).expect("write");
    p.to_string_lossy().into_owned()
}

/// A scene fitting `(* a t)` to `2t` by least squares, written to `name`, with `parameters`
/// added to its `Parameters(..)` (on line 3) and `setting` as a further scene field.
fn fit_a_times_t(name: &str, parameters: &str, setting: &str) -> String {
    let parameters = if parameters.is_empty() {
        String::new()
    } else {
        format!(", {parameters}")
    };
    file(
        name,
        &format!(
            r#"Scene(
    candidates: [Inline(name: "c", src: "(* a t)")],
    parameters: Parameters(names: ["a"]{parameters}),
    data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": Linspace(0.0, 1.0, 5)}})),
    loss: Mse,
    {setting}
)"#
        ),
    )
}

/// Runs `ndvm`, which must exit with `code` and say `message` on standard error.
fn fails_with(args: &[&str], code: i32, message: &str) -> String {
    let out = ndvm(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(
        err.contains(message),
        "{args:?}: expected `{message}` in\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn an_error_far_along_one_line_is_located_without_an_excerpt() {
    let long = file("long.scm", &format!("{}(car 1)", " ".repeat(65_540)));
    let err = fails_with(
        &["run", &long, "--json"],
        1,
        "(line 1, column 65541): `car`: expected a pair",
    );
    assert!(
        err.contains("line 1 is 65547 bytes long: not shown"),
        "{err}"
    );
    // Deep nesting on one line: the depth limit, located, and no excerpt either.
    let deep = file(
        "deep.scm",
        &format!("{}1{}", "(+ 1 ".repeat(100_000), ")".repeat(100_000)),
    );
    let out = ndvm(&["run", &deep]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_matrix_whose_size_overflows_or_disagrees_is_refused() {
    let prog = file("trace.scm", "(trace m)");
    for (rows, cols, data) in [
        ("3", "6148914691236517206", "[1, 2]"),
        ("4294967296", "4294967296", "[]"),
        ("2", "2", "[1, 2, 3]"),
    ] {
        let b = file(
            "m.json",
            &format!(
                r#"{{"matrices": {{"m": {{"rows": {rows}, "cols": {cols}, "data": {data}}}}}}}"#
            ),
        );
        fails_with(
            &["run", &prog, "--bindings", &b],
            2,
            &format!("matrix `m` is {rows}x{cols} but has"),
        );
    }
}

#[test]
fn endless_or_unwritable_files_are_clean_errors() {
    // Zeros are not text: refused at the first byte, before any limit's worth of memory.
    fails_with(
        &["run", "/dev/zero"],
        2,
        "cannot read /dev/zero: not text (a NUL byte at byte 0)",
    );
    let prog = file("one.scm", "(+ 1 2)");
    fails_with(
        &["run", &prog, "--bindings", "/dev/zero"],
        2,
        "not text (a NUL byte at byte 0)",
    );
    fails_with(&["fit", "/dev/zero"], 2, "not text (a NUL byte at byte 0)");
    let csv_zero = file(
        "zero_csv.scene.ron",
        r#"Scene(
    candidates: [Inline(name: "c", src: "(* a t)")],
    parameters: Parameters(names: ["a"]),
    data: Some(Csv(path: "/dev/zero", columns: {"t": "t"}, target: "y")),
    loss: Mse,
)"#,
    );
    fails_with(&["fit", &csv_zero], 1, "not text (a NUL byte at byte 0)");
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes/decay_csv.scene.ron");
    let scene = scene.to_string_lossy();
    fails_with(
        &["profile", &scene, "--trace", "/nonexistent/t.json"],
        2,
        "cannot write the trace /nonexistent/t.json",
    );
    // A full disk on standard output.
    let full = std::fs::File::create("/dev/full");
    if let Ok(full) = full {
        let out = common::command()
            .args(["run", "--expr", "(+ 1 2)", "--json"])
            .stdout(full)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("No space left on device"));
    }
    // A closed pipe is not an error.
    let mut child = common::command()
        .args([
            "run",
            "--expr",
            "(+ 1 2)",
            "--lane",
            &format!("a={}", vec!["1"; 20_000].join(",")),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("waits");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

fn scene_with(names: &str, inputs: &str, columns: &str) -> String {
    file(
        "clash.scene.ron",
        &format!(
            r#"Scene(
                candidates: [Inline(name: "c", src: "(* a t)")],
                parameters: Parameters(names: {names}),
                inputs: {inputs},
                data: Some(Synthetic(program: "(* 2 t)", inputs: {columns})),
                loss: Mse,
            )"#
        ),
    )
}

#[test]
fn every_name_clash_is_an_error_naming_both_places() {
    let t = r#"{"t": Linspace(0.0, 1.0, 5)}"#;
    for (names, inputs, columns, message) in [
        (
            r#"["a", "a"]"#,
            "{}",
            t,
            "the parameter `a` is listed twice",
        ),
        (
            r#"["a"]"#,
            r#"{"a": Number(7.0)}"#,
            t,
            "`a` is both a parameter and a shared input",
        ),
        (
            r#"["a", "t"]"#,
            "{}",
            t,
            "`t` is both a parameter and a data column",
        ),
        (
            r#"["a"]"#,
            r#"{"t": Number(1.0)}"#,
            t,
            "`t` is both a data column and a shared input",
        ),
    ] {
        let s = scene_with(names, inputs, columns);
        fails_with(&["fit", &s], 1, &format!("candidate `c`: {message}"));
    }
}

#[test]
fn a_stream_line_with_a_name_clash_is_skipped_and_named() {
    let stream = file(
        "clash.jsonl",
        "{\"src\": \"(* a t)\", \"params\": [\"a\", \"a\"]}\n{\"src\": \"(* a t)\", \"params\": [\"a\"]}\n",
    );
    let s = file(
        "stream.scene.ron",
        &format!(
            r#"Scene(
                candidates: [Stream(path: "{stream}")],
                data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": Linspace(0.0, 1.0, 5)}})),
                loss: Mse,
            )"#
        ),
    );
    let out = ndvm(&["fit", &s]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("line 1: skipped: the parameter `a` is listed twice"),
        "{text}"
    );
    assert!(text.contains("a = 2.0000"), "{text}");
}

#[test]
fn settings_that_make_no_sense_are_errors() {
    for (setting, message) in [
        (
            "budget_seconds: Some(NaN)",
            "`budget_seconds` must be a finite number of seconds",
        ),
        (
            "budget_seconds: Some(inf)",
            "`budget_seconds` must be a finite number of seconds",
        ),
        (
            "optimizer: Adam(lr: -0.1)",
            "`lr` of `Adam` must be a positive number, got -0.1",
        ),
        (
            "optimizer: Adam(beta1: 1.0)",
            "`beta1` of `Adam` must be in [0, 1), got 1",
        ),
        (
            "optimizer: Lbfgs(memory: 0)",
            "`memory` of `Lbfgs` must be at least 1",
        ),
        (
            "optimizer: LevenbergMarquardt(damping: 0.0)",
            "`damping` of `LevenbergMarquardt`",
        ),
    ] {
        let s = fit_a_times_t("settings.scene.ron", "", setting);
        fails_with(&["fit", &s], 1, message);
    }
    let s = file(
        "lm.scene.ron",
        r#"Scene(candidates: [Inline(name: "c", src: "(* a a)")],
                 parameters: Parameters(names: ["a"]), optimizer: LevenbergMarquardt())"#,
    );
    fails_with(
        &["fit", &s],
        1,
        "`LevenbergMarquardt` fits residuals and needs `loss: Mse`",
    );
}

#[test]
fn an_empty_population_says_why() {
    let empty = file("empty.jsonl", "");
    for take in ["None", "Some(0)"] {
        let stream = file(
            "nonempty.jsonl",
            "{\"src\": \"(* a a)\", \"params\": [\"a\"]}\n",
        );
        for path in [&empty, &stream] {
            if path == &stream && take == "None" {
                continue;
            }
            let s = file(
                "empty.scene.ron",
                &format!(r#"Scene(candidates: [Stream(path: "{path}", take: {take})])"#),
            );
            fails_with(
                &["fit", &s],
                1,
                "no candidates (the stream has no line, or `take` is 0)",
            );
        }
    }
}

#[test]
fn sizes_past_the_limits_are_errors_before_any_allocation() {
    let base = |extra: &str, grid: &str| {
        file(
            "sizes.scene.ron",
            &format!(
                r#"Scene(
                    candidates: [Inline(name: "c", src: "(* a t)")],
                    parameters: Parameters(names: ["a"]{extra}),
                    data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": {grid}}})),
                    loss: Mse,
                )"#
            ),
        )
    };
    let small = "Linspace(0.0, 5.0, 10)";
    fails_with(
        &["fit", &base("", "Linspace(0.0, 5.0, 1000000000000)")],
        1,
        "input `t` has 1000000000000 points, over the limit of 10000000",
    );
    fails_with(
        &["fit", &base(", restarts: Restarts(count: 1000000)", small)],
        1,
        "`restarts.count` is 1000000, over the limit of 100000",
    );
    fails_with(
        &[
            "fit",
            &base(
                ", restarts: Restarts(count: 100000)",
                "Linspace(0.0, 5.0, 1000)",
            ),
        ],
        1,
        "candidate `c`: 100000 restarts × 1000 data points = 100000000 lanes, over the limit",
    );
    let s = base("", small);
    fails_with(
        &["fit", &s, "--threads", "100000"],
        1,
        "could not start 100000 worker threads: the limit is 1024",
    );
    // Many parameters: Levenberg–Marquardt's P × P matrices would not fit.
    let names: Vec<String> = (0..1001).map(|i| format!("\"p{i}\"")).collect();
    let many = file(
        "many.scene.ron",
        &format!(
            r#"Scene(candidates: [Inline(name: "c", src: "(* p0 t)")],
                     parameters: Parameters(names: [{}]),
                     data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": Linspace(0.0, 1.0, 5)}})),
                     loss: Mse)"#,
            names.join(", ")
        ),
    );
    fails_with(
        &["fit", &many],
        1,
        "`names` lists 1001 parameters, over the limit of 1000",
    );
    // Many inputs of the largest grid: the data set as a whole is bounded.
    let inputs: Vec<String> = (0..8)
        .map(|i| format!("\"x{i}\": Linspace(0.0, 1.0, 10000000)"))
        .collect();
    let wide = file(
        "wide.scene.ron",
        &format!(
            r#"Scene(candidates: [Inline(name: "c", src: "(* a x0)")],
                     parameters: Parameters(names: ["a"]),
                     data: Some(Synthetic(program: "(* 2 x0)", inputs: {{{}}})),
                     loss: Mse)"#,
            inputs.join(", ")
        ),
    );
    fails_with(
        &["fit", &wide],
        1,
        "the synthetic data hold 80000000 values",
    );
    // A search's draws × points.
    let search = file(
        "big.search.ron",
        r#"Scene(candidates: [],
                 data: Some(Synthetic(program: "(* 2 x)", inputs: {"x": Linspace(0.1, 6.0, 10000)},
                                      split: Split(train: 0.5, seed: 1))),
                 loss: Mse,
                 search: Some(Search(proposers: [Evolve()], calibration: Calibration(draws: 100000))))"#,
    );
    fails_with(
        &["search", &search],
        1,
        "100000 draws × 5000 training points",
    );
}

#[test]
fn linear_algebra_is_charged_by_its_arithmetic() {
    // 2.7·10¹⁰ multiply-adds: refused at once instead of running for minutes.
    fails_with(
        &["run", "--expr", "(trace (matmul (eye 3000) (eye 3000)))"],
        1,
        "eval steps limit of 100000000 exceeded",
    );
    let out = ndvm(&["run", "--expr", "(trace (matmul (eye 40) (eye 40)))"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("40"));
}

#[test]
fn with_gradients_the_adjoints_and_the_tape_count_against_the_payload_limit() {
    // A counted loop over 8 lanes in f64: its payload alone fits 40 MB; with the adjoint buffer
    // and the tape the backward pass would need, it does not.
    let expr = "(loop ((i 0) (x a)) (if (< i 300000) (recur (+ i 1) (* (sin x) 1.0000001)) x))";
    let common = [
        "run",
        "--expr",
        expr,
        "--lane",
        "a=1,2,3,4,5,6,7,8",
        "--precision",
        "f64",
        "--max-payload-bytes",
        "40000000",
    ];
    let out = ndvm(&common);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut grad = common.to_vec();
    grad.push("--grad");
    fails_with(&grad, 1, "payload bytes limit of 40000000 exceeded");
}

#[test]
fn parameter_values_that_make_no_sense_are_located_errors() {
    for (block, message) in [
        (
            r#"init: {"a": NaN}"#,
            "`init` of the scene starts `a` at NaN: a starting value must be a finite number",
        ),
        (
            r#"bounds: {"a": Bounds(min: Some(2.0), max: Some(1.0))}"#,
            "`bounds` of the scene for `a` are min Some(2.0), max Some(1.0): bounds must be numbers with min ≤ max",
        ),
        (
            r#"bounds: {"a": Bounds(min: Some(NaN))}"#,
            "bounds must be numbers with min ≤ max",
        ),
        (
            "restarts: Restarts(count: 2, scale: -1.0)",
            "`restarts.scale` of the scene is -1: it must be a finite number ≥ 0",
        ),
    ] {
        let s = fit_a_times_t("values.scene.ron", block, "");
        let err = fails_with(&["fit", &s], 1, message);
        if block.contains("\"a\"") {
            assert!(err.contains(":3:"), "located on the parameters line: {err}");
        }
    }
}

#[test]
fn a_full_standard_error_loses_the_message_not_the_status() {
    // Writing to /dev/full fails (ENOSPC): `eprintln!` would panic there (exit 101).
    let full = std::fs::File::create("/dev/full").expect("full");
    let out = common::command()
        .args(["run", "--expr", "(car 1)"])
        .stderr(Stdio::from(full))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
}

/// A name bound twice on the command line is refused (which value was meant?); a flag still
/// overrides the bindings file, as documented.
#[test]
fn a_name_bound_twice_on_the_command_line_is_refused() {
    let prog = file("twice.scm", "(* q 2)");
    for flags in [
        ["--bind", "q=1", "--bind", "q=2"],
        ["--bind", "q=1", "--lane", "q=1,2"],
        ["--lane", "q=1,2", "--lane", "q=3,4"],
    ] {
        let mut args = vec!["run", prog.as_str()];
        args.extend(flags);
        fails_with(&args, 2, "`q` is bound twice on the command line");
    }
    let json = file("twice.json", r#"{"scalars": {"q": 5.0}}"#);
    let out = ndvm(&[
        "run",
        &prog,
        "--bindings",
        &json,
        "--bind",
        "q=1.5",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["result"], serde_json::json!([3.0]), "{v}");
}

/// An excerpt never prints a line over 4 KiB, nor a form's thousands of lines: a long
/// neighbouring line is left out of the context, and a form over many lines is shown by its
/// first line, with the range it spans.
#[test]
fn excerpts_stay_short_beside_long_lines_and_long_forms() {
    let long = "x".repeat(100_000);
    let beside = file("beside.scm", &format!(";{long}\n(car 1)\n;{long}\n"));
    let err = fails_with(&["run", &beside], 1, "beside.scm:2:1");
    assert!(err.contains(" 2 │ (car 1)") && err.len() < 2_000, "{err}");
    let tall = file("tall.scm", &format!("(car\n{})\n", " 1\n".repeat(300_000)));
    let err = fails_with(&["run", &tall], 1, "(the form spans lines 1–300002");
    assert!(err.contains(" 1 │ (car") && err.len() < 2_000, "{err}");
    // A short program keeps its context lines.
    let short = file("short.scm", "(+ 1 2)\n(car 1)\n(+ 3 4)\n");
    let err = fails_with(&["run", &short], 1, " 1 │ (+ 1 2)");
    assert!(err.contains(" 3 │ (+ 3 4)"), "{err}");
}

/// A candidate with no constants under every optimizer: nothing to fit, its loss reported
/// (Levenberg–Marquardt once panicked on the empty Jacobian: `chunk size must be non-zero`).
#[test]
fn a_candidate_without_constants_fits_under_every_optimizer() {
    for optimizer in ["LevenbergMarquardt()", "Lbfgs()", "Adam(lr: 0.1)"] {
        let scene = file(
            "no_constants.scene.ron",
            &format!(
                r#"Scene(
    candidates: [Inline(name: "c", src: "(* 3 t)")],
    parameters: Parameters(names: []),
    data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": Linspace(0.0, 1.0, 5)}})),
    loss: Mse,
    optimizer: {optimizer},
    steps: 10,
)"#
            ),
        );
        let out = ndvm(&["fit", &scene, "--json", "--out", &file("nc.json", "")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{optimizer}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let c = &v["candidates"][0];
        // Mean of (t)² over t = 0, .25, .5, .75, 1: 0.375.
        let loss = c["loss"].as_f64().expect("a loss");
        assert!((loss - 0.375).abs() < 1e-12, "{optimizer}: {c}");
    }
}

/// Runs `ndvm args`, which must succeed, and reads its standard output as JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = ndvm(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    serde_json::from_slice(&out.stdout).expect("json")
}

/// A time budget stops a candidate inside a long loop (the walk looks at the budget every few
/// thousand steps): the fit reports it stopped for the budget, not failed at the step limit, and
/// a search over such candidates logs none of them (they are unfinished) instead of running each
/// to the step limit (a 1 s budget once ran 28 s).
#[test]
fn a_time_budget_stops_candidates_inside_long_loops() {
    let slow = |i: u32| {
        format!(
            "(loop ((i 0)) (if (= i {}) (* a x) (recur (+ i 1))))",
            20_000_000 + i
        )
    };
    let fit = file(
        "slow_fit.scene.ron",
        &format!(
            r#"Scene(
    candidates: [Inline(name: "slow", src: "{}")],
    parameters: Parameters(names: ["a"]),
    data: Some(Synthetic(program: "(* 2 x)", inputs: {{"x": Linspace(0.1, 6.0, 8)}})),
    loss: Mse,
    steps: 5,
    budget_seconds: Some(0.2),
)"#,
            slow(0)
        ),
    );
    let v = json_of(&["fit", &fit, "--json", "--out", &file("slow_fit.json", "")]);
    let c = &v["candidates"][0];
    assert_eq!(c["status"], "stopped", "{c}");
    assert_eq!(c["detail"], "wall-clock budget spent", "{c}");

    let stream: String = (0..16)
        .map(|i| format!("{{\"src\": \"{}\", \"params\": [\"a\"]}}\n", slow(i)))
        .collect();
    file("slow.jsonl", &stream);
    let search = file(
        "slow_search.scene.ron",
        r#"Scene(
    candidates: [],
    data: Some(Synthetic(
        program: "(* 2 x)",
        inputs: {"x": Linspace(0.1, 6.0, 8)},
        split: Split(train: 0.7, seed: 3),
    )),
    loss: Mse,
    search: Some(Search(
        proposers: [Stream(path: "slow.jsonl")],
        calibration: Calibration(steps: 5, optimizer: Adam(lr: 0.05), draws: 1),
        budget: Budget(seconds: Some(0.2)),
    )),
)"#,
    );
    let dir = dir().join("slow_search_out");
    let v = json_of(&["search", &search, "--json", "--out", &dir.to_string_lossy()]);
    let s = &v["summary"];
    assert_eq!(s["stopped_by"], "seconds", "{s}");
    assert_eq!(s["calibrations"], 0, "{s}");
    assert!(s["unfinished"].as_u64().is_some_and(|n| n > 0), "{s}");
}

#[test]
fn a_fifo_as_an_input_is_refused_at_once() {
    let fifo = dir().join("input.fifo");
    if !common::mkfifo(&fifo) {
        return; // no mkfifo here
    }
    let fifo = fifo.to_string_lossy().into_owned();
    let prog = file("fifo_prog.scm", "(* a 2)");
    let csv_scene = file(
        "fifo_csv.scene.ron",
        &format!(
            r#"Scene(
    candidates: [Inline(name: "c", src: "(* a t)")],
    parameters: Parameters(names: ["a"]),
    data: Some(Csv(path: "{fifo}", columns: {{"t": "t"}}, target: "y")),
    loss: Mse,
)"#
        ),
    );
    let said = "it is a FIFO, not a file";
    fails_with(&["run", &fifo], 2, said);
    fails_with(&["run", &prog, "--bindings", &fifo], 2, said);
    fails_with(&["run", "--bytecode", &fifo], 2, said);
    fails_with(&["fit", &fifo], 2, said);
    let err = String::from_utf8_lossy(&ndvm(&["fit", &csv_scene]).stderr).into_owned();
    assert!(err.contains(said), "{err}");
}

#[test]
fn a_fit_of_too_many_candidates_and_a_search_of_too_many_lanes_are_refused() {
    // 100,001 stream lines: the reader stops one past the limit.
    let line = "{\"src\": \"(* a t)\"}\n";
    let stream = file("many.jsonl", &line.repeat(100_001));
    let scene = file(
        "many.scene.ron",
        &format!(
            r#"Scene(
    candidates: [Stream(path: "{stream}")],
    parameters: Parameters(names: ["a"]),
    data: Some(Synthetic(program: "(* 2 t)", inputs: {{"t": Linspace(0.0, 1.0, 5)}})),
    loss: Mse,
)"#
        ),
    );
    fails_with(
        &["fit", &scene],
        1,
        "the population has more than 100000 candidates",
    );
    for (window, draws) in [(64, 30_000), (65_536, 100)] {
        let scene = file(
            &format!("wide{window}.scene.ron"),
            &format!(
                r#"Scene(
    candidates: [],
    data: Some(Synthetic(program: "(* 2 x)", inputs: {{"x": Linspace(0.0, 1.0, 64)}}, split: Split(train: 0.7, seed: 1))),
    loss: Mse,
    search: Some(Search(
        proposers: [Evolve()],
        calibration: Calibration(steps: 10, optimizer: Adam(lr: 0.1), draws: {draws}),
        window: {window},
        budget: Budget(calibrations: Some(100)),
    )),
)"#
            ),
        );
        let err = fails_with(
            &["search", &scene],
            1,
            "lanes in flight, over the limit of 4194304",
        );
        assert!(
            err.contains(&format!("window {window} × {draws} draws")),
            "{err}"
        );
    }
}

#[test]
fn bytecode_read_from_json_or_binary_is_located_in_its_listing() {
    let text = file("jump.nbc", "PUSH 1\nJUMP 2\nRET\n");
    let json = dir().join("jump.nbc.json").to_string_lossy().into_owned();
    let binary = dir().join("jump.nbcb").to_string_lossy().into_owned();
    for (to, out) in [("json", &json), ("nbcb", &binary)] {
        let done = ndvm(&["asm", &text, "--to", to, "-o", out]);
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    // The jump's target, made out of range in each form.
    let j = std::fs::read_to_string(&json).expect("json");
    std::fs::write(&json, j.replace("\"target\": 2", "\"target\": 99")).expect("json");
    let mut b = std::fs::read(&binary).expect("binary");
    let at = b.iter().rposition(|&x| x == 29).expect("the JUMP opcode");
    b[at + 1..at + 5].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&binary, b).expect("binary");
    for path in [&json, &binary] {
        let err = fails_with(&["run", path], 1, "JUMP target 99 is out of range");
        assert!(
            err.contains("(at `JUMP L99`, line 2 of the listing)"),
            "{err}"
        );
        // No excerpt of the file's bytes or of an unrelated JSON line.
        assert!(
            !err.contains("╭─") && !err.contains("ndvm-bytecode"),
            "{err}"
        );
    }
}
