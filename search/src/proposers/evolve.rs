//! The `Evolve` proposer: a seeded structural search that mutates the best candidates so far.
//!
//! It watches every calibration the search finishes (whoever proposed it) and keeps an *elite*:
//! the best distinct skeletons by training loss, lightly penalized by size so that of two
//! equally good programs the smaller wins. Beside the elite it keeps its own Pareto front
//! ([`crate::front`]: the best loss at each complexity), so that the simple laws a size-blind
//! ranking would push out stay parents. Each proposal is a mutation ([`crate::proposers::mutate`]) of a
//! parent — from the front one time in [`FROM_FRONT`], else from the elite with a bias towards
//! the best — or now and then a fresh random term;
//! with nothing seen yet it starts from its seeds — by default `(* a x)` for every input `x`.
//! A proposal whose skeleton was proposed before is not proposed again (the memory of seen
//! skeletons is bounded: two generations of [`SEEN_PER_GENERATION`] keys).
//!
//! A program that joins its front with a fitted constant next to a nice value (`1.5707963`,
//! `0.3333333`: [`crate::symbolic::snap`]) is proposed again, first, with that constant written as the nice
//! value (`π/2`, `1/3`), one constant at a time and all at once: where the law has the exact
//! value, the snapped program fits as well with fewer constants and takes the place on the
//! front.
//!
//! Each constant of such a program is also tried written as 1, which drops a constant that only
//! rescales the others. Its mutations keep `exp`/`log` and `sin`/`cos`/`tan` out of their own
//! family unless the settings allow it (`nested`).
//!
//! In a search with a template ([`ndvm_systems::population::template`]) its programs are
//! fillings, `(holes E1 E2 …)`: every hole has its own grammar (the variables it declares); a
//! mutation changes one hole, a crossover takes one hole whole from another program, a fresh
//! term fills every hole, and the default seeds fill every hole with `(* a v)` for each
//! variable `v`. Its size limit is `max_nodes` per hole.
//!
//! Everything is drawn from one seeded generator and the results it observes, so the same
//! search proposes the same programs whatever the thread count.

use crate::front::Front;
use crate::proposers::mutate::{FRESH, Grammar, graft, nests, normalize};
use crate::proposers::{Context, Notes, Proposal, Proposer, ProposerError};
use crate::record::{Record, key};
use crate::symbolic::expr::{Expr, skeleton};
use crate::symbolic::snap;
use ndvm_components::scene::search::Evolve as Settings;
use ndvm_systems::population::template::FILL;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashSet, VecDeque};

/// Skeletons remembered per generation of the seen set.
pub const SEEN_PER_GENERATION: usize = 1 << 18;
/// Relative loss penalty per tree node in the elite's ranking.
const PARSIMONY: f64 = 0.01;
/// Most parameters in a proposal.
const MAX_PARAMS: usize = 6;
/// Tries to find an unseen mutation for one slot.
const TRIES: usize = 40;
/// One parent in this many comes from the front.
const FROM_FRONT: u32 = 4;
/// How close (relative) a fitted constant must be to a nice value to be snapped to it.
pub const SNAP_TOLERANCE: f64 = 2e-3;
/// How close to zero a constant of a template's program must be to be proposed as zero.
pub const SNAP_ZERO: f64 = 1e-5;
/// Most snapped programs waiting to be proposed (the oldest go first).
const SNAPS_WAITING: usize = 64;

#[derive(Debug)]
struct Elite {
    expr: Expr,
    params: Vec<String>,
    key: u64,
    fitness: f64,
}

#[derive(Debug)]
pub struct Evolve {
    settings: Settings,
    grammar: Grammar,
    rng: ChaCha8Rng,
    /// Parameter names it gives out (letters that are not inputs).
    pool: Vec<String>,
    elite: Vec<Elite>,
    /// The front of what it observed, and its entries as parents.
    front: Front,
    front_parents: Vec<Elite>,
    seeds: VecDeque<Expr>,
    /// Programs with constants snapped to nice values, and their remaining parameters.
    snaps: VecDeque<(Expr, Vec<String>)>,
    seen: [HashSet<u64>; 2],
    proposed: u64,
    /// One grammar per hole of the search's template (empty without one).
    holes: Vec<Grammar>,
    /// Largest program it proposes (nodes): `max_nodes`, per hole with a template.
    max_nodes: usize,
}

