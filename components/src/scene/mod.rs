//! Scene files: a population of candidate programs to fit, written in RON.
//!
//! A scene says what to fit (candidates), what to fit (parameters with initial values,
//! restarts and bounds), against what (the program's own output, or a data column), how
//! (optimizer, steps, wall-clock budget, threads) and where the results go. Every struct refuses
//! unknown fields and enums are externally tagged, so a typo is an error with its line and
//! column rather than a silently ignored setting.
//!
//! ```
//! use ndvm_components::scene::{Scene, Loss};
//!
//! let scene = Scene::from_ron(r#"
//! Scene(
//!     candidates: [Inline(name: "decay", src: "(* a (exp (- 0 (* b x))))")],
//!     parameters: Parameters(names: ["a", "b"], init: {"a": 1.0, "b": 0.1}),
//!     data: Some(Csv(path: "decay.csv", columns: {"x": "t"}, target: "y")),
//!     loss: Mse,
//!     optimizer: Adam(lr: 0.05),
//!     steps: 200,
//! )"#).unwrap();
//! assert_eq!(scene.loss, Loss::Mse);
//! assert_eq!(scene.parameters.restarts.count, 1);
//! ```
//!
//! A search scene's `search:` section is [`search`].

pub mod search;

use crate::optimizer::{Bounds, Optimizer};
use search::{Search, Success};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A whole scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// The candidate programs, in order (a stream contributes its lines in order).
    pub candidates: Vec<Candidates>,
    #[serde(default)]
    pub parameters: Parameters,
    /// Inputs every candidate sees, the same in every lane: numbers, or matrices read from a
    /// CSV file (a header row, then one row of numbers per matrix row), e.g. an observation
    /// sequence that a program reads row by row with `ref`.
    #[serde(default)]
    pub inputs: BTreeMap<String, SceneInput>,
    /// Data to fit against (required by [`Loss::Mse`]).
    #[serde(default)]
    pub data: Option<Data>,
    #[serde(default)]
    pub loss: Loss,
    /// How constants move; see [`Scene::optimizer`] for the default.
    #[serde(
        default,
        deserialize_with = "crate::optimizer::written",
        skip_serializing_if = "Option::is_none"
    )]
    pub optimizer: Option<Optimizer>,
    /// Optimizer steps per candidate (for Levenberg–Marquardt and L-BFGS: evaluations).
    #[serde(default = "defaults::steps")]
    pub steps: u32,
    /// Stop a candidate early when its loss changes by less than this between steps.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Wall-clock budget for the whole population, in seconds.
    #[serde(default)]
    pub budget_seconds: Option<f64>,
    /// Worker threads (default: one per core). Results do not depend on it.
    #[serde(default)]
    pub threads: Option<usize>,
    /// Walk every candidate on every step instead of replaying its recorded tape while the
    /// tape's guards hold (the reference behaviour: the same results, more time).
    #[serde(default)]
    pub walk_every_step: bool,
    /// The payload precision of the evaluator: `Some(F32)` or `Some(F64)`. Default: f64 for
    /// `ndvm fit`, f32 (the reference protocol's) for `ndvm search`. Parameters, losses and
    /// the optimizer are f64 either way.
    #[serde(default)]
    pub precision: Option<Precision>,
    /// Where replayed tapes run: `Cpu`, `Gpu` (every group the device can run; needs `F32`)
    /// or `Auto` (the default: a group wide and dense enough to win, on a hardware GPU).
    #[serde(default)]
    pub device: Option<Device>,
    #[serde(default)]
    pub outputs: Outputs,
    /// Makes this a search scene (`ndvm search`): proposers keep refilling the population.
    #[serde(default)]
    pub search: Option<Search>,
}

const LM_NEEDS_MSE: &str = "`LevenbergMarquardt` fits residuals and needs `loss: Mse`; \
                            use `Lbfgs` or `Adam` for other losses";

mod defaults {
    pub fn steps() -> u32 {
        50
    }
    pub fn one() -> u32 {
        1
    }
    pub fn train() -> f64 {
        1.0
    }
    pub fn substeps() -> u32 {
        10
    }
}

