//! # ndvm-components
//!
//! Plain-data, serde-able types shared by the ndvm tools and, as the ECS engine grows, by its
//! systems: the bindings file that feeds `ndvm run`, the scene file that scripts a fit, and the
//! optimizer settings and per-lane state of a fit.

pub mod bindings_file;
pub mod optimizer;
pub mod scene;

pub use bindings_file::{BindingsFile, MatrixSpec};
pub use optimizer::{Bounds, Optimizer, OptimizerState};
