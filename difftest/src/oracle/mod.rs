//! The independent oracle: a deliberately simple reference evaluator that shares no code with
//! the engine.
//!
//! It reads program text with its own reader ([`crate::sexpr`]), walks the tree with boxed,
//! reference-counted values, computes in f64, and differentiates by forward-mode dual numbers:
//! every number carries its partial derivatives with respect to every parameter. There are no
//! lanes, no tape, no arenas and no fast paths — whatever is slow here is slow on purpose, so
//! that each rule reads like docs/language-reference.md. It is used only for testing.
//!
//! Besides the value and gradient it reports the largest intermediate value (**peak**) and a
//! **margin**: how far, to first order in
//! parameter space, the parameters are from a point where a comparison, `abs`, `min`/`max` or a
//! clamp would switch. The generator rejects programs with a small margin so that finite
//! differences of the engine's forward are meaningful (gate G3).

mod dual;
mod eval;
mod prims;
mod tensor;
mod value;

pub use dual::Dual;

use eval::{Interp, Signal};
use value::{Value, scope};

/// What the oracle computed for one program.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleResult {
    /// The program's value.
    pub value: f64,
    /// d value / d parameter, in parameter order.
    pub grad: Vec<f64>,
    /// Distance to the nearest switching point (infinite when nothing depends on a parameter).
    pub margin: f64,
    /// The largest |value| of any intermediate number (infinite if one was not finite).
    pub peak: f64,
    /// The sign of `a − b` at every decision (comparison, `min`/`max`, `abs`, clamp), in order.
    pub decisions: Vec<i8>,
}

/// Evaluates `src` with `params` bound as differentiable inputs. The result must be a number.
pub fn evaluate(src: &str, params: &[(String, f64)]) -> Result<OracleResult, String> {
    evaluate_with_noise(src, params, 0.0, 0)
}

/// [`evaluate`] with every value and derivative perturbed by ±`relative` (signs drawn from
/// `seed`): stochastic arithmetic, to see how much rounding the program amplifies.
pub fn evaluate_with_noise(
    src: &str,
    params: &[(String, f64)],
    relative: f64,
    seed: u64,
) -> Result<OracleResult, String> {
    dual::set_noise(relative, seed);
    let out = exact(src, params);
    dual::set_noise(0.0, 0);
    out
}

fn exact(src: &str, params: &[(String, f64)]) -> Result<OracleResult, String> {
    let forms = crate::sexpr::read(src)?;
    let n = params.len();
    let inputs = scope(
        None,
        params.iter().map(|(name, _)| name.clone()).collect(),
        params
            .iter()
            .enumerate()
            .map(|(i, (_, v))| Some(Value::Num(Dual::param(*v, i, n))))
            .collect(),
    );
    let mut it = Interp::new(n);
    dual::reset_peak();
    let out = it.program(&forms, &inputs);
    match out {
        Ok(Value::Num(d)) => Ok(OracleResult {
            value: d.v,
            grad: d.d,
            margin: it.margin,
            peak: dual::peak(),
            decisions: it.decisions,
        }),
        Ok(other) => Err(format!("the result is a {}, not a number", other.kind())),
        Err(Signal::Error(e)) => Err(e),
        Err(Signal::Recur(_)) => Err("recur outside a loop".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str, params: &[(&str, f64)]) -> OracleResult {
        let params: Vec<_> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        evaluate(src, &params).unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    #[test]
    fn textbook_derivatives() {
        let r = run("(* a (sin b))", &[("a", 2.0), ("b", 0.5)]);
        assert_eq!(r.value, 2.0 * 0.5f64.sin());
        assert_eq!(r.grad, vec![0.5f64.sin(), 2.0 * 0.5f64.cos()]);
        let r = run(
            "(define (f x) (if (> x 1.0) (* x x) x)) (f a)",
            &[("a", 1.5)],
        );
        assert_eq!((r.value, r.grad[0]), (2.25, 3.0));
        assert!((r.margin - 0.5).abs() < 1e-12);
    }

    #[test]
    fn loops_lists_and_closures() {
        let r = run(
            "(loop ((x a) (k 0)) (if (= k 3) x (recur (* x 2.0) (+ k 1))))",
            &[("a", 1.5)],
        );
        assert_eq!((r.value, r.grad[0]), (12.0, 8.0));
        assert!(r.margin.is_infinite(), "the counter does not depend on a");
        let r = run(
            "(fold-left (lambda (acc u) (+ acc (* u u))) 0.0 (map (lambda (v) (* v a)) (list 1.0 2.0)))",
            &[("a", 3.0)],
        );
        assert_eq!((r.value, r.grad[0]), (45.0, 30.0));
        let r = run(
            "(letrec ((f (lambda (n acc) (if (< n 0.5) acc (f (- n 1.0) (* acc a)))))) (f 3.0 1.0))",
            &[("a", 2.0)],
        );
        assert_eq!((r.value, r.grad[0]), (8.0, 12.0));
    }

    #[test]
    fn linear_algebra() {
        // det [[a, 1], [2, 3]] = 3a − 2; inv's (0,0) entry = 3 / det.
        let r = run("(det (mat [a 1.0] [2.0 3.0]))", &[("a", 2.0)]);
        assert_eq!((r.value, r.grad[0]), (4.0, 3.0));
        let r = run(
            "(ref (ref (inv (mat [a 1.0] [2.0 3.0])) 0) 0)",
            &[("a", 2.0)],
        );
        assert_eq!(r.value, 0.75);
        assert!((r.grad[0] + 9.0 / 16.0).abs() < 1e-15);
        let r = run(
            "(logdet (matmul (eye 3) (mat [a 0 0] [0 2 0] [0 0 1])))",
            &[("a", 4.0)],
        );
        assert!((r.value - 8f64.ln()).abs() < 1e-15);
        assert!((r.grad[0] - 0.25).abs() < 1e-15);
        let r = run("(norm (cross [a 0 0] [0 1 0]))", &[("a", -2.0)]);
        assert_eq!((r.value, r.grad[0]), (2.0, -1.0));
    }

    #[test]
    fn errors_are_reported() {
        for bad in [
            "(car 1)",
            "(+ #t 1)",
            "(recur 1)",
            "(f 1)",
            "(vec)",
            "(define x 1)",
        ] {
            assert!(evaluate(bad, &[]).is_err(), "{bad}");
        }
        assert!(
            evaluate("(loop ((i 0)) (recur i))", &[]).is_err(),
            "an endless loop hits the step bound"
        );
    }
}