/// The evaluator's number type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Precision {
    /// Single precision: the reference systems' choice; transcendentals vectorize over lanes.
    F32,
    /// Double precision: for likelihoods that need it.
    #[default]
    F64,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Where a fit's replayed tapes run (docs/gpu.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Device {
    /// The CPU replay only.
    Cpu,
    /// The GPU for every lane group it can run (a custom primitive keeps a group on the CPU).
    Gpu,
    /// The GPU for groups its cost model says it wins on, when a hardware GPU is present.
    #[default]
    Auto,
}

impl Device {
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
            Device::Auto => "auto",
        }
    }
}

/// One shared input of a scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SceneInput {
    Number(f64),
    /// A matrix from a CSV file (relative to the scene file).
    MatrixCsv(String),
}

/// Where candidate programs come from. Paths are relative to the scene file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Candidates {
    /// A program written in the scene, optionally with its own parameters and data (which
    /// replace the scene's for this candidate: a population of different laws, each with its
    /// own constants and measurements).
    Inline {
        name: String,
        src: String,
        /// `src` is `.nbc` bytecode assembly (run by the bytecode client), not dialect source.
        #[serde(default)]
        bytecode: bool,
        #[serde(default)]
        parameters: Option<Box<Parameters>>,
        #[serde(default)]
        data: Option<Box<Data>>,
    },
    /// A program file; its name is the file stem. A `.nbc` file is bytecode assembly, run by
    /// the bytecode client; anything else is dialect source.
    File(String),
    /// A JSON-lines stream, one candidate a line with `src` and `params` (parameter names), as
    /// in the reference co-search streams (`testdata/cosearch/`), read by
    /// [`crate::candidate_stream`]; `take` limits how many candidates are read (skipped
    /// malformed lines do not count).
    Stream {
        path: String,
        #[serde(default)]
        take: Option<usize>,
    },
}

/// The parameters every candidate fits (a stream's lines may name their own).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameters {
    #[serde(default)]
    pub names: Vec<String>,
    /// Initial values (0 for a parameter not listed).
    #[serde(default)]
    pub init: BTreeMap<String, f64>,
    #[serde(default)]
    pub restarts: Restarts,
    #[serde(default)]
    pub bounds: BTreeMap<String, Bounds>,
}

/// Random restarts, each a lane: restart 0 starts at `init`, the others at
/// `init + scale·N(0, 1)` drawn from `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restarts {
    #[serde(default = "defaults::one")]
    pub count: u32,
    #[serde(default)]
    pub scale: f64,
    #[serde(default)]
    pub seed: u64,
}

impl Default for Restarts {
    fn default() -> Self {
        Restarts {
            count: 1,
            scale: 0.0,
            seed: 0,
        }
    }
}

/// A data set: each row is a data point (a lane); columns bind program inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Data {
    /// CSV with a header row. `columns` maps program input names to column names; `target`
    /// names the column the program's output is fitted to.
    Csv {
        path: String,
        columns: BTreeMap<String, String>,
        target: String,
        #[serde(default)]
        split: Split,
        /// Leave out rows with a NaN or infinite cell in a used column (counted in the
        /// warnings) instead of refusing the file.
        #[serde(default)]
        drop_non_finite: bool,
    },
    /// Data made by a program with known constants on a grid, plus seeded Gaussian noise:
    /// `noise` relative to the output's standard deviation over the grid, or `noise_sd` in the
    /// output's own units.
    Synthetic {
        program: String,
        #[serde(default)]
        constants: BTreeMap<String, f64>,
        inputs: BTreeMap<String, Grid>,
        #[serde(default)]
        noise: f64,
        #[serde(default)]
        noise_sd: f64,
        #[serde(default)]
        seed: u64,
        #[serde(default)]
        split: Split,
    },
    /// Time series of a system's states, one or several trajectories in one CSV file. Each
    /// candidate is a right-hand side, `(define (rhs t x y …) [dx dy …])` (its arguments the time
    /// and the states in the order of `states`, its value their derivatives as a vector), which
    /// the fit integrates over every trajectory from its first observation; the loss is the
    /// squared distance to every later observation, each state divided by its spread
    /// (docs/fitting.md, "Trajectories").
    Trajectory {
        path: String,
        /// The time column.
        time: String,
        /// The states' columns, in the order `rhs` takes the states.
        states: Vec<String>,
        /// The column naming each row's trajectory (a trajectory's rows together); without
        /// it the file is one trajectory.
        #[serde(default)]
        id: Option<String>,
        /// Runge–Kutta (RK4) steps between two observations.
        #[serde(default = "defaults::substeps")]
        substeps: u32,
        /// Observation intervals each integration runs before it starts again from the data
        /// (multiple shooting: `Some(1)` compares every observation with one interval's
        /// prediction from the one before); without it, each trajectory is one integration from
        /// its first observation. Short windows keep a calibration from being hostage to one
        /// bad local minimum of a long or oscillating trajectory (docs/fitting.md).
        #[serde(default)]
        window: Option<u32>,
        /// Trajectories (by `id`) a search does not fit but scores its candidates on (their
        /// held-out R², `success: HeldOutR2(..)`): a second initial condition predicted.
        #[serde(default)]
        held_out: Vec<String>,
        /// States the model carries but the file does not hold (`rhs` takes them after
        /// `states`, in this order): each one's value at every trajectory's start is a parameter
        /// the fit calibrates (`<name>_0`), starting from `start`.
        #[serde(default)]
        hidden: Vec<Hidden>,
        /// Calibrate the observed states' values at each trajectory's start too (parameters
        /// `<state>_0`, starting from the first observation), instead of taking the first
        /// observation as exact: a noisy first row then does not pin the whole trajectory.
        #[serde(default)]
        fit_start: bool,
    },
}

