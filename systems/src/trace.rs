//! A run's passes, recorded at one thread and projected onto more cores.
//!
//! The 2-core machines this project is built on cannot say what 16 or 64 cores would do, and
//! Amdahl's law fitted to a 2-thread speedup hides the two things that decide it: the serial
//! work between passes, and how unevenly a pass's tasks fill the workers (a pass ends with its
//! last task; a search has ~60 candidates in flight, a handful per worker on 16 cores). So a
//! traced run ([`crate::resources::FitSettings::trace_passes`]) keeps, for every iteration of
//! its loop, each pipeline task's home key and seconds, the work that ran beside the pass (a
//! search's records and refill) and the rest of the iteration's wall time — the serial part.
//! [`Trace::project`] then replays those measured tasks on `p` simulated workers by the same
//! rule the pass uses ([`crate::homes`]: own tasks first, then the others' from the back), with
//! one worker busy with the work beside the pass first, and adds the serial parts unchanged.
//!
//! It is a model: memory bandwidth and caches shared by more cores are not in it, waking the
//! workers is a fixed cost per pass ([`Projection::seconds`]), a candidate whose groups spread
//! over the cores counts as one task ([`Trace::projectable`] says so), and parallel work the
//! trace does not time apart counts as serial, which makes the projection pessimistic. Its
//! 2-worker figure can be checked against a measured 2-thread run (the scaling bench prints
//! both).

/// One task of a pass: its home key ([`crate::homes::run_at_home`]) and its seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskTime {
    pub home: usize,
    pub secs: f64,
    /// Its candidate's groups spread over the cores inside the task (a wide candidate): the
    /// projection, which gives a task one worker, does not hold ([`Trace::projectable`]).
    pub wide: bool,
}

/// One iteration of a traced loop.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pass {
    /// The pass's tasks, in the order the pass hands them out (costliest first).
    pub tasks: Vec<TaskTime>,
    /// Work run beside the pass (the search's records and refill): on one worker, and spread
    /// over every worker (building records, preparing proposals; the held-out R² of draws not
    /// scored in their tasks).
    pub beside_s: f64,
    pub beside_parallel_s: f64,
    /// Work between passes that runs on every core (decoding new candidates, building the
    /// finished ones' reports).
    pub spread_s: f64,
    /// The rest of the iteration: serial at any thread count.
    pub serial_s: f64,
    /// Of `serial_s`, what the pass itself spent outside its tasks (collecting and ordering
    /// them, spawning the groups they split off).
    pub pass_overhead_s: f64,
}

/// Every iteration of a traced run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub passes: Vec<Pass>,
    /// Passes already closed by [`Trace::close`].
    closed: usize,
    /// Spread work of the iteration not closed yet.
    open_spread_s: f64,
}

impl Trace {
    /// A pipeline pass ran these tasks in `wall_s` (called by the pass itself).
    pub fn push(&mut self, tasks: Vec<TaskTime>, wall_s: f64) {
        let work: f64 = tasks.iter().map(|t| t.secs).sum();
        self.passes.push(Pass {
            tasks,
            pass_overhead_s: (wall_s - work).max(0.0),
            ..Pass::default()
        });
    }

    /// Work between passes ran `secs` on every core (its one-thread seconds).
    pub fn spread(&mut self, secs: f64) {
        self.open_spread_s += secs;
    }

    /// One iteration of the loop ended after `wall_s` seconds, `beside` of them (serial,
    /// parallel) beside its pass: what its pass (if any) did not account for is serial. Several
    /// passes in one iteration are kept apart; the serial part goes to the last.
    pub fn close(&mut self, wall_s: f64, (beside_s, parallel_s): (f64, f64)) {
        if self.closed == self.passes.len() {
            self.passes.push(Pass::default());
        }
        let new = &mut self.passes[self.closed..];
        let tasks: f64 = new.iter().flat_map(|p| &p.tasks).map(|t| t.secs).sum();
        let last = new.last_mut().expect("a pass");
        last.beside_s = beside_s;
        last.beside_parallel_s = parallel_s;
        last.spread_s = std::mem::take(&mut self.open_spread_s);
        last.serial_s = (wall_s - tasks - beside_s - parallel_s - last.spread_s).max(0.0);
        self.closed = self.passes.len();
    }

    /// Whether [`Trace::project`] models the run: no task spread over the cores itself.
    pub fn projectable(&self) -> bool {
        self.passes.iter().flat_map(|p| &p.tasks).all(|t| !t.wide)
    }

    /// Seconds of the traced run as measured (one thread): every task, beside and serial part.
    pub fn total_s(&self) -> f64 {
        self.passes
            .iter()
            .map(|p| p.serial_s + p.spread_s + p.beside_s + p.beside_parallel_s + p.work())
            .sum()
    }

    /// The serial parts alone.
    pub fn serial_s(&self) -> f64 {
        self.passes.iter().map(|p| p.serial_s).sum()
    }

