//! Bad input: truncated and unbalanced programs are located syntax errors. (Randomly mutated
//! programs are run by `difftest/tests/mutations.rs`, under a memory cap.)

use ndvm_engine::prelude::*;

#[test]
fn truncations_and_unbalanced_programs_are_located_syntax_errors() {
    let src = "(define (f x) (let ((y [x 2])) (car (list y 'q))))\n(f 1)";
    for cut in 1..src.len() {
        let t = &src[..cut];
        if let Err(e) = Program::new(t, &[]) {
            assert!(e.span.is_some(), "{t:?}: {e}");
        }
    }
    for bad in [
        ")",
        "(()",
        "(a))",
        "[1 2)",
        "'",
        "#",
        "(quote)",
        "(lambda)",
        "(let ((x)) x)",
    ] {
        let e = Program::new(bad, &[]).expect_err(bad);
        assert_eq!(e.kind, ErrorKind::Syntax, "{bad}");
        assert!(e.span.is_some());
    }
}
