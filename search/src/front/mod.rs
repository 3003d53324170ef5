//! The Pareto front: the best calibration at every complexity — the search's answer.
//!
//! Ranking thousands of fits by R² on a few held-out points picks whatever happens to fit those
//! points; the training loss alone picks the biggest program. The front keeps both in view: for
//! each *complexity* (the atoms of the skeleton — operators, inputs, parameters and literals,
//! [`complexity`]) the best calibration, and only where it beats every simpler program. Its
//! size is bounded by the complexities, not by the calibrations.
//!
//! "Best" is the *adjusted loss*. For a least-squares search with `n` training points it is
//! `ln(training loss) + k·ln(n)/n` for a program with `k` fitted constants — BIC per training
//! point — so that at one complexity `a − b/(S + c)` (three constants) does not push out the law
//! `a·S/(S + c)` (two) by fitting the noise a little closer, and a spare offset `(+ z c)` must
//! earn its place. (BIC rather than AIC: the question is which law, not the best predictor.)
//! Losses below [`FLOOR`] × the targets' variance count as that floor: on noise-free data the
//! last digits are rounding and unconverged steps, and `(* mu (- Nn (sin (- Nn Nn))))` must not
//! beat `(* a (* mu Nn))` on them. For other losses it is the training loss itself.
//!
//! When the search ends the front becomes a [`FrontReport`]: equivalent skeletons are grouped
//! (the larger folded into the simpler, [`crate::front::equivalence`]), each entry gets its *score* — the drop
//! in adjusted loss per unit of complexity from the entry before it (PySR's score, with BIC's
//! penalty) — and one entry is *chosen* by [`CRITERION`], PySR's "best": the highest score among
//! the entries within 1.5× the lowest loss — over trajectories calibrated in windows, only among
//! the entries whose *reconstruction R²* (the fitted trajectories integrated whole,
//! [`Record::reconstruction_r2`]) is within [`RECONSTRUCTION_SLACK`] of the front's best
//! ([`CRITERION_TRAJECTORIES`]). Where the data is synthetic, the entry equivalent to
//! the law that generated it is marked `truth`. Every entry carries its equation as a sympy
//! string and as LaTeX ([`crate::symbolic::infix`]).

pub mod equivalence;

use crate::front::equivalence::Classes;
use crate::record::{Record, size};
use crate::symbolic::expr::Expr;
use crate::symbolic::infix;
use ndvm_components::dataset::Dataset;
use ndvm_components::scene::{Data, Loss, Scene};
use ndvm_systems::population::template::FILL;
use serde::Serialize;

/// Most entries the front holds (the most complex go first).
pub const MAX_ENTRIES: usize = 128;
/// How much lower a more complex program's adjusted loss must be to join the front: a
/// relative 1e-6 of the loss, below which two fits of one law differ only by where their
/// optimizers stopped.
pub const TOLERANCE: f64 = 1e-6;
/// The chosen entry's loss is at most this many times the lowest loss on the front.
pub const WITHIN: f64 = 1.5;
/// How the chosen entry is picked, as the results name it.
pub const CRITERION: &str = "score: the largest drop in adjusted loss per unit of complexity \
    from the simpler entry before it, among entries within 1.5x the lowest loss (PySR's \
    \"best\")";
/// How the chosen entry is picked in a search over trajectories calibrated in windows.
pub const CRITERION_TRAJECTORIES: &str = "score, as without trajectories, among the entries \
    whose reconstruction R2 (the fitted trajectories integrated whole from their first \
    observations) is within 0.01 of the front's best";
/// How far below the front's best reconstruction R² an entry may be and still be chosen.
pub const RECONSTRUCTION_SLACK: f64 = 0.01;
/// What the adjusted loss is, as the results name it.
pub const ADJUSTED: &str = "ln(max(training loss, floor)) + k ln(n)/n for k fitted constants \
    and n training points (BIC per point; floor: 1e-10 x the variance of the training targets) \
    in least-squares searches, else the training loss";
