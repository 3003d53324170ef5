//! Search: program-and-parameter co-search, natively — a population that keeps being refilled.
//!
//! A search scene (a scene with a `search:` section, [`ndvm_components::search`]) names
//! proposers, a calibration protocol, a success criterion and a budget. [`Search`] runs the
//! loop: it keeps up to `window` candidates in one [`Fit`] (the same stage systems as
//! `ndvm fit`), asks the proposers for more whenever slots free up, and after every fit step
//! takes the finished candidates out ([`Fit::retire`]), turns each of their draws into a
//! [`Record`] (one *calibration*), hands the records to the caller (the log), to the tally and
//! the frontier, and shows them to every proposer. It stops at the budget (seconds or
//! calibrations), on an interrupt, or when every proposer is exhausted.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_systems::search::{Event, Search, SearchOptions};
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "line", src: "(+ (* a x) b)")],
//!     data: Some(Synthetic(
//!         program: "(+ (* 2 x) 1)",
//!         inputs: {"x": Linspace(0.0, 1.0, 20)},
//!         split: Split(train: 0.7, seed: 1),
//!     )),
//!     loss: Mse,
//!     search: Some(Search(
//!         proposers: [Evolve()],
//!         calibration: Calibration(steps: 100, optimizer: Adam(lr: 0.1)),
//!         budget: Budget(calibrations: Some(64)),
//!     )),
//! )"#).unwrap();
//! let options = SearchOptions { threads: Some(1), ..SearchOptions::default() };
//! let mut search = Search::new(&scene, std::path::Path::new("."), &options).unwrap();
//! let mut log = Vec::new();
//! let report = search.run(|e| if let Event::Calibrated(r, _) = e { log.push(r.clone()) });
//! assert_eq!(report.summary.calibrations, 64);
//! assert_eq!(log.len(), 64);
//! assert!(report.summary.successes > 0);
//! ```
//!
//! Determinism: proposals are admitted, and records produced, in an order fixed by the scene
//! alone; under a calibration budget the log and the results are byte-identical at every thread
//! count (wall-clock figures apart).

pub mod command;
pub mod evolve;
pub mod expr;
pub mod frontier;
pub mod mutate;
pub mod proposer;
pub mod record;
pub mod report;
pub mod stream;

pub use proposer::{Context, Notes, Proposal, Proposer, ProposerError, ProposerRegistry};
pub use record::Record;
pub use report::{SearchReport, Summary};

use crate::fit::{Fit, FitError, FitOptions};
use crate::plugin::Engine;
use crate::population::{self, PopulationError, Protocol};
use crate::resources::FitSettings;
use frontier::{Frontier, Point};
use ndvm_components::scene::{Candidates, Parameters, Precision, Restarts, Scene};
use ndvm_components::search::{ProposerSpec, Search as Spec, Success};
use record::{ProposerTally, Tally};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest candidate program accepted from a proposer, in bytes.
pub const MAX_SOURCE_BYTES: usize = 64 << 10;
/// Warnings kept in the results (all are passed to the caller).
const MAX_WARNINGS: usize = 100;
/// The budget when neither the scene nor the caller gives one.
pub const DEFAULT_SECONDS: f64 = 60.0;

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
    /// Custom primitives and schedule hooks.
    pub engine: Engine,
    /// Proposers that plugins add (`Plugin(name: …)` in a scene).
    pub proposers: ProposerRegistry,
    /// Default: the scene's `precision`, else f32 (the reference protocol's).
    pub precision: Option<Precision>,
    pub walk_every_step: bool,
}

