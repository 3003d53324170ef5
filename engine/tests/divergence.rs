//! Divergent lanes (LANGUAGE.md §9): programs whose lanes take different branches, leave loops
//! at different iterations and recurse to different depths. At B = 8, 64 and 256 with varied
//! bindings, every lane's result and gradients are byte-identical to the same lane run alone.

use ndvm_engine::prelude::*;

/// (name, source, inputs). Inputs are drawn per lane by [`lane_value`].
const PROGRAMS: &[(&str, &str, &[&str])] = &[
    ("abs_branch", "(if (< x 0) (- 0 x) x)", &["x"]),
    (
        "piecewise_sides",
        "(if (> x 0.5) (* a (exp (- 0 x))) (* b (sin x)))",
        &["x", "a", "b"],
    ),
    (
        "nested_branches",
        "(if (> x 0) (if (> x 1) (* x x) (sqrt x)) (- 0 (* a x)))",
        &["x", "a"],
    ),
    (
        "cond_three_way",
        "(cond ((< x -1) (* a x)) ((< x 1) (* b x x)) (else (+ a (* b x))))",
        &["x", "a", "b"],
    ),
    (
        "cond_four_way",
        "(cond ((< x -1.5) (* a a)) ((< x 0) (* a x)) ((< x 1.5) (cos (* b x))) (else (- x b)))",
        &["x", "a", "b"],
    ),
    (
        "and_test",
        "(if (and (> x 0) (< x 1.2)) (* a x) (* b b))",
        &["x", "a", "b"],
    ),
    (
        "or_test",
        "(if (or (< x -1) (> x 1)) (square x) (* a x))",
        &["x", "a"],
    ),
    (
        "branch_in_operand",
        "(+ 1 (* a (if (> x 0) x 0)))",
        &["x", "a"],
    ),
    (
        "newton_sqrt",
        "(loop ((y 1.0)) (if (< (abs (- (* y y) a)) 1e-5) y (recur (* 0.5 (+ y (/ a y))))))",
        &["a"],
    ),
    (
        "per_lane_trip_count",
        "(loop ((i 0) (s 0)) (if (>= i n) s (recur (+ i 1) (+ s (* a i)))))",
        &["n", "a"],
    ),
    (
        "tail_recursion_depth",
        "(define (f k acc) (if (<= k 0) acc (f (- k 1) (* acc a)))) (f n 1)",
        &["n", "a"],
    ),
    (
        "nontail_recursion_depth",
        "(define (g k) (if (<= k 0) a (* x (g (- k 1))))) (g n)",
        &["n", "a", "x"],
    ),
    ("inf_on_untaken_side", "(if (> x 0) (/ a x) 0)", &["x", "a"]),
    (
        "nan_on_untaken_side",
        "(if (> x 0) (* a (sqrt x) (log x)) (* a (- 0 x) (pow x 0.5)))",
        &["x", "a"],
    ),
    (
        "finished_lane_overflows",
        "(loop ((y a) (k 0)) (if (>= k n) y (recur (* y y 10) (+ k 1))))",
        &["a", "n"],
    ),
    (
        "three_exit_levels",
        "(loop ((y x0) (k 0)) (if (>= k m) y (recur (* r y (- 1 y)) (+ k 1))))",
        &["x0", "r", "m"],
    ),
    (
        "shared_value_both_sides",
        "(let ((u (* a x))) (if (> x 0) (+ u (* u u)) (- u 1)))",
        &["x", "a"],
    ),
    (
        "divergent_loop_feeds_multiply",
        "(* b (loop ((i 0) (s x)) (if (>= i n) s (recur (+ i 1) (sin (+ s a))))))",
        &["b", "n", "x", "a"],
    ),
    (
        "branch_inside_map",
        "(fold-left + 0 (map (lambda (t) (if (> (* x t) 1) (* a t) (* b t))) '(0.5 1 2)))",
        &["x", "a", "b"],
    ),
    (
        "returns_existing_value",
        "(let ((r (if (> x 0) x a))) (* r b))",
        &["x", "a", "b"],
    ),
    (
        "boolean_merge_then_split",
        "(if (if (> x 0) (> a 1.5) (< b 1)) (* a x) (* b x))",
        &["x", "a", "b"],
    ),
    (
        "min_max_sides",
        "(if (> x 0) (max x a) (min x b))",
        &["x", "a", "b"],
    ),
    (
        "modulo_parity",
        "(if (> (modulo n 2) 0.5) (* a x) (* b x))",
        &["n", "a", "b", "x"],
    ),
    (
        "closure_in_branch",
        "(define (f t) (* a t t)) (if (> x 0) (f x) (f (- 0 x)))",
        &["x", "a"],
    ),
    (
        "mutual_recursion_depth",
        "(letrec ((ev (lambda (k) (if (<= k 0) a (od (- k 1))))) (od (lambda (k) (if (<= k 0) b (ev (- k 1)))))) (ev n))",
        &["n", "a", "b"],
    ),
    (
        "logistic_branch_per_step",
        "(loop ((y x0) (k 0)) (if (= k n) y (recur (if (> y 0.5) (* r y (- 1 y)) (* 0.9 r y (- 1 y))) (+ k 1))))",
        &["x0", "r", "n"],
    ),
    (
        "apply_in_branch",
        "(if (> x 0) (apply + (list a x)) (apply * (list b x)))",
        &["x", "a", "b"],
    ),
    (
        "pow_sides",
        "(if (> a 1.5) (pow a x) (pow b x))",
        &["x", "a", "b"],
    ),
    // Tensors: split branches run the linear-algebra kernels over lane runs or single lanes,
    // and tensors merge per element.
    (
        "tensor_branch_sides",
        "(let ((v [x a b])) (if (< x 0) (norm (cross v [1 2 3])) (dot v (normalize [a 1 x]))))",
        &["x", "a", "b"],
    ),
    (
        "tensor_merge_then_solve",
        "(let ((A (if (> x 0) (mat [a x] [x b]) (mat [b 1] [0 a])))) (+ (logdet (+ A (scale 3 (eye 2)))) (trace (inv (+ A (eye 2))))))",
        &["x", "a", "b"],
    ),
    // A value made before the branch, returned by it and also used after it: the merge must
    // reach its adjoint in the order a lone run does (found by `ndvm fuzz`, see merge.rs).
    (
        "old_value_reused_after_branch",
        "(/ (if (> x -0.464) x b) (cos (+ x x)))",
        &["x", "b"],
    ),
    (
        "same_old_value_on_both_sides",
        "(* (if (> x 0) a a) (+ a (* a x) a))",
        &["x", "a"],
    ),
    (
        "old_list_elements_reused_after_branch",
        "(let ((l (list a x))) (* (if (> x 0) (car l) (cadr l)) (+ (car l) (cadr l) (car l))))",
        &["x", "a"],
    ),
    (
        "old_tensor_reused_after_branch",
        "(let ((v (vec a x b))) (dot (if (> x 0) v (scale 2 v)) (+ v (* v x) v)))",
        &["x", "a", "b"],
    ),
    (
        "tensor_lu_in_loop_per_lane_exit",
        "(loop ((k 0) (M (mat [4 a 0 1] [1 4 b 0] [0 1 4 x] [x 0 1 4])) (s 0)) (if (> k (* 2 a)) (+ s (det M)) (recur (+ k 1) (matmul M (scale 0.25 (inv (+ M (eye 4))))) (+ s (logdet M)))))",
        &["x", "a", "b"],
    ),
];

