//! Every vector/matrix primitive's VJP agrees with central finite differences on random
//! well-conditioned inputs of sizes 1..8, in f32 and f64 (docs/language-reference.md §6.5–§6.7, §7
//! tolerances).
//!
//! Each case builds its operands from scalar parameters (`(mat (vec a0_0 …) …)`), applies the
//! primitive and weights the result elementwise by random constants before the backward pass
//! sums it, so a VJP that sent an adjoint to the wrong element would show.

use ndvm_engine::check::{close, finite_differences};
use ndvm_engine::prelude::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// An operand: a vector of n, or an m×n matrix, with its values' domain.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Vector(usize, Domain),
    Matrix(usize, usize, Domain),
}

#[derive(Clone, Copy, Debug)]
enum Domain {
    /// Uniform in [-1, 1].
    Any,
    /// In [0.5, 2] (divisors, `sqrt` and `log` operands, `pow` bases).
    Positive,
    /// [-1, 1] plus n + 1 on the diagonal: well conditioned, pivots on the diagonal.
    Dominant,
}

/// The result shape, for the weights.
#[derive(Clone, Copy, Debug)]
enum Out {
    Number,
    Vector(usize),
    Matrix(usize, usize),
}

/// A case: the primitive applied to operands `x`, `y`, … of the given shapes.
struct Case {
    src: &'static str,
    args: Vec<Arg>,
    out: Out,
}

/// Every case at size `n` (and `m`, `k` for rectangular ones).
fn cases(m: usize, k: usize, n: usize) -> Vec<Case> {
    use Arg::*;
    use Domain::*;
    let c = |src, args, out| Case { src, args, out };
    vec![
        c(
            "(+ x y)",
            vec![Matrix(m, n, Any), Matrix(m, n, Any)],
            Out::Matrix(m, n),
        ),
        c(
            "(- x y)",
            vec![Vector(n, Any), Vector(n, Any)],
            Out::Vector(n),
        ),
        c(
            "(* x y)",
            vec![Matrix(m, n, Any), Matrix(m, n, Any)],
            Out::Matrix(m, n),
        ),
        c(
            "(/ x y)",
            vec![Vector(n, Any), Vector(n, Positive)],
            Out::Vector(n),
        ),
        c(
            "(pow x y)",
            vec![Vector(n, Positive), Vector(n, Any)],
            Out::Vector(n),
        ),
        c("(exp x)", vec![Matrix(m, n, Any)], Out::Matrix(m, n)),
        c("(sin x)", vec![Vector(n, Any)], Out::Vector(n)),
        c("(log x)", vec![Vector(n, Positive)], Out::Vector(n)),
        c(
            "(* (ref x 0) y)",
            vec![Vector(1, Any), Matrix(m, n, Any)],
            Out::Matrix(m, n),
        ),
        c(
            "(/ y (ref x 0))",
            vec![Vector(1, Positive), Vector(n, Any)],
            Out::Vector(n),
        ),
        c(
            "(scale (ref x 0) y)",
            vec![Vector(1, Any), Vector(n, Any)],
            Out::Vector(n),
        ),
        c("(ref x 0)", vec![Matrix(m, n, Any)], Out::Vector(n)),
        c(
            "(mat x y)",
            vec![Vector(n, Any), Vector(n, Any)],
            Out::Matrix(2, n),
        ),
        c(
            "(dot x y)",
            vec![Vector(n, Any), Vector(n, Any)],
            Out::Number,
        ),
        c(
            "(cross x y)",
            vec![Vector(3, Any), Vector(3, Any)],
            Out::Vector(3),
        ),
        c("(norm x)", vec![Vector(n, Positive)], Out::Number),
        c("(normalize x)", vec![Vector(n, Positive)], Out::Vector(n)),
        c("(vsum x)", vec![Vector(n, Any)], Out::Number),
        c(
            "(outer x y)",
            vec![Vector(m, Any), Vector(n, Any)],
            Out::Matrix(m, n),
        ),
        c(
            "(matvec x y)",
            vec![Matrix(m, k, Any), Vector(k, Any)],
            Out::Vector(m),
        ),
        c(
            "(matmul x y)",
            vec![Matrix(m, k, Any), Matrix(k, n, Any)],
            Out::Matrix(m, n),
        ),
        c("(matmul x x)", vec![Matrix(n, n, Any)], Out::Matrix(n, n)),
        c("(transpose x)", vec![Matrix(m, n, Any)], Out::Matrix(n, m)),
        c("(trace x)", vec![Matrix(m, n, Any)], Out::Number),
        c("(det x)", vec![Matrix(n, n, Dominant)], Out::Number),
        c("(logdet x)", vec![Matrix(n, n, Dominant)], Out::Number),
        c("(inv x)", vec![Matrix(n, n, Dominant)], Out::Matrix(n, n)),
    ]
}

