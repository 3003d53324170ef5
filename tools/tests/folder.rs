//! What `ndvm search` leaves in its output folder is whole, whatever happens to the run: a run
//! that fails before it starts leaves the previous run untouched; a killed run leaves whole
//! lines, every calibration's program before it; a second run into the folder is refused; a
//! second SIGTERM leaves consistent files and no temporary ones; extreme results still plot;
//! the default folder stays inside `ndvm-out/`. Signals go to `ndvm` itself, by its process id.

mod common;
use common::{command, ndvm_in, scene, scratch};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn folder(name: &str) -> PathBuf {
    let dir = scratch().join("folder").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test folder");
    dir
}

/// `ndvm args` started in `dir` (its output discarded), with `TMPDIR` set to `tmp` if given.
fn start(dir: &Path, args: &[&str], tmp: Option<&Path>) -> Child {
    let mut c = command();
    c.current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(t) = tmp {
        c.env("TMPDIR", t);
    }
    c.spawn().expect("ndvm starts")
}

/// Sends SIGname to `child` (through python3, which every test machine has: `kill` may not).
fn signal(child: &Child, name: &str) {
    let send = format!(
        "import os, signal; os.kill({}, signal.SIG{name})",
        child.id()
    );
    let sent = std::process::Command::new("python3")
        .args(["-c", &send])
        .status()
        .expect("python3 runs");
    assert!(sent.success(), "SIG{name}");
}

/// Waits up to `limit` for `child` to end: its exit status (killed and a failure past it).
fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("ndvm did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `path` holds at least `bytes` bytes.
fn wait_for(path: &Path, bytes: u64) {
    let until = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(path).map_or(0, |m| m.len()) < bytes {
        assert!(Instant::now() < until, "{} never grew", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The log's invariants: whole JSON lines, calibrations numbered 0, 1, 2, … and every program a
/// calibration names already in `programs.jsonl`. Returns the calibrations.
fn check_log(out: &Path) -> usize {
    let read = |name: &str| std::fs::read_to_string(out.join(name)).expect(name);
    let (calibrations, programs) = (read("calibrations.jsonl"), read("programs.jsonl"));
    assert!(
        calibrations.is_empty() || calibrations.ends_with('\n'),
        "a cut line"
    );
    assert!(
        programs.is_empty() || programs.ends_with('\n'),
        "a cut line"
    );
    let mut known = HashSet::new();
    for (i, line) in programs.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a whole program line");
        assert_eq!(v["program"].as_u64(), Some(i as u64));
        known.insert(i as u64);
    }
    let mut n = 0;
    for (i, line) in calibrations.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a whole log line");
        assert_eq!(
            v["calibration"].as_u64(),
            Some(i as u64),
            "numbered in order"
        );
        let p = v["program"].as_u64().expect("a program number");
        assert!(
            known.contains(&p),
            "calibration {i} names program {p}, not written"
        );
        n += 1;
    }
    n
}

/// The bundled scalar search as `dir/name`: its stream (`stream`, a path from the repository's
/// `scenes/`, cycling), and Evolve beside it, so that it runs to its time budget.
fn scalar(dir: &Path, name: &str, stream: &str) -> String {
    let stream = Path::new(&scene("")).join(stream);
    let text = std::fs::read_to_string(scene("search_scalar.scene.ron"))
        .expect("scene")
        .replace(
            "proposers: [Stream(path: \"scalar_stream_247.jsonl\")]",
            &format!(
                "proposers: [Stream(path: {:?}, cycle: true), Evolve()]",
                stream
            ),
        );
    assert!(text.contains("Evolve()"), "the bundled scene changed");
    std::fs::write(dir.join(name), text).expect("scene");
    name.to_string()
}

fn stderr(child: Child) -> String {
    let out = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_plot_of_an_extreme_result_returns_and_the_results_are_written() {
    let dir = folder("extreme");
    std::fs::write(dir.join("one.csv"), "x,y\n1.0,1.3e154\n").expect("data");
    std::fs::write(
        dir.join("big.scene.ron"),
        r#"Scene(
            candidates: [],
            precision: Some(F64),
            data: Some(Csv(path: "one.csv", columns: {"x": "x"}, target: "y")),
            loss: Mse,
            search: Some(Search(
                proposers: [Evolve()],
                calibration: Calibration(steps: 10, optimizer: Adam(lr: 0.1), draws: 2),
                success: TrainLoss(1e-6),
                budget: Budget(calibrations: Some(60)),
            )),
        )"#,
    )
    .expect("scene");
    let mut child = start(&dir, &["search", "big.scene.ron", "--out", "o"], None);
    let status = wait(&mut child, Duration::from_secs(120));
    assert_eq!(status.code(), Some(0), "{}", stderr(child));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("o/search.json")).expect("written"))
            .expect("JSON");
    let worst = report["front"]["entries"]
        .as_array()
        .expect("a front")
        .iter()
        .filter_map(|e| e["train_loss"].as_f64())
        .fold(0.0, f64::max);
    assert!(worst > 1e300, "the case is extreme: {worst}");
    let svg = std::fs::read_to_string(dir.join("o/front.svg")).expect("plotted");
    assert!(svg.contains("Pareto front") && !svg.contains("NaN"));
    check_log(&dir.join("o"));
}

