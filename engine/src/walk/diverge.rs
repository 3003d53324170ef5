//! Divergent lanes: tests decided per lane, split branches and per-lane merges
//! (docs/language-reference.md §9).
//!
//! A test is classified over the active lanes. When every active lane agrees, the branch is an
//! ordinary tail step. When they disagree, the walk runs `then` with only the then-lanes active,
//! then `else` with only the else-lanes active, and merges the two results per lane (§9.4): two
//! numbers become an [`Op::Select`] tape node whose VJP sends each lane's adjoint to the side that
//! lane took, so a value computed on an untaken side (even NaN or ±inf) never reaches another
//! lane's gradient. Structure cannot differ across lanes: two different pairs, closures, kinds or
//! shapes at a merge are a divergence error naming the form.
//!
//! **Lane independence** (§9.1) needs one more rule. A merge routes its adjoint to the side a lane
//! took when the backward pass reaches the merge, whereas a lone run would have added each later
//! use's contribution straight into that value's adjoint as it came: when the value existed before
//! the branch (a variable, a list element, a loop variable at the exit) and is also used elsewhere,
//! the two orders round differently. So an `if` decided the same way in every lane also copies an
//! older number or tensor it returns ([`Kont::IfExit`]), and a split merges even a value that is
//! the same on both sides. A value made inside the branch needs neither: its adjoint is still zero
//! when the merge or copy runs, and adding to zero is exact.
//!
//! A split branch is not a tail position: a [`Kont::Merge`] waits below both sides, and tail calls
//! inside a side may not pop the frames beneath it. A loop whose exit test splits therefore
//! continues with the remaining lanes one nesting level deeper (§9.3); the nesting counts toward
//! the recursion-depth limit.

use super::kont::Kont;
use super::numeric::Classified;
use super::{Next, Vm};
use crate::error::{ErrorKind, Result};
use crate::prims::scalar::Op;
use crate::program::{Node, NodeId, Program};
use crate::real::Real;
use crate::tape::{BranchGuard, TapeNode};
use crate::value::{Value, tag};

/// A split branch in progress.
#[derive(Clone, Copy, Debug)]
pub struct Merge {
    pub node: NodeId,
    pub env: u32,
    /// The frame floor and active set to restore after the merge.
    pub height: u32,
    pub active: u32,
    pub then_set: u32,
    pub else_set: u32,
    /// The then-side's value, once it has one.
    pub then_value: Option<Value>,
}

/// How a test came out over the active lanes.
pub(super) enum Split {
    All(bool),
    Mixed { then_set: u32, else_set: u32 },
}

impl<R: Real> Vm<R> {
    /// Decides `if` node `node` on `test`: a tail step when the active lanes agree, a split
    /// branch when they do not.
    pub(super) fn branch(&mut self, program: &Program, node: NodeId, test: Value) -> Result<Next> {
        let Node::If { then, els, .. } = program.node(node) else {
            return Ok(Next::Return(test));
        };
        match self.split(node, test) {
            Split::All(b) => {
                if self.record {
                    self.watch_exit(node);
                }
                Ok(Next::Eval(if b { then } else { els }))
            }
            Split::Mixed { then_set, else_set } => {
                self.nest(program, node)?;
                self.merges.push(Merge {
                    node,
                    env: self.env,
                    height: self.height,
                    active: self.active,
                    then_set,
                    else_set,
                    then_value: None,
                });
                let idx = (self.merges.len() - 1) as u32;
                self.push(Kont::Merge { idx });
                self.height = self.heap.frames.len() as u32;
                self.active = then_set;
                Ok(Next::Eval(then))
            }
        }
    }

    /// Waits for the value of a uniformly decided `if`; an `if` in tail position of another
    /// shares its wait (so tail calls stay in constant space) and raises its watermark.
    fn watch_exit(&mut self, node: NodeId) {
        let watermark = self.payload.slots() as u32;
        match self.konts.last_mut() {
            Some(Kont::IfExit {
                node: n,
                watermark: w,
            }) => {
                *n = node;
                *w = watermark;
            }
            _ => self.push(Kont::IfExit { node, watermark }),
        }
    }

    /// The value of a uniformly decided `if`: copied when it is a number or tensor older than the
    /// decision, as a merge would route it.
    pub(super) fn if_exit(
        &mut self,
        program: &Program,
        node: NodeId,
        watermark: u32,
        v: Value,
    ) -> Result<Next> {
        if !self.differentiable(v) || v.slot >= watermark {
            return Ok(Next::Return(v));
        }
        Ok(Next::Return(self.copy_value(program, node, v)?))
    }

    /// Whether `v` is a number or tensor in payload slots (one that can carry an adjoint).
    pub(super) fn differentiable(&self, v: Value) -> bool {
        v.tag == tag::NUM || self.shape(v).is_some()
    }

