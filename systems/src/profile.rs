//! Per-stage profiling: calls and time of every stage, counters, and tracing spans.
//!
//! Like rapier's counters, timing is always on and costs two clock reads per stage run: each
//! system starts a [`StageTimer`] when it begins and hands it to [`Profile::record`] when it
//! ends. The same timer enters a `tracing` span named after the stage, so a subscriber (the
//! CLI's `--trace FILE`, a Chrome/Perfetto trace) sees every stage run without extra code; with
//! no subscriber the span is a no-op. What the stages do not account for — the ECS schedule
//! itself, command application, the step loop — is the wall time left over, reported as the
//! `ecs` row. `docs/profiling.md` explains how to read the table.

use crate::device::DeviceUsed;
use bevy_ecs::prelude::*;
use serde::Serialize;
use std::time::{Duration, Instant};

/// The stages of a fit step, in schedule order; each is also the `SystemSet` its system runs
/// in (plugins order their own systems against them: `.after(Stage::Optimize)`).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Decode,
    Schedule,
    /// Replays on the GPU (docs/gpu.md): the row's time is upload + kernel + download, split in
    /// the profile's `device` times.
    Gpu,
    /// Replays recorded tapes on the CPU (walk once, replay many).
    Replay,
    Walk,
    MergeMasks,
    Backward,
    Optimize,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Decode,
        Stage::Schedule,
        Stage::Gpu,
        Stage::Replay,
        Stage::Walk,
        Stage::MergeMasks,
        Stage::Backward,
        Stage::Optimize,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Decode => "decode",
            Stage::Schedule => "schedule",
            Stage::Gpu => "gpu",
            Stage::Walk => "walk",
            Stage::Replay => "replay",
            Stage::MergeMasks => "merge-masks",
            Stage::Backward => "backward",
            Stage::Optimize => "optimize",
        }
    }
}

/// Calls and total time of one stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTime {
    pub calls: u64,
    pub total: Duration,
}

/// Work counters of a fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Schedule runs (fit steps of the whole population).
    pub steps: u64,
    /// Structural walks of lane groups.
    pub walks: u64,
    /// Tape replays of lane groups (the replay stage), and the lanes they evaluated.
    pub replays: u64,
    pub replayed_lanes: u64,
    /// Guards that failed in a replay, by kind (each sent some lanes back to the walk).
    pub guard_failures: GuardFailures,
    /// Lanes whose guards failed, sent back to the walk (split into a new group, or with their
    /// whole group when every lane of it failed).
    pub rewalked_lanes: u64,
    /// Tapes that could not be replayed at all (an input's structure changed, or the result
    /// was not a number); their groups walked again.
    pub stale_tapes: u64,
    /// Numeric tape nodes recorded by the walks.
    pub tape_nodes: u64,
    /// Lanes walked (lanes × walks).
    pub lanes: u64,
    /// Backward passes of lane groups.
    pub backward_passes: u64,
    /// Candidates decoded and candidates admitted to the fit.
    pub candidates: u64,
    pub admitted: u64,
    /// Lane groups spawned.
    pub groups: u64,
}

/// What the GPU stage spent, by part, and what it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DeviceTimes {
    /// Lane-group runs on the device, and the lanes they computed.
    pub runs: u64,
    pub lanes: u64,
    /// Tapes uploaded (instructions and leaf rows: once per walk), and how many of them ran
    /// each interpreter entry (docs/gpu.md, "The interpreter").
    pub uploads: u64,
    pub entries: Entries,
    /// Opening the device (the interpreter's per-lane entry compiled; the others compile at the
    /// first upload that needs them): once per process, when the first fit
    /// that uses it does.
    pub open_s: f64,
    pub upload_s: f64,
    pub kernel_s: f64,
    pub download_s: f64,
}

/// Uploaded tapes by the interpreter entry they run with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Entries {
    /// One invocation per lane.
    pub lane: u64,
    /// A workgroup per lane.
    pub coop: u64,
    /// Node-major: each wide node one dispatch over lanes × elements.
    pub batched: u64,
}

impl Entries {
    /// `lane 3, batched 1`: the entries that ran, for the profile's GPU line.
    fn describe(&self) -> String {
        let all = [
            ("lane", self.lane),
            ("coop", self.coop),
            ("batched", self.batched),
        ];
        let ran: Vec<String> = all
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        ran.join(", ")
    }
}

