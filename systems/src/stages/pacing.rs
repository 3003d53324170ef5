//! Who steps a candidate: the pipeline's tasks ([`Piped`]) or the stage systems, one step per
//! schedule run ([`Pacing`]).

use crate::resources::FitSettings;
use bevy_ecs::prelude::*;

/// Marks a candidate that takes its steps in the pipeline's tasks; the stage systems step the
/// others, one step per schedule run. A CPU fit admits every candidate piped (unless it steps
/// a step at a time: `steps_per_pass` 1, `walk_every_step`, plugin hooks). While a device is in
/// use its candidates step at the GPU stage's pace; one the device does not take
/// ([`crate::stages::schedule::OnHost`]) is piped from the next schedule run on, and once the
/// device is lost every candidate is ([`Pacing`]).
#[derive(Component, Clone, Copy, Debug, Default)]
pub struct Piped;

/// Who steps the candidates ([`Piped`]).
#[derive(Resource, Clone, Copy, Debug)]
pub struct Pacing {
    /// Candidates admitted from now on are piped.
    pub admit_piped: bool,
    /// The stage systems run: some candidates are not piped (their run condition).
    pub stepped: bool,
}

impl Pacing {
    /// Every candidate piped from now on, in a fit that pipes at all.
    pub fn all_piped(settings: &FitSettings) -> Pacing {
        let piped = settings.pipelined();
        Pacing {
            admit_piped: piped,
            stepped: !piped,
        }
    }
}
