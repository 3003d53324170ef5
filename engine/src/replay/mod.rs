//! Replay: walk once, then recompute the tape's numbers for new inputs (docs/architecture.md
//! "From text to numbers").
//!
//! A recorded walk leaves everything the numbers need in the evaluator: the tape (every numeric
//! node in the order the walk ran it, with its operand forms and lane set), the lane sets of its
//! split branches, and the payload with its leaves (inputs and constant tensor elements). Between
//! calibration steps only the parameter values change, so [`Vm::replay`] writes the new input
//! values into their leaf slots and runs the nodes again, through the same kernels and over the
//! same lane slices as the walk — the outputs are the walk's outputs bit for bit.
//!
//! That holds only while the walk would take the same path, so the walk also recorded every
//! decision it took on numbers as a [`Guard`]: each comparison (branch tests, loop exits,
//! `equal?` on numbers) with its per-lane outcome, and each number read as structure (`ref`,
//! `list-ref`, sizes) with the index it gave. The replay re-checks each guard as soon as the
//! nodes before it have run. A lane whose guard fails is reported (its values are not a walk's
//! and must be walked again); every other lane is exact, because lanes never mix
//! (docs/language-reference.md §9.1). Nothing here is compiled: one fixed loop interprets the tape
//! as data.
//!
//! Structure that came from the inputs themselves — a constant input folded into the walk, an
//! input's kind or matrix shape, the lane count — is checked before anything runs; any change
//! there makes the tape [`Replay::Stale`].

pub(crate) mod flat;
mod runs;

use crate::bindings::{Bindings, Input};
use crate::lanes::{LaneSets, Layout};
use crate::payload::Payload;
use crate::prims::kernels::Gather;
use crate::prims::linalg::{self, Lanes, Work};
use crate::prims::scalar::Op;
use crate::program::Program;
use crate::real::Real;
use crate::tape::{Check, ExtArg, Form, Guard, GuardKind, Tape, TapeNode};
use crate::value::{Shape, Value, tag};
use crate::walk::{Column, Operand, Vm, forward_lanes, run_elementwise};

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every guard held in every lane: the result (the walk's value, recomputed) equals a fresh
    /// walk's, bit for bit, and [`Vm::backward`] may follow.
    Held(Value),
    /// Guards failed in some lanes. The other lanes equal a fresh walk's; the listed ones do
    /// not and must be walked again.
    Partial {
        result: Value,
        /// The lanes whose guards failed, ascending.
        lanes: Vec<u32>,
        /// The guards that failed in at least one lane, by kind.
        failures: Vec<(GuardKind, u32)>,
    },
    /// The tape cannot be replayed for these inputs (no recorded walk, another lane count, or
    /// an input whose structure changed): walk instead.
    Stale(&'static str),
}

impl<R: Real> Vm<R> {
    /// Whether the last evaluation recorded a tape and finished, so [`Vm::replay`] can run.
    pub fn can_replay(&self) -> bool {
        self.replayable.is_some()
    }

    /// Recomputes the last recorded walk's numbers for `bindings` (the same program, the same
    /// lane count; only input values may differ) and re-checks its guards. See the module docs.
    pub fn replay(&mut self, program: &Program, bindings: &Bindings<R>) -> Replay {
        let Some(result) = self.replayable else {
            return Replay::Stale("no recorded walk to replay");
        };
        if let Err(why) = self.rebind_inputs(program, bindings) {
            self.replayable = None;
            return Replay::Stale(why);
        }
        self.payload.has_grads = false;
        if self.payload.lanes == 1 && self.lane_sets.is_empty() && self.flat.is_none() {
            self.flat = flat::Flat::build(&self.tape);
        }
        let mut run = Runner {
            tape: &self.tape,
            payload: &mut self.payload,
            sets: &self.lane_sets,
            gather: &mut self.gather,
            work: &mut self.work,
        };
        // One lane runs its unrolled tape; if a guard fails there, the per-node loop below runs
        // again and reports the failure in full.
        if let Some(flat) = &self.flat
            && flat.forward(&mut run)
        {
            return Replay::Held(result);
        }
        // Per lane: whether a guard failed there (allocated at the first failure).
        let mut failed: Vec<bool> = Vec::new();
        let mut failures: Vec<(GuardKind, u32)> = Vec::new();
        let mut done = 0;
        for g in &self.tape.guards {
            run.nodes(done, g.pos as usize);
            done = g.pos as usize;
            if !run.check(g, &mut failed) {
                match failures.iter_mut().find(|(k, _)| *k == g.check.kind()) {
                    Some((_, n)) => *n += 1,
                    None => failures.push((g.check.kind(), 1)),
                }
            }
        }
        run.nodes(done, self.tape.nodes.len());
        if failures.is_empty() {
            return Replay::Held(result);
        }
        failures.sort();
        let lanes = (0..failed.len() as u32)
            .filter(|&l| failed[l as usize])
            .collect();
        Replay::Partial {
            result,
            lanes,
            failures,
        }
    }

    /// Writes the new input values into their leaf slots, or says which structure changed.
    pub(crate) fn rebind_inputs(
        &mut self,
        program: &Program,
        bindings: &Bindings<R>,
    ) -> Result<(), &'static str> {
        let lanes = self.payload.lanes;
        if program.inputs.len() != self.inputs.len() {
            return Err("another program");
        }
        // Bindings that hold exactly the program's inputs (the usual case) are checked for the
        // lane count one by one as they are written; any others, all at once first.
        let exact = bindings.items.len() == program.inputs.len();
        if !exact && bindings.lane_count().ok() != Some(lanes) {
            return Err("the lane count changed");
        }
        let mut per_lane = false;
        for ((i, name), &v) in program.inputs.iter().enumerate().zip(&self.inputs) {
            let Some(b) = bindings.for_input(i, name) else {
                return Err("an input is no longer bound");
            };
            // The commonest input of a calibration step: a parameter number in one lane.
            if let (Input::Scalar(x), true, 1) = (&b.value, b.param && v.tag == tag::NUM, lanes) {
                self.payload.primal[v.slot as usize] = *x;
                continue;
            }
            if exact {
                match b.value.fits(lanes) {
                    Some(p) => per_lane |= p,
                    None => return Err("the lane count changed"),
                }
            }
            // The walk folded a constant input and bound the others to slots (`Vm::bind`):
            // a constant must be unchanged, the rest keep their kind and shape.
            let same_kind = match &b.value {
                Input::Scalar(x) if !b.param => {
                    let c = v.const_value::<R>();
                    if v.tag != tag::CONST || !(c == *x || (c.is_nan() && x.is_nan())) {
                        return Err("a constant input changed");
                    }
                    continue;
                }
                Input::Scalar(_) | Input::Lanes(_) => v.tag == tag::NUM,
                Input::Matrix { rows, cols, .. } | Input::LaneMatrices { rows, cols, .. } => {
                    v.tag != tag::NUM
                        && v.tag != tag::CONST
                        && self.shape(v) == Some(Shape::Matrix(*rows as u32, *cols as u32))
                }
            };
            if !same_kind {
                return Err("an input changed kind or shape");
            }
            self.payload.write_input(v.slot, &b.value);
        }
        if exact && !per_lane && lanes != 1 {
            return Err("the lane count changed");
        }
        Ok(())
    }
}

