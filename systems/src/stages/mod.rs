//! The seven stages of a fit step, one file each, in schedule order: [`decode`], [`schedule`],
//! [`walk`], [`numeric`], [`merge_masks`], [`backward`], [`optimize`]. Each is a plain function
//! system over Candidate and LaneGroup entities that times itself into the profile.

pub mod backward;
pub mod decode;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod merge_masks;
pub mod numeric;
pub mod optimize;
pub mod schedule;
pub mod walk;
