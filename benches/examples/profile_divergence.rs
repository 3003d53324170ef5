//! The divergence benchmark's program in a loop, for profilers: `profile_divergence LAYOUT ITERS`
//! with LAYOUT one of `blocks`, `alternating`, `then`, `else`.
use ndvm_engine::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let layout = args.get(1).map_or("alternating", String::as_str);
    let iters: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let src = "(if (< x 0)
  (loop ((y x) (k 0)) (if (= k 20) y (recur (* a (sin y)) (+ k 1))))
  (loop ((y x) (k 0)) (if (= k 20) y (recur (* b (cos y)) (+ k 1)))))";
    let program = Program::new(src, &["x", "a", "b"]).expect("decodes");
    let n = if layout == "then" || layout == "else" {
        128
    } else {
        256
    };
    let x: Vec<f32> = (0..n)
        .map(|k| match layout {
            "then" => -0.5,
            "else" => 0.5,
            "blocks" if k < 128 => -0.5,
            "blocks" => 0.5,
            _ if k % 2 == 0 => -0.5,
            _ => 0.5,
        })
        .collect();
    let mut b = Bindings::<f32>::new();
    b.lanes("x", x)
        .lanes("a", vec![0.9; n])
        .lanes("b", vec![1.1; n]);
    let mut vm = Vm::<f32>::default();
    let t = std::time::Instant::now();
    for _ in 0..iters {
        if let Ok(v) = vm.eval(&program, &b, true) {
            vm.backward(v);
        }
    }
    println!(
        "{layout}: {:.2} µs per evaluation",
        t.elapsed().as_secs_f64() * 1e6 / iters as f64
    );
}
