//! The world's resources besides the profile: settings, the stop signal and the program cache.

use bevy_ecs::prelude::*;
use ndvm_engine::ProgramCache;
use ndvm_engine::extension::Registry;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

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
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            lanes_per_group: 256,
            window: 1024,
            walk_every_step: false,
            device: None,
        }
    }
}

/// Why and when to stop early: an interrupt flag (Ctrl-C) and a wall-clock deadline.
#[derive(Resource, Clone, Debug, Default)]
pub struct StopSignal {
    pub interrupted: Arc<AtomicBool>,
    pub deadline: Option<Instant>,
}

impl StopSignal {
    /// The reason to stop now, if any.
    pub fn reason(&self) -> Option<&'static str> {
        if self.interrupted.load(Ordering::Relaxed) {
            Some("interrupted")
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some("wall-clock budget spent")
        } else {
            None
        }
    }
}

/// What ends a walk early from outside ([`ndvm_engine::Stop`], looked at every few thousand
/// steps): by default the fit's own [`StopSignal`]; a search sets its budget and interrupt.
#[derive(Resource, Clone, Debug, Default)]
pub struct WalkStop(pub ndvm_engine::Stop);

/// Decoded programs, shared by content (the same source decodes once), and the custom
/// primitives they are decoded against.
#[derive(Resource, Debug, Default)]
pub struct Programs {
    pub cache: ProgramCache,
    pub primitives: Registry,
}