    /// Classifies a test over the active lanes, recording a branch guard for per-lane tests.
    pub(super) fn split(&mut self, node: NodeId, test: Value) -> Split {
        if test.tag != tag::BOOLS {
            return Split::All(!test.is_false());
        }
        let (outcome, then_set, out) = match self.classify(self.payload.bool_lanes(test.slot)) {
            Classified::All(b) => (Some(b), 0, Split::All(b)),
            Classified::Mixed(t, f) => {
                let then_set = self.lane_sets.add(t);
                let else_set = self.lane_sets.add(f);
                (None, then_set, Split::Mixed { then_set, else_set })
            }
        };
        self.tape.branches.push(BranchGuard {
            node,
            lanes: self.active,
            outcome,
            then: then_set,
        });
        out
    }

    /// Continues a split branch with the value of the side that just finished.
    pub(super) fn merge_resume(&mut self, program: &Program, idx: u32, v: Value) -> Result<Next> {
        self.heap.pop_frames(self.height);
        let Some(&st) = self.merges.get(idx as usize) else {
            return Ok(Next::Return(v));
        };
        if st.then_value.is_none() {
            self.merges[idx as usize].then_value = Some(v);
            self.env = st.env;
            self.height = self.heap.frames.len() as u32;
            self.active = st.else_set;
            self.push(Kont::Merge { idx });
            let Node::If { els, .. } = program.node(st.node) else {
                return Ok(Next::Return(v));
            };
            return Ok(Next::Eval(els));
        }
        self.merges.pop();
        self.env = st.env;
        self.height = st.height;
        self.active = st.active;
        self.depth -= 1;
        let then_value = st.then_value.unwrap_or(Value::NIL);
        Ok(Next::Return(
            self.merge_values(program, &st, then_value, v)?,
        ))
    }

    /// The per-lane merge of a split branch's two results (docs/language-reference.md §9.4).
    pub(super) fn merge_values(
        &mut self,
        program: &Program,
        st: &Merge,
        a: Value,
        b: Value,
    ) -> Result<Value> {
        if a == b && !self.differentiable(a) {
            // The same structure or constant on both sides. (The same number or tensor is merged
            // like any other, as a lone run copies it: see the module docs.)
            return Ok(a);
        }
        if a.is_number() && b.is_number() {
            return self.select(program, st, a, b);
        }
        if a.is_boolean() && b.is_boolean() {
            let mut out = vec![false; self.payload.lanes];
            let lane = |v: Value, l: usize| {
                if v.tag == tag::BOOL {
                    v.aux != 0
                } else {
                    self.payload.bool_lanes(v.slot)[l]
                }
            };
            for (set, v) in [(st.then_set, a), (st.else_set, b)] {
                for &l in self.lane_sets.get(set).unwrap_or(&[]) {
                    out[l as usize] = lane(v, l as usize);
                }
            }
            return self.make_bool(program, st.node, &out);
        }
        if let (Some(sa), Some(sb)) = (self.shape(a), self.shape(b))
            && sa == sb
        {
            let first = self.payload.slots() as u32;
            for e in 0..sa.len() {
                self.select(
                    program,
                    st,
                    Value::lanes(a.slot + e),
                    Value::lanes(b.slot + e),
                )?;
            }
            return Ok(self.tensor(sa, first));
        }
        let (da, db) = (self.describe(a), self.describe(b));
        let why = if da == db {
            format!(
                "different {}s",
                da.trim_start_matches("a ").trim_start_matches("an ")
            )
        } else {
            format!("{da} and {db}")
        };
        let then_lanes = self
            .lane_sets
            .get(st.then_set)
            .map(super::numeric::lane_list)
            .unwrap_or_default();
        let else_lanes = self
            .lane_sets
            .get(st.else_set)
            .map(super::numeric::lane_list)
            .unwrap_or_default();
        Err(self.error(
            program,
            st.node,
            ErrorKind::Divergence,
            format!(
                "lanes diverge at this form: its test is true in lanes {then_lanes} and false in lanes {else_lanes}, \
                 and the two sides return {why}, which cannot be merged per lane"
            ),
        ))
    }

    /// A number that takes the then-lanes from `a` and the else-lanes from `b`.
    fn select(&mut self, program: &Program, st: &Merge, a: Value, b: Value) -> Result<Value> {
        let out = self.alloc_slots(program, 1, st.node)?;
        let lanes = self.payload.lanes;
        for (set, v) in [(st.then_set, a), (st.else_set, b)] {
            let members = self.lane_sets.get(set).unwrap_or(&[]);
            let primal = &mut self.payload.primal;
            for &l in members {
                let l = l as usize;
                primal[out as usize * lanes + l] = if v.tag == tag::CONST {
                    v.const_value::<R>()
                } else {
                    primal[v.slot as usize * lanes + l]
                };
            }
        }
        let (form, x, y) = self.tape_operands(a, b);
        let node = TapeNode {
            op: Op::Select,
            form,
            lanes: st.then_set,
            out,
            a: x,
            b: y,
            aux: st.else_set,
        };
        self.record(program, st.node, node)?;
        Ok(Value::lanes(out))
    }
}
