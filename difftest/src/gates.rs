//! The gates every generated program must pass against the engine.
//!
//! - **G1** forward vs oracle: the engine's f64 walk within 1e-9 (absolute and relative) of the
//!   oracle, and its f32 walk within the reference's 1e-4.
//! - **G2** gradient vs oracle: f64 within 1e-8, f32 within the reference's 2e-3.
//!
//!   The f32 comparisons are made only where f32 can meet them: a program whose value or
//!   gradient moves by a tenth of those tolerances when its parameters move by a few f32 ulps
//!   (see `screen::f32_conditioned`) is too ill-conditioned for any f32 evaluation to agree,
//!   and is checked in f64 only.
//! - **G3** gradient vs central finite differences of the engine's own f64 forward: the
//!   Richardson combination `(4·D(h) − D(2h))/3` of the quotients at h and 2h, within
//!   1e-5·(1 + |value|) + 1e-4·|D| + |D(h) − D(2h)| (the last term bounds the quotients'
//!   truncation error), at one of h = 1e-5, 1e-3, 1e-4, 1e-6, 1e-7 (a sharply curved program
//!   needs a small step, a value that is the difference of large intermediates a large one).
//!   The generator keeps branch tests at least 0.02 away (in parameter space, to first order)
//!   from switching; when the differences disagree anyway, the oracle is asked whether a test
//!   decides differently within the stencil (two values that tie up to rounding, say), and if
//!   so G3 is inconclusive for that program rather than failed.
//! - **G4** lanes: the program run as a batch of four lanes with different parameters gives,
//!   in every lane, the same bits (value and gradients, f32 and f64) as that lane run alone —
//!   every bit, except that any NaN equals any NaN (its sign and payload are not canonical).
//!   If the lanes' structure diverges (docs/language-reference.md §9.5, a clean divergence error),
//!   the batch is rerun with lanes close enough to take the same branches.

use crate::oracle::OracleResult;
use ndvm_bytecode::{Executable, Form, Runner};
use ndvm_engine::check::{close, finite_differences_of};
use ndvm_engine::prelude::*;
use serde::Serialize;

/// One of the four gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Gate {
    G1,
    G2,
    G3,
    G4,
}

impl Gate {
    pub const ALL: [Gate; 4] = [Gate::G1, Gate::G2, Gate::G3, Gate::G4];
}

/// The outcome of the gates for one program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Every failed check, with its gate.
    pub failures: Vec<(Gate, String)>,
    /// The engine's finite-difference gradient (f64), per parameter (G3's reference).
    pub grad_fd: Vec<f64>,
    /// Whether G4 first hit a structural divergence with widely spread lanes.
    pub divergent: bool,
    /// Whether G3's differences disagreed but a branch test flips within their stencil, so they
    /// could not judge the gradient (not a failure).
    pub g3_inconclusive: bool,
}

impl Verdict {
    fn fail(&mut self, gate: Gate, msg: String) {
        self.failures.push((gate, msg));
    }

    pub fn passed(&self, gate: Gate) -> bool {
        !self.failures.iter().any(|(g, _)| *g == gate)
    }

    pub fn first_failure(&self) -> Option<Gate> {
        self.failures.iter().map(|(g, _)| *g).min()
    }
}

/// Which client of the engine the gates check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The dialect's tree walk.
    #[default]
    Walk,
    /// The program compiled to bytecode and run by the bytecode VM.
    Bytecode,
}

/// The engine's reusable state for checking many programs on one thread.
#[derive(Debug, Default)]
pub struct Engines {
    f32: Vm<f32>,
    f64: Vm<f64>,
    runner: Runner,
    pub target: Target,
}

impl Engines {
    pub fn new(target: Target) -> Self {
        Engines {
            target,
            ..Engines::default()
        }
    }

    /// The program for this target: decoded, or compiled to bytecode.
    pub fn load(&self, src: &str, names: &[&str]) -> ndvm_engine::Result<Executable> {
        let form = match self.target {
            Target::Walk => Form::Dialect,
            Target::Bytecode => Form::Compiled,
        };
        Executable::load(form, src.as_bytes(), names, &Registry::default())
    }
}

