//! Merging a sharded search ([`super::shard`]): the shards' outputs become one log and one
//! report, as if one search had made every calibration.
//!
//! Outputs are taken in (epoch, shard) order — a retried task's second output is dropped — and
//! their records renumbered in that order: calibrations 0, 1, 2, …, candidates in their
//! shard's own order after the earlier parts' (as a search numbers them: by admission), programs
//! by first appearance of their source (as [`super::log`] numbers them).
//! The tally, the top skeletons, the successes and the frontier are rebuilt from the merged
//! records; proposer counts are summed by position. Times: an epoch starts when the slowest
//! shard of the one before ended, so a record's time is its epoch's start plus its seconds into
//! its own shard (the frontier keeps them non-decreasing). Everything but `timing` and the log's
//! `timing` is a function of the scene and the plan.

use super::frontier::Frontier;
use super::log::{LogWriter, Programs, fingerprint};
use super::record::{ProposerTally, Record, Tally};
use super::report::{self, LoopTimes, SearchReport};
use super::shard::{Plan, ShardOutput, WireRecord};
use super::{MAX_WARNINGS, SearchError};
use ndvm_components::scene::{Precision, Scene};
use rayon::prelude::*;

/// A merged search: its report and its log, in order, each record with its time.
#[derive(Debug)]
pub struct Merged {
    pub report: SearchReport,
    pub records: Vec<(Record, f64)>,
    /// Each task's own wall seconds, in (epoch, shard) order: (epoch, seconds), to see how
    /// evenly the shards shared the work.
    pub task_seconds: Vec<(u32, f64)>,
}

impl Merged {
    /// The log as `ndvm search` writes it: (`calibrations.jsonl`, `programs.jsonl`). Its
    /// lines are formatted on every core, in blocks of records, and joined in order.
    pub fn log(&self) -> (String, String) {
        // Programs are numbered by first appearance: a record names its program first when
        // the number is one past the highest before it.
        let mut next = 0;
        let first: Vec<bool> = (self.records.iter())
            .map(|(r, _)| {
                let first = r.program == next;
                next += u64::from(first);
                first
            })
            .collect();
        const BLOCK: usize = 1024;
        let blocks: Vec<(Vec<u8>, Vec<u8>)> = (self.records.par_chunks(BLOCK))
            .zip(first.par_chunks(BLOCK))
            .map(|(records, first)| {
                let mut log = LogWriter::new(Vec::new(), Vec::new());
                for ((r, at), &first) in records.iter().zip(first) {
                    // Writing to memory cannot fail.
                    let _ = log.write_line(r, *at, first);
                }
                (log.calibrations, log.programs)
            })
            .collect();
        let (mut calibrations, mut programs) = (Vec::new(), Vec::new());
        for (c, p) in blocks {
            calibrations.extend(c);
            programs.extend(p);
        }
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap_or_default();
        (text(calibrations), text(programs))
    }
}

/// Merges every output of a plan's tasks (in any order) into one search.
pub fn merge(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    mut outputs: Vec<ShardOutput>,
) -> Result<Merged, SearchError> {
    // Decoded on every core, a shard to a core (`run_local` has its tasks do it).
    let decoded: Vec<Decoded> = (outputs.iter_mut())
        .map(|o| std::mem::take(&mut o.records))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(decode)
        .collect();
    merge_decoded(scene, plan, precision, outputs, decoded)
}

/// A shard's records ready to merge: each with its program's [`fingerprint`] and its time.
pub type Decoded = Vec<(Record, u128, f64)>;

/// A shard's records, decoded for [`merge_decoded`] (their text moved, not copied).
pub fn decode(records: Vec<WireRecord>) -> Decoded {
    let one = |w: WireRecord| {
        let elapsed_s = w.elapsed_s;
        let r = w.into_record();
        let print = fingerprint(&r.src);
        (r, print, elapsed_s)
    };
    records.into_iter().map(one).collect()
}

/// [`merge`] of outputs whose records are taken out and [`decode`]d, `decoded[i]` those of
/// `outputs[i]`.
pub fn merge_decoded(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    outputs: Vec<ShardOutput>,
    decoded: Vec<Decoded>,
) -> Result<Merged, SearchError> {
    let spec = scene.search.as_ref().ok_or(SearchError::NotASearch)?;
    if outputs.len() != decoded.len() {
        return Err(SearchError::Setting(format!(
            "{} shard outputs but {} decoded record lists",
            outputs.len(),
            decoded.len()
        )));
    }
    // In (epoch, shard) order, a retried task's second output dropped.
    let mut parts: Vec<(ShardOutput, Decoded)> = outputs.into_iter().zip(decoded).collect();
    parts.sort_by_key(|(o, _)| (o.task.epoch, o.task.shard));
    parts.dedup_by_key(|(o, _)| (o.task.epoch, o.task.shard));
    let (parts, decoded): (Vec<ShardOutput>, Vec<Decoded>) = parts.into_iter().unzip();
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
    // The merge's serial part: numbering, tallies and the frontier, in order.
    let mut first_candidate: u64 = 0;
    let mut records = Vec::with_capacity(decoded.iter().map(Vec::len).sum());
    let mut first_success_s = None;
    let mut now = 0.0f64;
    for (o, decoded) in parts.iter().zip(decoded) {
        // A shard numbers its candidates from 0 as it admits them (a plain search's numbers):
        // a part's come after the earlier parts'.
        // Numbers near 2⁶⁴ come only from a forged output: refused, never wrapped.
        let too_many = || {
            SearchError::Setting(format!(
                "shard {} of epoch {}: candidate numbers overflow",
                o.task.shard, o.task.epoch
            ))
        };
        let count = match decoded.iter().map(|d| d.0.candidate).max() {
            None => 0,
            Some(c) => c.checked_add(1).ok_or_else(too_many)?,
        };
        let after = first_candidate.checked_add(count).ok_or_else(too_many)?;
        for (mut r, print, elapsed_s) in decoded {
            r.candidate += first_candidate;
            r.calibration = tally.calibrations;
            r.program = programs.id_of(print);
            now = now.max(start[o.task.epoch as usize] + elapsed_s);
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
        first_candidate = after;
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
        group_front: true,
    });
    let task_seconds = parts.iter().map(|o| (o.task.epoch, o.wall_s)).collect();
    Ok(Merged {
        report,
        records,
        task_seconds,
    })
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
