//! The walk: one fixed evaluator for every program (docs/architecture.md "From text to numbers").
//!
//! [`Vm`] interprets a decoded [`Program`] over all lanes at once. It is a continuation machine:
//! evaluating a form either produces a value at once or pushes a [`kont::Kont`] and descends, so
//! nothing recurses on the host stack — tail calls trampoline (a 10^7-iteration loop runs in
//! constant space) and deep non-tail recursion is bounded by the recursion-depth limit, not by the
//! host stack. Numeric primitives run their lane kernels inline and record tape nodes; structure
//! (pairs, closures, frames, control) records nothing.

mod call;
mod client;
mod diverge;
mod equality;
mod extension;
pub mod kont;
mod native;
mod numeric;
mod tensor;

pub use client::Decision;
pub(crate) use extension::{Column, forward_lanes};
pub(crate) use tensor::{Operand, run_elementwise};

use crate::bindings::{Bindings, Input};
use crate::error::{Error, ErrorKind, Result};
use crate::heap::{Heap, TOP_FRAME};
use crate::lanes::{ALL, LaneSets};
use crate::limits::{Limits, STOPPED};
use crate::payload::Payload;
use crate::program::{Node, NodeId, Program};
use crate::real::Real;
use crate::tape::Tape;
use crate::value::{Value, tag};
use kont::{Kont, Native};

/// What the machine does next.
enum Next {
    Eval(NodeId),
    Return(Value),
}

/// Counters of the last walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub steps: u64,
    pub tape_nodes: u64,
    pub payload_slots: u64,
    pub heap_cells: u64,
    /// The most environment frames alive at once.
    pub peak_frames: u64,
    /// The deepest continuation stack.
    pub peak_konts: u64,
    pub lanes: u64,
    /// Branches whose test split the active lanes (each ran both sides and merged).
    pub splits: u64,
}

/// A reusable evaluator: arenas, payload and tape are kept (cleared) between evaluations.
#[derive(Debug)]
pub struct Vm<R: Real> {
    pub limits: Limits,
    /// An outside request to stop (a signal, a time budget), looked at every
    /// [`crate::limits::STOP_EVERY`] steps.
    pub stop: crate::limits::Stop,
    pub(crate) heap: Heap,
    pub(crate) payload: Payload<R>,
    pub(crate) tape: Tape<R>,
    pub(crate) lane_sets: LaneSets,
    /// Matrix shapes `(rows, cols)` by index.
    pub(crate) shapes: Vec<(u32, u32)>,
    konts: Vec<Kont>,
    vals: Vec<Value>,
    natives: Vec<Native>,
    merges: Vec<diverge::Merge>,
    /// The bound value of each program input.
    pub(crate) inputs: Vec<Value>,
    env: u32,
    /// Frames below this height belong to callers; a tail call may pop the ones above.
    height: u32,
    steps: u64,
    depth: u64,
    peak_konts: usize,
    /// Whether numeric nodes are recorded (gradients wanted).
    pub(crate) record: bool,
    /// The active lane set.
    pub(crate) active: u32,
    /// Per-lane comparison buffers (a chain's conjunction, one pair's outcomes).
    scratch: (Vec<bool>, Vec<bool>),
    /// Buffers for kernels over scattered lane subsets.
    pub(crate) gather: crate::prims::kernels::Gather<R>,
    /// Scratch for the linear-algebra kernels.
    pub(crate) work: crate::prims::linalg::Work<R>,
    /// The result of the last walk when it recorded a tape and finished: what
    /// [`Vm::replay`] recomputes.
    pub(crate) replayable: Option<Value>,
    /// The recorded tape unrolled for one lane, built by the first replay at B = 1.
    pub(crate) flat: Option<crate::replay::flat::Flat<R>>,
    /// Where the backward pass keeps adjoints for the recorded tape, planned by its first pass.
    pub(crate) placement: Option<crate::backward::Placement>,
    /// When the backward pass pools adjoints.
    pub(crate) pooling: crate::backward::Pooling,
}

