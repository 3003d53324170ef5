//! `ndvm search` end to end: the files it writes, determinism across threads, early checks of
//! the output folder, clean stops (SIGTERM, a closed pipe) and the errors of a wrong scene.

mod common;
use common::{ndvm, scene};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ndvm-search-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The log and results of a run, without their wall-clock parts.
/// The log (each line with its program's `src` and `skeleton` joined back in, `timing` left
/// out) and the results (without `timing`). Checks that the programs are written once each,
/// numbered in order of first appearance, before the first line that names them.
fn outputs(dir: &std::path::Path) -> (Vec<Value>, Value) {
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(dir.join(name))
            .expect(name)
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect()
    };
    let programs = read("programs.jsonl");
    for (i, p) in programs.iter().enumerate() {
        assert_eq!(p["program"], i, "{p}");
    }
    let mut seen = 0;
    let log: Vec<Value> = read("calibrations.jsonl")
        .into_iter()
        .map(|mut v| {
            assert!(v["timing"]["elapsed_s"].is_number(), "{v}");
            assert!(
                v.get("src").is_none(),
                "the log names programs by number: {v}"
            );
            let id = v["program"].as_u64().expect("program") as usize;
            assert!(id <= seen, "program {id} before {seen}");
            seen = seen.max(id + 1);
            let o = v.as_object_mut().expect("object");
            o.remove("timing");
            o.insert("src".into(), programs[id]["src"].clone());
            o.insert("skeleton".into(), programs[id]["skeleton"].clone());
            v
        })
        .collect();
    assert_eq!(seen, programs.len(), "every program is used");
    let mut srcs: Vec<&str> = programs
        .iter()
        .map(|p| p["src"].as_str().expect("src"))
        .collect();
    srcs.sort_unstable();
    srcs.dedup();
    assert_eq!(srcs.len(), programs.len(), "each program once");
    let mut results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("search.json")).expect("results"))
            .expect("results json");
    assert!(results["timing"]["calibrations_per_second"].is_number());
    results.as_object_mut().expect("object").remove("timing");
    (log, results)
}

