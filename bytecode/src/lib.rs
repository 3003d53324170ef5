//! # ndvm-bytecode
//!
//! A second client of the ndvm engine: a differentiable stack-bytecode VM. Its programs are
//! instruction streams, kept as data and run by one fixed loop ([`exec`]); its values are the
//! engine's values, its numeric instructions the engine's primitives, its per-lane control the
//! engine's masks and merges — all through the engine's public client API
//! (`ndvm_engine::walk` "Client walks"). So it inherits, with no per-program staging, what the
//! dialect's tree walk has: many parameter vectors as lanes in one run, exact per-lane
//! reverse-mode gradients, replay of the recorded tape for new inputs, and the resource limits.
//!
//! Programs come from three front doors — `.nbc` assembly text ([`asm`]), a binary or JSON
//! form ([`binary`]), and a compiler from a subset of the dialect ([`compile`]) — all verified
//! before they run ([`verify`]): every error, static or at run time, names the instruction and
//! its line.
//!
//! ```
//! use ndvm_bytecode::prelude::*;
//! use ndvm_engine::prelude::*;
//!
//! // a·e^(−b·t), as the dialect's (* a (exp (- (* b t)))).
//! let src = "LOAD a\nLOAD b\nLOAD t\nMUL\nNEG\nEXP\nMUL\nRET\n";
//! let code = assemble(src, &["a", "b", "t"], &Registry::default()).unwrap();
//! let mut inputs = Bindings::<f64>::new();
//! inputs.lanes("a", vec![1.0, 2.0]).scalar("b", 0.5).constant("t", 2.0);
//! let mut vm = Vm::<f64>::default();
//! let out = ndvm_bytecode::evaluate(&mut vm, &code, &inputs, true).unwrap();
//! let Output::Numbers(y) = &out.result else { panic!() };
//! assert!((y[1] - 2.0 * (-1.0f64).exp()).abs() < 1e-15);
//! // The same program in the dialect, compiled: the same bits.
//! let same = compile("(* a (exp (- (* b t))))", &["a", "b", "t"], &Registry::default()).unwrap();
//! let again = ndvm_bytecode::evaluate(&mut vm, &same, &inputs, true).unwrap();
//! assert_eq!(out, again);
//! ```

pub mod asm;
pub mod binary;
pub mod code;
pub mod compile;
pub mod exec;
pub mod executable;
pub mod instr;
mod liveness;
pub mod verify;
pub mod workloads;

pub use asm::assemble;
pub use code::{Callee, Code, Parts};
pub use compile::compile;
pub use exec::{Runner, evaluate};
pub use executable::{Executable, Form};
pub use instr::{Instr, Number};

/// The types most callers need.
pub mod prelude {
    pub use crate::asm::assemble;
    pub use crate::code::Code;
    pub use crate::compile::compile;
    pub use crate::exec::Runner;
    pub use crate::executable::{Executable, Form};
    pub use crate::instr::Instr;
}
