//! Forward and forward+gradient of the four reference scalar programs at B = 1, 64, 256, 1024,
//! with a reused evaluator and decoded program (what a calibration loop does every step).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndvm_benches::SCALAR;
use ndvm_engine::prelude::*;
use std::hint::black_box;

fn scalar(c: &mut Criterion) {
    for (w, _, _) in SCALAR {
        let program = w.program();
        let mut group = c.benchmark_group(w.name);
        for lanes in [1usize, 64, 256, 1024] {
            let bindings = w.bindings(lanes);
            let mut vm = Vm::<f32>::default();
            group.throughput(Throughput::Elements(lanes as u64));
            group.bench_function(BenchmarkId::new("forward", lanes), |b| {
                b.iter(|| black_box(vm.eval(&program, &bindings, false).map(|v| v.slot).ok()))
            });
            group.bench_function(BenchmarkId::new("forward+grad", lanes), |b| {
                b.iter(|| black_box(ndvm_benches::forward_grad(&mut vm, &program, &bindings)))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = scalar
}
criterion_main!(benches);