/// Parameters per hole a template's programs may have (beyond [`MAX_PARAMS`]).
const PARAMS_PER_HOLE: usize = 4;
/// One hole-by-hole crossover in this many changes to a template's programs.
const CROSSOVER: u32 = 5;

impl Evolve {
    pub fn new(settings: &Settings, context: &Context) -> Result<Evolve, String> {
        let template = context.template.as_deref();
        let holes = template.map_or(&[][..], |t| t.holes());
        let taken = |n: &str| {
            context.inputs.iter().chain(&context.shared).any(|i| i == n)
                || template.is_some_and(|t| t.mentions(n))
                || holes.iter().any(|h| h.vars.iter().any(|v| v == n))
        };
        let pool: Vec<String> = ('a'..='z')
            .map(String::from)
            .filter(|n| !taken(n))
            .take(MAX_PARAMS.max(PARAMS_PER_HOLE * holes.len()))
            .collect();
        let max_nodes = settings.max_nodes * holes.len().max(1) + usize::from(!holes.is_empty());
        let grammar = |inputs: &[String]| Grammar {
            inputs: inputs.to_vec(),
            unary: settings.unary.clone(),
            binary: settings.binary.clone(),
            loop_steps: if settings.loops {
                settings.loop_steps.clone()
            } else {
                Vec::new()
            },
        };
        let mut seeds = VecDeque::new();
        for s in &settings.seeds {
            let e = Expr::parse(s, max_nodes.max(64))
                .map_err(|why| format!("`Evolve` seed `{s}` is not one small program: {why}"))?;
            if template.is_some() && fill_arity(&e) != Some(holes.len()) {
                return Err(format!(
                    "`Evolve` seed `{s}` is not a filling of the template: write \
                     `(holes E1 … E{})`, one expression per hole",
                    holes.len()
                ));
            }
            seeds.push_back(e);
        }
        if seeds.is_empty() && template.is_some() {
            let mut vars: Vec<&String> = Vec::new();
            for v in holes.iter().flat_map(|h| &h.vars) {
                if !vars.contains(&v) {
                    vars.push(v);
                }
            }
            for v in vars {
                let fill = holes.iter().map(|h| {
                    let x = if h.vars.contains(v) {
                        Some(v)
                    } else {
                        h.vars.first()
                    };
                    x.map_or_else(
                        || Expr::sym(FRESH),
                        |x| Expr::call("*", [Expr::sym(FRESH), Expr::sym(x)]),
                    )
                });
                seeds.push_back(Expr::call(FILL, fill));
            }
            // Every linear term in each hole, summed: a linear vector field to build on.
            seeds.push_back(Expr::call(FILL, holes.iter().map(|h| linear(&h.vars))));
        } else if seeds.is_empty() {
            for x in &context.inputs {
                seeds.push_back(Expr::call("*", [Expr::sym(FRESH), Expr::sym(x)]));
            }
        }
        // Other islands' best programs (a sharded search's later epochs): a hint, so one that
        // does not fit this island's limits is passed over.
        for m in &context.migrants {
            if let Ok(e) = Expr::parse(m, max_nodes.max(64)) {
                seeds.push_back(e);
            }
        }
        if context.inputs.is_empty() && settings.seeds.is_empty() && template.is_none() {
            return Err("`Evolve` needs data inputs (or `seeds`) to build programs from".into());
        }
        if template.is_some_and(|t| t.holes().is_empty()) {
            return Err("`Evolve` fills a template's holes, and this template has none".into());
        }
        Ok(Evolve {
            grammar: grammar(&context.inputs),
            holes: holes.iter().map(|h| grammar(&h.vars)).collect(),
            max_nodes,
            settings: settings.clone(),
            rng: ChaCha8Rng::seed_from_u64(context.seed),
            pool,
            elite: Vec::new(),
            front: Front::new(context.front_penalty),
            front_parents: Vec::new(),
            seeds,
            snaps: VecDeque::new(),
            seen: [HashSet::new(), HashSet::new()],
            proposed: 0,
        })
    }

