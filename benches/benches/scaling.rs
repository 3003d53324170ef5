//! Scaling across cores (docs/performance.md, "Scaling"): the search and fit scenes at each
//! thread count, beside the machine's own ceiling, with the serial fraction and the per-step
//! overhead they imply and an Amdahl projection to 16 and 64 cores.
//!
//! - Searches run under a calibration budget (results identical at every thread count) and
//!   report calibrations per second; fits report wall seconds.
//! - **Ceiling**: as many independent one-thread runs at once as the largest thread count (each
//!   its own pool, started together): what the cores give work that shares nothing, memory
//!   bandwidth and clock included. Efficiency is the N-thread rate over that ceiling.
//! - **Serial fraction** (Karp–Flatt) from the speedup S at N threads: e = (1/S − 1/N)/(1 − 1/N);
//!   Amdahl's law then projects S(p) = 1/(e + (1 − e)/p). **Per-step overhead**: the step loop's
//!   wall time at N threads beyond a perfect split of the one-thread time, per fit step.
//! - **The search loop's serial share**, measured directly: its phases between fit steps
//!   (`timing.search_loop` of the search report) over the one-thread wall time, and the
//!   speedup that share alone allows on 16 and 64 cores.
//! - **Where the wall time goes** at each thread count (its median round): the pipeline's
//!   passes, the rest of the step loop, and what lies outside the loop (set-up, a search's
//!   recording and refill beyond the step), in total and per pass; and the pass tasks' own
//!   seconds in a traced run at the widest count against one thread (what sharing the machine
//!   costs each task: caches, memory, data moving between cores).
//! - **A projection to 2, 16 and 64 workers** from traced one-thread runs
//!   ([`ndvm_systems::trace`]): each pass's measured tasks replayed on simulated workers by the
//!   pass's own rule, the work beside it and the serial parts added; printed beside the
//!   measured 2-thread speedup, which checks the model on this machine. Then what each part
//!   costs on 16 workers: the projection again with the serial part, the serial work beside
//!   the pass, or both taken out (the speedup a build in which that part cost nothing would
//!   show).
//! - Rounds alternate thread counts and the ceiling; each figure is the median of its rounds.
//!
//! ```sh
//! cargo bench -p ndvm-benches --bench scaling                     # 3 rounds (about 6 minutes on 2 cores)
//! cargo bench -p ndvm-benches --bench scaling -- scalar 5         # one workload, 5 rounds
//! NDVM_SCALING_THREADS=1,2,4,8,16 cargo bench -p ndvm-benches --bench scaling
//! NDVM_STEPS_PER_PASS=1 cargo bench -p ndvm-benches --bench scaling   # the stepwise fit, to compare
//! NDVM_SEARCH_WINDOW=256 cargo bench -p ndvm-benches --bench scaling -- scalar   # another window
//! NDVM_SHARDS=32 cargo bench -p ndvm-benches --bench scaling -- scalar-shards   # another shard count
//! ```
//!
//! The default thread counts are 1, 2, 4, … up to the machine's cores, then 8× the cores (a
//! request beyond the cores starts no more workers than there are cores). Under
//! `cargo test --benches` (no `--bench` flag) every workload runs once at 1 and 2 threads with a
//! small budget.

use ndvm_benches::feynman;

/// The allocator `ndvm` runs on: the system allocator's locks would be measured instead of the
/// engine (2 threads reached 70% of the ceiling on it, 93% on this).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use ndvm_components::scene::{Device, Scene};
use ndvm_search::log::LogWriter;
use ndvm_search::shards::Plan;
use ndvm_search::shards::local::run_local;
use ndvm_search::shards::merge::TaskTimes;
use ndvm_search::{LoopTimes, Search, SearchOptions};
use ndvm_systems::prelude::*;
use ndvm_systems::trace::Trace;
use std::io::{BufWriter, Read, Seek};
use std::time::Instant;