/// A deterministic spread of values per input and lane, crossing every branch boundary above.
fn lane_value(name: &str, lane: usize, seed: usize) -> f32 {
    let u = ((lane * 7919 + seed * 104_729) as f64 * 0.618_033_988_75).fract();
    (match name {
        "x" => -2.0 + 4.0 * u,
        "a" => 0.5 + 2.5 * u,
        "b" => 0.5 + 1.5 * u,
        "n" => ((lane * 3 + seed) % 10 + 1) as f64,
        "m" => [2.0, 5.0, 9.0][lane % 3],
        "x0" => 0.1 + 0.8 * u,
        "r" => 2.5 + 1.4 * u,
        _ => u,
    }) as f32
}

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
    assert!(PROGRAMS.len() >= 25);
    for (name, src, inputs) in PROGRAMS {
        let program =
            Program::new(src, inputs).unwrap_or_else(|e| panic!("{name}: {}", e.render(src)));
        // Scattered splits (values spread at random over lanes) at 8, 64 and 256 lanes, and at
        // 256 lanes with sorted values, whose splits come in long runs of consecutive lanes.
        for (seed, lanes) in [8usize, 64, 256, 256].into_iter().enumerate() {
            let mut batch = Bindings::<f32>::new();
            for &i in *inputs {
                let mut values: Vec<f32> = (0..lanes).map(|l| lane_value(i, l, seed)).collect();
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
    let (_, src, inputs) = PROGRAMS
        .iter()
        .find(|p| p.0 == "logistic_branch_per_step")
        .expect("program");
    let program = Program::new(src, inputs).expect("decodes");
    let mut b = Bindings::<f32>::new();
    for &i in *inputs {
        b.lanes(i, (0..100).map(|l| lane_value(i, l, 7)).collect());
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