/// Lowest and highest training loss the front's plot draws (others are drawn at these).
const LOSS_FLOOR: f64 = 1e-300;
const LOSS_CEILING: f64 = 1e300;

/// What complexity counts, as the results name it.
pub const COMPLEXITY: &str = "atoms of the skeleton: operators, inputs, parameters and literals";

/// The law behind a scene's synthetic data: its program and the names of its constants.
#[derive(Clone, Debug, PartialEq)]
pub struct Truth {
    pub program: String,
    pub constants: Vec<String>,
}

/// The law behind a scene's synthetic data, or `None` for measured data.
pub fn truth(scene: &Scene) -> Option<Truth> {
    match &scene.data {
        Some(Data::Synthetic {
            program, constants, ..
        }) => Some(Truth {
            program: program.clone(),
            constants: constants.keys().cloned().collect(),
        }),
        _ => None,
    }
}

/// What the adjusted loss of a least-squares search needs of its training data.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Penalty {
    /// Training points: the `n` of the BIC penalty.
    pub points: usize,
    /// Losses below this count as this: [`FLOOR`] × the variance of the training targets.
    pub floor: f64,
}

/// The smallest loss told apart, relative to the targets' variance (an R² of 1 − 1e-10):
/// below it, differences are rounding and unconverged digits, not laws.
pub const FLOOR: f64 = 1e-10;

/// The penalty of a least-squares search with data (`train`: its training points), else
/// `None` (the front compares plain losses).
pub fn penalty(scene: &Scene, train: Option<&Dataset>) -> Option<Penalty> {
    let d = train.filter(|_| scene.loss == Loss::Mse && scene.data.is_some())?;
    let n = d.points();
    if n == 0 {
        return None;
    }
    let mean = d.target.iter().sum::<f64>() / n as f64;
    let var = d.target.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64;
    Some(Penalty {
        points: n,
        floor: (FLOOR * var).max(f64::MIN_POSITIVE),
    })
}

/// The complexity of a skeleton: its atoms (a template's filling, `(holes E1 E2 …)`: the
/// atoms of all its expressions together).
pub fn complexity(skeleton: &str) -> usize {
    let filling = skeleton.starts_with(&format!("({FILL} ")) || skeleton == format!("({FILL})");
    size(skeleton) - usize::from(filling)
}

/// The front as the search grows it: ascending complexity, strictly falling adjusted loss.
#[derive(Clone, Debug, Default)]
pub struct Front {
    /// For a least-squares search (the BIC penalty); `None`: plain loss.
    penalty: Option<Penalty>,
    /// (complexity, adjusted loss, record).
    entries: Vec<(usize, f64, Record)>,
}

impl Front {
    /// An empty front; `penalty`: a least-squares search's ([`penalty`]).
    pub fn new(penalty: Option<Penalty>) -> Front {
        Front {
            penalty: penalty.filter(|p| p.points > 0),
            entries: Vec::new(),
        }
    }

    /// The penalty it uses.
    pub fn penalty(&self) -> Option<Penalty> {
        self.penalty
    }

    /// `r`'s adjusted loss (see the module docs).
    pub fn adjusted(&self, r: &Record) -> f64 {
        match self.penalty {
            Some(p) => {
                let n = p.points as f64;
                r.train_loss.max(p.floor).ln() + r.params.len() as f64 * n.ln() / n
            }
            None => r.train_loss,
        }
    }

    /// Whether [`Front::offer`] would take `r` now.
    pub fn admits(&self, r: &Record) -> bool {
        self.place(r).is_some()
    }

    /// Takes `r` if no simpler-or-equal program has an adjusted loss as low; drops what it
    /// dominates. Returns whether it joined. Only finished calibrations with a finite loss are
    /// offered.
    pub fn offer(&mut self, r: &Record) -> bool {
        let Some((c, v, start, end)) = self.place(r) else {
            return false;
        };
        let mut joined = r.clone();
        joined.front = true;
        self.entries
            .splice(start..end, [(c, v, joined)])
            .for_each(drop);
        self.entries.truncate(MAX_ENTRIES);
        true
    }

