//! Custom primitives: the finite-difference check (on the built-ins too), a Hill function
//! through the walk and the backward pass, lane independence, and errors.

use ndvm_engine::check::finite_differences;
use ndvm_engine::extension::{Builtin, Primitive, Registry, RegistryError, check_primitive};
use ndvm_engine::prelude::*;

/// The Hill function `x^n / (k^n + x^n)` (for x, k > 0).
#[derive(Debug)]
struct Hill;

impl Primitive for Hill {
    fn name(&self) -> &str {
        "hill"
    }
    fn arity(&self) -> usize {
        3
    }
    fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
        for (l, o) in out.iter_mut().enumerate() {
            let (x, k, n) = (args[0][l], args[1][l], args[2][l]);
            let (xn, kn) = (x.powf(n), k.powf(n));
            *o = xn / (kn + xn);
        }
    }
    fn vjp(&self, args: &[&[f64]], out: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
        for l in 0..g.len() {
            let (x, k, n, y) = (args[0][l], args[1][l], args[2][l], out[l]);
            // dy/dx = n y (1 − y) / x, dy/dk = −n y (1 − y) / k, dy/dn = y (1 − y) ln(x / k)
            let s = y * (1.0 - y);
            grads[0][l] = g[l] * n * s / x;
            grads[1][l] = -g[l] * n * s / k;
            grads[2][l] = g[l] * s * (x / k).ln();
        }
    }
}

/// A Hill function whose VJP forgot the chain rule through `n`.
#[derive(Debug)]
struct WrongHill;

impl Primitive for WrongHill {
    fn name(&self) -> &str {
        "hill"
    }
    fn arity(&self) -> usize {
        3
    }
    fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
        Hill.forward(args, out)
    }
    fn vjp(&self, args: &[&[f64]], out: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
        Hill.vjp(args, out, g, grads);
        grads[2].iter_mut().for_each(|d| *d *= 0.5);
    }
}

fn hill_points() -> Vec<Vec<f64>> {
    vec![
        vec![0.5, 1.0, 2.0],
        vec![2.0, 1.5, 1.0],
        vec![3.0, 0.7, 4.0],
        vec![0.1, 0.2, 0.5],
    ]
}

#[test]
fn the_check_accepts_a_right_vjp_and_rejects_a_wrong_one() {
    check_primitive(&Hill, &hill_points()).expect("Hill's VJP is right");
    let e = check_primitive(&WrongHill, &hill_points()).expect_err("wrong VJP");
    assert_eq!(e.operand, 2, "{e}");
    assert!(e.to_string().contains("finite differences"), "{e}");
}

#[test]
fn every_builtin_scalar_primitive_passes_the_same_check() {
    // Points inside every op's domain and away from its kinks (abs at 0, min/max ties,
    // modulo/remainder jumps).
    let unary = [vec![0.3], vec![-0.45], vec![0.8]];
    let binary = [
        vec![0.7, 1.9],
        vec![-1.3, 0.6],
        vec![2.2, -0.9],
        vec![1.1, 0.4],
    ];
    let positive = [
        vec![0.7, 1.9],
        vec![1.3, 0.6],
        vec![2.2, -0.9],
        vec![1.1, 0.4],
    ];
    let all = Builtin::all();
    assert!(all.len() >= 24);
    for b in all {
        let points: &[Vec<f64>] = match (b.arity(), b.0.name()) {
            (2, "pow") => &positive,
            (2, _) => &binary,
            _ => &unary,
        };
        check_primitive(&b, points).unwrap_or_else(|e| panic!("{e}"));
    }
}

fn registry() -> Registry {
    Registry::new().with(Hill).expect("register")
}

const PROGRAM: &str = "(if (> x 1) (* 2 (hill x k n)) (hill (+ x 0.5) k 2))";

fn bindings<R: Real>(xs: &[f64]) -> Bindings<R> {
    let mut b = Bindings::new();
    b.lane_data("x", xs.iter().map(|&x| R::from_f64(x)).collect())
        .lanes(
            "k",
            xs.iter().map(|&x| R::from_f64(0.8 + 0.1 * x)).collect(),
        )
        .scalar("n", R::from_f64(1.7));
    b
}

fn run<R: Real>(xs: &[f64]) -> Evaluation<R> {
    let program =
        Program::with_primitives(PROGRAM, &["x", "k", "n"], &registry()).expect("decodes");
    evaluate(&mut Vm::default(), &program, &bindings::<R>(xs), true).expect("runs")
}

