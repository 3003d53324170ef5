//! Shared test helpers: the reference data (read by `ndvm-testdata`) as bindings, and running
//! programs.
#![allow(dead_code)]

use ndvm_engine::prelude::*;

#[allow(unused_imports)]
pub use ndvm_testdata::{conformance_programs, num};

/// A JSON-lines file of the reference data (`testdata/`).
pub fn read_jsonl(rel: &str) -> Vec<serde_json::Value> {
    ndvm_testdata::jsonl(rel)
}

/// Runs `src` with per-binding values (scalars broadcast) and returns the evaluation.
pub fn run<R: Real>(src: &str, bindings: &Bindings<R>, grad: bool) -> Result<Evaluation<R>> {
    let program = Program::new(src, &bindings.names())?;
    let mut vm = Vm::<R>::default();
    evaluate(&mut vm, &program, bindings, grad)
}

pub fn numbers<R: Copy + std::fmt::Debug>(e: &Evaluation<R>) -> Vec<R> {
    match &e.result {
        Output::Numbers(v) => v.clone(),
        other => panic!("expected numbers, got {other:?}"),
    }
}

pub fn close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    ndvm_engine::check::close(a, b, atol, rtol)
}

/// The observation matrix of a program, if it has one, in f32.
pub fn conformance_matrix(p: &serde_json::Value) -> Option<(String, usize, usize, Vec<f32>)> {
    ndvm_testdata::conformance_matrix(p).map(|m| {
        (
            m.name,
            m.rows,
            m.cols,
            m.data.iter().map(|&x| x as f32).collect(),
        )
    })
}

/// A conformance program's inputs over `lanes` lanes (each lane varied by a small relative
/// amount that keeps it on its path), every scalar first scaled by `1 + shift`.
pub fn conformance_bindings(p: &serde_json::Value, lanes: usize, shift: f64) -> Bindings<f32> {
    let mut b = Bindings::new();
    let scalars = p["scalars"].as_object().expect("scalars");
    for (i, (name, v)) in scalars.iter().enumerate() {
        let x = v.as_f64().expect("number") * (1.0 + shift);
        if lanes == 1 {
            b.scalar(name, x as f32);
        } else {
            // Vary every lane by a small relative amount that keeps each program on its path.
            let vs = (0..lanes)
                .map(|k| (x * (1.0 + 0.002 * ((k * (i + 3)) % 17) as f64)) as f32)
                .collect();
            b.lanes(name, vs);
        }
    }
    if let Some((name, rows, cols, data)) = conformance_matrix(p) {
        b.matrix(&name, rows, cols, data);
    }
    if lanes > 1 && scalars.is_empty() {
        // Programs without inputs still run as a batch: an unused per-lane input sets B.
        b.lanes("unused lane input", (0..lanes).map(|k| k as f32).collect());
    }
    b
}

/// The divergence programs (`tests/data/divergence.jsonl`, shared with the replay tests):
/// name, source and inputs. Inputs are drawn per lane by [`divergence_value`].
pub fn divergence_programs() -> Vec<(String, String, Vec<String>)> {
    include_str!("../data/divergence.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("divergence program");
            let s = |k: &str| v[k].as_str().expect(k).to_string();
            let inputs = v["inputs"].as_array().expect("inputs");
            let inputs = inputs
                .iter()
                .map(|x| x.as_str().expect("input").to_string());
            (s("name"), s("src"), inputs.collect())
        })
        .collect()
}

/// A deterministic spread of values per input and lane, crossing every branch boundary above.
pub fn divergence_value(name: &str, lane: usize, seed: usize) -> f32 {
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

/// A fuzz-corpus program's parameters over `lanes` lanes, moved by `shift` (relative), each lane
/// a little apart from the others.
pub fn fuzz_bindings(p: &serde_json::Value, shift: f64, lanes: usize) -> Bindings<f32> {
    let params = p["params"].as_object().expect("params");
    let mut b = Bindings::<f32>::new();
    for (i, (name, v)) in params.iter().enumerate() {
        let x = v.as_f64().expect("param") * (1.0 + shift);
        let per_lane = (0..lanes).map(|l| (x * (1.0 + 0.01 * ((l * (i + 2)) % 5) as f64)) as f32);
        b.lanes(name, per_lane.collect());
    }
    b
}