#[test]
fn search_writes_its_log_results_and_frontier_identically_at_any_thread_count() {
    let mut runs = Vec::new();
    // Four threads write the log from a thread of its own; fewer write it inline.
    for threads in ["1", "2", "4"] {
        let dir = tmp(&format!("t{threads}"));
        let out = ndvm(&[
            "search",
            &scene("search_scalar.scene.ron"),
            "--calibrations",
            "1200",
            "--threads",
            threads,
            "--out",
            dir.to_str().expect("path"),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.starts_with("1200 calibrations in "), "{stdout}");
        assert!(
            stdout.contains("first success (held-out R² > 0.9) after"),
            "{stdout}"
        );
        assert!(
            stdout.contains("stopped by the calibration budget (1200)"),
            "{stdout}"
        );
        let (log, results) = outputs(&dir);
        assert_eq!(log.len(), 1200);
        // The stream cycles: 300 candidates of four draws, 247 distinct programs.
        let programs = std::fs::read_to_string(dir.join("programs.jsonl")).expect("programs");
        assert_eq!(programs.lines().count(), 247);
        assert_eq!(results["summary"]["calibrations"], 1200);
        assert_eq!(results["summary"]["stopped_by"], "calibrations");
        let csv = std::fs::read_to_string(dir.join("frontier.csv")).expect("csv");
        assert!(
            csv.starts_with("elapsed_s,calibrations,best_held_out_R2,"),
            "{csv}"
        );
        let last = csv.lines().last().expect("a row");
        assert!(last.split(',').nth(1) == Some("1200"), "{last}");
        let svg = std::fs::read_to_string(dir.join("frontier.svg")).expect("svg");
        assert!(
            svg.starts_with("<svg") && svg.contains("best_held_out_R2"),
            "{}",
            &svg[..200]
        );
        runs.push((log, results));
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
}

/// `ndvm search SCENE --calibrations 1200 --out DIR` with `extra` arguments: its outputs.
fn search_scalar(name: &str, extra: &[&str]) -> (Vec<Value>, Value) {
    let dir = tmp(name);
    let mut args = vec![
        "search".to_string(),
        scene("search_scalar.scene.ron"),
        "--calibrations".into(),
        "1200".into(),
        "--out".into(),
        dir.to_str().expect("path").into(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ndvm(&args);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("1200 calibrations in "), "{stdout}");
    let outputs = outputs(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    outputs
}

#[test]
fn shards_run_at_once_and_write_the_same_files_at_any_thread_count() {
    let one = search_scalar("k3t1", &["--shards", "3", "--threads", "1"]);
    let two = search_scalar("k3t2", &["--shards", "3", "--threads", "2"]);
    assert_eq!(one, two);
    let (log, results) = &one;
    assert_eq!(log.len(), 1200);
    assert_eq!(results["summary"]["calibrations"], 1200);
    assert_eq!(results["summary"]["stopped_by"], "calibrations");
    // The shards deal out the stream's lines and draw their own starting values: another
    // search than the plain one, numbered as one.
    let plain = search_scalar("plain", &["--threads", "2"]);
    assert_ne!(one.0, plain.0);
    for (i, line) in log.iter().enumerate() {
        assert_eq!(line["calibration"], i, "{line}");
    }
    // One shard is the plain search, file for file.
    let single = search_scalar("k1", &["--shards", "1", "--threads", "2"]);
    assert_eq!(single, plain);
}

#[test]
fn the_front_is_the_answer_and_names_the_generating_law() {
    let dir = tmp("front");
    let out = ndvm(&[
        "search",
        &scene("search_michaelis.scene.ron"),
        "--calibrations",
        "40000",
        "--out",
        dir.to_str().expect("path"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Pareto front (training loss against complexity"),
        "{stdout}"
    );
    assert!(
        stdout.contains("chosen from the Pareto front (score, within 1.5× the lowest loss)"),
        "{stdout}"
    );
    assert!(stdout.contains(", the generating law)"), "{stdout}");
    // The table marks the chosen law with `*=`.
    assert!(stdout.lines().any(|l| l.starts_with("*=")), "{stdout}");
    let (_, results) = outputs(&dir);
    let front = &results["front"];
    assert!(
        front["criterion"]
            .as_str()
            .expect("named")
            .starts_with("score")
    );
    assert_eq!(front["penalty"]["points"], 30);
    assert_eq!(front["truth_found"], true);
    let entries = front["entries"].as_array().expect("entries");
    let chosen = &entries[front["chosen"].as_u64().expect("a pick") as usize];
    assert_eq!(chosen["truth"], true, "{chosen}");
    assert_eq!(chosen["complexity"], 7, "{chosen}");
    // Vmax·S/(Km + S) with Vmax 2.3, Km 0.7, from 3% noise: the sympy string carries the
    // constants, whichever of the law's forms was found.
    let sympy = chosen["sympy"].as_str().expect("sympy");
    assert!(sympy.contains('S') && sympy.contains('/'), "{sympy}");
    // Simplest first, adjusted loss falling, training loss as the log has it.
    for w in entries.windows(2) {
        assert!(w[0]["complexity"].as_u64() < w[1]["complexity"].as_u64());
        assert!(w[0]["adjusted_loss"].as_f64() > w[1]["adjusted_loss"].as_f64());
    }
    // Every entry is a calibration the log marked as joining the front.
    let log = std::fs::read_to_string(dir.join("calibrations.jsonl")).expect("log");
    for e in entries {
        let line = log
            .lines()
            .nth(e["calibration"].as_u64().expect("calibration") as usize)
            .expect("its line");
        assert!(line.contains("\"front\":true"), "{line}");
    }
    let svg = std::fs::read_to_string(dir.join("front.svg")).expect("front.svg");
    assert!(svg.contains("complexity (atoms)") && svg.contains("the generating law"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_prints_json_on_request() {
    let out = ndvm(&[
        "search",
        &scene("search_recurrence.scene.ron"),
        "--calibrations",
        "200",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["summary"]["calibrations"], 200);
    assert_eq!(v["summary"]["protocol"]["steps"], 50);
    assert_eq!(v["summary"]["protocol"]["precision"], "f32");
    assert!(v["top"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(v["timing"]["wall_s"].is_number());
}

#[test]
fn an_unusable_output_folder_is_refused_before_any_work() {
    let out = ndvm(&[
        "search",
        &scene("search_scalar.scene.ron"),
        "--budget-seconds",
        "60",
        "--out",
        "/dev/null/results",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create the output folder /dev/null/results"),
        "{err}"
    );
}

/// Without `--out` (and no `search.out` in the scene), everything goes to
/// `ndvm-out/<scene>/` in the working folder.
#[test]
fn outputs_default_to_ndvm_out() {
    // Its own working folder: other tests search the same scene at the same time.
    let here = common::scratch().join("default-out");
    let args = [
        "search",
        &scene("search_scalar.scene.ron"),
        "--calibrations",
        "40",
    ];
    let out = common::ndvm_in(&here, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("log, results and frontier in ndvm-out/search_scalar/"),
        "{stdout}"
    );
    let dir = here.join("ndvm-out/search_scalar");
    let (log, results) = outputs(&dir);
    assert_eq!(log.len(), 40);
    assert_eq!(results["summary"]["calibrations"], 40);
}

/// A log line's size does not grow with its program: two 20 kB programs, calibrated 16 times,
/// are written once each.
#[test]
fn long_programs_are_written_once() {
    let dir = common::scratch().join("long");
    std::fs::create_dir_all(&dir).expect("dir");
    let long = |op: &str| format!("{}x{}", format!("({op} a ").repeat(2000), ")".repeat(2000));
    let stream: String = ["+", "*"]
        .iter()
        .map(|op| format!("{{\"src\": \"{}\", \"params\": [\"a\"]}}\n", long(op)))
        .collect();
    std::fs::write(dir.join("long.jsonl"), stream).expect("stream");
    std::fs::write(
        dir.join("long.scene.ron"),
        r#"Scene(
    candidates: [],
    data: Some(Synthetic(program: "x", inputs: {"x": Linspace(0.0, 1.0, 8)}, split: Split(train: 0.5))),
    loss: Mse,
    search: Some(Search(proposers: [Stream(path: "long.jsonl")], calibration: Calibration(draws: 4, steps: 2))),
)"#,
    )
    .expect("scene");
    let scene = dir.join("long.scene.ron");
    let out = ndvm(&[
        "search",
        scene.to_str().expect("path"),
        "--calibrations",
        "16",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = common::scratch().join("ndvm-out/long");
    let (log, _) = outputs(&written);
    assert_eq!(log.len(), 16);
    let programs = std::fs::read_to_string(written.join("programs.jsonl")).expect("programs");
    assert_eq!(programs.lines().count(), 2);
    let calibrations = std::fs::read_to_string(written.join("calibrations.jsonl")).expect("log");
    let widest = calibrations.lines().map(str::len).max().unwrap_or(0);
    assert!(widest < 600, "a log line of {widest} bytes");
}

#[test]
fn wrong_scenes_and_settings_are_clean_errors() {
    let out = ndvm(&["search", &scene("heat1d.scene.ron")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a search scene"));
    let out = ndvm(&["fit", &scene("search_scalar.scene.ron")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run it with `ndvm search`"));
    let out = ndvm(&[
        "search",
        &scene("search_scalar.scene.ron"),
        "--budget-seconds",
        "inf",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--budget-seconds"));
    // A negative number is a value (not a flag), refused with the real reason.
    let out = ndvm(&[
        "search",
        &scene("search_scalar.scene.ron"),
        "--budget-seconds",
        "-5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: --budget-seconds must be a finite number of seconds ≥ 0, got -5"
    );
    let out = ndvm(&[
        "search",
        &scene("search_scalar.scene.ron"),
        "--precision",
        "f16",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let scalar = scene("search_scalar.scene.ron");
    let out = ndvm(&["search", &scalar, "--shards", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shards"));
    // Epochs belong to a sharded search.
    let out = ndvm(&["search", &scalar, "--epochs", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shards"));
}

/// A search with a long time budget and `extra` arguments, sent SIGTERM after 1.5 s: it exits
/// with status 130 and leaves a complete log and results.
fn sigterm_writes_what_was_found(name: &str, extra: &[&str]) {
    let dir = tmp(name);
    let scalar = scene("search_scalar.scene.ron");
    let mut args = vec!["search", &scalar, "--budget-seconds", "120"];
    args.extend(extra);
    args.extend(["--out", dir.to_str().expect("path")]);
    let mut child = common::command()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    let (log, results) = outputs(&dir);
    assert_eq!(results["summary"]["stopped_by"], "interrupted");
    assert_eq!(results["summary"]["calibrations"], log.len());
    assert!(!log.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_the_search_and_writes_what_was_found() {
    sigterm_writes_what_was_found("term", &["--threads", "1"]);
}

#[test]
fn sigterm_stops_a_sharded_search_and_writes_what_was_found() {
    sigterm_writes_what_was_found("term-shards", &["--shards", "4", "--threads", "2"]);
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    let mut child = common::command()
        .args([
            "search",
            &scene("search_scalar.scene.ron"),
            "--calibrations",
            "300",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_sharded_search_without_a_temporary_folder_fails_cleanly() {
    // The shards' records go to temporary files: with none to be had, a located error, exit 1.
    let dir = tmp("no-tmp");
    let out = Command::new(env!("CARGO_BIN_EXE_ndvm"))
        .args(["search", &scene("search_scalar.scene.ron"), "--shards", "2"])
        .args([
            "--calibrations",
            "200",
            "--out",
            dir.to_str().expect("path"),
        ])
        .env("TMPDIR", dir.join("does-not-exist"))
        .output()
        .expect("runs ndvm");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("search_scalar.scene.ron") && stderr.contains("temporary file"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