impl<R: Real> Default for Vm<R> {
    fn default() -> Self {
        Vm::new(Limits::default())
    }
}

impl<R: Real> Vm<R> {
    pub fn new(limits: Limits) -> Self {
        Vm {
            limits,
            stop: Default::default(),
            heap: Heap::default(),
            payload: Payload::default(),
            tape: Tape::default(),
            lane_sets: LaneSets::default(),
            shapes: Vec::new(),
            konts: Vec::new(),
            vals: Vec::new(),
            natives: Vec::new(),
            merges: Vec::new(),
            inputs: Vec::new(),
            env: TOP_FRAME,
            height: 1,
            steps: 0,
            depth: 0,
            peak_konts: 0,
            record: false,
            active: ALL,
            scratch: (Vec::new(), Vec::new()),
            gather: Default::default(),
            work: Default::default(),
            replayable: None,
            flat: None,
            placement: None,
            pooling: Default::default(),
        }
    }

    /// The batch width of the last evaluation.
    pub fn lanes(&self) -> usize {
        self.payload.lanes
    }

    /// Evaluates `program` over the lanes of `bindings`. With `record`, numeric nodes go on the
    /// tape so that [`Vm::backward`] can follow. The returned value lives until the next call.
    pub fn eval(
        &mut self,
        program: &Program,
        bindings: &Bindings<R>,
        record: bool,
    ) -> Result<Value> {
        let lanes = bindings.lane_count()?;
        self.reset(lanes, record);
        self.bind(program, bindings)?;
        let out = self.run(program);
        self.peak_konts = self.peak_konts.max(self.konts.len());
        if record && let Ok(v) = out {
            self.replayable = Some(v);
        }
        out
    }

    fn reset(&mut self, lanes: usize, record: bool) {
        self.heap.reset();
        self.payload.reset(lanes);
        self.tape.reset();
        self.lane_sets.reset();
        self.shapes.clear();
        self.konts.clear();
        self.vals.clear();
        self.natives.clear();
        self.merges.clear();
        self.inputs.clear();
        self.steps = 0;
        self.depth = 0;
        self.peak_konts = 0;
        self.record = record;
        self.active = ALL;
        self.replayable = None;
        self.flat = None;
        self.placement = None;
    }

    fn bind(&mut self, program: &Program, bindings: &Bindings<R>) -> Result<()> {
        for (i, name) in program.inputs.iter().enumerate() {
            let Some(b) = bindings.for_input(i, name) else {
                return Err(Error::unlocated(
                    ErrorKind::Input,
                    format!("input `{name}` is not bound"),
                ));
            };
            let v = match &b.value {
                Input::Scalar(x) if !b.param => Value::constant(*x),
                Input::Scalar(_) | Input::Lanes(_) => {
                    let s = self.alloc_slots(program, 1, program.root)?;
                    self.payload.leaf(s, 1);
                    self.payload.write_input(s, &b.value);
                    Value::lanes(s)
                }
                Input::Matrix { rows, cols, .. } | Input::LaneMatrices { rows, cols, .. } => {
                    let n = rows * cols;
                    let s = self.alloc_slots(program, n, program.root)?;
                    self.payload.constant_leaf(s, n as u32);
                    self.payload.write_input(s, &b.value);
                    let shape = crate::value::Shape::Matrix(*rows as u32, *cols as u32);
                    self.tensor(shape, s)
                }
            };
            self.inputs.push(v);
        }
        Ok(())
    }

    /// The tape of the last recorded walk (numeric nodes and guards), for inspection.
    pub fn tape(&self) -> &Tape<R> {
        &self.tape
    }

    /// Counters of the last walk.
    pub fn stats(&self) -> WalkStats {
        WalkStats {
            steps: self.steps,
            tape_nodes: self.tape.nodes.len() as u64,
            payload_slots: self.payload.slots() as u64,
            heap_cells: (self.heap.pairs.len() + self.heap.closures.len()) as u64,
            peak_frames: self.heap.peak_frames as u64,
            peak_konts: self.peak_konts as u64,
            lanes: self.payload.lanes as u64,
            splits: self
                .tape
                .branches
                .iter()
                .filter(|g| g.outcome.is_none())
                .count() as u64,
        }
    }

