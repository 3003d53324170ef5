//! Running untrusted text: what the cargo-fuzz target and the mutation tests call.
//!
//! Any input must give a value or a clean error under small limits — never a panic, a hang
//! or unbounded memory. Inputs are three lanes with differing values (so mutated branches also
//! split and merge) and a per-lane 80×2 observation matrix, as the Kalman program expects.

use ndvm_engine::prelude::*;

/// Names bound for untrusted programs: every name the corpora use as an input.
pub const INPUTS: &[&str] = &[
    "a", "b", "c", "d", "x", "z", "r", "q", "p0", "p1", "p2", "p3", "alpha", "beta",
];

/// The bindings untrusted programs run with, in precision `R`.
pub fn bindings<R: Real>() -> Bindings<R> {
    let mut b = Bindings::new();
    for name in INPUTS {
        b.lanes(
            name,
            [0.5, 1.5, -2.0].iter().map(|&x| R::from_f64(x)).collect(),
        );
    }
    let obs = (0..3)
        .map(|l| {
            (0..160)
                .map(|e| R::from_f64(((e * 7 + l) % 11) as f64 * 0.1))
                .collect()
        })
        .collect();
    b.lane_matrices("obs", 80, 2, obs);
    b
}

/// Reads, expands and walks `src` with gradients under [`Limits::small`]. Returns the error
/// kind if the program was refused.
pub fn run<R: Real>(vm: &mut Vm<R>, src: &str, b: &Bindings<R>) -> Option<ErrorKind> {
    let program = match Program::new(src, &b.names()) {
        Ok(p) => p,
        Err(e) => return Some(e.kind),
    };
    evaluate(vm, &program, b, true).err().map(|e| e.kind)
}

/// The cargo-fuzz entry point: any bytes, as (lossy) UTF-8, in f32 and f64.
pub fn run_bytes(data: &[u8]) {
    let src = String::from_utf8_lossy(data);
    let mut vm32 = Vm::<f32>::new(Limits::small());
    run(&mut vm32, &src, &bindings());
    let mut vm64 = Vm::<f64>::new(Limits::small());
    run(&mut vm64, &src, &bindings());
}

/// The bytecode client's cargo-fuzz entry point: any bytes read as binary bytecode, as `.nbc`
/// assembly text and as dialect source compiled to bytecode, each run in f32 and f64 under
/// [`Limits::small`]. Returns how many of the three forms were accepted and ran.
pub fn run_bytecode_bytes(data: &[u8]) -> usize {
    use ndvm_bytecode::{Executable, Form, Runner};
    let b32 = bindings::<f32>();
    let b64 = bindings::<f64>();
    let names = b32.names();
    let registry = ndvm_engine::extension::Registry::default();
    let mut ran = 0;
    for form in [Form::Binary, Form::Assembly, Form::Compiled] {
        let Ok(exe) = Executable::load(form, data, &names, &registry) else {
            continue;
        };
        let mut runner = Runner::new();
        let mut vm32 = Vm::<f32>::new(Limits::small());
        let _ = exe.evaluate(&mut vm32, &mut runner, &b32, true);
        let mut vm64 = Vm::<f64>::new(Limits::small());
        let _ = exe.evaluate(&mut vm64, &mut runner, &b64, true);
        ran += 1;
    }
    ran
}
