//! Trajectories: time series of a system's states, and the model that is integrated over them.
//!
//! A `Trajectory` data source (`ndvm_components::scene::Data::Trajectory`) is a CSV file with a
//! time column, one column per state and, optionally, a column naming each row's trajectory
//! (several in one file, each one's rows together, times strictly increasing). Each trajectory
//! becomes two shared matrix inputs — its times (`1 × n`) and its states (`n × d`) — and every
//! candidate, a right-hand side `(define (rhs t x y …) [dx dy …])`, is followed by the ODE
//! library ([`LIBRARY`], fixed-step RK4 in the dialect) and a last expression that integrates
//! `rhs` over each trajectory from its first observation and sums the squared differences at
//! every later observation, each state divided by its spread over the file (so states of
//! different units weigh alike). One lane per restart runs the whole trajectory: memory and time
//! grow linearly with its length, never one integration per observation. A run that blows up
//! (a scaled squared difference past 1e100, or not a number) stops there with an infinite loss.
//! A model may carry states the file does not hold (`hidden`), and its starting state may be
//! calibrated rather than read from the first row (`fit_start`): those starting values are
//! parameters ([`Trajectories::starts`]) and only the observed states are compared.

use crate::population::data::{DataError, cell};
use ndvm_components::candidate::SharedMatrix;
use ndvm_components::dataset::{ColumnNames, Dataset};
use ndvm_components::input_file;
use ndvm_components::scene::{Data, Parameters};
use std::path::Path;

/// The ODE library, in the dialect. `(ode-rk4 f t s h)`: one classical Runge–Kutta step of
/// `ds/dt = (f t s)` from the state vector `s` at time `t`; `(ode-advance f t0 t1 s n)`: `n` such
/// steps from `t0` to `t1`; `(ode-sse f times obs scale n w)`: the scaled squared error of the
/// trajectory started at `obs`'s first row, against its later rows, starting again from the
/// observed state every `w` intervals (`+inf.0` once a state blows up). [`STARTS_LIBRARY`]'s
/// `ode-sse-from` is the same from the state `s0`, comparing `(see s)` with each row and
/// starting again from `(restart s row)`: how a model with states the data do not hold, or a
/// calibrated start, is scored.
pub const LIBRARY: &str = "\
(define (ode-rk4 f t s h)
  (let* ((k1 (f t s))
         (k2 (f (+ t (* 0.5 h)) (+ s (* (* 0.5 h) k1))))
         (k3 (f (+ t (* 0.5 h)) (+ s (* (* 0.5 h) k2))))
         (k4 (f (+ t h) (+ s (* h k3)))))
    (+ s (* (/ h 6) (+ k1 (* 2 k2) (* 2 k3) k4)))))
(define (ode-advance f t0 t1 s n)
  (let ((h (/ (- t1 t0) n)))
    (loop ((j 0) (s s))
      (if (= j n) s (recur (+ j 1) (ode-rk4 f (+ t0 (* j h)) s h))))))
(define (ode-sse f times obs scale n w)
  (loop ((k 1) (s (ref obs 0)) (sse 0))
    (if (= k (vlen times))
        sse
        (let* ((s1 (ode-advance f (ref times (- k 1)) (ref times k) s n))
               (e (/ (- s1 (ref obs k)) scale))
               (e2 (dot e e)))
          (if (< e2 1e100)
              (recur (+ k 1) (if (= (remainder k w) 0) (ref obs k) s1) (+ sse e2))
              +inf.0)))))
";

/// The library's part for a model whose starting state is calibrated (hidden states,
/// `fit_start`), appended to [`LIBRARY`] only then.
pub const STARTS_LIBRARY: &str = "\
(define (ode-sse-from f times obs scale n w s0 see restart)
  (loop ((k 1) (s s0) (sse 0))
    (if (= k (vlen times))
        sse
        (let* ((s1 (ode-advance f (ref times (- k 1)) (ref times k) s n))
               (e (/ (- (see s1) (ref obs k)) scale))
               (e2 (dot e e)))
          (if (< e2 1e100)
              (recur (+ k 1) (if (= (remainder k w) 0) (restart s1 (ref obs k)) s1) (+ sse e2))
              +inf.0)))))
";

/// One trajectory: its name, its times and its states (`times × states`, row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    pub id: String,
    pub times: Vec<f64>,
    pub states: Vec<f64>,
}

