//! Custom primitives: numeric procedures the host adds to the base environment.
//!
//! A scientist's model often needs a function the dialect lacks — a Hill function, a softplus,
//! a special function from their field. A [`Primitive`] supplies its name, its arity, a forward
//! kernel over lanes and its vector-Jacobian product; a [`Registry`] of them is handed to the
//! decoder ([`crate::Program::with_primitives`]), which resolves the names once, like the
//! built-ins. The walk runs the forward kernel over the active lanes and records one tape node;
//! the backward pass calls the VJP over the same lanes. Nothing is compiled: the program stays
//! data and the primitive is an ordinary Rust function.
//!
//! Operands and results are numbers (one per lane); kernels compute in `f64` (an `f32` walk
//! rounds the result to `f32`). [`check_primitive`] verifies a VJP against central finite
//! differences; the built-in scalar primitives pass the same check ([`Builtin`]).
//!
//! ```
//! use ndvm_engine::extension::{Primitive, Registry, check_primitive};
//! use ndvm_engine::prelude::*;
//!
//! /// softplus(x) = ln(1 + e^x), derivative the logistic function.
//! #[derive(Debug)]
//! struct Softplus;
//!
//! impl Primitive for Softplus {
//!     fn name(&self) -> &str { "softplus" }
//!     fn arity(&self) -> usize { 1 }
//!     fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
//!         for (o, &x) in out.iter_mut().zip(args[0]) {
//!             *o = x.max(0.0) + (-x.abs()).exp().ln_1p();
//!         }
//!     }
//!     fn vjp(&self, args: &[&[f64]], _out: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
//!         for ((d, &x), &g) in grads[0].iter_mut().zip(args[0]).zip(g) {
//!             *d = g / (1.0 + (-x).exp());
//!         }
//!     }
//! }
//!
//! check_primitive(&Softplus, &[vec![-3.0], vec![0.0], vec![2.5]]).unwrap();
//! let registry = Registry::new().with(Softplus).unwrap();
//! let program = Program::with_primitives("(softplus (* a x))", &["a", "x"], &registry).unwrap();
//! let mut inputs = Bindings::<f64>::new();
//! inputs.lanes("a", vec![1.0, -2.0]).constant("x", 0.5);
//! let out = evaluate(&mut Vm::default(), &program, &inputs, true).unwrap();
//! let Output::Numbers(y) = &out.result else { panic!() };
//! assert!((y[0] - (1.0f64 + 0.5f64.exp()).ln()).abs() < 1e-15);
//! // d/da softplus(a x) = x · logistic(a x)
//! assert!((out.grads[0].1[1] - 0.5 / (1.0 + 1.0f64.exp())).abs() < 1e-15);
//! ```

mod builtin;
mod check;

pub use builtin::Builtin;
pub use check::{CheckError, check_primitive};

use std::sync::Arc;

/// A numeric primitive supplied by the host.
///
/// `forward` and `vjp` see only the lanes being evaluated (gathered into contiguous slices),
/// one slice per operand, all of the same length. They must be pure functions of their inputs:
/// the same inputs must give the same bits, lane by lane, whatever else is in the batch.
pub trait Primitive: Send + Sync + std::fmt::Debug {
    /// The name programs call it by (it must not be a built-in name).
    fn name(&self) -> &str;
    /// The number of operands (each a number).
    fn arity(&self) -> usize;
    /// `out[l] = f(args[0][l], args[1][l], …)` for every lane `l`.
    fn forward(&self, args: &[&[f64]], out: &mut [f64]);
    /// The vector-Jacobian product: `grads[i][l] = g[l] · ∂f/∂args[i]` at lane `l` (`out` holds
    /// the forward results). `grads` has one zeroed vector per operand, as long as `g`.
    fn vjp(&self, args: &[&[f64]], out: &[f64], g: &[f64], grads: &mut [Vec<f64>]);
}

/// The primitives a program may call beyond the built-ins, by index.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    prims: Vec<Arc<dyn Primitive>>,
}

/// A primitive that cannot be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("`{0}` is a built-in name; a custom primitive needs its own")]
    Builtin(String),
    #[error("`{0}` is registered twice")]
    Duplicate(String),
    #[error("`{0}`: a primitive needs a name that is a plain identifier")]
    BadName(String),
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds `p`; its name must be new and not a built-in.
    pub fn add(&mut self, p: Arc<dyn Primitive>) -> Result<&mut Self, RegistryError> {
        let name = p.name().to_string();
        let plain = !name.is_empty()
            && !name
                .chars()
                .any(|c| c.is_whitespace() || "()[]'\";#".contains(c))
            && name.parse::<f64>().is_err();
        if !plain {
            return Err(RegistryError::BadName(name));
        }
        if crate::prims::Prim::from_name(&name).is_some() {
            return Err(RegistryError::Builtin(name));
        }
        if self.find(&name).is_some() {
            return Err(RegistryError::Duplicate(name));
        }
        self.prims.push(p);
        Ok(self)
    }

    /// `self` with `p` added (for chaining).
    pub fn with(mut self, p: impl Primitive + 'static) -> Result<Self, RegistryError> {
        self.add(Arc::new(p))?;
        Ok(self)
    }

    /// The index of the primitive called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.prims.iter().position(|p| p.name() == name)
    }

    pub fn get(&self, index: usize) -> Option<&Arc<dyn Primitive>> {
        self.prims.get(index)
    }

    pub fn len(&self) -> usize {
        self.prims.len()
    }

    pub fn is_empty(&self) -> bool {
        self.prims.is_empty()
    }

    /// Names and arities, in registration order (what a decoded program depends on).
    pub fn signature(&self) -> Vec<(String, usize)> {
        self.prims
            .iter()
            .map(|p| (p.name().to_string(), p.arity()))
            .collect()
    }
}

/// Primitive values of custom primitives carry `EXT_BASE + index` as their id.
pub const EXT_BASE: u32 = 1 << 15;
