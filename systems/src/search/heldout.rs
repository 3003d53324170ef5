//! Held-out evaluation: a calibration's R² on the points it was not fitted to.
//!
//! A search calibrates every candidate on the training points only — the held-out points would
//! ride every optimizer step for nothing — and evaluates the held-out points once, at each
//! draw's final constants, in one forward walk with the draws as lanes. A lane's numbers do not
//! depend on the batch it rides in (docs/language-reference.md §9.1), so this is bit for bit the R²
//! a fit that carried the held-out lanes along would report.

use crate::loss::{self, LaneAxes};
use crate::stages::walk::bind;
use ndvm_components::prelude::*;
use ndvm_components::scene::Precision;
use ndvm_engine::prelude::*;
use rayon::prelude::*;
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

/// One evaluation: a candidate's source, its parameter names and each draw's final constants
/// (`finals[draw][param]`).
#[derive(Debug)]
pub struct Job<'a> {
    pub src: &'a str,
    pub params: &'a [String],
    pub finals: Vec<Vec<f64>>,
}

#[derive(Debug)]
enum Evaluator {
    F32(Vm<f32>),
    F64(Vm<f64>),
}

impl Evaluator {
    fn new(precision: Precision) -> Evaluator {
        match precision {
            Precision::F32 => Evaluator::F32(Vm::default()),
            Precision::F64 => Evaluator::F64(Vm::default()),
        }
    }
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
    /// The held-out R² of each draw of each job at its final constants; `None` for a draw whose
    /// evaluation fails or without held-out data. The jobs run in parallel (rayon), each walk
    /// sequential: the figures do not depend on the thread count.
    pub fn r2_all(&mut self, jobs: &[Job<'_>]) -> Vec<Vec<Option<f64>>> {
        if self.programs.len() > CACHE_LIMIT {
            self.programs = ProgramCache::default();
        }
        let this = &*self;
        jobs.par_iter()
            .map_init(
                || Evaluator::new(this.precision),
                |vm, j| this.r2(vm, j.src, j.params, &j.finals),
            )
            .collect()
    }

    /// One job of [`HeldOut::r2_all`], on the evaluator `vm`.
    fn r2(
        &self,
        vm: &mut Evaluator,
        src: &str,
        params: &[String],
        finals: &[Vec<f64>],
    ) -> Vec<Option<f64>> {
        let none = vec![None; finals.len()];
        let Some(data) = self.data.clone() else {
            return none;
        };
        let restarts = finals.len();
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
        let mut values = vec![0.0; params.len() * restarts];
        for (r, draw) in finals.iter().enumerate() {
            for (p, &x) in draw.iter().enumerate().take(params.len()) {
                values[p * restarts + r] = x;
            }
        }
        let values = ParamValues(values);
        let lanes: Vec<usize> = (0..spec.lanes()).collect();
        let out = match vm {
            Evaluator::F32(vm) => outputs(vm, &program, &bind(&lanes, &spec, &values)),
            Evaluator::F64(vm) => outputs(vm, &program, &bind(&lanes, &spec, &values)),
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
