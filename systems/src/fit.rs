//! The fit: a world of candidates and lane groups, and the schedule that steps it.
//!
//! [`Fit::new`] spawns one Candidate entity per member of a scene's population and builds the
//! stage schedule: the eight stage systems (seven without the GPU feature), each in its own
//! [`Stage`] set, the sets chained in schedule order (docs/architecture.md) and run by bevy's
//! single-threaded executor. Parallelism lives inside
//! the heavy systems (rayon over lane groups and candidates) on a pool of the requested size.
//! One run of the schedule is one fit step for every active candidate; [`Fit::run`] steps until
//! every candidate is finished, stopped or failed.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_systems::fit::{Fit, FitOptions};
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "bowl", src: "(+ (* (- a 3) (- a 3)) 1)")],
//!     parameters: Parameters(names: ["a"], init: {"a": 0.0}),
//!     optimizer: Adam(lr: 0.3),
//!     steps: 200,
//! )"#).unwrap();
//! let mut fit = Fit::new(&scene, std::path::Path::new("."), &FitOptions::default()).unwrap();
//! let report = fit.run(|_| {});
//! let best = &report.candidates[0];
//! assert!((best.params["a"] - 3.0).abs() < 0.05);
//! assert!((best.loss - 1.0).abs() < 1e-3);
//! ```

use crate::plugin::Plugins;
use crate::population::{self, PopulationError};
use crate::profile::{Profile, Stage};
use crate::report::{self, CandidateResult, FitReport};
use crate::resources::{DecodeCache, DeviceWidth, FitSettings, Scorer, StopSignal};
use crate::settings::{self, Job, Threads};
use crate::stages;
use bevy_ecs::prelude::*;
use bevy_ecs::schedule::SingleThreadedExecutor;
use ndvm_components::prelude::*;
use ndvm_components::scene::{Precision, Scene};
use ndvm_engine::Real;
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to run a fit (what the CLI flags and the scene's run settings say).
#[derive(Clone, Debug, Default)]
pub struct FitOptions {
    /// Worker threads (default: the scene's `threads`, else one per core).
    pub threads: Option<usize>,
    /// Optimizer steps per candidate (default: the scene's `steps`).
    pub steps: Option<u32>,
    /// Lane layout and admission window.
    pub settings: FitSettings,
    /// Set it (e.g. from a Ctrl-C handler) to stop the fit; finished results stand.
    pub interrupted: Option<Arc<AtomicBool>>,
    /// Custom primitives and schedule hooks from plugins.
    pub plugins: Plugins,
    /// The evaluator's precision (default: the scene's `precision`, else f64).
    pub precision: Option<Precision>,
    /// What `device: Auto` decides with (default: fitted to an H200 beside 16 Xeon cores;
    /// docs/gpu.md).
    #[cfg(feature = "gpu")]
    pub cost_model: stages::gpu::CostModel,
}

/// Progress after a step, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Candidates finished, stopped or failed.
    pub finished: usize,
    pub total: usize,
    /// Schedule runs so far.
    pub steps: u64,
    /// Optimizer steps taken and to take, over all candidates (a finished candidate counts
    /// all of its steps): the fit's work, for a progress bar with an ETA.
    pub work_done: u64,
    pub work_total: u64,
    /// The lowest finite loss of any candidate so far.
    pub best_loss: Option<f64>,
}

/// Decoded programs kept before [`Fit::retire`] forgets them all (each is a few KiB).
const PROGRAM_CACHE_LIMIT: usize = 4096;

/// A fit in progress.
pub struct Fit {
    world: World,
    schedule: Schedule,
    pool: Arc<rayon::ThreadPool>,
    total: usize,
    /// Candidates ever added, and the most steps any of them takes (bounding [`Fit::run`]).
    admitted: usize,
    max_steps: u64,
    /// What was skipped while building the population (malformed stream lines), and a
    /// software GPU adapter taken for `device: Gpu`.
    warnings: Vec<String>,
}