    fn seen(&self, k: u64) -> bool {
        self.seen[0].contains(&k) || self.seen[1].contains(&k)
    }

    fn remember(&mut self, k: u64) {
        if self.seen[0].len() >= SEEN_PER_GENERATION {
            self.seen.swap(0, 1);
            self.seen[0].clear();
        }
        self.seen[0].insert(k);
    }

    /// A parent from the elite, biased to the best (rank ∝ u²).
    fn parent(&mut self) -> Option<usize> {
        if self.elite.is_empty() {
            return None;
        }
        let u: f64 = self.rng.random();
        Some(((u * u) * self.elite.len() as f64) as usize % self.elite.len())
    }

    /// One new program (with `?` for new parameters and the parent's names for the others), or
    /// `None` when what it built breaks the nesting rule (a mutation that does not apply gives
    /// way to a random term, as before).
    fn candidate(&mut self) -> Option<(Expr, Vec<String>)> {
        if let Some(seed) = self.seeds.pop_front() {
            let mut params = Vec::new();
            seed.symbols(&mut params);
            params.retain(|p| self.pool.contains(p));
            return Some((seed, params));
        }
        if let Some(snapped) = self.snaps.pop_front() {
            return Some(snapped);
        }
        let fresh = self.elite.is_empty() || self.rng.random_bool(0.1);
        if !fresh && let (Some(p), Some(d)) = (self.parent(), self.parent()) {
            let from_front = !self.front_parents.is_empty() && self.rng.random_ratio(1, FROM_FRONT);
            let parent = if from_front {
                let i = self.rng.random_range(0..self.front_parents.len());
                &self.front_parents[i]
            } else {
                &self.elite[p]
            };
            let (parent, params) = (parent.expr.clone(), parent.params.clone());
            let (donor, donor_params) = (self.elite[d].expr.clone(), self.elite[d].params.clone());
            let mut child = self.mutate(&parent, (&donor, &donor_params));
            if self.rng.random_bool(0.3)
                && let Some(c) = &child
            {
                child = self.mutate(c, (&donor, &donor_params)).or(child);
            }
            if let Some(c) = child {
                return self.allowed(&c).then_some((c, params));
            }
        }
        let term = self.term();
        self.allowed(&term).then_some((term, Vec::new()))
    }

    /// A random term, or with a template a filling of random terms.
    fn term(&mut self) -> Expr {
        if self.holes.is_empty() {
            return self.grammar.term(3, &mut self.rng);
        }
        let terms: Vec<Expr> = (0..self.holes.len())
            .map(|i| self.holes[i].term(3, &mut self.rng))
            .collect();
        Expr::call(FILL, terms)
    }

    /// One change to `parent`: a mutation, or with a template a mutation of one hole or (one
    /// time in [`CROSSOVER`]) that hole taken whole from `donor`.
    fn mutate(&mut self, parent: &Expr, (donor, donor_params): (&Expr, &[String])) -> Option<Expr> {
        if self.holes.is_empty() {
            return self
                .grammar
                .mutate(parent, (donor, donor_params), &mut self.rng);
        }
        let (Expr::List(ours), Expr::List(theirs)) = (parent, donor) else {
            return None;
        };
        if ours.len() != self.holes.len() + 1 || theirs.len() != ours.len() {
            return None;
        }
        let i = self.rng.random_range(0..self.holes.len());
        let new = if self.rng.random_ratio(1, CROSSOVER) {
            graft(&theirs[i + 1], donor_params)
        } else {
            let donor_hole = (&theirs[i + 1], donor_params);
            self.holes[i].mutate(&ours[i + 1], donor_hole, &mut self.rng)?
        };
        let mut child = ours.clone();
        child[i + 1] = new;
        Some(Expr::List(child))
    }

    /// Whether a program it built keeps to its nesting rule.
    fn allowed(&self, e: &Expr) -> bool {
        self.settings.nested || !nests(e)
    }

