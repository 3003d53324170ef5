//! Merging a sharded search ([`crate::shards`]): the shards' outputs become one log and one
//! report, as if one search had made every calibration.
//!
//! Outputs are taken in (epoch, shard) order — a retried task's second output is dropped — and
//! their records renumbered in that order: calibrations 0, 1, 2, …, candidates in their
//! shard's own order after the earlier parts' (as a search numbers them: by admission), programs
//! by first appearance of their source (as [`crate::log`] numbers them).
//! The tally, the top skeletons, the successes and the timeline are rebuilt from the merged
//! records; proposer counts are summed by position. Times: an epoch starts when the slowest
//! shard of the one before ended, so a record's time is its epoch's start plus its seconds into
//! its own shard (the timeline keeps them non-decreasing). Everything but `timing` and the log's
//! `timing` is a function of the scene and the plan.

use crate::log::{LogWriter, Programs, fingerprint};
use crate::record::Record;
use crate::record::WireRecord;
use crate::report::{self, LoopTimes, SearchReport};
use crate::run::{MAX_WARNINGS, SearchError};
use crate::shards::spill::{self, Spilled};
use crate::shards::{MAX_PARTS, Plan, ShardOutput};
use crate::tally::{ProposerTally, Tally};
use crate::timeline::Timeline;
use ndvm_components::scene::{Precision, Scene};
use ndvm_systems::population::template::Template;
use rayon::prelude::*;
use std::io::Write;
use std::time::Instant;

/// A merged search: its report; its log went to the writer given to the merge.
#[derive(Debug)]
pub struct Merged {
    pub report: SearchReport,
    /// Each task's times, in (epoch, shard) order: to see how evenly the shards shared the work
    /// and what merging each part cost.
    pub tasks: Vec<TaskTimes>,
    /// The first write to the log that failed: the merge went on without the log.
    pub log_error: Option<std::io::Error>,
    /// Where the merge's own time went.
    pub times: MergeTimes,
}

/// The merge's seconds: the work that runs on every core when the merge may use them (decoding
/// records, formatting lines: counted here even when it ran on one thread) and the work that
/// runs on one (reading spilled records, numbering and tallying, writing). The serial part
/// bounds what more cores can gain (the scaling bench projects with it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MergeTimes {
    pub parallel_s: f64,
    pub serial_s: f64,
}

impl MergeTimes {
    /// Adds the seconds since `since` to the parallel or the serial part; returns now.
    fn lap(&mut self, since: Instant, parallel: bool) -> Instant {
        let now = Instant::now();
        let secs = (now - since).as_secs_f64();
        if parallel {
            self.parallel_s += secs;
        } else {
            self.serial_s += secs;
        }
        now
    }
}

/// A part's records, as the merge reads them: held in memory (the outputs a cluster sent) or
/// spilled to disk by a task run here ([`crate::shards::spill`]).
#[derive(Debug)]
pub enum Records {
    Held(std::vec::IntoIter<WireRecord>),
    Spilled(Spilled),
}

/// A record ready to merge: with its program's [`fingerprint`] and its seconds into its shard.
type Decoded = (Record, u128, f64);

impl Records {
    /// The next `n` records (fewer at the end, none when done): read, then decoded on every
    /// core.
    fn next(
        &mut self,
        n: usize,
        parallel: bool,
        times: &mut MergeTimes,
    ) -> Result<Vec<Decoded>, SearchError> {
        let began = Instant::now();
        match self {
            Records::Held(records) => {
                let chunk: Vec<WireRecord> = records.take(n).collect();
                let began = times.lap(began, false);
                let decoded = if parallel {
                    chunk.into_par_iter().map(decode).collect()
                } else {
                    chunk.into_iter().map(decode).collect()
                };
                times.lap(began, true);
                Ok(decoded)
            }
            Records::Spilled(spilled) => {
                let chunk = spilled
                    .read(n)
                    .map_err(|e| SearchError::Setting(e.to_string()))?;
                let began = times.lap(began, false);
                let one = |i| spill::decode(chunk.get(i));
                let decoded = if parallel {
                    (0..chunk.len()).into_par_iter().map(one).collect()
                } else {
                    (0..chunk.len()).map(one).collect::<std::io::Result<_>>()
                };
                let decoded = decoded.map_err(|e| SearchError::Setting(e.to_string()));
                times.lap(began, true);
                decoded
            }
        }
    }
}

