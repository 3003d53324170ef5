//! Each elementwise op on the device against the CPU, over a sweep of arguments.

mod support;

use ndvm_engine::prelude::*;
use support::*;

fn sweep(gpu: &ndvm_gpu::Gpu, src: &str, xs: Vec<f32>, ys: Vec<f32>) {
    let mut b = Bindings::<f32>::new();
    b.lanes("x", xs.clone()).lanes("y", ys);
    let program = Program::new(src, &b.names()).expect("decodes");
    let seen = gpu_matches_cpu(gpu, src, &program, (&b, &b), usize::MAX).expect("runs");
    assert_eq!(seen.failed, 0, "{src}");
}

#[test]
fn elementwise_ops_agree_with_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let n = 512;
    let xs: Vec<f32> = (0..n).map(|i| -6.0 + 12.0 * i as f32 / n as f32).collect();
    let pos: Vec<f32> = (0..n).map(|i| 0.01 + 9.0 * i as f32 / n as f32).collect();
    let unit: Vec<f32> = (0..n).map(|i| -0.99 + 1.98 * i as f32 / n as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 0.5 + (i % 7) as f32).collect();
    for op in [
        "exp", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "abs", "square",
    ] {
        sweep(&gpu, &format!("({op} x)"), xs.clone(), ys.clone());
    }
    for op in ["log", "sqrt"] {
        sweep(&gpu, &format!("({op} x)"), pos.clone(), ys.clone());
    }
    for op in ["asin", "acos"] {
        sweep(&gpu, &format!("({op} x)"), unit.clone(), ys.clone());
    }
    for op in ["+", "-", "*", "/", "min", "max", "atan"] {
        sweep(&gpu, &format!("({op} x y)"), xs.clone(), ys.clone());
    }
    sweep(&gpu, "(expt x y)", pos.clone(), ys.clone());
    sweep(&gpu, "(modulo x y)", xs.clone(), ys.clone());
    sweep(&gpu, "(remainder x y)", xs.clone(), ys.clone());
}
