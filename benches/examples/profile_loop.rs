//! Runs one benchmark workload in a loop, for profilers:
//! `profile_loop NAME LANES ITERS [grad|replay|decode]` (NAME is a scalar workload or `kalman80`;
//! `grad` walks and differentiates every iteration, `replay` replays the first walk's tape and
//! differentiates — one calibration step of each kind; `decode` reads, expands and decodes the
//! source only).
use ndvm_benches::{Kalman, SCALAR, replay_grad};
use ndvm_engine::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("affine", String::as_str);
    let lanes: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let iters: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let replay = args.get(4).is_some_and(|s| s == "replay");
    let grad = replay || args.get(4).is_some_and(|s| s == "grad");
    let (program, bindings) = if name == "kalman80" {
        let k = Kalman::new();
        let b = k.bindings(lanes);
        (k.program, b)
    } else {
        let Some((w, _, _)) = SCALAR.iter().find(|(w, _, _)| w.name == name) else {
            return;
        };
        (w.program(), w.bindings(lanes))
    };
    if args.get(4).is_some_and(|s| s == "decode") {
        // Read, expand and decode the program again and again (the first part of a new
        // candidate's time to first gradient).
        let src = program.source.to_string();
        let names: Vec<String> = program.inputs.clone();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = std::time::Instant::now();
        let mut nodes = 0;
        for _ in 0..iters {
            nodes += Program::new(&src, &names).map_or(0, |p| p.nodes.len());
        }
        let dt = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
        println!("{name} decode: {dt:.3} µs per program ({nodes} nodes)");
        return;
    }
    let mut vm = Vm::<f32>::default();
    let t = std::time::Instant::now();
    let mut acc = 0.0f32;
    for _ in 0..iters {
        if replay {
            acc += replay_grad(&mut vm, &program, &bindings).unwrap_or(0.0);
        } else if let Ok(v) = vm.eval(&program, &bindings, grad) {
            if grad {
                vm.backward(v);
            }
            acc += vm.grad(0).first().copied().unwrap_or(0.0);
        }
    }
    let dt = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    eprintln!("{:?}", vm.stats());
    println!("{name} B={lanes} grad={grad} replay={replay}: {dt:.3} µs per evaluation ({acc})");
}