    /// A named, size-checked, unseen proposal, or `None`.
    fn finish(&mut self, mut e: Expr, params: &[String]) -> Option<Proposal> {
        // A program without constants is a law too (`x1·y1 + x2·y2`, `q·E`): calibrated as it
        // is, it keeps a spare constant from fitting the noise at its place on the front.
        let params = normalize(&mut e, params, &self.pool)?;
        if e.nodes() > self.max_nodes {
            return None;
        }
        let src = e.to_string();
        let k = key(&skeleton(&src, &params).ok()?);
        if self.seen(k) {
            return None;
        }
        self.remember(k);
        self.proposed += 1;
        Some(Proposal {
            src,
            params,
            name: format!("evolve:{}", self.proposed),
        })
    }

    /// Adds `r` to the elite if it is among the best distinct skeletons, and to the front if
    /// no simpler program fits as well.
    fn consider(&mut self, r: &Record) {
        let ok = matches!(r.status, "done" | "converged") && r.train_loss.is_finite();
        if !ok {
            return;
        }
        if self.front.offer(r) {
            self.snap(r);
            let max_nodes = self.max_nodes;
            self.front_parents = self
                .front
                .records()
                .filter_map(|r| parent_of(r, max_nodes, 0.0))
                .collect();
        }
        let nodes = r
            .skeleton
            .split(['(', ' '])
            .filter(|t| !t.is_empty())
            .count();
        let fitness = r.train_loss * (1.0 + PARSIMONY * nodes as f64);
        let k = key(&r.skeleton);
        if let Some(e) = self.elite.iter_mut().find(|e| e.key == k) {
            if fitness < e.fitness {
                e.fitness = fitness;
                self.elite
                    .sort_by(|a, b| a.fitness.total_cmp(&b.fitness).then(a.key.cmp(&b.key)));
            }
            return;
        }
        let full = self.elite.len() >= self.settings.elite;
        if full && self.elite.last().is_some_and(|w| fitness >= w.fitness) {
            return;
        }
        let Some(elite) = parent_of(r, self.max_nodes, fitness) else {
            return;
        };
        if full {
            self.elite.pop();
        }
        let at = self
            .elite
            .partition_point(|e| (e.fitness, e.key) < (fitness, k));
        self.elite.insert(at, elite);
    }

    /// Queues `r`'s program with each fitted constant near a nice value written as that value,
    /// and with all of them at once when there are several; then, with each other constant
    /// written as 1 — a constant that only rescales others (`a/(b·x + c)`) is then dropped, the
    /// refit moves the scale into the rest, and those may land on nice values
    /// (`−9/(x − 3)`).
    fn snap(&mut self, r: &Record) {
        let Some(parent) = parent_of(r, self.max_nodes, 0.0) else {
            return;
        };
        let near: Vec<(&String, f64)> = parent
            .params
            .iter()
            .filter_map(|p| {
                let v = *r.params.get(p)?;
                // With a template, a term whose constant is about zero is proposed without it.
                if !self.holes.is_empty() && v.abs() < SNAP_ZERO {
                    return Some((p, 0.0));
                }
                Some((p, snap::nice(v, SNAP_TOLERANCE)?))
            })
            .collect();
        let mut sets: Vec<Vec<(&String, f64)>> = near.iter().map(|&n| vec![n]).collect();
        if near.len() > 1 {
            sets.push(near.clone());
        }
        if parent.params.len() > 1 {
            let free = parent
                .params
                .iter()
                .filter(|p| !near.iter().any(|(q, _)| q == p));
            sets.extend(free.map(|p| vec![(p, 1.0)]));
        }
        for set in sets {
            let mut e = parent.expr.clone();
            for &(p, v) in &set {
                e.substitute(p, v);
            }
            e.drop_unit_factors();
            if !self.holes.is_empty() {
                e.drop_zero_terms();
            }
            let params = parent
                .params
                .iter()
                .filter(|p| !set.iter().any(|(q, _)| q == p))
                .cloned()
                .collect();
            if self.snaps.len() == SNAPS_WAITING {
                self.snaps.pop_front();
            }
            self.snaps.push_back((e, params));
        }
    }
}