/// Builds the program text and its bindings: operand `i` is named `x`, `y`, … and built from
/// scalar parameters; the result is weighted elementwise by random constants.
fn instance(case: &Case, rng: &mut ChaCha8Rng) -> (String, Vec<(String, f64)>) {
    let mut params = Vec::new();
    let mut lets = Vec::new();
    let value = |d: Domain, i: usize, j: usize, n: usize, rng: &mut ChaCha8Rng| match d {
        Domain::Any => rng.random_range(-1.0..1.0),
        Domain::Positive => rng.random_range(0.5..2.0),
        Domain::Dominant => rng.random_range(-1.0..1.0) + if i == j { (n + 1) as f64 } else { 0.0 },
    };
    for (a, name) in case.args.iter().zip(["x", "y"]) {
        let text = match *a {
            Arg::Vector(n, d) => {
                let elems: Vec<String> = (0..n)
                    .map(|i| {
                        let p = format!("{name}{i}");
                        params.push((p.clone(), value(d, 0, 1, n, rng)));
                        p
                    })
                    .collect();
                format!("(vec {})", elems.join(" "))
            }
            Arg::Matrix(m, n, d) => {
                let rows: Vec<String> = (0..m)
                    .map(|i| {
                        let elems: Vec<String> = (0..n)
                            .map(|j| {
                                let p = format!("{name}{i}_{j}");
                                params.push((p.clone(), value(d, i, j, n, rng)));
                                p
                            })
                            .collect();
                        format!("(vec {})", elems.join(" "))
                    })
                    .collect();
                format!("(mat {})", rows.join(" "))
            }
        };
        lets.push(format!("({name} {text})"));
    }
    let mut w = |n: usize| -> Vec<String> {
        (0..n)
            .map(|_| format!("{:.3}", rng.random_range(0.5..1.5) * sign(rng)))
            .collect()
    };
    let weights = match case.out {
        Out::Number => w(1).remove(0),
        Out::Vector(n) => format!("(vec {})", w(n).join(" ")),
        Out::Matrix(m, n) => {
            let rows: Vec<String> = (0..m)
                .map(|_| format!("(vec {})", w(n).join(" ")))
                .collect();
            format!("(mat {})", rows.join(" "))
        }
    };
    let src = format!("(let* ({}) (* {weights} {}))", lets.join(" "), case.src);
    (src, params)
}

fn sign(rng: &mut ChaCha8Rng) -> f64 {
    if rng.random_bool(0.5) { 1.0 } else { -1.0 }
}

fn check<R: Real>(case: &Case, seed: u64, atol: f64, rtol: f64) -> Result<(), TestCaseError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (src, params) = instance(case, &mut rng);
    let mut b = Bindings::<R>::new();
    let mut b64 = Bindings::<f64>::new();
    for (name, v) in &params {
        // Round through R so both precisions see the same point.
        let v = R::from_f64(*v);
        b.scalar(name, v);
        b64.scalar(name, v.to_f64());
    }
    let program = Program::new(&src, &b.names()).expect("decodes");
    let out = evaluate(&mut Vm::<R>::default(), &program, &b, true)
        .unwrap_or_else(|e| panic!("{}", e.render(&src)));
    let fd = FiniteDifferences::at(&program, &b64);
    prop_assert_eq!(out.grads.len(), params.len());
    for ((name, g), (d, error)) in out.grads.iter().zip(fd.estimates()) {
        let g = g[0].to_f64();
        prop_assert!(
            close(g, d, atol + error, rtol),
            "{}: d/d{name} = {g}, finite difference {d} (± {error:.1e} at the step {:.1e})\n{src}",
            case.src,
            fd.step
        );
    }
    Ok(())
}

