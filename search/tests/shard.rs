//! Sharded searches ([`ndvm_search::shards`]): one shard is the plain search, byte for
//! byte; shards deal out the scene's candidates and the streams' lines, resume them across
//! epochs and pass their best programs on; a rerun task gives the same output; the merged result
//! is the same at every thread count.

use ndvm_components::scene::Scene;
use ndvm_search::log::LogWriter;
use ndvm_search::shards::local::{run_local, run_local_with};
use ndvm_search::shards::merge::{Merged, merge};
use ndvm_search::shards::{Plan, ShardOutput, run_task};
use ndvm_search::symbolic::expr::Expr;
use ndvm_search::{Event, Record, Search, SearchError, SearchOptions, SearchReport};
use std::collections::HashSet;
use std::path::PathBuf;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

/// The scalar task: three seed candidates, the 247-line stream once, and Evolve.
fn scene() -> Scene {
    Scene::from_ron(
        r#"Scene(
            candidates: [
                Inline(name: "line", src: "(+ (* a x) b)"),
                Inline(name: "decay", src: "(* a (exp (* b x)))"),
                Inline(name: "wave", src: "(* a (cos (* b x)))"),
            ],
            data: Some(Synthetic(
                program: "(* (exp (* -0.3 x)) (cos (* 2 x)))",
                inputs: {"x": Linspace(0.1, 6.0, 64)},
                noise_sd: 0.02, seed: 1, split: Split(train: 0.7, seed: 3),
            )),
            loss: Mse,
            search: Some(Search(
                proposers: [Stream(path: "scalar_stream_247.jsonl", cycle: false), Evolve()],
                calibration: Calibration(steps: 20, optimizer: Adam(lr: 0.05), draws: 2),
                window: 16,
            )),
        )"#,
    )
    .expect("scene")
}

fn options(threads: usize) -> SearchOptions {
    SearchOptions {
        threads: Some(threads),
        ..SearchOptions::default()
    }
}

fn without_timing(report: &SearchReport) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    v.as_object_mut().expect("object").remove("timing");
    v.to_string()
}

/// A merged search and its log: (`calibrations.jsonl`, `programs.jsonl`).
struct Run {
    merged: Merged,
    calibrations: String,
    programs: String,
}

impl Run {
    /// The log's lines, each without its time (the last field, a clock reading).
    fn lines(&self) -> Vec<&str> {
        (self.calibrations.lines())
            .map(|l| l.rsplit_once(",\"timing\"").expect("a time").0)
            .collect()
    }

