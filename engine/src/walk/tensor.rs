//! Tensors in the walk: construction, shape checks, elementwise ops with broadcasting, and the
//! linear-algebra primitives (docs/language-reference.md §6.5–§6.7).
//!
//! A tensor value is `{VECTOR, len, base}` or `{MATRIX, shape index, base}`; its elements are
//! consecutive payload slots, so an elementwise op over a tensor is one tape node over `len`
//! consecutive slots whose kernel runs on one contiguous slice of `len × B` numbers. A number
//! broadcast over a tensor is a constant operand of that node, or — for a lane value — one node
//! per element. `ref` is free: an element is a number at its slot, a row a vector at its first
//! slot, and gradients reach the tensor's own elements. Shapes are structure: they are checked
//! here, once, and a mismatch is a shape error naming both shapes.

use super::Vm;
use crate::error::{ErrorKind, Result};
use crate::lanes::Layout;
use crate::prims::Prim;
use crate::prims::kernels::{Arg, Gather, forward1, forward1_over, forward2, forward2_over};
use crate::prims::linalg::{self, Lanes, LinNode};
use crate::prims::scalar::Op;
use crate::program::{NodeId, Program};
use crate::real::Real;
use crate::tape::Form;
use crate::value::{Shape, Value, tag};

/// Multiply-adds of linear algebra charged as one eval step: about the time of one walk step,
/// so the default step limit (10⁸) bounds a program's linear algebra to seconds — a product of
/// two 1170 × 1170 matrices at most (`docs/limits.md`).
const MADDS_PER_STEP: u64 = 16;

/// An operand of an elementwise node: a constant, or lane values at consecutive slots.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<R> {
    Const(R),
    Slots(u32),
}

impl<R: Real> Operand<R> {
    fn value(self) -> Value {
        match self {
            Operand::Const(c) => Value::constant(c),
            Operand::Slots(s) => Value::lanes(s),
        }
    }

    /// Element `e`'s operand (a constant stays itself).
    fn at(self, e: u32) -> Operand<R> {
        match self {
            Operand::Slots(s) => Operand::Slots(s + e),
            c => c,
        }
    }
}

/// Runs `op` over `n` consecutive elements from slot `out` on, over the lanes of `layout`: one
/// run of `n × B` numbers when every lane is active, else element by element. The walk and the
/// replay run every elementwise node through it, so they slice the lanes alike, bit for bit.
pub(crate) fn run_elementwise<R: Real>(
    primal: &mut [R],
    b: usize,
    (op, out, n): (Op, u32, u32),
    (x, y): (Operand<R>, Option<Operand<R>>),
    layout: Layout,
    gather: &mut Gather<R>,
) {
    let (lo, hi) = primal.split_at_mut(out as usize * b);
    let arg = |v: Operand<R>, e: u32, len: usize| match v {
        Operand::Const(c) => Arg::Const(c),
        Operand::Slots(s) => Arg::Lanes(&lo[(s + e) as usize * b..][..len]),
    };
    if layout == Layout::All {
        // Every lane: the n elements are one contiguous run of n·B numbers.
        let len = n as usize * b;
        let o = &mut hi[..len];
        match y {
            None => {
                if let Arg::Lanes(xs) = arg(x, 0, len) {
                    forward1(op, o, xs);
                }
            }
            Some(y) => forward2(op, o, arg(x, 0, len), arg(y, 0, len)),
        }
        return;
    }
    for e in 0..n {
        let o = &mut hi[e as usize * b..][..b];
        match y {
            None => {
                if let Arg::Lanes(xs) = arg(x, e, b) {
                    forward1_over(op, o, xs, layout, gather);
                }
            }
            Some(y) => forward2_over(op, o, arg(x, e, b), arg(y, e, b), layout, gather),
        }
    }
}

impl<R: Real> Vm<R> {
    /// The shape of a tensor value.
    pub(crate) fn shape(&self, v: Value) -> Option<Shape> {
        match v.tag {
            tag::VECTOR => Some(Shape::Vector(v.aux)),
            tag::MATRIX => self
                .shapes
                .get(v.aux as usize)
                .map(|&(m, n)| Shape::Matrix(m, n)),
            _ => None,
        }
    }

