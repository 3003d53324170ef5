//! `ndvm fit` and `ndvm profile` end to end.

mod common;
use common::{ndvm, scene};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

/// Runs `ndvm`, which must succeed.
fn ndvm_ok(args: &[&str]) -> Output {
    let out = ndvm(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The stages in schedule order.
const STAGES: [&str; 8] = [
    "decode",
    "schedule",
    "gpu",
    "replay",
    "walk",
    "merge-masks",
    "backward",
    "optimize",
];

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ndvm-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

fn json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("written")).expect("json")
}

#[test]
fn fit_writes_deterministic_results_and_losses() {
    let heat = scene("heat1d.scene.ron");
    let (a, b, losses) = (tmp("a.json"), tmp("b.json"), tmp("losses.csv"));
    let out = ndvm(&["fit", &heat, "--threads", "1", "--steps", "40", "--out"])
        .status
        .code();
    assert_eq!(out, Some(2), "--out needs a value");
    let run = |path: &PathBuf, threads: &str, more: &[&str]| {
        let p = path.to_string_lossy().into_owned();
        let l = losses.to_string_lossy().into_owned();
        let mut args = vec![
            "fit",
            &heat,
            "--threads",
            threads,
            "--steps",
            "40",
            "--out",
            &p,
            "--losses",
            &l,
        ];
        args.extend(more);
        let out = ndvm_ok(&args);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let table = run(&a, "1", &[]);
    assert!(
        table.contains("rank") && table.contains("alpha="),
        "{table}"
    );
    run(&b, "2", &[]);
    let c = tmp("c.json");
    let walking = run(&c, "2", &["--walk-every-step"]);
    assert!(walking.contains(" 0 replays"), "{walking}");
    let (mut ja, mut jb, mut jc) = (json(&a), json(&b), json(&c));
    assert!(ja["timing"]["counters"]["replays"].as_u64() > Some(30));
    assert_eq!(ja["timing"]["threads"], 1);
    assert_eq!(jb["timing"]["threads"], 2);
    assert!(
        ja["timing"]["stages"]
            .as_array()
            .is_some_and(|s| s.len() == 8)
    );
    for j in [&mut ja, &mut jb, &mut jc] {
        j.as_object_mut().expect("object").remove("timing");
    }
    assert_eq!(ja, jb);
    assert_eq!(
        ja, jc,
        "replaying tapes and walking every step fit the same"
    );
    assert_eq!(ja["candidates"][0]["steps"], 40);
    let csv = std::fs::read_to_string(&losses).expect("csv");
    // A header, then 3 restarts x 41 evaluations.
    assert_eq!(csv.lines().count(), 1 + 3 * 41, "{csv}");
    assert!(csv.starts_with("candidate,name,restart,step,loss\n0,\"heat1d\",0,0,"));
}

#[test]
fn fit_prints_json_on_request() {
    let out = ndvm(&[
        "fit",
        &scene("kalman2d.scene.ron"),
        "--steps",
        "3",
        "--json",
    ]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["candidates"][0]["name"], "kalman2d");
    assert_eq!(
        v["candidates"][0]["restarts"].as_array().map(Vec::len),
        Some(16)
    );
    assert_eq!(v["ranking"][0], 0);
    assert_eq!(v["device"], serde_json::json!({"kind": "cpu"}));
    // Without `--out`, the results go to `ndvm-out/<scene>/` in the working folder.
    let out = ndvm_ok(&["fit", &scene("kalman2d.scene.ron"), "--steps", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let footer = "; device: CPU; results in ndvm-out/kalman2d/results.json";
    assert!(text.trim_end().ends_with(footer), "{text}");
    let written = common::scratch().join("ndvm-out/kalman2d/results.json");
    assert_eq!(json(&written)["candidates"][0]["name"], "kalman2d");
}

/// `--device gpu` names the adapter in the footer and the JSON; a software one (Mesa's
/// lavapipe, as in CI) is called a CPU emulating a GPU and warned about, and the Vulkan
/// loader's noise about `XDG_RUNTIME_DIR` is not shown. Skips without an adapter (fails with
/// `REQUIRE_GPU=1`).
#[test]
fn the_device_that_ran_is_named() {
    let path = tmp("gpu.scene.ron");
    std::fs::write(
        &path,
        r#"Scene(
    candidates: [Inline(name: "decay", src: "(* a (exp (* b x)))")],
    parameters: Parameters(names: ["a", "b"], init: {"a": 1.0, "b": -0.1}),
    data: Some(Synthetic(program: "(* 2 (exp (* -0.5 x)))", constants: {}, inputs: {"x": Linspace(0, 4, 32)})),
    loss: Mse,
    optimizer: Adam(lr: 0.05),
    steps: 4,
    precision: Some(F32),
)"#,
    )
    .expect("scene");
    let path = path.to_string_lossy().into_owned();
    let out = ndvm(&["fit", &path, "--device", "gpu"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("no GPU adapter") {
        assert_ne!(std::env::var("REQUIRE_GPU").as_deref(), Ok("1"), "{stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    let footer = text.lines().last().unwrap_or("");
    assert!(footer.contains("; device: GPU "), "{text}");
    let json = ndvm_ok(&["fit", &path, "--device", "gpu", "--json"]);
    let v: Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["device"]["kind"], "gpu");
    if v["device"]["software"] == true {
        assert!(footer.contains("a CPU emulating a GPU"), "{footer}");
        assert!(
            text.contains("is a CPU emulating a GPU (Mesa's lavapipe"),
            "{text}"
        );
    }
}

#[test]
fn a_malformed_scene_exits_1_with_its_line_and_column() {
    let path = tmp("bad.scene.ron");
    std::fs::write(
        &path,
        "Scene(\n    candidates: [File(\"m.scm\")],\n    setps: 3,\n)\n",
    )
    .expect("write");
    let p = path.to_string_lossy().into_owned();
    let out = ndvm(&["fit", &p]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{p}:3:")) && err.contains("setps"),
        "{err}"
    );
    let out = ndvm(&["fit", "no/such/scene.ron"]);
    assert_eq!(out.status.code(), Some(2));
}

/// An output path that cannot be written fails before the fit, not after it (a million steps
/// would take minutes).
#[test]
fn an_unwritable_output_path_fails_before_the_fit() {
    let heat = scene("heat1d.scene.ron");
    for flag in ["--out", "--losses"] {
        let out = ndvm(&[
            "fit",
            &heat,
            "--steps",
            "1000000",
            flag,
            "/no/such/folder/r.json",
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "cannot write /no/such/folder/r.json: the folder /no/such/folder does not exist"
            ),
            "{err}"
        );
    }
}

/// Silent failures made loud: a typo in an `init` key, a NaN cell in the data.
#[test]
fn a_misnamed_init_key_and_a_nan_cell_are_located_errors() {
    let path = tmp("typo.scene.ron");
    let csv = tmp("decay.csv");
    std::fs::write(&csv, "t,y\n0,2.0\n1,1.2\n2,nan\n3,0.45\n").expect("write");
    let scene = |init_key: &str| {
        format!(
            "Scene(\n    candidates: [Inline(name: \"decay\", src: \"(* A (exp (- 0 (* k t))))\")],\n    \
             parameters: Parameters(names: [\"A\", \"k\"],\n        init: {{\"A\": 2.0, \"{init_key}\": 0.5}}),\n    \
             data: Some(Csv(path: {:?}, columns: {{\"t\": \"t\"}}, target: \"y\")),\n    loss: Mse,\n)\n",
            csv.to_string_lossy()
        )
    };
    std::fs::write(&path, scene("K")).expect("write");
    let p = path.to_string_lossy().into_owned();
    let out = ndvm(&["fit", &p]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{p}:4:")) && err.contains("`init` of the scene names `K`, which is not one of its parameters (A, k); did you mean `k`?"),
        "{err}"
    );
    std::fs::write(&path, scene("k")).expect("write");
    let out = ndvm(&["fit", &p]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("row 4: column `y` holds `nan`, not a finite number"),
        "{err}"
    );
}

#[test]
fn profile_reports_every_stage_and_writes_a_trace() {
    let trace = tmp("trace.json");
    let t = trace.to_string_lossy().into_owned();
    // As `ndvm fit` runs it: every step of a candidate in one task (the pipeline), its work
    // still booked to each stage's row.
    let out = ndvm_ok(&[
        "profile",
        &scene("heat1d.scene.ron"),
        "--steps",
        "5",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    for (i, stage) in [(3, "replay"), (4, "walk"), (6, "backward"), (7, "optimize")] {
        assert_eq!(v["stages"][i]["stage"], stage);
        assert!(
            v["stages"][i]["total_s"].as_f64().is_some_and(|t| t > 0.0),
            "{stage}"
        );
    }
    assert_eq!(v["counters"]["walks"], 1);
    assert_eq!(v["counters"]["replays"], 5);
    // Six evaluations in fewer schedule runs (one, unless a pass ran past its 250 ms).
    assert!(
        v["counters"]["steps"].as_u64().is_some_and(|n| n < 6),
        "{v}"
    );
    // A step at a time, each stage its own system and span.
    let out = ndvm_ok(&[
        "profile",
        &scene("heat1d.scene.ron"),
        "--steps",
        "5",
        "--steps-per-pass",
        "1",
        "--json",
        "--trace",
        &t,
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = v["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(names, STAGES);
    assert_eq!(v["stages"][4]["calls"], 6);
    // The merge has no system of its own but counts a call per step, with its time.
    assert_eq!(v["stages"][5]["stage"], "merge-masks");
    assert_eq!(v["stages"][5]["calls"], 6);
    assert!(v["stages"][5]["total_s"].as_f64().is_some_and(|t| t > 0.0));
    // The first step walks; the tape is replayed on the other five.
    assert_eq!(v["counters"]["walks"], 1);
    assert_eq!(v["counters"]["replays"], 5);
    assert!(v["counters"]["tape_nodes"].as_u64().is_some_and(|n| n > 0));
    let events: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace"))
        .expect("trace is JSON");
    let walks = events
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "walk" && e["ph"] == "B")
        .count();
    assert_eq!(walks, 6);
    // The stages run in schedule order, step after step (the gpu stage only runs in an f32
    // fit that has a GPU: this one is f64; the merge runs inside the optimize stage's pass).
    let cpu: Vec<&str> = STAGES
        .into_iter()
        .filter(|&s| s != "gpu" && s != "merge-masks")
        .collect();
    let order: Vec<&str> = events
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "B")
        .filter_map(|e| e["name"].as_str())
        .take(2 * cpu.len())
        .collect();
    assert_eq!(order, [cpu.clone(), cpu].concat());
    let table = ndvm(&["profile", &scene("heat1d.scene.ron"), "--steps", "2"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("merge-masks") && text.contains("ecs"),
        "{text}"
    );
}

/// A parameter the program never mentions is not "fitted": the table and the JSON say so.
#[test]
fn an_unused_parameter_is_a_warning_in_the_table_and_the_json() {
    let path = tmp("unused.scene.ron");
    std::fs::write(
        &path,
        r#"Scene(
    candidates: [Inline(name: "decay", src: "(* A (exp (- 0 (* 0.5 t))))")],
    parameters: Parameters(names: ["A", "k"], init: {"A": 1.0, "k": 0.3}),
    data: Some(Synthetic(program: "(* 2 (exp (- 0 (* 0.5 t))))", inputs: {"t": Linspace(0.0, 3.0, 20)})),
    loss: Mse,
)"#,
    )
    .expect("write");
    let p = path.to_string_lossy().into_owned();
    let message = "the parameter `k` does not appear in the program: its value is its starting value, not fitted";
    let table = String::from_utf8_lossy(&ndvm_ok(&["fit", &p]).stdout).into_owned();
    assert!(
        table.contains(&format!("warning: candidate `decay`: {message}")),
        "{table}"
    );
    let v: Value = serde_json::from_slice(&ndvm_ok(&["fit", &p, "--json"]).stdout).expect("json");
    assert_eq!(v["candidates"][0]["warnings"][0], message);
    assert_eq!(v["candidates"][0]["params"]["k"], 0.3);
}

/// `--plots DIR`: the data-and-fit figure parses as SVG and draws every data row twice (the
/// data and its residual), the CSV beside it holds the predictions of the results JSON, and
/// index.html shows every figure.
#[test]
fn plots_draw_every_data_point_and_an_index_shows_them() {
    let dir = tmp("plots");
    let _ = std::fs::remove_dir_all(&dir);
    let out = tmp("plots.json");
    let d = dir.to_string_lossy().into_owned();
    let o = out.to_string_lossy().into_owned();
    let printed = ndvm_ok(&[
        "fit",
        &scene("decay_csv.scene.ron"),
        "--plots",
        &d,
        "--out",
        &o,
    ]);
    let results = json(&out);
    // The table and the index show AIC, ΔAIC and BIC beside the loss, and name the preferred
    // candidate (the JSON's figures, in the same rounding).
    let cands = results["candidates"].as_array().expect("candidates");
    let aic = |c: &Value| c["selection"]["aic"].as_f64().expect("aic");
    let min = cands.iter().map(aic).fold(f64::INFINITY, f64::min);
    let preferred = cands.iter().find(|c| aic(c) == min).expect("a minimum");
    let table = String::from_utf8_lossy(&printed.stdout);
    assert!(table.contains("ΔAIC") && table.contains("BIC"), "{table}");
    assert!(
        table.contains(&format!(
            "model selection: the lowest AIC is `{}`",
            preferred["name"].as_str().expect("name")
        )),
        "{table}"
    );
    let best = &results["candidates"][0];
    let pred: Vec<f64> = best["predictions"]["values"]
        .as_array()
        .expect("predictions")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    assert_eq!(pred.len(), 40);

    let svg = std::fs::read_to_string(dir.join("candidate-0.svg")).expect("figure");
    let doc = roxmltree::Document::parse(&svg).expect("the figure is well-formed SVG");
    let circles: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .map(|n| {
            let at = |a: &str| {
                n.attribute(a)
                    .and_then(|v| v.parse().ok())
                    .expect("coordinate")
            };
            (at("cx"), at("cy"))
        })
        .collect();
    // 40 data points, 40 residuals, and the two legend markers — beside the plot, not on it.
    assert_eq!(circles.len(), 82, "{} circles", circles.len());
    let (legend, plotted): (Vec<&(f64, f64)>, Vec<_>) = circles.iter().partition(|c| c.0 >= 800.0);
    assert_eq!(legend.len(), 2, "{legend:?}");
    assert!(plotted.iter().all(|c| c.0 < 790.0));
    // Axes are named by the data's columns (decay.csv: `t` and `counts`), and no tick says -0.
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect();
    for label in ["t", "counts", "residual (counts − fit)", "fit", "95% band"] {
        assert!(
            texts.iter().any(|t| t == label),
            "no `{label}` in {texts:?}"
        );
    }
    assert!(!texts.iter().any(|t| t == "target"), "{texts:?}");
    assert!(
        !texts
            .iter()
            .any(|t| t.starts_with("-0") && t.chars().skip(1).all(|c| "0.".contains(c))),
        "{texts:?}"
    );
    // The fitted curve is drawn on a dense grid (200 points), its band around it.
    let red = |tag: &str, attr: &str| -> Vec<usize> {
        doc.descendants()
            .filter(|n| n.has_tag_name(tag) && n.attribute(attr) == Some("#FF0000"))
            .map(|n| {
                n.attribute("points")
                    .unwrap_or("")
                    .split_whitespace()
                    .count()
            })
            .collect()
    };
    assert!(
        red("polyline", "stroke").contains(&200),
        "{:?}",
        red("polyline", "stroke")
    );
    assert_eq!(red("polygon", "fill"), [400]);
    // The data points are drawn left to right in row order (t ascends in decay.csv), training
    // rows first: within each split, x grows.
    let csv = std::fs::read_to_string(dir.join("candidate-0.csv")).expect("csv");
    let rows: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(
        csv.lines().next(),
        Some("t,counts,prediction,residual,held_out")
    );
    assert_eq!(rows.len(), 40);
    for (row, p) in rows.iter().zip(&pred) {
        let x: f64 = row[2].parse().expect("prediction");
        assert_eq!(
            x.to_bits(),
            p.to_bits(),
            "the CSV holds the JSON's predictions"
        );
    }
    let train = rows.iter().filter(|r| r[4] == "0").count();
    let data = &circles[..40];
    let (tr, held) = data.split_at(train);
    for split in [tr, held] {
        assert!(
            split.windows(2).all(|w| w[0].0 < w[1].0),
            "x ascends: {split:?}"
        );
    }

    let index = std::fs::read_to_string(dir.join("index.html")).expect("index");
    for f in [
        "ranking.svg",
        "candidate-0.svg",
        "losses-0.svg",
        "candidate-2.svg",
    ] {
        assert!(index.contains(&format!("src=\"{f}\"")), "{f} in index.html");
        assert!(dir.join(f).exists(), "{f}");
    }
    assert!(index.contains("k = 0.691 ± 0.013"), "{index}");
    assert!(index.contains("<th>ΔAIC</th>"), "{index}");
    for c in cands {
        let row = format!("<td>{:.2}</td><td>{:.2}</td>", aic(c), aic(c) - min);
        assert!(index.contains(&row), "{row} in {index}");
    }
    for f in ["ranking.svg", "losses-0.svg"] {
        let text = std::fs::read_to_string(dir.join(f)).expect("figure");
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
}