impl std::fmt::Debug for Fit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fit")
            .field("candidates", &self.total)
            .field("threads", &self.pool.current_num_threads())
            .finish_non_exhaustive()
    }
}

/// A fit that could not start.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error(transparent)]
    Population(#[from] PopulationError),
    #[error("could not start {threads} worker threads: {message}")]
    Threads { threads: usize, message: String },
    #[error("{0}")]
    Device(String),
}

impl Fit {
    /// Builds the world and the schedule for `scene` (relative paths against `base`).
    pub fn new(scene: &Scene, base: &Path, options: &FitOptions) -> Result<Fit, FitError> {
        let mut scene = scene.clone();
        if let Some(steps) = options.steps {
            scene.steps = steps;
        }
        let (members, warnings) = population::build(&scene, base)?;
        let mut fit = Fit::with_members(&scene, members, options)?;
        fit.warnings.splice(0..0, warnings);
        Ok(fit)
    }

    /// A fit of `members` under `scene`'s run settings (threads, budget, precision, replay);
    /// more can be added with [`Fit::admit`] — a search's population that keeps being refilled.
    pub fn with_members(
        scene: &Scene,
        members: Vec<population::Member>,
        options: &FitOptions,
    ) -> Result<Fit, FitError> {
        let resolved = Threads::resolve(options.threads, scene);
        let threads = resolved.asked.unwrap_or(0);
        if threads > ndvm_components::limits::THREADS {
            return Err(FitError::Threads {
                threads,
                message: format!("the limit is {}", ndvm_components::limits::THREADS),
            });
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(resolved.workers())
            .build()
            .map_err(|e| FitError::Threads {
                threads,
                message: e.to_string(),
            })?;
        let mut world = World::new();
        let mut settings = options.settings;
        settings.walk_every_step |= scene.walk_every_step;
        world.insert_resource(settings);
        world.insert_resource(DecodeCache {
            cache: Default::default(),
            primitives: options.plugins.primitives.clone(),
        });
        world.insert_resource(Profile {
            trace: settings.trace_passes.then(Default::default),
            ..Profile::default()
        });
        world.insert_resource(DeviceWidth::default());
        world.insert_resource(StopSignal(ndvm_engine::Stop {
            flag: Some(options.interrupted.clone().unwrap_or_default()),
            deadline: scene
                .budget_seconds
                .map(|s| Instant::now() + Duration::from_secs_f64(s.clamp(0.0, 1e9))),
        }));
        let precision = settings::precision(options.precision, scene, Job::Fit);
        let device = settings::device(settings.device, scene);
        let mut schedule = match precision {
            Precision::F32 => stage_schedule::<f32>(),
            Precision::F64 => stage_schedule::<f64>(),
        };
        #[cfg_attr(not(feature = "gpu"), allow(unused_mut))]
        let mut warnings = Vec::new();
        // Whether a device serves (or, under `Auto`, may serve) some candidates: those step at
        // the GPU stage's pace, a step per schedule run.
        #[cfg(not(feature = "gpu"))]
        let device_in_use = false;
        #[cfg(feature = "gpu")]
        let device_in_use = {
            let widest = members.iter().map(|m| m.spec.lanes()).max().unwrap_or(0);
            let ctx = stages::gpu::open(device, precision, widest, options.cost_model)
                .map_err(FitError::Device)?;
            if let Some(gpu) = &ctx.gpu {
                let used = crate::device::DeviceUsed::gpu(gpu.describe(), gpu.is_software());
                // `Auto` never takes a software adapter; `Gpu` does, and is told.
                warnings.extend(used.software_warning());
                let mut profile = world.resource_mut::<Profile>();
                profile.used = used;
                profile.device.open_s = ctx.open_s;
            }
            let in_use = ctx.in_use();
            if in_use && !world.resource::<FitSettings>().walk_every_step {
                world.insert_resource(DeviceWidth(Some(stages::gpu::GPU_LANES_PER_GROUP)));
            }
            world.insert_resource(ctx);
            if precision == Precision::F32 {
                schedule.add_systems(stages::gpu::gpu.in_set(Stage::Gpu));
            }
            in_use
        };
        #[cfg(not(feature = "gpu"))]
        if device == ndvm_components::scene::Device::Gpu {
            return Err(FitError::Device(
                "--device gpu: this build has no GPU support (the `gpu` feature)".into(),
            ));
        }
        if options.plugins.has_hooks() {
            // A plugin's systems expect to see every step.
            world.resource_mut::<FitSettings>().steps_per_pass = 1;
        }
        // Who steps whom (stages::pacing::Piped): a CPU fit pipes every candidate it admits;
        // with a device in use, only those the device leaves on the CPU are piped.
        let pacing = match device_in_use {
            false => stages::pacing::Pacing::all_piped(world.resource::<FitSettings>()),
            true => stages::pacing::Pacing {
                admit_piped: false,
                stepped: true,
            },
        };
        world.insert_resource(pacing);
        options.plugins.extend(&mut schedule);
        let mut fit = Fit {
            world,
            schedule,
            pool: Arc::new(pool),
            total: 0,
            admitted: 0,
            max_steps: 0,
            warnings,
        };
        fit.admit(members);
        Ok(fit)
    }

    /// Adds candidates to the population (pending: decoded and admitted on the next step, in
    /// population order, as the window allows). Their `index`es must be new.
    pub fn admit(&mut self, members: Vec<population::Member>) {
        let piped = self.world.resource::<stages::pacing::Pacing>().admit_piped;
        for m in members {
            self.max_steps = self.max_steps.max(u64::from(m.spec.steps));
            self.admitted += 1;
            self.total += 1;
            let candidate = (
                m.candidate,
                m.spec,
                m.start,
                Status::Pending,
                Groups::default(),
                OptimizerState::default(),
                History::default(),
            );
            // Spawned with its marker: inserting it later would move it between tables.
            if piped {
                self.world.spawn((candidate, stages::pacing::Piped));
            } else {
                self.world.spawn(candidate);
            }
        }
    }

    /// Takes every finished, stopped or failed candidate out of the world (with its lane
    /// groups) and returns its results, in population order: what a long search does after
    /// every step so that memory stays flat. Decoded programs are forgotten once many
    /// accumulate (a program still in use stays alive through its candidates).
    pub fn retire(&mut self) -> Vec<CandidateResult> {
        let mut q = self.world.query::<(Entity, &Status, &Groups)>();
        let done: Vec<(Entity, Vec<Entity>)> = q
            .iter(&self.world)
            .filter(|(_, s, _)| s.is_final())
            .map(|(e, _, g)| (e, g.0.clone()))
            .collect();
        // The reports are independent (a few microseconds each, ~60 at once when a search's
        // cohort finishes): built on every core, beside the search's own work.
        let world = &self.world;
        let start = Instant::now();
        let mut results: Vec<CandidateResult> = self.pool.install(|| {
            done.par_iter()
                .filter_map(|(entity, _)| report::of_entity(world, *entity))
                .collect()
        });
        self.spread_trace(start.elapsed().as_secs_f64());
        for (entity, groups) in done {
            for g in groups {
                self.world.despawn(g);
            }
            self.world.despawn(entity);
        }
        self.total -= results.len();
        results.sort_by_key(|r| r.index);
        self.world.clear_trackers();
        let mut programs = self.world.resource_mut::<DecodeCache>();
        if programs.cache.len() > PROGRAM_CACHE_LIMIT {
            programs.cache = Default::default();
        }
        results
    }

    /// One fit step for every active candidate. Returns whether work remains.
    pub fn step(&mut self) -> bool {
        let (world, schedule, total) = (&mut self.world, &mut self.schedule, self.total);
        self.pool.install(|| step(world, schedule, total))
    }

    /// Steps until every candidate is done (or the fit is stopped), calling `on_step` after
    /// every step, and returns the report. The whole loop runs on the fit's thread pool, so
    /// a step costs no hand-over between threads.
    pub fn run(&mut self, mut on_step: impl FnMut(Progress) + Send) -> FitReport {
        // Every run advances each active candidate by one step; a window of W candidates
        // finishes every candidate within ceil(admitted / W) · (steps + 2) runs.
        let window = self.world.resource::<FitSettings>().window.max(1);
        let max_runs = self.admitted.div_ceil(window) as u64 * (self.max_steps + 2) + 2;
        let (world, schedule, total) = (&mut self.world, &mut self.schedule, self.total);
        self.pool.install(|| {
            let mut runs = 0;
            let mut top = Instant::now();
            while runs < max_runs && step(world, schedule, total) {
                runs += 1;
                on_step(progress(world, total));
                close_trace(world, &mut top, (0.0, 0.0));
            }
        });
        on_step(self.progress());
        self.report()
    }

    /// Replaces the fit's stop signal (a search's interrupt flag and time budget): the schedule
    /// stops its candidates, and a walk inside a 10⁸-step loop gives way within milliseconds.
    pub fn set_stop(&mut self, stop: ndvm_engine::Stop) {
        self.world.insert_resource(StopSignal(stop));
    }

    /// Sets what each candidate's own task computes as it finishes ([`Scorer`]): a search's
    /// held-out R², scored on the candidate's core instead of on the search's side of the loop.
    pub fn set_scorer(&mut self, scorer: Scorer) {
        self.world.insert_resource(scorer);
    }

    /// The fit's worker pool: a caller that steps the fit in a loop runs the loop inside
    /// `pool.install` so that a step costs no hand-over between threads.
    pub fn pool(&self) -> Arc<rayon::ThreadPool> {
        self.pool.clone()
    }

    pub fn progress(&mut self) -> Progress {
        progress(&mut self.world, self.total)
    }

    /// The per-candidate results so far, in population order.
    pub fn report(&mut self) -> FitReport {
        let mut report = report::collect(&mut self.world);
        report.warnings.clone_from(&self.warnings);
        report
    }

    /// What the fit warned about before its first step (see [`FitReport::warnings`]).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn profile(&self) -> &Profile {
        self.world.resource::<Profile>()
    }

