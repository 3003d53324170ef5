//! The `search:` section of a scene: a population that keeps being refilled.
//!
//! `ndvm fit` calibrates a fixed population; `ndvm search` asks *proposers* for candidates,
//! calibrates each one from fresh random draws (the draws ride as lanes of one walk), writes
//! every calibration to a log as it finishes, feeds the results back to the proposers and stops
//! at a budget. Everything else — data, loss, inputs, bounds, threads — is the scene's own.
//!
//! The defaults are the reference co-search protocol: 50 Adam steps (learning rate 0.05) from
//! parameters drawn as 0.3·N(0, 1), success when the held-out R² exceeds 0.9.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_components::scene::search::{ProposerSpec, Success};
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [],
//!     data: Some(Synthetic(
//!         program: "(* (exp (* -0.3 x)) (cos (* 2 x)))",
//!         constants: {},
//!         inputs: {"x": Linspace(0.1, 6.0, 64)},
//!         noise_sd: 0.02,
//!         split: Split(train: 0.7, seed: 3),
//!     )),
//!     loss: Mse,
//!     search: Some(Search(
//!         proposers: [Stream(path: "scalar_stream_247.jsonl")],
//!         budget: Budget(seconds: Some(10.0)),
//!     )),
//! )"#).unwrap();
//! let search = scene.search.unwrap();
//! assert_eq!(search.calibration.steps, 50);
//! assert_eq!(search.success, Success::HeldOutR2(0.9));
//! assert!(matches!(&search.proposers[0], ProposerSpec::Stream { cycle: true, .. }));
//! ```

use crate::optimizer::Optimizer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A scene's search section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// Where candidates come from; asked in turn.
    pub proposers: Vec<ProposerSpec>,
    #[serde(default)]
    pub calibration: Calibration,
    #[serde(default)]
    pub success: Success,
    #[serde(default)]
    pub budget: Budget,
    /// Seeds every draw and every proposer's choices.
    #[serde(default)]
    pub seed: u64,
    /// Candidates calibrated at once. Results depend on it (proposers see results in batches),
    /// never on the thread count.
    #[serde(default = "defaults::window")]
    pub window: usize,
    /// How many best candidates (one per skeleton) and successes the results keep.
    #[serde(default = "defaults::keep")]
    pub keep: usize,
    /// Output folder for the log, results, frontier CSV and plot (`--out` overrides it;
    /// relative to the working directory).
    #[serde(default)]
    pub out: Option<String>,
    /// A model program with named holes, `(hole name (x y))`, that the proposers fill: the
    /// known part of a model written once, the unknown parts searched (docs/search.md,
    /// "Templates"). A search over trajectories without one fills one hole per state.
    #[serde(default)]
    pub template: Option<String>,
}

mod defaults {
    pub fn window() -> usize {
        64
    }
    pub fn keep() -> usize {
        50
    }
    pub fn steps() -> u32 {
        50
    }
    pub fn draws() -> u32 {
        4
    }
    pub fn yes() -> bool {
        true
    }
    pub fn timeout() -> f64 {
        60.0
    }
    pub fn batch() -> usize {
        16
    }
    pub fn elite() -> usize {
        24
    }
    pub fn max_nodes() -> usize {
        24
    }
    pub fn unary() -> Vec<String> {
        ["exp", "log", "sin", "cos", "sqrt"]
            .map(String::from)
            .to_vec()
    }
    pub fn binary() -> Vec<String> {
        ["+", "-", "*", "/"].map(String::from).to_vec()
    }
    pub fn loop_steps() -> Vec<u32> {
        vec![8, 10, 12]
    }
}