/// `?·v1 + ?·v2 + … + ?`, nested to the left (so that hoisting one of its sums drops a term).
fn linear(vars: &[String]) -> Expr {
    vars.iter()
        .map(|v| Expr::call("*", [Expr::sym(FRESH), Expr::sym(v)]))
        .chain([Expr::sym(FRESH)])
        .reduce(|sum, t| Expr::call("+", [sum, t]))
        .unwrap_or_else(|| Expr::sym(FRESH))
}

/// How many expressions a filling `(holes E1 …)` has (`None` if `e` is not one).
fn fill_arity(e: &Expr) -> Option<usize> {
    match e {
        Expr::List(items) if e.head() == Some(FILL) => Some(items.len() - 1),
        _ => None,
    }
}

/// `r`'s program as a parent (its tree and its parameters), if it is small enough.
fn parent_of(r: &Record, max_nodes: usize, fitness: f64) -> Option<Elite> {
    let expr = Expr::parse(&r.src, max_nodes).ok()?;
    let names: Vec<String> = r.params.keys().cloned().collect();
    let mut params = Vec::new();
    expr.symbols(&mut params);
    params.retain(|p| names.contains(p));
    Some(Elite {
        expr,
        params,
        key: key(&r.skeleton),
        fitness,
    })
}

impl Proposer for Evolve {
    fn name(&self) -> &str {
        "evolve"
    }