    /// Work of the caller's between passes that ran on every core, `secs` of one-thread time
    /// ([`crate::trace::Trace::spread`]). Nothing when not traced.
    pub fn spread_trace(&mut self, secs: f64) {
        if let Some(trace) = self.world.resource_mut::<Profile>().trace.as_mut() {
            trace.spread(secs.max(0.0));
        }
    }

    /// Ends one iteration of a caller's loop in a traced fit ([`crate::trace`]): the time since
    /// `top` (then reset), `beside` of it spent beside the pass (serial, and on every core).
    /// Nothing when not traced.
    pub fn close_trace(&mut self, top: &mut Instant, beside: (f64, f64)) {
        close_trace(&mut self.world, top, beside);
    }

    /// Each candidate's data set (by population index), for candidates fitted to data: what
    /// [`crate::report::plots`] draws the fitted curves against.
    pub fn datasets(&mut self) -> std::collections::BTreeMap<usize, Arc<Dataset>> {
        let mut q = self.world.query::<(&Candidate, &FitSpec)>();
        q.iter(&self.world)
            .filter_map(|(c, spec)| Some((c.index, spec.data.clone()?)))
            .collect()
    }

    /// The fitted curves of the best `top` candidates of `report` that were fitted to data with
    /// one input column, by population index: what [`crate::report::plots`] draws.
    pub fn curves(
        &mut self,
        report: &FitReport,
        top: usize,
    ) -> std::collections::BTreeMap<usize, report::curve::Curve> {
        let wanted: Vec<usize> = report.ranking().into_iter().take(top).collect();
        let mut q = self.world.query::<(&Candidate, &FitSpec, &Compiled)>();
        q.iter(&self.world)
            .filter_map(|(c, spec, compiled)| {
                let i = wanted
                    .iter()
                    .position(|&w| report.candidates[w].index == c.index)?;
                let result = &report.candidates[wanted[i]];
                if !matches!(result.status, "done" | "converged" | "stopped") {
                    return None;
                }
                Some((c.index, report::curve::of(result, spec, &compiled.0)?))
            })
            .collect()
    }