/// One source of candidates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ProposerSpec {
    /// JSON-lines candidates (`{"src", "params", "skeleton"}`, the shared format) in file
    /// order; with `cycle` (the default) the stream starts over, with fresh draws, until the
    /// budget ends. The path is relative to the scene file.
    Stream {
        path: String,
        #[serde(default = "defaults::yes")]
        cycle: bool,
        /// Read only the first `take` candidates.
        #[serde(default)]
        take: Option<usize>,
    },
    /// An external proposer process speaking JSON lines (docs/search.md): ndvm writes every
    /// calibrated result and `propose` requests to its standard input and reads candidates
    /// from its standard output. `argv[0]` is looked up on `PATH`; relative paths in it are
    /// relative to the scene file's folder, where it runs.
    Command {
        argv: Vec<String>,
        /// Shown in messages (default: `argv[0]`'s file name).
        #[serde(default)]
        name: Option<String>,
        /// Longest wait for one answer line; a proposer that takes longer is stopped.
        #[serde(default = "defaults::timeout")]
        timeout_seconds: f64,
        /// Candidates asked for per request (at least this many; more when more slots are free).
        #[serde(default = "defaults::batch")]
        batch: usize,
    },
    /// The built-in structural proposer: mutates the best candidates so far. Every field has
    /// a default (`Evolve()`); they mean what [`Evolve`]'s fields say.
    Evolve {
        #[serde(default = "defaults::elite")]
        elite: usize,
        #[serde(default = "defaults::max_nodes")]
        max_nodes: usize,
        #[serde(default = "defaults::unary")]
        unary: Vec<String>,
        #[serde(default = "defaults::binary")]
        binary: Vec<String>,
        #[serde(default)]
        loops: bool,
        #[serde(default = "defaults::loop_steps")]
        loop_steps: Vec<u32>,
        #[serde(default)]
        seeds: Vec<String>,
        #[serde(default)]
        nested: bool,
    },
    /// A proposer a plugin registered under `name`, with its own settings.
    Plugin {
        name: String,
        #[serde(default)]
        settings: BTreeMap<String, String>,
    },
}

/// Settings of the built-in evolutionary proposer (a scene writes them as
/// [`ProposerSpec::Evolve`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Evolve {
    /// Best distinct skeletons kept as parents.
    pub elite: usize,
    /// Largest program (in tree nodes) it proposes.
    pub max_nodes: usize,
    /// Unary primitives it may insert, drop or swap.
    pub unary: Vec<String>,
    /// Binary operators it may combine with or swap.
    pub binary: Vec<String>,
    /// Allow wrapping a candidate in a counted `loop` (recurrences: `s ← f(s, x)`, iterated
    /// `loop_steps` times).
    pub loops: bool,
    pub loop_steps: Vec<u32>,
    /// Seed programs (besides every result it sees), naming their parameters with single
    /// letters: with none, it starts from `(* a x)` for each input `x`.
    pub seeds: Vec<String>,
    /// Allow a function inside another of its family: `exp`/`log` inside `exp`/`log`,
    /// `sin`/`cos`/`tan` inside one of them. Off by default: such towers (`exp(exp(…))`,
    /// `cos(log(log(…)))`) rarely are laws, and a search fitting noise-free data otherwise
    /// spends its budget polishing them as approximations.
    pub nested: bool,
}

impl ProposerSpec {
    /// The settings of an `Evolve` proposer.
    pub fn evolve(&self) -> Option<Evolve> {
        match self {
            ProposerSpec::Evolve {
                elite,
                max_nodes,
                unary,
                binary,
                loops,
                loop_steps,
                seeds,
                nested,
            } => Some(Evolve {
                elite: *elite,
                max_nodes: *max_nodes,
                unary: unary.clone(),
                binary: binary.clone(),
                loops: *loops,
                loop_steps: loop_steps.clone(),
                seeds: seeds.clone(),
                nested: *nested,
            }),
            _ => None,
        }
    }
}

impl Default for Evolve {
    fn default() -> Self {
        Evolve {
            elite: defaults::elite(),
            max_nodes: defaults::max_nodes(),
            unary: defaults::unary(),
            binary: defaults::binary(),
            loops: false,
            loop_steps: defaults::loop_steps(),
            seeds: Vec::new(),
            nested: false,
        }
    }
}