/// A state of a `Trajectory`'s model that the data do not hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hidden {
    pub name: String,
    /// Where its starting value's calibration starts.
    #[serde(default)]
    pub start: f64,
}

/// Values of one synthetic input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Grid {
    /// `n` evenly spaced values from `start` to `end`, both included.
    Linspace(f64, f64, usize),
    /// `n` values drawn uniformly from `[low, high)`, independently for every input (seeded by
    /// the data's `seed` and the input's position): inputs that vary independently, so that a
    /// law of several variables is identifiable from the data.
    Uniform(f64, f64, usize),
    Values(Vec<f64>),
}

/// The train/held-out split: a seeded shuffle keeps `train` of the points for fitting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Split {
    #[serde(default = "defaults::train")]
    pub train: f64,
    #[serde(default)]
    pub seed: u64,
}

impl Default for Split {
    fn default() -> Self {
        Split {
            train: 1.0,
            seed: 0,
        }
    }
}

/// What a fit minimizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Loss {
    /// The program's own output (a negative log-likelihood, say).
    #[default]
    Output,
    /// Mean squared error between the output and the data's target column, over the training
    /// points (the data points are lanes).
    Mse,
    /// The program's output, which is a negative log-likelihood: minimized like `Output`, and
    /// the constants' standard errors come from the inverse Hessian.
    NegLogLikelihood,
}

/// Where results go (paths relative to the working directory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outputs {
    #[serde(default)]
    pub results: Option<String>,
    /// Per-step losses, one row per candidate, restart and step.
    #[serde(default)]
    pub losses_csv: Option<String>,
}

/// A scene that could not be read: the message and where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct SceneError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

/// RON's message, or a clearer one where RON's would mislead a scene's author.
fn explain(code: &ron::Error) -> String {
    match code {
        ron::Error::ExpectedOption => "this setting is optional: write its value inside \
             `Some(...)` (e.g. `data: Some(Csv(...))`), or `None`"
            .into(),
        ron::Error::SuggestRawIdentifier(found) => format!(
            "found `{found}` where a named form is expected: an input is `Number({found})` or \
             `MatrixCsv(\"file.csv\")`, a grid `Values([...])`, `Linspace(lo, hi, n)` or \
             `Uniform(lo, hi, n)` (scenes/README.md lists them all)"
        ),
        other => other.to_string(),
    }
}

impl Scene {
    /// Reads a scene from RON text.
    pub fn from_ron(text: &str) -> Result<Scene, SceneError> {
        let scene: Scene = crate::bare_names::from_str(text).map_err(|e| SceneError {
            message: explain(&e.code),
            line: e.span.start.line,
            column: e.span.start.col,
        })?;
        scene.check().map_err(|e| {
            let (line, column) = crate::parameter_names::locate_field(text, &e.message)
                .unwrap_or((e.line, e.column));
            SceneError { line, column, ..e }
        })?;
        scene.check_parameter_names().map_err(|e| {
            let (line, column) = crate::parameter_names::locate(text, &e.key).unwrap_or((1, 1));
            SceneError {
                message: e.message,
                line,
                column,
            }
        })?;
        Ok(scene)
    }

