//! Client walks: the engine's evaluator driven by another front end.
//!
//! The engine's contract is not tied to the Scheme dialect. A front end that keeps its programs
//! as data walked by a fixed evaluator (a bytecode VM, a host-language tracer), lowers its values
//! to the engine's [`Value`]s and its numeric work to the calls below, inherits everything the
//! tree walk has: lane kernels over the active lanes, a [`crate::tape::Tape`] of numeric nodes
//! with guards, per-lane divergence with masked merges, [`Vm::backward`], [`Vm::replay`] and the
//! [`crate::Limits`]. Nothing here is compiled per program.
//!
//! A client describes *where* things happen with a **site program** ([`Program::client`]): a
//! program with no forms whose node `i` is the client's instruction `i`, spanned in the client's
//! own source text. Every call takes `(sites, at)`, so an error raised inside a kernel, a limit or
//! a merge is located at the client's instruction, in its source, with the active lanes.
//!
//! A client walk is:
//!
//! 1. [`Vm::begin`] — reset the evaluator and bind the inputs (exactly as [`Vm::eval`] does);
//!    [`Vm::input`] gives each input's value.
//! 2. [`Vm::call_prim`] / [`Vm::call_custom`] — apply a base or custom primitive to values (constants
//!    fold; lane values run kernels over the active lanes and record tape nodes);
//!    [`Vm::tick`] counts a step against the step limit.
//! 3. Control on numbers: [`Vm::decide`] classifies a test over the active lanes. `All(b)` is an
//!    ordinary branch; take [`Vm::watermark`] first and pass values that leave the branch through
//!    [`Vm::settle`] (the walk copies a number older than the decision, which keeps a batch equal
//!    to its lanes run alone). `Split` gives two lane sets: run one side with
//!    [`Vm::set_active`]`(then)`, the other with `(else)`, restore the previous set, combine
//!    every value that leaves with [`Vm::merge`], then call [`Vm::rejoin`].
//!    [`Vm::uniform`] and [`Vm::index`] read a test or a number as structure (an error, or an
//!    index guard, when the lanes disagree).
//! 4. [`Vm::finish`] with the result makes the tape replayable.

use super::Vm;
use super::diverge::{Merge, Split};
use crate::bindings::Bindings;
use crate::error::{Error, ErrorKind, Result, Span};
use crate::extension::{EXT_BASE, Registry};
use crate::lanes::ALL;
use crate::prims::Prim;
use crate::prims::scalar::Op;
use crate::program::{Node, NodeId, Program};
use crate::real::Real;
use crate::value::Value;

/// How a test came out over the active lanes (see [`Vm::decide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every active lane agreed.
    All(bool),
    /// The lanes disagreed: the lane sets where the test was true and false.
    Split { then_lanes: u32, else_lanes: u32 },
}

impl Program {
    /// A site program for a client front end: no forms, only locations. Node `i` stands for the
    /// client's instruction `i` and is located by `spans[i]` in `source`; `inputs` are the input
    /// names in binding order and `primitives` the custom primitives [`Vm::call_custom`] may
    /// call. [`Vm::replay`] and [`Vm::input_grad`] take it like a decoded program.
    pub fn client(
        source: &str,
        inputs: &[&str],
        spans: Vec<Span>,
        primitives: Registry,
    ) -> Program {
        let mut spans = spans;
        if spans.is_empty() {
            spans.push(Span::default());
        }
        Program {
            source: source.into(),
            nodes: vec![Node::Bool(false); spans.len()],
            root: (spans.len() - 1) as NodeId,
            spans,
            kids: Vec::new(),
            lambdas: Vec::new(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            top_frame: 0,
            data: Default::default(),
            primitives,
        }
    }
}

impl<R: Real> Vm<R> {
    /// Starts a client walk over the lanes of `bindings`: resets the evaluator and binds every
    /// input of `sites` (a missing or malformed input is the same error [`Vm::eval`] gives).
    pub fn begin(&mut self, sites: &Program, bindings: &Bindings<R>, record: bool) -> Result<()> {
        let lanes = bindings.lane_count()?;
        self.reset(lanes, record);
        self.bind(sites, bindings)
    }

    /// The value bound to input `index` (in [`Program::inputs`] order) by [`Vm::begin`].
    pub fn input(&self, index: usize) -> Option<Value> {
        self.inputs.get(index).copied()
    }

    /// Counts one evaluation step at site `at` against the step limit.
    pub fn tick(&mut self, sites: &Program, at: NodeId) -> Result<()> {
        self.step(sites, at)
    }

    /// Applies base primitive `p` to `args` at site `at`, exactly as a call in the dialect
    /// would: `(+ x y)` folds the same way, records the same nodes and raises the same errors.
    /// The prelude procedures that call back into a program (`apply`, `map`, `filter`, the
    /// folds) need procedure values and are refused.
    pub fn call_prim(
        &mut self,
        sites: &Program,
        at: NodeId,
        p: Prim,
        args: &[Value],
    ) -> Result<Value> {
        if !p.accepts(args.len()) {
            let msg = format!("`{}` {}, got {}", p.name(), p.arity_text(), args.len());
            return Err(self.error(sites, at, ErrorKind::Arity, msg));
        }
        if matches!(
            p,
            Prim::Apply
                | Prim::Map
                | Prim::Filter
                | Prim::FoldLeft
                | Prim::FoldRight
                | Prim::Reduce
        ) {
            let msg = format!("`{}` takes a procedure and cannot be called here", p.name());
            return Err(self.error(sites, at, ErrorKind::Type, msg));
        }
        if args.len() == 2 && matches!(p, Prim::Add | Prim::Sub | Prim::Mul | Prim::Div) {
            let numeric = |v: &Value| v.is_number() || v.is_tensor();
            if args.iter().all(numeric) {
                // What the walk's two-operand fast path records.
                let op = match p {
                    Prim::Add => Op::Add0,
                    Prim::Sub => Op::Sub,
                    Prim::Mul => Op::Mul,
                    _ => Op::Div,
                };
                return self.binary(sites, at, op, args[0], args[1]);
            }
        }
        self.prim_value(sites, at, p, args)
    }

