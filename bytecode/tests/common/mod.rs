//! Shared by the bytecode tests: the workloads W1–W4 (and a per-lane-exit loop) as they sit in
//! `docs/examples`, with seeded inputs over any number of lanes.

#![allow(dead_code)]

use ndvm_engine::Binding;
use ndvm_engine::prelude::*;
use std::path::PathBuf;

/// The workloads: file stem, and whether a hand-written `.nbc` mirrors the `.scm` node for node.
pub const WORKLOADS: [&str; 5] = [
    "w1_closed_form",
    "w2_counted_loop",
    "w3_branch",
    "w4_matvec",
    "newton_sqrt",
];

pub fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Seeded inputs for workload `w` over `lanes` lanes.
pub fn inputs<R: Real>(w: &str, lanes: usize, seed: u64) -> Bindings<R> {
    let w = ndvm_bytecode::workloads::WORKLOADS
        .iter()
        .find(|x| x.name == w)
        .expect("a workload");
    w.bindings(lanes, seed)
}

/// One lane of `b` as its own batch.
pub fn lane<R: Real>(b: &Bindings<R>, l: usize) -> Bindings<R> {
    let mut out = Bindings::new();
    for item in &b.items {
        let value = match &item.value {
            Input::Lanes(xs) if item.param => Input::Scalar(xs[l]),
            Input::Lanes(xs) => Input::Lanes(vec![xs[l]]),
            other => other.clone(),
        };
        out.items.push(Binding {
            value,
            ..item.clone()
        });
    }
    out
}

/// Every number of an evaluation as bits (results, then gradients), for exact comparison.
pub fn bits<R: Real>(e: &Evaluation<R>) -> Vec<u64> {
    let mut out: Vec<u64> = match &e.result {
        Output::Numbers(xs) => xs.iter().map(|x| x.to_bits64()).collect(),
        other => panic!("not numbers: {other:?}"),
    };
    for (_, g) in &e.grads {
        out.extend(g.iter().map(|x| x.to_bits64()));
    }
    out
}

/// The bits of lane `l` only.
pub fn lane_bits<R: Real>(e: &Evaluation<R>, l: usize) -> Vec<u64> {
    let mut out = match &e.result {
        Output::Numbers(xs) => vec![xs[l].to_bits64()],
        other => panic!("not numbers: {other:?}"),
    };
    out.extend(e.grads.iter().map(|(_, g)| g[l].to_bits64()));
    out
}

/// Equal bits, except that any NaN equals any NaN (its sign and payload are not canonical).
pub fn bits_nan_equal(a: &[u64], b: &[u64]) -> bool {
    let nan =
        |x: u64| f64::from_bits(x).is_nan() || f32::from_bits(x as u32).is_nan() && x >> 32 == 0;
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| x == y || (nan(x) && nan(y)))
}