/// A scene's trajectories: the file's, in the order they appear, and the RK4 steps between
/// two observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectories {
    pub states: Vec<String>,
    pub runs: Vec<Trajectory>,
    pub substeps: u32,
    /// Observation intervals per integration (`None`: the whole trajectory).
    pub window: Option<u32>,
    /// The model's states the file does not hold, after `states`, with where their starting
    /// values' calibration starts.
    pub hidden: Vec<(String, f64)>,
    /// Whether the observed states' starting values are calibrated too.
    pub fit_start: bool,
}

impl Trajectories {
    /// The trajectories of a scene's `data: Some(Trajectory(…))` (paths relative to `base`);
    /// `None` for other data.
    pub fn of(data: &Data, base: &Path) -> Result<Option<Trajectories>, DataError> {
        let Data::Trajectory {
            path,
            time,
            states,
            id,
            substeps,
            window,
            hidden,
            fit_start,
            ..
        } = data
        else {
            return Ok(None);
        };
        let mut t = Trajectories::read(&base.join(path), time, states, id.as_deref())?;
        t.substeps = *substeps;
        t.window = *window;
        t.hidden = hidden.iter().map(|h| (h.name.clone(), h.start)).collect();
        t.fit_start = *fit_start;
        Ok(Some(t))
    }

