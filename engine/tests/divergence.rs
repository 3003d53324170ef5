//! Divergent lanes (docs/language-reference.md §9): programs whose lanes take different branches,
//! leave loops at different iterations and recurse to different depths. At B = 8, 64 and 256 with
//! varied bindings, every lane's result and gradients are byte-identical to the same lane run
//! alone.

mod common;
use common::*;
use ndvm_engine::prelude::*;

fn bits(e: &Evaluation<f32>) -> (Vec<u32>, Vec<Vec<u32>>) {
    let result = match &e.result {
        Output::Numbers(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => panic!("expected numbers, got {other:?}"),
    };
    (
        result,
        e.grads
            .iter()
            .map(|(_, g)| g.iter().map(|x| x.to_bits()).collect())
            .collect(),
    )
}

#[test]
fn every_lane_equals_itself_run_alone() {
    let programs = divergence_programs();
    assert!(programs.len() >= 25);
    for (name, src, inputs) in &programs {
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let program =
            Program::new(src, &inputs).unwrap_or_else(|e| panic!("{name}: {}", e.render(src)));
        // Scattered splits (values spread at random over lanes) at 8, 64 and 256 lanes, and at
        // 256 lanes with sorted values, whose splits come in long runs of consecutive lanes.
        for (seed, lanes) in [8usize, 64, 256, 256].into_iter().enumerate() {
            let mut batch = Bindings::<f32>::new();
            for &i in &inputs {
                let mut values: Vec<f32> =
                    (0..lanes).map(|l| divergence_value(i, l, seed)).collect();
                if seed == 3 {
                    values.sort_by(f32::total_cmp);
                }
                batch.lanes(i, values);
            }
            let mut vm = Vm::<f32>::default();
            let out = evaluate(&mut vm, &program, &batch, true)
                .unwrap_or_else(|e| panic!("{name} B={lanes}: {}", e.render(src)));
            assert!(
                vm.stats().splits > 0,
                "{name} B={lanes}: no branch split; the test does not exercise divergence"
            );
            let (ys, gs) = bits(&out);
            for l in 0..lanes {
                let alone = evaluate(&mut vm, &program, &batch.lane(l), true).expect("lane alone");
                assert_eq!(vm.stats().splits, 0);
                let (y1, g1) = bits(&alone);
                assert_eq!(
                    ys[l],
                    y1[0],
                    "{name} B={lanes} lane {l}: result {} vs alone {}",
                    f32::from_bits(ys[l]),
                    f32::from_bits(y1[0])
                );
                for (k, (g, g1)) in gs.iter().zip(&g1).enumerate() {
                    assert_eq!(
                        g[l],
                        g1[0],
                        "{name} B={lanes} lane {l}: d/d{} = {} vs alone {}",
                        inputs[k],
                        f32::from_bits(g[l]),
                        f32::from_bits(g1[0])
                    );
                }
            }
        }
    }
}

#[test]
fn untaken_sides_never_poison_gradients() {
    // x = 0 in lane 1: the then-side computes a/0 = inf there, but lane 1 took the else-side.
    let program = Program::new("(if (> x 0) (/ a x) (* a 2))", &["x", "a"]).expect("decodes");
    let mut b = Bindings::<f32>::new();
    b.lanes("x", vec![2.0, 0.0, -1.0])
        .lanes("a", vec![1.0, 1.0, 1.0]);
    let out = evaluate(&mut Vm::default(), &program, &b, true).expect("runs");
    assert_eq!(out.result, Output::Numbers(vec![0.5, 2.0, 2.0]));
    assert_eq!(out.grads[0].1, vec![-0.25, 0.0, 0.0]);
    assert_eq!(out.grads[1].1, vec![0.5, 2.0, 2.0]);
}

#[test]
fn structural_divergence_is_a_located_error_naming_the_form() {
    let cases = [
        ("(if (< x 0) (cons 1 2) (cons 3 4))", "different pairs"),
        ("(when (> x 0) x)", "a number and a boolean"),
        (
            "(if (> x 0) (lambda (t) t) (lambda (t) (* t 2)))",
            "different procedures",
        ),
        (
            "(loop ((l '()) (i 0)) (if (> i (* 3 x)) l (recur (cons i l) (+ i 1))))",
            "different pairs",
        ),
        ("(if (> x 0) 'pos 'neg)", "different symbols"),
        (
            "(list-ref '(1 2 3) (if (> x 0) 1 2))",
            "differs across lanes",
        ),
        ("(filter (lambda (t) (> t x)) '(0 1))", "lanes diverge"),
    ];
    for (src, what) in cases {
        let program = Program::new(src, &["x"]).expect(src);
        let mut b = Bindings::<f32>::new();
        b.lanes("x", vec![-1.0, 0.5, 2.0]);
        let e = evaluate(&mut Vm::default(), &program, &b, true).expect_err(src);
        assert_eq!(e.kind, ErrorKind::Divergence, "{src}: {e}");
        assert!(e.message.contains(what), "{src}: {}", e.message);
        assert!(e.span.is_some(), "{src}");
    }
}

#[test]
fn a_lane_that_never_finishes_is_stopped_and_named() {
    let program =
        Program::new("(loop ((i 0)) (if (= i n) i (recur (+ i 1))))", &["n"]).expect("decodes");
    let mut b = Bindings::<f32>::new();
    b.lanes("n", vec![3.0, -1.0, 5.0, 2.5]);
    let mut vm = Vm::new(Limits {
        eval_steps: 20_000,
        ..Limits::default()
    });
    let e = evaluate(&mut vm, &program, &b, false).expect_err("runaway lanes");
    assert_eq!(e.kind, ErrorKind::Limit);
    assert!(
        e.message.contains("lanes still running: 1, 3"),
        "{}",
        e.message
    );
    assert_eq!(e.lanes, Some(vec![1, 3]));
}

#[test]
fn split_nesting_counts_toward_the_depth_limit() {
    // Eight lanes leaving a loop at eight different iterations nest seven merges.
    let program =
        Program::new("(loop ((i 0)) (if (>= i n) i (recur (+ i 1))))", &["n"]).expect("decodes");
    let mut b = Bindings::<f32>::new();
    b.lanes("n", (0..8).map(|k| k as f32).collect());
    let ok = evaluate(
        &mut Vm::new(Limits {
            recursion_depth: 7,
            ..Limits::default()
        }),
        &program,
        &b,
        false,
    );
    assert_eq!(
        ok.expect("seven levels fit").result,
        Output::Numbers((0..8).map(|k| k as f32).collect())
    );
    let e = evaluate(
        &mut Vm::new(Limits {
            recursion_depth: 6,
            ..Limits::default()
        }),
        &program,
        &b,
        false,
    );
    assert_eq!(e.expect_err("six do not").kind, ErrorKind::Limit);
}

#[test]
fn divergent_runs_are_byte_identical_across_reruns() {
    let (_, src, inputs) = divergence_programs()
        .into_iter()
        .find(|p| p.0 == "logistic_branch_per_step")
        .expect("program");
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let program = Program::new(&src, &inputs).expect("decodes");
    let mut b = Bindings::<f32>::new();
    for &i in &inputs {
        b.lanes(i, (0..100).map(|l| divergence_value(i, l, 7)).collect());
    }
    let first = bits(&evaluate(&mut Vm::default(), &program, &b, true).expect("runs"));
    let mut vm = Vm::default();
    for _ in 0..3 {
        assert_eq!(
            bits(&evaluate(&mut vm, &program, &b, true).expect("runs")),
            first
        );
    }
}

#[test]
fn matrices_merge_elementwise_and_shapes_must_agree() {
    let program = Program::new("(if (> x 0) m1 m2)", &["x", "m1", "m2"]).expect("decodes");
    let mut b = Bindings::<f32>::new();
    b.lanes("x", vec![1.0, -1.0, 2.0]);
    b.matrix("m1", 2, 2, vec![1.0, 2.0, 3.0, 4.0])
        .matrix("m2", 2, 2, vec![5.0, 6.0, 7.0, 8.0]);
    let out = evaluate(&mut Vm::default(), &program, &b, true).expect("same shapes merge");
    let Output::Matrix {
        rows: 2,
        cols: 2,
        data,
    } = out.result
    else {
        panic!("a matrix per lane")
    };
    assert_eq!(
        data,
        vec![
            vec![1.0, 2.0, 3.0, 4.0],
            vec![5.0, 6.0, 7.0, 8.0],
            vec![1.0, 2.0, 3.0, 4.0]
        ]
    );
    b.matrix("m2", 3, 1, vec![5.0, 6.0, 7.0]);
    let e = evaluate(&mut Vm::default(), &program, &b, true).expect_err("shapes differ");
    assert_eq!(e.kind, ErrorKind::Divergence);
    assert!(
        e.message.contains("a [2,2] matrix and a [3,1] matrix"),
        "{}",
        e.message
    );
}