/// Runs G1–G4 on `src` with `params`, against what the oracle computed. `spread` gives the
/// three extra lanes' parameter offsets for G4 (one per lane and parameter); `f32` says whether
/// the f32 walk is compared with the oracle too.
pub fn check(
    engines: &mut Engines,
    src: &str,
    params: &[(String, f64)],
    oracle: &OracleResult,
    spread: &[Vec<f64>; 3],
    f32: bool,
) -> Verdict {
    let mut v = Verdict::default();
    let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
    let program = match engines.load(src, &names) {
        Ok(p) => p,
        Err(e) => {
            v.fail(
                Gate::G1,
                format!("the engine rejects the program: {}", e.render(src)),
            );
            return v;
        }
    };

    // G1 and G2 in both precisions.
    let b64 = bindings::<f64>(params, |x| x);
    let b32 = bindings::<f32>(params, |x| x as f32);
    let e64 = run(&mut engines.f64, &mut engines.runner, &program, &b64, src);
    let e32 = run(&mut engines.f32, &mut engines.runner, &program, &b32, src);
    let (value64, grad64) = match e64 {
        Ok(r) => r,
        Err(e) => {
            v.fail(Gate::G1, format!("f64: {e}"));
            return v;
        }
    };
    let (value32, grad32) = match e32 {
        Ok(r) => r,
        Err(e) => {
            v.fail(Gate::G1, format!("f32: {e}"));
            return v;
        }
    };
    if engines.target == Target::Bytecode {
        walk_agrees(
            engines,
            src,
            &names,
            (&b64, &b32),
            (&value64, &grad64),
            (&value32, &grad32),
            &mut v,
        );
    }
    if !close(value64[0], oracle.value, 1e-9, 1e-9) {
        v.fail(
            Gate::G1,
            format!("f64 value {} vs oracle {}", value64[0], oracle.value),
        );
    }
    if f32 && !close(f64::from(value32[0]), oracle.value, 1e-4, 1e-4) {
        v.fail(
            Gate::G1,
            format!("f32 value {} vs oracle {}", value32[0], oracle.value),
        );
    }
    for (i, (name, _)) in params.iter().enumerate() {
        let want = oracle.grad[i];
        if !close(grad64[i][0], want, 1e-8, 1e-8) {
            v.fail(
                Gate::G2,
                format!("f64 d/d{name} {} vs oracle {want}", grad64[i][0]),
            );
        }
        if f32 && !close(f64::from(grad32[i][0]), want, 2e-3, 2e-3) {
            v.fail(
                Gate::G2,
                format!("f32 d/d{name} {} vs oracle {want}", grad32[i][0]),
            );
        }
    }

    // G3: the engine against its own forward.
    match g3(engines, &program, &b64, value64[0], &grad64) {
        Ok((fd, failures)) => {
            v.grad_fd = fd;
            if !failures.is_empty() && stencil_flips(src, params, oracle) {
                // A test decides differently somewhere in the stencil: differences mean nothing.
                v.g3_inconclusive = true;
            } else {
                for (name, msg) in failures {
                    v.fail(Gate::G3, format!("d/d{name} {msg}"));
                }
            }
        }
        Err(e) => v.fail(Gate::G3, format!("finite differences: {}", e.render(src))),
    }

    // G4: lanes, wide then (on a structural divergence) narrow.
    let wide = lanes_check(engines, &program, params, spread, 1.0, src);
    let narrow = match wide {
        Err(LaneOutcome::Diverged) => {
            v.divergent = true;
            lanes_check(engines, &program, params, spread, 1e-3, src)
        }
        other => other,
    };
    match narrow {
        Ok(()) => {}
        Err(LaneOutcome::Diverged) => v.fail(Gate::G4, "lanes diverge even when close".into()),
        Err(LaneOutcome::Mismatch(m)) => v.fail(Gate::G4, m),
    }
    v
}

