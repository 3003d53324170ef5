//! Runs the Kalman-80 replayed step (replay + backward, B = 1) in a loop, for profilers:
//! `valgrind --tool=callgrind target/release/examples/kalman_replay 500`.

use ndvm_benches::{Kalman, replay_grad};
use ndvm_engine::prelude::*;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let lanes: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let k = Kalman::new();
    let bindings = k.bindings(lanes);
    let mut vm = Vm::<f32>::default();
    let mut g = 0.0;
    for _ in 0..n {
        g += replay_grad(&mut vm, &k.program, &bindings).unwrap_or(0.0);
    }
    println!("{g}");
}
