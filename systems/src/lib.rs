//! # ndvm-systems
//!
//! Fits: the ECS world that steps a population of candidates, its eight stages, and what a fit
//! needs around them (the population a scene describes, optimizers, losses, reports and plots,
//! run settings, output folders). The search (`ndvm-search`) runs on top of it. `docs/architecture.md` draws the whole picture.
//!
//! A scene's population becomes Candidate entities; the schedule cuts each active candidate's
//! lanes (restarts × data points) into LaneGroup entities; one run of the stage schedule is one
//! fit step for every active candidate. A group walks its program once and then replays the
//! recorded tape while the walk's decisions on numbers still hold ([`stages::replay`]).
//!
//! | where | what |
//! |---|---|
//! | [`fit`] | [`fit::Fit`]: the world, the stage schedule and the step loop |
//! | [`stages`] | the eight ECS stages, one file each, in schedule order |
//! | [`resources`], [`machine`], [`profile`], [`device`] | world resources, a group's evaluator, per-stage timing, the device replays ran on |
//! | [`plugin`] | custom primitives and systems (the extension point) |
//! | [`population`] | scene → candidates, starting values and data sets |
//! | [`loss`], [`optim`] | losses over lane axes; Adam, SGD, Levenberg–Marquardt, L-BFGS |
//! | [`report`] | results, the ranked table, standard errors, plots |
//! | [`settings`] | run settings (threads, device, precision) resolved in one place |
//! | [`folder`], [`exit`] | an output folder that is always whole; leaving at once on a second signal |
//!
//! Parallelism lives inside the replay, walk, backward, merge-masks and optimize systems (rayon
//! over entities); the work for one entity is sequential, so results do not depend on the
//! thread count.

pub mod device;
pub mod exit;
pub mod fit;
pub mod folder;
pub mod homes;
pub mod loss;
pub mod machine;
pub mod optim;
pub mod plugin;
pub mod population;
pub mod profile;
pub mod report;
pub mod resources;
pub mod settings;
pub mod stages;
pub mod trace;

pub use ndvm_components as components;
pub use ndvm_engine as engine;

/// The types most callers need.
pub mod prelude {
    pub use crate::fit::{Fit, FitError, FitOptions, Progress};
    pub use crate::plugin::{Plugin, Plugins, PluginsBuilder, Primitive, check_primitive};
    pub use crate::profile::{Profile, ProfileReport, Stage};
    pub use crate::report::{CandidateResult, FitReport};
    pub use crate::resources::FitSettings;
    pub use ndvm_components::scene::Scene;
}