    /// The checks [`Scene::from_ron`] makes once a scene is parsed, for a scene read another way
    /// (a Python dict as JSON): the same messages, without a location.
    pub fn checked(self) -> Result<Scene, String> {
        self.check().map_err(|e| e.message)?;
        self.check_parameter_names().map_err(|e| e.message)?;
        Ok(self)
    }

    /// Every `init` and `bounds` key names a declared parameter (the scene's, or an inline
    /// candidate's own).
    fn check_parameter_names(&self) -> Result<(), crate::parameter_names::UnknownKey> {
        crate::parameter_names::check(&self.parameters, "the scene")?;
        for c in &self.candidates {
            if let Candidates::Inline {
                name,
                parameters: Some(p),
                ..
            } = c
            {
                crate::parameter_names::check(p, &format!("candidate `{name}`"))?;
            }
        }
        Ok(())
    }

    /// The optimizer a fit uses: the scene's, or by default Levenberg–Marquardt for `loss: Mse`
    /// (it needs the fewest evaluations: docs/fitting.md) and Adam for other losses.
    pub fn optimizer(&self) -> Optimizer {
        self.optimizer.unwrap_or(match self.loss {
            Loss::Mse => Optimizer::levenberg_marquardt(),
            Loss::Output | Loss::NegLogLikelihood => Optimizer::default(),
        })
    }

