//! Pooled adjoints (`backward/place.rs`) change where the backward pass keeps intermediate
//! adjoints, never what it computes: results and gradients are the same bits with pooling off,
//! on for every batch, and automatic — over the conformance programs, per-lane branching and
//! loops, the Kalman filter at B = 256, and after a replay.

mod common;
use common::*;
use ndvm_engine::Pooling;
use ndvm_engine::prelude::*;

/// Every number of an evaluation (results, then gradients), as bits.
fn bits(e: &Evaluation<f32>) -> Vec<u32> {
    let mut out: Vec<u32> = match &e.result {
        Output::Numbers(v) => v.iter().map(|x| x.to_bits()).collect(),
        Output::Vector(v) | Output::Matrix { data: v, .. } => {
            v.iter().flatten().map(|x| x.to_bits()).collect()
        }
        Output::Data(_) => Vec::new(),
    };
    for (_, g) in &e.grads {
        out.extend(g.iter().map(|x| x.to_bits()));
    }
    out
}

fn run_with(src: &str, b: &Bindings<f32>, pooling: Pooling) -> Vec<u32> {
    let program = Program::new(src, &b.names()).unwrap_or_else(|e| panic!("{}", e.render(src)));
    let mut vm = Vm::default();
    vm.set_pooling(pooling);
    let e = evaluate(&mut vm, &program, b, true).unwrap_or_else(|e| panic!("{}", e.render(src)));
    assert!(!e.grads.is_empty(), "{src}: no gradients");
    bits(&e)
}

#[test]
fn conformance_programs_give_the_same_bits_pooled_or_not() {
    let mut checked = 0;
    for p in conformance_programs() {
        if !p["error"].is_null() {
            continue;
        }
        let src = p["src"].as_str().expect("src");
        let b = conformance_bindings(&p, 8, 0.0);
        let off = run_with(src, &b, Pooling::Off);
        assert_eq!(off, run_with(src, &b, Pooling::Always), "{}", p["name"]);
        checked += 1;
    }
    assert!(checked >= 33, "{checked} programs");
}

/// The 80-step Kalman filter of the conformance corpus.
fn kalman() -> serde_json::Value {
    conformance_programs()
        .into_iter()
        .find(|p| p["name"] == "kalman2d_T80")
        .expect("kalman2d_T80")
}

#[test]
fn kalman_at_b256_gives_the_same_bits_pooled_or_not() {
    let p = kalman();
    let src = p["src"].as_str().expect("src");
    let b = conformance_bindings(&p, 256, 0.0);
    let off = run_with(src, &b, Pooling::Off);
    assert_eq!(off.len(), 256 * 3);
    assert_eq!(off, run_with(src, &b, Pooling::Auto));
}

/// Lanes split on their own values (selects, lane subsets), loop, and meet again.
#[test]
fn split_lanes_give_the_same_bits_pooled_or_not() {
    let src = "(loop ((i 0) (x a) (acc 0.0))
                 (if (= i 12)
                     (+ acc (* x b))
                     (recur (+ i 1)
                            (if (> x 1.0) (* x (- 1.0 (* 0.3 b))) (+ (* x x) b))
                            (+ acc (if (< x 0.8) (sin x) (/ x (+ 1.0 b)))))))";
    let mut b = Bindings::<f32>::new();
    b.lanes("a", (0..16).map(|l| 0.2 + 0.11 * l as f32).collect())
        .lanes("b", (0..16).map(|l| 0.3 + 0.02 * l as f32).collect());
    assert_eq!(
        run_with(src, &b, Pooling::Off),
        run_with(src, &b, Pooling::Always)
    );
}

/// A replay's backward pass reuses the walk's placement: same bits as a fresh unpooled walk.
#[test]
fn replayed_gradients_give_the_same_bits_pooled_or_not() {
    let p = kalman();
    let src = p["src"].as_str().expect("src");
    let (first, second) = (
        conformance_bindings(&p, 32, 0.0),
        conformance_bindings(&p, 32, 0.05),
    );
    let program = Program::new(src, &first.names()).expect("program");
    let mut vm = Vm::default();
    vm.set_pooling(Pooling::Always);
    let v = vm.eval(&program, &first, true).expect("walk");
    vm.backward(v);
    let Replay::Held(v) = vm.replay(&program, &second) else {
        panic!("the replay should hold")
    };
    vm.backward(v);
    let replayed: Vec<u32> = (0..program.inputs.len())
        .flat_map(|i| vm.grad(i).iter().map(|x| x.to_bits()).collect::<Vec<_>>())
        .collect();
    let mut fresh = Vm::default();
    fresh.set_pooling(Pooling::Off);
    let v = fresh.eval(&program, &second, true).expect("walk");
    fresh.backward(v);
    let walked: Vec<u32> = (0..program.inputs.len())
        .flat_map(|i| {
            fresh
                .grad(i)
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(replayed.len(), 2 * 32);
    assert_eq!(replayed, walked);
}