#[test]
fn a_custom_primitive_runs_over_divergent_lanes_with_exact_gradients() {
    let xs = [0.3, 2.0, 0.9, 3.5, 1.2];
    let out = run::<f64>(&xs);
    let Output::Numbers(y) = &out.result else {
        panic!("numbers")
    };
    for (l, &x) in xs.iter().enumerate() {
        let k: f64 = 0.8 + 0.1 * x;
        let want = if x > 1.0 {
            2.0 * x.powf(1.7) / (k.powf(1.7) + x.powf(1.7))
        } else {
            (x + 0.5).powi(2) / (k * k + (x + 0.5).powi(2))
        };
        assert!((y[l] - want).abs() < 1e-15, "lane {l}: {} vs {want}", y[l]);
    }
    // Gradients (k per lane, n shared) against central differences of the same program.
    let program =
        Program::with_primitives(PROGRAM, &["x", "k", "n"], &registry()).expect("decodes");
    let fd = finite_differences(
        &mut Vm::<f64>::default(),
        &program,
        &bindings::<f64>(&xs),
        1e-6,
    )
    .expect("fd");
    for ((name, g), (_, f)) in out.grads.iter().zip(&fd) {
        for l in 0..xs.len() {
            assert!(
                (g[l] - f[l]).abs() < 1e-7 * (1.0 + f[l].abs()),
                "{name} lane {l}: {} vs {}",
                g[l],
                f[l]
            );
        }
    }
    // Lanes at x <= 1 never call hill with the lane's n: ∂/∂n is exactly 0 there.
    assert_eq!(out.grads[1].0, "n");
    assert_eq!(out.grads[1].1[0], 0.0);
}

#[test]
fn a_batch_equals_its_lanes_run_alone_in_f32_and_f64() {
    fn check<R: Real + std::fmt::Debug>() {
        let xs = [0.3, 2.0, 0.9, 3.5, 1.2];
        let batch = run::<R>(&xs);
        for (l, &x) in xs.iter().enumerate() {
            let alone = run::<R>(&[x]);
            let (Output::Numbers(a), Output::Numbers(b)) = (&batch.result, &alone.result) else {
                panic!("numbers");
            };
            assert_eq!(a[l].to_bits64(), b[0].to_bits64(), "lane {l}");
            for ((_, ga), (_, gb)) in batch.grads.iter().zip(&alone.grads) {
                assert_eq!(ga[l].to_bits64(), gb[0].to_bits64(), "lane {l} gradient");
            }
        }
    }
    check::<f32>();
    check::<f64>();
}

/// A custom primitive's VJP accumulates into wherever the backward pass keeps its operands'
/// adjoints: pooled or not, the same bits.
#[test]
fn pooled_adjoints_reach_custom_primitive_operands() {
    let xs = [0.3, 2.0, 0.9, 3.5, 1.2, 0.7];
    let program =
        Program::with_primitives(PROGRAM, &["x", "k", "n"], &registry()).expect("decodes");
    let bits = |pooling| {
        let mut vm = Vm::<f64>::default();
        vm.set_pooling(pooling);
        let e = evaluate(&mut vm, &program, &bindings::<f64>(&xs), true).expect("runs");
        let g: Vec<u64> = e
            .grads
            .iter()
            .flat_map(|(_, g)| g.iter().map(|x| x.to_bits()))
            .collect();
        assert_eq!(g.len(), 2 * xs.len());
        g
    };
    assert_eq!(
        bits(ndvm_engine::Pooling::Off),
        bits(ndvm_engine::Pooling::Always)
    );
}

#[test]
fn misuse_is_a_located_error() {
    let reg = registry();
    let err = |src: &str| {
        let program = Program::with_primitives(src, &["x"], &reg)?;
        let mut b = Bindings::<f64>::new();
        b.lanes("x", vec![1.0, 2.0]);
        evaluate(&mut Vm::default(), &program, &b, true).map(|_| ())
    };
    let e = err("(+ 1 (hill x 2))").expect_err("arity");
    assert_eq!(e.kind, ErrorKind::Arity);
    assert!(e.message.contains("`hill` takes 3 operands, got 2"), "{e}");
    assert_eq!(e.span.map(|s| s.start), Some(5));
    let e = err("(hill (vec x x) 1 2)").expect_err("type");
    assert_eq!(e.kind, ErrorKind::Type);
    assert!(e.message.contains("expected a number, got a vector"), "{e}");
    // Without the registry the name is simply unbound.
    let e = Program::new("(hill x 1 2)", &["x"]).expect_err("unbound");
    assert_eq!(e.kind, ErrorKind::Unbound);
    // Constants fold without a tape node; a procedure value can be passed around.
    err("(hill 1 2 3)").expect("constant call");
    err("(apply hill (list x 1.5 2))").expect("apply");
    assert_eq!(
        Registry::new()
            .with(Hill)
            .and_then(|r| r.with(Hill))
            .map(|_| ()),
        Err(RegistryError::Duplicate("hill".into()))
    );
}

#[test]
fn builtin_names_cannot_be_taken() {
    #[derive(Debug)]
    struct Exp;
    impl Primitive for Exp {
        fn name(&self) -> &str {
            "exp"
        }
        fn arity(&self) -> usize {
            1
        }
        fn forward(&self, _: &[&[f64]], _: &mut [f64]) {}
        fn vjp(&self, _: &[&[f64]], _: &[f64], _: &[f64], _: &mut [Vec<f64>]) {}
    }
    assert_eq!(
        Registry::new().with(Exp).map(|_| ()),
        Err(RegistryError::Builtin("exp".into()))
    );
}