/// The bytecode target's extra check: its values (G1) and gradients (G2) equal the tree walk's
/// bit for bit, in both precisions (the two clients record the same numeric nodes).
#[allow(clippy::type_complexity)]
fn walk_agrees(
    engines: &mut Engines,
    src: &str,
    names: &[&str],
    (b64, b32): (&Bindings<f64>, &Bindings<f32>),
    (v64, g64): (&[f64], &[Vec<f64>]),
    (v32, g32): (&[f32], &[Vec<f32>]),
    v: &mut Verdict,
) {
    let Ok(program) = Program::new(src, names) else {
        return v.fail(
            Gate::G1,
            "the walk rejects a program the bytecode runs".into(),
        );
    };
    let mut check = |gate: Gate, what: &str, walk: Vec<u64>, vm: Vec<u64>| {
        if walk != vm {
            v.fail(
                gate,
                format!("{what}: bytecode {vm:?} vs walk {walk:?} (bits)"),
            );
        }
    };
    let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let bits32 = |xs: &[f32]| {
        xs.iter()
            .map(|x| u64::from(x.to_bits()))
            .collect::<Vec<u64>>()
    };
    let flat = |g: &[Vec<f64>]| g.iter().flat_map(|x| bits(x)).collect::<Vec<u64>>();
    let flat32 = |g: &[Vec<f32>]| g.iter().flat_map(|x| bits32(x)).collect::<Vec<u64>>();
    match evaluate(&mut engines.f64, &program, b64, true) {
        Ok(e) => {
            let (wv, wg) = split(e);
            check(Gate::G1, "f64 value", bits(&wv), bits(v64));
            check(Gate::G2, "f64 gradient", flat(&wg), flat(g64));
        }
        Err(e) => check(Gate::G1, &format!("the walk fails: {e}"), vec![], vec![1]),
    }
    match evaluate(&mut engines.f32, &program, b32, true) {
        Ok(e) => {
            let (wv, wg) = split(e);
            check(Gate::G1, "f32 value", bits32(&wv), bits32(v32));
            check(Gate::G2, "f32 gradient", flat32(&wg), flat32(g32));
        }
        Err(e) => check(Gate::G1, &format!("the walk fails: {e}"), vec![], vec![1]),
    }
}

/// Values and per-parameter gradients of an evaluation (non-numbers as NaN).
fn split<R: Real>(e: Evaluation<R>) -> (Vec<R>, Vec<Vec<R>>) {
    let values = match e.result {
        Output::Numbers(xs) => xs,
        _ => vec![R::nan(); e.lanes],
    };
    (values, e.grads.into_iter().map(|(_, g)| g).collect())
}

/// Steps tried by G3 in turn: a sharply curved program (a loop feeding `cos`, say) is resolved
/// only by a small step, while a program whose small value is the difference of large
/// intermediates loses its digits to rounding at a small step and needs a large one.
pub const FD_STEPS: [f64; 5] = [1e-5, 1e-3, 1e-4, 1e-6, 1e-7];

/// Whether any branch test, `min`/`max`, `abs` or clamp of the program decides differently
/// (per the oracle) at some point of G3's stencils `p ± h·eᵢ`, `p ± 2h·eᵢ`.
fn stencil_flips(src: &str, params: &[(String, f64)], oracle: &OracleResult) -> bool {
    for i in 0..params.len() {
        for h in FD_STEPS {
            for s in [-2.0, -1.0, 1.0, 2.0] {
                let mut moved = params.to_vec();
                moved[i].1 += s * h;
                match crate::oracle::evaluate(src, &moved) {
                    Ok(o) if o.decisions == oracle.decisions => {}
                    _ => return true,
                }
            }
        }
    }
    false
}

/// G3 for every parameter: the Richardson combination `D = (4·D(h) − D(2h))/3` of central
/// differences at h and 2h must match the gradient within
/// `1e-5·(1 + |value|) + 1e-4·|D| + |D(h) − D(2h)|` (the last term bounds the quotients'
/// truncation error) at one of [`FD_STEPS`]. Returns the reference used per parameter and the
/// failures.
#[allow(clippy::type_complexity)]
fn g3(
    engines: &mut Engines,
    program: &Executable,
    b64: &Bindings<f64>,
    value: f64,
    grad: &[Vec<f64>],
) -> ndvm_engine::Result<(Vec<f64>, Vec<(String, String)>)> {
    let (vm, runner) = (&mut engines.f64, &mut engines.runner);
    let mut fd = |h: f64| {
        finite_differences_of(b64, h, |b| {
            program.evaluate(vm, runner, b, false).map(|e| e.result)
        })
    };
    let mut reference = vec![f64::NAN; grad.len()];
    let mut open: Vec<usize> = (0..grad.len()).collect();
    let mut last = Vec::new();
    for h in FD_STEPS {
        if open.is_empty() {
            break;
        }
        let d1 = fd(h)?;
        let d2 = fd(2.0 * h)?;
        last.clear();
        open.retain(|&i| {
            let (g, a, b) = (grad[i][0], d1[i].1[0], d2[i].1[0]);
            let d = (4.0 * a - b) / 3.0;
            if h == FD_STEPS[0] {
                reference[i] = d;
            }
            let tol = 1e-5 * (1.0 + value.abs()) + 1e-4 * d.abs() + (a - b).abs();
            let err = (g - d).abs();
            let failed = err.is_nan() || err > tol;
            if failed {
                last.push((
                    d1[i].0.clone(),
                    format!("{g} vs finite difference {d} (step {h}: D(h) {a}, D(2h) {b})"),
                ));
            } else {
                reference[i] = d;
            }
            failed
        });
    }
    Ok((reference, last))
}

