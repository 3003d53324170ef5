//! The LaneGroup entity: a set of a candidate's lanes that share one structural walk (and then
//! replay its tape while the walk's decisions still hold).
//!
//! The schedule system cuts a candidate's lanes (restarts × data points, restart-major) into
//! groups of at most a fixed number of consecutive lanes, so a wide candidate spreads over cores
//! while each group's work stays sequential. When a replay finds that some lanes would now take
//! another path, the replay system moves exactly those lanes into a new group that walks them,
//! so a group's lanes need not be consecutive. The cut depends only on lane counts and on the
//! lanes' own numbers, never on the thread count, and a lane's numbers do not depend on its
//! group (docs/language-reference.md §9.1), so results are the same however the groups are spread.

use bevy_ecs::prelude::*;

/// The lanes of `candidate` this group evaluates (ascending candidate lane indices).
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub struct LaneGroup {
    pub candidate: Entity,
    pub lanes: Vec<usize>,
}

impl LaneGroup {
    /// Lanes `first .. first + n` of `candidate`.
    pub fn run(candidate: Entity, first: usize, n: usize) -> LaneGroup {
        LaneGroup {
            candidate,
            lanes: (first..first + n).collect(),
        }
    }
}

/// How the group's outputs were made this step: the structural walk, or the numeric replay of
/// the tape its last walk recorded.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    #[default]
    Walk,
    Replay,
    /// Replayed on the GPU (its outputs and gradients are in, the backward stage skips it).
    Device,
}

/// The group's per-lane results this step.
#[derive(Component, Clone, Debug, Default)]
// A cache-line pair of its own: workers write neighbouring entities' copies at every step.
#[repr(align(128))]
pub struct GroupOutputs {
    /// The output per lane of [`LaneGroup::lanes`] (NaN where the output is not a number).
    pub out: Vec<f64>,
    /// `∂loss/∂param` contributions per lane after the backward pass: parameter-major,
    /// lane-minor (`p * n + i` for the group's `i`-th lane of `n`), already scaled by the
    /// lane's loss weight.
    pub grads: Vec<f64>,
    /// The walk's error, rendered with its source location.
    pub error: Option<String>,
    /// Tape nodes of this step's walk or replay.
    pub tape_nodes: u64,
    /// Whether this step's outputs came from a replay (else from a walk).
    pub replayed: bool,
}
