//! # ndvm-systems
//!
//! The home of the ECS side of ndvm (ARCHITECTURE.md "Systems"): the decode, schedule, walk,
//! numeric, merge-masks, backward and optimize systems, the schedule that chains them, plugins,
//! the scene loader and per-stage profiling.
//!
//! **Status:** being built (the ECS-engine issue). Today: data sets ([`data`]), losses over
//! lane axes ([`loss`]) and the optimizer step ([`optimize`]).
//! The world, the schedule and the other stages are still to come.

pub mod data;
pub mod loss;
pub mod optimize;

pub use ndvm_components as components;
pub use ndvm_engine as engine;