/// A record sent whole, decoded (its text moved, not copied) and fingerprinted.
fn decode(w: WireRecord) -> Decoded {
    let elapsed_s = w.elapsed_s;
    let r = w.into_record();
    let print = fingerprint(&r.src);
    (r, print, elapsed_s)
}

/// How the merge goes: records decoded and numbered at once (its memory), lines formatted
/// together, and whether on every core.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    chunk: usize,
    block: usize,
    parallel: bool,
}

const SIZES: Sizes = Sizes {
    chunk: 4096,
    block: 256,
    parallel: true,
};

/// Merges every output of a plan's tasks (in any order) into one search, writing its log to
/// `log` (the bytes `ndvm search` writes).
pub fn merge<W: Write>(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    outputs: Vec<ShardOutput>,
    log: &mut LogWriter<W>,
) -> Result<Merged, SearchError> {
    let parts = (outputs.into_iter())
        .map(|mut o| {
            let records = std::mem::take(&mut o.records);
            (o, Records::Held(records.into_iter()))
        })
        .collect();
    merge_parts(scene, plan, precision, parts, log)
}

/// [`merge`] of outputs whose records are given apart, each part's beside its output (ignoring
/// the output's own `records`), in any order.
pub fn merge_parts<W: Write>(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    parts: Vec<(ShardOutput, Records)>,
    log: &mut LogWriter<W>,
) -> Result<Merged, SearchError> {
    merge_sized(scene, plan, precision, parts, log, SIZES)
}

fn merge_sized<W: Write>(
    scene: &Scene,
    plan: &Plan,
    precision: Option<Precision>,
    mut parts: Vec<(ShardOutput, Records)>,
    log: &mut LogWriter<W>,
    sizes: Sizes,
) -> Result<Merged, SearchError> {
    // In (epoch, shard) order, a retried task's second output dropped.
    parts.sort_by_key(|(o, _)| (o.task.epoch, o.task.shard));
    parts.dedup_by_key(|(o, _)| (o.task.epoch, o.task.shard));
    let mut merger = Merger::sized(scene, plan, precision, log, sizes)?;
    // A set that is not whole is refused before a line is written.
    let outputs: Vec<&ShardOutput> = parts.iter().map(|(o, _)| o).collect();
    for (i, o) in outputs.iter().enumerate() {
        check_next(plan, i.checked_sub(1).map(|j| outputs[j]), o)?;
    }
    check_end(plan, &outputs)?;
    for (o, records) in parts {
        merger.push(o, records)?;
    }
    merger.finish()
}

/// One task's share of a merged search: its epoch, its own wall seconds and its part's merge.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskTimes {
    pub epoch: u32,
    pub seconds: f64,
    pub merge: MergeTimes,
}

/// A merge fed its parts one at a time in (epoch, shard) order, as they finish: `run_local`
/// merges parts while the round's last ones still run. The log streams: a chunk of records at a
/// time is decoded, numbered, formatted on every core and written, so memory does not grow with
/// the log.
#[derive(Debug)]
pub struct Merger<'a, W: Write> {
    scene: &'a Scene,
    plan: &'a Plan,
    precision: Option<Precision>,
    sizes: Sizes,
    lines: Lines<'a, W>,
    /// Started by the first part (its front's penalty).
    numbering: Option<Numbering>,
    /// The parts merged, their records taken out.
    outputs: Vec<ShardOutput>,
    tasks: Vec<TaskTimes>,
    /// Per epoch: its slowest shard's seconds.
    slowest: Vec<f64>,
}

impl<'a, W: Write> Merger<'a, W> {
    /// A merge of `plan`'s parts writing its log to `log`.
    pub fn new(
        scene: &'a Scene,
        plan: &'a Plan,
        precision: Option<Precision>,
        log: &'a mut LogWriter<W>,
    ) -> Result<Self, SearchError> {
        Merger::sized(scene, plan, precision, log, SIZES)
    }