    fn propose(&mut self, n: usize, _: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            for _ in 0..TRIES {
                let Some((e, params)) = self.candidate() else {
                    continue;
                };
                if let Some(p) = self.finish(e, &params) {
                    out.push(p);
                    break;
                }
            }
        }
        if out.is_empty() {
            // Every try had been seen: a random term, seen or not, keeps the search going.
            let mut e = self.term();
            if let Some(params) = normalize(&mut e, &[], &self.pool) {
                self.proposed += 1;
                out.push(Proposal {
                    src: e.to_string(),
                    params,
                    name: format!("evolve:{}", self.proposed),
                });
            }
        }
        Ok(out)
    }

    fn observe(&mut self, done: &[Record], _: &mut Notes) -> Result<(), ProposerError> {
        for r in done {
            self.consider(r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndvm_systems::population::template::Template;
    use std::collections::BTreeMap;
    use std::f64::consts::PI;

    #[test]
    fn a_constant_next_to_a_nice_value_is_proposed_as_that_value() {
        let mut evolve =
            Evolve::new(&Settings::default(), &context(&["theta", "r"])).expect("settings");
        evolve.seeds.clear();
        // `r·cos(θ − a)` with a fitted next to π/2, and b a scale that is nothing nice.
        let src = "(* b (* r (cos (- theta a))))";
        let mut r = Record::sample(0, src, "(* P (* r (cos (- theta P))))", 1e-12);
        r.params = BTreeMap::from([("a".into(), 1.5707962881856794), ("b".into(), 0.7)]);
        evolve
            .observe(&[r], &mut Notes::default())
            .expect("observes");
        let next = evolve.propose(1, &mut Notes::default()).expect("proposes");
        // (its one remaining constant renamed a)
        let want = format!("(* a (* r (cos (- theta {:?}))))", PI / 2.0);
        assert_eq!(next[0].src, want, "{:?}", next[0]);
        assert_eq!(next[0].params.len(), 1, "{:?}", next[0]);
    }

    fn context(inputs: &[&str]) -> Context {
        Context {
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            shared: Vec::new(),
            params: Vec::new(),
            success: String::new(),
            front_penalty: None,
            seed: 7,
            base: ".".into(),
            migrants: Vec::new(),
            template: None,
        }
    }

    #[test]
    fn a_constant_that_only_rescales_the_others_is_proposed_as_one() {
        let mut evolve = Evolve::new(&Settings::default(), &context(&["x"])).expect("settings");
        evolve.seeds.clear();
        // 2.364/(0.788 − 0.2627·x) is 9/(3 − x) written with a spare scale.
        let src = "(/ a (+ (* b x) c))";
        let mut r = Record::sample(0, src, "(/ P (+ (* P x) P))", 1e-20);
        r.params = BTreeMap::from([
            ("a".into(), 2.364),
            ("b".into(), -0.2627),
            ("c".into(), 0.788),
        ]);
        evolve
            .observe(&[r], &mut Notes::default())
            .expect("observes");
        let next: Vec<String> = evolve
            .propose(3, &mut Notes::default())
            .expect("proposes")
            .into_iter()
            .map(|p| p.src)
            .collect();
        assert_eq!(
            next,
            [
                "(/ 1 (+ (* a x) b))",
                "(/ a (+ x b))",
                "(/ a (+ (* b x) 1))"
            ],
            "each constant written as 1 in turn"
        );
    }

    #[test]
    fn its_mutations_keep_functions_out_of_their_own_family() {
        let built = |nested: bool| {
            let settings = Settings {
                nested,
                ..Settings::default()
            };
            let mut evolve = Evolve::new(&settings, &context(&["x", "y"])).expect("settings");
            evolve.seeds.clear();
            let records: Vec<Record> = ["(* a (exp (* b x)))", "(sin (* a (log y)))"]
                .iter()
                .enumerate()
                .map(|(i, src)| {
                    let mut r = Record::sample(i as u64, src, src, 0.1 + i as f64);
                    r.params = BTreeMap::from([("a".into(), 0.3), ("b".into(), 0.7)]);
                    r
                })
                .collect();
            evolve
                .observe(&records, &mut Notes::default())
                .expect("observes");
            let out = evolve
                .propose(2000, &mut Notes::default())
                .expect("proposes");
            out.iter()
                .filter(|p| nests(&Expr::parse(&p.src, 100).expect("tree")))
                .count()
        };
        assert_eq!(built(false), 0);
        assert!(built(true) > 0, "allowed, some mutations nest");
    }

    #[test]
    fn with_a_template_it_fills_every_hole_with_what_the_hole_may_read() {
        let t = Template::parse("(+ k (hole f (x)) (* y (hole g (x y))))").expect("template");
        let context = Context {
            template: Some(std::sync::Arc::new(t.clone())),
            ..context(&[])
        };
        let mut evolve = Evolve::new(&Settings::default(), &context).expect("settings");
        // The seeds: each variable in every hole that declares it, then the linear field.
        let first = evolve.propose(3, &mut Notes::default()).expect("proposes");
        let srcs: Vec<&str> = first.iter().map(|p| p.src.as_str()).collect();
        assert_eq!(
            srcs,
            [
                "(holes (* a x) (* b x))",
                "(holes (* a x) (* b y))",
                "(holes (+ (* a x) b) (+ (+ (* c x) (* d y)) e))",
            ]
        );
        let records: Vec<Record> = first
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = Record::sample(i as u64, &p.src, &p.src, 0.1 + i as f64);
                r.params = p.params.iter().map(|n| (n.clone(), 0.7)).collect();
                r
            })
            .collect();
        evolve
            .observe(&records, &mut Notes::default())
            .expect("observes");
        let out = evolve
            .propose(1000, &mut Notes::default())
            .expect("proposes");
        assert!(out.len() >= 900, "{}", out.len());
        let mut one_hole_changed = 0;
        for p in &out {
            // Every proposal fills the template; no hole reads what it does not declare, and
            // no parameter takes a name the template uses.
            let program = t
                .fill(&p.src, &p.params)
                .unwrap_or_else(|e| panic!("{}: {e}", p.src));
            assert!(!p.params.iter().any(|n| t.mentions(n)), "{program}");
            let parts = t.expressions(&p.src).expect("filling");
            one_hole_changed += usize::from(
                records
                    .iter()
                    .filter_map(|r| t.expressions(&r.src).ok())
                    .any(|q| q[0] == parts[0] || q[1] == parts[1]),
            );
        }
        assert!(one_hole_changed > out.len() / 4, "{one_hole_changed}");
    }
}