    /// What RON cannot say: an MSE loss needs data, restarts and splits must make sense.
    fn check(&self) -> Result<(), SceneError> {
        let fail = |message: String| {
            Err(SceneError {
                message,
                line: 1,
                column: 1,
            })
        };
        if let Some(Data::Trajectory {
            time,
            states,
            id,
            substeps,
            held_out,
            window,
            hidden,
            fit_start,
            ..
        }) = &self.data
        {
            if *window == Some(0) {
                return fail("`window` counts observation intervals: at least 1".into());
            }
            if *window == Some(1) && (!hidden.is_empty() || *fit_start) {
                return fail(
                    "`window: Some(1)` starts every interval from the data: it cannot have \
                     `hidden` states or `fit_start` (use a longer window, or none)"
                        .into(),
                );
            }
            if !hidden.is_empty() && !held_out.is_empty() {
                return fail(
                    "a held-out trajectory's `hidden` states have no known start: a search \
                     with `hidden` states scores on `success: TrainLoss(..)`"
                        .into(),
                );
            }
            if self.search.is_none() && !held_out.is_empty() {
                return fail(
                    "a fit calibrates on every trajectory: `held_out` trajectories are for a search"
                        .into(),
                );
            }
            if !held_out.is_empty() && id.is_none() {
                return fail(
                    "`held_out` names trajectories by their `id` column: give `id`".into(),
                );
            }
            // One interval at a time is least squares over data points; longer integrations
            // are the program's own output.
            match (window, self.loss) {
                (Some(1), Loss::Mse) => {}
                (Some(1), _) => {
                    return fail(
                        "a `Trajectory` with `window: Some(1)` is fitted by least squares, one \
                         interval at a time: write `loss: Mse`"
                            .into(),
                    );
                }
                (_, Loss::Output) => {}
                _ => {
                    return fail(
                        "a `Trajectory`'s loss is the integrated model's distance to it: leave \
                         `loss` out (or fit one interval at a time: `window: Some(1)`, `loss: Mse`)"
                            .into(),
                    );
                }
            }
            check_trajectory(time, states, (hidden, *fit_start), id.as_deref(), *substeps)
                .or_else(fail)?;
        }
        if let Some(search) = &self.search {
            self.check_search(search).or_else(fail)?;
        } else if self.candidates.is_empty() {
            return fail("a scene needs at least one candidate".into());
        }
        if let Some(s) = self.budget_seconds {
            crate::limits::check_seconds("`budget_seconds`", s).or_else(fail)?;
        }
        if let Some(o) = &self.optimizer {
            o.check().or_else(fail)?;
            if matches!(o, Optimizer::LevenbergMarquardt { .. }) && self.loss != Loss::Mse {
                return fail(LM_NEEDS_MSE.into());
            }
        }
        let own_data = |c: &Candidates| matches!(c, Candidates::Inline { data: Some(_), .. });
        if self.loss == Loss::Mse && self.data.is_none() && !self.candidates.iter().all(own_data) {
            return fail("`loss: Mse` needs `data` (for the scene or for every candidate)".into());
        }
        let mut splits: Vec<&Data> = self.data.iter().collect();
        for c in &self.candidates {
            if let Candidates::Inline {
                data: Some(d),
                parameters,
                ..
            } = c
            {
                if matches!(**d, Data::Trajectory { .. }) {
                    return fail(
                        "a candidate's own `data` cannot be a `Trajectory`: give it as the scene's `data`"
                            .into(),
                    );
                }
                splits.push(d);
                if parameters.as_ref().is_some_and(|p| p.restarts.count == 0) {
                    return fail("`restarts.count` must be at least 1".into());
                }
            }
        }
        if self.parameters.restarts.count == 0 {
            return fail("`restarts.count` must be at least 1".into());
        }
        let blocks = self.candidates.iter().filter_map(|c| match c {
            Candidates::Inline {
                parameters: Some(p),
                ..
            } => Some(p.names.len()),
            _ => None,
        });
        if let Some(n) = blocks
            .chain([self.parameters.names.len()])
            .find(|&n| n > crate::limits::PARAMS)
        {
            return fail(format!(
                "`names` lists {n} parameters, over the limit of {}",
                crate::limits::PARAMS
            ));
        }
        let inline_params = self.candidates.iter().filter_map(|c| match c {
            Candidates::Inline {
                parameters: Some(p),
                ..
            } => Some(p.restarts.count),
            _ => None,
        });
        if let Some(n) = inline_params
            .chain([self.parameters.restarts.count])
            .find(|&n| n > crate::limits::RESTARTS)
        {
            return fail(format!(
                "`restarts.count` is {n}, over the limit of {}",
                crate::limits::RESTARTS
            ));
        }
        if let Some(t) = self.threads.filter(|&t| t > crate::limits::THREADS) {
            return fail(format!(
                "`threads` is {t}, over the limit of {}",
                crate::limits::THREADS
            ));
        }
        let mut all_values = 0usize;
        for d in &splits {
            if let Data::Synthetic { inputs, .. } = d {
                let values: usize = inputs
                    .values()
                    .map(|g| match g {
                        Grid::Linspace(_, _, n) | Grid::Uniform(_, _, n) => *n,
                        Grid::Values(v) => v.len(),
                    })
                    .fold(0, usize::saturating_add);
                all_values = all_values.saturating_add(values);
                for (name, grid) in inputs {
                    let n = match grid {
                        Grid::Linspace(_, _, n) | Grid::Uniform(_, _, n) => *n,
                        Grid::Values(v) => v.len(),
                    };
                    if n > crate::limits::POINTS {
                        return fail(format!(
                            "input `{name}` has {n} points, over the limit of {}",
                            crate::limits::POINTS
                        ));
                    }
                }
                if all_values > crate::limits::DATA_VALUES {
                    return fail(format!(
                        "the synthetic data hold {all_values} values (points × inputs, over all \
                         data sets), over the limit of {}",
                        crate::limits::DATA_VALUES
                    ));
                }
            }
            if let Data::Synthetic {
                noise, noise_sd, ..
            } = d
            {
                let ok = |x: f64| x.is_finite() && x >= 0.0;
                if !ok(*noise) || !ok(*noise_sd) || (*noise > 0.0 && *noise_sd > 0.0) {
                    return fail(
                        "synthetic data takes one of `noise` (relative) or `noise_sd` \
                         (absolute), finite and ≥ 0"
                            .into(),
                    );
                }
            }
        }
        for d in splits {
            let (Data::Csv { split, .. } | Data::Synthetic { split, .. }) = d else {
                continue;
            };
            if !(split.train > 0.0 && split.train <= 1.0) {
                return fail(format!(
                    "`split.train` must be in (0, 1], got {}",
                    split.train
                ));
            }
        }
        Ok(())
    }

