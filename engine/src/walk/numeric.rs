//! Numbers in the walk: arithmetic folds, lane kernels with tape recording, comparisons with
//! guards, truthiness over the active lanes, and numbers read as structure.
//!
//! Two constants fold to a constant and record nothing. Any lane value makes the result a lane
//! value: the walk allocates a payload slot, runs the op's lane kernel and (when gradients are
//! wanted) records the node.

use super::Vm;
use crate::error::{ErrorKind, Result};
use crate::prims::Prim;
use crate::prims::compare::Cmp;
use crate::prims::kernels::{Arg, forward1_over, forward2_over};
use crate::prims::scalar::Op;
use crate::program::{NodeId, Program};
use crate::real::Real;
use crate::tape::{Check, Form, Guard, TapeNode};
use crate::value::{Value, tag};

impl<R: Real> Vm<R> {
    pub(super) fn expect_numbers(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
    ) -> Result<()> {
        for (i, v) in a.iter().enumerate() {
            if !v.is_number() {
                return Err(self.error(
                    program,
                    node,
                    ErrorKind::Type,
                    format!(
                        "`{}`: operand {} must be a number, got {}",
                        p.name(),
                        i + 1,
                        self.describe(*v)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Variadic `+ - * /`, folding left pairwise (docs/language-reference.md §6.1); tensors combine
    /// elementwise with broadcasting (§6.7).
    pub(super) fn arithmetic(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
    ) -> Result<Value> {
        self.expect_numeric(program, node, p, a)?;
        let zero = Value::constant(R::zero());
        let one = Value::constant(R::one());
        let (op, first) = match (p, a.len()) {
            (Prim::Add, 0) => return Ok(zero),
            (Prim::Mul, 0) => return Ok(one),
            (Prim::Add, 1) => return self.binary(program, node, Op::Add, zero, a[0]),
            (Prim::Mul, 1) => return Ok(a[0]),
            (Prim::Sub, 1) => return self.binary(program, node, Op::Sub, zero, a[0]),
            (Prim::Div, 1) => return self.binary(program, node, Op::Div, one, a[0]),
            (Prim::Add, _) => (Op::Add, Op::Add0),
            (Prim::Sub, _) => (Op::Sub, Op::Sub),
            (Prim::Mul, _) => (Op::Mul, Op::Mul),
            _ => (Op::Div, Op::Div),
        };
        let mut acc = self.binary(program, node, first, a[0], a[1])?;
        for &x in &a[2..] {
            acc = self.binary(program, node, op, acc, x)?;
        }
        Ok(acc)
    }

    #[inline]
    pub(super) fn record(&mut self, program: &Program, node: NodeId, n: TapeNode) -> Result<()> {
        if self.record {
            if self.tape.nodes.len() as u64 >= self.limits.tape_nodes {
                return Err(self.limit(program, node, "tape nodes", self.limits.tape_nodes));
            }
            let skip = if self.payload.constant.is_empty() {
                0
            } else {
                self.skip_bits(&n)
            };
            self.tape.nodes.push(n);
            self.tape.skip.push(skip);
        }
        Ok(())
    }

    /// Records `op` over the active lanes: output `out`, operands `a` and `b` in `form`, and
    /// `aux` (see [`TapeNode::aux`]).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn record_op(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        form: Form,
        (out, a, b): (u32, u32, u32),
        aux: u32,
    ) -> Result<()> {
        let lanes = self.active;
        let n = TapeNode {
            op,
            form,
            lanes,
            out,
            a,
            b,
            aux,
        };
        self.record(program, node, n)
    }

    /// Which operands of a node are constant leaves (see [`crate::tape::Tape::skip`]).
    #[inline(never)]
    fn skip_bits(&self, n: &TapeNode) -> u8 {
        let (a, b) = if n.op.is_linalg() {
            let (la, lb) = self.tape.linalg(n).operand_lens();
            (Some((n.a, la)), (lb > 0).then_some((n.b, lb)))
        } else {
            let len = if n.op == Op::Select { 1 } else { n.elements() };
            match n.form {
                Form::Unary | Form::SlotConst => (Some((n.a, len)), None),
                Form::SlotSlot => (Some((n.a, len)), Some((n.b, len))),
                Form::ConstSlot => (None, Some((n.b, len))),
                Form::ConstConst => (None, None),
            }
        };
        let constant =
            |r: Option<(u32, u32)>| r.is_some_and(|(s, l)| self.payload.all_constant(s, l));
        let mut bits = 0;
        if constant(a) {
            bits |= crate::tape::SKIP_A;
        }
        if constant(b) {
            bits |= crate::tape::SKIP_B;
        }
        bits
    }

    /// A unary op on a number.
    pub(super) fn num1(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        x: Value,
    ) -> Result<Value> {
        if x.tag == tag::CONST {
            return Ok(Value::constant(op.eval1(x.const_value::<R>())));
        }
        let out = self.alloc_slots(program, 1, node)?;
        let b = self.payload.lanes;
        let primal = &mut self.payload.primal;
        if b == 1 {
            // One lane: the kernel's formula without the lane loop (same bits).
            primal[out as usize] = op.eval1(primal[x.slot as usize]);
        } else {
            let (lo, hi) = primal.split_at_mut(out as usize * b);
            let xs = &lo[x.slot as usize * b..(x.slot as usize + 1) * b];
            // Only the active lanes, so a split costs what its lanes cost.
            let layout = self.lane_sets.layout(self.active);
            forward1_over(op, &mut hi[..b], xs, layout, &mut self.gather);
        }
        self.record_op(program, node, op, Form::Unary, (out, x.slot, 0), 0)?;
        Ok(Value::lanes(out))
    }

    /// A binary op on two numbers.
    pub(super) fn num2(
        &mut self,
        program: &Program,
        node: NodeId,
        op: Op,
        x: Value,
        y: Value,
    ) -> Result<Value> {
        if x.tag == tag::CONST && y.tag == tag::CONST {
            return Ok(Value::constant(
                op.eval2(x.const_value::<R>(), y.const_value::<R>()),
            ));
        }
        let out = self.alloc_slots(program, 1, node)?;
        let b = self.payload.lanes;
        let primal = &mut self.payload.primal;
        if b == 1 {
            // One lane: the kernel's formula without the lane loop (same bits).
            let one = |v: Value| {
                if v.tag == tag::CONST {
                    v.const_value::<R>()
                } else {
                    primal[v.slot as usize]
                }
            };
            primal[out as usize] = op.eval2(one(x), one(y));
        } else {
            let (lo, hi) = primal.split_at_mut(out as usize * b);
            let arg = |v: Value| {
                if v.tag == tag::CONST {
                    Arg::Const(v.const_value::<R>())
                } else {
                    Arg::Lanes(&lo[v.slot as usize * b..(v.slot as usize + 1) * b])
                }
            };
            let layout = self.lane_sets.layout(self.active);
            forward2_over(op, &mut hi[..b], arg(x), arg(y), layout, &mut self.gather);
        }
        let (form, a, c) = self.tape_operands(x, y);
        self.record_op(program, node, op, form, (out, a, c), 0)?;
        Ok(Value::lanes(out))
    }

    /// Tape operand encoding of two numbers, at least one a lane value.
    pub(super) fn tape_operands(&mut self, x: Value, y: Value) -> (Form, u32, u32) {
        if !self.record {
            return (Form::SlotSlot, x.slot, y.slot);
        }
        match (x.tag, y.tag) {
            (tag::CONST, tag::CONST) => (
                Form::ConstConst,
                self.tape.constant(x.const_value::<R>()),
                self.tape.constant(y.const_value::<R>()),
            ),
            (tag::CONST, _) => (
                Form::ConstSlot,
                self.tape.constant(x.const_value::<R>()),
                y.slot,
            ),
            (_, tag::CONST) => (
                Form::SlotConst,
                x.slot,
                self.tape.constant(y.const_value::<R>()),
            ),
            _ => (Form::SlotSlot, x.slot, y.slot),
        }
    }

    /// A comparison chain: per lane, every adjacent pair satisfies `cmp`.
    pub(super) fn compare(
        &mut self,
        program: &Program,
        node: NodeId,
        cmp: Cmp,
        a: &[Value],
    ) -> Result<Value> {
        let b = self.payload.lanes;
        let (mut acc, mut pair) = std::mem::take(&mut self.scratch);
        acc.clear();
        let mut any_lanes = false;
        let mut uniform_false = false;
        for w in a.windows(2) {
            let (x, y) = (w[0], w[1]);
            if x.tag == tag::CONST && y.tag == tag::CONST {
                uniform_false |= !cmp.eval(x.const_value::<R>(), y.const_value::<R>());
                continue;
            }
            let lane = |v: Value, i: usize| -> R {
                if v.tag == tag::CONST {
                    v.const_value::<R>()
                } else {
                    self.payload.primal[v.slot as usize * b + i]
                }
            };
            pair.clear();
            pair.extend((0..b).map(|i| cmp.eval(lane(x, i), lane(y, i))));
            if any_lanes {
                acc.iter_mut().zip(&pair).for_each(|(r, &p)| *r &= p);
            } else {
                acc.extend_from_slice(&pair);
                any_lanes = true;
            }
            self.guard_compare(cmp, x, y, &pair);
        }
        let out = if uniform_false {
            Ok(Value::FALSE)
        } else if !any_lanes {
            Ok(Value::TRUE)
        } else {
            self.make_bool(program, node, &acc)
        };
        self.scratch = (acc, pair);
        out
    }

    /// Records that `x cmp y` came out as `pair` (per lane) for the replay to re-check.
    pub(super) fn guard_compare(&mut self, cmp: Cmp, x: Value, y: Value, pair: &[bool]) {
        if !self.record {
            return;
        }
        let (outcome, bits) = match self.classify(pair) {
            Classified::All(outcome) => (Some(outcome), 0),
            Classified::Mixed(..) => {
                let bits = self.tape.outcomes.len() as u32;
                self.tape.outcomes.extend_from_slice(pair);
                (None, bits)
            }
        };
        let (form, a, b) = self.tape_operands(x, y);
        self.guard(Check::Compare {
            cmp,
            form,
            a,
            b,
            outcome,
            bits,
        });
    }

    /// Records a guard over the active lanes at the current tape position.
    pub(super) fn guard(&mut self, check: Check) {
        if self.record {
            let (pos, lanes) = (self.tape.nodes.len() as u32, self.active);
            self.tape.guards.push(Guard { pos, lanes, check });
        }
    }

    /// A boolean from per-lane outcomes: a constant when every lane agrees.
    pub(super) fn make_bool(
        &mut self,
        program: &Program,
        node: NodeId,
        lanes: &[bool],
    ) -> Result<Value> {
        match lanes.first() {
            Some(&f) if lanes.iter().all(|&x| x == f) => Ok(Value::boolean(f)),
            None => Ok(Value::TRUE),
            _ => {
                let bytes = self.memory(self.payload.bytes()) + lanes.len() as u64;
                if bytes > self.limits.payload_bytes {
                    return Err(self.limit(
                        program,
                        node,
                        "payload bytes",
                        self.limits.payload_bytes,
                    ));
                }
                Ok(Value {
                    tag: tag::BOOLS,
                    aux: 0,
                    slot: self.payload.alloc_bools(lanes),
                })
            }
        }
    }

    /// How per-lane booleans come out over the active lanes.
    pub(super) fn classify(&self, lanes: &[bool]) -> Classified {
        let (t, f): (Vec<u32>, Vec<u32>) = match self.lane_sets.get(self.active) {
            Some(active) => active.iter().partition(|&&l| lanes[l as usize]),
            None => (0..lanes.len() as u32).partition(|&l| lanes[l as usize]),
        };
        match (t.is_empty(), f.is_empty()) {
            (_, true) => Classified::All(true),
            (true, _) => Classified::All(false),
            _ => Classified::Mixed(t, f),
        }
    }

    /// Whether a test value is true in every active lane, for the prelude procedures whose
    /// result's structure depends on it (`filter`, `assoc`, `member`): lanes that disagree there
    /// are a divergence error. (`if` splits instead; see `merge.rs`.)
    pub(super) fn truth(&self, program: &Program, node: NodeId, v: Value) -> Result<bool> {
        if v.tag != tag::BOOLS {
            return Ok(!v.is_false());
        }
        match self.classify(self.payload.bool_lanes(v.slot)) {
            Classified::All(outcome) => Ok(outcome),
            Classified::Mixed(t, f) => Err(self.error(
                program,
                node,
                ErrorKind::Divergence,
                format!(
                    "lanes diverge at this test: it is true in lanes {} and false in lanes {}",
                    lane_list(&t),
                    lane_list(&f)
                ),
            )),
        }
    }

    /// A number read as structure (an index): the same in every active lane, finite, ≥ 0,
    /// truncated toward zero (docs/language-reference.md §6.5).
    pub(super) fn structural_index(
        &mut self,
        program: &Program,
        node: NodeId,
        what: &str,
        v: Value,
    ) -> Result<usize> {
        let x: R = match v.tag {
            tag::CONST => v.const_value(),
            tag::NUM => {
                let xs = self.payload.lane_values(v.slot);
                let active = self.active_lanes();
                let x0 = xs[active[0] as usize];
                if active
                    .iter()
                    .any(|&l| xs[l as usize] != x0 && !(xs[l as usize].is_nan() && x0.is_nan()))
                {
                    return Err(self.error(
                        program,
                        node,
                        ErrorKind::Divergence,
                        format!("{what} differs across lanes; it must be the same in every lane"),
                    ));
                }
                x0
            }
            _ => {
                return Err(self.error(
                    program,
                    node,
                    ErrorKind::Type,
                    format!("{what} must be a number, got {}", v.kind_name()),
                ));
            }
        };
        if !x.is_finite() || x < R::zero() {
            return Err(self.error(
                program,
                node,
                ErrorKind::Shape,
                format!("{what} must be finite and ≥ 0, got {x}"),
            ));
        }
        let index = x.trunc().to_f64() as usize;
        if v.tag == tag::NUM {
            let value = index as u64;
            self.guard(Check::Index {
                slot: v.slot,
                value,
            });
        }
        Ok(index)
    }
}

/// Per-lane booleans over the active lanes: all one way, or the true and false lanes.
pub(super) enum Classified {
    All(bool),
    Mixed(Vec<u32>, Vec<u32>),
}

/// "0, 2, 5" (at most 8 lanes, then "…").
pub(super) fn lane_list(l: &[u32]) -> String {
    let mut s: Vec<String> = l.iter().take(8).map(u32::to_string).collect();
    if l.len() > 8 {
        s.push(format!("… ({} lanes)", l.len()));
    }
    s.join(", ")
}
