//! A search split into shards: independent parts that run anywhere (threads, processes, the
//! machines of a Ray cluster) and merge into one result.
//!
//! The idea is the island model. A [`Plan`] cuts a search's budget into `shards × epochs`
//! [`ShardTask`]s. Within an epoch the shards are independent searches of the same scene, each
//! with its own seed (so its own draws and its own Evolve lineage) and its own share of the
//! proposers' work:
//!
//! - the scene's own candidates and every `Stream`'s lines are dealt out: line `i` goes to shard
//!   `i mod shards`, and a shard's later epochs go on where its earlier ones stopped;
//! - Evolve, Command and plugin proposers run in every shard, seeded apart;
//! - between epochs the best programs of every shard *migrate*: each shard's next epoch starts
//!   its Evolve islands from them (besides the scene's seeds).
//!
//! A task is a pure function of the scene and the [`ShardTask`] (under a calibration budget):
//! a task that is run twice — a retried worker — gives the same [`ShardOutput`], and
//! [`crate::shards::merge`] orders the outputs by epoch and shard, so the merged log and results are the
//! same for the same shard and epoch counts on any cluster, whatever ran where. One shard and one
//! epoch is exactly the unsharded search. [`crate::shards::local`] runs a plan on this machine's cores.

pub mod local;
pub mod merge;
pub mod spill;
pub mod task;

pub use task::{
    DEFAULT_EPOCHS, DEFAULT_MIGRANTS, MAX_PARTS, MAX_TASKS, MIGRANT_POOL, ShardTask, WIRE, deal,
};

use crate::record::{Record, WireRecord};
use crate::report::LoopTimes;
use crate::run::{Event, Search, SearchError, SearchOptions};
use crate::tally::{ProposerTally, TopSkeletons};
use ndvm_components::scene::Scene;
use ndvm_components::scene::search::{ProposerSpec, Success};
use ndvm_systems::device::DeviceUsed;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How a search is cut into tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub shards: usize,
    pub epochs: u32,
    /// The whole search's budget (the caller's, else the scene's; seconds default to
    /// [`crate::run::DEFAULT_SECONDS`]).
    pub calibrations: Option<u64>,
    pub seconds: Option<f64>,
    /// Programs each shard sends to the others between epochs.
    pub migrants: usize,
    /// The scene ranks by held-out R² (else by training loss): which programs migrate.
    pub by_r2: bool,
}

/// Every task's output once (a retried task may have reported twice), in (epoch, shard) order.
pub fn distinct(outputs: &[ShardOutput]) -> Vec<&ShardOutput> {
    let mut parts: Vec<&ShardOutput> = outputs.iter().collect();
    parts.sort_by_key(|o| (o.task.epoch, o.task.shard));
    parts.dedup_by_key(|o| (o.task.epoch, o.task.shard));
    parts
}

/// An error unless `shards × epochs` is at most [`MAX_TASKS`].
pub fn check_tasks(shards: usize, epochs: u32) -> Result<(), SearchError> {
    if shards.saturating_mul(epochs as usize) <= MAX_TASKS {
        return Ok(());
    }
    Err(SearchError::Setting(format!(
        "{shards} shards × {epochs} epochs is {} tasks; at most {MAX_TASKS}: fewer shards or \
         fewer epochs",
        shards.saturating_mul(epochs as usize)
    )))
}

/// `total` cut into `parts` near-equal shares; share `k`.
fn share(total: u64, parts: u64, k: u64) -> u64 {
    let at = |i: u64| (u128::from(total) * u128::from(i) / u128::from(parts.max(1))) as u64;
    at(k + 1) - at(k)
}