    /// The tensor value of `shape` at `slot` (matrix shapes are interned per walk).
    pub(crate) fn tensor(&mut self, shape: Shape, slot: u32) -> Value {
        match shape {
            Shape::Vector(n) => Value {
                tag: tag::VECTOR,
                aux: n,
                slot,
            },
            Shape::Matrix(m, n) => {
                let idx = match self.shapes.iter().rposition(|&s| s == (m, n)) {
                    Some(i) => i,
                    None => {
                        self.shapes.push((m, n));
                        self.shapes.len() - 1
                    }
                };
                Value {
                    tag: tag::MATRIX,
                    aux: idx as u32,
                    slot,
                }
            }
        }
    }

    /// "a number", "a [3] vector", "a [2,2] matrix", … for messages.
    pub(crate) fn describe(&self, v: Value) -> String {
        match self.shape(v) {
            Some(s @ Shape::Vector(_)) => format!("a {s} vector"),
            Some(s) => format!("a {s} matrix"),
            None => v.kind_name().to_string(),
        }
    }

    /// Operands of an elementwise primitive must be numbers or tensors.
    pub(super) fn expect_numeric(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
    ) -> Result<()> {
        match a.iter().position(|v| !v.is_number() && !v.is_tensor()) {
            None => Ok(()),
            Some(i) => Err(self.error(
                program,
                node,
                ErrorKind::Type,
                format!(
                    "`{}`: operand {} must be a number or a tensor, got {}",
                    p.name(),
                    i + 1,
                    a[i].kind_name()
                ),
            )),
        }
    }

    /// A unary elementwise op on a number or a tensor.
    pub(super) fn unary(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        x: Value,
    ) -> Result<Value> {
        let Some(shape) = self.shape(x) else {
            return self.num1(program, node, op, x);
        };
        let out = self.alloc_slots(program, shape.len() as usize, node)?;
        self.elementwise(
            program,
            node,
            op,
            out,
            Operand::Slots(x.slot),
            None,
            shape.len(),
        )?;
        Ok(self.tensor(shape, out))
    }

    /// A binary elementwise op with broadcasting (docs/language-reference.md §6.7).
    pub(super) fn binary(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        x: Value,
        y: Value,
    ) -> Result<Value> {
        let (sx, sy) = (self.shape(x), self.shape(y));
        let shape = match (sx, sy) {
            (None, None) => return self.num2(program, node, op, x, y),
            (Some(a), Some(b)) if a != b => {
                return Err(self.error(
                    program,
                    node,
                    ErrorKind::Shape,
                    format!("`{}`: shapes {a} and {b} do not match", op.name()),
                ));
            }
            (Some(s), _) | (None, Some(s)) => s,
        };
        let n = shape.len();
        let out = self.alloc_slots(program, n as usize, node)?;
        let operand = |v: Value| match v.tag {
            tag::CONST => Operand::Const(v.const_value::<R>()),
            _ => Operand::Slots(v.slot),
        };
        let (a, b) = (operand(x), operand(y));
        if x.tag == tag::NUM || y.tag == tag::NUM {
            // A lane number broadcast over a tensor: one node per element (the number's adjoint
            // is the sum of what each element's node sends it).
            let (ta, tb) = (x.tag == tag::NUM, y.tag == tag::NUM);
            for e in 0..n {
                let ea = if ta { a } else { a.at(e) };
                let eb = if tb { b } else { b.at(e) };
                self.elementwise(program, node, op, out + e, ea, Some(eb), 1)?;
            }
        } else {
            self.elementwise(program, node, op, out, a, Some(b), n)?;
        }
        Ok(self.tensor(shape, out))
    }

