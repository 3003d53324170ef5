//! The gates can fail: a wrong oracle value, a wrong gradient or a program the engine refuses
//! is reported under the right gate, and the minimizer shrinks the failing program.

use ndvm_difftest::gates::Engines;
use ndvm_difftest::oracle::{self, OracleResult};
use ndvm_difftest::prelude::*;

fn params() -> Vec<(String, f64)> {
    vec![("p0".to_string(), 0.7), ("p1".to_string(), -0.3)]
}

const SRC: &str = "(let ((u (* p0 p1))) (if (> p0 0.0) (+ (sin u) (* p1 p1)) p0))";
const SPREAD: [[f64; 2]; 3] = [[0.2, -0.1], [-0.25, 0.3], [0.05, 0.05]];

fn spread() -> [Vec<f64>; 3] {
    SPREAD.map(|l| l.to_vec())
}

#[test]
fn a_correct_program_passes() {
    let o = oracle::evaluate(SRC, &params()).expect("oracle");
    let v = check(&mut Engines::default(), SRC, &params(), &o, &spread(), true);
    assert!(v.failures.is_empty(), "{:?}", v.failures);
    // p0 = 0.7, p1 = −0.3: value sin(−0.21) + 0.09, d/dp0 = p1·cos(u).
    assert!((o.value - ((-0.21f64).sin() + 0.09)).abs() < 1e-15);
    assert!((v.grad_fd[0] - (-0.3 * (-0.21f64).cos())).abs() < 1e-8);
}

#[test]
fn a_wrong_value_fails_g1_and_a_wrong_gradient_fails_g2() {
    let good = oracle::evaluate(SRC, &params()).expect("oracle");
    let wrong_value = OracleResult {
        value: good.value + 1e-3,
        ..good.clone()
    };
    let v = check(
        &mut Engines::default(),
        SRC,
        &params(),
        &wrong_value,
        &spread(),
        true,
    );
    assert_eq!(v.first_failure(), Some(Gate::G1));
    assert!(v.passed(Gate::G2) && v.passed(Gate::G3) && v.passed(Gate::G4));
    let mut wrong_grad = good.clone();
    wrong_grad.grad[1] = -wrong_grad.grad[1];
    let v = check(
        &mut Engines::default(),
        SRC,
        &params(),
        &wrong_grad,
        &spread(),
        true,
    );
    assert_eq!(v.first_failure(), Some(Gate::G2));
}

#[test]
fn a_refused_program_fails_g1() {
    let o = OracleResult {
        value: 0.0,
        grad: vec![0.0, 0.0],
        margin: 1.0,
        peak: 0.0,
        decisions: Vec::new(),
    };
    let v = check(
        &mut Engines::default(),
        "(car p0)",
        &params(),
        &o,
        &spread(),
        true,
    );
    assert_eq!(v.first_failure(), Some(Gate::G1));
    assert!(v.failures[0].1.contains("car"), "{:?}", v.failures);
}

#[test]
fn generated_programs_are_deterministic_and_record_their_features() {
    let g = generate(42);
    assert_eq!(g, generate(42));
    assert!(g.features.contains(&Feature::Param));
    assert_eq!(g.src, ndvm_difftest::sexpr::program_text(&g.forms));
}

#[test]
fn differences_across_a_branch_switch_are_inconclusive_not_failed() {
    // At p0 = 0.5 exactly the test switches inside every stencil: the quotient sees the jump.
    let src = "(if (< p0 0.5) p0 (* 10.0 p0))";
    let params = vec![("p0".to_string(), 0.5)];
    let o = oracle::evaluate(src, &params).expect("oracle");
    assert_eq!((o.value, o.grad[0], o.margin), (5.0, 10.0, 0.0));
    let spread = [vec![0.0], vec![0.0], vec![0.0]];
    let v = check(&mut Engines::default(), src, &params, &o, &spread, true);
    assert!(v.failures.is_empty(), "{:?}", v.failures);
    assert!(v.g3_inconclusive);
    // Away from the switch the same program is judged, and passes.
    let params = vec![("p0".to_string(), 0.8)];
    let o = oracle::evaluate(src, &params).expect("oracle");
    let v = check(&mut Engines::default(), src, &params, &o, &spread, true);
    assert!(v.failures.is_empty() && !v.g3_inconclusive, "{v:?}");
}