    /// Applies custom primitive `index` of `sites.primitives` to `args` at site `at`.
    pub fn call_custom(
        &mut self,
        sites: &Program,
        at: NodeId,
        index: usize,
        args: &[Value],
    ) -> Result<Value> {
        let base = self.vals.len();
        self.vals.extend_from_slice(args);
        let out = self.apply_ext(sites, at, EXT_BASE + index as u32, base, base);
        self.vals.truncate(base);
        match out? {
            super::Next::Return(v) => Ok(v),
            super::Next::Eval(_) => Ok(Value::NIL),
        }
    }

    /// Classifies `test` over the active lanes at site `at` (see the module docs). A split
    /// records its branch, registers both lane sets and counts one level of nesting against the
    /// recursion-depth limit, released by [`Vm::rejoin`].
    pub fn decide(&mut self, sites: &Program, at: NodeId, test: Value) -> Result<Decision> {
        match self.split(at, test) {
            Split::All(b) => Ok(Decision::All(b)),
            Split::Mixed { then_set, else_set } => {
                self.nest(sites, at)?;
                Ok(Decision::Split {
                    then_lanes: then_set,
                    else_lanes: else_set,
                })
            }
        }
    }

    /// Ends the nesting level a split [`Decision`] opened.
    pub fn rejoin(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The active lane set ([`crate::lanes::ALL`] at the start of a walk).
    pub fn active_set(&self) -> u32 {
        self.active
    }

    /// Makes lane set `set` the active one: kernels, nodes and guards touch only its lanes.
    pub fn set_active(&mut self, set: u32) {
        self.active = if (set as usize) <= self.lane_sets.count() {
            set
        } else {
            ALL
        };
    }

    /// The lanes of set `set`, ascending (every lane for [`crate::lanes::ALL`]).
    pub fn lanes_of(&self, set: u32) -> Vec<u32> {
        match self.lane_sets.get(set) {
            Some(l) => l.to_vec(),
            None => (0..self.payload.lanes as u32).collect(),
        }
    }

    /// A mark of the values made so far: a number or tensor [`Vm::settle`]d against it was made
    /// before it.
    pub fn watermark(&self) -> u32 {
        self.payload.slots() as u32
    }

    /// A value leaving a branch decided the same way in every lane: a number or tensor made
    /// before `watermark` is copied (one node), as the walk does and as a split's merge would
    /// route it; anything else is returned as it is.
    pub fn settle(
        &mut self,
        sites: &Program,
        at: NodeId,
        v: Value,
        watermark: u32,
    ) -> Result<Value> {
        if !self.differentiable(v) || v.slot >= watermark {
            return Ok(v);
        }
        self.copy_value(sites, at, v)
    }

    /// The per-lane merge of a split decided at `at`: `then_value` in the then-lanes,
    /// `else_value` in the else-lanes. Two numbers or tensors of one shape become selection
    /// nodes, two booleans a per-lane boolean; the same structure passes through; anything else
    /// is a divergence error located at `at`.
    pub fn merge(
        &mut self,
        sites: &Program,
        at: NodeId,
        (then_lanes, then_value): (u32, Value),
        (else_lanes, else_value): (u32, Value),
    ) -> Result<Value> {
        let st = Merge {
            node: at,
            env: 0,
            height: 0,
            active: self.active,
            then_set: then_lanes,
            else_set: else_lanes,
            then_value: Some(then_value),
        };
        self.merge_values(sites, &st, then_value, else_value)
    }

    /// A test that must come out the same in every active lane (a jump, not a per-lane
    /// branch): its truth, or a divergence error at `at` naming the lanes.
    pub fn uniform(&self, sites: &Program, at: NodeId, test: Value) -> Result<bool> {
        self.truth(sites, at, test)
    }

    /// A number read as structure at `at` (a count, an index): the same in every active lane,
    /// finite and ≥ 0, truncated; a lane value records an index guard for the replay.
    pub fn index(&mut self, sites: &Program, at: NodeId, what: &str, v: Value) -> Result<usize> {
        self.structural_index(sites, at, what, v)
    }

    /// An error of `kind` located at site `at`, carrying the active lanes.
    pub fn fault(
        &self,
        sites: &Program,
        at: NodeId,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> Error {
        self.error(sites, at, kind, message)
    }

    /// "a number", "a [3] vector", … for a client's messages.
    pub fn kind_of(&self, v: Value) -> String {
        self.describe(v)
    }

    /// Ends a client walk with `result`: when it recorded, [`Vm::backward`] may follow and
    /// [`Vm::replay`] recomputes it for new inputs.
    pub fn finish(&mut self, result: Value) {
        if self.record {
            self.replayable = Some(result);
        }
    }
}