    /// The log's lines, read.
    fn records(&self) -> Vec<serde_json::Value> {
        (self.calibrations.lines())
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

fn text(b: Vec<u8>) -> String {
    String::from_utf8(b).expect("UTF-8")
}

fn local(scene: &Scene, threads: usize, plan: &Plan) -> Run {
    let mut log = LogWriter::new(Vec::new(), Vec::new());
    let merged = run_local(scene, &scenes(), &options(threads), plan, &mut log).expect("runs");
    Run {
        merged,
        calibrations: text(log.calibrations),
        programs: text(log.programs),
    }
}

fn merged(scene: &Scene, plan: &Plan, outputs: Vec<ShardOutput>) -> Result<Run, SearchError> {
    let mut log = LogWriter::new(Vec::new(), Vec::new());
    let merged = merge(scene, plan, None, outputs, &mut log)?;
    Ok(Run {
        merged,
        calibrations: text(log.calibrations),
        programs: text(log.programs),
    })
}

#[test]
fn one_shard_in_one_epoch_is_the_plain_search() {
    let scene = scene();
    let plain_options = SearchOptions {
        calibrations: Some(300),
        ..options(2)
    };
    let mut search = Search::new(&scene, &scenes(), &plain_options).expect("search");
    let mut log = LogWriter::new(Vec::new(), Vec::new());
    let report = search.run(|e| {
        if let Event::Calibrated(r, at) = e {
            log.write(r, at).expect("in memory");
        }
    });
    log.flush().expect("in memory");
    let plain = Run {
        merged: Merged {
            report,
            tasks: Vec::new(),
            log_error: None,
            times: Default::default(),
        },
        calibrations: text(log.calibrations),
        programs: text(log.programs),
    };
    let plan = Plan::new(&scene, 1, None, Some(300), None, None).expect("plan");
    assert_eq!(plan.epochs, 1);
    let sharded = local(&scene, 1, &plan);
    assert_eq!(sharded.lines(), plain.lines());
    assert_eq!(sharded.programs, plain.programs);
    assert_eq!(
        without_timing(&sharded.merged.report),
        without_timing(&plain.merged.report)
    );
}

#[test]
fn shards_deal_out_the_work_resume_it_and_merge_the_same_at_any_thread_count() {
    let scene = scene();
    let plan = Plan::new(&scene, 3, Some(2), Some(600), None, Some(3)).expect("plan");
    let one = local(&scene, 1, &plan);
    let two = local(&scene, 2, &plan);
    assert_eq!(one.lines(), two.lines());
    assert_eq!(one.programs, two.programs);
    let report = &one.merged.report;
    assert_eq!(without_timing(report), without_timing(&two.merged.report));
    assert_eq!(report.summary.calibrations, 600);
    assert_eq!(report.summary.stopped_by, "calibrations");
    // Numbered as one search: calibrations in order, programs by first appearance, candidates by
    // admission (a part's after the earlier parts': here no candidate finishes out of order).
    let (mut next_candidate, mut next_program) = (0, 0);
    let records = one.records();
    assert_eq!(records.len(), 600);
    let number = |r: &serde_json::Value, what: &str| r[what].as_u64().expect("a number");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(number(r, "calibration"), i as u64);
        let (candidate, program) = (number(r, "candidate"), number(r, "program"));
        assert!(
            candidate <= next_candidate && program <= next_program,
            "{r}"
        );
        next_candidate = next_candidate.max(candidate + 1);
        next_program = next_program.max(program + 1);
    }
    assert_eq!(one.programs.lines().count() as u64, next_program);
    // The seeds and stream lines are dealt out: no line is calibrated twice (the stream does not
    // cycle and the budget does not reach its end), across shards and epochs.
    let mut seen = HashSet::new();
    for r in &records {
        let proposer = r["proposer"].as_str().expect("a proposer");
        if (proposer == "seeds" || proposer.starts_with("stream")) && number(r, "draw") == 0 {
            let name = r["name"].as_str().expect("a name");
            assert!(seen.insert(name.to_string()), "{name} proposed twice");
        }
    }
    assert!(seen.contains("line") && seen.contains("decay") && seen.contains("wave"));
    let tallied: u64 = report.proposers.iter().map(|p| p.calibrations).sum();
    assert_eq!(tallied, 600);
}

#[test]
fn a_rerun_task_gives_the_same_output_and_the_best_programs_migrate() {
    let scene = scene();
    let plan = Plan::new(&scene, 2, Some(2), Some(240), None, Some(2)).expect("plan");
    let first: Vec<ShardOutput> = plan
        .tasks(0, &[])
        .iter()
        .map(|t| run_task(&scene, &scenes(), &options(1), t).expect("task"))
        .collect();
    for o in &first {
        assert_eq!(o.records.len(), 60);
    }
    // A worker that dies and is retried computes the same output (timing apart).
    let again = run_task(&scene, &scenes(), &options(2), &first[1].task).expect("rerun");
    let strip = |o: &ShardOutput| -> Vec<String> {
        o.records
            .iter()
            .map(|w| serde_json::to_string(&w.record()).expect("json"))
            .collect()
    };
    assert_eq!(strip(&again), strip(&first[1]));
    // The next epoch starts every shard from the best programs of each, and goes on with its
    // own share of the stream.
    let next = plan.tasks(1, &first);
    // A retried task's second output counts once.
    let twice: Vec<ShardOutput> = first.iter().chain([&again]).cloned().collect();
    assert_eq!(plan.tasks(1, &twice), next);
    assert_eq!(next[0].migrants, next[1].migrants);
    assert!(!next[0].migrants.is_empty() && next[0].migrants.len() <= 4);
    assert_eq!(
        next[1].resume,
        first[1]
            .proposers
            .iter()
            .map(|p| p.candidates)
            .collect::<Vec<_>>()
    );
    let second: Vec<ShardOutput> = next
        .iter()
        .map(|t| run_task(&scene, &scenes(), &options(1), t).expect("task"))
        .collect();
    for o in &second {
        let evolved: HashSet<&str> = o
            .records
            .iter()
            .filter(|w| w.proposer == "evolve")
            .map(|w| w.src.as_str())
            .collect();
        for m in &next[0].migrants {
            // Evolve prints numbers its own way (`2.0` as `2`).
            let m = Expr::parse(m, 64).expect("a migrant parses").to_string();
            assert!(
                evolved.contains(m.as_str()),
                "migrant {m} not tried in {:?}: {evolved:?}",
                o.task
            );
        }
    }
    // Merging is order-free and drops a retried task's second output.
    let mut all: Vec<ShardOutput> = second.iter().chain(&first).cloned().collect();
    all.push(again);
    let shuffled = merged(&scene, &plan, all).expect("merge");
    let ordered = local(&scene, 1, &plan);
    assert_eq!(shuffled.lines(), ordered.lines());
    assert_eq!(shuffled.programs, ordered.programs);
    assert_eq!(
        without_timing(&shuffled.merged.report),
        without_timing(&ordered.merged.report)
    );
}

#[test]
fn bad_plans_are_refused() {
    let scene = scene();
    for (shards, epochs) in [(0, None), (5000, None), (2, Some(0))] {
        let e = Plan::new(&scene, shards, epochs, Some(10), None, None).expect_err("refused");
        assert!(e.to_string().contains("must be between 1 and"), "{e}");
    }
    let plan = Plan::new(&scene, 2, None, Some(10), None, None).expect("plan");
    assert_eq!(
        plan.epochs, 4,
        "Evolve on several shards migrates by default"
    );
    // More tasks than calibrations: the empty ones run nothing and the total stands.
    let plan = Plan::new(&scene, 4, Some(3), Some(5), None, None).expect("plan");
    let run = local(&scene, 1, &plan);
    assert_eq!(run.merged.report.summary.calibrations, 5);
    assert_eq!(run.records().len(), 5);
}

#[test]
fn a_forged_output_whose_candidate_numbers_would_overflow_is_refused() {
    let scene = scene();
    let plan = Plan::new(&scene, 2, Some(1), Some(40), None, None).expect("plan");
    let mut outputs: Vec<ShardOutput> = plan
        .tasks(0, &[])
        .iter()
        .map(|t| run_task(&scene, &scenes(), &options(1), t).expect("task"))
        .collect();
    assert!(merged(&scene, &plan, outputs.clone()).is_ok());
    outputs[0].records[0].candidate = u64::MAX;
    let e = merged(&scene, &plan, outputs.clone())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("overflow"), "{e}");
    outputs[0].records[0].candidate = u64::MAX - 1;
    let e = merged(&scene, &plan, outputs).err().expect("refused");
    assert!(e.to_string().contains("overflow"), "{e}");
}