/// A search that could not start.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("not a search scene: it has no `search:` section")]
    NotASearch,
    #[error("{0}")]
    Setting(String),
    #[error(transparent)]
    Population(#[from] PopulationError),
    #[error(transparent)]
    Fit(#[from] FitError),
    #[error(transparent)]
    Proposer(#[from] ProposerError),
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
}

/// A running search.
pub struct Search {
    spec: Spec,
    protocol: Protocol,
    context: population::Context,
    parameters: Parameters,
    inputs: Vec<String>,
    fit: Fit,
    slots: Vec<Slot>,
    turn: usize,
    queue: VecDeque<(usize, Proposal)>,
    inflight: HashMap<u64, Inflight>,
    next_candidate: u64,
    admitted: u64,
    tally: Tally,
    frontier: Frontier,
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
        let spec = scene.search.clone().ok_or(SearchError::NotASearch)?;
        let context = population::Context::load(scene, base)?;
        let inputs: Vec<String> = context
            .data
            .as_ref()
            .map(|d| d.inputs.keys().cloned().collect())
            .unwrap_or_default();
        let precision = options
            .precision
            .or(scene.precision)
            .unwrap_or(Precision::F32);
        let c = &spec.calibration;
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
                walk_every_step: options.walk_every_step,
                ..FitSettings::default()
            },
            engine: options.engine.clone(),
            precision: Some(precision),
            ..FitOptions::default()
        };
        let fit = Fit::with_members(scene, Vec::new(), &fit_options)?;
        check_grammar(&spec, &options.engine)?;
        let mut notes = Notes::default();
        let seeds = scene_seeds(scene, base, &mut notes)?;
        let slots = start_proposers(scene, &spec, base, &inputs, options, seeds, &mut notes)?;
        let by_r2 = matches!(spec.success, Success::HeldOutR2(_));
        // A budget given by the caller replaces the scene's whole budget.
        let (seconds, max_calibrations) = match (options.seconds, options.calibrations) {
            (None, None) => (spec.budget.seconds, spec.budget.calibrations),
            given => given,
        };
        let seconds = match (seconds, max_calibrations) {
            (None, None) => Some(DEFAULT_SECONDS),
            (s, _) => s,
        };
        if let Some(s) = seconds
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(SearchError::Setting(format!(
                "the time budget must be a finite number of seconds ≥ 0, got {s}"
            )));
        }
        let threads = options
            .threads
            .or(scene.threads)
            .unwrap_or_else(rayon::current_num_threads);
        let search = Search {
            tally: Tally::new(spec.keep, by_r2),
            spec,
            protocol,
            parameters: scene.parameters.clone(),
            inputs,
            context,
            fit,
            slots,
            turn: 0,
            queue: VecDeque::new(),
            inflight: HashMap::new(),
            next_candidate: 0,
            admitted: 0,
            frontier: Frontier::default(),
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
        };
        Ok(search)
    }

    /// Runs to the budget, calling `on_event` for every calibration, warning and step; returns
    /// the report. Proposers are released at the end.
    pub fn run(&mut self, on_event: impl FnMut(Event<'_>) + Send) -> SearchReport {
        // The loop runs on the fit's pool: stepping costs no hand-over between threads.
        let pool = self.fit.pool();
        pool.install(|| self.run_here(on_event))
    }

    fn run_here(&mut self, mut on_event: impl FnMut(Event<'_>)) -> SearchReport {
        let deadline = self
            .seconds
            .map(|s| self.started + Duration::from_secs_f64(s.min(1e9)));
        for w in std::mem::take(&mut self.pending_notes) {
            self.warn(w, &mut on_event);
        }
        let stopped_by = loop {
            if self.interrupted.load(Ordering::Relaxed) {
                break "interrupted";
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "seconds";
            }
            self.refill(&mut on_event);
            if self.inflight.is_empty() {
                let spent = self.max_calibrations.is_some_and(|m| self.admitted >= m);
                break if spent { "calibrations" } else { "proposers" };
            }
            self.fit.step();
            let done = self.fit.retire();
            self.record(done, &mut on_event);
            let p = self.progress();
            on_event(Event::Progress(&p));
        };
        for slot in &mut self.slots {
            slot.proposer.finish();
        }
        let p = self.point();
        self.frontier.close(p);
        self.report(stopped_by)
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn best(&self) -> Option<f64> {
        let r = self.tally.best.as_ref()?;
        match self.spec.success {
            Success::HeldOutR2(_) => r.held_out_r2,
            Success::TrainLoss(_) => Some(r.train_loss),
        }
    }

    fn point(&self) -> Point {
        Point {
            elapsed_s: self.elapsed(),
            calibrations: self.tally.calibrations,
            best: self.best().unwrap_or(f64::NAN),
            successes: self.tally.successes,
            distinct_successes: self.tally.successful_skeletons.len() as u64,
        }
    }

    pub fn progress(&self) -> Progress {
        Progress {
            elapsed_s: self.elapsed(),
            calibrations: self.tally.calibrations,
            successes: self.tally.successes,
            distinct_successes: self.tally.successful_skeletons.len() as u64,
            best: self.best(),
            seconds: self.seconds,
            max_calibrations: self.max_calibrations,
        }
    }

    fn warn(&mut self, message: String, on_event: &mut impl FnMut(Event<'_>)) {
        on_event(Event::Warning(&message));
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(message);
        }
    }

    fn drain_notes(&mut self, notes: Notes, on_event: &mut impl FnMut(Event<'_>)) {
        for w in notes.warnings {
            self.warn(w, on_event);
        }
    }

    /// A proposer failed: it leaves the search, which goes on with the others.
    fn drop_proposer(&mut self, i: usize, e: ProposerError, on_event: &mut impl FnMut(Event<'_>)) {
        self.slots[i].done = true;
        self.slots[i].failed = true;
        self.slots[i].tally.error = Some(e.message.clone());
        self.warn(format!("{e} (it leaves the search)"), on_event);
    }

    /// The next proposal, asking the proposers in turn when the queue is empty.
    fn next_proposal(
        &mut self,
        free: usize,
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Option<(usize, Proposal)> {
        for _ in 0..=self.slots.len() {
            if let Some(p) = self.queue.pop_front() {
                return Some(p);
            }
            let i = (0..self.slots.len())
                .map(|k| (self.turn + k) % self.slots.len())
                .find(|&i| !self.slots[i].done)?;
            self.turn = (i + 1) % self.slots.len();
            let mut notes = Notes::default();
            let got = self.slots[i].proposer.propose(free, &mut notes);
            self.drain_notes(notes, on_event);
            match got {
                Ok(list) if list.is_empty() => self.slots[i].done = true,
                Ok(list) => self.queue.extend(list.into_iter().map(|p| (i, p))),
                Err(e) => self.drop_proposer(i, e, on_event),
            }
        }
        self.queue.pop_front()
    }

    /// Admits proposals until the window is full or the budget is spent.
    fn refill(&mut self, on_event: &mut impl FnMut(Event<'_>)) {
        let mut members = Vec::new();
        let mut rejected = Vec::new();
        let draws = u64::from(self.spec.calibration.draws);
        while self.inflight.len() + rejected.len() < self.spec.window {
            let left = self
                .max_calibrations
                .map_or(u64::MAX, |m| m - self.admitted);
            if left == 0 {
                break;
            }
            let free = self.spec.window - self.inflight.len() - rejected.len();
            let Some((slot, proposal)) = self.next_proposal(free, on_event) else {
                break;
            };
            let index = self.next_candidate;
            self.next_candidate += 1;
            let n = draws.min(left);
            self.admitted += n;
            let skeleton = expr::skeleton(&proposal.src, &proposal.params)
                .unwrap_or_else(|_| proposal.src.chars().take(200).collect());
            let flight = Inflight {
                proposer: slot,
                proposal,
                skeleton,
            };
            if let Err(why) = self.check_proposal(&flight.proposal) {
                rejected.push((index, n, flight, why));
                continue;
            }
            let params = Parameters {
                names: flight.proposal.params.clone(),
                init: self.parameters.init.clone(),
                restarts: Restarts {
                    count: n as u32,
                    scale: 0.0,
                    seed: mix(self.spec.seed, index),
                },
                bounds: self.parameters.bounds.clone(),
            };
            members.push(population::member(
                &self.protocol,
                index as usize,
                flight.proposal.name.clone(),
                flight.proposal.src.clone(),
                &params,
                self.context.data.clone(),
                self.context.shared.clone(),
            ));
            self.inflight.insert(index, flight);
        }
        self.fit.admit(members);
        // A proposal that cannot even be admitted is a failed calibration of each draw.
        let mut records = Vec::new();
        for (index, n, flight, why) in rejected {
            for draw in 0..n as u32 {
                records.push((
                    flight.proposer,
                    self.make_record(
                        &flight,
                        index,
                        draw,
                        Default::default(),
                        (f64::NAN, None),
                        ("failed", Some(why.clone())),
                    ),
                ));
            }
            self.slots[flight.proposer].tally.candidates += 1;
        }
        self.emit(records, on_event);
    }

    /// What makes a proposal unusable before it is decoded: its size and parameter names.
    fn check_proposal(&self, p: &Proposal) -> Result<(), String> {
        if p.src.len() > MAX_SOURCE_BYTES {
            return Err(format!(
                "the program is {} bytes, over the {} KiB limit",
                p.src.len(),
                MAX_SOURCE_BYTES >> 10
            ));
        }
        for (i, name) in p.params.iter().enumerate() {
            let ok = !name.is_empty()
                && !name.contains(|c: char| c.is_whitespace() || "()[]'\";`,".contains(c))
                && name.parse::<f64>().is_err();
            if !ok {
                return Err(format!("`{name}` is not a parameter name"));
            }
            if p.params[..i].contains(name) {
                return Err(format!("parameter `{name}` is listed twice"));
            }
            if self.inputs.contains(name) {
                return Err(format!("parameter `{name}` is also a data column"));
            }
            if self.context.shared.numbers.iter().any(|(n, _)| n == name)
                || self.context.shared.matrices.iter().any(|m| &m.name == name)
            {
                return Err(format!("parameter `{name}` is also a scene input"));
            }
        }
        Ok(())
    }

    fn make_record(
        &self,
        flight: &Inflight,
        candidate: u64,
        draw: u32,
        params: std::collections::BTreeMap<String, f64>,
        (train_loss, held_out_r2): (f64, Option<f64>),
        (status, detail): (&'static str, Option<String>),
    ) -> Record {
        let ok = matches!(status, "done" | "converged" | "stopped");
        let success = ok
            && match self.spec.success {
                Success::HeldOutR2(t) => held_out_r2.is_some_and(|r| r > t),
                Success::TrainLoss(t) => train_loss < t,
            };
        Record {
            calibration: 0,
            candidate,
            draw,
            proposer: self.slots[flight.proposer].proposer.name().to_string(),
            name: flight.proposal.name.clone(),
            skeleton: flight.skeleton.clone(),
            src: flight.proposal.src.clone(),
            params,
            train_loss,
            held_out_r2,
            success,
            status,
            detail,
        }
    }

    /// Records of the retired candidates, one per draw.
    fn record(
        &mut self,
        done: Vec<crate::report::CandidateResult>,
        on_event: &mut impl FnMut(Event<'_>),
    ) {
        let mut records = Vec::new();
        for c in done {
            let index = c.index as u64;
            let Some(flight) = self.inflight.remove(&index) else {
                continue;
            };
            self.slots[flight.proposer].tally.candidates += 1;
            for (draw, r) in c.restarts.iter().enumerate() {
                let record = self.make_record(
                    &flight,
                    index,
                    draw as u32,
                    r.params.clone(),
                    (r.loss, r.held_out_r2),
                    (c.status, c.detail.clone()),
                );
                records.push((flight.proposer, record));
            }
        }
        self.emit(records, on_event);
    }

    /// Numbers the records, counts them, passes them on and shows them to the proposers.
    fn emit(&mut self, records: Vec<(usize, Record)>, on_event: &mut impl FnMut(Event<'_>)) {
        if records.is_empty() {
            return;
        }
        let now = self.elapsed();
        let mut out = Vec::with_capacity(records.len());
        for (slot, mut r) in records {
            r.calibration = self.tally.calibrations;
            let before = self.tally.successful_skeletons.len();
            let improved = self.tally.add(&r);
            let new_success = self.tally.successful_skeletons.len() > before;
            if r.success && self.first_success_s.is_none() {
                self.first_success_s = Some(now);
            }
            let tally = &mut self.slots[slot].tally;
            tally.calibrations += 1;
            tally.successes += u64::from(r.success);
            on_event(Event::Calibrated(&r, now));
            if improved || new_success {
                let p = self.point();
                self.frontier.offer(p, new_success);
            }
            out.push(r);
        }
        let records = out;
        let p = self.point();
        self.frontier.offer(p, false);
        for i in 0..self.slots.len() {
            if self.slots[i].failed {
                continue;
            }
            let mut notes = Notes::default();
            let seen = self.slots[i].proposer.observe(&records, &mut notes);
            self.drain_notes(notes, on_event);
            if let Err(e) = seen {
                self.drop_proposer(i, e, on_event);
            }
        }
    }

    fn report(&mut self, stopped_by: &'static str) -> SearchReport {
        let unfinished: u64 = self
            .inflight
            .values()
            .map(|_| u64::from(self.spec.calibration.draws))
            .sum();
        report::build(report::Parts {
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
            profile: self.fit.profile().report(),
            frontier: self.frontier.clone(),
        })
    }
}

/// splitmix64 of `seed` and `i`: a different, well-mixed seed for every candidate.
pub fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Evolve's operators must be primitives the engine knows (with the plugins').
fn check_grammar(spec: &Spec, engine: &Engine) -> Result<(), SearchError> {
    for p in &spec.proposers {
        let Some(e) = p.evolve() else { continue };
        let forms = e
            .unary
            .iter()
            .map(|u| (u, format!("({u} x)")))
            .chain(e.binary.iter().map(|b| (b, format!("({b} x x)"))));
        for (name, src) in forms {
            ndvm_engine::Program::with_primitives(&src, &["x"], &engine.primitives).map_err(
                |err| {
                    SearchError::Setting(format!(
                        "`Evolve`: `{name}` cannot be used as an operator: {}",
                        err.message
                    ))
                },
            )?;
        }
    }
    Ok(())
}

/// Starts every proposer of the scene, in order, each with its own seed.
fn start_proposers(
    scene: &Scene,
    spec: &Spec,
    base: &Path,
    inputs: &[String],
    options: &SearchOptions,
    seeds: Vec<Proposal>,
    notes: &mut Notes,
) -> Result<Vec<Slot>, SearchError> {
    let success = match spec.success {
        Success::HeldOutR2(t) => format!("held-out R² > {t}"),
        Success::TrainLoss(t) => format!("training loss < {t}"),
    };
    let mut slots = Vec::new();
    let mut push = |p: Box<dyn Proposer>| {
        slots.push(Slot {
            tally: ProposerTally {
                name: p.name().to_string(),
                ..ProposerTally::default()
            },
            proposer: p,
            done: false,
            failed: false,
        });
    };
    // The scene's own candidates come first, once.
    if !seeds.is_empty() {
        push(Box::new(proposer::Seeds { list: seeds.into() }));
    }
    for (i, p) in spec.proposers.iter().enumerate() {
        let context = Context {
            inputs: inputs.to_vec(),
            shared: scene.inputs.keys().cloned().collect(),
            params: scene.parameters.names.clone(),
            success: success.clone(),
            seed: mix(spec.seed, 1 << 32 | i as u64),
            base: base.to_path_buf(),
        };
        let p: Box<dyn Proposer> = match p {
            ProposerSpec::Stream { path, cycle, take } => {
                let s = stream::Stream::open(&base.join(path), path, *take, *cycle, notes)
                    .map_err(SearchError::Setting)?;
                Box::new(s)
            }
            ProposerSpec::Command {
                argv,
                name,
                timeout_seconds,
                batch,
            } => Box::new(command::CommandProposer::start(
                argv,
                name.as_deref(),
                *timeout_seconds,
                *batch,
                &context,
            )?),
            ProposerSpec::Evolve { .. } => {
                let settings = p.evolve().unwrap_or_default();
                Box::new(evolve::Evolve::new(&settings, &context).map_err(SearchError::Setting)?)
            }
            ProposerSpec::Plugin { name, settings } => options
                .proposers
                .build(name, settings, &context)
                .map_err(SearchError::Setting)?,
        };
        push(p);
    }
    Ok(slots)
}

/// The scene's own `candidates`, as proposals of the seeds proposer.
fn scene_seeds(
    scene: &Scene,
    base: &Path,
    notes: &mut Notes,
) -> Result<Vec<Proposal>, SearchError> {
    let mut out = Vec::new();
    for c in &scene.candidates {
        match c {
            Candidates::Inline {
                name,
                src,
                parameters,
                data,
            } => {
                if data.is_some() {
                    return Err(SearchError::Setting(format!(
                        "candidate `{name}`: a search calibrates every candidate on the scene's \
                         data; remove its own `data`"
                    )));
                }
                out.push(Proposal {
                    src: src.clone(),
                    params: parameters
                        .as_ref()
                        .map_or(&scene.parameters.names, |p| &p.names)
                        .clone(),
                    name: name.clone(),
                });
            }
            Candidates::File(path) => {
                let src = stream::read_bounded(&base.join(path))
                    .map_err(|e| SearchError::Setting(format!("{path}: {e}")))?;
                out.push(Proposal {
                    src,
                    params: scene.parameters.names.clone(),
                    name: PathBuf::from(path)
                        .file_stem()
                        .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned()),
                });
            }
            Candidates::Stream { path, take } => {
                let mut s = stream::Stream::open(&base.join(path), path, *take, false, notes)
                    .map_err(SearchError::Setting)?;
                let n = s.len();
                out.extend(s.propose(n, notes).unwrap_or_default());
            }
        }
    }
    Ok(out)
}