impl Plan {
    /// A plan for `scene`: `shards` parts, `epochs` (default: [`DEFAULT_EPOCHS`] when several
    /// shards run Evolve, else 1) and the budget (the caller's replaces the scene's, as in
    /// [`Search::new`]).
    pub fn new(
        scene: &Scene,
        shards: usize,
        epochs: Option<u32>,
        calibrations: Option<u64>,
        seconds: Option<f64>,
        migrants: Option<usize>,
    ) -> Result<Plan, SearchError> {
        let spec = scene.search.as_ref().ok_or(SearchError::NotASearch)?;
        let bad = |what: &str, n: usize| {
            SearchError::Setting(format!("{what} must be between 1 and {MAX_PARTS}, got {n}"))
        };
        if !(1..=MAX_PARTS).contains(&shards) {
            return Err(bad("the shard count", shards));
        }
        let evolves = spec
            .proposers
            .iter()
            .any(|p| matches!(p, ProposerSpec::Evolve { .. }));
        let epochs = epochs.unwrap_or(if shards > 1 && evolves {
            DEFAULT_EPOCHS
        } else {
            1
        });
        if !(1..=MAX_PARTS as u32).contains(&epochs) {
            return Err(bad("the epoch count", epochs as usize));
        }
        check_tasks(shards, epochs)?;
        let crate::run::Budget {
            seconds,
            calibrations,
        } = crate::run::Budget::resolve(seconds, calibrations, spec)?;
        Ok(Plan {
            shards,
            epochs,
            calibrations,
            seconds,
            migrants: migrants.unwrap_or(DEFAULT_MIGRANTS),
            by_r2: matches!(spec.success, Success::HeldOutR2(_)),
        })
    }

    /// The tasks of `epoch`, given every output of the earlier epochs (in any order).
    pub fn tasks(&self, epoch: u32, earlier: &[ShardOutput]) -> Vec<ShardTask> {
        let epochs = u64::from(self.epochs);
        let budget = self
            .calibrations
            .map(|c| share(c, epochs, u64::from(epoch)));
        let earlier = distinct(earlier);
        // Per shard: proposals its earlier epochs calibrated, per proposer.
        let mut resume: Vec<Vec<u64>> = vec![Vec::new(); self.shards];
        for o in earlier.iter().filter(|o| o.task.epoch < epoch) {
            let Some(r) = resume.get_mut(o.task.shard) else {
                continue;
            };
            r.resize(r.len().max(o.proposers.len()), 0);
            for (r, p) in r.iter_mut().zip(&o.proposers) {
                *r += p.candidates;
            }
        }
        let sent = self.sent_after(epoch, &earlier);
        let pooled = sent.iter().map(|s| s.len()).sum::<usize>() <= MIGRANT_POOL;
        let everyone = if pooled {
            migrants_of(&sent, 0)
        } else {
            Vec::new()
        };
        (0..self.shards)
            .zip(resume)
            .map(|(shard, resume)| ShardTask {
                shard,
                shards: self.shards,
                epoch,
                calibrations: budget.map(|b| share(b, self.shards as u64, shard as u64)),
                seconds: self.seconds.map(|s| s / self.epochs as f64),
                migrants: if pooled {
                    everyone.clone()
                } else {
                    migrants_of(&sent, (shard + 1) % self.shards)
                },
                resume,
                // The last epoch's best programs go nowhere.
                sends: if epoch + 1 < self.epochs {
                    self.migrants
                } else {
                    0
                },
                wire: WIRE,
            })
            .collect()
    }

    /// Per shard, the best programs (one per skeleton) its epoch `epoch − 1` sent.
    fn sent_after<'o>(&self, epoch: u32, earlier: &[&'o ShardOutput]) -> Vec<&'o [String]> {
        let mut sent: Vec<&[String]> = vec![&[]; self.shards];
        if let Some(last) = epoch.checked_sub(1) {
            for o in earlier.iter().filter(|o| o.task.epoch == last) {
                if let Some(s) = sent.get_mut(o.task.shard) {
                    *s = &o.best;
                }
            }
        }
        sent
    }
}

/// The programs `sent` by each shard, from shard `first` on around the ring, each once, at most
/// [`MIGRANT_POOL`].
fn migrants_of(sent: &[&[String]], first: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let n = sent.len();
    'ring: for k in 0..n {
        for src in sent[(first + k) % n] {
            if out.len() == MIGRANT_POOL {
                break 'ring;
            }
            if !out.contains(src) {
                out.push(src.clone());
            }
        }
    }
    out
}

