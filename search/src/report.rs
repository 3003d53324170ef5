//! A search's results: the summary, the best candidates per skeleton, the successes, the
//! proposers' counts — and, apart, the wall-clock figures and the timeline.
//!
//! Everything [`SearchReport`] serializes is a function of the scene when the search runs under
//! a calibration budget (byte-identical at every thread count); [`SearchReport::to_json`]
//! appends the `"timing"` object, the only part that varies between runs.

use crate::front::FrontReport;
use crate::record::{Record, shortened};
use crate::tally::{ProposerTally, Tally};
use crate::timeline::Timeline;
use ndvm_components::optimizer::Optimizer;
use ndvm_components::scene::Precision;
use ndvm_components::scene::search::{Draw, Search as Spec, Success};
use ndvm_systems::device::DeviceUsed;
use ndvm_systems::profile::ProfileReport;
use serde::Serialize;

/// Everything the report is made from.
pub(crate) struct Parts<'a> {
    pub spec: &'a Spec,
    pub tally: &'a Tally,
    pub proposers: Vec<ProposerTally>,
    pub warnings: Vec<String>,
    pub warning_count: u64,
    pub stopped_by: &'static str,
    pub unfinished: u64,
    pub seconds: Option<f64>,
    pub max_calibrations: Option<u64>,
    pub precision: Precision,
    pub wall_s: f64,
    pub first_success_s: Option<f64>,
    pub threads: usize,
    /// The fit's profile (a merged sharded search has none).
    pub profile: Option<ProfileReport>,
    pub device: DeviceUsed,
    pub search_loop: LoopTimes,
    pub timeline: Timeline,
    /// The skeleton of the law behind synthetic data.
    pub truth: Option<crate::front::Truth>,
    /// Group the front's entries into laws by equality saturation ([`crate::front::equivalence`]). A shard's
    /// task skips it (milliseconds each): the merge groups the merged front.
    pub group_front: bool,
    /// The names of the template's holes (empty without a template).
    pub holes: Vec<String>,
}

/// A finished search.
/// The files a search writes beside its log, in the order it writes them: the results first,
/// the views of them after.
pub const RESULT_FILES: [&str; 4] = ["search.json", "frontier.csv", "frontier.svg", "front.svg"];

#[derive(Clone, Debug, Serialize)]
pub struct SearchReport {
    pub summary: Summary,
    /// The Pareto front of training loss against complexity, and the entry it picks: the
    /// search's answer ([`crate::front`]).
    pub front: FrontReport,
    /// The best calibration of all.
    pub best: Option<Record>,
    pub first_success: Option<Record>,
    /// The smallest successful program (in atoms; ties go to the better fit): often the law
    /// itself when the best-scoring programs carry spare terms.
    pub simplest_success: Option<Record>,
    /// The best calibration of each of the best skeletons, best first.
    pub top: Vec<Record>,
    /// The best calibration of each of the best successful skeletons, best first.
    pub successes: Vec<Record>,
    pub proposers: Vec<ProposerTally>,
    /// The first warnings (all are counted in the summary).
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub timing: Timing,
    #[serde(skip)]
    pub timeline: Timeline,
}

/// The counts.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub calibrations: u64,
    pub failed: u64,
    pub successes: u64,
    pub distinct_successful_skeletons: u64,
    /// The log position of the first success.
    pub first_success: Option<u64>,
    pub best_held_out_r2: Option<f64>,
    pub best_train_loss: Option<f64>,
    /// `calibrations` (the budget), `seconds` (the budget), `interrupted` or `proposers`
    /// (every proposer exhausted or failed).
    pub stopped_by: &'static str,
    /// Calibrations still running when a time budget or an interrupt stopped the search (not
    /// counted above).
    pub unfinished: u64,
    pub warnings: u64,
    pub protocol: ProtocolSummary,
}