/// Whether a one-lane node can run through its op's scalar formula: a scalar op, or an
/// elementwise one whose lane kernel has no vectorized variant (`exp`, `sin`, `cos` and `log`
/// over a tensor take the kernel's path, exactly as the walk did).
#[inline(always)]
fn one_lane_formula(n: &TapeNode) -> bool {
    match n.op {
        Op::Select | Op::Ext => false,
        op if op.has_vector_kernel() => n.aux == 0,
        op => !op.is_linalg(),
    }
}

/// The replay loop's borrows of the evaluator.
struct Runner<'a, R: Real> {
    tape: &'a Tape<R>,
    payload: &'a mut Payload<R>,
    sets: &'a LaneSets,
    gather: &'a mut Gather<R>,
    work: &'a mut Work<R>,
}

impl<R: Real> Runner<'_, R> {
    /// Runs nodes `from..to` in order.
    fn nodes(&mut self, from: usize, to: usize) {
        let one = self.payload.lanes == 1 && self.sets.is_empty();
        for n in &self.tape.nodes[from..to] {
            if one && one_lane_formula(n) {
                self.scalar_one_lane(n);
            } else {
                self.node(n);
            }
        }
    }

    /// An elementwise node in one lane, element by element through the op's scalar formula
    /// (what `num1`/`num2` run at B = 1, and what the lane kernels run per lane: same bits).
    #[inline(always)]
    fn scalar_one_lane(&mut self, n: &TapeNode) {
        let x = &mut self.payload.primal;
        let c = &self.tape.consts;
        let (a, b) = (n.a as usize, n.b as usize);
        for e in 0..n.elements() as usize {
            x[n.out as usize + e] = match n.form {
                Form::Unary => n.op.eval1(x[a + e]),
                Form::SlotSlot => n.op.eval2(x[a + e], x[b + e]),
                Form::SlotConst => n.op.eval2(x[a + e], c[b]),
                Form::ConstSlot => n.op.eval2(c[a], x[b + e]),
                Form::ConstConst => n.op.eval2(c[a], c[b]),
            };
        }
    }

    /// One node over its lanes, sliced exactly as the walk sliced it.
    fn node(&mut self, n: &TapeNode) {
        let b = self.payload.lanes;
        if n.op == Op::Select {
            return self.select(n);
        }
        let layout = self.sets.layout(n.lanes);
        if n.op == Op::Ext {
            return self.ext(n, layout);
        }
        if n.op.is_linalg() {
            let node = self.tape.linalg(n);
            let (primal, work) = (&mut self.payload.primal, &mut *self.work);
            layout.for_ranges(b, |s, e| {
                linalg::forward(&node, primal, Lanes { b, s, e }, true, work)
            });
            return;
        }
        let operand = |slot: u32, is_const: bool| {
            if is_const {
                Operand::Const(self.tape.consts[slot as usize])
            } else {
                Operand::Slots(slot)
            }
        };
        let x = operand(n.a, matches!(n.form, Form::ConstSlot | Form::ConstConst));
        let y = (n.form != Form::Unary)
            .then(|| operand(n.b, matches!(n.form, Form::SlotConst | Form::ConstConst)));
        let primal = &mut self.payload.primal;
        run_elementwise(
            primal,
            b,
            (n.op, n.out, n.elements()),
            (x, y),
            layout,
            self.gather,
        );
    }

    /// A merge: the then-lanes from `a`, the else-lanes from `b`.
    fn select(&mut self, n: &TapeNode) {
        let b = self.payload.lanes;
        let consts = &self.tape.consts;
        let primal = &mut self.payload.primal;
        let sides = [
            (
                n.lanes,
                n.a,
                matches!(n.form, Form::ConstSlot | Form::ConstConst),
            ),
            (
                n.aux,
                n.b,
                matches!(n.form, Form::SlotConst | Form::ConstConst),
            ),
        ];
        for (set, operand, is_const) in sides {
            for &l in self.sets.get(set).unwrap_or(&[]) {
                let l = l as usize;
                primal[n.out as usize * b + l] = if is_const {
                    consts[operand as usize]
                } else {
                    primal[operand as usize * b + l]
                };
            }
        }
    }

    /// A custom primitive's forward kernel over the node's lanes.
    fn ext(&mut self, n: &TapeNode, layout: Layout) {
        let Some(call) = self.tape.ext.get(n.a as usize) else {
            return;
        };
        let Some(prim) = self.tape.primitives.get(call.prim as usize) else {
            return;
        };
        let args = &self.tape.ext_args[call.start as usize..(call.start + call.len) as usize];
        let cols: Vec<Column<R>> = args
            .iter()
            .map(|a| match *a {
                ExtArg::Slot(s) | ExtArg::Data(s) => Column::Slot(s),
                ExtArg::Const(c) => Column::Const(self.tape.consts[c as usize]),
            })
            .collect();
        forward_lanes(&**prim, &cols, self.payload, layout, n.out);
    }

    /// Re-checks one guard over its lanes, marking the lanes where it no longer holds; whether
    /// it held in all of them.
    fn check(&self, g: &Guard, failed: &mut Vec<bool>) -> bool {
        let b = self.payload.lanes;
        let x = &self.payload.primal;
        let consts = &self.tape.consts;
        let value = |slot: u32, is_const: bool, l: usize| {
            if is_const {
                consts[slot as usize]
            } else {
                x[slot as usize * b + l]
            }
        };
        let holds = |l: usize| -> bool {
            match g.check {
                Check::Compare {
                    cmp,
                    form,
                    a,
                    b: y,
                    outcome,
                    bits,
                } => {
                    let ca = matches!(form, Form::ConstSlot | Form::ConstConst);
                    let cb = matches!(form, Form::SlotConst | Form::ConstConst);
                    let got = cmp.eval(value(a, ca, l), value(y, cb, l));
                    let want = outcome.unwrap_or_else(|| self.tape.outcomes[bits as usize + l]);
                    got == want
                }
                Check::Index { slot, value: want } => {
                    let v = x[slot as usize * b + l];
                    v.is_finite() && v >= R::zero() && v.trunc().to_f64() as u64 == want
                }
            }
        };
        let mut all = true;
        let mut visit = |l: usize| {
            if !holds(l) {
                if failed.is_empty() {
                    failed.resize(b, false);
                }
                failed[l] = true;
                all = false;
            }
        };
        match self.sets.get(g.lanes) {
            None => (0..b).for_each(&mut visit),
            Some(ls) => ls.iter().for_each(|&l| visit(l as usize)),
        }
        all
    }
}