/// One workload: a search (calibrations) or a fit (optimizer steps per candidate).
#[derive(Clone, Copy)]
enum Work {
    Search {
        scene: &'static str,
        calibrations: u64,
    },
    Fit {
        scene: &'static str,
        steps: Option<u32>,
    },
    /// A search as `shards` shards run at once (`ndvm search --shards`): results depend on the
    /// shard count, not the threads.
    Sharded {
        scene: &'static str,
        calibrations: u64,
        shards: usize,
    },
}

/// What one run measured.
#[derive(Clone, Default)]
struct Run {
    /// Calibrations per second (a search) or fits per second (a fit): higher is better.
    rate: f64,
    wall_s: f64,
    /// The step loop's wall time and its steps (from the fit's profile).
    loop_s: f64,
    steps: u64,
    /// A search loop's serial seconds (its phases between steps, `LoopTimes::serial_s`).
    serial_s: f64,
    /// The answer, to check that every thread count computed the same thing.
    digest: u64,
    /// Its passes, when traced ([`ndvm_systems::trace`]).
    trace: Option<Trace>,
    /// The step loop's time in the pipeline's passes (its five stages together).
    pass_s: f64,
    /// A search's own phases ([`LoopTimes`]).
    phases: Option<LoopTimes>,
    /// A sharded search: each task's epoch, seconds and merge.
    tasks: Vec<TaskTimes>,
}

/// The pipeline's stages: a pass's wall time is shared among them.
const PASS_STAGES: [&str; 5] = ["walk", "replay", "merge-masks", "backward", "optimize"];

fn pass_seconds(p: &ndvm_systems::profile::ProfileReport) -> f64 {
    p.stages
        .iter()
        .filter(|r| PASS_STAGES.contains(&r.stage))
        .map(|r| r.total_s)
        .sum()
}

/// `NDVM_STEPS_PER_PASS` (default: the engine's): steps each candidate takes per parallel pass,
/// to compare the pipelined fit with the stepwise one (`1`) in one build.
fn steps_per_pass() -> Option<u32> {
    std::env::var("NDVM_STEPS_PER_PASS").ok()?.parse().ok()
}

/// A scene by name; `NDVM_SEARCH_WINDOW` replaces a search's window (candidates in flight: more
/// work per pass for the same per-pass costs, and different results, the same at every thread
/// count).
fn load(name: &str) -> Scene {
    let text = std::fs::read_to_string(feynman::scenes().join(name)).expect("scene");
    let mut scene = Scene::from_ron(&text).expect("scene parses");
    let window = std::env::var("NDVM_SEARCH_WINDOW").ok();
    if let (Some(search), Some(w)) = (scene.search.as_mut(), window.and_then(|w| w.parse().ok())) {
        search.window = w;
    }
    scene
}

fn digest(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A search's answer: each record's candidate, loss and parameters, in log order.
fn log_of<'a>(records: impl Iterator<Item = &'a ndvm_search::Record>) -> String {
    records
        .map(|r| format!("{} {} {:?}\n", r.candidate, r.train_loss, r.params))
        .collect()
}

