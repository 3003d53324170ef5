//! The loop: admit proposals into one fit, step it, retire finished candidates as records.
//!
//! [`Search`] keeps up to `window` candidates in one [`Fit`] (the same stage systems as
//! `ndvm fit`), asks the proposers for more whenever slots free up ([`admit`]), and after every
//! fit step takes the finished candidates out ([`Fit::retire`], [`retire`]), turns each of their
//! draws into a [`Record`] (one *calibration*) with its held-out score ([`heldout`]), hands the
//! records to the caller (the log), to the tally and the progress curve, and shows them to every
//! proposer. It stops at the budget (seconds or calibrations), on an interrupt, or when every
//! proposer is exhausted.

mod admit;
pub mod budget;
pub mod error;
pub mod heldout;
mod retire;
pub(crate) mod seed;
mod setup;

pub use budget::{Budget, DEFAULT_SECONDS};
pub use error::SearchError;

use crate::proposers::{Notes, Proposal, Proposer, ProposerError};
use crate::record::Record;
use crate::report::SearchReport;

use crate::tally::{ProposerTally, Tally};
use crate::timeline::{Point, Timeline};
use ndvm_components::scene::search::{Search as Spec, Success};
use ndvm_components::scene::{Parameters, Precision, Scene};
use ndvm_systems::fit::{Fit, FitOptions};
use ndvm_systems::plugin::Plugins;
use ndvm_systems::population::template::Template;
use ndvm_systems::population::{self, Protocol};
use ndvm_systems::resources::FitSettings;
use ndvm_systems::settings::{self, Job, Threads};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest candidate program accepted from a proposer, in bytes.
pub const MAX_SOURCE_BYTES: usize = 64 << 10;
/// Warnings kept in the results (all are passed to the caller).
pub(crate) const MAX_WARNINGS: usize = 100;

/// How to run a search (what the CLI flags say; they override the scene).
#[derive(Clone, Debug, Default)]
pub struct SearchOptions {
    pub threads: Option<usize>,
    /// Budget overrides: a wall-clock limit and a calibration count (giving either replaces the
    /// scene's budget).
    pub seconds: Option<f64>,
    pub calibrations: Option<u64>,
    /// Set it (Ctrl-C) to stop; what was found stands.
    pub interrupted: Option<Arc<AtomicBool>>,
    /// Custom primitives, schedule hooks and proposers from plugins (a scene names a plugin's
    /// proposer as `Plugin(name: …)`).
    pub plugins: Plugins,
    /// Default: the scene's `precision`, else f32 (the reference protocol's).
    pub precision: Option<Precision>,
    pub walk_every_step: bool,
    /// Steps each calibration takes per parallel pass (default: [`FitSettings`]'s); the window
    /// is refilled between passes, so results depend on it (never on the thread count).
    pub steps_per_pass: Option<u32>,
    /// Where calibrations replay (default: the scene's `device`, else `Auto`, which keeps a
    /// search's narrow candidates on the CPU).
    pub device: Option<ndvm_components::scene::Device>,
    /// Run as one shard of a sharded search ([`crate::shards::run_task`] sets it).
    pub shard: Option<crate::shards::task::ShardTask>,
    /// Keep every pass's task times ([`ndvm_systems::trace`], [`Search::trace`]).
    pub trace_passes: bool,
}

