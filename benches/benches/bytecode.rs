//! The two clients side by side (the bytecode issue): W1–W4 forward + gradient at B = 1 and
//! B = 256, each as the dialect's tree walk and as the bytecode VM, walked every step and
//! replayed from the recorded tape.
//!
//! - `bytecode/W/walk/B`, `bytecode/W/vm/B`: a fresh walk (tree walk of the `.scm`, bytecode
//!   run of the hand-written `.nbc`) + the backward pass;
//! - `bytecode/W/walk-replay/B`, `bytecode/W/vm-replay/B`: the recorded tape replayed + the
//!   backward pass.
//!
//! Targets: the bytecode VM no slower than the walk at B = 1 on every workload, and its
//! per-lane cost at B = 256 within 1.2× of the walk's.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndvm_bytecode::prelude::*;
use ndvm_bytecode::workloads::WORKLOADS;
use ndvm_engine::prelude::*;
use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn replayed(vm: &mut Vm<f32>, program: &Program, b: &Bindings<f32>) -> f32 {
    if let Replay::Held(v) = vm.replay(program, b) {
        vm.backward(v);
    }
    vm.grad(0).first().copied().unwrap_or(0.0)
}

fn clients(c: &mut Criterion) {
    let reg = Registry::default();
    for w in WORKLOADS.iter().take(4) {
        let mut group = c.benchmark_group(format!("bytecode/{}", w.name));
        for lanes in [1usize, 256] {
            let b = w.bindings::<f32>(lanes, 7);
            let names = b.names();
            let program = Program::new(w.scm, &names).expect("decodes");
            let code = assemble(w.nbc, &names, &reg).expect("assembles");
            group.throughput(Throughput::Elements(lanes as u64));
            let mut vm = Vm::<f32>::default();
            group.bench_function(BenchmarkId::new("walk", lanes), |bench| {
                bench.iter(|| {
                    if let Ok(v) = vm.eval(&program, &b, true) {
                        vm.backward(v);
                    }
                    black_box(vm.grad(0).first().copied())
                })
            });
            let mut runner = Runner::new();
            group.bench_function(BenchmarkId::new("vm", lanes), |bench| {
                bench.iter(|| {
                    if let Ok(v) = runner.run(&mut vm, &code, &b, true) {
                        vm.backward(v);
                    }
                    black_box(vm.grad(0).first().copied())
                })
            });
            vm.eval(&program, &b, true).expect("walks");
            group.bench_function(BenchmarkId::new("walk-replay", lanes), |bench| {
                bench.iter(|| black_box(replayed(&mut vm, &program, &b)))
            });
            runner.run(&mut vm, &code, &b, true).expect("runs");
            group.bench_function(BenchmarkId::new("vm-replay", lanes), |bench| {
                bench.iter(|| black_box(replayed(&mut vm, code.sites(), &b)))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = clients
}
criterion_main!(benches);