#[test]
fn an_interrupted_sharded_search_stops_after_its_round_and_merges_what_ran() {
    let scene = scene();
    let plan = Plan::new(&scene, 2, Some(3), Some(300), None, None).expect("plan");
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = flag.clone();
    let options = SearchOptions {
        interrupted: Some(flag),
        ..options(1)
    };
    // Ctrl-C during the first round: no later round starts.
    let set = move |_: &Record| stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut log = LogWriter::new(Vec::new(), Vec::new());
    let merged =
        run_local_with(&scene, &scenes(), &options, &plan, &set, &mut log).expect("merged");
    assert_eq!(merged.report.summary.stopped_by, "interrupted");
    assert!(merged.tasks.iter().all(|t| t.epoch == 0));
    assert_eq!(merged.tasks.len(), 2);
    let lines = text(log.calibrations).lines().count() as u64;
    assert_eq!(lines, merged.report.summary.calibrations);
    assert!(lines < 300);
}

/// Outputs of every task of `plan` (run here, one thread, records kept).
fn all_outputs(scene: &Scene, plan: &Plan) -> Vec<ShardOutput> {
    let mut outputs = Vec::new();
    for epoch in 0..plan.epochs {
        for task in plan.tasks(epoch, &outputs) {
            outputs.push(run_task(scene, &scenes(), &options(1), &task).expect("runs"));
        }
    }
    outputs
}