    /// Runs `op` over `n` consecutive elements into `out` and records one node for them.
    #[allow(clippy::too_many_arguments)]
    fn elementwise(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        out: u32,
        x: Operand<R>,
        y: Option<Operand<R>>,
        n: u32,
    ) -> Result<()> {
        let p = &mut self.payload;
        if p.lanes == 1 && self.active == crate::lanes::ALL && !op.has_vector_kernel() {
            // One lane: the op's scalar formula per element, as the replay runs it (same bits
            // as the lane kernel).
            let x_at = |v: &[R], o: Operand<R>, e: u32| match o {
                Operand::Const(c) => c,
                Operand::Slots(s) => v[(s + e) as usize],
            };
            for e in 0..n {
                let a = x_at(&p.primal, x, e);
                p.primal[(out + e) as usize] = match y {
                    None => op.eval1(a),
                    Some(y) => op.eval2(a, x_at(&p.primal, y, e)),
                };
            }
        } else {
            let layout = self.lane_sets.layout(self.active);
            run_elementwise(
                &mut p.primal,
                p.lanes,
                (op, out, n),
                (x, y),
                layout,
                &mut self.gather,
            );
        }
        let (form, a, c) = match y {
            None => (Form::Unary, x.value().slot, 0),
            Some(y) => self.tape_operands(x.value(), y.value()),
        };
        self.record_op(program, node, op, form, (out, a, c), n)
    }

    /// A copy of a number or tensor in fresh slots, recorded as one `Copy` node.
    pub(super) fn copy_value(
        &mut self,
        program: &Program,
        node: NodeId,
        v: Value,
    ) -> Result<Value> {
        let n = self.shape(v).map_or(1, |s| s.len());
        let out = self.alloc_slots(program, n as usize, node)?;
        self.elementwise(
            program,
            node,
            Op::Copy,
            out,
            Operand::Slots(v.slot),
            None,
            n,
        )?;
        Ok(Value { slot: out, ..v })
    }

    /// Runs a linear-algebra op and records it; the result is a number or a tensor of `shape`.
    #[allow(clippy::too_many_arguments)]
    fn linalg(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        (a, b): (Value, Option<Value>),
        (m, k, n): (u32, u32, u32),
        shape: Option<Shape>,
    ) -> Result<Value> {
        let mut ln = LinNode {
            op,
            out: 0,
            a: a.slot,
            b: b.map_or(0, |v| v.slot),
            m,
            k,
            n,
            skip: 0,
            adj_a: a.slot,
            adj_b: b.map_or(0, |v| v.slot),
        };
        self.charge(program, node, ln.work())?;
        let (len, extra) = (ln.out_len(), ln.extra_len(self.record));
        ln.out = self.alloc_slots(program, (len + extra) as usize, node)?;
        if extra > 0 {
            ln.b = ln.out + len;
        }
        let lanes = self.payload.lanes;
        let layout = self.lane_sets.layout(self.active);
        let (primal, work, record) = (&mut self.payload.primal, &mut self.work, self.record);
        layout.for_ranges(lanes, |s, e| {
            linalg::forward(&ln, primal, Lanes { b: lanes, s, e }, record, work)
        });
        if self.record {
            self.tape.dims.push([m, k, n]);
            let form = if b.is_some() {
                Form::SlotSlot
            } else {
                Form::Unary
            };
            let dims = (self.tape.dims.len() - 1) as u32;
            let slots = (ln.out, ln.a, ln.b);
            self.record_op(program, node, op, form, slots, dims)?;
        }
        Ok(match shape {
            Some(s) => self.tensor(s, ln.out),
            None => Value::lanes(ln.out),
        })
    }

    /// Counts a linear-algebra op's arithmetic toward the eval-step limit: one step per
    /// [`MADDS_PER_STEP`] multiply-adds over all lanes. Elementwise work is bounded by the
    /// payload it allocates; a product or a factorization can do far more work than its
    /// result's size, and programs are untrusted.
    fn charge(&mut self, program: &Program, node: NodeId, work: u64) -> Result<()> {
        let lanes = self.payload.lanes as u64;
        self.steps = self
            .steps
            .saturating_add(work.saturating_mul(lanes) / MADDS_PER_STEP);
        if self.steps > self.limits.eval_steps {
            return Err(self.limit(program, node, "eval steps", self.limits.eval_steps));
        }
        Ok(())
    }

