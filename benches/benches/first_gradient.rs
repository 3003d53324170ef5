//! Time to first gradient: what a new candidate costs before its first calibration step can be
//! taken — read and expand the source, decode it, walk it once recording the tape, run the
//! backward pass — in process, for the 80-step Kalman filter and the logistic map (B = 1).
//!
//! `new-evaluator` starts from nothing (a fresh `Vm`, its arenas allocated by this walk: a
//! one-off script); `reused-evaluator` keeps one `Vm` across candidates (what `ndvm fit` and
//! `ndvm search` do: a lane group's machine is reused). `decode` is the first part alone. Target
//! (the speed issue): Kalman-80 ≤ 60 µs; hand-written JAX's first `jit(value_and_grad)` call
//! is ~0.4 s (`benches/peers/jax_kalman.py`).

use criterion::{Criterion, criterion_group, criterion_main};
use ndvm_benches::{Kalman, SCALAR, forward_grad};
use ndvm_engine::prelude::*;
use std::hint::black_box;

fn first_gradient(c: &mut Criterion) {
    let kalman = Kalman::new();
    let logistic = SCALAR
        .iter()
        .map(|(w, _, _)| w)
        .find(|w| w.name == "logistic_map16")
        .expect("the logistic map workload");
    let cases: [(&str, &str, Vec<&str>, Bindings<f32>); 2] = [
        (
            "kalman80",
            include_str!("../../docs/examples/kalman2d.scm"),
            kalman.input_names(),
            kalman.bindings(1),
        ),
        (
            "logistic_map16",
            logistic.src,
            logistic.inputs.iter().map(|(n, _)| *n).collect(),
            logistic.bindings(1),
        ),
    ];
    let mut group = c.benchmark_group("first_gradient");
    for (name, src, names, bindings) in &cases {
        let decode = || Program::new(src, names).expect("the workload decodes");
        group.bench_function(format!("{name}/decode"), |b| b.iter(|| black_box(decode())));
        group.bench_function(format!("{name}/new-evaluator"), |b| {
            b.iter(|| {
                let program = decode();
                let mut vm = Vm::<f32>::default();
                black_box(forward_grad(&mut vm, &program, bindings))
            })
        });
        let mut vm = Vm::<f32>::default();
        group.bench_function(format!("{name}/reused-evaluator"), |b| {
            b.iter(|| {
                let program = decode();
                black_box(forward_grad(&mut vm, &program, bindings))
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(2));
    targets = first_gradient
}
criterion_main!(benches);