    /// Where `r` would join: its complexity, its adjusted loss and the entries it replaces
    /// (`start..end`); `None` if it would not.
    fn place(&self, r: &Record) -> Option<(usize, f64, usize, usize)> {
        if !matches!(r.status, "done" | "converged") || !r.train_loss.is_finite() {
            return None;
        }
        let c = complexity(&r.skeleton);
        let v = self.adjusted(r);
        let at = self.entries.partition_point(|(k, _, _)| *k <= c);
        // Adjusted losses are logarithms under a penalty: an absolute margin is relative.
        let margin = TOLERANCE * if self.penalty.is_some() { 1.0 } else { v.abs() };
        // The entry before `at` is the simplest-or-equal one with the lowest value so far; a
        // more complex program must beat it by more than rounding.
        if at > 0 {
            let (k, best, _) = &self.entries[at - 1];
            let margin = if *k < c { margin } else { 0.0 };
            if *best - margin <= v {
                return None;
            }
        }
        // Entries of the same complexity sit just before `at`; they lose to `r`.
        let mut start = at;
        while start > 0 && self.entries[start - 1].0 == c {
            start -= 1;
        }
        if start >= MAX_ENTRIES {
            return None;
        }
        // More complex entries it dominates: not better than it by more than rounding.
        let mut end = at;
        while end < self.entries.len() && self.entries[end].1 >= v - margin {
            end += 1;
        }
        Some((c, v, start, end))
    }

    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.entries.iter().map(|(_, _, r)| r)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One entry of the finished front.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub complexity: usize,
    /// What the front compares ([`ADJUSTED`]).
    pub adjusted_loss: f64,
    /// The drop in adjusted loss per unit of complexity from the entry before (0 for the
    /// first).
    pub score: f64,
    /// The equation with its fitted constants, for `sympy.sympify` (absent for programs that
    /// are not one expression: loops, `let`, closures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sympy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latex: Option<String>,
    /// A template's filling: one equation per hole, in the template's order (then `sympy` and
    /// `latex` are absent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub equations: Vec<HoleEquation>,
    /// Larger skeletons on the front that are this one up to its constants (folded into it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub equivalent: Vec<String>,
    /// Equivalent, up to constants, to the law that generated the (synthetic) data.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truth: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub chosen: bool,
    #[serde(flatten)]
    pub record: Record,
}

/// One hole's equation in a front entry: `dx/dt = 0.9·x − 0.1·x·y`.
#[derive(Clone, Debug, Serialize)]
pub struct HoleEquation {
    pub hole: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sympy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latex: Option<String>,
}

impl Entry {
    /// The entry as text: its equation, a template's `hole = equation` per hole, or its
    /// program.
    pub fn text(&self) -> String {
        if !self.equations.is_empty() {
            let parts: Vec<String> = self
                .equations
                .iter()
                .map(|e| format!("{} = {}", e.hole, e.sympy.as_deref().unwrap_or("?")))
                .collect();
            return parts.join("; ");
        }
        self.sympy
            .clone()
            .unwrap_or_else(|| self.record.src.clone())
    }
}

/// Each hole's equation of a filling `src` (`(holes E1 E2 …)`, named by `holes`), with
/// `params` written as their values; empty when `src` is not such a filling.
pub fn hole_equations(
    src: &str,
    params: &std::collections::BTreeMap<String, f64>,
    holes: &[String],
) -> Vec<HoleEquation> {
    let Ok(Expr::List(items)) = Expr::parse(src, infix::MAX_NODES) else {
        return Vec::new();
    };
    if holes.is_empty() || items.len() != holes.len() + 1 {
        return Vec::new();
    }
    holes
        .iter()
        .zip(&items[1..])
        .map(|(hole, e)| {
            let eq = infix::Equation::of(&e.to_string(), params);
            HoleEquation {
                hole: hole.clone(),
                sympy: eq.as_ref().map(|e| e.sympy()),
                latex: eq.as_ref().map(|e| e.latex()),
            }
        })
        .collect()
}

