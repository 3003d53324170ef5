//! The eight stages of a fit step, one file each, in schedule order: [`decode`], [`schedule`],
//! [`gpu`], [`replay`], [`walk`], [`merge_masks`], [`backward`], [`optimize`]. Each is a plain
//! function system over Candidate and LaneGroup entities that times itself into the profile
//! ([`crate::profile::Stage`] names them; `docs/architecture.md` shows the data flow).
//!
//! `replay` runs before `walk`: a group replays the tape its last walk recorded, and only the
//! groups with no valid tape (first steps, lanes whose guards failed) walk. `gpu` is the same
//! replay on a device, for the groups it takes. [`pipeline`] then takes each candidate a few
//! steps further inside one parallel task (no barrier per step).

pub mod backward;
pub mod decode;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod merge_masks;
pub mod optimize;
pub mod pacing;
pub mod pipeline;
pub mod replay;
pub mod schedule;
pub mod walk;
