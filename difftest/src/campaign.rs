//! A campaign: generate `n` programs from a seed, check each against the oracle and the gates,
//! and tabulate coverage per feature family.
//!
//! Program `i` is generated from a seed derived from the campaign seed and `i` (and an attempt
//! number): a program the oracle finds unsuitable — a value or gradient beyond 1e6, no
//! parameter dependence, or a branch test within 0.02 of switching — is regenerated from the
//! next attempt's seed, and the rejection is counted. Programs are checked in parallel (rayon),
//! each independently, and collected in order, so a report is the same for every thread count.

use crate::feature::Feature;
use crate::gates::{Engines, Gate, Target, Verdict, check};
use crate::generate::{Generated, generate};
use crate::minimize::minimize;
use crate::oracle;
use crate::report::{Case, Failure, FamilyRow, Report};
use crate::screen::{f32_conditioned, unsuitable};
use crate::sexpr::program_text;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Attempts at an acceptable program before program `i` is reported as a generator failure.
const MAX_ATTEMPTS: u64 = 64;

/// What to run.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// Number of programs.
    pub n: usize,
    /// The campaign seed: the same seed gives the same programs and the same report.
    pub seed: u64,
    /// Worker threads (0: rayon's default, one per core).
    pub threads: usize,
    /// Shrink failing programs before reporting them.
    pub minimize: bool,
    /// The client checked: the tree walk, or each program compiled to bytecode (programs
    /// outside the bytecode subset are regenerated, counted as rejected).
    pub target: Target,
}

impl Default for Campaign {
    fn default() -> Self {
        Campaign {
            n: 500,
            seed: 1234,
            threads: 0,
            minimize: true,
            target: Target::Walk,
        }
    }
}

/// The seed of program `i`, attempt `a` (SplitMix64 of the three).
fn case_seed(seed: u64, i: usize, a: u64) -> u64 {
    let mut z = seed
        ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ a.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What happened to program `i`.
#[derive(Default)]
struct Outcome {
    /// The program checked (none if the generator failed).
    generated: Option<Generated>,
    case: Option<Case>,
    verdict: Verdict,
    /// Whether the f32 walk was compared too.
    f32: bool,
    /// G4's lane offsets for this program (the minimizer reuses them).
    spread: [Vec<f64>; 3],
    failure: Option<Failure>,
    rejected: Vec<&'static str>,
}

/// Why a program is regenerated for the bytecode target.
pub const OUTSIDE_SUBSET: &str = "outside the bytecode subset";

fn run_case(engines: &mut Engines, seed: u64, i: usize) -> Outcome {
    let mut rejected = Vec::new();
    for a in 0..MAX_ATTEMPTS {
        let s = case_seed(seed, i, a);
        let g = generate(s);
        let o = match oracle::evaluate(&g.src, &g.params) {
            Ok(o) => o,
            Err(e) => {
                let detail = format!("the oracle rejects it: {e}");
                return Outcome {
                    failure: Some(failure(i, "generator", detail, &g)),
                    generated: Some(g),
                    rejected,
                    ..Outcome::default()
                };
            }
        };
        if let Some(reason) = unsuitable(&o) {
            rejected.push(reason);
            continue;
        }
        if engines.target == Target::Bytecode {
            let names: Vec<&str> = g.params.iter().map(|(n, _)| n.as_str()).collect();
            if engines.load(&g.src, &names).is_err() {
                rejected.push(OUTSIDE_SUBSET);
                continue;
            }
        }
        let spread = spread(s, g.params.len());
        let f32 = f32_conditioned(&g.src, &g.params, &o);
        let verdict = check(engines, &g.src, &g.params, &o, &spread, f32);
        let names = || g.params.iter().map(|(n, _)| n.clone());
        let case = Case {
            id: i,
            src: g.src.clone(),
            params: g.params.iter().cloned().collect(),
            features: g.features.iter().map(|f| f.name()).collect(),
            fwd_oracle: o.value,
            grad_oracle: names().zip(o.grad.iter().copied()).collect(),
            grad_fd: names().zip(verdict.grad_fd.iter().copied()).collect(),
        };
        let failure = verdict.first_failure().map(|gate| {
            let all: Vec<String> = verdict
                .failures
                .iter()
                .map(|(g, m)| format!("{g:?}: {m}"))
                .collect();
            failure(i, &format!("{gate:?}"), all.join("; "), &g)
        });
        return Outcome {
            generated: Some(g),
            case: Some(case),
            verdict,
            f32,
            spread,
            failure,
            rejected,
        };
    }
    Outcome {
        failure: Some(Failure {
            id: i,
            gate: "generator".into(),
            detail: format!("no acceptable program in {MAX_ATTEMPTS} attempts"),
            src: String::new(),
            params: BTreeMap::new(),
            minimized: None,
        }),
        rejected,
        ..Outcome::default()
    }
}

fn failure(id: usize, gate: &str, detail: String, g: &Generated) -> Failure {
    Failure {
        id,
        gate: gate.into(),
        detail,
        src: g.src.clone(),
        params: g.params.iter().cloned().collect(),
        minimized: None,
    }
}

/// G4's lane offsets: three lanes, one offset in ±0.3 per parameter.
fn spread(seed: u64, params: usize) -> [Vec<f64>; 3] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED);
    let mut lane = || {
        (0..params)
            .map(|_| rng.random_range(-0.3..0.3))
            .collect::<Vec<f64>>()
    };
    [lane(), lane(), lane()]
}