    /// An error located at `node`, carrying the active lanes.
    pub(crate) fn error(
        &self,
        program: &Program,
        node: NodeId,
        kind: ErrorKind,
        msg: impl Into<String>,
    ) -> Error {
        let mut e = Error::new(kind, msg, program.span(node));
        e.lanes = Some(self.active_lanes());
        e
    }

    pub(crate) fn active_lanes(&self) -> Vec<u32> {
        match self.lane_sets.get(self.active) {
            Some(l) => l.to_vec(),
            None => (0..self.payload.lanes as u32).collect(),
        }
    }

    /// A limit error; inside a split branch it names the lanes still running.
    fn limit(&self, program: &Program, node: NodeId, what: &str, value: u64) -> Error {
        let mut msg = format!("{what} limit of {value} exceeded");
        if let Some(lanes) = self.lane_sets.get(self.active) {
            msg.push_str(&format!(
                " (lanes still running: {})",
                numeric::lane_list(lanes)
            ));
        }
        self.error(program, node, ErrorKind::Limit, msg)
    }

    /// One more level of nesting (a non-tail call or a split branch), within the depth limit.
    fn nest(&mut self, program: &Program, node: NodeId) -> Result<()> {
        self.depth += 1;
        if self.depth > self.limits.recursion_depth {
            return Err(self.limit(
                program,
                node,
                "recursion depth",
                self.limits.recursion_depth,
            ));
        }
        Ok(())
    }

    pub(crate) fn alloc_slots(&mut self, program: &Program, n: usize, node: NodeId) -> Result<u32> {
        let primal =
            ((self.payload.slots() + n) * self.payload.lanes * std::mem::size_of::<R>()) as u64;
        if self.memory(primal) + self.payload.bools.len() as u64 > self.limits.payload_bytes {
            return Err(self.limit(program, node, "payload bytes", self.limits.payload_bytes));
        }
        Ok(self.payload.alloc(n))
    }

    /// The memory a walk with `primal` bytes of payload stands for, counted against the payload
    /// limit: the payload alone, or — when gradients are recorded — the payload, the adjoint
    /// buffer the backward pass may need (at most as large) and the tape recorded so far.
    pub(crate) fn memory(&self, primal: u64) -> u64 {
        if !self.record {
            return primal;
        }
        let node = (std::mem::size_of::<crate::tape::TapeNode>() + 8) as u64;
        primal
            .saturating_mul(2)
            .saturating_add((self.tape.nodes.len() as u64).saturating_mul(node))
    }

    pub(crate) fn check_heap(&self, program: &Program, node: NodeId) -> Result<()> {
        if self.heap.cells() > self.limits.heap_cells {
            return Err(self.limit(program, node, "heap cells", self.limits.heap_cells));
        }
        Ok(())
    }

    fn run(&mut self, program: &Program) -> Result<Value> {
        let top = self.heap.push_frame(TOP_FRAME, program.top_frame, &[]);
        self.heap.capture(top);
        self.env = top;
        self.height = 1;
        let mut next = Next::Eval(program.root);
        loop {
            let step = match next {
                Next::Eval(n) => self.eval_node(program, n),
                Next::Return(v) => match self.konts.pop() {
                    None => break Ok(v),
                    Some(k) => self.resume(program, k, v),
                },
            };
            match step {
                Ok(n) => next = n,
                Err(e) => break Err(e),
            }
        }
    }

