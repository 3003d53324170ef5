//! Run settings resolved in one place: what the caller asked for (a CLI flag, a Python
//! argument, a field of [`crate::fit::FitOptions`]) over what the scene says over the job's
//! default. Fits, searches, shards, the CLI and Python all resolve threads, the device and the
//! precision here (a search's budget is resolved beside its loop: `ndvm_search::run::Budget`).

use ndvm_components::scene::{Device, Precision, Scene};

/// Worker threads: the count asked for (0 or none: one per core) and the workers started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threads {
    /// The caller's count, else the scene's `threads`.
    pub asked: Option<usize>,
}

impl Threads {
    /// The caller's count over the scene's.
    pub fn resolve(asked: Option<usize>, scene: &Scene) -> Threads {
        Threads {
            asked: asked.or(scene.threads),
        }
    }

    /// The cores this process may use.
    pub fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// The count a run reports: the one asked for, else one per core.
    pub fn count(self) -> usize {
        self.asked.filter(|&t| t > 0).unwrap_or_else(Threads::cores)
    }

    /// The workers to start: never more than the cores. Results do not depend on the count,
    /// and on a machine with fewer cores the extra threads would only take turns — each
    /// parallel pass then waits for a thread the kernel has put aside (16 threads on 2 cores
    /// ran a search 40% slower than 2).
    pub fn workers(self) -> usize {
        self.count().min(Threads::cores())
    }
}

/// Which job runs: their precision defaults differ (a search calibrates in f32, the
/// reference protocol's; a fit in f64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    Fit,
    Search,
}

/// The evaluator's precision: the caller's, else the scene's, else the job's default.
pub fn precision(asked: Option<Precision>, scene: &Scene, job: Job) -> Precision {
    asked.or(scene.precision).unwrap_or(match job {
        Job::Fit => Precision::F64,
        Job::Search => Precision::F32,
    })
}

/// Where replays run: the caller's choice, else the scene's `device`, else `Auto`.
pub fn device(asked: Option<Device>, scene: &Scene) -> Device {
    asked.or(scene.device).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_overrides_the_scene_which_overrides_the_default() {
        let mut scene = Scene::from_ron(r#"Scene(candidates: [Inline(name: "c", src: "a")])"#)
            .expect("a scene");
        assert_eq!(precision(None, &scene, Job::Fit), Precision::F64);
        assert_eq!(precision(None, &scene, Job::Search), Precision::F32);
        scene.precision = Some(Precision::F64);
        scene.device = Some(Device::Cpu);
        scene.threads = Some(3);
        assert_eq!(precision(None, &scene, Job::Search), Precision::F64);
        assert_eq!(
            precision(Some(Precision::F32), &scene, Job::Fit),
            Precision::F32
        );
        assert_eq!(device(None, &scene), Device::Cpu);
        assert_eq!(device(Some(Device::Gpu), &scene), Device::Gpu);
        assert_eq!(Threads::resolve(None, &scene).count(), 3);
        assert_eq!(Threads::resolve(Some(5), &scene).count(), 5);
        let per_core = Threads::resolve(Some(0), &scene);
        assert_eq!(per_core.count(), Threads::cores());
        assert_eq!(
            Threads::resolve(Some(100_000), &scene).workers(),
            Threads::cores()
        );
    }
}