impl std::ops::AddAssign for Counters {
    fn add_assign(&mut self, o: Counters) {
        self.steps += o.steps;
        self.walks += o.walks;
        self.replays += o.replays;
        self.replayed_lanes += o.replayed_lanes;
        self.guard_failures.comparison += o.guard_failures.comparison;
        self.guard_failures.index += o.guard_failures.index;
        self.rewalked_lanes += o.rewalked_lanes;
        self.stale_tapes += o.stale_tapes;
        self.tape_nodes += o.tape_nodes;
        self.lanes += o.lanes;
        self.backward_passes += o.backward_passes;
        self.candidates += o.candidates;
        self.admitted += o.admitted;
        self.groups += o.groups;
    }
}

/// Failed replay guards by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GuardFailures {
    /// A comparison came out differently (a branch, a loop exit).
    pub comparison: u64,
    /// A number read as structure (an index, a size) changed.
    pub index: u64,
}

/// The profile of a fit: per-stage times, counters and wall time (a resource of the world).
#[derive(Resource, Clone, Debug, Default)]
pub struct Profile {
    pub stages: [StageTime; 8],
    pub counters: Counters,
    /// The GPU stage's parts.
    pub device: DeviceTimes,
    /// Which device replays ran on.
    pub used: DeviceUsed,
    /// Wall time of the step loop (schedule runs), stages included.
    pub wall: Duration,
    /// Every pass's tasks, kept when [`crate::resources::FitSettings::trace_passes`] is set.
    pub trace: Option<crate::trace::Trace>,
}

/// A running stage: started by a system, recorded when it ends.
#[derive(Debug)]
pub struct StageTimer {
    stage: Stage,
    start: Instant,
    _span: tracing::span::EnteredSpan,
}

impl StageTimer {
    pub fn start(stage: Stage) -> Self {
        let span = match stage {
            Stage::Decode => tracing::info_span!("decode"),
            Stage::Schedule => tracing::info_span!("schedule"),
            Stage::Gpu => tracing::info_span!("gpu"),
            Stage::Walk => tracing::info_span!("walk"),
            Stage::Replay => tracing::info_span!("replay"),
            Stage::MergeMasks => tracing::info_span!("merge-masks"),
            Stage::Backward => tracing::info_span!("backward"),
            Stage::Optimize => tracing::info_span!("optimize"),
        };
        StageTimer {
            stage,
            start: Instant::now(),
            _span: span.entered(),
        }
    }
}

impl Profile {
    pub fn record(&mut self, timer: StageTimer) {
        let s = &mut self.stages[timer.stage as usize];
        s.calls += 1;
        s.total += timer.start.elapsed();
    }

    /// Records a stage that also did `other`'s work for some of its items, spending
    /// `(own, theirs)` on the two (summed over threads): its wall time is shared between the
    /// two in that proportion (`other`'s calls are counted where it runs itself).
    pub fn record_shared(
        &mut self,
        timer: StageTimer,
        other: Stage,
        (own, theirs): (Duration, Duration),
    ) {
        let wall = timer.start.elapsed();
        let total = own + theirs;
        let moved = if total.is_zero() {
            Duration::ZERO
        } else {
            wall.mul_f64(theirs.as_secs_f64() / total.as_secs_f64())
        };
        let s = &mut self.stages[timer.stage as usize];
        s.calls += 1;
        s.total += wall - moved;
        self.stages[other as usize].total += moved;
    }

    /// Records a pass that did several stages' work, spending `times[i]` on `stages[i]`
    /// (summed over threads): its `wall` time is shared among them in that proportion, and
    /// counts as a call of each stage that did any work.
    pub fn record_parts(&mut self, wall: Duration, stages: &[Stage], times: &[Duration]) {
        let total: Duration = times.iter().sum();
        if total.is_zero() {
            return;
        }
        for (&stage, t) in stages.iter().zip(times) {
            let share = wall.mul_f64(t.as_secs_f64() / total.as_secs_f64());
            let s = &mut self.stages[stage as usize];
            s.total += share;
            s.calls += u64::from(!t.is_zero());
        }
    }

    pub fn stage(&self, stage: Stage) -> StageTime {
        self.stages[stage as usize]
    }

    /// Wall time not spent inside any stage: the ECS schedule and the step loop.
    pub fn overhead(&self) -> Duration {
        let inside: Duration = self.stages.iter().map(|s| s.total).sum();
        self.wall.saturating_sub(inside)
    }