/// What a search tells its caller while it runs.
#[derive(Debug)]
pub enum Event<'a> {
    /// A calibration finished (in log order), at this many seconds.
    Calibrated(&'a Record, f64),
    /// After every fit step.
    Progress(&'a Progress),
    /// A skipped input line, a garbage answer, a proposer that failed (the search goes on).
    Warning(&'a str),
}

/// Where a search stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub elapsed_s: f64,
    pub calibrations: u64,
    pub successes: u64,
    pub distinct_successes: u64,
    /// Best held-out R² (or lowest training loss) so far.
    pub best: Option<f64>,
    /// The budget, for a progress bar.
    pub seconds: Option<f64>,
    pub max_calibrations: Option<u64>,
}

/// A proposer and its counts.
struct Slot {
    proposer: Box<dyn Proposer>,
    tally: ProposerTally,
    /// It has nothing more to give (it still sees results).
    done: bool,
    /// It failed: it is out of the search.
    failed: bool,
}

/// A candidate being calibrated.
struct Inflight {
    proposer: usize,
    proposal: Proposal,
    skeleton: String,
    /// Its draws (the last candidate under a calibration budget may get fewer).
    draws: u64,
    /// With a template: the program its filling makes and every parameter it calibrates.
    filled: Option<(String, Vec<String>)>,
}

impl Inflight {
    /// The program calibrated and its parameters.
    fn program(&self) -> (&str, &[String]) {
        match &self.filled {
            Some((src, names)) => (src, names),
            None => (&self.proposal.src, &self.proposal.params),
        }
    }
}

/// A running search.
pub struct Search {
    spec: Spec,
    protocol: Protocol,
    context: population::Context,
    /// The held-out points' evaluator, shared with the fit's scorer.
    held: Arc<heldout::HeldOut>,
    /// The fitted trajectories integrated whole, for a search over trajectories calibrated in
    /// windows: the reconstruction R² of every calibration that joins the front.
    whole: Option<heldout::HeldOut>,
    /// The model with holes that every proposal fills, and the scene parameters it mentions
    /// (calibrated in every candidate beside the filling's own).
    template: Option<Arc<Template>>,
    template_params: Vec<String>,
    parameters: Parameters,
    /// The fit the candidates are calibrated in (taken out while the loop runs, so that it can
    /// step while the rest of the search records the last step's calibrations).
    fit: Option<Fit>,
    slots: Vec<Slot>,
    turn: usize,
    queue: VecDeque<(usize, Proposal)>,
    inflight: HashMap<u64, Inflight>,
    next_candidate: u64,
    admitted: u64,
    tally: Tally,
    timeline: Timeline,
    /// The skeleton of the law behind synthetic data, marked on the front.
    truth: Option<crate::front::Truth>,
    /// A shard's report leaves its front ungrouped: only the merge's front is read.
    group_front: bool,
    /// Program numbers of the log ([`crate::log::Programs`]).
    programs: crate::log::Programs,
    warnings: Vec<String>,
    warning_count: u64,
    /// Warnings from before the run (reading streams), passed on when it starts.
    pending_notes: Vec<String>,
    started: Instant,
    first_success_s: Option<f64>,
    seconds: Option<f64>,
    max_calibrations: Option<u64>,
    interrupted: Arc<AtomicBool>,
    threads: usize,
    precision: Precision,
    /// Where the loop's time went ([`crate::report::LoopTimes`]).
    loop_times: crate::report::LoopTimes,
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("proposers", &self.slots.len())
            .field("calibrations", &self.tally.calibrations)
            .finish_non_exhaustive()
    }
}

