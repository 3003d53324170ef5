//! # ndvm-systems
//!
//! The home of the ECS side of ndvm (ARCHITECTURE.md "Systems"): the decode, schedule, walk,
//! numeric, merge-masks, backward and optimize systems, the schedule that chains them, plugins,
//! the scene loader and per-stage profiling.
//!
//! **Status:** none of these exist yet; they are the subject of the ECS-engine issue. The crate
//! is in the workspace now so the layout is final; it currently only re-exports the engine and
//! component crates it will build on.

pub use ndvm_components as components;
pub use ndvm_engine as engine;
