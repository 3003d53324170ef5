//! Resource bounds: tail loops in constant space, deep recursion without the host stack, and a
//! clean `limit` error naming each limit.

mod common;
use common::*;
use ndvm_engine::prelude::*;

fn eval_with(
    src: &str,
    limits: Limits,
    b: &Bindings<f32>,
) -> (Result<Vec<f32>>, ndvm_engine::WalkStats) {
    let program = Program::new(src, &b.names()).expect("decodes");
    let mut vm = Vm::<f32>::new(limits);
    let out = evaluate(&mut vm, &program, b, true).map(|e| numbers(&e));
    (out, vm.stats())
}

#[test]
fn ten_million_iteration_tail_loop_runs_in_constant_space() {
    let limits = Limits {
        eval_steps: 1_000_000_000,
        ..Limits::default()
    };
    let src = "(loop ((i 0)) (if (= i 10000000) i (recur (+ i 1))))";
    let (out, stats) = eval_with(src, limits, &Bindings::new());
    assert_eq!(out.expect("runs"), vec![1e7]);
    assert!(stats.steps > 50_000_000, "{stats:?}");
    assert!(stats.peak_frames <= 3, "frames grew: {stats:?}");
    assert!(stats.peak_konts <= 4, "continuations grew: {stats:?}");
    // A tail-recursive define with closures captured only outside the loop is constant too.
    let src = "(define (count n acc) (if (= n 0) acc (count (- n 1) (+ acc 1)))) (count 1000000 0)";
    let (out, stats) = eval_with(src, Limits::default(), &Bindings::new());
    assert_eq!(out.expect("runs"), vec![1e6]);
    assert!(stats.peak_frames <= 3, "{stats:?}");
}

#[test]
fn million_deep_recursion_is_right_or_a_limit_error_never_a_stack_overflow() {
    // Runs on the test harness's 2 MiB thread: the walk must not use the host stack per call.
    let src = "(define (f n) (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 1000000)";
    let (out, stats) = eval_with(src, Limits::default(), &Bindings::new());
    assert_eq!(
        out.expect("default limits allow 10^6 nested calls"),
        vec![1e6]
    );
    assert!(stats.peak_frames > 1_000_000);
    let (out, _) = eval_with(
        src,
        Limits {
            recursion_depth: 10_000,
            ..Limits::default()
        },
        &Bindings::new(),
    );
    let e = out.expect_err("depth limit");
    assert_eq!(e.kind, ErrorKind::Limit);
    assert!(
        e.message.contains("recursion depth limit of 10000"),
        "{}",
        e.message
    );
    // Deeply nested source is bounded by the reader, not the host stack.
    let deep = format!("{}1{}", "(+ 1 ".repeat(5000), ")".repeat(5000));
    let (out, _) = eval_with(&deep, Limits::default(), &Bindings::new());
    assert_eq!(out.expect("5000 nested operands"), vec![5001.0]);
}

#[test]
fn each_limit_is_a_clean_located_error() {
    let mut b = Bindings::<f32>::new();
    b.scalar("a", 1.0);
    let cases: [(&str, Limits, &str); 5] = [
        (
            "(loop ((i 0)) (recur (+ i 1)))",
            Limits {
                eval_steps: 1000,
                ..Limits::default()
            },
            "eval steps limit of 1000",
        ),
        (
            "(loop ((l '()) (i 0)) (if (= i 1000) l (recur (cons i l) (+ i 1))))",
            Limits {
                heap_cells: 100,
                ..Limits::default()
            },
            "heap cells limit of 100",
        ),
        (
            "(loop ((x a) (i 0)) (if (= i 1000) x (recur (* x 1.01) (+ i 1))))",
            Limits {
                tape_nodes: 100,
                ..Limits::default()
            },
            "tape nodes limit of 100",
        ),
        (
            "(loop ((x a) (i 0)) (if (= i 1000) x (recur (* x 1.01) (+ i 1))))",
            Limits {
                payload_bytes: 400,
                ..Limits::default()
            },
            "payload bytes limit of 400",
        ),
        (
            "(define (f n) (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 100)",
            Limits {
                recursion_depth: 50,
                ..Limits::default()
            },
            "recursion depth limit of 50",
        ),
    ];
    for (src, limits, msg) in cases {
        let (out, _) = eval_with(src, limits, &b);
        let e = out.expect_err(src);
        assert_eq!(e.kind, ErrorKind::Limit, "{src}");
        assert!(e.message.contains(msg), "{src}: {}", e.message);
        assert!(
            e.span.is_some() && e.lanes.is_some(),
            "{src}: limit errors are located and carry lanes"
        );
    }
}

