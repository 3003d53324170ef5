//! The 80-step 2-D Kalman negative log-likelihood, forward and forward+gradient, at B = 1, 64,
//! 256, 1024 with per-lane q and r (a reused evaluator and decoded program, as in calibration).
//! The reference C++ runtime takes about 959 µs at B = 1 and 85 µs per lane at B = 256.
//! `replay+grad` is a calibration step once the filter has walked: the recorded tape replayed
//! with the same inputs, then the backward pass.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndvm_benches::Kalman;
use ndvm_engine::prelude::*;
use std::hint::black_box;

fn kalman(c: &mut Criterion) {
    let k = Kalman::new();
    let mut group = c.benchmark_group("kalman80");
    for lanes in [1usize, 64, 256, 1024] {
        let bindings = k.bindings(lanes);
        let mut vm = Vm::<f32>::default();
        group.throughput(Throughput::Elements(lanes as u64));
        group.bench_function(BenchmarkId::new("forward", lanes), |b| {
            b.iter(|| black_box(vm.eval(&k.program, &bindings, false).map(|v| v.slot).ok()))
        });
        group.bench_function(BenchmarkId::new("forward+grad", lanes), |b| {
            b.iter(|| black_box(ndvm_benches::forward_grad(&mut vm, &k.program, &bindings)))
        });
        let mut vm = Vm::<f32>::default();
        group.bench_function(BenchmarkId::new("replay+grad", lanes), |b| {
            b.iter(|| black_box(ndvm_benches::replay_grad(&mut vm, &k.program, &bindings)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = kalman
}
criterion_main!(benches);
