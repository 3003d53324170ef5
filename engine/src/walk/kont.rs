//! Continuations: what the walk does with a value once a subform has produced it.
//!
//! The walk never recurses on the host stack. Evaluating a non-simple subform pushes a [`Kont`]
//! that remembers the parent form, its environment and how far it got; a non-tail call pushes a
//! [`Kont::Return`]. Tail calls push nothing, which is what makes them run in constant space.

use crate::program::NodeId;
use crate::value::Value;

#[derive(Clone, Copy, Debug)]
pub enum Kont {
    /// Top-level form `i` of the program node is being evaluated.
    Top { node: NodeId, i: u32 },
    /// The test of an `if`.
    If { node: NodeId, env: u32 },
    /// Expression `i` of a `begin` (not the last: that one is a tail position).
    Seq { node: NodeId, env: u32, i: u32 },
    /// Initializer `i` of a `let`/`letrec*`.
    Bind { node: NodeId, env: u32, i: u32 },
    /// Operand `i` of a call (the callee is operand 0 of a computed call).
    Args { node: NodeId, env: u32, i: u32 },
    /// The caller's environment and frame height, restored when a non-tail call returns.
    Return { env: u32, height: u32 },
    /// A prelude procedure (`map`, `filter`, the folds) waiting for a call it made.
    Native { idx: u32 },
    /// A split branch waiting for one of its sides.
    Merge { idx: u32 },
    /// An `if` decided the same way in every active lane, waiting for its value: a number or
    /// tensor older than `watermark` (the first payload slot allocated after the decision) is
    /// copied, as a split branch's merge would (see `merge.rs`). Tail `if`s share one.
    IfExit { node: NodeId, watermark: u32 },
}

/// The state of a prelude procedure that calls back into the program.
#[derive(Clone, Debug)]
pub struct Native {
    pub kind: NativeKind,
    /// The procedure it calls.
    pub f: Value,
    /// The program's call to the prelude procedure (errors report its span).
    pub node: NodeId,
}

#[derive(Clone, Debug)]
pub enum NativeKind {
    /// Remaining list cursors and results so far.
    Map {
        lists: Vec<Value>,
        acc: Vec<Value>,
    },
    /// Remaining list, the element being tested, kept elements.
    Filter {
        rest: Value,
        x: Value,
        acc: Vec<Value>,
    },
    FoldLeft {
        rest: Value,
    },
    /// Elements, and how many remain to fold (from the right).
    FoldRight {
        items: Vec<Value>,
        left: usize,
    },
    Reduce {
        rest: Value,
    },
}
