//! Tape replay (`Vm::replay`): a recorded walk recomputed for new inputs equals a fresh walk of
//! those inputs bit for bit — result and gradients — in every lane whose guards held, for every
//! conformance, fuzz-corpus and divergence program; the lanes whose guards failed are exactly
//! the ones whose decisions changed.

mod common;
use common::*;
use ndvm_engine::prelude::*;
use ndvm_engine::tape::GuardKind;

/// Result and gradient bits per lane.
type Bits = (Vec<u32>, Vec<Vec<u32>>);

fn bits_of(vm: &Vm<f32>, program: &Program, result: Value) -> Bits {
    let ys = vm.numbers(result).expect("a number");
    // The outputs into a reused buffer (what a replayed group's step does) are the same
    // numbers, widened, whatever the buffer held.
    let mut into = vec![f64::NAN; 3];
    assert!(vm.numbers_into(result, &mut into));
    let widened: Vec<u64> = ys.iter().map(|&y| f64::from(y).to_bits()).collect();
    assert_eq!(
        into.iter().map(|y| y.to_bits()).collect::<Vec<_>>(),
        widened
    );
    let grads = (0..program.inputs.len())
        .map(|i| vm.grad(i).iter().map(|g| g.to_bits()).collect())
        .collect();
    (ys.iter().map(|y| y.to_bits()).collect(), grads)
}

use ndvm_engine::value::Value;

/// Walks `first`, replays `next` on the same evaluator (then the backward pass), and compares
/// every lane that held with a fresh walk of `next`. Returns the replay's verdict, or `None`
/// when the fresh walk fails (a divergence error the walk reports instead).
fn replay_matches_walk(
    what: &str,
    program: &Program,
    first: &Bindings<f32>,
    next: &Bindings<f32>,
) -> Option<Replay> {
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(program, first, true).ok()?;
    vm.backward(v);
    let mut fresh = Vm::<f32>::default();
    let Ok(w) = fresh.eval(program, next, true) else {
        return None;
    };
    fresh.numbers(w)?;
    fresh.backward(w);
    let want = bits_of(&fresh, program, w);
    let replay = vm.replay(program, next);
    let (result, failed) = match &replay {
        Replay::Held(r) => (*r, &[][..]),
        Replay::Partial { result, lanes, .. } => (*result, lanes.as_slice()),
        Replay::Stale(why) => panic!("{what}: stale tape ({why})"),
    };
    if failed.is_empty() {
        assert_eq!(result, w, "{what}: the replay's result is the walk's value");
    }
    vm.backward(result);
    let got = bits_of(&vm, program, result);
    for l in 0..want.0.len() {
        if failed.contains(&(l as u32)) {
            continue;
        }
        assert_eq!(got.0[l], want.0[l], "{what} lane {l}: result");
        for (i, (g, w)) in got.1.iter().zip(&want.1).enumerate() {
            assert_eq!(
                g.get(l),
                w.get(l),
                "{what} lane {l}: d/d{}",
                program.inputs[i]
            );
        }
    }
    Some(replay)
}

fn held(r: &Option<Replay>) -> bool {
    matches!(r, Some(Replay::Held(_)))
}