/// What a shard's task gives back: its calibrations and counts, for [`crate::shards::merge`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardOutput {
    pub task: ShardTask,
    pub records: Vec<WireRecord>,
    pub proposers: Vec<ProposerTally>,
    pub warnings: Vec<String>,
    pub warning_count: u64,
    pub stopped_by: String,
    pub unfinished: u64,
    pub wall_s: f64,
    pub threads: usize,
    pub device: DeviceUsed,
    pub search_loop: LoopTimes,
    /// The front's BIC penalty and loss floor ([`crate::front`]).
    #[serde(default)]
    pub front_penalty: Option<crate::front::Penalty>,
    /// Its best `task.sends` programs (one per skeleton, best first, failed calibrations
    /// aside): the next epoch's migrants.
    #[serde(default)]
    pub best: Vec<String>,
}

impl ShardOutput {
    /// The output of a task that never started: the time budget ran out before it could
    /// (`stopped_by` "seconds", nothing calibrated).
    pub fn skipped(task: ShardTask) -> ShardOutput {
        ShardOutput {
            task,
            records: Vec::new(),
            proposers: Vec::new(),
            warnings: Vec::new(),
            warning_count: 0,
            stopped_by: "seconds".into(),
            unfinished: 0,
            wall_s: 0.0,
            threads: 0,
            device: DeviceUsed::default(),
            search_loop: LoopTimes::default(),
            front_penalty: None,
            best: Vec::new(),
        }
    }
}

/// Runs one task: the scene's search as shard `task.shard` of `task.shards` in `task.epoch`.
/// `options` gives the threads, the engine and the interrupt flag; the budget is the task's.
pub fn run_task(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    task: &ShardTask,
) -> Result<ShardOutput, SearchError> {
    let mut records = Vec::new();
    let mut out = run_task_with(scene, base, options, task, |r, elapsed_s| {
        records.push(WireRecord::of(r, elapsed_s));
    })?;
    out.records = records;
    Ok(out)
}

/// [`run_task`], handing each calibration to `each` (with its seconds into the shard's run) as
/// the shard finishes it, in the shard's own order, instead of keeping it: the output's
/// `records` are left empty.
pub fn run_task_with(
    scene: &Scene,
    base: &Path,
    options: &SearchOptions,
    task: &ShardTask,
    mut each: impl FnMut(&Record, f64) + Send,
) -> Result<ShardOutput, SearchError> {
    task.check_wire()?;
    if task.shard >= task.shards {
        return Err(SearchError::Setting(format!(
            "shard {} of {}: shards are numbered from 0",
            task.shard, task.shards
        )));
    }
    let options = SearchOptions {
        calibrations: task.calibrations,
        seconds: task.seconds,
        shard: Some(task.clone()),
        ..options.clone()
    };
    let by_r2 = (scene.search.as_ref()).is_some_and(|s| matches!(s.success, Success::HeldOutR2(_)));
    let mut best = TopSkeletons::new(task.sends, by_r2);
    let mut search = Search::new(scene, base, &options)?;
    let report = search.run(|e| {
        if let Event::Calibrated(r, elapsed_s) = e {
            if !matches!(r.status, "failed" | "non-finite") {
                best.offer(r);
            }
            each(r, elapsed_s);
        }
    });
    Ok(ShardOutput {
        task: task.clone(),
        records: Vec::new(),
        proposers: report.proposers,
        warnings: report.warnings,
        warning_count: report.summary.warnings,
        stopped_by: report.summary.stopped_by.to_string(),
        unfinished: report.summary.unfinished,
        wall_s: report.timing.wall_s,
        threads: report.timing.threads,
        device: report.summary.protocol.device.clone(),
        search_loop: report.timing.search_loop,
        front_penalty: report.front.penalty,
        best: best.ranked().into_iter().map(|r| r.src).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, parts) in [(10u64, 3u64), (7, 7), (3, 8), (100_000, 16), (u64::MAX, 5)] {
            let s: Vec<u64> = (0..parts).map(|k| share(total, parts, k)).collect();
            assert_eq!(
                s.iter().map(|&x| u128::from(x)).sum::<u128>(),
                u128::from(total)
            );
            let (lo, hi) = (
                s.iter().min().expect("shares"),
                s.iter().max().expect("shares"),
            );
            assert!(hi - lo <= 1, "{s:?}");
        }
    }
}
