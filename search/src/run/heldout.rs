//! Held-out evaluation: a calibration's R² on the points it was not fitted to.
//!
//! A search calibrates every candidate on the training points only — the held-out points would
//! ride every optimizer step for nothing — and evaluates the held-out points once, at each
//! draw's final constants, in one forward walk with the draws as lanes. A lane's numbers do not
//! depend on the batch it rides in (docs/language-reference.md §9.1), so this is bit for bit the R²
//! a fit that carried the held-out lanes along would report.

use ndvm_components::prelude::*;
use ndvm_components::scene::Precision;
use ndvm_engine::prelude::*;
use ndvm_systems::loss::{self, LaneAxes};
use ndvm_systems::machine::bind;
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
    };
    (train, held)
}

impl HeldOut {
    /// Whether there are held-out points to score.
    pub fn has_data(&self) -> bool {
        self.data.is_some()
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
        let Some(data) = self.data.clone() else {
            return none;
        };
        let spec = FitSpec {
            params: params.to_vec(),
            bounds: Vec::new(),
            restarts,
            loss: Loss::Mse,
            data: Some(data.clone()),
            shared: self.shared.clone(),
            optimizer: Default::default(),
            steps: 0,
            tolerance: None,
        };
        let names = spec.input_names();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let Ok(program) = self.programs.get_with(src, &names, &self.primitives) else {
            return none;
        };
        let values = ParamValues(values.to_vec());
        let lanes: Vec<usize> = (0..spec.lanes()).collect();
        let out = match self.precision {
            Precision::F32 => with_vm(&F32, |vm| {
                outputs(vm, &program, &bind(&lanes, &spec, &values))
            }),
            Precision::F64 => with_vm(&F64, |vm| {
                outputs(vm, &program, &bind(&lanes, &spec, &values))
            }),
        };
        let Some(out) = out else {
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
}

/// The program's output per lane, widened to f64.
fn outputs<R: Real>(vm: &mut Vm<R>, program: &Program, b: &Bindings<R>) -> Option<Vec<f64>> {
    let v = vm.eval(program, b, false).ok()?;
    vm.numbers(v)
        .map(|xs| xs.into_iter().map(Real::to_f64).collect())
}
