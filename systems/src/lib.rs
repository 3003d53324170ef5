//! # ndvm-systems
//!
//! The ECS side of ndvm (ARCHITECTURE.md "Systems"). A scene's population becomes Candidate
//! entities; the schedule cuts each active candidate's lanes (restarts × data points) into
//! LaneGroup entities; one run of the stage schedule — decode, schedule, numeric, walk,
//! merge-masks, backward, optimize ([`stages`]) — is one fit step for every active candidate.
//! A group walks its program once and then replays the recorded tape while the walk's
//! decisions on numbers still hold ([`stages::numeric`]).
//! [`fit::Fit`] owns the world and steps it; [`report`] turns it into results; [`profile`]
//! times every stage; [`plugin`] adds custom primitives and systems.
//!
//! Parallelism lives inside the numeric, walk, backward, merge-masks and optimize systems (rayon over
//! entities); the work for one entity is sequential, so results do not depend on the thread
//! count.

pub mod convergence;
pub mod data;
pub mod fit;
pub mod loss;
pub mod machine;
pub mod optim;
pub mod plots;
pub mod plugin;
pub mod population;
pub mod profile;
pub mod report;
pub mod resources;
pub mod search;
pub mod selection;
pub mod snippet;
pub mod stages;
pub mod uncertainty;
pub mod warnings;

pub use ndvm_components as components;
pub use ndvm_engine as engine;

/// The types most callers need.
pub mod prelude {
    pub use crate::fit::{Fit, FitError, FitOptions, Progress};
    pub use crate::plugin::{Engine, EngineBuilder, Plugin, Primitive, check_primitive};
    pub use crate::profile::{Profile, ProfileReport, Stage};
    pub use crate::report::{CandidateResult, FitReport};
    pub use crate::resources::FitSettings;
    pub use ndvm_components::scene::Scene;
}