    /// Evaluates a form that needs no continuation (a literal or a variable), if `n` is one.
    #[inline(always)]
    fn simple(&mut self, program: &Program, n: NodeId) -> Option<Result<Value>> {
        let v = match program.node(n) {
            Node::Num(l) => Value::constant(R::from_literal(l)),
            Node::Bool(b) => Value::boolean(b),
            Node::Local { depth, slot, name } => {
                let f = self.heap.up(self.env, depth);
                return Some(self.read_var(program, n, self.heap.slot(f, slot), name));
            }
            Node::Global { slot, name } => {
                return Some(self.read_var(program, n, self.heap.slot(TOP_FRAME, slot), name));
            }
            Node::Input(i) => self.inputs[i as usize],
            Node::Base(p) => Value {
                tag: tag::PRIM,
                aux: p as u32,
                slot: 0,
            },
            Node::Ext(i) => Value {
                tag: tag::PRIM,
                aux: crate::extension::EXT_BASE + i,
                slot: 0,
            },
            _ => return None,
        };
        Some(Ok(v))
    }

    #[inline(always)]
    fn read_var(
        &self,
        program: &Program,
        n: NodeId,
        v: Value,
        name: crate::syntax::symbols::Sym,
    ) -> Result<Value> {
        if v.tag == tag::UNBOUND {
            return Err(self.unbound(program, n, name));
        }
        Ok(v)
    }

    #[cold]
    #[inline(never)]
    fn unbound(&self, program: &Program, n: NodeId, name: crate::syntax::symbols::Sym) -> Error {
        self.error(
            program,
            n,
            ErrorKind::Unbound,
            format!("`{}` used before its definition", program.symbol_name(name)),
        )
    }

