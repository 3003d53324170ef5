//! Fit results: per-candidate outcomes, the ranked table, the results JSON and the losses CSV.
//!
//! Everything in a [`FitReport`] is a function of the scene alone, so the results JSON is
//! byte-identical across runs and thread counts; wall-clock figures go in a separate top-level
//! `"timing"` object that [`to_json`] appends.
//!
//! What a result is made of, one concept per file: [`convergence`] (finished or merely
//! stopped), [`uncertainty`] (standard errors and correlations), [`selection`] (R², AIC, BIC),
//! [`warnings`] (setups that would pass silently), [`snippet`] (an error under its source
//! line); [`plots`] draws the figures of `ndvm fit --plots`, with each fitted [`curve`] on a
//! dense grid.

pub mod convergence;
pub mod curve;
pub mod parts;
pub mod plots;
pub mod selection;
pub mod snippet;
pub mod uncertainty;
pub mod warnings;

use crate::device::DeviceUsed;
use crate::loss::{self, LaneAxes};
use crate::optim::final_values;
use crate::profile::ProfileReport;
use bevy_ecs::prelude::*;
use ndvm_components::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The results of every candidate, in population order.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// Where replayed tapes ran (the CPU, or the GPU adapter).
    pub device: DeviceUsed,
    pub candidates: Vec<CandidateResult>,
    /// What the fit skipped (malformed lines of a candidate stream), each with its place.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One candidate's outcome: its best restart's loss and constants, and every restart's.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateResult {
    pub index: usize,
    pub name: String,
    /// The program.
    pub src: String,
    /// `done`, `converged`, `stopped`, `failed` (or `pending`/`active` if cut short).
    pub status: &'static str,
    /// The error of a failed candidate, the reason a stopped one stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The best restart's loss at its final parameters (`null` if never evaluated).
    pub loss: f64,
    pub best_restart: usize,
    /// The best restart's fitted constants.
    pub params: BTreeMap<String, f64>,
    /// The best restart's R² on held-out data, where there is held-out data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_r2: Option<f64>,
    /// Optimizer steps taken.
    pub steps: u32,
    pub restarts: Vec<RestartResult>,
    /// The best restart's convergence figures (for candidates that ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence: Option<crate::report::convergence::Convergence>,
    /// The best restart's output at every data point (least-squares fits with data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictions: Option<Predictions>,
    /// Parameter count, training R², AIC and BIC (least-squares fits with data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<crate::report::selection::Selection>,
    /// Standard errors and correlations of the best restart's constants (finished fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<crate::report::uncertainty::Uncertainty>,
    /// What looked wrong in its setup (an unused parameter, a parameter named like a data
    /// column); see [`crate::report::warnings`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `losses[step][restart]` (written to the losses CSV, not to the JSON).
    #[serde(skip)]
    pub losses: Vec<Vec<f64>>,
    /// Per restart, what the fit's [`Scorer`](crate::resources::Scorer) computed in the
    /// candidate's task as it finished (a search's held-out R²); `None` where nothing did.
    #[serde(skip)]
    pub scored: Option<Vec<Option<f64>>>,
}

impl CandidateResult {
    /// Each fitted constant as text: `k = 0.6956 ± 0.0031` where it has a standard error,
    /// else `k=0.695612`.
    pub fn constants(&self) -> Vec<String> {
        self.params
            .iter()
            .map(
                |(k, v)| match self.uncertainty.as_ref().and_then(|u| u.std_errors.get(k)) {
                    Some(&se) => format!("{k} = {}", crate::report::uncertainty::format(*v, se)),
                    None => format!("{k}={v:.6}"),
                },
            )
            .collect()
    }
}

/// A candidate's predictions at its data points, in file order, beside which rows were held
/// out: what a plot of data against the fitted curve needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Predictions {
    /// The program's output at each data point, at the best restart's final constants.
    pub values: Vec<f64>,
    /// Data rows (0-based, file order) held out of the fit.
    pub held_out_rows: Vec<usize>,
}