#[test]
fn reused_vm_is_byte_identical_to_a_fresh_one() {
    let src = "(define (f x k) (if (= k 0) x (f (* (sin x) 1.3) (- k 1)))) (f a 50)";
    let mut b = Bindings::<f32>::new();
    b.lanes("a", (0..32).map(|i| 0.1 + i as f32 * 0.05).collect());
    let program = Program::new(src, &b.names()).expect("decodes");
    let mut reused = Vm::<f32>::default();
    let _ = evaluate(
        &mut reused,
        &Program::new("(* a a a)", &["a"]).expect("other"),
        &b,
        true,
    );
    let first = evaluate(&mut reused, &program, &b, true).expect("runs");
    let again = evaluate(&mut reused, &program, &b, true).expect("runs");
    let fresh = evaluate(&mut Vm::<f32>::default(), &program, &b, true).expect("runs");
    let bits = |e: &Evaluation<f32>| {
        (
            numbers(e).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            e.grads[0].1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(bits(&first), bits(&fresh));
    assert_eq!(bits(&again), bits(&fresh));
}

#[test]
fn program_cache_shares_decoded_programs() {
    let cache = ProgramCache::new();
    let a = cache.get("(+ x 1)", &["x"]).expect("decodes");
    let b = cache.get("(+ x 1)", &["x"]).expect("decodes");
    let c = cache.get("(+ x 1)", &["y", "x"]).expect("decodes");
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    assert_eq!(cache.len(), 2);
    assert!(cache.get("(+ x", &["x"]).is_err());
}

/// A stop request ends a long loop at the next look (every `STOP_EVERY` steps) with a `limit`
/// error saying so: a deadline already past at the first look, a flag set by another thread.
#[test]
fn a_stop_request_ends_a_long_loop_within_a_look() {
    use ndvm_engine::limits::{STOP_EVERY, STOPPED};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let program = Program::new("(loop ((i 0)) (if (= i 100000000) i (recur (+ i 1))))", &[])
        .expect("decodes");
    let mut vm = Vm::<f64>::new(Limits::default());
    vm.stop = Stop {
        flag: None,
        deadline: Some(std::time::Instant::now()),
    };
    let e = evaluate(&mut vm, &program, &Bindings::new(), true).expect_err("stopped");
    assert_eq!(e.kind, ErrorKind::Limit);
    assert!(e.message.starts_with(STOPPED), "{}", e.message);
    assert!(
        e.message.contains(&format!("after {STOP_EVERY} steps")),
        "{}",
        e.message
    );
    // A flag set while the loop runs; the same evaluator runs a short program afterwards.
    let flag = Arc::new(AtomicBool::new(false));
    vm.stop = Stop {
        flag: Some(flag.clone()),
        deadline: None,
    };
    let setter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        flag.store(true, Ordering::Relaxed);
    });
    let e = evaluate(&mut vm, &program, &Bindings::new(), false).expect_err("stopped");
    setter.join().expect("setter");
    assert!(e.message.starts_with(STOPPED), "{}", e.message);
    vm.stop = Stop::default();
    let short = Program::new("(+ 1 2)", &[]).expect("decodes");
    let out = evaluate(&mut vm, &short, &Bindings::new(), false).expect("runs");
    assert_eq!(numbers(&out), vec![3.0]);
}

#[test]
fn chains_of_and_or_cond_and_let_star_are_bounded_in_depth() {
    use ndvm_engine::syntax::expand::MAX_CHAINED;
    let n = MAX_CHAINED;
    // At the limit a chain decodes and runs; one operand more is a located limit error.
    let fine = format!("(and {})", "1 ".repeat(n));
    Program::new(&fine, &[]).expect("at the limit");
    let cases = [
        format!("(and {})", "1 ".repeat(n + 1)),
        format!("(or {})", "#f ".repeat(n + 1)),
        format!("(cond {}(else 2))", "(#f 1) ".repeat(n)),
        format!("(let* ({}) x)", "(x 1) ".repeat(n + 1)),
        // Nested chains add up.
        format!(
            "(+ 1 (or {} (and {})))",
            "#f ".repeat(n / 2),
            "1 ".repeat(n / 2 + 1)
        ),
    ];
    for src in &cases {
        let e = Program::new(src, &[]).expect_err("too deep");
        assert_eq!(e.kind, ErrorKind::Limit, "{}", e.message);
        assert!(
            e.message.contains("deeper than 100000 levels"),
            "{}",
            e.message
        );
    }
}