    fn sized(
        scene: &'a Scene,
        plan: &'a Plan,
        precision: Option<Precision>,
        log: &'a mut LogWriter<W>,
        sizes: Sizes,
    ) -> Result<Self, SearchError> {
        scene.search.as_ref().ok_or(SearchError::NotASearch)?;
        // A plan read from elsewhere (a cluster's JSON) is checked as `Plan::new` checks it.
        let counts = [plan.shards, plan.epochs as usize];
        if !counts.iter().all(|n| (1..=MAX_PARTS).contains(n)) {
            return Err(SearchError::Setting(format!(
                "a plan of {} shards and {} epochs: each must be between 1 and {MAX_PARTS}",
                plan.shards, plan.epochs
            )));
        }
        crate::shards::check_tasks(plan.shards, plan.epochs)?;
        Ok(Merger {
            scene,
            plan,
            precision,
            sizes,
            lines: Lines { log, error: None },
            numbering: None,
            outputs: Vec::new(),
            tasks: Vec::new(),
            slowest: vec![0.0; plan.epochs as usize],
        })
    }

    /// Whether the merge's decoding and formatting run on every core of the current rayon pool
    /// (the default), or on this thread alone (while other work has the cores).
    pub fn on_every_core(&mut self, yes: bool) {
        self.sizes.parallel = yes;
    }

    /// Merges the next part: `o`'s records, given apart. Parts come in (epoch, shard) order,
    /// each once; an epoch's parts after every part of the epochs before.
    pub fn push(&mut self, o: ShardOutput, mut records: Records) -> Result<(), SearchError> {
        let (plan, spec) = (self.plan, self.scene.search.as_ref());
        let spec = spec.ok_or(SearchError::NotASearch)?;
        check_next(plan, self.outputs.last(), &o)?;
        o.task.check_wire()?;
        let epoch = o.task.epoch as usize;
        // An epoch starts when the slowest shard of the one before has ended.
        let start: f64 = self.slowest[..epoch].iter().sum();
        self.slowest[epoch] = self.slowest[epoch].max(o.wall_s);
        let numbering = (self.numbering).get_or_insert_with(|| {
            Numbering::new(Tally::new(spec.keep, plan.by_r2, o.front_penalty))
        });
        let before = numbering.times;
        numbering.part(&o, start, &mut records, &mut self.lines, self.sizes)?;
        self.tasks.push(TaskTimes {
            epoch: o.task.epoch,
            seconds: o.wall_s,
            merge: MergeTimes {
                parallel_s: numbering.times.parallel_s - before.parallel_s,
                serial_s: numbering.times.serial_s - before.serial_s,
            },
        });
        self.outputs.push(o);
        Ok(())
    }

    /// The merged search: its report, its log flushed. An error unless every part was merged
    /// (or every part of the epochs before an interrupt or the end of the time budget).
    pub fn finish(self) -> Result<Merged, SearchError> {
        // Each part was checked as it came ([`check_next`]): what is left is the end.
        check_end(self.plan, &self.outputs.iter().collect::<Vec<_>>())?;
        let Merger {
            scene,
            plan,
            precision,
            lines,
            numbering,
            outputs: parts,
            tasks,
            slowest,
            ..
        } = self;
        let spec = scene.search.as_ref().ok_or(SearchError::NotASearch)?;
        let Numbering {
            mut times,
            tally,
            mut timeline,
            first_success_s,
            now,
            ..
        } = numbering.unwrap_or_else(|| Numbering::new(Tally::new(spec.keep, plan.by_r2, None)));
        let began = Instant::now();
        let log_error = lines.finish();
        let wall_s: f64 = slowest.iter().sum();
        timeline.close(tally.point(wall_s.max(now)));
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
            device: parts.first().map(|o| o.device.clone()).unwrap_or_default(),
            search_loop,
            timeline,
            truth: crate::front::truth(scene),
            group_front: true,
            holes: Template::of_scene(scene)
                .ok()
                .flatten()
                .map_or_else(Vec::new, |t| t.names()),
        });
        times.lap(began, false);
        Ok(Merged {
            report,
            tasks,
            log_error,
            times,
        })
    }
}

/// The part due after `last` (in (epoch, shard) order): (epoch, shard).
fn next_part(plan: &Plan, last: Option<&ShardOutput>) -> (u32, usize) {
    match last {
        None => (0, 0),
        Some(o) if o.task.shard + 1 < plan.shards => (o.task.epoch, o.task.shard + 1),
        Some(o) => (o.task.epoch + 1, 0),
    }
}