#[test]
fn a_merge_refuses_a_set_that_is_not_whole_naming_what_is_missing_or_extra() {
    let scene = scene();
    let plan = Plan::new(&scene, 3, Some(2), Some(120), None, None).expect("plan");
    let outputs = all_outputs(&scene, &plan);
    assert_eq!(outputs.len(), 6);
    let whole = merged(&scene, &plan, outputs.clone()).expect("whole");
    assert_eq!(whole.merged.report.summary.calibrations, 120);
    let refused = |set: Vec<ShardOutput>, want: &str| {
        let Err(e) = merged(&scene, &plan, set) else {
            panic!("merged without {want}")
        };
        assert!(e.to_string().contains(want), "{e}");
    };
    let without = |i: usize| {
        let mut set = outputs.clone();
        set.remove(i);
        set
    };
    refused(without(1), "shard 1 of epoch 0 is missing");
    refused(without(5), "shard 2 of epoch 1 is missing");
    refused(outputs[..3].to_vec(), "epoch 1 is missing");
    refused(Vec::new(), "every shard's output is missing");
    let mut stray = outputs.clone();
    stray[2].task.shard = 9;
    refused(stray, "shard 9 of 3 in epoch 0 is not part of this plan");
    // A retried task's second output is merged once, and the order they come in is free.
    let mut twice = outputs.clone();
    twice.push(outputs[4].clone());
    twice.reverse();
    let again = merged(&scene, &plan, twice).expect("whole");
    assert_eq!(again.calibrations, whole.calibrations);
}

#[test]
fn migrants_per_task_are_bounded_and_tasks_past_the_time_budget_are_skipped() {
    use ndvm_search::shards::{MAX_TASKS, MIGRANT_POOL};
    let scene = scene();
    // Every task of a large round starts from at most the pool, whatever the shard count.
    let plan = Plan::new(&scene, 40, Some(2), Some(40 * 2 * 2), None, Some(4)).expect("plan");
    let mut earlier = Vec::new();
    for task in plan.tasks(0, &[]) {
        let mut out = ShardOutput::skipped(task);
        out.best = (0..4)
            .map(|k| format!("(* a {} x)", out.task.shard * 4 + k))
            .collect();
        earlier.push(out);
    }
    let tasks = plan.tasks(1, &earlier);
    assert!(tasks.iter().all(|t| t.migrants.len() == MIGRANT_POOL));
    // Shard k starts from the shards after it: shard 39's first migrant is shard 0's first.
    assert_eq!(tasks[39].migrants[0], "(* a 0 x)");
    assert_eq!(tasks[0].migrants[0], "(* a 4 x)");
    // Few enough, every shard gets every shard's, in shard order.
    let small = Plan::new(&scene, 3, Some(2), Some(12), None, Some(4)).expect("plan");
    let few = small.tasks(
        1,
        &earlier[..3]
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o.task.shards = 3;
                o
            })
            .collect::<Vec<_>>(),
    );
    assert!(
        few.iter()
            .all(|t| t.migrants.len() == 12 && t.migrants[0] == "(* a 0 x)")
    );
    // Tasks are bounded as shards and epochs are.
    let too_many = Plan::new(&scene, 4096, Some(17), Some(1), None, None);
    assert!(too_many.is_err_and(|e| e.to_string().contains(&MAX_TASKS.to_string())));
    // A budget far below the tasks' set-up: tasks past it never start, and the run says so.
    let plan = Plan::new(&scene, 512, Some(4), None, Some(0.05), None).expect("plan");
    let mut log = LogWriter::new(Vec::new(), Vec::new());
    let began = std::time::Instant::now();
    let merged = run_local(&scene, &scenes(), &options(1), &plan, &mut log).expect("runs");
    let wall = began.elapsed().as_secs_f64();
    assert_eq!(merged.report.summary.stopped_by, "seconds");
    assert!(
        merged
            .report
            .warnings
            .iter()
            .any(|w| w.contains("shard tasks could start")),
        "{:?}",
        merged.report.warnings
    );
    // Skipped tasks cost nothing; one task set up past the deadline at most (docs: slack).
    assert!(wall < 5.0, "{wall} s for a 0.05 s budget");
    let lines = text(log.calibrations).lines().count() as u64;
    assert_eq!(lines, merged.report.summary.calibrations);
}
