//! # ndvm-components
//!
//! Plain data shared by the ndvm tools and systems: the ECS components of the two entity kinds
//! (a [`Candidate`] and its [`LaneGroup`]s, docs/architecture.md "Fits: the ECS world"), the scene file that
//! scripts a fit, data sets, optimizer settings and state, and the bindings file of `ndvm run`.

pub mod bare_names;
pub mod bindings_file;
pub mod candidate;
pub mod candidate_stream;
pub mod dataset;
pub mod input_file;
pub mod lane_group;
pub mod limits;
pub mod optimizer;
pub mod parameter_names;
pub mod scene;

pub use bindings_file::{BindingsFile, MatrixSpec};
pub use candidate::{
    Candidate, Compiled, FitSpec, Groups, History, LaneResults, ParamValues, SharedInputs,
    SharedMatrix, Status,
};
pub use dataset::{ColumnNames, Dataset};
pub use lane_group::{GroupOutputs, LaneGroup, Route};
pub use optimizer::{Bounds, Optimizer, OptimizerState};

/// The types most callers need.
pub mod prelude {
    pub use crate::candidate::*;
    pub use crate::dataset::Dataset;
    pub use crate::lane_group::*;
    pub use crate::optimizer::*;
    pub use crate::scene::{Loss, Scene};
}