/// How a plan's parts stand, for an error: "a plan of S shards × E epochs … (n of N given)".
fn given(plan: &Plan, n: usize) -> String {
    format!(
        "a plan of {} shards × {} epochs is merged whole ({n} of {} parts given)",
        plan.shards,
        plan.epochs,
        plan.shards.saturating_mul(plan.epochs as usize)
    )
}

/// An error unless `o` is part of `plan` and the part due after `last` (parts come in
/// (epoch, shard) order, each once, an epoch's after every part of the epochs before).
fn check_next(plan: &Plan, last: Option<&ShardOutput>, o: &ShardOutput) -> Result<(), SearchError> {
    let t = &o.task;
    if t.shards != plan.shards || t.shard >= plan.shards || t.epoch >= plan.epochs {
        return Err(SearchError::Setting(format!(
            "output of shard {} of {} in epoch {} is not part of this plan ({} shards, {} epochs)",
            t.shard, t.shards, t.epoch, plan.shards, plan.epochs
        )));
    }
    let key = |o: &ShardOutput| (o.task.epoch, o.task.shard);
    if last.is_some_and(|last| key(last) >= key(o)) {
        return Err(SearchError::Setting(format!(
            "shard {} of epoch {} merged out of order",
            t.shard, t.epoch
        )));
    }
    let (epoch, shard) = next_part(plan, last);
    if key(o) != (epoch, shard) {
        return Err(SearchError::Setting(format!(
            "shard {shard} of epoch {epoch} is missing (given shard {} of epoch {} after it)",
            t.shard, t.epoch
        )));
    }
    Ok(())
}

/// An error unless `parts` (each checked by [`check_next`]) end a plan: its last part, or the
/// last part of an epoch before a stop (an interrupt, or the time budget spent before the next
/// epoch could start). What is missing is named.
fn check_end(plan: &Plan, parts: &[&ShardOutput]) -> Result<(), SearchError> {
    let missing = |what: String| {
        let whole = given(plan, parts.len());
        Err(SearchError::Setting(format!("{what} missing: {whole}")))
    };
    let Some(&last) = parts.last() else {
        return missing("every shard's output is".into());
    };
    let (epoch, shard) = next_part(plan, Some(last));
    if shard != 0 {
        let end = plan.shards - 1;
        return missing(if shard == end {
            format!("shard {shard} of epoch {epoch} is")
        } else {
            format!("shards {shard} to {end} of epoch {epoch} are")
        });
    }
    let stopped =
        (parts.iter()).any(|o| matches!(o.stopped_by.as_str(), "interrupted" | "seconds"));
    if epoch < plan.epochs && !stopped {
        let end = plan.epochs - 1;
        return missing(if epoch == end {
            format!("epoch {epoch} is")
        } else {
            format!("epochs {epoch} to {end} are")
        });
    }
    Ok(())
}

/// The merge's serial part: numbering, the tally and the timeline, record by record in order.
#[derive(Debug)]
struct Numbering {
    times: MergeTimes,
    tally: Tally,
    timeline: Timeline,
    programs: Programs,
    /// The first candidate number of the part being merged (after the earlier parts').
    first_candidate: u64,
    first_success_s: Option<f64>,
    /// The latest record's time.
    now: f64,
}

impl Numbering {
    fn new(tally: Tally) -> Numbering {
        Numbering {
            times: MergeTimes::default(),
            tally,
            timeline: Timeline::default(),
            programs: Programs::default(),
            first_candidate: 0,
            first_success_s: None,
            now: 0.0,
        }
    }

