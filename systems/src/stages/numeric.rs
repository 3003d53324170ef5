//! Numeric: where recorded tapes will be replayed instead of walked.
//!
//! ARCHITECTURE.md's numeric stage replays a group's tape with new parameter values while its
//! guards hold. **Tape replay is not built yet** (the replay issue): every tape a walk records
//! goes stale as soon as the optimize stage moves the parameters, so today this stage only
//! routes every group back to the walk for the next step and counts no replays. It is in the
//! schedule already so the stage order, the profile rows and the counters stay the same when
//! replay lands.

use crate::profile::{Profile, Stage, StageTimer};
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;

pub fn numeric(mut profile: ResMut<Profile>, mut groups: Query<&mut Route>) {
    let timer = StageTimer::start(Stage::Numeric);
    for mut route in &mut groups {
        // No replay yet: a stale tape means a walk next step.
        if *route != Route::Walk {
            *route = Route::Walk;
        }
    }
    profile.record(timer);
}
