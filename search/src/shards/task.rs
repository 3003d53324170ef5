//! One shard of one epoch — what a worker runs — and how a shard takes its share of a list.

use crate::run::error::SearchError;
use crate::run::seed::mix;
use serde::{Deserialize, Serialize};

/// Epochs when a search with Evolve proposers runs on several shards and none are asked for.
pub const DEFAULT_EPOCHS: u32 = 4;
/// Programs each shard sends to the others between epochs when none are asked for.
pub const DEFAULT_MIGRANTS: usize = 4;
/// Most shards or epochs a plan takes.
pub const MAX_PARTS: usize = 4096;
/// Most tasks (shards × epochs) a plan takes.
pub const MAX_TASKS: usize = 65_536;
/// Most migrants a task starts from: every shard's when they are no more, else those of the
/// shards after it (in a ring), so that a round's tasks hold a fixed number each, not every
/// shard's (memory that grew with the square of the shard count).
pub const MIGRANT_POOL: usize = 64;
/// The version of what travels between a cluster's driver and its workers (tasks, and outputs,
/// which carry their task): raised when a field is added or changes meaning. A task or output
/// of another version is refused ([`ShardTask::check_wire`]): a cluster that mixed builds
/// would otherwise run, and lose what the older build does not send (a shard's migrants).
pub const WIRE: u32 = 1;

/// One shard of one epoch: what a worker runs ([`run_task`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardTask {
    pub shard: usize,
    pub shards: usize,
    pub epoch: u32,
    /// This task's share of the budget.
    pub calibrations: Option<u64>,
    pub seconds: Option<f64>,
    /// The best programs of every shard's previous epoch, best first.
    pub migrants: Vec<String>,
    /// Per proposer (in the search's order): proposals this shard's earlier epochs calibrated.
    pub resume: Vec<u64>,
    /// How many of its best programs this task sends to the next epoch ([`ShardOutput::best`]).
    #[serde(default)]
    pub sends: usize,
    /// [`WIRE`] of the build that made it: 0 from a build before versions.
    #[serde(default)]
    pub wire: u32,
}

impl ShardTask {
    /// An error unless this task (or the output that carries it) comes from a build that
    /// speaks this one's [`WIRE`].
    pub fn check_wire(&self) -> Result<(), SearchError> {
        if self.wire == WIRE {
            return Ok(());
        }
        Err(SearchError::Setting(format!(
            "shard {} of epoch {} comes from another ndvm build (shard format {}, this build \
             reads {WIRE}): install the same ndvm on every worker",
            self.shard, self.epoch, self.wire
        )))
    }

    /// What sets this task's seeds apart from the unsharded search's (none for shard 0 of 1 in
    /// epoch 0, which is that search).
    pub fn salt(&self) -> Option<u64> {
        (self.shards > 1 || self.epoch > 0)
            .then(|| (u64::from(self.epoch) << 32) | self.shard as u64)
    }

    /// The search seed this task runs with.
    pub fn seed(&self, scene_seed: u64) -> u64 {
        self.salt().map_or(scene_seed, |s| mix(scene_seed, s))
    }
}

/// Shard `shard`'s share of `items` when `shards` deal them out: every `shards`-th, from
/// `shard` (the scene's candidates, a stream's lines).
pub fn deal<T>(items: Vec<T>, shard: usize, shards: usize) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % shards.max(1) == shard)
        .map(|(_, x)| x)
        .collect()
}
