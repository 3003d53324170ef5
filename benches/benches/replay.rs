//! Walk once, replay many: one calibration step (forward+gradient) by walking every step vs
//! replaying the recorded tape, for the four scalar reference programs and the 80-step Kalman
//! filter at B = 1 and 256. Targets (the replay issue): Kalman-80 at B = 1 ≤ 19 µs (50× the
//! reference C++ runtime's 959 µs); replay ≥ 3× faster than walking on the scalar programs at
//! B = 1.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndvm_benches::{Kalman, SCALAR, forward_grad, replay_grad};
use ndvm_engine::prelude::*;
use std::hint::black_box;

fn compare(
    c: &mut Criterion,
    name: &str,
    program: &Program,
    bind: &dyn Fn(usize) -> Bindings<f32>,
) {
    let mut group = c.benchmark_group(format!("replay/{name}"));
    for lanes in [1usize, 256] {
        let bindings = bind(lanes);
        group.throughput(Throughput::Elements(lanes as u64));
        let mut vm = Vm::<f32>::default();
        group.bench_function(BenchmarkId::new("walk", lanes), |b| {
            b.iter(|| black_box(forward_grad(&mut vm, program, &bindings)))
        });
        let mut vm = Vm::<f32>::default();
        forward_grad(&mut vm, program, &bindings);
        assert!(matches!(vm.replay(program, &bindings), Replay::Held(_)));
        group.bench_function(BenchmarkId::new("replay", lanes), |b| {
            b.iter(|| black_box(replay_grad(&mut vm, program, &bindings)))
        });
    }
    group.finish();
}

fn replay(c: &mut Criterion) {
    for (w, _, _) in SCALAR {
        compare(c, w.name, &w.program(), &|lanes| w.bindings(lanes));
    }
    let k = Kalman::new();
    compare(c, "kalman80", &k.program, &|lanes| k.bindings(lanes));
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(2));
    targets = replay
}
criterion_main!(benches);