/// How the calibrations were run.
#[derive(Clone, Debug, Serialize)]
pub struct ProtocolSummary {
    pub steps: u32,
    pub optimizer: Optimizer,
    pub draws: u32,
    pub draw: Draw,
    pub success: Success,
    pub precision: &'static str,
    pub window: usize,
    pub seed: u64,
    pub budget_seconds: Option<f64>,
    pub budget_calibrations: Option<u64>,
    /// Where the calibrations replayed.
    pub device: DeviceUsed,
}

/// Wall-clock figures (they vary between runs).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timing {
    pub wall_s: f64,
    pub calibrations_per_second: f64,
    pub first_success_s: Option<f64>,
    pub threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileReport>,
    /// Where the search loop's wall time went (`step` is the fit's parallel work; the rest runs
    /// on one thread between steps).
    pub search_loop: LoopTimes,
}

/// The search loop's phases, in seconds summed over its steps: asking the proposers for
/// candidates (`refill`), one fit step (`step`), taking the finished candidates out with their
/// reports (`retire`), turning them into records — the held-out R² of every draw (`held_out`,
/// also inside `record`), numbering, tallies, the caller's log and the proposers' `observe` —
/// and the timeline event (`events`). A step's candidates are recorded, and the slots they
/// freed refilled, beside the next step (`beside_step`: the part of `record` and `refill` that
/// ran there; after a cohort the refill comes first, between the steps), so `step` is that
/// step's wall time. Of `record` and `refill`, `parallel` ran on every core (building the
/// records, checking and parsing the proposals; the held-out R² of draws the fit did not score
/// in their own tasks, `held_out`, zero when it scored them all). The rest is serial: its share
/// bounds the speedup any number of cores can give (docs/performance.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LoopTimes {
    pub refill_s: f64,
    pub step_s: f64,
    pub retire_s: f64,
    pub record_s: f64,
    pub held_out_s: f64,
    pub events_s: f64,
    pub beside_step_s: f64,
    #[serde(default)]
    pub parallel_s: f64,
}

impl std::ops::AddAssign for LoopTimes {
    fn add_assign(&mut self, o: LoopTimes) {
        self.refill_s += o.refill_s;
        self.step_s += o.step_s;
        self.retire_s += o.retire_s;
        self.record_s += o.record_s;
        self.held_out_s += o.held_out_s;
        self.events_s += o.events_s;
        self.beside_step_s += o.beside_step_s;
        self.parallel_s += o.parallel_s;
    }
}

impl LoopTimes {
    /// The serial seconds: everything but the fit step and the work beside it (`held_out` is
    /// part of `record`).
    pub fn serial_s(&self) -> f64 {
        self.refill_s + self.retire_s + self.record_s + self.events_s - self.beside_step_s
    }
}

/// A stopwatch for the loop's phases: [`Lap::next`] gives the seconds since the last lap.
pub(super) struct Lap(std::time::Instant);

impl Lap {
    pub(super) fn start() -> Lap {
        Lap(std::time::Instant::now())
    }

    pub(super) fn next(&mut self) -> f64 {
        let now = std::time::Instant::now();
        let s = (now - self.0).as_secs_f64();
        self.0 = now;
        s
    }
}

