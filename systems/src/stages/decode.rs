//! Decode: new candidates' sources become programs.
//!
//! A pending candidate without a [`Compiled`] program is read, expanded and decoded through the
//! shared [`DecodeCache`] (a source seen before costs a hash lookup); a bytecode candidate is
//! assembled, linked and verified instead. A program that does not decode fails its candidate
//! with the located error; the fit goes on with the others.

use crate::machine::locate;
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::DecodeCache;
use bevy_ecs::prelude::*;
use ndvm_bytecode::Executable;
use ndvm_components::prelude::*;
use rayon::prelude::*;

pub fn decode(
    mut commands: Commands,
    programs: Res<DecodeCache>,
    mut profile: ResMut<Profile>,
    mut fresh: Query<(Entity, &Candidate, &FitSpec, &mut Status), Without<Compiled>>,
) {
    let timer = StageTimer::start(Stage::Decode);
    let mut todo: Vec<_> = fresh
        .iter_mut()
        .filter(|(.., s)| **s == Status::Pending)
        .collect();
    let start = std::time::Instant::now();
    let decoded: Vec<_> = todo
        .par_iter()
        .map(|(_, c, spec, _)| {
            let names = spec.input_names();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            if c.form.is_bytecode() {
                let bytes = c.source.as_bytes();
                return Executable::load(c.form, bytes, &names, &programs.primitives)
                    .map_err(|e| locate(&e, &c.source));
            }
            programs
                .cache
                .get_with(&c.source, &names, &programs.primitives)
                .map(Executable::Walk)
                .map_err(|e| locate(&e, &c.source))
        })
        .collect();
    if let Some(trace) = profile.trace.as_mut() {
        trace.spread(start.elapsed().as_secs_f64());
    }
    for ((entity, _, _, status), result) in todo.iter_mut().zip(decoded) {
        match result {
            Ok(program) => {
                commands.entity(*entity).insert(Compiled(program));
            }
            Err(error) => **status = Status::Failed { error },
        }
    }
    profile.counters.candidates += todo.len() as u64;
    profile.record(timer);
}