    /// The world, for inspection (tests, tools).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }
}

/// One schedule run, timed into the profile's wall time; whether work remains.
fn step(world: &mut World, schedule: &mut Schedule, total: usize) -> bool {
    let start = Instant::now();
    schedule.run(world);
    // What bevy's `App::update` does after every frame: despawned components are recorded as
    // removal messages until the trackers are cleared, which would grow without bound.
    world.clear_trackers();
    world.resource_mut::<Profile>().wall += start.elapsed();
    // Only the statuses: a search steps without reading progress (a progress count reads
    // every candidate's history, in the serial part between passes).
    let mut statuses = world.query::<&Status>();
    statuses.iter(world).filter(|s| s.is_final()).count() < total
}

fn close_trace(world: &mut World, top: &mut Instant, beside: (f64, f64)) {
    if let Some(trace) = world.resource_mut::<Profile>().trace.as_mut() {
        let now = Instant::now();
        trace.close((now - *top).as_secs_f64(), beside);
        *top = now;
    }
}

fn progress(world: &mut World, total: usize) -> Progress {
    let (mut finished, mut work_done, mut work_total) = (0, 0, 0);
    let mut best_loss: Option<f64> = None;
    for (status, spec, history) in world.query::<(&Status, &FitSpec, &History)>().iter(world) {
        let steps = u64::from(spec.steps);
        work_total += steps;
        if status.is_final() {
            finished += 1;
            work_done += steps;
        } else {
            work_done += u64::from(history.steps).min(steps);
        }
        let last = history.losses.last().into_iter().flatten();
        for &l in last.filter(|l| l.is_finite()) {
            best_loss = Some(best_loss.map_or(l, |b| b.min(l)));
        }
    }
    Progress {
        finished,
        total,
        steps: world.resource::<Profile>().counters.steps,
        work_done,
        work_total,
        best_loss,
    }
}