    /// The element count of an `m × n` result, or a limit error when it cannot be addressed.
    fn elements(&self, program: &Program, node: NodeId, m: u32, n: u32) -> Result<u32> {
        match m.checked_mul(n) {
            Some(e) if e <= u32::MAX / 2 => Ok(e),
            _ => Err(self.limit(program, node, "payload bytes", self.limits.payload_bytes)),
        }
    }

    /// A shape error naming the primitive and what it got.
    fn shape_error(&self, program: &Program, node: NodeId, p: Prim, msg: String) -> crate::Error {
        self.error(
            program,
            node,
            ErrorKind::Shape,
            format!("`{}`: {msg}", p.name()),
        )
    }

    /// Operand `i` as a vector (its length), or a located error: a matrix is a shape error,
    /// anything else a type error.
    fn vector(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
        i: usize,
    ) -> Result<u32> {
        match self.operand(program, node, p, a, i, "vector")? {
            Shape::Vector(n) => Ok(n),
            Shape::Matrix(..) => Ok(0), // `operand` rejected it
        }
    }

    /// Operand `i` as a matrix (its shape), or a located error.
    fn matrix(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
        i: usize,
    ) -> Result<(u32, u32)> {
        match self.operand(program, node, p, a, i, "matrix")? {
            Shape::Matrix(m, n) => Ok((m, n)),
            Shape::Vector(_) => Ok((0, 0)), // `operand` rejected it
        }
    }

    /// Operand `i`'s shape when it is a `want` ("vector" or "matrix"): the other rank is a shape
    /// error, a non-tensor a type error.
    fn operand(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
        i: usize,
        want: &str,
    ) -> Result<Shape> {
        let Some(s) = self.shape(a[i]) else {
            let msg = format!(
                "`{}`: operand {} must be a {want}, got {}",
                p.name(),
                i + 1,
                a[i].kind_name()
            );
            return Err(self.error(program, node, ErrorKind::Type, msg));
        };
        let is_vector = matches!(s, Shape::Vector(_));
        if is_vector != (want == "vector") {
            let got = if is_vector { "vector" } else { "matrix" };
            let msg = format!("operand {} must be a {want}, got a {s} {got}", i + 1);
            return Err(self.shape_error(program, node, p, msg));
        }
        Ok(s)
    }

    /// Operand `i` as a square matrix (its size).
    fn square(&self, program: &Program, node: NodeId, p: Prim, a: &[Value]) -> Result<u32> {
        let (m, n) = self.matrix(program, node, p, a, 0)?;
        if m != n {
            return Err(self.shape_error(
                program,
                node,
                p,
                format!("needs a square matrix, got [{m},{n}]"),
            ));
        }
        Ok(n)
    }

    /// A size read as structure (`zeros`, `ones`, `eye`): truncated, at least 1.
    fn size(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        v: Value,
        square: bool,
    ) -> Result<u32> {
        let what = match p {
            Prim::Eye => "`eye` size",
            Prim::Ones => "`ones` size",
            _ => "`zeros` size",
        };
        let n = self.structural_index(program, node, what, v)?;
        if n < 1 {
            return Err(self.shape_error(program, node, p, "the size must be at least 1".into()));
        }
        let elems = if square { n.saturating_mul(n) } else { n };
        if elems > (u32::MAX / 2) as usize {
            return Err(self.limit(program, node, "payload bytes", self.limits.payload_bytes));
        }
        Ok(n as u32)
    }

    /// A constant tensor filled from `f(element)`.
    fn constant_tensor(
        &mut self,
        program: &Program,
        node: NodeId,
        shape: Shape,
        f: impl Fn(u32) -> R,
    ) -> Result<Value> {
        let out = self.alloc_slots(program, shape.len() as usize, node)?;
        for e in 0..shape.len() {
            self.payload.lane_values_mut(out + e).fill(f(e));
        }
        self.payload.constant_leaf(out, shape.len());
        Ok(self.tensor(shape, out))
    }