/// How every candidate is calibrated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Optimizer steps per calibration.
    #[serde(default = "defaults::steps")]
    pub steps: u32,
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Initial draws per candidate: each is one calibration, all ride as lanes of one walk.
    #[serde(default = "defaults::draws")]
    pub draws: u32,
    /// How each parameter's starting value is drawn (around `parameters.init`, 0 if unlisted).
    #[serde(default)]
    pub draw: Draw,
    /// Stop a calibration early when every draw's loss changes by less than this.
    #[serde(default)]
    pub tolerance: Option<f64>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            steps: defaults::steps(),
            optimizer: Optimizer::default(),
            draws: defaults::draws(),
            draw: Draw::default(),
            tolerance: None,
        }
    }
}

/// A starting-value distribution.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Draw {
    /// `init + sd·N(0, 1)`.
    Normal { sd: f64 },
    /// `init + U(low, high)`.
    Uniform { low: f64, high: f64 },
}

impl Default for Draw {
    /// The reference protocol's `0.3·N(0, 1)`.
    fn default() -> Self {
        Draw::Normal { sd: 0.3 }
    }
}

/// When a calibration counts as a success.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Success {
    /// Held-out R² above this (needs data with a held-out split).
    HeldOutR2(f64),
    /// Final training loss below this.
    TrainLoss(f64),
}

impl Default for Success {
    fn default() -> Self {
        Success::HeldOutR2(0.9)
    }
}

/// When a search stops: whichever comes first. With neither, `ndvm search` runs 60 seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Calibrations (draws) admitted; under this budget results are byte-identical across
    /// thread counts.
    #[serde(default)]
    pub calibrations: Option<u64>,
}

impl Search {
    /// What a scene cannot say in RON's types: empty proposer lists, zero sizes, bad numbers.
    pub fn check(&self) -> Result<(), String> {
        let c = &self.calibration;
        if c.draws == 0 || c.draws > crate::limits::RESTARTS {
            return Err(format!(
                "`calibration.draws` must be from 1 to {}, got {}",
                crate::limits::RESTARTS,
                c.draws
            ));
        }
        c.optimizer.check()?;
        if self.window == 0 || self.window > crate::limits::WINDOW {
            return Err(format!(
                "`search.window` must be from 1 to {}, got {}",
                crate::limits::WINDOW,
                self.window
            ));
        }
        match c.draw {
            Draw::Normal { sd } if !(sd.is_finite() && sd >= 0.0) => {
                return Err(format!("`Normal(sd)` must be finite and ≥ 0, got {sd}"));
            }
            Draw::Uniform { low, high }
                if !(low.is_finite() && high.is_finite() && low <= high) =>
            {
                return Err(format!(
                    "`Uniform(low, high)` needs finite low ≤ high, got {low} and {high}"
                ));
            }
            _ => {}
        }
        if let Some(s) = self.budget.seconds {
            crate::limits::check_seconds("`budget.seconds`", s)?;
        }
        match self.success {
            Success::HeldOutR2(x) | Success::TrainLoss(x) if !x.is_finite() => {
                return Err(format!("the success threshold must be finite, got {x}"));
            }
            _ => {}
        }
        for p in &self.proposers {
            match p {
                ProposerSpec::Command {
                    argv,
                    timeout_seconds,
                    batch,
                    ..
                } => {
                    if argv.is_empty() {
                        return Err("`Command(argv)` needs a program to run".into());
                    }
                    if !(timeout_seconds.is_finite() && *timeout_seconds > 0.0) {
                        return Err(format!(
                            "`timeout_seconds` must be a finite number > 0, got {timeout_seconds}"
                        ));
                    }
                    if *batch == 0 {
                        return Err("`batch` must be at least 1".into());
                    }
                }
                ProposerSpec::Evolve {
                    elite,
                    max_nodes,
                    binary,
                    loops,
                    loop_steps,
                    ..
                } => {
                    if *elite == 0 || *max_nodes < 3 {
                        return Err("`Evolve` needs `elite` ≥ 1 and `max_nodes` ≥ 3".into());
                    }
                    if binary.is_empty() {
                        return Err("`Evolve` needs at least one binary operator".into());
                    }
                    if *loops && loop_steps.is_empty() {
                        return Err("`Evolve(loops: true)` needs `loop_steps`".into());
                    }
                }
                ProposerSpec::Stream { .. } | ProposerSpec::Plugin { .. } => {}
            }
        }
        Ok(())
    }
}
