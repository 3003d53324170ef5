//! A divergent program at B = 256 with half the lanes on each side, against its two uniform
//! halves (B = 128 each, every lane on one side). Target: the divergent batch costs at most
//! about the sum of the halves. Two layouts: the halves in blocks, and alternating lanes.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ndvm_engine::prelude::*;
use std::hint::black_box;

const SRC: &str = "(if (< x 0)
  (loop ((y x) (k 0)) (if (= k 20) y (recur (* a (sin y)) (+ k 1))))
  (loop ((y x) (k 0)) (if (= k 20) y (recur (* b (cos y)) (+ k 1)))))";

fn bindings(xs: Vec<f32>) -> Bindings<f32> {
    let n = xs.len();
    let mut b = Bindings::new();
    b.lanes("x", xs)
        .lanes("a", (0..n).map(|k| 0.9 + 0.001 * k as f32).collect());
    b.lanes("b", (0..n).map(|k| 1.1 - 0.001 * k as f32).collect());
    b
}

fn divergence(c: &mut Criterion) {
    let program = Program::new(SRC, &["x", "a", "b"]).expect("decodes");
    let neg = |k: usize| -0.5 - 0.001 * k as f32;
    let pos = |k: usize| 0.5 + 0.001 * k as f32;
    let cases = [
        ("uniform_then_128", bindings((0..128).map(neg).collect())),
        ("uniform_else_128", bindings((0..128).map(pos).collect())),
        (
            "split_blocks_256",
            bindings(
                (0..256)
                    .map(|k| if k < 128 { neg(k) } else { pos(k) })
                    .collect(),
            ),
        ),
        (
            "split_alternating_256",
            bindings(
                (0..256)
                    .map(|k| if k % 2 == 0 { neg(k) } else { pos(k) })
                    .collect(),
            ),
        ),
    ];
    let mut group = c.benchmark_group("divergence");
    for (name, b) in &cases {
        let mut vm = Vm::<f32>::default();
        group.bench_function(BenchmarkId::new("forward+grad", name), |bench| {
            bench.iter(|| black_box(ndvm_benches::forward_grad(&mut vm, &program, b)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = divergence
}
criterion_main!(benches);