/// The finished front and the pick.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FrontReport {
    pub complexity: &'static str,
    pub adjusted_loss: &'static str,
    /// The training points of the BIC penalty and the loss floor (absent when the loss is not
    /// least squares).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub penalty: Option<Penalty>,
    pub criterion: &'static str,
    /// Simplest first.
    pub entries: Vec<Entry>,
    /// The position of the chosen entry in `entries`.
    pub chosen: Option<usize>,
    /// Whether an entry is the generating law (absent unless the data is synthetic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truth_found: Option<bool>,
}

impl FrontReport {
    /// Groups (unless `group` is false: every entry its own law), scores and picks. `truth` is
    /// the law behind synthetic data.
    pub fn build(
        front: &Front,
        truth: Option<&Truth>,
        group: bool,
        holes: &[String],
    ) -> FrontReport {
        let records: Vec<&Record> = front.records().collect();
        let names: Vec<Vec<String>> = records
            .iter()
            .map(|r| r.params.keys().cloned().collect())
            .collect();
        let mut programs: Vec<(&str, &[String])> = records
            .iter()
            .zip(&names)
            .map(|(r, n)| (r.src.as_str(), n.as_slice()))
            .collect();
        if let Some(t) = truth {
            programs.push((&t.program, &t.constants));
        }
        let classes = if group {
            Classes::of(&programs)
        } else {
            Classes::apart(programs.len())
        };
        let truth_class = truth.and_then(|_| classes.class(records.len()));
        let mut entries: Vec<(Option<egg::Id>, Entry)> = Vec::new();
        for (i, (c, adjusted, r)) in front.entries.iter().enumerate() {
            let class = classes.class(i);
            if let Some(simpler) = entries.iter_mut().find(|(k, _)| k.is_some() && *k == class) {
                simpler.1.equivalent.push(r.skeleton.clone());
                continue;
            }
            let equations = hole_equations(&r.src, &r.params, holes);
            let expr = equations
                .is_empty()
                .then(|| infix::Equation::of(&r.src, &r.params))
                .flatten();
            entries.push((
                class,
                Entry {
                    complexity: *c,
                    adjusted_loss: *adjusted,
                    score: 0.0,
                    sympy: expr.as_ref().map(|e| e.sympy()),
                    latex: expr.as_ref().map(|e| e.latex()),
                    equations,
                    equivalent: Vec::new(),
                    truth: class.is_some() && class == truth_class,
                    chosen: false,
                    record: r.clone(),
                },
            ));
        }
        let mut entries: Vec<Entry> = entries.into_iter().map(|(_, e)| e).collect();
        for i in 1..entries.len() {
            let (a, b) = (&entries[i - 1], &entries[i]);
            let dc = (b.complexity - a.complexity).max(1) as f64;
            entries[i].score = (a.adjusted_loss - b.adjusted_loss) / dc;
        }
        // Over trajectories calibrated in windows, an entry whose trajectory integrated whole
        // drifts away or blows up is not an answer, however well it fits each window.
        let whole = |e: &Entry| e.record.reconstruction_r2.unwrap_or(f64::NEG_INFINITY);
        let measured = entries.iter().any(|e| e.record.reconstruction_r2.is_some());
        let best_whole = entries.iter().map(whole).fold(f64::NEG_INFINITY, f64::max);
        let eligible = |e: &Entry| !measured || whole(e) >= best_whole - RECONSTRUCTION_SLACK;
        let lowest = (entries.iter().filter(|e| eligible(e)))
            .map(|e| e.record.train_loss)
            .fold(f64::INFINITY, f64::min);
        let within = |l: f64| l <= lowest + (WITHIN - 1.0) * lowest.abs();
        // Ties go to the simpler entry.
        let chosen = (0..entries.len())
            .filter(|&i| eligible(&entries[i]) && within(entries[i].record.train_loss))
            .fold(None, |best: Option<usize>, i| match best {
                Some(b) if entries[b].score >= entries[i].score => Some(b),
                _ => Some(i),
            });
        if let Some(c) = chosen {
            entries[c].chosen = true;
        }
        FrontReport {
            complexity: COMPLEXITY,
            adjusted_loss: ADJUSTED,
            penalty: front.penalty,
            criterion: if measured {
                CRITERION_TRAJECTORIES
            } else {
                CRITERION
            },
            // Only where the law could be compared (one arithmetic expression, small enough).
            truth_found: truth_class.map(|_| entries.iter().any(|e| e.truth)),
            entries,
            chosen,
        }
    }

