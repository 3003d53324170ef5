//! Merging a sharded search ([`super::shard`]): the shards' outputs become one log and one
//! report, as if one search had made every calibration.
//!
//! Outputs are taken in (epoch, shard) order — a retried task's second output is dropped — and
//! their records renumbered in that order: calibrations 0, 1, 2, …, candidates by first
//! appearance, programs by first appearance of their source (as [`super::log`] numbers them).
//! The tally, the top skeletons, the successes and the frontier are rebuilt from the merged
//! records; proposer counts are summed by position. Times: an epoch starts when the slowest
//! shard of the one before ended, so a record's time is its epoch's start plus its seconds into
//! its own shard (the frontier keeps them non-decreasing). Everything but `timing` and the log's
//! `timing` is a function of the scene and the plan.

use super::frontier::Frontier;
use super::log::{LogWriter, Programs};
use super::record::{ProposerTally, Record, Tally};
use super::report::{self, LoopTimes, SearchReport};
use super::shard::{Plan, ShardOutput};
use super::{MAX_WARNINGS, SearchError};
use ndvm_components::scene::{Precision, Scene};
use std::collections::HashMap;

/// A merged search: its report and its log, in order, each record with its time.
#[derive(Debug)]
pub struct Merged {
    pub report: SearchReport,
    pub records: Vec<(Record, f64)>,
}

impl Merged {
    /// The log as `ndvm search` writes it: (`calibrations.jsonl`, `programs.jsonl`).
    pub fn log(&self) -> (String, String) {
        let mut log = LogWriter::new(Vec::new(), Vec::new());
        for (r, at) in &self.records {
            // Writing to memory cannot fail.
            let _ = log.write(r, *at);
        }
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap_or_default();
        (text(log.calibrations), text(log.programs))
    }
}

/// Merges every output of a plan's tasks (in any order) into one search.
pub fn merge(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    outputs: &[ShardOutput],
) -> Result<Merged, SearchError> {
    let spec = scene.search.as_ref().ok_or(SearchError::NotASearch)?;
    let parts = super::shard::distinct(outputs);
    for o in &parts {
        if o.task.shards != plan.shards || o.task.epoch >= plan.epochs {
            return Err(SearchError::Setting(format!(
                "output of shard {} of {} in epoch {} is not part of this plan ({} shards, {} epochs)",
                o.task.shard, o.task.shards, o.task.epoch, plan.shards, plan.epochs
            )));
        }
    }
    // Each epoch starts when the slowest shard of the one before has ended.
    let mut start = vec![0.0f64; plan.epochs as usize + 1];
    for o in &parts {
        let e = o.task.epoch as usize;
        start[e + 1] = start[e + 1].max(o.wall_s);
    }
    for e in 1..start.len() {
        start[e] += start[e - 1];
    }
    let penalty = parts.first().and_then(|o| o.front_penalty);
    let mut tally = Tally::new(spec.keep, plan.by_r2, penalty);
    let mut frontier = Frontier::default();
    let mut programs = Programs::default();
    let mut candidates: HashMap<(u32, usize, u64), u64> = HashMap::new();
    let mut records = Vec::new();
    let mut first_success_s = None;
    let mut now = 0.0f64;
    for o in &parts {
        for w in &o.records {
            let mut r = w.record();
            let next = candidates.len() as u64;
            r.candidate = *candidates
                .entry((o.task.epoch, o.task.shard, w.candidate))
                .or_insert(next);
            r.calibration = tally.calibrations;
            r.program = programs.id(&r.src);
            now = now.max(start[o.task.epoch as usize] + w.elapsed_s);
            let before = tally.successful_skeletons.len();
            let improved = tally.add(&mut r);
            let new_success = tally.successful_skeletons.len() > before;
            if r.success && first_success_s.is_none() {
                first_success_s = Some(now);
            }
            if improved || new_success {
                frontier.offer(tally.point(now), new_success);
            }
            records.push((r, now));
        }
    }
    let wall_s = start[plan.epochs as usize];
    frontier.close(tally.point(wall_s.max(now)));
    let mut proposers: Vec<ProposerTally> = Vec::new();
    let mut warnings = Vec::new();
    let (mut warning_count, mut unfinished) = (0, 0);
    let mut search_loop = LoopTimes::default();
    for o in &parts {
        add_counts(&mut proposers, &o.proposers);
        for w in &o.warnings {
            if warnings.len() < MAX_WARNINGS {
                warnings.push(if plan.shards * plan.epochs as usize > 1 {
                    format!("shard {}, epoch {}: {w}", o.task.shard, o.task.epoch)
                } else {
                    w.clone()
                });
            }
        }
        warning_count += o.warning_count;
        unfinished += o.unfinished;
        search_loop += o.search_loop;
    }
    let stopped = |why: &str| parts.iter().any(|o| o.stopped_by == why);
    let stopped_by = if stopped("interrupted") {
        "interrupted"
    } else if plan.calibrations.is_some_and(|c| tally.calibrations >= c) {
        "calibrations"
    } else if stopped("seconds") {
        "seconds"
    } else {
        "proposers"
    };
    let precision = precision.or(scene.precision).unwrap_or(Precision::F32);
    let report = report::build(report::Parts {
        spec,
        tally: &tally,
        proposers,
        warnings,
        warning_count,
        stopped_by,
        unfinished,
        seconds: plan.seconds,
        max_calibrations: plan.calibrations,
        precision,
        wall_s,
        first_success_s,
        threads: parts.iter().map(|o| o.threads).max().unwrap_or(0),
        profile: None,
        device: parts.first().map(|o| o.device.device()).unwrap_or_default(),
        search_loop,
        frontier,
        truth: super::front::truth(scene),
    });
    Ok(Merged { report, records })
}

/// Adds a part's per-proposer counts (and its first error) to the merged ones (every shard runs
/// the same proposers, in the same order).
fn add_counts(merged: &mut Vec<ProposerTally>, part: &[ProposerTally]) {
    for (i, p) in part.iter().enumerate() {
        if i == merged.len() {
            merged.push(ProposerTally {
                name: p.name.clone(),
                ..ProposerTally::default()
            });
        }
        let m = &mut merged[i];
        m.candidates += p.candidates;
        m.calibrations += p.calibrations;
        m.successes += p.successes;
        if m.error.is_none() {
            m.error.clone_from(&p.error);
        }
    }
}
