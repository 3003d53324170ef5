//! Runs one calibration step of a benchmark program in a loop, walking or replaying, for
//! profilers: `valgrind --tool=callgrind target/release/examples/replay_loop kalman80 1 replay 500`
//! (program: a scalar workload's name or `kalman80`; lanes; `walk` or `replay`; iterations).

use ndvm_benches::{Kalman, SCALAR, forward_grad, replay_grad};
use ndvm_engine::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let (name, lanes, mode) = (arg(1, "kalman80"), arg(2, "1"), arg(3, "replay"));
    let lanes: usize = lanes.parse().unwrap_or(1);
    let n: usize = arg(4, "1000").parse().unwrap_or(1000);
    let (program, bindings) = if name == "kalman80" {
        let k = Kalman::new();
        let b = k.bindings(lanes);
        (k.program, b)
    } else {
        let Some((w, _, _)) = SCALAR.iter().find(|(w, _, _)| w.name == name) else {
            eprintln!("unknown program {name}");
            std::process::exit(1);
        };
        (w.program(), w.bindings(lanes))
    };
    let mut vm = Vm::<f32>::default();
    let step = if mode == "walk" {
        forward_grad
    } else {
        replay_grad
    };
    let mut g = 0.0;
    for _ in 0..n {
        g += step(&mut vm, &program, &bindings).unwrap_or(0.0);
    }
    println!("{g}");
}
