//! A sharded search run here ([`super::shard`]): each round's shards at once on this machine's
//! cores, then merged (`ndvm search --shards`).
//!
//! The shards of a round share nothing, so they are a search's cheapest parallelism: each runs
//! on a worker of its own with no barrier until the round ends. A plain search's cores meet at
//! the end of every pass of its window, and its own work between passes runs on one core
//! (docs/performance.md, "Twelfth part").

use super::merge::{Decoded, Merged, decode, merge_decoded};
use super::record::Record;
use super::shard::{Plan, ShardOutput, ShardTask, run_task_with};
use super::{SearchError, SearchOptions};
use ndvm_components::scene::Scene;
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Runs a whole plan here and merges it: what a cluster computes, on this machine's cores.
/// See [`run_local_with`].
pub fn run_local(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    plan: &Plan,
) -> Result<Merged, SearchError> {
    run_local_with(scene, base, options, plan, &|_| {})
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
pub fn run_local_with(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    plan: &Plan,
    on_calibrated: &(dyn Fn(&Record) + Sync),
) -> Result<Merged, SearchError> {
    let began = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // As a plain search: `--threads`, else the scene's `threads`, else every core.
    let threads = (options.threads.or(scene.threads))
        .filter(|&t| t > 0)
        .unwrap_or(cores)
        .min(cores);
    let interrupted = || (options.interrupted.as_ref()).is_some_and(|f| f.load(Ordering::Relaxed));
    let mut outputs = Vec::new();
    // Per task, in order: its records decoded for the merge (by the task itself in the last
    // epoch; earlier epochs' records choose the migrants first) and its wall seconds.
    let mut decoded: Vec<Option<Decoded>> = Vec::new();
    let mut task_seconds = Vec::new();
    for epoch in 0..plan.epochs {
        // Ctrl-C ends the search with the rounds run so far.
        if epoch > 0 && interrupted() {
            break;
        }
        let last = epoch + 1 == plan.epochs;
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
        let run = |task: &ShardTask| {
            let began = Instant::now();
            let mut out = run_task_with(scene, base, &per_task, task, on_calibrated);
            let records = match &mut out {
                Ok(o) if last => Some(decode(std::mem::take(&mut o.records))),
                _ => None,
            };
            (out, records, began.elapsed().as_secs_f64())
        };
        let next = AtomicUsize::new(0);
        // Plain threads, not a rayon pool: a rayon worker waiting on a task's own pool would
        // take the next task meanwhile, and every shard would run at once.
        let mut done: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        while let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                            mine.push((task.shard, run(task)));
                        }
                        mine
                    })
                })
                .collect();
            let joined = handles.into_iter().map(|h| h.join());
            joined
                .flat_map(|mine| mine.unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        done.sort_by_key(|(shard, _)| *shard);
        for (_, (out, records, secs)) in done {
            outputs.push(out?);
            decoded.push(records);
            task_seconds.push((epoch, secs));
        }
    }
    // The rest on the run's own workers: the earlier epochs' records decoded, then the merge.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| SearchError::Setting(format!("cannot start {threads} threads: {e}")))?;
    let mut merged = pool.install(|| {
        let todo: Vec<(&mut Option<Decoded>, &mut ShardOutput)> = (decoded.iter_mut())
            .zip(outputs.iter_mut())
            .filter(|(d, _)| d.is_none())
            .collect();
        todo.into_par_iter()
            .for_each(|(d, o)| *d = Some(decode(std::mem::take(&mut o.records))));
        let decoded = decoded.into_iter().map(Option::unwrap_or_default).collect();
        merge_decoded(scene, plan, options.precision, outputs, decoded)
    })?;
    merged.task_seconds = task_seconds;
    // The merge times a cluster (an epoch lasts its slowest shard); this is the run's own.
    let timing = &mut merged.report.timing;
    timing.wall_s = began.elapsed().as_secs_f64();
    timing.calibrations_per_second = merged.records.len() as f64 / timing.wall_s.max(1e-9);
    timing.threads = threads;
    Ok(merged)
}
