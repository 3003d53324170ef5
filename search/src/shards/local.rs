//! A sharded search run here ([`crate::shards`]): each round's shards at once on this machine's
//! cores, then merged (`ndvm search --shards`).
//!
//! The shards of a round share nothing, so they are a search's cheapest parallelism: each runs
//! on a worker of its own with no barrier until the round ends. A plain search's cores meet at
//! the end of every pass of its window, and its own work between passes runs on one core
//! (docs/changelog.md, "Scaling, Twelfth part").
//!
//! Each task's records go to a temporary file as it runs ([`crate::shards::spill`]), and each part is
//! merged ([`crate::shards::merge::Merger`]) once the parts before it are and a worker has no shard left
//! to start: memory stays flat, and the merge never takes a core from a shard (the changelog,
//! "Scaling, Thirteenth part").

use crate::log::LogWriter;
use crate::record::Record;
use crate::run::{SearchError, SearchOptions};
use crate::shards::merge::{Merged, Merger, Records};
use crate::shards::spill::{Spilled, Spills};
use crate::shards::{Plan, ShardOutput, ShardTask, run_task_with};
use ndvm_components::scene::Scene;
use ndvm_systems::settings::Threads;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Runs a whole plan here and merges it, its log written to `log`: what a cluster computes, on
/// this machine's cores. See [`run_local_with`].
pub fn run_local<W: Write + Send>(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    plan: &Plan,
    log: &mut LogWriter<W>,
) -> Result<Merged, SearchError> {
    run_local_with(scene, base, options, plan, &|_| {}, log)
}