/// The stages, one system per set, sets chained, on the single-threaded executor, with lane
/// groups evaluated in precision `R`. The GPU stage is added by [`Fit::with_members`]; the
/// merge-masks set has no system of its own (its work runs in the optimize stage's pass, see
/// `stages/merge_masks.rs`), and the backward passes run inside the replay and walk stages'.
pub fn stage_schedule<R: Real>() -> Schedule {
    let mut schedule = Schedule::default();
    schedule.set_executor(SingleThreadedExecutor::new());
    for pair in Stage::ALL.windows(2) {
        schedule.configure_sets(pair[1].after(pair[0]));
    }
    schedule.add_systems((
        stages::decode::decode.in_set(Stage::Decode),
        stages::schedule::schedule::<R>.in_set(Stage::Schedule),
        stages::replay::replay::<R>
            .in_set(Stage::Replay)
            .run_if(stages::pipeline::stepped),
        stages::walk::walk::<R>
            .in_set(Stage::Walk)
            .run_if(stages::pipeline::stepped),
        stages::backward::backward::<R>
            .in_set(Stage::Backward)
            .run_if(stages::pipeline::stepped),
        stages::optimize::optimize
            .in_set(Stage::Optimize)
            .run_if(stages::pipeline::stepped),
        stages::pipeline::pipeline::<R>
            .in_set(Stage::Optimize)
            .after(stages::optimize::optimize)
            .run_if(stages::pipeline::pipelined),
    ));
    schedule
}