/// Runs a campaign; `progress` is called with the number of programs finished so far.
pub fn campaign(c: &Campaign, progress: impl Fn(usize) + Sync) -> Report {
    let done = AtomicUsize::new(0);
    let work = || {
        (0..c.n)
            .into_par_iter()
            .map_init(
                || Engines::new(c.target),
                |engines, i| {
                    let out = run_case(engines, c.seed, i);
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                    out
                },
            )
            .collect::<Vec<Outcome>>()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(c.threads)
        .stack_size(32 << 20)
        .build();
    let outcomes = match pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    };
    summarize(c, outcomes)
}

fn summarize(c: &Campaign, outcomes: Vec<Outcome>) -> Report {
    let mut rejected = BTreeMap::new();
    let mut gates: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut rows: Vec<FamilyRow> = Feature::ALL
        .iter()
        .map(|f| FamilyRow {
            family: f.name(),
            programs: 0,
            g1: 0,
            g2: 0,
            g3: 0,
            g4: 0,
        })
        .collect();
    let mut failures = Vec::new();
    let mut corpus = Vec::new();
    let mut g4_divergent = 0;
    let mut f64_only = 0;
    let mut g3_inconclusive = 0;
    for out in outcomes {
        g3_inconclusive += usize::from(out.verdict.g3_inconclusive);
        f64_only += usize::from(out.case.is_some() && !out.f32);
        for r in &out.rejected {
            *rejected.entry(*r).or_insert(0) += 1;
        }
        let ok = |g: Gate| {
            out.failure.as_ref().is_none_or(|f| f.gate != "generator") && out.verdict.passed(g)
        };
        for (g, name) in Gate::ALL.iter().zip(["G1", "G2", "G3", "G4"]) {
            *gates.entry(name).or_insert(0) += usize::from(ok(*g));
        }
        let features = out.generated.iter().flat_map(|g| g.features.iter());
        for f in features {
            let row = &mut rows[Feature::ALL.iter().position(|x| x == f).unwrap_or(0)];
            row.programs += 1;
            row.g1 += usize::from(ok(Gate::G1));
            row.g2 += usize::from(ok(Gate::G2));
            row.g3 += usize::from(ok(Gate::G3));
            row.g4 += usize::from(ok(Gate::G4));
        }
        g4_divergent += usize::from(out.verdict.divergent);
        if let Some(mut f) = out.failure {
            if c.minimize
                && let Some(g) = &out.generated
            {
                f.minimized = minimize_failure(g, &f.gate, &out.spread, c.target)
                    .map(|forms| program_text(&forms));
            }
            failures.push(f);
        }
        corpus.extend(out.case);
    }
    Report {
        seed: c.seed,
        n: c.n,
        target: c.target,
        checked: c.n,
        rejected,
        g4_divergent,
        f64_only,
        g3_inconclusive,
        gates,
        families: rows,
        failures,
        corpus,
    }
}

/// Shrinks a failing program while the oracle still accepts it and the same gate still fails.
fn minimize_failure(
    g: &Generated,
    gate: &str,
    spread: &[Vec<f64>; 3],
    target: Target,
) -> Option<Vec<crate::sexpr::Sx>> {
    if gate == "generator" {
        return None;
    }
    let mut engines = Engines::new(target);
    let reduced = minimize(&g.forms, |src| {
        let Ok(o) = oracle::evaluate(src, &g.params) else {
            return false;
        };
        if unsuitable(&o).is_some() {
            return false;
        }
        let v = check(
            &mut engines,
            src,
            &g.params,
            &o,
            spread,
            f32_conditioned(src, &g.params, &o),
        );
        v.first_failure().is_some_and(|f| format!("{f:?}") == gate)
    });
    (reduced != g.forms).then_some(reduced)
}