    /// Reads `path`: `time` and the `states` columns, one trajectory per value of the `id`
    /// column (or the whole file), integrated with 10 steps between observations.
    pub fn read(
        path: &Path,
        time: &str,
        states: &[String],
        id: Option<&str>,
    ) -> Result<Trajectories, DataError> {
        let shown = path.display().to_string();
        let fail = |message: String| DataError::Csv {
            path: shown.clone(),
            message,
        };
        let text = input_file::read(path, input_file::DATA_LIMIT).map_err(fail)?;
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| fail(e.to_string()))?.clone();
        let index = |name: &str| {
            headers
                .iter()
                .position(|h| h.trim() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = headers.iter().take(20).map(str::trim).collect();
                    fail(format!(
                        "no column `{name}` (columns: {})",
                        names.join(", ")
                    ))
                })
        };
        let time_at = index(time)?;
        let state_at: Vec<usize> = states.iter().map(|s| index(s)).collect::<Result<_, _>>()?;
        let id_at = id.map(index).transpose()?;
        let mut runs: Vec<Trajectory> = Vec::new();
        let per_row = states.len() + 1;
        for (r, record) in reader.records().enumerate() {
            let record = record.map_err(|e| fail(e.to_string()))?;
            let row = r + 2; // 1-based, after the header
            if (r + 1).saturating_mul(per_row) > ndvm_components::limits::DATA_VALUES {
                return Err(fail(format!(
                    "more than {} values (rows × time and state columns): over the limit",
                    ndvm_components::limits::DATA_VALUES
                )));
            }
            let number =
                |at: usize, column: &str| cell(&shown, row, column, record.get(at).unwrap_or(""));
            let name = id_at.map_or("", |at| record.get(at).unwrap_or("").trim());
            if runs.last().is_none_or(|t| t.id != name) {
                if runs.iter().any(|t| t.id == name) {
                    return Err(fail(format!(
                        "row {row}: trajectory `{name}` goes on after another began: keep each \
                         trajectory's rows together"
                    )));
                }
                runs.push(Trajectory {
                    id: name.to_string(),
                    times: Vec::new(),
                    states: Vec::new(),
                });
            }
            let t = number(time_at, time)?;
            let run = runs.last_mut().expect("pushed above");
            if let Some(&before) = run.times.last()
                && t <= before
            {
                return Err(fail(format!(
                    "row {row}: time {t} is not after {before}, the time before it{}: a \
                     trajectory's times must increase",
                    in_trajectory(name)
                )));
            }
            run.times.push(t);
            for (at, column) in state_at.iter().zip(states) {
                run.states.push(number(*at, column)?);
            }
        }
        if runs.is_empty() {
            return Err(fail("no data rows".into()));
        }
        if let Some(short) = runs.iter().find(|t| t.times.len() < 2) {
            return Err(fail(format!(
                "one observation{}: a trajectory needs at least two",
                in_trajectory(&short.id)
            )));
        }
        Ok(Trajectories {
            states: states.to_vec(),
            runs,
            substeps: 10,
            window: None,
            hidden: Vec::new(),
            fit_start: false,
        })
    }

    /// Moves the trajectories named in `ids` out into a set of their own (`None` when `ids` is
    /// empty): what a search holds out. Every id must name a trajectory, and one must be left.
    pub fn hold_out(
        &mut self,
        ids: &[String],
        shown: &str,
    ) -> Result<Option<Trajectories>, DataError> {
        if ids.is_empty() {
            return Ok(None);
        }
        let fail = |message: String| DataError::Csv {
            path: shown.to_string(),
            message,
        };
        if let Some(missing) = ids.iter().find(|i| !self.runs.iter().any(|r| &r.id == *i)) {
            let known: Vec<&str> = self.runs.iter().take(20).map(|r| r.id.as_str()).collect();
            return Err(fail(format!(
                "`held_out` names trajectory `{missing}`, which the file does not have (it has {})",
                known.join(", ")
            )));
        }
        let (held, kept): (Vec<Trajectory>, Vec<Trajectory>) = std::mem::take(&mut self.runs)
            .into_iter()
            .partition(|r| ids.contains(&r.id));
        if kept.is_empty() {
            return Err(fail(
                "`held_out` names every trajectory: none is left to fit".into(),
            ));
        }
        self.runs = kept;
        Ok(Some(Trajectories {
            states: self.states.clone(),
            runs: held,
            substeps: self.substeps,
            // Held out: predicted whole from its first observation.
            window: None,
            hidden: Vec::new(),
            fit_start: false,
        }))
    }

    /// The total sum of squares the R² of a model compares with: every observation after a
    /// trajectory's first (the ones the loss compares), each state's distance to its mean over
    /// all observations, divided by its spread as the loss divides it.
    pub fn total_squares(&self) -> f64 {
        let d = self.states.len();
        let spread = self.spread();
        let n = self.runs.iter().map(|t| t.times.len()).sum::<usize>() as f64;
        let means: Vec<f64> = (0..d)
            .map(|j| {
                let sum: f64 = self
                    .runs
                    .iter()
                    .flat_map(|t| t.states.iter().skip(j).step_by(d))
                    .sum();
                sum / n
            })
            .collect();
        self.runs
            .iter()
            .flat_map(|t| t.states.chunks(d).skip(1))
            .map(|row| {
                row.iter()
                    .zip(&means)
                    .zip(&spread)
                    .map(|((y, m), s)| ((y - m) / s).powi(2))
                    .sum::<f64>()
            })
            .sum()
    }

    /// Each state's standard deviation over every observation (1 where it does not vary):
    /// what the loss divides its differences by.
    pub fn spread(&self) -> Vec<f64> {
        let d = self.states.len();
        (0..d)
            .map(|j| {
                let xs = self
                    .runs
                    .iter()
                    .flat_map(|t| t.states.iter().skip(j).step_by(d));
                let (n, sum) = xs.clone().fold((0.0, 0.0), |(n, s), &x| (n + 1.0, s + x));
                let mean = sum / n;
                let var = xs.map(|&x| (x - mean) * (x - mean)).sum::<f64>() / n;
                if var > 0.0 { var.sqrt() } else { 1.0 }
            })
            .collect()
    }

    /// The shared inputs the model reads: each trajectory's times and states, and the spreads.
    pub fn inputs(&self) -> Vec<SharedMatrix> {
        let d = self.states.len();
        let mut out = Vec::with_capacity(2 * self.runs.len() + 1);
        for (i, t) in self.runs.iter().enumerate() {
            out.push(SharedMatrix {
                name: format!("ndvm-times-{i}"),
                rows: 1,
                cols: t.times.len(),
                data: t.times.clone(),
            });
            out.push(SharedMatrix {
                name: format!("ndvm-states-{i}"),
                rows: t.times.len(),
                cols: d,
                data: t.states.clone(),
            });
        }
        out.push(SharedMatrix {
            name: "ndvm-spread".into(),
            rows: 1,
            cols: d,
            data: self.spread(),
        });
        out
    }

    /// The one-interval problems of `window: Some(1)`, as data points: one per observation
    /// after a trajectory's first and per state, each integrating `rhs` over one interval from
    /// the observation before (`ndvm-t0`, `ndvm-t1`, the states `ndvm-s0`, `ndvm-s1`, …) and
    /// fitted to the state it reached, divided by its spread (the one-hot `ndvm-w0`, `ndvm-w1`,
    /// … pick the state). A least-squares problem: Levenberg–Marquardt calibrates it.
    pub fn intervals(&self) -> Dataset {
        let d = self.states.len();
        let spread = self.spread();
        let mut columns: Vec<(String, Vec<f64>)> = ["ndvm-t0", "ndvm-t1"]
            .into_iter()
            .map(String::from)
            .chain((0..d).map(|j| format!("ndvm-s{j}")))
            .chain((0..d).map(|j| format!("ndvm-w{j}")))
            .map(|n| (n, Vec::new()))
            .collect();
        let mut target = Vec::new();
        for t in &self.runs {
            for k in 1..t.times.len() {
                let (before, after) =
                    (&t.states[(k - 1) * d..k * d], &t.states[k * d..(k + 1) * d]);
                for j in 0..d {
                    columns[0].1.push(t.times[k - 1]);
                    columns[1].1.push(t.times[k]);
                    for (i, x) in before.iter().enumerate() {
                        columns[2 + i].1.push(*x);
                        columns[2 + d + i].1.push(if i == j { 1.0 } else { 0.0 });
                    }
                    target.push(after[j] / spread[j]);
                }
            }
        }
        let names = ColumnNames {
            inputs: columns
                .iter()
                .map(|(n, _)| (n.clone(), n.clone()))
                .collect(),
            target: "ndvm-next".into(),
        };
        Dataset {
            train: vec![true; target.len()],
            inputs: columns.into_iter().collect(),
            target,
            dropped_rows: Vec::new(),
            names,
        }
    }

    /// The parameters a model's starting state adds, with where their calibration starts:
    /// for each fitted trajectory, the observed states' (`fit_start`, from the first
    /// observation) then the hidden states', named `<state>_0` — `<state>_0_<k>` for the `k`-th
    /// of several trajectories, in file order.
    pub fn starts(&self) -> Vec<(String, f64)> {
        let d = self.states.len();
        let mut out = Vec::new();
        for (k, run) in self.runs.iter().enumerate() {
            let name = |s: &str| self.start_name(s, k);
            if self.fit_start {
                out.extend((self.states.iter().zip(&run.states[..d])).map(|(s, x)| (name(s), *x)));
            }
            out.extend(self.hidden.iter().map(|(h, x)| (name(h), *x)));
        }
        out
    }

    /// `params` with the starting values' parameters ([`Trajectories::starts`]) added: a name
    /// the scene already lists keeps its own `init` and `bounds`.
    pub fn with_starts(&self, params: &Parameters) -> Parameters {
        let mut out = params.clone();
        for (name, x) in self.starts() {
            if !out.names.contains(&name) {
                out.names.push(name.clone());
            }
            out.init.entry(name).or_insert(x);
        }
        out
    }

    /// Whether the model's starting state is calibrated (hidden states, `fit_start`).
    fn has_starts(&self) -> bool {
        !self.hidden.is_empty() || self.fit_start
    }

    /// The name of `state`'s starting value in the `k`-th trajectory (from 0).
    fn start_name(&self, state: &str, k: usize) -> String {
        match self.runs.len() {
            1 => format!("{state}_0"),
            _ => format!("{state}_0_{}", k + 1),
        }
    }

    /// The trajectory `i`'s loss in the program: from its first observation, or from its
    /// starting parameters ([`Trajectories::starts`]).
    fn loss(&self, i: usize, window: usize) -> String {
        let n = self.substeps;
        let common = format!(
            "ndvm-rhs (ref ndvm-times-{i} 0) ndvm-states-{i} (ref ndvm-spread 0) {n} {window}"
        );
        if !self.has_starts() {
            return format!("(ode-sse {common})");
        }
        let d = self.states.len();
        let name = |s: &str| self.start_name(s, i);
        let observed: Vec<String> = (0..d)
            .map(|j| match self.fit_start {
                true => name(&self.states[j]),
                false => format!("(ref (ref ndvm-states-{i} 0) {j})"),
            })
            .collect();
        let hidden: Vec<String> = self.hidden.iter().map(|(h, _)| name(h)).collect();
        format!(
            "(ode-sse-from {common} [{} {}] ndvm-see ndvm-restart)",
            observed.join(" "),
            hidden.join(" ")
        )
    }

    /// `source` (which defines `rhs`) as the whole program: the library, then the loss summed
    /// over the trajectories. The candidate's own text comes first, so its errors keep their
    /// lines.
    pub fn program(&self, source: &str) -> String {
        let substeps = self.substeps;
        let longest = self.runs.iter().map(|t| t.times.len()).max().unwrap_or(1);
        let window = self.window.map_or(longest, |w| w as usize);
        let d = self.states.len();
        let args: Vec<String> = (0..d + self.hidden.len())
            .map(|j| format!("(ref s {j})"))
            .collect();
        let rhs = format!("(define (ndvm-rhs t s) (rhs t {}))", args.join(" "));
        if self.window == Some(1) {
            let start: Vec<String> = (0..d).map(|j| format!("ndvm-s{j}")).collect();
            let picked: Vec<String> = (self.spread().iter().enumerate())
                .map(|(j, s)| format!("(* ndvm-w{j} (/ (ref s1 {j}) {s:?}))"))
                .collect();
            return format!(
                "{source}\n{MARKER}\n{LIBRARY}{rhs}\n(let ((s1 (ode-advance ndvm-rhs ndvm-t0 ndvm-t1 [{}] {substeps})))\n  (+ {}))\n",
                start.join(" "),
                picked.join(" ")
            );
        }
        let losses: Vec<String> = (0..self.runs.len()).map(|i| self.loss(i, window)).collect();
        // What a model with hidden states shows the data, and starts again from.
        let views = if !self.has_starts() {
            String::new()
        } else {
            let seen: Vec<String> = (0..d).map(|j| format!("(ref s {j})")).collect();
            let kept: Vec<String> = (d..d + self.hidden.len())
                .map(|j| format!("(ref s {j})"))
                .collect();
            let from_row: Vec<String> = (0..d).map(|j| format!("(ref o {j})")).collect();
            format!(
                "{STARTS_LIBRARY}(define (ndvm-see s) [{}])\n(define (ndvm-restart s o) [{} {}])\n",
                seen.join(" "),
                from_row.join(" "),
                kept.join(" ")
            )
        };
        format!(
            "{source}\n{MARKER}\n{LIBRARY}{rhs}\n{views}(+ 0 {})\n",
            losses.join(" ")
        )
    }
}

