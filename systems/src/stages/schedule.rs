//! Schedule: stop, retire, admit, and lay out lanes.
//!
//! Every step the schedule (1) stops everything still running when the stop signal fires
//! (Ctrl-C or the wall-clock budget), (2) retires finished candidates by despawning their lane
//! groups, and (3) admits decoded pending candidates, in population order, while fewer than
//! [`FitSettings::window`] are active. Admitting a candidate cuts its lanes (restarts × data
//! points) into [`LaneGroup`]s of at most [`FitSettings::lanes_per_group`] consecutive lanes,
//! each walked on its first step. (4) A candidate whose groups the replay stage has split into
//! many more than its cut made ([`most_groups`]) is cut afresh, so lanes that keep changing path
//! cannot fragment it into ever smaller groups. The layout depends on lane counts and the
//! lanes' own numbers alone, so results do not depend on the thread count.
//!
//! While a GPU replays groups ([`DeviceWidth`]), candidates are cut into groups as wide as the
//! device takes (one lane walked, every lane replayed there); a candidate the device cannot run
//! ([`OnHost`]) keeps the CPU's width.

use crate::machine::{Machine, spawn_group};
use crate::profile::{Profile, Stage, StageTimer};
use crate::resources::{DeviceWidth, FitSettings, StopSignal};
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use ndvm_engine::Real;

type Admission<'a> = (
    Entity,
    &'a Candidate,
    &'a FitSpec,
    &'a mut Status,
    &'a mut Groups,
    Has<Compiled>,
    Has<OnHost>,
);

/// Marks a candidate whose groups stay on the CPU while a device is in use (its tape has a
/// custom primitive, a node longer than the adapter runs, no numeric result, or `auto`'s cost
/// model declined it): it is cut at the CPU's width.
#[derive(Component, Clone, Copy, Debug, Default)]
pub struct OnHost;

pub fn schedule<R: Real>(
    mut commands: Commands,
    settings: Res<FitSettings>,
    device: Res<DeviceWidth>,
    stop: Res<StopSignal>,
    mut profile: ResMut<Profile>,
    mut candidates: Query<Admission<'static>>,
) {
    let timer = StageTimer::start(Stage::Schedule);
    if let Some(reason) = stop.0.reason() {
        for (_, _, _, mut status, ..) in &mut candidates {
            if !status.is_final() {
                *status = Status::Stopped {
                    reason: reason.to_string(),
                };
            }
        }
    }
    let mut active = 0;
    let mut waiting = Vec::new();
    let per = settings.lanes_per_group.max(1);
    // The width a candidate is cut at; how far it may fragment is judged at the CPU's width.
    let width = |on_host: bool| match device.0 {
        Some(w) if !on_host => w.max(1),
        _ => per,
    };
    for (entity, cand, spec, status, mut groups, compiled, on_host) in &mut candidates {
        let per = width(on_host);
        match *status {
            Status::Active => {
                active += 1;
                let cut_into = spec.lanes().div_ceil(settings.lanes_per_group.max(1));
                if groups.0.len() > most_groups(cut_into) {
                    for g in groups.0.drain(..) {
                        commands.entity(g).despawn();
                    }
                    groups.0 = cut::<R>(&mut commands, entity, spec.lanes(), per);
                    profile.counters.groups += groups.0.len() as u64;
                }
            }
            Status::Pending if compiled => waiting.push((cand.index, entity, spec.lanes(), per)),
            _ => {
                for g in groups.0.drain(..) {
                    commands.entity(g).despawn();
                }
            }
        }
    }
    waiting.sort_unstable_by_key(|w| w.0);
    for (_, entity, lanes, per) in waiting
        .into_iter()
        .take(settings.window.saturating_sub(active))
    {
        let ids = cut::<R>(&mut commands, entity, lanes, per);
        profile.counters.groups += ids.len() as u64;
        profile.counters.admitted += 1;
        commands
            .entity(entity)
            .insert((Groups(ids), Status::Active, LaneResults::default()));
    }
    profile.counters.steps += 1;
    profile.record(timer);
}

/// Cuts a candidate's `lanes` into new groups of at most `per` consecutive lanes.
fn cut<R: Real>(
    commands: &mut Commands,
    candidate: Entity,
    lanes: usize,
    per: usize,
) -> Vec<Entity> {
    (0..lanes)
        .step_by(per)
        .map(|first| {
            let group = LaneGroup::run(candidate, first, per.min(lanes - first));
            spawn_group(
                commands,
                group,
                Machine::<R>::default(),
                GroupOutputs::default(),
            )
        })
        .collect()
}

/// The most groups a candidate cut into `cut` groups may be split into before it is cut afresh:
/// each split-off group costs a replay per step, so a few dozen small ones are cheap, while a
/// re-cut walks every lane again.
fn most_groups(cut: usize) -> usize {
    4 * cut + 28
}