    pub fn chosen(&self) -> Option<&Entry> {
        self.chosen.map(|i| &self.entries[i])
    }

    /// Training loss (log scale) against complexity: the front as a step line, the chosen
    /// entry and the generating law marked.
    pub fn svg(&self, title: &str) -> String {
        let mut svg = String::new();
        if let Err(e) = self.draw(&mut svg, title) {
            return format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text>{e}</text></svg>");
        }
        svg
    }

    fn draw(&self, svg: &mut String, title: &str) -> Result<(), Box<dyn std::error::Error + '_>> {
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        // Losses are drawn within [1e-300, 1e300]: a log axis over the whole f64 range (a loss
        // of 1e308 padded to infinity) has no finite ticks, and plotters then never returns.
        let points: Vec<(f64, f64)> = self
            .entries
            .iter()
            .map(|e| {
                let loss = e.record.train_loss;
                let loss = if loss.is_nan() { LOSS_CEILING } else { loss };
                (e.complexity as f64, loss.clamp(LOSS_FLOOR, LOSS_CEILING))
            })
            .collect();
        let (c_hi, l_lo, l_hi) = points.iter().fold(
            (1.0f64, f64::INFINITY, f64::NEG_INFINITY),
            |(c, lo, hi), &(x, y)| (c.max(x), lo.min(y), hi.max(y)),
        );
        let (l_lo, l_hi) = if l_lo.is_finite() && l_lo < l_hi {
            (l_lo / 1.5, l_hi * 1.5)
        } else if l_lo.is_finite() {
            (l_lo / 10.0, l_lo * 10.0)
        } else {
            (1e-3, 1.0)
        };
        let (l_lo, l_hi) = (l_lo.max(LOSS_FLOOR / 10.0), l_hi.min(LOSS_CEILING * 10.0));
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..c_hi + 1.0, (l_lo..l_hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("complexity (atoms)")
            .y_desc("training loss")
            .draw()?;
        let mut steps = Vec::new();
        for w in points.windows(2) {
            steps.push(w[0]);
            steps.push((w[1].0, w[0].1));
        }
        if let Some(&p) = points.last() {
            steps.push(p);
            steps.push((c_hi + 1.0, p.1));
        }
        chart
            .draw_series(LineSeries::new(steps, BLUE.stroke_width(2)))?
            .label("Pareto front")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))?;
        let marked = |f: fn(&Entry) -> bool| -> Vec<(f64, f64)> {
            self.entries
                .iter()
                .zip(&points)
                .filter(|(e, _)| f(e))
                .map(|(_, &p)| p)
                .collect()
        };
        chart
            .draw_series(
                marked(|e| e.truth)
                    .into_iter()
                    .map(|p| Circle::new(p, 9, GREEN.stroke_width(2))),
            )?
            .label("the generating law")
            .legend(|(x, y)| Circle::new((x + 8, y), 6, GREEN.stroke_width(2)));
        chart
            .draw_series(
                marked(|e| e.chosen)
                    .into_iter()
                    .map(|p| Circle::new(p, 6, RED.filled())),
            )?
            .label("chosen (score)")
            .legend(|(x, y)| Circle::new((x + 8, y), 5, RED.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }

    /// The front as a text table, simplest first: `*` marks the chosen entry, `=` the
    /// generating law.
    pub fn table(&self, by_r2: bool) -> String {
        let mut out = format!(
            "Pareto front (training loss against complexity; * chosen by score{})\n{:>5}  {:>12}  {:>9}  {:>7}  equation\n",
            if self.truth_found.is_some() {
                ", = the generating law"
            } else {
                ""
            },
            "compl",
            "train loss",
            if by_r2 { "R² held" } else { "" },
            "score"
        );
        for e in &self.entries {
            let r2 = match e.record.held_out_r2 {
                Some(x) if by_r2 => format!("{x:.4}"),
                _ => String::new(),
            };
            let shown = e.text();
            out += &format!(
                "{}{}{:>3}  {:>12.6e}  {:>9}  {:>7.3}  {}\n",
                if e.chosen { '*' } else { ' ' },
                if e.truth { '=' } else { ' ' },
                e.complexity,
                e.record.train_loss,
                r2,
                e.score,
                crate::record::shortened(&shown, 160)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn rec(i: u64, src: &str, skeleton: &str, loss: f64) -> Record {
        let mut r = Record::sample(i, src, skeleton, loss);
        r.params = BTreeMap::from([("a".into(), 2.0), ("b".into(), 0.5)]);
        r
    }

    fn shape(f: &Front) -> Vec<(usize, f64)> {
        f.entries
            .iter()
            .map(|(c, _, r)| (*c, r.train_loss))
            .collect()
    }

    #[test]
    fn the_front_keeps_the_best_loss_per_complexity_where_it_beats_all_simpler() {
        let mut f = Front::new(None);
        assert!(f.offer(&rec(0, "(* a x)", "(* P x)", 4.0)));
        assert!(f.offer(&rec(1, "(+ a (* b x))", "(+ P (* P x))", 1.0)));
        // Worse than a simpler entry: dominated.
        assert!(!f.offer(&rec(2, "(+ a (* b (* x x)))", "(+ P (* P (* x x)))", 2.0)));
        // Same complexity as the first, lower loss: replaces it.
        assert!(f.offer(&rec(3, "(* a y)", "(* P y)", 3.0)));
        // Simpler than everything and better than the second: drops both.
        assert!(f.offer(&rec(4, "a", "P", 0.5)));
        assert_eq!(shape(&f), vec![(1, 0.5)]);
        let mut nan = rec(5, "x", "x", f64::NAN);
        assert!(!f.offer(&nan));
        nan.train_loss = 0.1;
        nan.status = "failed";
        assert!(!f.offer(&nan));
    }

    #[test]
    fn the_chosen_entry_has_the_steepest_drop_within_the_loss_band() {
        let mut f = Front::new(None);
        f.offer(&rec(0, "(* a x)", "(* P x)", 1.0));
        f.offer(&rec(1, "(+ a (* b x))", "(+ P (* P x))", 0.011));
        f.offer(&rec(2, "(+ a (* b (exp x)))", "(+ P (* P (exp x)))", 0.010));
        f.offer(&rec(
            3,
            "(+ a (* b (exp (sin x))))",
            "(+ P (* P (exp (sin x))))",
            0.0099,
        ));
        let truth = Truth {
            program: "(+ c (* x k))".into(),
            constants: vec!["c".into(), "k".into()],
        };
        let front = FrontReport::build(&f, Some(&truth), true, &[]);
        let c = front.chosen().expect("a pick");
        assert_eq!(c.complexity, 5);
        assert_eq!(c.record.calibration, 1);
        assert!(c.truth, "commuted operands are the same law");
        assert_eq!(front.truth_found, Some(true));
        // Unpenalized: the plain loss; (1 - 0.011)/2
        let want = (1.0 - 0.011) / 2.0;
        assert!((front.entries[1].score - want).abs() < 1e-12 * want);
        assert_eq!(c.sympy.as_deref(), Some("2 + 0.5*x"));
    }

    #[test]
    fn over_trajectories_the_choice_passes_over_an_entry_that_drifts_when_integrated_whole() {
        let front = |whole: [Option<f64>; 3]| {
            let mut f = Front::new(None);
            let losses = [1.0, 0.011, 0.010];
            let srcs = ["(* a x)", "(+ a (* b x))", "(+ a (* b (exp x)))"];
            for (i, ((src, loss), w)) in srcs.iter().zip(losses).zip(whole).enumerate() {
                let mut r = rec(i as u64, src, src, loss);
                r.reconstruction_r2 = w;
                assert!(f.admits(&r), "{src}");
                assert!(f.offer(&r));
                assert!(!f.admits(&r), "{src} is on the front");
            }
            FrontReport::build(&f, None, true, &[])
        };
        // Measured and as good as the best: the steepest drop, as without trajectories.
        let kept = front([Some(0.2), Some(0.995), Some(0.999)]);
        assert_eq!(kept.chosen().expect("pick").record.calibration, 1);
        assert!(kept.criterion.contains("reconstruction"));
        // Its whole trajectory drifts (R² more than 0.01 below the best) or blows up: the
        // next entry in the band.
        for drifts in [Some(0.95), None] {
            let passed = front([Some(0.2), drifts, Some(0.999)]);
            assert_eq!(passed.chosen().expect("pick").record.calibration, 2);
        }
        // Every entry blew up: the choice falls back on the losses.
        assert_eq!(
            front([None; 3]).chosen().expect("pick").record.calibration,
            1
        );
        assert!(!front([None; 3]).criterion.contains("reconstruction"));
    }

    #[test]
    fn a_constant_must_earn_its_place_at_one_complexity() {
        // 30 points: a third constant must cut the loss by 1 − exp(−ln(30)/30) ≈ 10.7% to win.
        let mut f = Front::new(Some(Penalty {
            points: 30,
            floor: 1e-30,
        }));
        let mut law = rec(0, "(/ (* a S) (+ S b))", "(/ (* P S) (+ S P))", 1.00e-4);
        law.params.remove("c");
        assert!(f.offer(&law));
        let mut offset = rec(1, "(- a (/ b (+ S c)))", "(- P (/ P (+ S P)))", 0.96e-4);
        offset.params.insert("c".into(), 0.7);
        assert!(
            !f.offer(&offset),
            "4% lower loss does not pay for a constant"
        );
        offset.train_loss = 0.90e-4;
        assert!(!f.offer(&offset), "10% lower does not either");
        offset.train_loss = 0.88e-4;
        assert!(f.offer(&offset), "12% lower does");
        assert_eq!(shape(&f), vec![(7, 0.88e-4)]);
        let want = (0.88e-4f64).ln() + 3.0 * 30f64.ln() / 30.0;
        assert!((f.adjusted(&offset) - want).abs() < 1e-12);
    }

    #[test]
    fn the_plot_of_an_extreme_front_returns_with_finite_axes() {
        // A loss near f64::MAX once sent the log axis's ticks into a loop that never ended.
        for losses in [
            vec![1e308],
            vec![f64::MIN_POSITIVE, 1e308],
            vec![0.0, f64::INFINITY],
        ] {
            let mut f = Front::new(None);
            for (i, &l) in losses.iter().enumerate() {
                let src = format!("(* a {})", "(+ x x)".repeat(i));
                f.offer(&rec(i as u64, &src, &src, l));
            }
            let front = FrontReport::build(&f, None, true, &[]);
            assert!(!front.entries.is_empty(), "{losses:?}");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(front.svg("extreme")).ok());
            let svg = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the plot returns");
            assert!(svg.contains("Pareto front"), "{losses:?}: {svg}");
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{losses:?}");
        }
    }
}
