//! # ndvm-gpu
//!
//! The GPU system: a recorded tape (the walk's numeric nodes and guards, exported by the engine
//! as a [`Recording`]) is uploaded once as an instruction buffer and run — forward, guards and
//! backward — by **one fixed WGSL interpreter** over a wide population of lanes, one GPU
//! invocation per lane. No shader is generated per candidate: the program stays data, exactly
//! as in the CPU replay. The walk (structure, tags, closures, control) stays on the CPU.
//!
//! ```no_run
//! use ndvm_engine::prelude::*;
//! use ndvm_gpu::Gpu;
//!
//! let program = Program::new("(* a (exp (- 0 (* b t))))", &["a", "b", "t"]).unwrap();
//! let mut inputs = Bindings::<f32>::new();
//! inputs.lanes("a", vec![1.0, 2.0]).scalar("b", 0.5).constant("t", 2.0);
//! let mut vm = Vm::<f32>::default();
//! let v = vm.eval(&program, &inputs, true).unwrap(); // the walk records the tape
//! let gpu = Gpu::new().unwrap();                        // an error without any adapter
//! let rec = vm.recording().unwrap();
//! let mut tape = gpu.upload(&rec).unwrap();
//! let run = tape.run(&gpu, &rec, true).unwrap();
//! assert!(run.failed.is_empty());
//! println!("{:?} d/da {:?}", run.result, run.grads[0]);
//! # let _ = v;
//! ```
//!
//! - [`device`]: finding an adapter, the pipeline, error capture (a lost device is an error).
//! - [`encode`]: the recording as instruction words, lane-set bitmasks and constants.
//! - [`kernel`]: the interpreter's three entries — one invocation per lane, a workgroup
//!   cooperating on each lane's linear algebra, or node-major (each wide node a dispatch over
//!   lanes × elements) — and how long one dispatch may run.
//! - [`run`]: buffers per lane chunk, uploads, the dispatch, downloads, and the stage timings.
//!
//! Arithmetic is f32. Results agree with the CPU f32 replay within the tolerance documented in
//! `docs/gpu.md` (the interpreter runs the engine's own `exp`/`sin`/`cos`/`ln` polynomials; other
//! transcendentals are the device's, and a device may contract `a * b + c` into one rounding).

pub mod device;
pub mod encode;
pub mod kernel;
pub mod run;

pub use device::{Adapter, Gpu, GpuError};
pub use encode::{Encoded, tape_work};
pub use kernel::{Entry, Kernel, Segmenting};
pub use ndvm_engine::export::Recording;
pub use run::{DeviceRun, DeviceTape, Timings};