    /// Merges one part (`o`'s records, its epoch starting at `start` seconds), writing its lines.
    fn part<W: Write>(
        &mut self,
        o: &ShardOutput,
        start: f64,
        records: &mut Records,
        lines: &mut Lines<'_, W>,
        sizes: Sizes,
    ) -> Result<(), SearchError> {
        // A shard numbers its candidates from 0 as it admits them (a plain search's numbers):
        // a part's come after the earlier parts'.
        // Numbers near 2⁶⁴ come only from a forged output: refused, never wrapped.
        let too_many = || {
            SearchError::Setting(format!(
                "shard {} of epoch {}: candidate numbers overflow",
                o.task.shard, o.task.epoch
            ))
        };
        let mut count: u64 = 0;
        loop {
            let chunk = records.next(sizes.chunk, sizes.parallel, &mut self.times)?;
            if chunk.is_empty() {
                break;
            }
            let began = Instant::now();
            let mut merged = Vec::with_capacity(chunk.len());
            for (mut r, print, elapsed_s) in chunk {
                count = count.max(r.candidate.checked_add(1).ok_or_else(too_many)?);
                r.candidate =
                    (r.candidate.checked_add(self.first_candidate)).ok_or_else(too_many)?;
                r.calibration = self.tally.calibrations;
                // Programs are numbered by first appearance: a record names its program first
                // when its number is new.
                let known = self.programs.len();
                r.program = self.programs.id_of(print);
                let first = r.program == known;
                self.now = self.now.max(start + elapsed_s);
                let before = self.tally.successful_skeletons.len();
                let improved = self.tally.add(&mut r);
                let new_success = self.tally.successful_skeletons.len() > before;
                if r.success && self.first_success_s.is_none() {
                    self.first_success_s = Some(self.now);
                }
                if improved || new_success {
                    self.timeline.offer(self.tally.point(self.now), new_success);
                }
                merged.push((r, self.now, first));
            }
            self.times.lap(began, false);
            lines.write(merged, sizes, &mut self.times);
        }
        self.first_candidate = (self.first_candidate.checked_add(count)).ok_or_else(too_many)?;
        Ok(())
    }
}

/// The log's lines, formatted on every core in blocks and written in order; the first write
/// that fails stops the writing.
#[derive(Debug)]
struct Lines<'a, W: Write> {
    log: &'a mut LogWriter<W>,
    error: Option<std::io::Error>,
}