    /// The profile as a serializable report (seconds, shares of wall time).
    pub fn report(&self) -> ProfileReport {
        let wall = self.wall.as_secs_f64();
        let share = |d: Duration| {
            if wall > 0.0 {
                d.as_secs_f64() / wall
            } else {
                0.0
            }
        };
        let stages = Stage::ALL
            .iter()
            .map(|&st| {
                let t = self.stage(st);
                StageRow {
                    stage: st.name(),
                    calls: t.calls,
                    total_s: t.total.as_secs_f64(),
                    mean_s: if t.calls > 0 {
                        t.total.as_secs_f64() / t.calls as f64
                    } else {
                        0.0
                    },
                    share: share(t.total),
                }
            })
            .collect();
        ProfileReport {
            wall_s: wall,
            stages,
            ecs_s: self.overhead().as_secs_f64(),
            ecs_share: share(self.overhead()),
            counters: self.counters,
            device: self.device,
            used: self.used.ran(self.device.runs),
        }
    }
}

/// One stage's row of the profile.
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    pub stage: &'static str,
    pub calls: u64,
    pub total_s: f64,
    pub mean_s: f64,
    /// Fraction of the wall time.
    pub share: f64,
}

/// What `ndvm profile --json` prints and what results files keep under `"timing"`.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileReport {
    pub wall_s: f64,
    pub stages: Vec<StageRow>,
    /// Wall time outside every stage (schedule, commands, step loop) and its share.
    pub ecs_s: f64,
    pub ecs_share: f64,
    pub counters: Counters,
    pub device: DeviceTimes,
    /// Which device replays ran on.
    pub used: DeviceUsed,
}

impl ProfileReport {
    /// The per-stage table as text.
    pub fn table(&self) -> String {
        let ms = |s: f64| s * 1e3;
        let mut out = format!(
            "{:<12} {:>8} {:>12} {:>12} {:>7}\n",
            "stage", "calls", "total ms", "mean µs", "share"
        );
        for r in &self.stages {
            out += &format!(
                "{:<12} {:>8} {:>12.3} {:>12.2} {:>6.1}%\n",
                r.stage,
                r.calls,
                ms(r.total_s),
                r.mean_s * 1e6,
                r.share * 100.0
            );
        }
        out += &format!(
            "{:<12} {:>8} {:>12.3} {:>12} {:>6.1}%\n",
            "ecs",
            "",
            ms(self.ecs_s),
            "",
            self.ecs_share * 100.0
        );
        out += &format!("{:<12} {:>8} {:>12.3}\n", "wall", "", ms(self.wall_s));
        let d = &self.device;
        if let Some(adapter) = &self.used.adapter {
            out += &format!(
                "\ngpu ({adapter}): runs {}  lanes {}  uploads {} ({})  open {:.3} ms  \
                 upload {:.3} ms  kernel {:.3} ms  download {:.3} ms\n",
                d.runs,
                d.lanes,
                d.uploads,
                d.entries.describe(),
                ms(d.open_s),
                ms(d.upload_s),
                ms(d.kernel_s),
                ms(d.download_s)
            );
        }
        let c = &self.counters;
        out += &format!(
            "\nsteps {}  walks {}  replays {}  tape nodes {}  lanes walked {}  replayed {}  \
             backward {}  candidates {}  groups {}\n",
            c.steps,
            c.walks,
            c.replays,
            c.tape_nodes,
            c.lanes,
            c.replayed_lanes,
            c.backward_passes,
            c.candidates,
            c.groups
        );
        out += &format!(
            "guard failures: comparison {}  index {}  (lanes walked again {}, stale tapes {})\n",
            c.guard_failures.comparison, c.guard_failures.index, c.rewalked_lanes, c.stale_tapes
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage that did another's work gives it the share of its wall time that the work took,
    /// and the two add up to the stage's wall time.
    #[test]
    fn shared_stage_time_is_split_by_the_work_done() {
        let mut p = Profile::default();
        let timer = StageTimer::start(Stage::Replay);
        std::thread::sleep(Duration::from_millis(20));
        let before = Instant::now();
        p.record_shared(
            timer,
            Stage::Backward,
            (Duration::from_millis(30), Duration::from_millis(10)),
        );
        let (replay, backward) = (p.stage(Stage::Replay), p.stage(Stage::Backward));
        let wall = (replay.total + backward.total).as_secs_f64();
        assert!(wall >= 0.020 && wall <= 0.020 + before.elapsed().as_secs_f64() + 0.5);
        let share = backward.total.as_secs_f64() / wall;
        assert!((share - 0.25).abs() < 1e-6, "{share}");
        assert_eq!((replay.calls, backward.calls), (1, 0));
        // No work recorded: everything stays with the stage.
        let timer = StageTimer::start(Stage::Walk);
        p.record_shared(timer, Stage::Backward, (Duration::ZERO, Duration::ZERO));
        assert_eq!(p.stage(Stage::Backward).total, backward.total);
    }
}
