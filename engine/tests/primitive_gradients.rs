//! Every scalar primitive's VJP agrees with central finite differences on random in-domain
//! inputs, in f32 and f64 (docs/language-reference.md §7 test tolerances).

use ndvm_engine::check::{close, finite_differences};
use ndvm_engine::prelude::*;
use proptest::prelude::*;

/// A program over parameters `a`, `b`, `c` and how to map unit samples into its domain (kept
/// away from kinks and jumps, where finite differences are meaningless).
struct Case {
    src: &'static str,
    domain: fn([f64; 3]) -> [f64; 3],
}

fn lin(u: f64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * u
}

/// |x| in [0.2, 3] with either sign.
fn signed(u: f64) -> f64 {
    let m = lin((u * 2.0).fract(), 0.2, 3.0);
    if u < 0.5 { -m } else { m }
}

/// Away from integers: k + [0.2, 0.8].
fn fractional(u: f64) -> f64 {
    (u * 8.0 - 4.0).floor() + lin((u * 8.0).fract(), 0.2, 0.8)
}

const CASES: &[Case] = &[
    Case {
        src: "(sin a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(cos a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(tan a)",
        domain: |u| [lin(u[0], -1.2, 1.2), 0.0, 0.0],
    },
    Case {
        src: "(asin a)",
        domain: |u| [lin(u[0], -0.9, 0.9), 0.0, 0.0],
    },
    Case {
        src: "(acos a)",
        domain: |u| [lin(u[0], -0.9, 0.9), 0.0, 0.0],
    },
    Case {
        src: "(atan a)",
        domain: |u| [lin(u[0], -4.0, 4.0), 0.0, 0.0],
    },
    Case {
        src: "(sinh a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(cosh a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(tanh a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(exp a)",
        domain: |u| [lin(u[0], -4.0, 4.0), 0.0, 0.0],
    },
    Case {
        src: "(log a)",
        domain: |u| [lin(u[0], 0.1, 10.0), 0.0, 0.0],
    },
    Case {
        src: "(sqrt a)",
        domain: |u| [lin(u[0], 0.1, 10.0), 0.0, 0.0],
    },
    Case {
        src: "(abs a)",
        domain: |u| [signed(u[0]), 0.0, 0.0],
    },
    Case {
        src: "(square a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(floor a)",
        domain: |u| [fractional(u[0]), 0.0, 0.0],
    },
    Case {
        src: "(ceiling a)",
        domain: |u| [fractional(u[0]), 0.0, 0.0],
    },
    Case {
        src: "(round a)",
        domain: |u| [fractional(u[0]) + 0.5, 0.0, 0.0],
    },
    Case {
        src: "(truncate a)",
        domain: |u| [fractional(u[0]), 0.0, 0.0],
    },
    Case {
        src: "(- a)",
        domain: |u| [lin(u[0], -3.0, 3.0), 0.0, 0.0],
    },
    Case {
        src: "(/ a)",
        domain: |u| [signed(u[0]), 0.0, 0.0],
    },
    Case {
        src: "(+ a b c)",
        domain: |u| {
            [
                lin(u[0], -3.0, 3.0),
                lin(u[1], -3.0, 3.0),
                lin(u[2], -3.0, 3.0),
            ]
        },
    },
    Case {
        src: "(- a b c)",
        domain: |u| {
            [
                lin(u[0], -3.0, 3.0),
                lin(u[1], -3.0, 3.0),
                lin(u[2], -3.0, 3.0),
            ]
        },
    },
    Case {
        src: "(* a b c)",
        domain: |u| {
            [
                lin(u[0], -3.0, 3.0),
                lin(u[1], -3.0, 3.0),
                lin(u[2], -3.0, 3.0),
            ]
        },
    },
    Case {
        src: "(/ a b c)",
        domain: |u| [lin(u[0], -3.0, 3.0), signed(u[1]), signed(u[2])],
    },
    Case {
        src: "(pow a b)",
        domain: |u| [lin(u[0], 0.2, 3.0), lin(u[1], -2.0, 2.0), 0.0],
    },
    Case {
        src: "(expt a b)",
        domain: |u| [lin(u[0], 0.2, 3.0), lin(u[1], -2.0, 2.0), 0.0],
    },
    Case {
        src: "(min a b)",
        domain: |u| {
            [
                lin(u[0], -3.0, 3.0),
                lin(u[0], -3.0, 3.0) + signed(u[1]),
                0.0,
            ]
        },
    },
    Case {
        src: "(max a b)",
        domain: |u| {
            [
                lin(u[0], -3.0, 3.0),
                lin(u[0], -3.0, 3.0) + signed(u[1]),
                0.0,
            ]
        },
    },
    Case {
        src: "(modulo a b)",
        domain: |u| [signed(u[1]) * fractional(u[0]), signed(u[1]), 0.0],
    },
    Case {
        src: "(remainder a b)",
        domain: |u| [signed(u[1]) * fractional(u[0]), signed(u[1]), 0.0],
    },
    Case {
        src: "(atan a b)",
        domain: |u| [signed(u[0]), signed(u[1]), 0.0],
    },
];

fn check_case<R: Real>(
    case: &Case,
    u: [f64; 3],
    atol: f64,
    rtol: f64,
) -> Result<(), TestCaseError> {
    let x = (case.domain)(u);
    let names = ["a", "b", "c"];
    let mut b = Bindings::<R>::new();
    let mut b64 = Bindings::<f64>::new();
    for (n, &v) in names.iter().zip(&x) {
        // Round through R so both precisions see the same point.
        let v = R::from_f64(v);
        b.scalar(n, v);
        b64.scalar(n, v.to_f64());
    }
    let program = Program::new(case.src, &names).expect("decodes");
    let out = evaluate(&mut Vm::<R>::default(), &program, &b, true).expect("runs");
    let fd = finite_differences(&mut Vm::<f64>::default(), &program, &b64, 1e-6).expect("fd");
    for ((name, g), (_, d)) in out.grads.iter().zip(&fd) {
        let g = g[0].to_f64();
        prop_assert!(
            close(g, d[0], atol, rtol),
            "{} at {x:?}: d/d{name} = {g}, finite difference {}",
            case.src,
            d[0]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn vjps_match_finite_differences_f64(k in 0..CASES.len(), u in prop::array::uniform3(0.0f64..1.0)) {
        check_case::<f64>(&CASES[k], u, 1e-6, 1e-6)?;
    }

    #[test]
    fn vjps_match_finite_differences_f32(k in 0..CASES.len(), u in prop::array::uniform3(0.0f64..1.0)) {
        check_case::<f32>(&CASES[k], u, 1e-4, 1e-4)?;
    }
}

#[test]
fn every_case_runs_in_both_precisions() {
    for (i, case) in CASES.iter().enumerate() {
        for j in 0..8 {
            let u = [
                (i as f64 * 0.137 + j as f64 * 0.119).fract(),
                (j as f64 * 0.31).fract(),
                0.5,
            ];
            check_case::<f64>(case, u, 1e-6, 1e-6).unwrap_or_else(|e| panic!("{e}"));
            check_case::<f32>(case, u, 1e-4, 1e-4).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