pub(crate) fn build(p: Parts<'_>) -> SearchReport {
    let t = p.tally;
    let best = t.best.clone();
    let summary = Summary {
        calibrations: t.calibrations,
        failed: t.failed,
        successes: t.successes,
        distinct_successful_skeletons: t.successful_skeletons.len() as u64,
        first_success: t.first_success.as_ref().map(|r| r.calibration),
        best_held_out_r2: best.as_ref().and_then(|r| r.held_out_r2),
        best_train_loss: best.as_ref().map(|r| r.train_loss),
        stopped_by: p.stopped_by,
        unfinished: p.unfinished,
        warnings: p.warning_count,
        protocol: ProtocolSummary {
            steps: p.spec.calibration.steps,
            optimizer: p.spec.calibration.optimizer,
            draws: p.spec.calibration.draws,
            draw: p.spec.calibration.draw,
            success: p.spec.success,
            precision: p.precision.name(),
            window: p.spec.window,
            seed: p.spec.seed,
            budget_seconds: p.seconds,
            budget_calibrations: p.max_calibrations,
            device: p.device,
        },
    };
    SearchReport {
        summary,
        front: FrontReport::build(&t.front, p.truth.as_ref(), p.group_front, &p.holes),
        best,
        first_success: t.first_success.clone(),
        simplest_success: t.simplest_success.clone(),
        top: t.top.ranked(),
        successes: t.top_successes.ranked(),
        proposers: p.proposers,
        warnings: p.warnings,
        timing: Timing {
            wall_s: p.wall_s,
            calibrations_per_second: t.calibrations as f64 / p.wall_s.max(1e-9),
            first_success_s: p.first_success_s,
            threads: p.threads,
            profile: p.profile,
            search_loop: p.search_loop,
        },
        timeline: p.timeline,
    }
}

/// Characters of a program the text tables show (the log and the JSON keep it whole).
const SHOWN_PROGRAM: usize = 160;

/// `a=1.000000 b=-0.300000`: a record's fitted constants.
fn constants(r: &Record) -> String {
    let v: Vec<String> = r
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v:.6}"))
        .collect();
    v.join(" ")
}

