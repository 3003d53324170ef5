//! The tape: numeric nodes only (docs/architecture.md, invariant 3), plus the guards the walk relied on.
//!
//! A node is `(op, operand forms, lane set, output slot, input slots)`; constant operands are
//! stored once in [`Tape::consts`]. The walk computes every lane value by running the node it
//! records, so replaying the nodes in order reproduces the walk's numbers exactly
//! ([`crate::replay`]). [`Guard`]s record every decision the walk took on lane numbers — each
//! comparison with its outcome (per lane when the lanes disagreed), each number read as
//! structure with the index it gave — at its position among the nodes, so a replay can check
//! that the control path still holds as soon as the guard's operands are recomputed;
//! [`BranchGuard`]s record each branch outcome over the active lanes (for the walk's counters).
//! A merge of a branch that split the lanes is an [`Op::Select`] node.

use crate::prims::scalar::Op;

/// How a node's operands are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Form {
    /// Unary: `a` is a slot.
    Unary,
    /// Both operands are slots.
    SlotSlot,
    /// `a` is a slot, `b` a constant index.
    SlotConst,
    /// `a` is a constant index, `b` a slot.
    ConstSlot,
    /// Both operands are constant indices (only a merge records this).
    ConstConst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeNode {
    pub op: Op,
    pub form: Form,
    /// The active lane set when the node was recorded ([`crate::lanes::ALL`] or a subset id).
    pub lanes: u32,
    pub out: u32,
    pub a: u32,
    pub b: u32,
    /// For a merge ([`Op::Select`]): the else-lanes' set (`lanes` holds the then-lanes'). For an
    /// elementwise op: the number of consecutive elements it covers (0 and 1 both mean one) —
    /// a tensor op is one node over its elements. For a linear-algebra op: its index in
    /// [`Tape::dims`].
    pub aux: u32,
}

impl TapeNode {
    /// The elements an elementwise node covers (not meaningful for a merge or linear algebra).
    pub fn elements(&self) -> u32 {
        self.aux.max(1)
    }
}

/// A branch decided on per-lane booleans: the lanes it was decided over and how it went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchGuard {
    /// The deciding form (an `if`, or the form that expanded to one).
    pub node: u32,
    /// The active lane set when it was decided.
    pub lanes: u32,
    /// `Some(outcome)` when every active lane agreed; `None` when it split (see `then`).
    pub outcome: Option<bool>,
    /// The then-lanes' set of a split branch.
    pub then: u32,
}

/// A decision the walk took on numbers, to be re-checked when the tape is replayed.
///
/// `pos` is the number of nodes recorded before it: its operands are known once the replay has
/// run that many nodes. `lanes` is the active lane set it was decided over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub pos: u32,
    pub lanes: u32,
    pub check: Check,
}

/// What a [`Guard`] re-checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// `a cmp b` (operands in `form`, as a node's) came out as `outcome` in every guarded lane,
    /// or — when `outcome` is `None` — per lane as [`Tape::outcomes`]`[bits + lane]`.
    Compare {
        cmp: crate::prims::compare::Cmp,
        form: Form,
        a: u32,
        b: u32,
        outcome: Option<bool>,
        bits: u32,
    },
    /// The lane number in `slot` was read as structure (an index, a size) and truncated to
    /// `value`.
    Index { slot: u32, value: u64 },
}

impl Check {
    /// The kind of decision, for the replay counters.
    pub fn kind(&self) -> GuardKind {
        match self {
            Check::Compare { .. } => GuardKind::Compare,
            Check::Index { .. } => GuardKind::Index,
        }
    }
}

/// The kinds of guard, as the replay counters name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GuardKind {
    /// A comparison (a branch test, a loop exit, `equal?` on numbers).
    Compare,
    /// A number read as structure (`ref`, `list-ref`, a size).
    Index,
}

impl GuardKind {
    pub fn name(self) -> &'static str {
        match self {
            GuardKind::Compare => "comparison",
            GuardKind::Index => "index",
        }
    }
}

#[derive(Debug, Default)]
pub struct Tape<R> {
    pub nodes: Vec<TapeNode>,
    pub consts: Vec<R>,
    pub guards: Vec<Guard>,
    /// Per-lane outcomes of the comparisons that split the lanes (see [`Check::Compare`]).
    pub outcomes: Vec<bool>,
    pub branches: Vec<BranchGuard>,
    /// Sizes `[m, k, n]` of the linear-algebra nodes (see [`crate::prims::linalg::LinNode`]).
    pub dims: Vec<[u32; 3]>,
    /// Custom-primitive calls ([`Op::Ext`] nodes point here with `a`).
    pub ext: Vec<ExtCall>,
    /// Operands of the custom-primitive calls, `ExtCall::args` ranges into it.
    pub ext_args: Vec<ExtArg>,
    /// The custom primitives the calls refer to (the walked program's).
    pub primitives: crate::extension::Registry,
    /// Per node: operands that need no adjoint (bit 0: `a`, bit 1: `b`) because they are
    /// constant leaves — data and constant tensors — so the backward pass skips them.
    pub skip: Vec<u8>,
}

/// One custom-primitive call: which primitive and where its operands are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtCall {
    /// Index in the program's [`crate::extension::Registry`].
    pub prim: u32,
    /// Operands: `ext_args[start..start + len]`.
    pub start: u32,
    pub len: u32,
}

/// An operand of a custom-primitive call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtArg {
    /// A lane value that wants an adjoint.
    Slot(u32),
    /// A lane value that is a constant leaf (data): read, never differentiated.
    Data(u32),
    /// A constant, by its index in [`Tape::consts`].
    Const(u32),
}

/// [`Tape::skip`] bits.
pub const SKIP_A: u8 = 1;
pub const SKIP_B: u8 = 2;

impl<R: Copy> Tape<R> {
    pub fn reset(&mut self) {
        self.nodes.clear();
        self.consts.clear();
        self.guards.clear();
        self.outcomes.clear();
        self.branches.clear();
        self.dims.clear();
        self.skip.clear();
        self.ext.clear();
        self.ext_args.clear();
        if !self.primitives.is_empty() {
            self.primitives = crate::extension::Registry::default();
        }
    }

    /// The linear-algebra application a node records.
    pub fn linalg(&self, n: &TapeNode) -> crate::prims::linalg::LinNode {
        let [m, k, d] = self.dims.get(n.aux as usize).copied().unwrap_or([0; 3]);
        crate::prims::linalg::LinNode {
            op: n.op,
            out: n.out,
            a: n.a,
            b: n.b,
            m,
            k,
            n: d,
            skip: 0,
            adj_a: n.a,
            adj_b: n.b,
        }
    }

    pub fn constant(&mut self, x: R) -> u32 {
        self.consts.push(x);
        (self.consts.len() - 1) as u32
    }
}