/// Central differences at a step fitted to the function's size, with their own error estimate.
///
/// Rounding in `f(p ± h)` puts about `ε·|f| / h` into a central difference, truncation about
/// `h²·|f‴|`: one fixed step cannot serve `det` of an 8×8 matrix (|f| ~ 10⁶) and a scalar
/// product alike. The step grows as `|f|^(1/3)` (the optimum when `f‴` scales like `f`), and
/// each estimate carries `|D(h) − D(2h)|` (the error as observed: `D(2h)` has four times the
/// truncation error of `D(h)`) plus the rounding bound `4ε·|f| / h`. A wrong VJP is still
/// caught: neither term depends on the engine's gradient.
struct FiniteDifferences {
    step: f64,
    at_h: Vec<f64>,
    at_2h: Vec<f64>,
    rounding: f64,
}

impl FiniteDifferences {
    fn at(program: &Program, b: &Bindings<f64>) -> FiniteDifferences {
        let mut vm = Vm::<f64>::default();
        // The differences are of the sum of the result's elements; its size is theirs.
        let value = match evaluate(&mut vm, program, b, false)
            .expect("f64 value")
            .result
        {
            Output::Numbers(v) => v[0].abs(),
            Output::Vector(d) | Output::Matrix { data: d, .. } => {
                d.iter().flatten().map(|e| e.abs()).sum()
            }
            other => panic!("a number, vector or matrix, got {other:?}"),
        };
        let step = 1e-6 * value.cbrt().max(1.0);
        let mut first = |h: f64| -> Vec<f64> {
            let d = finite_differences(&mut vm, program, b, h).expect("finite differences");
            d.into_iter().map(|(_, lanes)| lanes[0]).collect()
        };
        let (at_h, at_2h) = (first(step), first(2.0 * step));
        FiniteDifferences {
            step,
            at_h,
            at_2h,
            rounding: 4.0 * f64::EPSILON * value / step,
        }
    }

    /// `(D(h), its error estimate)` per parameter, in binding order.
    fn estimates(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.at_h
            .iter()
            .zip(&self.at_2h)
            .map(|(&d, &d2)| (d, (d - d2).abs() + self.rounding))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn tensor_vjps_match_finite_differences_f64(
        which in 0..27usize, m in 1..=8usize, k in 1..=8usize, n in 1..=8usize, seed in any::<u64>()
    ) {
        let cases = cases(m, k, n);
        check::<f64>(&cases[which % cases.len()], seed, 1e-6, 1e-5)?;
    }

    #[test]
    fn tensor_vjps_match_finite_differences_f32(
        which in 0..27usize, m in 1..=8usize, k in 1..=8usize, n in 1..=8usize, seed in any::<u64>()
    ) {
        let cases = cases(m, k, n);
        check::<f32>(&cases[which % cases.len()], seed, 1e-3, 1e-3)?;
    }
}

/// Every case at every size 1..8 once, in both precisions (the property tests sample more).
#[test]
fn every_case_and_size_runs() {
    for n in 1..=8 {
        let (m, k) = (9 - n, 1 + n % 3);
        for (i, case) in cases(m, k, n).iter().enumerate() {
            let seed = (n * 100 + i) as u64;
            check::<f64>(case, seed, 1e-6, 1e-5).unwrap_or_else(|e| panic!("{e}"));
            check::<f32>(case, seed, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn the_case_count_is_covered() {
    assert_eq!(cases(2, 2, 2).len(), 27, "update the strategy ranges");
}

/// `det` at n = 7–8 is ~10⁶ (the diagonal is n + 1 plus up to 1): a fixed finite-difference step
/// once failed it by rounding alone (d/dx4_2 = 6.559054647294732 exactly, 6.55884 by a 1e-6
/// step). Many seeds at the sizes where the value is largest.
#[test]
fn large_determinants_are_checked_at_their_scale() {
    for n in 7..=8 {
        let cases = cases(n, 1, n);
        let det = cases.iter().find(|c| c.src == "(det x)").expect("det case");
        for seed in 0..48 {
            check::<f64>(det, seed, 1e-6, 1e-5).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