/// One run at `threads` threads; `trace` keeps its passes (to project them onto more cores).
fn run(work: Work, threads: usize, trace: bool) -> Run {
    let start = Instant::now();
    match work {
        Work::Search {
            scene,
            calibrations,
        } => {
            let options = SearchOptions {
                threads: Some(threads),
                calibrations: Some(calibrations),
                steps_per_pass: steps_per_pass(),
                trace_passes: trace,
                ..SearchOptions::default()
            };
            // The records are kept as the CLI's log thread receives them (a copy of each,
            // from 4 workers; written on that thread): the log's formatting is not the engine's.
            let mut records = Vec::new();
            let mut search =
                Search::new(&load(scene), &feynman::scenes(), &options).expect("search starts");
            let report = search.run(|e| {
                if let ndvm_search::Event::Calibrated(r, _) = e {
                    records.push(r.clone());
                }
            });
            let wall_s = start.elapsed().as_secs_f64();
            let log = log_of(records.iter());
            let p = report.timing.profile.as_ref().expect("a profile");
            Run {
                pass_s: pass_seconds(p),
                phases: Some(report.timing.search_loop),
                rate: report.summary.calibrations as f64 / wall_s,
                wall_s,
                loop_s: p.wall_s,
                steps: p.counters.steps,
                serial_s: report.timing.search_loop.serial_s(),
                digest: digest(&log),
                trace: search.trace().cloned(),
                ..Run::default()
            }
        }
        Work::Fit { scene, steps } => {
            let options = FitOptions {
                threads: Some(threads),
                steps,
                settings: FitSettings {
                    device: Some(Device::Cpu),
                    steps_per_pass: steps_per_pass()
                        .unwrap_or(FitSettings::default().steps_per_pass),
                    trace_passes: trace,
                    ..FitSettings::default()
                },
                ..FitOptions::default()
            };
            let mut fit = Fit::new(&load(scene), &feynman::scenes(), &options).expect("fit");
            let report = fit.run(|_| {});
            let wall_s = start.elapsed().as_secs_f64();
            let losses: Vec<_> = report
                .candidates
                .iter()
                .map(|c| (c.loss, &c.params))
                .collect();
            let p = fit.profile().report();
            Run {
                pass_s: pass_seconds(&p),
                rate: 1.0 / wall_s,
                wall_s,
                loop_s: p.wall_s,
                steps: p.counters.steps,
                digest: digest(&format!("{losses:?}")),
                trace: fit.profile().trace.clone(),
                ..Run::default()
            }
        }
        Work::Sharded {
            scene,
            calibrations,
            shards,
        } => {
            let options = SearchOptions {
                threads: Some(threads),
                steps_per_pass: steps_per_pass(),
                ..SearchOptions::default()
            };
            let scene = load(scene);
            let shards = std::env::var("NDVM_SHARDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(shards);
            let plan =
                Plan::new(&scene, shards, None, Some(calibrations), None, None).expect("plan");
            // The merged log is written as the CLI writes it (to files): part of the time,
            // unlike the plain search's rows, which keep their records.
            let file = || BufWriter::new(tempfile::tempfile().expect("a temporary file"));
            let mut log = LogWriter::new(file(), file());
            let merged =
                run_local(&scene, &feynman::scenes(), &options, &plan, &mut log).expect("runs");
            assert!(
                merged.log_error.is_none(),
                "the log: {:?}",
                merged.log_error
            );
            let wall_s = start.elapsed().as_secs_f64();
            // Each line but its time (the last field); the merge flushed the log.
            let mut lines = String::new();
            let mut file = log.calibrations.into_inner().expect("flushed");
            file.rewind().expect("rewind");
            file.read_to_string(&mut lines).expect("JSON lines");
            let answer: String = (lines.lines())
                .map(|l| l.rsplit_once(",\"timing\"").map_or(l, |(a, _)| a))
                .collect();
            Run {
                rate: merged.report.summary.calibrations as f64 / wall_s,
                wall_s,
                digest: digest(&answer),
                tasks: merged.tasks,
                ..Run::default()
            }
        }
    }
}

/// `n` independent one-thread runs started together: their summed rate.
fn ceiling(work: Work, n: usize) -> f64 {
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..n)
            .map(|_| s.spawn(move || run(work, 1, false)))
            .collect();
        runs.into_iter().map(|h| h.join().expect("run").rate).sum()
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Karp–Flatt serial fraction from speedup `s` at `n` threads.
fn serial_fraction(s: f64, n: usize) -> f64 {
    let n = n as f64;
    ((1.0 / s - 1.0 / n) / (1.0 - 1.0 / n)).clamp(0.0, 1.0)
}

fn amdahl(e: f64, p: f64) -> f64 {
    1.0 / (e + (1.0 - e) / p)
}

fn measure(name: &str, work: Work, threads: &[usize], rounds: usize, cores: usize) {
    let widest = threads
        .iter()
        .copied()
        .filter(|&t| t <= cores)
        .max()
        .unwrap_or(1);
    let mut rates = vec![Vec::new(); threads.len()];
    let mut loops = vec![Vec::new(); threads.len()];
    let mut parts = vec![Vec::new(); threads.len()];
    let mut ceilings = Vec::new();
    let mut serial = Vec::new();
    let mut steps = 0;
    let mut digests = std::collections::BTreeSet::new();
    // One untimed run first: pages, caches and the allocator warm up outside the figures.
    digests.insert(run(work, widest, false).digest);
    for _ in 0..rounds {
        for (i, &t) in threads.iter().enumerate() {
            let r = run(work, t, false);
            rates[i].push(r.rate);
            loops[i].push(r.loop_s);
            if t == 1 {
                serial.push(r.serial_s / r.wall_s);
            }
            steps = r.steps;
            digests.insert(r.digest);
            parts[i].push(r);
        }
        if widest > 1 {
            ceilings.push(ceiling(work, widest));
        }
    }
    let is_fit = matches!(work, Work::Fit { .. });
    let unit = if is_fit { "wall s" } else { "cal/s" };
    // A sharded run's steps are its shards' own (not counted): its tasks are shown instead.
    let counted = match work {
        Work::Sharded { .. } => "shards in tasks".to_string(),
        _ => format!("{steps} steps"),
    };
    println!("\n{name} ({unit}; {counted}; medians of {rounds} rounds)");
    println!(
        "{:>8} {:>12} {:>9} {:>11} {:>10} {:>14}",
        "threads", unit, "speedup", "vs ceiling", "serial e", "overhead/step"
    );
    let one = median(rates[0].clone());
    let one_loop = median(loops[0].clone());
    let ceiling = (!ceilings.is_empty()).then(|| median(ceilings.clone()));
    let mut e_widest = None;
    for (i, &t) in threads.iter().enumerate() {
        let rate = median(rates[i].clone());
        let s = rate / one;
        let shown = if is_fit {
            format!("{:.3}", 1.0 / rate)
        } else {
            format!("{rate:.0}")
        };
        let used = t.min(cores);
        let e = (used > 1).then(|| serial_fraction(s, used));
        if t == widest {
            e_widest = e;
        }
        let vs = match ceiling {
            Some(c) if t == widest => format!("{:.0}%", 100.0 * rate / c),
            _ => "-".into(),
        };
        let overhead = (median(loops[i].clone()) - one_loop / used as f64) / steps.max(1) as f64;
        println!(
            "{t:>8} {shown:>12} {s:>8.2}× {vs:>11} {:>10} {:>11.1} µs",
            e.map_or("-".into(), |e| format!("{e:.3}")),
            overhead * 1e6
        );
    }
    if let Some(c) = ceiling {
        let shown = if is_fit {
            format!("{:.3} s per fit", widest as f64 / c)
        } else {
            format!("{c:.0} cal/s together")
        };
        println!("ceiling: {widest} independent one-thread runs at once: {shown}");
    }
    if matches!(work, Work::Search { .. }) && !serial.is_empty() {
        // Measured directly: the search loop's serial phases over the one-thread wall time.
        let e = median(serial);
        println!(
            "search loop between steps, measured at 1 thread: {:.1}% of the wall time \
             (alone it caps 16 cores at {:.1}×, 64 at {:.1}×)",
            100.0 * e,
            amdahl(e, 16.0),
            amdahl(e, 64.0)
        );
    }
    if let Some(e) = e_widest {
        println!(
            "Amdahl from {widest} threads (e = {e:.3}): {:.1}× on 16 cores, {:.1}× on 64",
            amdahl(e, 16.0),
            amdahl(e, 64.0)
        );
    }
    // Each thread count's median round, by rate.
    let medians: Vec<Run> = parts
        .into_iter()
        .map(|mut runs| {
            runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
            runs.swap_remove(runs.len() / 2)
        })
        .collect();
    if let Work::Sharded { .. } = work {
        project_shards(&medians, &rates, threads, widest);
    } else {
        where_it_goes(threads, &medians);
        project(work, rounds, widest, &rates, threads);
    }
    assert_eq!(
        digests.len(),
        1,
        "{name}: the answer changed with the thread count"
    );
}

/// Each thread count's wall time (its median round) in the pipeline's passes, between them
/// inside the step loop (the ECS schedule, decode, admission and retirement) and outside the
/// loop (set-up, results): the part that does not shrink with the threads shows.
fn where_it_goes(threads: &[usize], runs: &[Run]) {
    println!(
        "where the wall time goes (ms, then µs per pass; outside: set-up and the search's own phases)\n{:>8} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "threads", "passes", "between", "outside", "pass/pass", "betw/pass"
    );
    for (r, t) in runs.iter().zip(threads) {
        // Per pass of that run: a fit's passes end on time, so their count varies.
        let per = |s: f64| s * 1e6 / r.steps.max(1) as f64;
        println!(
            "{t:>8} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>10.1}",
            r.pass_s * 1e3,
            (r.loop_s - r.pass_s) * 1e3,
            (r.wall_s - r.loop_s) * 1e3,
            per(r.pass_s),
            per(r.loop_s - r.pass_s)
        );
    }
    if runs.iter().all(|r| r.phases.is_some()) {
        // A search: its loop's phases (`LoopTimes`). The join runs the fit's step (and the
        // retirement after it) beside the recording and refill of the step before; what it
        // takes beyond the step loop is the retirement and the part of those not hidden. After
        // a cohort the refill comes before the join, outside it.
        println!(
            "the search's phases (ms): {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}",
            "threads", "join", "beyond", "record", "refill", "retire", "outside join"
        );
        for (r, t) in runs.iter().zip(threads) {
            let l = r.phases.as_ref().expect("a search");
            println!(
                "{:>34} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>12.1}",
                t,
                l.step_s * 1e3,
                (l.step_s - r.loop_s) * 1e3,
                l.record_s * 1e3,
                l.refill_s * 1e3,
                l.retire_s * 1e3,
                (r.wall_s - l.step_s) * 1e3
            );
        }
    }
}

/// Traced one-thread runs projected onto 2, 16 and 64 workers ([`ndvm_systems::trace`]), beside
/// the speedup measured at `widest` threads as a check of the model.
fn project(work: Work, rounds: usize, widest: usize, rates: &[Vec<f64>], threads: &[usize]) {
    let traces: Vec<Trace> = (0..rounds)
        .filter_map(|_| run(work, 1, true).trace)
        .collect();
    let Some(first) = traces.first() else { return };
    if !first.projectable() {
        println!(
            "not projected: a candidate's groups spread over the cores inside its task, and the \
             model gives each task one worker"
        );
        return;
    }
    let wake = wake_s(widest.max(2));
    let passes = first.project(1).passes;
    if widest > 1 {
        // The tasks' own seconds at the widest thread count: what the cores share (caches,
        // memory, a candidate's data moving between cores from pass to pass) makes each slower.
        let task_s = |t: &Trace| t.passes.iter().map(|p| p.work()).sum::<f64>();
        if let Some(wide) = run(work, widest, true).trace {
            let one = median(traces.iter().map(task_s).collect());
            println!(
                "the tasks' own seconds: {:.1} ms at 1 thread, {:.1} ms at {widest} ({:+.0}%)",
                one * 1e3,
                task_s(&wide) * 1e3,
                100.0 * (task_s(&wide) / one - 1.0)
            );
        }
    }
    let share = |f: &dyn Fn(&ndvm_systems::trace::Pass) -> f64| {
        let of = |t: &Trace| t.passes.iter().map(f).sum::<f64>() / t.total_s();
        100.0 * median(traces.iter().map(of).collect())
    };
    println!(
        "projected from {} traced one-thread runs ({passes} passes; {:.1}% of the time serial \
         between them, {:.1}% inside the pass system; {:.1} µs to wake the workers per pass, \
         measured at {} threads):",
        traces.len(),
        share(&|p| p.serial_s),
        share(&|p| p.pass_overhead_s),
        wake * 1e6,
        widest.max(2),
    );
    println!(
        "{:>8} {:>9} {:>10} {:>12} {:>10}",
        "workers", "speedup", "measured", "imbalance", "serial"
    );
    let measured = |p: usize| {
        let i = threads.iter().position(|&t| t == p)?;
        let j = threads.iter().position(|&t| t == 1)?;
        Some(median(rates[i].clone()) / median(rates[j].clone()))
    };
    for p in [2, 16, 64] {
        let (mut speedups, mut imbalance, mut serial) = (Vec::new(), Vec::new(), Vec::new());
        for t in &traces {
            let proj = t.project(p);
            let secs = proj.seconds(wake);
            speedups.push(t.total_s() / secs);
            imbalance.push(proj.imbalance_s / secs);
            serial.push((proj.serial_s + wake * proj.passes as f64) / secs);
        }
        println!(
            "{p:>8} {:>8.2}× {:>10} {:>11.1}% {:>9.1}%",
            median(speedups),
            measured(p)
                .filter(|_| p <= widest)
                .map_or("-".into(), |s| format!("{s:.2}×")),
            100.0 * median(imbalance),
            100.0 * median(serial),
        );
    }
    // What each part costs at 16 workers: the projection with it taken out.
    let without = |name: &str, strip: &dyn Fn(&mut ndvm_systems::trace::Pass)| {
        let speedups = traces.iter().map(|t| {
            let mut t = t.clone();
            t.passes.iter_mut().for_each(strip);
            // The speedup a build in which that part cost nothing would show.
            t.total_s() / t.project(16).seconds(wake)
        });
        format!("{name} {:.2}×", median(speedups.collect()))
    };
    println!(
        "16 workers without: {}, {}, {}",
        without("the serial part", &|p| p.serial_s = 0.0),
        without("the serial work beside the pass", &|p| p.beside_s = 0.0),
        without("both", &|p| {
            p.serial_s = 0.0;
            p.beside_s = 0.0;
        }),
    );
}

/// A sharded search's one-thread run (its median round) projected onto more workers, as
/// `run_local` runs it: each epoch's tasks taken in order by the first free worker, each part
/// merged once it and the parts before it are done and a worker is idle (on one thread while
/// tasks run, its parallel seconds spread over the workers after), the next epoch once the
/// last part is merged, and
/// what ran outside the tasks and the merge (the plan, the report) on one thread. Printed
/// beside the measured speedup at the widest thread count.
fn project_shards(runs: &[Run], rates: &[Vec<f64>], threads: &[usize], widest: usize) {
    let Some(j) = threads.iter().position(|&t| t == 1) else {
        return;
    };
    let one = &runs[j];
    let in_tasks: f64 = one.tasks.iter().map(|t| t.seconds).sum();
    let merging: f64 = (one.tasks.iter())
        .map(|t| t.merge.serial_s + t.merge.parallel_s)
        .sum();
    let outside = (one.wall_s - in_tasks - merging).max(0.0);
    let epochs = one.tasks.iter().map(|t| t.epoch).max().map_or(0, |e| e + 1);
    let longest = one.tasks.iter().map(|t| t.seconds).fold(0.0, f64::max);
    println!(
        "projected from the one-thread run ({} tasks in {epochs} epochs, {:.1} ms each on \
         average, the longest {:.1} ms; merging them {:.1} ms, {:.1} ms of it on every core; \
         {:.1} ms besides):",
        one.tasks.len(),
        1e3 * in_tasks / one.tasks.len().max(1) as f64,
        1e3 * longest,
        1e3 * merging,
        1e3 * one.tasks.iter().map(|t| t.merge.parallel_s).sum::<f64>(),
        1e3 * outside
    );
    println!(
        "{:>8} {:>9} {:>10} {:>12}",
        "workers", "speedup", "measured", "imbalance"
    );
    for p in [2, 16, 64] {
        let (mut clock, mut busy) = (0.0, 0.0);
        for e in 0..epochs {
            let mut free = vec![clock; p];
            let tasks: Vec<&TaskTimes> = one.tasks.iter().filter(|t| t.epoch == e).collect();
            let finished: Vec<f64> = (tasks.iter())
                .map(|t| {
                    let w = (0..p).fold(0, |b, i| if free[i] < free[b] { i } else { b });
                    free[w] += t.seconds;
                    free[w]
                })
                .collect();
            let last = finished.iter().copied().fold(clock, f64::max);
            // Merging starts when a worker has no task left; a part merged while tasks run is
            // merged on one thread, after, on every worker.
            let idle = free.iter().copied().fold(f64::INFINITY, f64::min);
            let mut merged = clock;
            for (t, done) in tasks.iter().zip(finished) {
                let start = merged.max(done).max(idle);
                let spread = if start < last { 1.0 } else { p as f64 };
                merged = start + t.merge.serial_s + t.merge.parallel_s / spread;
            }
            busy += last - clock;
            clock = merged.max(last);
        }
        let secs = clock + outside;
        let measured = threads
            .iter()
            .position(|&t| t == p && p <= widest)
            .map(|i| median(rates[i].clone()) / median(rates[j].clone()));
        println!(
            "{p:>8} {:>8.2}× {:>10} {:>11.1}%",
            one.wall_s / secs,
            measured.map_or("-".into(), |s| format!("{s:.2}×")),
            100.0 * (busy - in_tasks / p as f64) / secs
        );
    }
}

/// What waking `threads` workers for an empty pass costs (median of 2,000).
fn wake_s(threads: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    // From inside the pool, as the fit's loop calls it.
    let times = pool.install(|| {
        (0..2000)
            .map(|_| {
                let t = Instant::now();
                rayon::broadcast(|_| ());
                t.elapsed().as_secs_f64()
            })
            .collect()
    });
    median(times)
}

fn main() {
    let (full, words) = ndvm_benches::bench_args();
    let part = words.first().map_or("all", String::as_str);
    let rounds = words.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: Vec<usize> = match std::env::var("NDVM_SCALING_THREADS") {
        Ok(list) => list
            .split(',')
            .filter_map(|t| t.trim().parse().ok())
            .collect(),
        Err(_) if !full => vec![1, 2],
        Err(_) => {
            let mut t: Vec<usize> = std::iter::successors(Some(1), |&t| Some(t * 2))
                .take_while(|&t| t <= cores)
                .collect();
            if t.last() != Some(&cores) {
                t.push(cores);
            }
            t.push(8 * cores);
            t
        }
    };
    let scale = |n: u64| if full { n } else { n / 20 };
    let works = [
        (
            "scalar",
            Work::Search {
                scene: "search_scalar.scene.ron",
                calibrations: scale(30_000),
            },
        ),
        (
            "recurrence",
            Work::Search {
                scene: "search_recurrence.scene.ron",
                calibrations: scale(6_000),
            },
        ),
        (
            "feynman",
            Work::Search {
                scene: "search_feynman.scene.ron",
                calibrations: scale(6_000),
            },
        ),
        (
            "scalar-shards",
            Work::Sharded {
                scene: "search_scalar.scene.ron",
                calibrations: scale(30_000),
                shards: 16,
            },
        ),
        (
            "feynman-shards",
            Work::Sharded {
                scene: "search_feynman.scene.ron",
                calibrations: scale(6_000),
                shards: 16,
            },
        ),
        (
            "cosearch",
            Work::Fit {
                scene: "cosearch.scene.ron",
                steps: (!full).then_some(20),
            },
        ),
        (
            "kalman_nd",
            Work::Fit {
                scene: "kalman_nd.scene.ron",
                steps: Some(if full { 5 } else { 1 }),
            },
        ),
    ];
    println!("{cores} cores; thread counts {threads:?}");
    for (name, work) in works {
        if part == "all" || part == name {
            measure(name, work, &threads, if full { rounds } else { 1 }, cores);
        }
    }
}