#[test]
fn a_run_that_cannot_start_leaves_the_previous_run_untouched() {
    let dir = folder("failed");
    let good = [
        "search",
        &scalar(&dir, "good.scene.ron", "scalar_stream_247.jsonl"),
        "--calibrations",
        "40",
        "--out",
        "o",
    ];
    let done = ndvm_in(&dir, &good);
    assert_eq!(done.status.code(), Some(0));
    let snapshot = |name: &str| std::fs::read(dir.join("o").join(name)).expect(name);
    let before: Vec<Vec<u8>> = ["calibrations.jsonl", "programs.jsonl", "search.json"]
        .map(snapshot)
        .to_vec();
    // A stream that does not exist, and a sharded run whose TMPDIR cannot be used.
    scalar(&dir, "missing.scene.ron", "no_such_stream.jsonl");
    let missing = ndvm_in(
        &dir,
        &[
            "search",
            "missing.scene.ron",
            "--out",
            "o",
            "--calibrations",
            "40",
        ],
    );
    assert_eq!(
        missing.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    let mut sharded = start(
        &dir,
        &[&good[..], &["--shards", "2"]].concat(),
        Some(&dir.join("no-such-tmp")),
    );
    assert_eq!(wait(&mut sharded, Duration::from_secs(60)).code(), Some(1));
    assert!(stderr(sharded).contains("temporary file"));
    let after: Vec<Vec<u8>> = ["calibrations.jsonl", "programs.jsonl", "search.json"]
        .map(snapshot)
        .to_vec();
    assert!(
        before == after,
        "a failed run changed the previous run's files"
    );
}

#[test]
fn a_killed_search_leaves_every_calibrations_program_on_disk() {
    for (args, at) in [
        (vec!["--budget-seconds", "60"], 1500),
        (vec!["--budget-seconds", "60", "--threads", "1"], 2500),
    ] {
        let dir = folder("killed");
        let name = scalar(&dir, "long.scene.ron", "scalar_stream_247.jsonl");
        let mut all = vec!["search", &name, "--out", "o"];
        all.extend(args);
        let mut child = start(&dir, &all, None);
        wait_for(&dir.join("o/calibrations.jsonl"), 1);
        std::thread::sleep(Duration::from_millis(at));
        let _ = child.kill();
        let _ = child.wait();
        let n = check_log(&dir.join("o"));
        assert!(n > 0, "nothing was logged in {at} ms");
        assert!(!dir.join("o/search.json").exists());
    }
}

#[test]
fn a_second_run_into_a_busy_folder_is_refused_with_the_holder_named() {
    let dir = folder("busy");
    let name = scalar(&dir, "long.scene.ron", "scalar_stream_247.jsonl");
    let args = ["search", &name, "--budget-seconds", "60", "--out", "o"];
    let mut first = start(&dir, &args, None);
    wait_for(&dir.join("o/.ndvm.lock"), 1);
    let second = ndvm_in(&dir, &args);
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert!(said.contains("in use by another run"), "{said}");
    assert!(said.contains(&format!("process {}", first.id())), "{said}");
    signal(&first, "TERM");
    assert_eq!(wait(&mut first, Duration::from_secs(60)).code(), Some(130));
    check_log(&dir.join("o"));
    assert!(dir.join("o/search.json").exists());
}

#[test]
fn a_second_sigterm_during_shards_leaves_consistent_files_and_no_temporary_ones() {
    let dir = folder("twice");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let name = scalar(&dir, "long.scene.ron", "scalar_stream_247.jsonl");
    let args = [
        "search",
        &name,
        "--budget-seconds",
        "60",
        "--shards",
        "4",
        "--epochs",
        "8",
        "--out",
        "o",
    ];
    let mut child = start(&dir, &args, Some(&tmp));
    // The first epoch's parts are merged into the log while later ones run.
    wait_for(&dir.join("o/calibrations.jsonl"), 1);
    signal(&child, "TERM");
    std::thread::sleep(Duration::from_millis(30));
    signal(&child, "TERM");
    assert_eq!(wait(&mut child, Duration::from_secs(30)).code(), Some(130));
    check_log(&dir.join("o"));
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").flatten().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

#[test]
fn default_folders_stay_inside_ndvm_out_and_outputs_are_checked_before_the_run() {
    let dir = folder("names");
    scalar(&dir, "...scene.ron", "scalar_stream_247.jsonl");
    let out = ndvm_in(&dir, &["search", "...scene.ron", "--calibrations", "8"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("ndvm-out/_../search.json").exists());
    assert!(!dir.join("search.json").exists() && !dir.join("calibrations.jsonl").exists());
    // A symbolic link among the results is refused before the search, not after it.
    std::fs::write(dir.join("precious"), "keep").expect("target");
    std::fs::remove_file(dir.join("ndvm-out/_../search.json")).expect("written");
    std::os::unix::fs::symlink(dir.join("precious"), dir.join("ndvm-out/_../search.json"))
        .expect("link");
    let began = Instant::now();
    let out = ndvm_in(&dir, &["search", "...scene.ron", "--budget-seconds", "30"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("symbolic link"), "{said}");
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "the search ran first"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("precious")).expect("kept"),
        "keep"
    );
}