    /// A search scene: its own checks, and no settings that the search would silently ignore.
    fn check_search(&self, search: &Search) -> Result<(), String> {
        search.check()?;
        if search.proposers.is_empty() && self.candidates.is_empty() {
            return Err("a search needs at least one proposer (or seed candidates)".into());
        }
        if self.steps != defaults::steps() {
            return Err("in a search scene, write `steps` in `search.calibration`".into());
        }
        if self.optimizer.is_some() {
            return Err("in a search scene, write `optimizer` in `search.calibration`".into());
        }
        if matches!(
            search.calibration.optimizer,
            Optimizer::LevenbergMarquardt { .. }
        ) && self.loss != Loss::Mse
        {
            return Err(LM_NEEDS_MSE.into());
        }
        if self.tolerance.is_some() {
            return Err("in a search scene, write `tolerance` in `search.calibration`".into());
        }
        if self.parameters.restarts != Restarts::default() {
            return Err(
                "in a search scene, draws are set by `search.calibration` (`draws`, `draw`), \
                 not `parameters.restarts`"
                    .into(),
            );
        }
        if self.budget_seconds.is_some() {
            return Err("in a search scene, write the budget in `search.budget`".into());
        }
        if let Success::HeldOutR2(_) = search.success {
            let held_out = match &self.data {
                Some(Data::Csv { split, .. } | Data::Synthetic { split, .. }) => {
                    split.train < 1.0 && self.loss == Loss::Mse
                }
                Some(Data::Trajectory { held_out, .. }) => {
                    if held_out.is_empty() {
                        return Err(
                            "`success: HeldOutR2(..)` on trajectories needs trajectories \
                                    to hold out (`held_out: [\"…\"]`, by id); or use \
                                    `success: TrainLoss(..)`"
                                .into(),
                        );
                    }
                    true
                }
                None => false,
            };
            if !held_out {
                return Err(
                    "`success: HeldOutR2(..)` needs `loss: Mse` and `data` with a \
                            held-out split (`split: Split(train: 0.7)`)"
                        .into(),
                );
            }
        }
        Ok(())
    }
}

/// Whether the dialect reads `name` as one symbol (a state's name becomes one).
fn readable(name: &str) -> bool {
    !name.is_empty()
        && !name.contains(|c: char| c.is_whitespace() || "()[]\";'`,".contains(c))
        && name.parse::<f64>().is_err()
}

/// Most states a trajectory's model may have.
pub const TRAJECTORY_STATES: usize = 64;
/// Most RK4 steps between two observations.
pub const SUBSTEPS: u32 = 10_000;

