//! The world's resources besides the profile: settings, the stop signal and the program cache.

use bevy_ecs::prelude::*;
use ndvm_engine::ProgramCache;
use ndvm_engine::extension::Registry;

/// How the schedule lays out work. Nothing here may depend on the thread count: results must
/// not.
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitSettings {
    /// The most lanes one group walks (a wider candidate is cut into several groups).
    pub lanes_per_group: usize,
    /// The most candidates fitted at once; the rest wait (a stream admits as others finish).
    pub window: usize,
    /// Walk every group on every step instead of replaying recorded tapes (the reference
    /// behaviour; results are the same, only slower).
    pub walk_every_step: bool,
    /// Where replays run (default: the scene's `device`, else `Auto`); `None` here defers to
    /// the scene.
    pub device: Option<ndvm_components::scene::Device>,
    /// The numeric payload one candidate's walk may allocate (default: the engine's limit). A
    /// search shares a bound among its window ([`ndvm_components::limits::SEARCH_PAYLOAD`]).
    pub payload_bytes: Option<u64>,
    /// Steps each active candidate takes per schedule run, inside one parallel task per
    /// candidate with no barrier between them (`stages::pipeline`). A fit's results are the
    /// same for every value; a search's admissions happen between runs, so its results depend
    /// on it (never on the thread count). 1 steps the population through the stages.
    pub steps_per_pass: u32,
    /// A pass's wall-clock length after which its candidates take no further step until the
    /// next pass (so progress is reported and slots refilled at least this often on heavy
    /// fits). A fit's results do not depend on it; a search must not set it (its admissions
    /// would then depend on time).
    pub pass_millis: Option<u32>,
    /// Keep every pass's task times in the profile ([`crate::trace`]): what the scaling bench
    /// projects onto more cores. Off by default (two clock reads per task and a pass's list).
    pub trace_passes: bool,
    /// Time each candidate's first eight steps in the pipeline, so that a short fit's profile
    /// shows every stage; later steps are timed one in eight either way. A search turns it
    /// off: its candidates are many and short-lived, and on a host whose clock is read through
    /// the kernel the reads around those steps can cost more than the steps.
    pub time_first_steps: bool,
}

impl FitSettings {
    /// Whether candidates take several steps per schedule run in the pipeline's tasks
    /// (`stages::pipeline`), rather than one step per run through the stages.
    pub fn pipelined(&self) -> bool {
        self.steps_per_pass > 1 && !self.walk_every_step
    }
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            lanes_per_group: 256,
            window: 1024,
            walk_every_step: false,
            device: None,
            payload_bytes: None,
            steps_per_pass: 16,
            pass_millis: Some(250),
            trace_passes: false,
            time_first_steps: true,
        }
    }
}

/// Why and when to stop early: an interrupt flag (Ctrl-C, SIGTERM) and a wall-clock deadline.
/// The schedule stops every active candidate when it fires, and each walk looks at it every few
/// thousand steps ([`ndvm_engine::Stop`]), so a candidate inside a long loop gives way too.
#[derive(Resource, Clone, Debug, Default)]
pub struct StopSignal(pub ndvm_engine::Stop);

/// Decoded programs, shared by content (the same source decodes once), and the custom
/// primitives they are decoded against.
#[derive(Resource, Debug, Default)]
pub struct DecodeCache {
    pub cache: ProgramCache,
    pub primitives: Registry,
}

/// How wide the groups a device replays are cut (`stages::gpu`): while a device is in use, a
/// candidate's lanes go into groups this wide — one lane walked on the CPU, every lane replayed
/// on the device — unless the device cannot run it ([`crate::stages::schedule::OnHost`]).
/// `None` without a device (or once it is lost): every group is [`FitSettings::lanes_per_group`]
/// wide.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceWidth(pub Option<usize>);

/// Scores a finished candidate from its source, parameter names, final constants
/// (parameter-major, `p · restarts + r`) and restart count: one figure per restart.
pub type ScoreFn = dyn Fn(&str, &[String], &[f64], usize) -> Vec<Option<f64>> + Send + Sync;

/// What a candidate's own pipeline task computes as it finishes, on its core, beside the
/// other tasks (`stages::pipeline`): a search's held-out R² ([`History::held_out_r2`]). Work
/// done here leaves the search's serial side of the loop, which on many cores is the longest
/// task of a pass. `None`: nothing.
///
/// [`History::held_out_r2`]: ndvm_components::prelude::History
#[derive(Resource, Clone, Default)]
pub struct Scorer(pub Option<std::sync::Arc<ScoreFn>>);

impl std::fmt::Debug for Scorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Scorer").field(&self.0.is_some()).finish()
    }
}