    #[inline(always)]
    fn step(&mut self, program: &Program, n: NodeId) -> Result<()> {
        self.steps += 1;
        if self.steps > self.limits.eval_steps {
            return Err(self.steps_exceeded(program, n));
        }
        if self.steps.is_multiple_of(crate::limits::STOP_EVERY) && self.stop.requested() {
            return Err(self.stopped(program, n));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn stopped(&self, program: &Program, n: NodeId) -> Error {
        let msg = format!("{STOPPED} after {} steps", self.steps);
        self.error(program, n, ErrorKind::Limit, msg)
    }

    #[cold]
    #[inline(never)]
    fn steps_exceeded(&self, program: &Program, n: NodeId) -> Error {
        self.limit(program, n, "eval steps", self.limits.eval_steps)
    }

    fn push(&mut self, k: Kont) {
        self.konts.push(k);
    }

    fn eval_node(&mut self, program: &Program, n: NodeId) -> Result<Next> {
        self.step(program, n)?;
        if let Some(v) = self.simple(program, n) {
            return Ok(Next::Return(v?));
        }
        match program.node(n) {
            Node::Quote(d) => Ok(Next::Return(self.quote(program, n, d)?)),
            Node::Lambda(i) => {
                self.heap.capture(self.env);
                self.heap.closures.push(crate::heap::Closure {
                    lambda: i,
                    env: self.env,
                });
                self.check_heap(program, n)?;
                Ok(Next::Return(Value {
                    tag: tag::CLOSURE,
                    aux: 0,
                    slot: (self.heap.closures.len() - 1) as u32,
                }))
            }
            Node::If { test, .. } => {
                if let Some(v) = self.simple(program, test) {
                    self.step(program, test)?;
                    return self.branch(program, n, v?);
                }
                self.push(Kont::If {
                    node: n,
                    env: self.env,
                });
                Ok(Next::Eval(test))
            }
            Node::Bind {
                start, len, body, ..
            } => {
                if len == 0 {
                    return Ok(Next::Eval(body));
                }
                self.push(Kont::Bind {
                    node: n,
                    env: self.env,
                    i: 0,
                });
                Ok(Next::Eval(program.kids[start as usize]))
            }
            Node::Seq { start, .. } => {
                self.push(Kont::Seq {
                    node: n,
                    env: self.env,
                    i: 0,
                });
                Ok(Next::Eval(program.kids[start as usize]))
            }
            Node::Call { .. } | Node::PrimCall { .. } => self.operands(program, n, 0),
            Node::Define { init, .. } => Ok(Next::Eval(init)),
            Node::Top { start, .. } => {
                self.push(Kont::Top { node: n, i: 0 });
                Ok(Next::Eval(program.kids[start as usize]))
            }
            _ => Ok(Next::Return(Value::NIL)),
        }
    }

    fn resume(&mut self, program: &Program, k: Kont, v: Value) -> Result<Next> {
        match k {
            Kont::If { node, env } => {
                self.env = env;
                self.branch(program, node, v)
            }
            Kont::Seq { node, env, i } => {
                self.env = env;
                let Node::Seq { start, len } = program.node(node) else {
                    return Ok(Next::Return(v));
                };
                let i = i + 1;
                if i + 1 < len {
                    self.push(Kont::Seq { node, env, i });
                }
                Ok(Next::Eval(program.kids[(start + i) as usize]))
            }
            Kont::Bind { node, env, i } => {
                self.env = env;
                let Node::Bind {
                    first,
                    start,
                    len,
                    body,
                } = program.node(node)
                else {
                    return Ok(Next::Return(v));
                };
                self.heap.set_slot(env, first + i, v);
                let i = i + 1;
                if i < len {
                    self.push(Kont::Bind { node, env, i });
                    return Ok(Next::Eval(program.kids[(start + i) as usize]));
                }
                Ok(Next::Eval(body))
            }
            Kont::Args { node, env, i } => {
                self.env = env;
                self.vals.push(v);
                self.operands(program, node, i + 1)
            }
            Kont::Return { env, height } => {
                self.heap.pop_frames(self.height);
                self.env = env;
                self.height = height;
                self.depth -= 1;
                Ok(Next::Return(v))
            }
            Kont::Top { node, i } => {
                let Node::Top { start, len } = program.node(node) else {
                    return Ok(Next::Return(v));
                };
                if let Node::Define { slot, .. } = program.node(program.kids[(start + i) as usize])
                {
                    self.heap.set_slot(TOP_FRAME, slot, v);
                }
                let i = i + 1;
                if i < len {
                    self.push(Kont::Top { node, i });
                    self.env = TOP_FRAME;
                    return Ok(Next::Eval(program.kids[(start + i) as usize]));
                }
                Ok(Next::Return(v))
            }
            Kont::Native { idx } => self.native_resume(program, idx, v),
            Kont::Merge { idx } => self.merge_resume(program, idx, v),
            Kont::IfExit { node, watermark } => self.if_exit(program, node, watermark, v),
        }
    }

    /// Evaluates the operands of call `node` from `i` on (simple ones inline), then applies.
    fn operands(&mut self, program: &Program, node: NodeId, mut i: u32) -> Result<Next> {
        let (start, len) = match program.node(node) {
            Node::Call { start, len, .. } | Node::PrimCall { start, len, .. } => (start, len),
            _ => return Ok(Next::Return(Value::NIL)),
        };
        while i < len {
            let k = program.kids[(start + i) as usize];
            match self.simple(program, k) {
                Some(v) => {
                    self.step(program, k)?;
                    self.vals.push(v?);
                    i += 1;
                }
                None => {
                    self.push(Kont::Args {
                        node,
                        env: self.env,
                        i,
                    });
                    return Ok(Next::Eval(k));
                }
            }
        }
        self.call(program, node)
    }

    /// Builds a fresh copy of a quoted datum.
    fn quote(&mut self, program: &Program, node: NodeId, d: u32) -> Result<Value> {
        use crate::syntax::reader::DatumKind;
        let datum = *program.data.get(d);
        let v = match datum.kind {
            DatumKind::Num(l) => Value::constant(R::from_literal(l)),
            DatumKind::Bool(b) => Value::boolean(b),
            DatumKind::Sym(s) => Value {
                tag: tag::SYMBOL,
                aux: s.0,
                slot: 0,
            },
            DatumKind::List { .. } => {
                let items = program.data.list(d).to_vec();
                let mut elems = Vec::with_capacity(items.len());
                for k in items {
                    elems.push(stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                        self.quote(program, node, k)
                    })?);
                }
                let v = crate::prims::lists::from_slice(&mut self.heap, &elems, Value::NIL);
                self.check_heap(program, node)?;
                v
            }
        };
        Ok(v)
    }
}