impl SearchReport {
    /// The results JSON: the report, then `"timing"`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Results<'a> {
            #[serde(flatten)]
            report: &'a SearchReport,
            timing: &'a Timing,
        }
        serde_json::to_string_pretty(&Results {
            report: self,
            timing: &self.timing,
        })
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The [`RESULT_FILES`] beside the log, as `ndvm search --out` writes them (the plots
    /// titled by `scene`, the scene file's name), each made when it is reached: the results
    /// are written before a plot is drawn.
    pub fn files<'a>(
        &'a self,
        scene: &'a str,
    ) -> impl Iterator<Item = (&'static str, String)> + 'a {
        (RESULT_FILES.iter()).map(move |&name| (name, self.file(name, scene).unwrap_or_default()))
    }

    /// One of the [`RESULT_FILES`] (`None` for another name); `scene` names the plots.
    pub fn file(&self, name: &str, scene: &str) -> Option<String> {
        let best = if self.by_r2() {
            "best_held_out_R2"
        } else {
            "best_train_loss"
        };
        let threshold = match self.summary.protocol.success {
            Success::HeldOutR2(t) | Success::TrainLoss(t) => t,
        };
        Some(match name {
            "search.json" => self.to_json(),
            "frontier.csv" => self.timeline.csv(best),
            "frontier.svg" => {
                let title = format!("{scene} — {} calibrations", self.summary.calibrations);
                self.timeline.svg(&title, best, Some(threshold))
            }
            "front.svg" => self.front.svg(&format!("{scene} — Pareto front")),
            _ => return None,
        })
    }

    /// Whether the search ranks by held-out R² (else by training loss).
    pub fn by_r2(&self) -> bool {
        matches!(self.summary.protocol.success, Success::HeldOutR2(_))
    }

    /// The printed summary: counts, rates, the first success, the best, why it stopped.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let t = &self.timing;
        let mut out = format!(
            "{} calibrations in {:.2} s ({:.0} per second, {} thread{}, {})\n",
            s.calibrations,
            t.wall_s,
            t.calibrations_per_second,
            t.threads,
            if t.threads == 1 { "" } else { "s" },
            s.protocol.device.describe()
        );
        let criterion = match s.protocol.success {
            Success::HeldOutR2(x) => format!("held-out R² > {x}"),
            Success::TrainLoss(x) => format!("training loss < {x}"),
        };
        match (&self.first_success, t.first_success_s) {
            (Some(r), Some(at)) => {
                out += &format!(
                    "first success ({criterion}) after {at:.3} s, calibration {}: {}\n",
                    r.calibration, r.src
                );
            }
            _ => out += &format!("no success ({criterion})\n"),
        }
        if let Some(c) = self.front.chosen() {
            let mut r2 = match c.record.held_out_r2 {
                Some(r2) => format!(", held-out R² {r2:.6}"),
                None => String::new(),
            };
            if let Some(whole) = c.record.reconstruction_r2 {
                r2 += &format!(", reconstruction R² {whole:.6}");
            }
            let among = if self.front.criterion == crate::front::CRITERION_TRAJECTORIES {
                ", reconstruction within 0.01 of the best"
            } else {
                ""
            };
            out += &format!(
                "chosen from the Pareto front (score, within 1.5× the lowest loss{among}): {}  \
                 (complexity {}, training loss {:.6e}{r2}{})\n",
                c.text(),
                c.complexity,
                c.record.train_loss,
                if c.truth { ", the generating law" } else { "" },
            );
        }
        match self.front.entries.iter().find(|e| e.truth) {
            Some(e) if !e.chosen => {
                out += &format!(
                    "the generating law is on the front at complexity {} (training loss {:.6e})\n",
                    e.complexity, e.record.train_loss
                )
            }
            None if self.front.truth_found == Some(false) => {
                out += "the generating law is not on the front\n"
            }
            _ => {}
        }
        if let Some(b) = &self.best {
            let figure = match b.held_out_r2 {
                Some(r2) if self.by_r2() => format!("best held-out R² {r2:.6}"),
                _ => format!("best training loss {:.6e}", b.train_loss),
            };
            out += &format!("{figure}: {}  {}\n", b.src, constants(b));
        }
        if let Some(r) = &self.simplest_success {
            let figure = match r.held_out_r2 {
                Some(r2) if self.by_r2() => format!("R² {r2:.6}"),
                _ => format!("training loss {:.6e}", r.train_loss),
            };
            out += &format!(
                "simplest success ({} atoms, {figure}): {}  {}\n",
                crate::record::size(&r.skeleton),
                r.src,
                constants(r)
            );
        }
        out += &format!(
            "{} successes, {} distinct successful skeletons; {} failed calibrations\n",
            s.successes, s.distinct_successful_skeletons, s.failed
        );
        let why = match s.stopped_by {
            "seconds" => format!(
                "the time budget ({} s)",
                s.protocol.budget_seconds.unwrap_or(0.0)
            ),
            "calibrations" => format!(
                "the calibration budget ({})",
                s.protocol.budget_calibrations.unwrap_or(0)
            ),
            "interrupted" => "an interrupt".to_string(),
            _ => "every proposer finished".to_string(),
        };
        out += &format!("stopped by {why}");
        if s.unfinished > 0 {
            out += &format!(" ({} calibrations unfinished)", s.unfinished);
        }
        out.push('\n');
        for p in &self.proposers {
            if let Some(e) = &p.error {
                out += &format!("proposer `{}` failed: {}\n", p.name, e);
            }
        }
        out
    }

    /// The best skeletons as a table: rank, held-out R², training loss, success, program.
    pub fn table(&self, limit: usize) -> String {
        let mut out = format!(
            "{:>4}  {:>9}  {:>12}  {:>7}  program\n",
            "rank", "R² held", "train loss", "success"
        );
        for (i, r) in self.top.iter().take(limit).enumerate() {
            let r2 = r
                .held_out_r2
                .map_or_else(|| "-".to_string(), |x| format!("{x:.4}"));
            out += &format!(
                "{:>4}  {:>9}  {:>12.6e}  {:>7}  {}\n",
                i + 1,
                r2,
                r.train_loss,
                if r.success { "yes" } else { "" },
                shortened(&r.src, SHOWN_PROGRAM)
            );
        }
        out
    }
}
