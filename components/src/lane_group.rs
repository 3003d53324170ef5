//! The LaneGroup entity: a run of a candidate's lanes that share one structural walk.
//!
//! The schedule system cuts a candidate's lanes (restarts × data points, restart-major) into
//! groups of at most a fixed number of lanes, so a wide candidate spreads over cores while each
//! group's work stays sequential. The cut depends only on the lane count, never on the thread
//! count, and a lane's numbers do not depend on its group (LANGUAGE.md §9.1), so results are
//! the same however the groups are spread.

use bevy_ecs::prelude::*;

/// Lanes `first .. first + lanes` of `candidate`.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneGroup {
    pub candidate: Entity,
    pub first: usize,
    pub lanes: usize,
}

/// Which stage evaluates the group this step: the structural walk, or (once tape replay
/// lands) the numeric replay of its recorded tape.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    #[default]
    Walk,
    Replay,
}

/// The group's per-lane results this step.
#[derive(Component, Clone, Debug, Default)]
pub struct GroupOutputs {
    /// The output per lane (NaN where the output is not a number).
    pub out: Vec<f64>,
    /// `∂loss/∂param` contributions per lane after the backward pass: parameter-major,
    /// lane-minor (`p * lanes + lane`), already scaled by the lane's loss weight.
    pub grads: Vec<f64>,
    /// The walk's error, rendered with its source location.
    pub error: Option<String>,
    /// Tape nodes of this step's walk.
    pub tape_nodes: u64,
}