#[test]
fn conformance_programs_replay_bit_for_bit() {
    let (mut runs, mut held_runs) = (0, 0);
    for p in conformance_programs() {
        if !p["error"].is_null() {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("?");
        let src = p["src"].as_str().expect("src");
        for lanes in [1, 256] {
            let first = conformance_bindings(&p, lanes, 0.0);
            let program = Program::new(src, &first.names()).expect("decodes");
            for shift in [0.0, 1e-3, -4e-3, 2e-2] {
                let next = conformance_bindings(&p, lanes, shift);
                let what = format!("{name} B={lanes} shift={shift}");
                let r = replay_matches_walk(&what, &program, &first, &next);
                assert!(r.is_some(), "{what}: the fresh walk failed");
                runs += 1;
                held_runs += held(&r) as usize;
            }
        }
    }
    // Small moves keep almost every program on its path: replay is the common case.
    assert!(
        held_runs * 10 >= runs * 9,
        "{held_runs} of {runs} replays held"
    );
}

#[test]
fn fuzz_corpus_programs_replay_bit_for_bit() {
    let corpus = read_jsonl("fuzz/seed1234_n200.jsonl");
    let (mut runs, mut held_runs) = (0, 0);
    for p in &corpus {
        let id = p["id"].as_u64().unwrap_or(0);
        let src = p["src"].as_str().expect("src");
        let bind = |shift: f64, lanes: usize| fuzz_bindings(p, shift, lanes);
        let program = Program::new(src, &bind(0.0, 1).names()).expect("decodes");
        for lanes in [1, 8] {
            for shift in [1e-3, -1e-2, 5e-2] {
                let what = format!("fuzz #{id} B={lanes} shift={shift}");
                let r =
                    replay_matches_walk(&what, &program, &bind(0.0, lanes), &bind(shift, lanes));
                runs += 1;
                held_runs += held(&r) as usize;
            }
        }
    }
    assert!(held_runs * 2 >= runs, "{held_runs} of {runs} replays held");
}

#[test]
fn divergence_programs_replay_bit_for_bit() {
    let (mut partial, mut total) = (0, 0);
    for (name, src, inputs) in divergence_programs() {
        let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let program = Program::new(&src, &names).expect("decodes");
        let bind = |nudge: f32| {
            let mut b = Bindings::<f32>::new();
            for &i in &names {
                let xs = (0..64).map(|l| {
                    let x = divergence_value(i, l, 0);
                    // Move some lanes a little, and the integer inputs not at all.
                    if i == "n" || i == "m" {
                        x
                    } else {
                        x + nudge * ((l % 5) as f32 - 2.0)
                    }
                });
                b.lanes(i, xs.collect());
            }
            b
        };
        for nudge in [0.0, 1e-4, 0.05] {
            let what = format!("{name} nudge={nudge}");
            let r = replay_matches_walk(&what, &program, &bind(0.0), &bind(nudge));
            if nudge == 0.0 {
                assert!(held(&r), "{what}: the same inputs must replay: {r:?}");
            }
            total += 1;
            partial += matches!(r, Some(Replay::Partial { .. })) as usize;
        }
    }
    // The larger nudge moves lanes across branch boundaries in many programs.
    assert!(
        partial >= 10,
        "only {partial} of {total} replays had failed lanes"
    );
}

#[test]
fn a_flipped_branch_names_exactly_the_lanes_that_crossed() {
    let program =
        Program::new("(if (< x c) (* a x) (* a x x))", &["x", "a", "c"]).expect("decodes");
    let bind = |xs: Vec<f32>| {
        let mut b = Bindings::<f32>::new();
        b.lanes("x", xs).scalar("a", 1.5).constant("c", 1.0);
        b
    };
    let before: Vec<f32> = (0..8).map(|l| 0.25 * l as f32).collect(); // lanes 0..3 below 1
    let mut after = before.clone();
    after[3] = 1.1; // crosses upward
    after[5] = 0.9; // crosses downward
    after[6] = 1.6; // moves, same side
    let r = replay_matches_walk("flip", &program, &bind(before), &bind(after));
    assert_eq!(
        r,
        Some(Replay::Partial {
            result: match &r {
                Some(Replay::Partial { result, .. }) => *result,
                _ => Value::NIL,
            },
            lanes: vec![3, 5],
            failures: vec![(GuardKind::Compare, 1)],
        })
    );
}

#[test]
fn an_index_read_as_structure_is_guarded() {
    let program =
        Program::new("(* a (ref (vec a (* 2 a) (* 3 a)) k))", &["a", "k"]).expect("decodes");
    let bind = |k: f32| {
        let mut b = Bindings::<f32>::new();
        // An index must be the same in every lane (docs/language-reference.md §6.5).
        b.lanes("a", vec![1.0, 2.0]).scalar("k", k);
        b
    };
    // 1.2 → 1.7 truncates to the same index: the replay holds.
    assert!(held(&replay_matches_walk(
        "same index",
        &program,
        &bind(1.2),
        &bind(1.7)
    )));
    // 1.2 → 2.1 selects another element.
    match replay_matches_walk("new index", &program, &bind(1.2), &bind(2.1)) {
        Some(Replay::Partial {
            lanes, failures, ..
        }) => {
            assert_eq!(lanes, vec![0, 1]);
            assert_eq!(failures, vec![(GuardKind::Index, 1)]);
        }
        other => panic!("expected the index guard to fail, got {other:?}"),
    }
}

#[test]
fn structural_input_changes_make_the_tape_stale() {
    let program = Program::new("(+ (* a x) c)", &["a", "x", "c"]).expect("decodes");
    let bind = |lanes: usize, c: f32| {
        let mut b = Bindings::<f32>::new();
        b.lanes("a", vec![2.0; lanes])
            .lanes("x", vec![3.0; lanes])
            .constant("c", c);
        b
    };
    let mut vm = Vm::<f32>::default();
    assert!(
        matches!(vm.replay(&program, &bind(4, 1.0)), Replay::Stale(_)),
        "nothing walked yet"
    );
    vm.eval(&program, &bind(4, 1.0), true).expect("walks");
    assert!(matches!(
        vm.replay(&program, &bind(4, 1.0)),
        Replay::Held(_)
    ));
    assert!(
        matches!(vm.replay(&program, &bind(5, 1.0)), Replay::Stale(_)),
        "lane count"
    );
    assert!(
        matches!(vm.replay(&program, &bind(4, 2.0)), Replay::Stale(_)),
        "a folded constant"
    );
    // A walk without a tape cannot be replayed either.
    vm.eval(&program, &bind(4, 1.0), false).expect("walks");
    assert!(
        matches!(vm.replay(&program, &bind(4, 1.0)), Replay::Stale(_)),
        "no tape"
    );
}

#[test]
fn replay_reuses_the_tape_across_many_steps() {
    // The logistic map, replayed 20 times with a drifting r: each replay equals a fresh walk.
    let program = Program::new(
        "(loop ((x x0) (k 0)) (if (= k 16) x (recur (* r (* x (- 1.0 x))) (+ k 1))))",
        &["r", "x0"],
    )
    .expect("decodes");
    let bind = |r: f32| {
        let mut b = Bindings::<f32>::new();
        b.scalar("r", r).scalar("x0", 0.4);
        b
    };
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(&program, &bind(3.2), true).expect("walks");
    let nodes = vm.stats().tape_nodes;
    for step in 1..=20 {
        let r = 3.2 + 0.01 * step as f32;
        let Replay::Held(res) = vm.replay(&program, &bind(r)) else {
            panic!("step {step}: the loop's exit does not depend on r");
        };
        assert_eq!(res, v);
        vm.backward(res);
        let got = bits_of(&vm, &program, res);
        let fresh = evaluate(&mut Vm::default(), &program, &bind(r), true).expect("walks");
        assert_eq!(got.0[0], numbers(&fresh)[0].to_bits(), "step {step}");
        assert_eq!(
            got.1[0][0],
            fresh.grads[0].1[0].to_bits(),
            "step {step}: d/dr"
        );
        assert_eq!(
            vm.stats().tape_nodes,
            nodes,
            "the tape is reused, not re-recorded"
        );
    }
}

/// One lane takes the unrolled one-lane path (`replay/flat.rs`): across many replays, a guard
/// failure mid-stream, a fresh walk down the other branch and replays of that new tape, every
/// held replay equals a fresh walk bit for bit, and the failure is reported as the per-node
/// loop reports it.
#[test]
fn one_lane_replay_follows_its_tape_through_a_flipped_branch() {
    let program = Program::new(
        "(let ((v (vec a (* a x) 2.0))) (if (< x 1.0) (dot v (scale x v)) (+ (exp a) (norm v))))",
        &["a", "x"],
    )
    .expect("decodes");
    let bind = |a: f32, x: f32| {
        let mut b = Bindings::<f32>::new();
        b.scalar("a", a).scalar("x", x);
        b
    };
    let fresh = |b: &Bindings<f32>| {
        let mut vm = Vm::<f32>::default();
        let v = vm.eval(&program, b, true).expect("walks");
        vm.backward(v);
        bits_of(&vm, &program, v)
    };
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(&program, &bind(0.5, 0.25), true).expect("walks");
    vm.backward(v);
    let mut crossed = 0;
    for (k, (a, x)) in [(0.7, 0.5), (1.3, 0.75), (2.0, 1.5), (2.5, 1.25), (0.1, 3.0)]
        .into_iter()
        .enumerate()
    {
        let b = bind(a, x);
        match vm.replay(&program, &b) {
            Replay::Held(r) => {
                vm.backward(r);
                assert_eq!(bits_of(&vm, &program, r), fresh(&b), "replay {k}");
            }
            Replay::Partial {
                lanes, failures, ..
            } => {
                // Only x = 1.5 crosses the branch; the tape then follows the new walk.
                assert_eq!(
                    (k, lanes, failures),
                    (2, vec![0], vec![(GuardKind::Compare, 1)])
                );
                crossed += 1;
                let v = vm.eval(&program, &b, true).expect("walks");
                vm.backward(v);
                assert_eq!(bits_of(&vm, &program, v), fresh(&b), "re-walk {k}");
            }
            Replay::Stale(why) => panic!("replay {k}: stale ({why})"),
        }
    }
    assert_eq!(crossed, 1, "x = 1.5 crosses the branch once");
}

/// The one-lane flat program runs small elementwise tensor nodes as element runs and a number
/// broadcast over a tensor as one broadcast run (`replay/runs.rs`). Every op, size and operand
/// order a run covers — and the cases it must leave to the per-element steps (an operand range
/// equal to the other, `-` broadcasts, sizes above 4, constant operands) — replays to a fresh
/// walk's bits, result and gradients.
#[test]
fn one_lane_element_runs_replay_bit_for_bit() {
    // Tensors of 2..=5 elements built from the parameters, so each element has a gradient.
    let tensors = [
        "(vec p q)",
        "(vec q (* p q) p)",
        "(mat (vec p q) (vec (* q q) p))",
        "(vec p q (* p p) q (+ p q))",
    ];
    let weights = [
        "(vec 1.5 -2.25)",
        "(vec 0.5 3.0 -1.75)",
        "(mat (vec 1.25 -0.5) (vec 2.0 0.75))",
        "(vec 1.0 -1.0 2.0 0.5 3.0)",
    ];
    let mut sources = Vec::new();
    for (t, w) in tensors.iter().zip(weights) {
        let sum = if t.starts_with("(mat") {
            "(lambda (m) (trace (matmul m (transpose m))))"
        } else {
            "(lambda (v) (dot v v))"
        };
        for body in [
            "(+ u v)",
            "(- u v)",
            "(* u v)",
            "(+ u c)",
            "(- c u)",
            "(* c u)",
            "(- u c)",
            "(* u u)",
            "(- u u)",
            "(scale p u)",
            "(scale u q)",
            "(+ p u)",
            "(+ u q)",
            "(- p u)",
            "(- u q)",
            "(* (+ u v) (scale (* p q) v))",
            "(+ u 2.5)",
            "(scale 3.0 u)",
        ] {
            sources.push(format!(
                "(let ((u {t}) (v (scale (- q p) {t})) (c {w}) (sum {sum})) (sum {body}))"
            ));
        }
    }
    let bind = |p: f32, q: f32| {
        let mut b = Bindings::<f32>::new();
        b.scalar("p", p).scalar("q", q);
        b
    };
    for src in &sources {
        let program = Program::new(src, &["p", "q"]).expect("decodes");
        for (first, next) in [
            ((0.3, -1.7), (0.7123, -1.3377)),
            ((2.5, 0.125), (-0.41, 1.93)),
        ] {
            let r = replay_matches_walk(
                src,
                &program,
                &bind(first.0, first.1),
                &bind(next.0, next.1),
            );
            assert!(held(&r), "{src}: the program has no branch");
        }
    }
}

/// A result that is no number leaves the reused buffer as it was; a constant result fills
/// every lane.
#[test]
fn numbers_into_refuses_what_is_not_a_number() {
    let mut b = Bindings::<f32>::new();
    b.lanes("a", vec![1.0, 2.0, 3.0]);
    let mut vm = Vm::<f32>::default();
    let list = Program::new("(list a a)", &["a"]).expect("decodes");
    let v = vm.eval(&list, &b, false).expect("walks");
    let mut into = vec![5.0, 6.0];
    assert!(!vm.numbers_into(v, &mut into));
    assert_eq!(into, [5.0, 6.0]);
    let constant = Program::new("(+ 1 1.5)", &["a"]).expect("decodes");
    let v = vm.eval(&constant, &b, false).expect("walks");
    assert!(vm.numbers_into(v, &mut into));
    assert_eq!(into, [2.5; 3]);
}