    /// The tensor primitives (`None` for any other primitive).
    pub(super) fn tensor_prim(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
    ) -> Result<Option<Value>> {
        let v = match p {
            Prim::Vec => {
                if let Some(i) = a.iter().position(|v| !v.is_number()) {
                    return Err(self.error(
                        program,
                        node,
                        ErrorKind::Type,
                        format!(
                            "`vec`: operand {} must be a number, got {}",
                            i + 1,
                            self.describe(a[i])
                        ),
                    ));
                }
                let n = a.len() as u32;
                let out = self.alloc_slots(program, n as usize, node)?;
                for (e, &x) in a.iter().enumerate() {
                    let e = e as u32;
                    if x.tag == tag::CONST {
                        self.payload.lane_values_mut(out + e).fill(x.const_value());
                        self.payload.constant_leaf(out + e, 1);
                    } else {
                        let src = Operand::Slots(x.slot);
                        self.elementwise(program, node, Op::Copy, out + e, src, None, 1)?;
                    }
                }
                self.tensor(Shape::Vector(n), out)
            }
            Prim::Mat => {
                let n = self.vector(program, node, p, a, 0)?;
                for i in 1..a.len() {
                    let ni = self.vector(program, node, p, a, i)?;
                    if ni != n {
                        return Err(self.shape_error(
                            program,
                            node,
                            p,
                            format!("row 1 is [{n}] but row {} is [{ni}]", i + 1),
                        ));
                    }
                }
                let m = a.len() as u32;
                let out =
                    self.alloc_slots(program, self.elements(program, node, m, n)? as usize, node)?;
                for (i, row) in a.iter().enumerate() {
                    let dst = out + i as u32 * n;
                    let src = Operand::Slots(row.slot);
                    self.elementwise(program, node, Op::Copy, dst, src, None, n)?;
                }
                self.tensor(Shape::Matrix(m, n), out)
            }
            Prim::Ref => {
                let Some(shape) = self.shape(a[0]) else {
                    return Err(self.error(
                        program,
                        node,
                        ErrorKind::Type,
                        format!(
                            "`ref`: operand 1 must be a vector or a matrix, got {}",
                            a[0].kind_name()
                        ),
                    ));
                };
                let i = self.structural_index(program, node, "`ref` index", a[1])?;
                let (count, what) = match shape {
                    Shape::Vector(n) => (n, "vector"),
                    Shape::Matrix(m, _) => (m, "matrix with rows"),
                };
                if i >= count as usize {
                    return Err(self.shape_error(
                        program,
                        node,
                        p,
                        format!("index {i} is out of range for a {shape} {what} 0..{count}"),
                    ));
                }
                match shape {
                    Shape::Vector(_) => Value::lanes(a[0].slot + i as u32),
                    Shape::Matrix(_, n) => self.tensor(Shape::Vector(n), a[0].slot + i as u32 * n),
                }
            }
            Prim::VLen => {
                let n = self.vector(program, node, p, a, 0)?;
                Value::constant(R::from_f64(n as f64))
            }
            Prim::VSum | Prim::Norm | Prim::Normalize => {
                let n = self.vector(program, node, p, a, 0)?;
                let (op, shape) = match p {
                    Prim::VSum => (Op::VSum, None),
                    Prim::Norm => (Op::Norm, None),
                    _ => (Op::Normalize, Some(Shape::Vector(n))),
                };
                self.linalg(program, node, op, (a[0], None), (1, 1, n), shape)?
            }
            Prim::Dot | Prim::Cross => {
                let (n, n2) = (
                    self.vector(program, node, p, a, 0)?,
                    self.vector(program, node, p, a, 1)?,
                );
                if p == Prim::Cross && (n != 3 || n2 != 3) {
                    return Err(self.shape_error(
                        program,
                        node,
                        p,
                        format!("needs two [3] vectors, got [{n}] and [{n2}]"),
                    ));
                }
                if n != n2 {
                    return Err(self.shape_error(
                        program,
                        node,
                        p,
                        format!("shapes [{n}] and [{n2}] do not match"),
                    ));
                }
                let (op, shape) = if p == Prim::Dot {
                    (Op::Dot, None)
                } else {
                    (Op::Cross, Some(Shape::Vector(3)))
                };
                self.linalg(program, node, op, (a[0], Some(a[1])), (1, 1, n), shape)?
            }
            Prim::Scale => {
                let (x, y) = (a[0], a[1]);
                let ok = (x.is_number() && y.is_tensor()) || (x.is_tensor() && y.is_number());
                if !ok {
                    return Err(self.error(
                        program,
                        node,
                        ErrorKind::Type,
                        format!(
                            "`scale` takes one number and one tensor, got {} and {}",
                            self.describe(x),
                            self.describe(y)
                        ),
                    ));
                }
                self.binary(program, node, Op::Mul, x, y)?
            }
            Prim::Outer => {
                let m = self.vector(program, node, p, a, 0)?;
                let n = self.vector(program, node, p, a, 1)?;
                self.elements(program, node, m, n)?;
                let shape = Some(Shape::Matrix(m, n));
                self.linalg(
                    program,
                    node,
                    Op::Outer,
                    (a[0], Some(a[1])),
                    (m, 1, n),
                    shape,
                )?
            }
            Prim::MatVec => {
                let (m, k) = self.matrix(program, node, p, a, 0)?;
                let k2 = self.vector(program, node, p, a, 1)?;
                if k != k2 {
                    return Err(self.shape_error(
                        program,
                        node,
                        p,
                        format!("shapes [{m},{k}] and [{k2}] do not match"),
                    ));
                }
                let shape = Some(Shape::Vector(m));
                self.linalg(
                    program,
                    node,
                    Op::MatVec,
                    (a[0], Some(a[1])),
                    (m, k, 1),
                    shape,
                )?
            }
            Prim::MatMul => {
                let (m, k) = self.matrix(program, node, p, a, 0)?;
                let (k2, n) = self.matrix(program, node, p, a, 1)?;
                if k != k2 {
                    return Err(self.shape_error(
                        program,
                        node,
                        p,
                        format!("shapes [{m},{k}] and [{k2},{n}] do not match"),
                    ));
                }
                self.elements(program, node, m, n)?;
                let shape = Some(Shape::Matrix(m, n));
                self.linalg(
                    program,
                    node,
                    Op::MatMul,
                    (a[0], Some(a[1])),
                    (m, k, n),
                    shape,
                )?
            }
            Prim::Transpose | Prim::Trace => {
                let (m, n) = self.matrix(program, node, p, a, 0)?;
                let (op, shape) = if p == Prim::Trace {
                    (Op::Trace, None)
                } else {
                    (Op::Transpose, Some(Shape::Matrix(n, m)))
                };
                self.linalg(program, node, op, (a[0], None), (m, 1, n), shape)?
            }
            Prim::Det | Prim::LogDet | Prim::Inv => {
                let n = self.square(program, node, p, a)?;
                let (op, shape) = match p {
                    Prim::Det => (Op::Det, None),
                    Prim::LogDet => (Op::LogDet, None),
                    _ => (Op::Inv, Some(Shape::Matrix(n, n))),
                };
                self.linalg(program, node, op, (a[0], None), (n, n, n), shape)?
            }
            Prim::Zeros | Prim::Ones => {
                let n = self.size(program, node, p, a[0], false)?;
                let x = if p == Prim::Ones { R::one() } else { R::zero() };
                self.constant_tensor(program, node, Shape::Vector(n), |_| x)?
            }
            Prim::Eye => {
                let n = self.size(program, node, p, a[0], true)?;
                self.constant_tensor(program, node, Shape::Matrix(n, n), |e| {
                    if e % (n + 1) == 0 {
                        R::one()
                    } else {
                        R::zero()
                    }
                })?
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }
}