fn bindings<R: Real>(params: &[(String, f64)], conv: impl Fn(f64) -> R) -> Bindings<R> {
    let mut b = Bindings::new();
    for (name, x) in params {
        b.scalar(name, conv(*x));
    }
    b
}

type Run<R> = (Vec<R>, Vec<Vec<R>>);

/// Value and gradients per lane, or the rendered error.
fn run<R: Real>(
    vm: &mut Vm<R>,
    runner: &mut Runner,
    program: &Executable,
    b: &Bindings<R>,
    src: &str,
) -> Result<Run<R>, String> {
    let out = program
        .evaluate(vm, runner, b, true)
        .map_err(|e| e.render(src))?;
    match out.result {
        Output::Numbers(xs) => Ok((xs, out.grads.into_iter().map(|(_, g)| g).collect())),
        other => Err(format!("the result is not a number: {other:?}")),
    }
}

enum LaneOutcome {
    Diverged,
    Mismatch(String),
}

fn lanes_check(
    engines: &mut Engines,
    program: &Executable,
    params: &[(String, f64)],
    spread: &[Vec<f64>; 3],
    scale: f64,
    src: &str,
) -> Result<(), LaneOutcome> {
    let runner = &mut engines.runner;
    let lane_params: Vec<Vec<f64>> = std::iter::once(vec![0.0; params.len()])
        .chain(spread.iter().cloned())
        .map(|off| {
            params
                .iter()
                .zip(off)
                .map(|((_, x), o)| x + scale * o)
                .collect()
        })
        .collect();
    let lanes = (params, lane_params.as_slice());
    lanes_one((&mut engines.f64, &mut *runner), program, lanes, src, |x| x)?;
    lanes_one((&mut engines.f32, runner), program, lanes, src, |x| {
        x as f32
    })
}

fn lanes_one<R: Real>(
    (vm, runner): (&mut Vm<R>, &mut Runner),
    program: &Executable,
    (params, lane_params): (&[(String, f64)], &[Vec<f64>]),
    src: &str,
    conv: impl Fn(f64) -> R,
) -> Result<(), LaneOutcome> {
    let mut batch = Bindings::new();
    for (i, (name, _)) in params.iter().enumerate() {
        batch.lanes(name, lane_params.iter().map(|l| conv(l[i])).collect());
    }
    let wide = match program.evaluate(vm, runner, &batch, true) {
        Ok(out) => out,
        Err(e) if e.kind == ErrorKind::Divergence => return Err(LaneOutcome::Diverged),
        Err(e) => return Err(LaneOutcome::Mismatch(format!("batch: {}", e.render(src)))),
    };
    for (lane, ps) in lane_params.iter().enumerate() {
        let mut alone = Bindings::new();
        for (i, (name, _)) in params.iter().enumerate() {
            alone.scalar(name, conv(ps[i]));
        }
        let one = program
            .evaluate(vm, runner, &alone, true)
            .map_err(|e| LaneOutcome::Mismatch(format!("lane {lane} alone: {}", e.render(src))))?;
        let same = lane_bits(&wide, lane) == lane_bits(&one, 0);
        if !same {
            return Err(LaneOutcome::Mismatch(format!(
                "lane {lane} ({}): batch {:?} vs alone {:?}",
                std::any::type_name::<R>(),
                lane_bits(&wide, lane),
                lane_bits(&one, 0)
            )));
        }
    }
    Ok(())
}

/// Lane `b`'s value and gradients as bits, so signed zeros and infinities compare exactly. A
/// NaN's sign and payload are not part of a lane's value (docs/language-reference.md "Lanes"):
/// every NaN reads as the one canonical NaN.
fn lane_bits<R: Real>(e: &Evaluation<R>, b: usize) -> Vec<u64> {
    let bits = |x: f64| {
        if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        }
    };
    // `check` has already stopped on a result that is not a number.
    let mut out = match &e.result {
        Output::Numbers(xs) => vec![bits(xs[b].to_f64())],
        _ => vec![u64::MAX],
    };
    out.extend(e.grads.iter().map(|(_, g)| bits(g[b].to_f64())));
    out
}
