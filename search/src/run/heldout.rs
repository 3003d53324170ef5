//! Held-out evaluation: a calibration's R² on the points it was not fitted to.
//!
//! A search calibrates every candidate on the training points only — the held-out points would
//! ride every optimizer step for nothing — and evaluates the held-out points once, at each
//! draw's final constants, in one forward walk with the draws as lanes. A lane's numbers do not
//! depend on the batch it rides in (docs/language-reference.md §9.1), so this is bit for bit the R²
//! a fit that carried the held-out lanes along would report.
//!
//! A search over trajectories holds out whole trajectories (`held_out`, by id): each draw's
//! right-hand side is integrated over them from their first observations, and its R² is one
//! minus the scaled squared error over the total sum of squares of their later observations
//! ([`Trajectories::total_squares`]) — a second initial condition predicted.

use ndvm_components::prelude::*;
use ndvm_components::scene::Precision;
use ndvm_engine::prelude::*;
use ndvm_systems::loss::{self, LaneAxes};
use ndvm_systems::machine::bind;
use ndvm_systems::population::trajectory::{self, Trajectories};
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::Arc;

/// Decoded programs kept before the cache is cleared.
const CACHE_LIMIT: usize = 4096;

/// The held-out points of a search's data, evaluated for many candidates at once.
#[derive(Debug)]
pub struct HeldOut {
    /// The held-out points alone (`None` without any).
    data: Option<Arc<Dataset>>,
    shared: Arc<SharedInputs>,
    programs: ProgramCache,
    primitives: Registry,
    precision: Precision,
    /// Held-out trajectories and their total sum of squares (a search over trajectories).
    trajectories: Option<(Arc<Trajectories>, f64)>,
}

/// One evaluation: a candidate's source, its parameter names and each draw's final constants,
/// parameter-major (`values[p · restarts + r]`, as [`ParamValues`]).
#[derive(Debug)]
pub struct Job<'a> {
    pub src: &'a str,
    pub params: &'a [String],
    pub values: Vec<f64>,
    pub restarts: usize,
}

thread_local! {
    /// Each thread's evaluators, kept between candidates (their arenas stay allocated).
    static F32: RefCell<Vm<f32>> = RefCell::new(Vm::default());
    static F64: RefCell<Vm<f64>> = RefCell::new(Vm::default());
}

/// Runs `f` on this thread's evaluator `vm` (a fresh one if it is in use).
fn with_vm<R: Real, O>(
    vm: &'static std::thread::LocalKey<RefCell<Vm<R>>>,
    f: impl FnOnce(&mut Vm<R>) -> O,
) -> O {
    vm.with(|cell| match cell.try_borrow_mut() {
        Ok(mut vm) => f(&mut vm),
        Err(_) => f(&mut Vm::default()),
    })
}

/// Splits `data` into its training points (what candidates are fitted to) and an evaluator of
/// the held-out ones.
pub fn split(
    data: Option<&Arc<Dataset>>,
    shared: Arc<SharedInputs>,
    primitives: Registry,
    precision: Precision,
) -> (Option<Arc<Dataset>>, HeldOut) {
    let pick = |d: &Dataset, train: bool| -> Dataset {
        let keep = |xs: &[f64]| -> Vec<f64> {
            xs.iter()
                .zip(&d.train)
                .filter(|(_, t)| **t == train)
                .map(|(x, _)| *x)
                .collect()
        };
        let target = keep(&d.target);
        Dataset {
            dropped_rows: Vec::new(),
            names: d.names.clone(),
            inputs: d.inputs.iter().map(|(k, v)| (k.clone(), keep(v))).collect(),
            train: vec![true; target.len()],
            target,
        }
    };
    let (train, held) = match data {
        Some(d) if d.has_held_out() => (
            Some(Arc::new(pick(d, true))),
            Some(Arc::new(pick(d, false))),
        ),
        other => (other.cloned(), None),
    };
    let held = HeldOut {
        data: held,
        shared,
        programs: ProgramCache::default(),
        primitives,
        precision,
        trajectories: None,
    };
    (train, held)
}

impl HeldOut {
    /// An evaluator of the trajectories `fitted` themselves, integrated whole from their first
    /// observations: the reconstruction R² of a search that calibrates in windows (one
    /// interval, or `window` intervals, at a time), whose loss alone does not show a right-hand
    /// side that drifts away or blows up over the whole trajectory.
    pub fn reconstruction(
        fitted: &Trajectories,
        shared: Arc<SharedInputs>,
        primitives: Registry,
        precision: Precision,
    ) -> HeldOut {
        let mut whole = fitted.clone();
        whole.window = None;
        let mut out = HeldOut {
            data: None,
            shared,
            programs: ProgramCache::default(),
            primitives,
            precision,
            trajectories: None,
        };
        out.hold_trajectories(Arc::new(whole), fitted);
        out
    }

