//! `eq?`/`eqv?` and `equal?` (docs/language-reference.md §6.4): per lane where numbers or booleans
//! are compared, identity for every other value, structural for pairs.

use super::Vm;
use crate::error::Result;
use crate::prims::compare::Cmp;
use crate::program::{NodeId, Program};
use crate::real::Real;
use crate::value::{Value, tag};

impl<R: Real> Vm<R> {
    pub(super) fn eqv(
        &mut self,
        program: &Program,
        node: NodeId,
        a: Value,
        b: Value,
    ) -> Result<Value> {
        if a.is_number() && b.is_number() {
            return self.compare(program, node, Cmp::Eq, &[a, b]);
        }
        if a.is_boolean() && b.is_boolean() {
            if a.tag == tag::BOOL && b.tag == tag::BOOL {
                return Ok(Value::boolean(a.aux == b.aux));
            }
            let lanes = self.payload.lanes;
            let get = |v: Value, i: usize| {
                if v.tag == tag::BOOL {
                    v.aux != 0
                } else {
                    self.payload.bool_lanes(v.slot)[i]
                }
            };
            let same: Vec<bool> = (0..lanes).map(|i| get(a, i) == get(b, i)).collect();
            return self.make_bool(program, node, &same);
        }
        Ok(Value::boolean(
            a.tag == b.tag && a.aux == b.aux && a.slot == b.slot && a.tag != tag::UNBOUND,
        ))
    }

    /// Structural equality: the per-lane conjunction over every pair of leaves compared.
    pub(super) fn equal(
        &mut self,
        program: &Program,
        node: NodeId,
        a: Value,
        b: Value,
    ) -> Result<Value> {
        let lanes = self.payload.lanes;
        let mut acc: Option<Vec<bool>> = None;
        let mut work = vec![(a, b)];
        while let Some((x, y)) = work.pop() {
            if let (Some([xa, xd]), Some([ya, yd])) = (self.heap.pair(x), self.heap.pair(y)) {
                work.push((xd, yd));
                work.push((xa, ya));
                continue;
            }
            let r = if x.is_tensor() && y.is_tensor() {
                self.equal_tensors(program, node, x, y)?
            } else {
                self.eqv(program, node, x, y)?
            };
            match r.tag {
                tag::BOOL if r.aux == 0 => return Ok(Value::FALSE),
                tag::BOOLS => {
                    let lanes_r = self.payload.bool_lanes(r.slot);
                    let acc = acc.get_or_insert_with(|| vec![true; lanes]);
                    for (o, &l) in acc.iter_mut().zip(lanes_r) {
                        *o &= l;
                    }
                }
                _ => {}
            }
        }
        match acc {
            None => Ok(Value::TRUE),
            Some(v) => self.make_bool(program, node, &v),
        }
    }

    /// Two tensors are `equal?` in a lane when they have one shape and equal elements there.
    fn equal_tensors(
        &mut self,
        program: &Program,
        node: NodeId,
        x: Value,
        y: Value,
    ) -> Result<Value> {
        let (Some(sx), Some(sy)) = (self.shape(x), self.shape(y)) else {
            return Ok(Value::FALSE);
        };
        if sx != sy {
            return Ok(Value::FALSE);
        }
        let lanes = self.payload.lanes;
        let mut same = vec![true; lanes];
        let mut pair = Vec::with_capacity(lanes);
        for e in 0..sx.len() {
            let xs = self.payload.lane_values(x.slot + e);
            let ys = self.payload.lane_values(y.slot + e);
            pair.clear();
            pair.extend(xs.iter().zip(ys).map(|(&u, &v)| u == v));
            same.iter_mut().zip(&pair).for_each(|(o, &p)| *o &= p);
            // Each element pair is a comparison the result depends on.
            let (ex, ey) = (Value::lanes(x.slot + e), Value::lanes(y.slot + e));
            self.guard_compare(Cmp::Eq, ex, ey, &pair);
        }
        self.make_bool(program, node, &same)
    }
}