impl<W: Write> Lines<'_, W> {
    /// Writes merged records (each with its time and whether it names its program first);
    /// they are dropped on the cores that format them.
    fn write(&mut self, records: Vec<(Record, f64, bool)>, sizes: Sizes, times: &mut MergeTimes) {
        if self.error.is_some() {
            return;
        }
        let began = Instant::now();
        let format = |records: Vec<(Record, f64, bool)>| {
            let mut log = LogWriter::new(Vec::new(), Vec::new());
            for (r, at, first) in &records {
                // Writing to memory cannot fail.
                let _ = log.write_line(r, *at, *first);
            }
            log.into_lines()
        };
        let blocks: Vec<(Vec<u8>, Vec<u8>)> = if sizes.parallel {
            let blocks = records.into_par_iter().chunks(sizes.block.max(1));
            blocks.map(format).collect()
        } else {
            vec![format(records)]
        };
        let began = times.lap(began, true);
        for (calibrations, programs) in blocks {
            if let Err(e) = self.log.write_lines(&calibrations, &programs) {
                self.error = Some(e);
                break;
            }
        }
        times.lap(began, false);
    }

    /// The first write error, once everything is flushed.
    fn finish(self) -> Option<std::io::Error> {
        self.error.or_else(|| self.log.flush().err())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SearchOptions;
    use crate::shards::{ShardTask, run_task};

    /// Every task of a two-epoch plan of three shards (Evolve migrating between epochs).
    fn outputs(scene: &Scene, plan: &Plan) -> Vec<ShardOutput> {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let options = SearchOptions {
            threads: Some(1),
            ..SearchOptions::default()
        };
        let mut outputs = Vec::new();
        for epoch in 0..plan.epochs {
            for task in plan.tasks(epoch, &outputs) {
                outputs.push(run_task(scene, base, &options, &task).expect("task"));
            }
        }
        outputs
    }

    #[test]
    fn the_log_and_report_are_the_same_whatever_the_chunks_and_blocks() {
        let scene = Scene::from_ron(
            r#"Scene(
                candidates: [
                    Inline(name: "line", src: "(+ (* a x) b)"),
                    Inline(name: "decay", src: "(* a (exp (* b x)))"),
                ],
                data: Some(Synthetic(
                    program: "(* 2 (exp (* -0.5 x)))",
                    inputs: {"x": Linspace(0.1, 4.0, 32)},
                    noise_sd: 0.01, seed: 1, split: Split(train: 0.7, seed: 3),
                )),
                loss: Mse,
                search: Some(Search(
                    proposers: [Evolve()],
                    calibration: Calibration(steps: 10, optimizer: Adam(lr: 0.05), draws: 2),
                    window: 8,
                )),
            )"#,
        )
        .expect("scene");
        let plan = Plan::new(&scene, 3, Some(2), Some(700), None, None).expect("plan");
        // A forged plan (from a cluster's JSON) is refused, not allocated for.
        for (shards, epochs) in [(0, 2), (3, 0), (3, u32::MAX), (usize::MAX, 2)] {
            let forged = Plan {
                shards,
                epochs,
                ..plan.clone()
            };
            let mut log = LogWriter::new(Vec::new(), Vec::new());
            let refused = Merger::new(&scene, &forged, None, &mut log).map(|_| ());
            assert!(
                matches!(refused, Err(SearchError::Setting(_))),
                "{shards} {epochs}"
            );
        }
        // A task or an output of another build (one before versions sends no `wire`) is
        // refused, not run or merged without what that build does not send.
        let mut older = serde_json::to_value(&plan.tasks(0, &[])[0]).expect("JSON");
        older.as_object_mut().expect("an object").remove("wire");
        let older: ShardTask = serde_json::from_value(older).expect("an older task parses");
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let refused = run_task(&scene, base, &SearchOptions::default(), &older);
        let from_another_build = |e: &SearchError| e.to_string().contains("another ndvm build");
        assert!(
            refused.as_ref().is_err_and(from_another_build),
            "{refused:?}"
        );
        let outputs = outputs(&scene, &plan);
        let mut mixed = outputs.clone();
        mixed[1].task.wire = 0;
        let mut log = LogWriter::new(Vec::new(), Vec::new());
        let refused = merge(&scene, &plan, None, mixed, &mut log).map(|_| ());
        assert!(
            refused.as_ref().is_err_and(from_another_build),
            "{refused:?}"
        );
        // Each part's records held, or spilled to disk as `run_local` spills them.
        let run_with = |sizes: Sizes, spilled: bool| {
            let mut log = LogWriter::new(Vec::new(), Vec::new());
            let parts = (outputs.iter().cloned()).map(|mut o| {
                let records = std::mem::take(&mut o.records);
                if !spilled {
                    return (o, Records::Held(records.into_iter()));
                }
                let mut spill = crate::shards::spill::Spill::new().expect("spill");
                for w in records {
                    let at = w.elapsed_s;
                    spill.push(&w.into_record(), at);
                }
                (o, Records::Spilled(spill.finish().expect("spilled")))
            });
            let merged =
                merge_sized(&scene, &plan, None, parts.collect(), &mut log, sizes).expect("merged");
            (log.calibrations, log.programs, merged.report.to_json())
        };
        let run = |sizes: Sizes| run_with(sizes, false);
        // One chunk, one block: the lines written one after the other.
        let whole = run(Sizes {
            chunk: usize::MAX,
            block: usize::MAX,
            parallel: true,
        });
        assert_eq!(whole.0.iter().filter(|&&b| b == b'\n').count(), 700);
        // Each part's candidates come after the earlier parts', its own numbers kept (every
        // size below is compared with this one: a numbering that went wrong the same way at
        // every size would pass that comparison).
        let mut expected = Vec::new();
        for o in &outputs {
            let first = expected.iter().copied().max().map_or(0, |m: u64| m + 1);
            assert!(!o.records.is_empty());
            expected.extend(o.records.iter().map(|w| first + w.candidate));
        }
        let candidates: Vec<u64> = (whole.0.split(|&b| b == b'\n'))
            .filter(|l| !l.is_empty())
            .map(|l| {
                let line: serde_json::Value = serde_json::from_slice(l).expect("line");
                line["candidate"].as_u64().expect("candidate")
            })
            .collect();
        assert_eq!(candidates, expected);
        assert!(whole.1.iter().filter(|&&b| b == b'\n').count() > 10);
        let sizes = [
            (1, 1, true),
            (7, 3, true),
            (100, 16, false),
            (256, 1000, true),
        ];
        for (chunk, block, parallel) in sizes {
            let sizes = Sizes {
                chunk,
                block,
                parallel,
            };
            assert!(run(sizes) == whole, "{sizes:?}");
            assert!(run_with(sizes, true) == whole, "spilled, {sizes:?}");
        }
    }
}