    /// The run projected onto `workers` workers (see the module docs).
    pub fn project(&self, workers: usize) -> Projection {
        let workers = workers.max(1);
        let mut out = Projection::default();
        for p in &self.passes {
            let work = p.work() + p.beside_s + p.beside_parallel_s;
            let span = if workers == 1 {
                work
            } else {
                // The parallel work beside the pass: an equal share on every worker.
                let share = p.beside_parallel_s / workers as f64;
                let mut tasks = p.tasks.clone();
                if share > 0.0 {
                    let share = |home| TaskTime {
                        home,
                        secs: share,
                        wide: false,
                    };
                    tasks.extend((0..workers).map(share));
                }
                makespan(&tasks, workers, p.beside_s)
            };
            out.serial_s += p.serial_s;
            out.spread_s += p.spread_s / workers as f64;
            out.pass_s += span;
            // What the pass's span costs beyond a perfect split of its work over the workers.
            out.imbalance_s += (span - work / workers as f64).max(0.0);
            out.passes += u64::from(!p.tasks.is_empty());
        }
        out
    }
}

impl Pass {
    /// Its tasks' seconds.
    pub fn work(&self) -> f64 {
        self.tasks.iter().map(|t| t.secs).sum()
    }
}

/// A projected run (see [`Trace::project`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Projection {
    /// The passes' spans, and how much of them is waiting on the slowest worker.
    pub pass_s: f64,
    pub imbalance_s: f64,
    /// The serial parts, and the spread work between passes on every worker.
    pub serial_s: f64,
    pub spread_s: f64,
    /// Passes that ran tasks.
    pub passes: u64,
}

impl Projection {
    /// Projected seconds, with `wake_s` paid by every pass (waking the workers).
    pub fn seconds(&self, wake_s: f64) -> f64 {
        self.pass_s + self.serial_s + self.spread_s + wake_s * self.passes as f64
    }
}

/// When the last of `tasks` ends on `workers` workers taking them as [`crate::homes`] does,
/// with worker 1 first busy for `beside_s` (the work beside the pass); at least `beside_s`.
fn makespan(tasks: &[TaskTime], workers: usize, beside_s: f64) -> f64 {
    let mut homes: Vec<Vec<usize>> = vec![Vec::new(); workers];
    for (i, t) in tasks.iter().enumerate() {
        homes[t.home % workers].push(i);
    }
    let mut free_at = vec![0.0; workers];
    free_at[1 % workers] = beside_s;
    let mut claimed = vec![false; tasks.len()];
    let mut ended = beside_s;
    let mut idle = vec![false; workers];
    loop {
        // The worker free first (the lowest index on a tie) takes its next unclaimed task.
        let Some(w) = (0..workers)
            .filter(|&w| !idle[w])
            .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]))
        else {
            return ended;
        };
        match crate::homes::visits(&homes, w).find(|&i| !claimed[i]) {
            Some(i) => {
                claimed[i] = true;
                free_at[w] += tasks[i].secs;
                ended = ended.max(free_at[w]);
            }
            None => idle[w] = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(secs: &[(usize, f64)]) -> Vec<TaskTime> {
        secs.iter()
            .map(|&(home, secs)| TaskTime {
                home,
                secs,
                wide: false,
            })
            .collect()
    }

    #[test]
    fn one_worker_projects_the_measured_run() {
        let mut t = Trace::default();
        t.push(tasks(&[(0, 0.5), (1, 0.25)]), 0.875);
        assert_eq!(t.passes[0].pass_overhead_s, 0.125);
        t.close(1.0, (0.125, 0.0));
        t.close(0.5, (0.0, 0.0)); // an iteration without a pass: all serial
        t.spread(0.25);
        t.close(0.5, (0.0, 0.0));
        assert_eq!(t.passes[2].spread_s, 0.25);
        assert_eq!(t.project(2).spread_s, 0.125);
        t.passes.pop();
        assert_eq!(t.passes.len(), 2);
        assert_eq!(t.passes[0].serial_s, 0.125);
        assert_eq!(t.passes[1].serial_s, 0.5);
        assert_eq!(t.total_s(), 1.5);
        assert_eq!(t.project(1).seconds(0.0), 1.5);
        assert_eq!(t.serial_s(), 0.625);
    }

    #[test]
    fn a_pass_waits_for_its_slowest_worker() {
        // Four equal tasks at home on four workers: one task's time.
        let even = tasks(&[(0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)]);
        assert_eq!(makespan(&even, 4, 0.0), 1.0);
        // One large task and three small ones on two workers: the large one alone.
        let skewed = tasks(&[(0, 3.0), (0, 1.0), (0, 1.0), (0, 1.0)]);
        assert_eq!(makespan(&skewed, 2, 0.0), 3.0);
        // Worker 1 records first; worker 0 takes its tasks meanwhile.
        assert_eq!(makespan(&even, 2, 4.0), 4.0);
        assert_eq!(makespan(&even, 2, 1.0), 3.0);
        // More workers than tasks.
        assert_eq!(makespan(&even, 16, 0.0), 1.0);
    }

    #[test]
    fn the_projection_splits_serial_pass_and_imbalance() {
        let mut t = Trace::default();
        t.push(tasks(&[(0, 3.0), (1, 1.0)]), 4.0);
        t.close(5.0, (0.0, 0.0));
        let p = t.project(2);
        assert_eq!(p.serial_s, 1.0);
        assert_eq!(p.pass_s, 3.0);
        assert_eq!(p.imbalance_s, 1.0);
        assert_eq!(p.seconds(0.5), 4.5);
        // Parallel work beside the pass fills the idle worker first.
        let mut t = Trace::default();
        t.push(tasks(&[(0, 3.0), (1, 1.0)]), 4.0);
        t.close(6.0, (0.0, 2.0));
        assert_eq!(t.total_s(), 6.0);
        assert_eq!(t.project(2).pass_s, 3.0);
    }
}
