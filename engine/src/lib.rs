//! # ndvm-engine
//!
//! The ndvm runtime: one fixed evaluator for a small Scheme dialect whose numbers carry exact
//! reverse-mode gradients, run over many parameter vectors (*lanes*) in one structural walk.
//!
//! The pipeline: [`syntax::reader`] reads text into spanned data, [`syntax::expand`] rewrites the
//! derived forms into core forms, [`syntax::decode`] resolves names and flattens everything into a
//! post-order [`Program`]. [`Vm`] walks a program over the lanes of a [`Bindings`], running numeric
//! kernels over lanes and recording a [`tape::Tape`] of numeric nodes; [`backward`] replays it in
//! reverse for per-lane gradients, keeping intermediates' adjoints in a small pool at wide
//! batches ([`backward::Placement`]). Every failure is a located [`Error`]; every walk is bounded by
//! [`Limits`].
//!
//! ```
//! use ndvm_engine::prelude::*;
//!
//! let program = Program::new("(* a (exp (- 0 (* b t))))", &["a", "b", "t"]).unwrap();
//! let mut inputs = Bindings::<f32>::new();
//! inputs.lanes("a", vec![1.0, 2.0]).scalar("b", 0.5).constant("t", 2.0);
//! let mut vm = Vm::<f32>::default();
//! let out = evaluate(&mut vm, &program, &inputs, true).unwrap();
//! assert_eq!(out.lanes, 2);
//! let Output::Numbers(y) = &out.result else { panic!() };
//! assert!((y[1] - 2.0 * (-1.0f32).exp()).abs() < 1e-6);
//! // d/da of a·e^(−bt) is e^(−bt) in every lane.
//! assert!((out.grads[0].1[0] - (-1.0f32).exp()).abs() < 1e-6);
//! ```

pub mod backward;
pub mod bindings;
pub mod check;
pub mod error;
pub mod eval;
pub mod export;
pub mod extension;
pub mod heap;
pub mod lanes;
pub mod limits;
pub mod payload;
pub mod prims;
pub mod program;
pub mod real;
pub mod replay;
pub mod syntax;
pub mod tape;
pub mod value;
pub mod walk;

pub use backward::Pooling;
pub use bindings::{Binding, Bindings, Input};
pub use error::{Error, ErrorKind, Result, Span};
pub use eval::{Evaluation, Output, evaluate};
pub use limits::{Limits, Stop};
pub use program::{Program, ProgramCache};
pub use real::Real;
pub use replay::Replay;
pub use walk::{Decision, Vm, WalkStats};

/// The types most callers need.
pub mod prelude {
    pub use crate::bindings::{Bindings, Input};
    pub use crate::error::{Error, ErrorKind, Result};
    pub use crate::eval::{Evaluation, Output, evaluate};
    pub use crate::extension::{Primitive, Registry, check_primitive};
    pub use crate::limits::{Limits, Stop};
    pub use crate::program::{Program, ProgramCache};
    pub use crate::real::Real;
    pub use crate::replay::Replay;
    pub use crate::walk::{Decision, Vm};
}