impl Search {
    /// Loads the scene's data, starts its proposers and builds the fit (paths relative to
    /// `base`, the scene's folder).
    pub fn new(scene: &Scene, base: &Path, options: &SearchOptions) -> Result<Search, SearchError> {
        let started = Instant::now();
        let mut spec = scene.search.clone().ok_or(SearchError::NotASearch)?;
        // A shard draws its own starting values and seeds its proposers apart.
        if let Some(task) = &options.shard {
            spec.seed = task.seed(spec.seed);
        }
        let mut context = population::Context::load(scene, base)?;
        let dropped = scene
            .data
            .as_ref()
            .zip(context.data.as_deref())
            .and_then(|(spec, d)| population::dropped_warning(d, spec));
        // A trajectory's data points are the engine's own (one interval each): a candidate
        // reads the states through its template's holes.
        let inputs: Vec<String> = match (&context.data, &context.trajectories) {
            (Some(d), None) => d.inputs.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let precision = settings::precision(options.precision, scene, Job::Search);
        // Candidates are fitted to the training points; the held-out ones are evaluated once.
        let (train, mut held) = heldout::split(
            context.data.as_ref(),
            context.shared.clone(),
            options.plugins.primitives.clone(),
            precision,
        );
        context.data = train;
        if let (Some(h), Some(t)) = (&context.held_trajectories, &context.trajectories) {
            held.hold_trajectories(h.clone(), t);
        }
        let whole = (context.trajectories.as_deref())
            .filter(|t| t.window.is_some())
            .map(|t| {
                heldout::HeldOut::reconstruction(
                    t,
                    context.shared.clone(),
                    options.plugins.primitives.clone(),
                    precision,
                )
            });
        let template = Template::of_scene(scene)
            .map_err(SearchError::Setting)?
            .map(Arc::new);
        // The template's own parameters: the scene's that it mentions, and a trajectory
        // model's starting values (`hidden` states, `fit_start`).
        let parameters = match &context.trajectories {
            Some(t) => t.with_starts(&scene.parameters),
            None => scene.parameters.clone(),
        };
        let starts: Vec<String> = (context.trajectories.iter())
            .flat_map(|t| t.starts())
            .map(|(name, _)| name)
            .collect();
        let template_params: Vec<String> = template.as_ref().map_or_else(Vec::new, |t| {
            (parameters.names.iter())
                .filter(|n| t.mentions(n) || starts.contains(n))
                .cloned()
                .collect()
        });
        let c = &spec.calibration;
        let points = context.data.as_ref().map_or(1, |d| d.points());
        let lanes_per_candidate = (c.draws as usize).saturating_mul(points);
        if lanes_per_candidate > ndvm_components::limits::LANES {
            return Err(SearchError::Setting(format!(
                "{} draws × {points} training points = {lanes_per_candidate} lanes per \
                 calibration, over the limit of {}",
                c.draws,
                ndvm_components::limits::LANES
            )));
        }
        // What the whole window holds at once: each lane carries its tape, values and gradients.
        let in_flight = lanes_per_candidate.saturating_mul(spec.window);
        if in_flight > ndvm_components::limits::LANES_IN_FLIGHT {
            return Err(SearchError::Setting(format!(
                "window {} × {} draws × {points} training points = {in_flight} lanes in flight, \
                 over the limit of {}: lower `window` or `draws` (or use fewer data points)",
                spec.window,
                c.draws,
                ndvm_components::limits::LANES_IN_FLIGHT
            )));
        }
        let protocol = Protocol {
            loss: scene.loss,
            optimizer: c.optimizer,
            steps: c.steps,
            tolerance: c.tolerance,
            first_at_init: false,
            draw: Some(c.draw),
        };
        let fit_options = FitOptions {
            threads: options.threads,
            settings: FitSettings {
                window: spec.window,
                // One lane group per candidate: a search has parallelism enough across its
                // candidates, and one group is one walk and one pass over the gradients.
                lanes_per_group: lanes_per_candidate.clamp(256, 4096),
                walk_every_step: options.walk_every_step,
                device: options.device,
                // The window's candidates share one payload bound.
                payload_bytes: Some(
                    (ndvm_components::limits::SEARCH_PAYLOAD / spec.window.max(1) as u64)
                        .min(ndvm_engine::Limits::default().payload_bytes),
                ),
                steps_per_pass: options
                    .steps_per_pass
                    .unwrap_or(FitSettings::default().steps_per_pass)
                    .max(1),
                // Passes of fixed steps: admissions must not depend on time.
                pass_millis: None,
                trace_passes: options.trace_passes,
                // Calibrations are many and short: one step in eight is timed.
                time_first_steps: false,
            },
            plugins: options.plugins.clone(),
            precision: Some(precision),
            ..FitOptions::default()
        };
        let mut fit = Fit::with_members(scene, Vec::new(), &fit_options)?;
        // Each candidate's held-out R² is scored in its last task, on its core.
        let held = Arc::new(held);
        if held.has_data() {
            let held = held.clone();
            let score = move |src: &str, params: &[String], values: &[f64], restarts: usize| {
                held.score(src, params, values, restarts)
            };
            fit.set_scorer(ndvm_systems::resources::Scorer(Some(Arc::new(score))));
        }
        setup::check_grammar(&spec, &options.plugins)?;
        let mut notes = Notes::default();
        notes.warnings.extend(fit.warnings().iter().cloned());
        notes.warnings.extend(dropped);
        let seeds = setup::scene_seeds(scene, base, &mut notes)?;
        let front_penalty = crate::front::penalty(scene, context.data.as_deref());
        let slots = setup::start_proposers(
            scene,
            &spec,
            base,
            &inputs,
            options,
            seeds,
            front_penalty,
            template.as_ref(),
            &mut notes,
        )?;
        let by_r2 = matches!(spec.success, Success::HeldOutR2(_));
        let Budget {
            seconds,
            calibrations: max_calibrations,
        } = Budget::resolve(options.seconds, options.calibrations, &spec)?;
        let threads = Threads::resolve(options.threads, scene).count();
        let search = Search {
            tally: Tally::new(spec.keep, by_r2, front_penalty),
            spec,
            protocol,
            parameters,
            context,
            held,
            whole,
            template,
            template_params,
            fit: Some(fit),
            slots,
            turn: 0,
            queue: VecDeque::new(),
            inflight: HashMap::new(),
            next_candidate: 0,
            admitted: 0,
            timeline: Timeline::default(),
            truth: crate::front::truth(scene),
            group_front: options.shard.is_none(),
            programs: crate::log::Programs::default(),
            warnings: Vec::new(),
            warning_count: 0,
            pending_notes: notes.warnings,
            started,
            first_success_s: None,
            seconds,
            max_calibrations,
            interrupted: options.interrupted.clone().unwrap_or_default(),
            threads,
            precision,
            loop_times: crate::report::LoopTimes::default(),
        };
        Ok(search)
    }

    /// Runs to the budget, calling `on_event` for every calibration, warning and step; returns
    /// the report. Proposers are released at the end.
    pub fn run(&mut self, on_event: impl FnMut(Event<'_>) + Send) -> SearchReport {
        let Some(mut fit) = self.fit.take() else {
            // Only while it runs is the fit out.
            return self.report("proposers");
        };
        // The loop runs on the fit's pool: stepping costs no hand-over between threads.
        let pool = fit.pool();
        let stopped_by = pool.install(|| self.run_here(&mut fit, on_event));
        self.fit = Some(fit);
        for slot in &mut self.slots {
            slot.proposer.finish();
        }
        let p = self.point();
        self.timeline.close(p);
        self.report(stopped_by)
    }

    /// The loop. Each fit step runs beside the search's own work on the step before: recording
    /// the calibrations it finished (held-out R² where the fit did not score them, records,
    /// tallies, the caller's log, the proposers' `observe`) and, after that, taking proposals
    /// for the slots they freed, admitted when the step ends. A proposer's answer (a language
    /// model's) then never holds up the cores. Except after a cohort: candidates admitted
    /// together finish together, and when fewer than half the window are left in flight the
    /// freed slots are refilled at once, before the next step, so that step carries the new
    /// candidates instead of leaving the cores idle beside the recording. Then a proposer
    /// proposes before it sees the calibrations that freed the slots (it sees them beside the
    /// next step). Either way the order of everything is fixed by the scene alone.
    fn run_here(
        &mut self,
        fit: &mut Fit,
        mut on_event: impl FnMut(Event<'_>) + Send,
    ) -> &'static str {
        let deadline = self
            .seconds
            .map(|s| self.started + Duration::from_secs_f64(s.min(1e9)));
        for w in std::mem::take(&mut self.pending_notes) {
            self.warn(w, &mut on_event);
        }
        // The fit stops on the search's budget and signal, even inside a walk; the step that
        // was cut short is not retired (its calibrations are unfinished).
        let stop = ndvm_engine::Stop {
            flag: Some(self.interrupted.clone()),
            deadline,
        };
        fit.set_stop(stop.clone());
        // The candidates the last step finished (recorded beside the next step), and the new
        // ones to admit before it.
        let mut finished = Vec::new();
        let mut members = Vec::new();
        // The slots the last step freed are to be refilled beside the next one.
        let mut refill_beside = false;
        // A traced run's iterations ([`ndvm_systems::trace`]): each one's start, and the serial and
        // parallel work beside its pass.
        let mut top = Instant::now();
        let mut beside = (0.0, 0.0);
        let mut parallel = self.loop_times.parallel_s;
        let stopped_by = loop {
            // Parallel work not beside a pass (a refill between steps) runs on every core.
            fit.spread_trace(self.loop_times.parallel_s - parallel - beside.1);
            parallel = self.loop_times.parallel_s;
            fit.close_trace(&mut top, std::mem::take(&mut beside));
            if self.interrupted.load(Ordering::Relaxed) {
                break "interrupted";
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "seconds";
            }
            let mut lap = crate::report::Lap::start();
            fit.admit(std::mem::take(&mut members));
            if self.inflight.is_empty() {
                // Nothing to step (at the start, or when everything offered was refused): record
                // what finished, then ask for more.
                self.record(std::mem::take(&mut finished), &mut on_event);
                self.loop_times.record_s += lap.next();
                members = self.refill(&mut on_event);
                self.loop_times.refill_s += lap.next();
                if self.inflight.is_empty() {
                    if self.max_calibrations.is_some_and(|m| self.admitted >= m) {
                        break "calibrations";
                    }
                    if self.queue.is_empty() && self.slots.iter().all(|s| s.done) {
                        break "proposers";
                    }
                }
                // Admitted at the top; or everything offered was refused (each a failed
                // calibration, with its reason): ask again.
                continue;
            }
            let batch = std::mem::take(&mut finished);
            let beside_refill = std::mem::take(&mut refill_beside);
            let (done, (next, [record_s, refill_s, parallel_s])) = rayon::join(
                || {
                    fit.step();
                    (!stop.requested()).then(|| fit.retire())
                },
                || {
                    let mut lap = crate::report::Lap::start();
                    let parallel = self.loop_times.parallel_s;
                    self.record(batch, &mut on_event);
                    let recorded = lap.next();
                    let next = if beside_refill {
                        self.refill(&mut on_event)
                    } else {
                        Vec::new()
                    };
                    let refilled = lap.next();
                    (
                        next,
                        [recorded, refilled, self.loop_times.parallel_s - parallel],
                    )
                },
            );
            if beside_refill {
                members = next;
            }
            self.loop_times.record_s += record_s;
            self.loop_times.refill_s += refill_s;
            self.loop_times.beside_step_s += record_s + refill_s;
            beside = (record_s + refill_s - parallel_s, parallel_s);
            self.loop_times.step_s += lap.next();
            // A step cut short is not retired: its calibrations are unfinished.
            let Some(done) = done else { continue };
            finished = self.take_finished(done);
            self.loop_times.retire_s += lap.next();
            // Most of the window just finished (a cohort): its slots are refilled now, on every
            // core, so that the next step is not left with nothing to do beside the recording.
            // Otherwise beside the next step, where a proposer's answer (a language model's)
            // does not hold up the cores.
            if self.inflight.len() * 2 < self.spec.window {
                members.extend(self.refill(&mut on_event));
                self.loop_times.refill_s += lap.next();
            } else {
                refill_beside = true;
            }
            let p = self.progress();
            on_event(Event::Progress(&p));
            self.loop_times.events_s += lap.next();
        };
        // What finished last is recorded; what was never admitted never started.
        let mut lap = crate::report::Lap::start();
        self.record(finished, &mut on_event);
        for m in members {
            self.inflight.remove(&(m.candidate.index as u64));
        }
        self.loop_times.record_s += lap.next();
        fit.spread_trace(self.loop_times.parallel_s - parallel - beside.1);
        fit.close_trace(&mut top, beside);
        stopped_by
    }

    /// A traced search's passes ([`SearchOptions::trace_passes`]), once it has run.
    pub fn trace(&self) -> Option<&ndvm_systems::trace::Trace> {
        self.fit.as_ref()?.profile().trace.as_ref()
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn point(&self) -> Point {
        self.tally.point(self.elapsed())
    }

    pub fn progress(&self) -> Progress {
        Progress {
            elapsed_s: self.elapsed(),
            calibrations: self.tally.calibrations,
            successes: self.tally.successes,
            distinct_successes: self.tally.successful_skeletons.len() as u64,
            best: self.tally.best_value(),
            seconds: self.seconds,
            max_calibrations: self.max_calibrations,
        }
    }

    fn report(&mut self, stopped_by: &'static str) -> SearchReport {
        let unfinished: u64 = self.inflight.values().map(|f| f.draws).sum();
        let profile = self.fit.as_ref().map(|f| f.profile().report());
        crate::report::build(crate::report::Parts {
            spec: &self.spec,
            tally: &self.tally,
            proposers: self.slots.iter().map(|s| s.tally.clone()).collect(),
            warnings: self.warnings.clone(),
            warning_count: self.warning_count,
            stopped_by,
            unfinished,
            seconds: self.seconds,
            max_calibrations: self.max_calibrations,
            precision: self.precision,
            wall_s: self.elapsed(),
            first_success_s: self.first_success_s,
            threads: self.threads,
            device: profile.as_ref().map(|p| p.used.clone()).unwrap_or_default(),
            profile,
            search_loop: self.loop_times,
            timeline: self.timeline.clone(),
            truth: self.truth.clone(),
            group_front: self.group_front,
            holes: self.template.as_ref().map_or_else(Vec::new, |t| t.names()),
        })
    }
}