/// The line between a candidate's own text and what [`Trajectories::program`] appends.
const MARKER: &str = ";; ndvm: the ODE library and the trajectory loss";

/// The candidate's own text of a program [`Trajectories::program`] built (the whole text if
/// it was not built so).
pub fn candidate_of(program: &str) -> &str {
    program
        .rfind(&format!("\n{MARKER}\n"))
        .map_or(program, |at| &program[..at])
}

fn in_trajectory(id: &str) -> String {
    if id.is_empty() {
        String::new()
    } else {
        format!(" in trajectory `{id}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("t.csv");
        std::fs::write(&path, text).expect("written");
        (dir, path)
    }

    fn states() -> Vec<String> {
        vec!["x".into(), "y".into()]
    }

    #[test]
    fn trajectories_are_read_in_order_with_their_spread() {
        let (_d, path) = file("run,t,y,x\na,0,1,10\na,1,3,20\nb,0,5,30\nb,0.5,7,40\nb,2,9,50\n");
        let t = Trajectories::read(&path, "t", &states(), Some("run")).expect("reads");
        assert_eq!(t.runs.len(), 2);
        assert_eq!(t.runs[0].id, "a");
        assert_eq!(t.runs[0].times, [0.0, 1.0]);
        assert_eq!(t.runs[0].states, [10.0, 1.0, 20.0, 3.0]);
        assert_eq!(t.runs[1].times, [0.0, 0.5, 2.0]);
        // x: 10, 20, 30, 40, 50 (sd √200); y: 1, 3, 5, 7, 9 (sd √8).
        let spread = t.spread();
        assert!((spread[0] - 200f64.sqrt()).abs() < 1e-12, "{spread:?}");
        assert!((spread[1] - 8f64.sqrt()).abs() < 1e-12, "{spread:?}");
        let inputs = t.inputs();
        assert_eq!(inputs.len(), 5);
        assert_eq!(
            (inputs[3].name.as_str(), inputs[3].rows, inputs[3].cols),
            ("ndvm-states-1", 3, 2)
        );
        let one = Trajectories::read(&path, "t", &states(), None);
        assert!(
            one.expect_err("one trajectory")
                .to_string()
                .contains("row 4: time 0 is not after 1")
        );
    }

    #[test]
    fn errors_name_the_row_and_column() {
        let cases = [
            ("t,x\n0,1\n1,2\n", "no column `y` (columns: t, x)"),
            ("t,x,y\n0,1,2\n0,2,3\n", "row 3: time 0 is not after 0"),
            (
                "t,x,y\n0,1,2\n1,,3\n",
                "row 3: column `x` holds ``, not a number",
            ),
            (
                "t,x,y\n0,1,2\n1,inf,3\n",
                "row 3: column `x` holds `inf`, not a finite number",
            ),
            (
                "t,x,y\n0,1,2\n",
                "one observation: a trajectory needs at least two",
            ),
            ("t,x,y\n", "no data rows"),
        ];
        for (text, want) in cases {
            let (_d, path) = file(text);
            let err = Trajectories::read(&path, "t", &states(), None).expect_err(want);
            assert!(err.to_string().contains(want), "{err} ≠ {want}");
        }
        let (_d, path) = file("id,t,x,y\na,0,1,2\na,1,1,2\nb,0,1,2\nb,1,1,2\na,2,1,2\n");
        let err = Trajectories::read(&path, "t", &states(), Some("id")).expect_err("interleaved");
        assert!(
            err.to_string()
                .contains("row 6: trajectory `a` goes on after another began")
        );
    }
}
