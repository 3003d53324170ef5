//! Shared benchmark workloads: the reference scalar programs of `oracle_refs.json` and the 80-step
//! 2-D Kalman filter (`docs/examples/kalman2d.scm`), with their bindings spread over B lanes.

pub mod feynman;

/// A bench binary's arguments: whether cargo ran it as a benchmark (`--bench`; without it the
/// binary runs under `cargo test --benches`, as a smoke run) and its free words (`-- part n`).
pub fn bench_args() -> (bool, Vec<String>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    let words = args.into_iter().filter(|a| !a.starts_with("--")).collect();
    (full, words)
}

use ndvm_engine::prelude::*;

/// A benchmark program: name, source and `(input, value)` pairs.
#[derive(Debug)]
pub struct Workload {
    pub name: &'static str,
    pub src: &'static str,
    pub inputs: &'static [(&'static str, f64)],
}

/// The four scalar programs the issue names, with the reference C++ runtime's forward+gradient
/// time at B = 1 and per lane at B = 256 (µs), measured by the issue's author on this machine kind.
pub const SCALAR: &[(Workload, f64, f64)] = &[
    (
        Workload {
            name: "affine",
            src: "(+ (* alpha x) beta)",
            inputs: &[("alpha", 2.0), ("x", 1.5), ("beta", 1.0)],
        },
        0.47,
        0.028,
    ),
    (
        Workload {
            name: "michaelis_menten",
            src: "(/ (* Vmax S) (+ Km S))",
            inputs: &[("Vmax", 2.0), ("Km", 0.5), ("S", 1.5)],
        },
        0.37,
        0.027,
    ),
    (
        Workload {
            name: "damped_oscillator",
            src: "(* A (* (exp (- 0 (* b t))) (cos (* omega t))))",
            inputs: &[("A", 1.0), ("b", 0.3), ("omega", 2.0), ("t", 1.5)],
        },
        1.7,
        0.059,
    ),
    (
        Workload {
            name: "logistic_map16",
            src: "(loop ((x x0) (k 0)) (if (= k 16) x (recur (* r (* x (- 1.0 x))) (+ k 1))))",
            inputs: &[("r", 3.2), ("x0", 0.4)],
        },
        8.8,
        0.91,
    ),
];

impl Workload {
    /// Every input per lane, each lane slightly different.
    pub fn bindings(&self, lanes: usize) -> Bindings<f32> {
        let mut b = Bindings::new();
        for &(name, x) in self.inputs {
            if lanes == 1 {
                b.scalar(name, x as f32);
            } else {
                b.lanes(
                    name,
                    (0..lanes)
                        .map(|k| (x * (1.0 + 1e-3 * (k % 7) as f64)) as f32)
                        .collect(),
                );
            }
        }
        b
    }

    pub fn program(&self) -> Program {
        let names: Vec<&str> = self.inputs.iter().map(|(n, _)| *n).collect();
        Program::new(self.src, &names).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// The reference C++ runtime's Kalman-80 forward+gradient time at B = 1 and per lane at B = 256
/// (µs), from the linear-algebra issue, measured by its author on this machine kind.
pub const KALMAN_REFERENCE_US: (f64, f64) = (959.0, 85.0);

/// The 80-step 2-D Kalman negative log-likelihood and its observations.
#[derive(Debug)]
pub struct Kalman {
    pub program: Program,
    file: ndvm_components::BindingsFile,
}

impl Kalman {
    pub fn new() -> Kalman {
        let src = include_str!("../../docs/examples/kalman2d.scm");
        let file = ndvm_components::BindingsFile::from_json(include_str!(
            "../../docs/examples/kalman2d.json"
        ))
        .unwrap_or_else(|e| panic!("kalman2d.json: {e}"));
        let program =
            Program::new(src, &input_names(&file)).unwrap_or_else(|e| panic!("kalman2d.scm: {e}"));
        Kalman { program, file }
    }

    /// The program's input names (its scalars, then its matrices), as `Program::new` takes them.
    pub fn input_names(&self) -> Vec<&str> {
        input_names(&self.file)
    }

    /// The observations shared; q and r per lane (each lane a different parameter vector).
    pub fn bindings(&self, lanes: usize) -> Bindings<f32> {
        let mut b = Bindings::new();
        self.file.apply(&mut b);
        if lanes > 1 {
            for (name, &x) in &self.file.scalars {
                let xs = (0..lanes)
                    .map(|k| (x * (1.0 + 0.01 * (k % 13) as f64)) as f32)
                    .collect();
                b.lanes(name, xs);
            }
        }
        b
    }
}

impl Default for Kalman {
    fn default() -> Self {
        Kalman::new()
    }
}

/// A bindings file's names: its scalars, then its matrices.
fn input_names(file: &ndvm_components::BindingsFile) -> Vec<&str> {
    (file.scalars.keys())
        .chain(file.matrices.keys())
        .map(String::as_str)
        .collect()
}

/// One forward+gradient evaluation with a reused evaluator, as a calibration step does it;
/// returns the first gradient so the work cannot be optimized away.
pub fn forward_grad(vm: &mut Vm<f32>, program: &Program, bindings: &Bindings<f32>) -> Option<f32> {
    if let Ok(v) = vm.eval(program, bindings, true) {
        vm.backward(v);
    }
    vm.grad(0).first().copied()
}

/// One replayed step: the tape of the evaluator's last walk recomputed for `bindings`, then the
/// backward pass (what a calibration step costs while its guards hold). Walks first when the
/// evaluator holds no tape.
pub fn replay_grad(vm: &mut Vm<f32>, program: &Program, bindings: &Bindings<f32>) -> Option<f32> {
    let v = match vm.replay(program, bindings) {
        Replay::Held(v) => v,
        _ => vm.eval(program, bindings, true).ok()?,
    };
    vm.backward(v);
    vm.grad(0).first().copied()
}