/// A `Trajectory`'s columns and sub-steps.
fn check_trajectory(
    time: &str,
    states: &[String],
    (hidden, fit_start): (&[Hidden], bool),
    id: Option<&str>,
    substeps: u32,
) -> Result<(), String> {
    if states.is_empty() {
        return Err("a `Trajectory` needs at least one state in `states`".into());
    }
    if states.len() + hidden.len() > TRAJECTORY_STATES {
        return Err(format!(
            "a `Trajectory` lists {} states, over the limit of {TRAJECTORY_STATES}",
            states.len() + hidden.len()
        ));
    }
    for (i, h) in hidden.iter().enumerate() {
        let named = |n: &String| n == &h.name;
        if h.name == time || id == Some(h.name.as_str()) || states.iter().any(named) {
            return Err(format!(
                "the hidden state `{}` has a column's name: a hidden state is not in the file",
                h.name
            ));
        }
        if hidden[..i].iter().any(|o| o.name == h.name) {
            return Err(format!("the hidden state `{}` is listed twice", h.name));
        }
        if !readable(&h.name) {
            return Err(format!(
                "the hidden state `{}` is not a name the dialect can read",
                h.name
            ));
        }
        if !h.start.is_finite() {
            return Err(format!(
                "the hidden state `{}` starts at {}: not a finite number",
                h.name, h.start
            ));
        }
    }
    let mut columns: Vec<&str> = vec![time];
    columns.extend(id);
    for s in states {
        if columns.contains(&s.as_str()) {
            return Err(format!(
                "the column `{s}` is named twice among the `Trajectory`'s time, id and states"
            ));
        }
        columns.push(s);
    }
    if id == Some(time) {
        return Err(format!("the column `{time}` is both the time and the id"));
    }
    if fit_start && let Some(s) = states.iter().find(|s| !readable(s)) {
        return Err(format!(
            "`fit_start` names a parameter after each state, and `{s}` is not a name the \
             dialect can read: rename the column"
        ));
    }
    if !(1..=SUBSTEPS).contains(&substeps) {
        return Err(format!(
            "`substeps` must be between 1 and {SUBSTEPS}, got {substeps}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALMAN: &str = r#"
Scene(
    candidates: [File("kalman2d.scm")],
    parameters: Parameters(
        names: ["q", "r"],
        init: {"q": 0.5, "r": 0.5},
        restarts: Restarts(count: 16, scale: 0.1, seed: 7),
        bounds: {"q": Bounds(min: Some(1e-4)), "r": Bounds(min: Some(1e-4))},
    ),
    optimizer: Adam(lr: 0.02),
    steps: 30,
    outputs: Outputs(results: Some("kalman.results.json")),
)"#;

    #[test]
    fn reads_a_likelihood_fit() {
        let s = Scene::from_ron(KALMAN).expect("scene");
        assert_eq!(s.candidates, vec![Candidates::File("kalman2d.scm".into())]);
        assert_eq!(s.loss, Loss::Output);
        assert_eq!(s.parameters.restarts.count, 16);
        assert_eq!(s.parameters.bounds["q"].clamp(-1.0), 1e-4);
        assert_eq!(s.steps, 30);
        assert_eq!(s.threads, None);
    }

    #[test]
    fn reads_a_synthetic_data_fit_and_a_stream() {
        let s = Scene::from_ron(
            r#"Scene(
                candidates: [Stream(path: "scalar_stream_247.jsonl", take: Some(10))],
                data: Some(Synthetic(
                    program: "(* (exp (* -0.3 x)) (cos (* 2 x)))",
                    constants: {},
                    inputs: {"x": Linspace(0.1, 6.0, 64)},
                    noise: 0.02,
                    seed: 1,
                    split: Split(train: 0.7, seed: 3),
                )),
                loss: Mse,
            )"#,
        )
        .expect("scene");
        let Some(Data::Synthetic { inputs, split, .. }) = &s.data else {
            panic!("synthetic data");
        };
        assert_eq!(inputs["x"], Grid::Linspace(0.1, 6.0, 64));
        assert_eq!(split.train, 0.7);
        assert_eq!(s.steps, 50);
    }

    #[test]
    fn misleading_ron_messages_are_explained() {
        let e = Scene::from_ron(
            "Scene(candidates: [File(\"m.scm\")],\n data: Csv(path: \"d.csv\", columns: {}, target: \"y\"))",
        )
        .expect_err("no Some");
        assert!(
            e.message
                .starts_with("this setting is optional: write its value inside `Some(...)`"),
            "{}",
            e.message
        );
        assert_eq!((e.line, e.column), (2, 7));
        let e = Scene::from_ron("Scene(candidates: [File(\"m.scm\")], inputs: {\"t0\": 1.0})")
            .expect_err("bare number");
        assert!(
            e.message.starts_with(
                "found `1.0` where a named form is expected: an input is `Number(1.0)`"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_typo_is_an_error_with_its_line_and_column() {
        let text = KALMAN.replace("steps: 30", "setps: 30");
        let e = Scene::from_ron(&text).expect_err("typo");
        assert!(e.message.contains("setps"), "{e}");
        let line = text
            .lines()
            .position(|l| l.contains("setps"))
            .expect("line")
            + 1;
        assert_eq!(e.line, line, "{e}");
        assert!(e.column > 1, "{e}");
        let e = Scene::from_ron(&KALMAN.replace("Adam(", "Adma(")).expect_err("variant");
        assert!(e.message.contains("Adma"), "{e}");
    }

    #[test]
    fn inconsistent_scenes_are_refused() {
        let e = Scene::from_ron(r#"Scene(candidates: [File("a.scm")], loss: Mse)"#)
            .expect_err("mse without data");
        assert!(e.message.contains("needs `data`"), "{e}");
        let e = Scene::from_ron("Scene(candidates: [])").expect_err("empty");
        assert!(e.message.contains("at least one candidate"), "{e}");
    }
}