impl Predictions {
    fn of(spec: &FitSpec, results: Option<&LaneResults>, restart: usize) -> Option<Self> {
        let data = spec.data.as_ref().filter(|_| spec.loss == Loss::Mse)?;
        let points = data.points();
        let out = &results?.out;
        if out.len() != spec.restarts * points {
            return None;
        }
        Some(Predictions {
            values: out[restart * points..(restart + 1) * points].to_vec(),
            held_out_rows: (0..points).filter(|&i| !data.train[i]).collect(),
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RestartResult {
    pub loss: f64,
    pub params: BTreeMap<String, f64>,
    /// This restart's R² on held-out data, where there is held-out data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_r2: Option<f64>,
    /// This restart met its stopping rule (shown only when it did).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub converged: bool,
}

type Outcome<'a> = (
    &'a Candidate,
    &'a FitSpec,
    &'a ParamValues,
    &'a Status,
    &'a History,
    Option<&'a LaneResults>,
    Option<&'a Compiled>,
);

/// Reads every candidate's outcome from the world.
pub fn collect(world: &mut World) -> FitReport {
    let mut q = world.query::<Outcome>();
    let mut candidates: Vec<CandidateResult> = q
        .iter(world)
        .map(|(c, spec, values, status, history, results, compiled)| {
            let mut r = result(c, spec, values, status, history, results);
            add_figures(&mut r, spec, values, status, history, results);
            add_uncertainty(&mut r, spec, values, history, compiled);
            r
        })
        .collect();
    candidates.sort_by_key(|c| c.index);
    FitReport {
        device: {
            let profile = world.resource::<crate::profile::Profile>();
            profile.used.ran(profile.device.runs)
        },
        candidates,
        warnings: Vec::new(),
    }
}

/// The outcome of one candidate entity (`None` if it is not a candidate): status, loss and
/// constants of every restart, without the figures of a fit's report (losses per step,
/// convergence, predictions, selection, warnings) — what a search needs of each of the
/// thousands of candidates it retires a second.
pub fn of_entity(world: &World, entity: Entity) -> Option<CandidateResult> {
    let e = world.get_entity(entity).ok()?;
    Some(result(
        e.get::<Candidate>()?,
        e.get::<FitSpec>()?,
        e.get::<ParamValues>()?,
        e.get::<Status>()?,
        e.get::<History>()?,
        e.get::<LaneResults>(),
    ))
}

fn result(
    c: &Candidate,
    spec: &FitSpec,
    values: &ParamValues,
    status: &Status,
    history: &History,
    results: Option<&LaneResults>,
) -> CandidateResult {
    let n = spec.restarts;
    let at = final_values(history, values);
    let last = history.losses.last();
    let loss_of = |r: usize| last.and_then(|l| l.get(r)).copied().unwrap_or(f64::NAN);
    let params_of = |r: usize| {
        spec.params
            .iter()
            .enumerate()
            .map(|(p, name)| (name.clone(), at[p * n + r]))
            .collect::<BTreeMap<_, _>>()
    };
    let best = (0..n)
        .min_by(|&a, &b| rank_loss(loss_of(a)).total_cmp(&rank_loss(loss_of(b))))
        .unwrap_or(0);
    let r2 = results
        .map(|r| held_out_r2(spec, &r.out))
        .unwrap_or_default();
    let r2_of = |r: usize| r2.get(r).copied();
    let (status_name, detail) = match status {
        Status::Pending => ("pending", None),
        Status::Active => ("active", None),
        Status::Done { .. } if !loss_of(best).is_finite() => (
            "non-finite",
            Some(non_finite_detail(loss_of(best), best, n, results)),
        ),
        // The best restart's constants are the result: its own test decides.
        Status::Done { .. } if history.converged.get(best) == Some(&true) => ("converged", None),
        Status::Done { .. } => ("done", None),
        Status::Stopped { reason } => ("stopped", Some(reason.clone())),
        Status::Failed { error } => ("failed", Some(error.clone())),
    };
    CandidateResult {
        index: c.index,
        name: c.name.clone(),
        src: c.source.clone(),
        status: status_name,
        detail,
        loss: loss_of(best),
        best_restart: best,
        params: params_of(best),
        held_out_r2: r2_of(best),
        steps: history.steps,
        restarts: (0..n)
            .map(|r| RestartResult {
                loss: loss_of(r),
                params: params_of(r),
                held_out_r2: r2_of(r),
                converged: history.converged.get(r) == Some(&true),
            })
            .collect(),
        convergence: None,
        predictions: None,
        selection: None,
        uncertainty: None,
        warnings: Vec::new(),
        losses: Vec::new(),
        scored: history.held_out_r2.clone(),
    }
}

/// The figures a fit's report adds to a candidate's outcome (see [`of_entity`]).
fn add_figures(
    r: &mut CandidateResult,
    spec: &FitSpec,
    values: &ParamValues,
    status: &Status,
    history: &History,
    results: Option<&LaneResults>,
) {
    let best = r.best_restart;
    if matches!(status, Status::Done { .. } | Status::Stopped { .. }) {
        let at = final_values(history, values);
        let converged =
            matches!(status, Status::Done { .. }) && history.converged.get(best) == Some(&true);
        r.convergence = Some(crate::report::convergence::Convergence::of_restart(
            spec, history, at, best, converged,
        ));
        r.selection = crate::report::selection::Selection::of(spec, r.loss);
    }
    r.predictions = Predictions::of(spec, results.filter(|_| !history.pending_trial), best);
    r.warnings = crate::report::warnings::of_candidate(spec, &r.src, history);
    r.losses.clone_from(&history.losses);
}

/// The best restart's standard errors (finished candidates with a finite loss), or a warning
/// saying why there are none.
fn add_uncertainty(
    r: &mut CandidateResult,
    spec: &FitSpec,
    values: &ParamValues,
    history: &History,
    compiled: Option<&Compiled>,
) {
    let wanted = matches!(r.status, "done" | "converged") && spec.loss != Loss::Output;
    let (Some(compiled), true) = (compiled, wanted) else {
        return;
    };
    let all = final_values(history, values);
    let at: Vec<f64> = (0..spec.params.len())
        .map(|p| all[p * spec.restarts + r.best_restart])
        .collect();
    match crate::report::uncertainty::of(spec, &compiled.0, &at) {
        Ok(u) => r.uncertainty = Some(u),
        Err(why) => r.warnings.push(format!("no standard errors: {why}")),
    }
}

/// Where a restart's loss went non-finite: the first lane of `restart` whose output is not a
/// finite number (its data row, in file order, when the lanes are data points).
fn non_finite_detail(
    loss: f64,
    restart: usize,
    restarts: usize,
    results: Option<&LaneResults>,
) -> String {
    let head = format!("the loss is {loss} in every restart");
    let Some(out) = results
        .map(|r| &r.out)
        .filter(|o| !o.is_empty() && restarts > 0)
    else {
        return head;
    };
    let per = out.len() / restarts;
    let lanes = &out[(restart * per).min(out.len())..((restart + 1) * per).min(out.len())];
    match lanes.iter().position(|x| !x.is_finite()) {
        Some(i) if per > 1 => format!(
            "{head}: the output is {} at data row {} (lane {}, restart {restart})",
            lanes[i],
            i + 1,
            restart * per + i
        ),
        Some(i) => format!("{head}: the output is {} (restart {restart})", lanes[i]),
        None => format!("{head}: every output is finite; the loss overflowed"),
    }
}

/// R² of every restart on the held-out points, from the last step's per-lane outputs (empty
/// without held-out data).
fn held_out_r2(spec: &FitSpec, out: &[f64]) -> Vec<f64> {
    let Some(data) = spec.data.as_ref().filter(|d| d.has_held_out()) else {
        return Vec::new();
    };
    let axes = LaneAxes {
        restarts: spec.restarts,
        points: data.points(),
    };
    if out.len() != axes.lanes() {
        return Vec::new();
    }
    let held: Vec<bool> = data.train.iter().map(|t| !t).collect();
    loss::r_squared(axes, out, &data.target, &held)
}

/// Non-finite losses (NaN, and −∞ as much as +∞) rank last.
fn rank_loss(x: f64) -> f64 {
    if x.is_finite() { x } else { f64::INFINITY }
}

/// The ranking's order of two candidates by status and loss: failed and NaN last, the lower
/// loss first (ties are left to the caller: population order).
pub(crate) fn rank(status_a: &str, loss_a: f64, status_b: &str, loss_b: f64) -> std::cmp::Ordering {
    let failed = |s: &str| matches!(s, "failed" | "non-finite");
    failed(status_a)
        .cmp(&failed(status_b))
        .then(rank_loss(loss_a).total_cmp(&rank_loss(loss_b)))
}

impl FitReport {
    /// Candidate indices, best loss first (failed and NaN last, ties in population order).
    pub fn ranking(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.sort_by(|&a, &b| {
            let (ca, cb) = (&self.candidates[a], &self.candidates[b]);
            rank(ca.status, ca.loss, cb.status, cb.loss).then(a.cmp(&b))
        });
        order
    }

    /// The lowest AIC and BIC over the candidates (least-squares fits with data).
    pub fn lowest_criteria(&self) -> Option<(f64, f64)> {
        let all = self.candidates.iter().filter_map(|c| c.selection.as_ref());
        all.fold(None, |m, s| match m {
            None => Some((s.aic, s.bic)),
            Some((a, b)) => Some((s.aic.min(a), s.bic.min(b))),
        })
    }

    /// Which candidate the information criteria prefer, and whether that is not the one with
    /// the lowest loss: a line for the table's foot (empty without criteria).
    pub fn selection_note(&self) -> String {
        let order = self.ranking();
        let by = |f: fn(&selection::Selection) -> f64| {
            order
                .iter()
                .filter_map(|&i| self.candidates[i].selection.as_ref().map(|s| (i, f(s))))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(i, _)| i)
        };
        let (Some(aic), Some(bic), Some(&best)) = (by(|s| s.aic), by(|s| s.bic), order.first())
        else {
            return String::new();
        };
        let name = |i: usize| &self.candidates[i].name;
        let mut out = format!(
            "model selection: the lowest AIC is `{}`, the lowest BIC `{}` (ΔAIC above 10 is strong \
             evidence against a candidate, below 2 none)",
            name(aic),
            name(bic)
        );
        if aic != best {
            out += &format!(
                "; the lowest loss, `{}`, spends more constants than it earns",
                name(best)
            );
        }
        out.push('\n');
        out
    }

    /// The ranked table: rank, candidate, status, loss, held-out R², constants spent, AIC,
    /// ΔAIC and BIC (least-squares fits with data), fitted constants.
    pub fn table(&self, limit: usize) -> String {
        let has_r2 = self.candidates.iter().any(|c| c.held_out_r2.is_some());
        let lowest = self.lowest_criteria();
        let width = self
            .candidates
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(9)
            .clamp(9, 40);
        let mut out = format!(
            "{:>4}  {:<width$}  {:<9}  {:>12}",
            "rank", "candidate", "status", "loss"
        );
        if has_r2 {
            out += &format!("  {:>9}", "R² held");
        }
        if lowest.is_some() {
            out += &format!("  {:>2}  {:>10}  {:>7}  {:>10}", "k", "AIC", "ΔAIC", "BIC");
        }
        out += "  constants\n";
        let order = self.ranking();
        for (rank, &i) in order.iter().enumerate().take(limit) {
            let c = &self.candidates[i];
            let name: String = c.name.chars().take(width).collect();
            out += &format!(
                "{:>4}  {:<width$}  {:<9}  {:>12.6e}",
                rank + 1,
                name,
                c.status,
                c.loss
            );
            if has_r2 {
                out += &match c.held_out_r2 {
                    Some(r2) => format!("  {r2:>9.4}"),
                    None => format!("  {:>9}", "-"),
                };
            }
            if let Some((min_aic, _)) = lowest {
                out += &match &c.selection {
                    Some(s) => format!(
                        "  {:>2}  {:>10.2}  {:>7.2}  {:>10.2}",
                        s.params,
                        s.aic,
                        s.aic - min_aic,
                        s.bic
                    ),
                    None => format!("  {:>2}  {:>10}  {:>7}  {:>10}", "-", "-", "-", "-"),
                };
            }
            out += &format!("  {}", c.constants().join(" "));
            if let Some(d) = &c.detail {
                out += &format!("  ({})", d.lines().next().unwrap_or(""));
            }
            if let Some(note) = c
                .convergence
                .as_ref()
                .map(|v| v.note())
                .filter(|n| !n.is_empty())
            {
                out += &format!("  ({note})");
            }
            out.push('\n');
        }
        if order.len() > limit {
            out += &format!("… {} more (see the results JSON)\n", order.len() - limit);
        }
        out += &self.selection_note();
        for w in &self.warnings {
            out += &format!("warning: {w}\n");
        }
        for c in &self.candidates {
            for w in &c.warnings {
                out += &format!("warning: candidate `{}`: {w}\n", c.name);
            }
        }
        for c in self.candidates.iter().filter(|c| c.status == "failed") {
            let Some(detail) = &c.detail else { continue };
            if let Some(snippet) = crate::report::snippet::render(&c.src, detail) {
                out += &format!("error: candidate `{}`: {detail}\n{snippet}\n", c.name);
            }
        }
        out
    }

    /// Per-step losses as CSV: `candidate,name,restart,step,loss`.
    pub fn losses_csv(&self) -> String {
        let mut out = String::from("candidate,name,restart,step,loss\n");
        for c in &self.candidates {
            for (step, row) in c.losses.iter().enumerate() {
                for (r, loss) in row.iter().enumerate() {
                    let name = c.name.replace('"', "\"\"");
                    out += &format!("{},\"{}\",{},{},{:e}\n", c.index, name, r, step, loss);
                }
            }
        }
        out
    }
}

/// The results JSON: the report's fields, then `"timing"` (the only part that varies between
/// runs) when given.
pub fn to_json(report: &FitReport, timing: Option<&ProfileReport>, threads: usize) -> String {
    #[derive(Serialize)]
    struct Timing<'a> {
        threads: usize,
        #[serde(flatten)]
        profile: &'a ProfileReport,
    }
    #[derive(Serialize)]
    struct Results<'a> {
        #[serde(flatten)]
        report: &'a FitReport,
        ranking: Vec<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        timing: Option<Timing<'a>>,
    }
    let results = Results {
        report,
        ranking: report.ranking(),
        timing: timing.map(|profile| Timing { threads, profile }),
    };
    serde_json::to_string_pretty(&results).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The size of a skeleton: its atoms (operators, inputs, parameters and literals), the
/// parsimony measure of rankings and of a search's front.
pub fn size(skeleton: &str) -> usize {
    skeleton
        .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .count()
}