    /// One calibration's R² ([`HeldOut::score`]) at its constants `params`, for the program
    /// `src` of the parameters `names`; `None` where a constant is missing or it fails.
    pub fn one(
        &self,
        src: &str,
        names: &[String],
        params: &std::collections::BTreeMap<String, f64>,
    ) -> Option<f64> {
        let values: Option<Vec<f64>> = names.iter().map(|n| params.get(n).copied()).collect();
        self.score(src, names, &values?, 1)
            .into_iter()
            .next()
            .flatten()
    }

    /// Scores on the trajectories `held` instead of points: `fitted` are the ones candidates
    /// are calibrated on, whose inputs give way to `held`'s (the same names).
    pub fn hold_trajectories(&mut self, held: Arc<Trajectories>, fitted: &Trajectories) {
        let fitted: Vec<String> = fitted.inputs().into_iter().map(|m| m.name).collect();
        let mut shared = (*self.shared).clone();
        shared.matrices.retain(|m| !fitted.contains(&m.name));
        shared.matrices.extend(held.inputs());
        self.shared = Arc::new(shared);
        let total = held.total_squares();
        self.trajectories = Some((held, total));
    }

    /// Whether there are held-out points (or trajectories) to score.
    pub fn has_data(&self) -> bool {
        self.data.is_some() || self.trajectories.is_some()
    }

    /// Bounds the decoded programs kept (the search calls it as it records).
    pub fn trim(&self) {
        if self.programs.len() > CACHE_LIMIT {
            self.programs.clear();
        }
    }

    /// The held-out R² of each draw of each job at its final constants ([`HeldOut::score`]).
    /// The jobs run in parallel (rayon), each walk sequential: the figures do not depend on the
    /// thread count.
    pub fn r2_all(&self, jobs: &[Job<'_>]) -> Vec<Vec<Option<f64>>> {
        jobs.par_iter()
            .map(|j| self.score(j.src, j.params, &j.values, j.restarts))
            .collect()
    }

    /// One candidate's held-out R² per draw, at its final constants `values` (parameter-major
    /// over `restarts` draws); `None` for a draw whose evaluation fails or without held-out
    /// data. Safe to call from any thread: a search's fit calls it in each candidate's last
    /// task ([`ndvm_systems::resources::Scorer`]), the search itself for the rest.
    pub fn score(
        &self,
        src: &str,
        params: &[String],
        values: &[f64],
        restarts: usize,
    ) -> Vec<Option<f64>> {
        let none = vec![None; restarts];
        if let Some((held, total)) = &self.trajectories {
            let program = held.program(trajectory::candidate_of(src));
            let Some(out) = self.outputs(&program, params, values, restarts, None) else {
                return none;
            };
            return out
                .into_iter()
                .map(|sse| (sse.is_finite() && *total > 0.0).then(|| 1.0 - sse / total))
                .collect();
        }
        let Some(data) = self.data.clone() else {
            return none;
        };
        let Some(out) = self.outputs(src, params, values, restarts, Some(data.clone())) else {
            return none;
        };
        let axes = LaneAxes {
            restarts,
            points: data.points(),
        };
        loss::r_squared(axes, &out, &data.target, &data.train)
            .into_iter()
            .map(|r| (!r.is_nan()).then_some(r))
            .collect()
    }

    /// The program's output in every lane (draws × points of `data`), widened to f64.
    fn outputs(
        &self,
        src: &str,
        params: &[String],
        values: &[f64],
        restarts: usize,
        data: Option<Arc<Dataset>>,
    ) -> Option<Vec<f64>> {
        let spec = FitSpec {
            params: params.to_vec(),
            bounds: Vec::new(),
            restarts,
            loss: Loss::Mse,
            data,
            shared: self.shared.clone(),
            optimizer: Default::default(),
            steps: 0,
            tolerance: None,
        };
        let names = spec.input_names();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let program = self.programs.get_with(src, &names, &self.primitives).ok()?;
        let values = ParamValues(values.to_vec());
        let lanes: Vec<usize> = (0..spec.lanes()).collect();
        match self.precision {
            Precision::F32 => with_vm(&F32, |vm| {
                outputs(vm, &program, &bind(&lanes, &spec, &values))
            }),
            Precision::F64 => with_vm(&F64, |vm| {
                outputs(vm, &program, &bind(&lanes, &spec, &values))
            }),
        }
    }
}

/// The program's output per lane, widened to f64.
fn outputs<R: Real>(vm: &mut Vm<R>, program: &Program, b: &Bindings<R>) -> Option<Vec<f64>> {
    let v = vm.eval(program, b, false).ok()?;
    vm.numbers(v)
        .map(|xs| xs.into_iter().map(Real::to_f64).collect())
}