/// Runs a whole plan here, each epoch's shards at once, and merges it (see the module docs).
///
/// `options.threads` workers (else the scene's `threads`, else one per core) take the tasks in
/// order; with fewer tasks than workers each task's search gets an equal share of them. The
/// merged result does not depend on the thread count (under a calibration budget): only on the
/// plan. A time budget is the run's wall time: with more shards than workers, the shards run in
/// waves and each gets its wave's share of the round. The report's `timing` is this run's
/// (its wall time and workers); the records' times are the merge's (a shard's own clock after
/// the earlier epochs' slowest shards). `on_calibrated` hears of each calibration as its shard
/// finishes it (a progress count). Ctrl-C ends the search after the epoch it stopped. The
/// first task that cannot start (in task order) is the error.
/// The merged log streams to `log` as the parts are merged.
pub fn run_local_with<W: Write + Send>(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    plan: &Plan,
    on_calibrated: &(dyn Fn(&Record) + Sync),
    log: &mut LogWriter<W>,
) -> Result<Merged, SearchError> {
    let began = Instant::now();
    // As a plain search: `--threads`, else the scene's `threads`, else every core.
    let threads = Threads::resolve(options.threads, scene).workers();
    let interrupted = || (options.interrupted.as_ref()).is_some_and(|f| f.load(Ordering::Relaxed));
    // A time budget is the run's: no task starts after it (each costs its set-up).
    let deadline = (plan.seconds).map(|s| began + std::time::Duration::from_secs_f64(s));
    let spent = || deadline.is_some_and(|d| Instant::now() >= d);
    let skipped = AtomicUsize::new(0);
    // The merge's decoding and formatting run on the run's own workers once a round's shards
    // are done.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| SearchError::Setting(format!("cannot start {threads} threads: {e}")))?;
    // The spills' folder: an unusable `TMPDIR` is found before anything is written.
    let spills = Spills::new().map_err(|e| SearchError::Setting(e.to_string()))?;
    let mut merger = Merger::new(scene, plan, options.precision, log)?;
    // The parts merged so far (their records taken out): the next epoch's tasks come from them.
    let mut outputs: Vec<ShardOutput> = Vec::new();
    let mut task_seconds = Vec::new();
    for epoch in 0..plan.epochs {
        // Ctrl-C, or the time budget spent, ends the search with the rounds run so far.
        if epoch > 0 && (interrupted() || spent()) {
            break;
        }
        let mut tasks = plan.tasks(epoch, &outputs);
        let workers = threads.min(tasks.len()).max(1);
        // A time budget is the run's: the shards beyond the workers run in later waves, each
        // wave with its share of the round.
        let waves = tasks.len().div_ceil(workers).max(1);
        for t in &mut tasks {
            t.seconds = t.seconds.map(|s| s / waves as f64);
        }
        let per_task = SearchOptions {
            threads: Some((threads / workers).max(1)),
            ..options.clone()
        };
        // A task's records go to disk as it runs.
        let run = |task: &ShardTask| -> Result<Done, SearchError> {
            if spent() {
                skipped.fetch_add(1, Ordering::Relaxed);
                return Ok((ShardOutput::skipped(task.clone()), None, 0.0));
            }
            let began = Instant::now();
            let mut spill = spills
                .spill()
                .map_err(|e| SearchError::Setting(e.to_string()))?;
            let out = run_task_with(scene, base, &per_task, task, |r, elapsed_s| {
                on_calibrated(r);
                spill.push(r, elapsed_s);
            })?;
            let records = spill
                .finish()
                .map_err(|e| SearchError::Setting(e.to_string()))?;
            Ok((out, Some(records), began.elapsed().as_secs_f64()))
        };
        // Each part is merged once the ones before it are and a worker is idle ([`in_turn`]);
        // the first that failed (in task order) is the error.
        let mut failed = None;
        let mut merge = |done: Result<Done, SearchError>, every_core: bool| {
            if failed.is_some() {
                return;
            }
            merger.on_every_core(every_core);
            let merged = done.and_then(|(out, records, secs)| {
                task_seconds.push(secs);
                // Its records are on disk (`records` is empty): small to keep.
                outputs.push(out.clone());
                let records =
                    records.map_or(Records::Held(Vec::new().into_iter()), Records::Spilled);
                merger.push(out, records)
            });
            failed = merged.err();
        };
        if workers == 1 {
            // One worker: the tasks and the merge take turns on this thread. Parts are merged
            // a few thousand records at a time, on the pool: each visit to it costs two thread
            // switches (about 70 µs on a VM, 9 ms of a 0.45 s Evolve search in 128 parts), but
            // a part merged there leaves the next task faster than one merged here (measured:
            // docs/changelog.md, "Scaling, Fourteenth part").
            let (mut due, mut records) = (Vec::new(), 0);
            for (i, task) in tasks.iter().enumerate() {
                let done = run(task);
                // After an error no later task starts.
                let last = done.is_err() || i + 1 == tasks.len();
                records += (done.as_ref().ok())
                    .and_then(|(_, spilled, _)| spilled.as_ref())
                    .map_or(0, Spilled::len);
                due.push(done);
                if records >= MERGE_EVERY || last {
                    pool.install(|| due.drain(..).for_each(|done| merge(done, true)));
                    records = 0;
                }
                if last {
                    break;
                }
            }
        } else {
            in_turn(&tasks, workers, &run, &mut |parts, others_running| {
                // While the last tasks run, parts are merged on this thread alone, on the core
                // an idle worker left; on every core once they are done, all in one visit to
                // the pool (each costs two thread switches: about 70 µs on a VM).
                if others_running {
                    parts.into_iter().for_each(|done| merge(done, false));
                } else {
                    pool.install(|| parts.into_iter().for_each(|done| merge(done, true)));
                }
            });
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    let mut merged = merger.finish()?;
    // Tasks the budget left unstarted: skipped in their round, or in rounds never begun.
    let ran = task_seconds.iter().filter(|&&s| s > 0.0).count();
    let total = plan.shards * plan.epochs as usize;
    if skipped.into_inner() > 0 || (spent() && !interrupted() && ran < total) {
        let each = task_seconds.iter().sum::<f64>() / ran.max(1) as f64;
        merged.report.warnings.push(format!(
            "the time budget ({} s) ended before {} of {total} shard tasks could start (each \
             that ran took about {:.1} ms, set-up included): fewer shards leave more of it to \
             search",
            plan.seconds.unwrap_or_default(),
            total - ran,
            each * 1e3
        ));
        merged.report.summary.warnings += 1;
    }
    for (t, secs) in merged.tasks.iter_mut().zip(task_seconds) {
        t.seconds = secs;
    }
    // The merge times a cluster (an epoch lasts its slowest shard); this is the run's own.
    let timing = &mut merged.report.timing;
    timing.wall_s = began.elapsed().as_secs_f64();
    timing.calibrations_per_second =
        merged.report.summary.calibrations as f64 / timing.wall_s.max(1e-9);
    timing.threads = threads;
    Ok(merged)
}

/// With one worker, parts are merged once they hold this many records between them.
const MERGE_EVERY: u64 = 4096;

/// A finished task: its output, its records on disk (none for a task the time budget skipped)
/// and its wall seconds.
type Done = (ShardOutput, Option<Spilled>, f64);

/// Runs `tasks` on `workers` threads of their own, each taking the next task as it finishes one,
/// and hands the results to `merge` on this thread in task order, with whether tasks are still
/// running: each once it and every task before it are done and a worker is idle (no task
/// left to start), so that the merge never takes a core from a task. The results due at once
/// come together.
fn in_turn(
    tasks: &[ShardTask],
    workers: usize,
    run: &(dyn Fn(&ShardTask) -> Result<Done, SearchError> + Sync),
    merge: &mut dyn FnMut(Vec<Result<Done, SearchError>>, bool),
) {
    let next = AtomicUsize::new(0);
    // Plain threads, not a rayon pool: a rayon worker waiting on a task's own pool would take
    // the next task meanwhile, and every shard would run at once.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let tx = tx.clone();
                let next = &next;
                s.spawn(move || {
                    let mut i = next.fetch_add(1, Ordering::Relaxed);
                    while let Some(task) = tasks.get(i) {
                        let done = run(task);
                        if done.is_err() {
                            // No later task starts: the search ends with this error.
                            next.fetch_max(tasks.len(), Ordering::Relaxed);
                        }
                        // The next task is taken before this one is reported, so that the
                        // merge never counts a worker as idle that is about to start one.
                        let taken = next.fetch_add(1, Ordering::Relaxed);
                        // The receiver lives until every worker is done.
                        let _ = tx.send((i, done));
                        i = taken;
                    }
                })
            })
            .collect();
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut due = 0;
        // The parts due: every one received in order so far.
        let mut take_due = |waiting: &mut BTreeMap<usize, _>| {
            let mut parts = Vec::new();
            while let Some(done) = waiting.remove(&due) {
                parts.push(done);
                due += 1;
            }
            parts
        };
        for (received, (i, done)) in rx.into_iter().enumerate() {
            waiting.insert(i, done);
            // Parts are merged on the cores the tasks leave idle: none until the last tasks
            // have started and one has ended; on every core once all have.
            let started = next.load(Ordering::Relaxed).min(tasks.len());
            let running = started - (received + 1);
            if running >= workers {
                continue;
            }
            let parts = take_due(&mut waiting);
            if !parts.is_empty() {
                merge(parts, running > 0);
            }
        }
        // After an error, the tasks that never started leave parts waiting: the error among
        // them.
        let parts = take_due(&mut waiting);
        if !parts.is_empty() {
            merge(parts, false);
        }
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}
