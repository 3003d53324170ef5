//! The prelude procedures that call back into the program: `map`, `filter`, `fold-left`,
//! `fold-right` and `reduce` (docs/language-reference.md §6.8).
//!
//! Each keeps its state in a [`Native`] record and makes ordinary non-tail calls through the
//! walk, so its calls count toward every limit, its tests are decided over the active lanes, and
//! no host recursion is involved. Errors report the span of the program's call to the procedure.

use super::kont::{Kont, Native, NativeKind};
use super::{Next, Vm};
use crate::error::{ErrorKind, Result};
use crate::prims::Prim;
use crate::prims::lists;
use crate::program::{NodeId, Program};
use crate::real::Real;
use crate::value::Value;

impl<R: Real> Vm<R> {
    pub(super) fn native_start(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        args: usize,
        drop: usize,
    ) -> Result<Next> {
        let a: Vec<Value> = self.vals[args..].to_vec();
        self.vals.truncate(drop);
        let f = a[0];
        if !f.is_procedure() {
            return Err(self.error(
                program,
                node,
                ErrorKind::Type,
                format!(
                    "`{}`: the first operand must be a procedure, got {}",
                    p.name(),
                    f.kind_name()
                ),
            ));
        }
        let list_at = if matches!(p, Prim::FoldLeft | Prim::FoldRight | Prim::Reduce) {
            2
        } else {
            1
        };
        for &l in &a[list_at..] {
            self.proper_list(program, node, p, l)?;
        }
        let (kind, first) = match p {
            Prim::Map => (
                NativeKind::Map {
                    lists: a[1..].to_vec(),
                    acc: Vec::new(),
                },
                None,
            ),
            Prim::Filter => (
                NativeKind::Filter {
                    rest: a[1],
                    x: Value::NIL,
                    acc: Vec::new(),
                },
                None,
            ),
            Prim::FoldLeft => (NativeKind::FoldLeft { rest: a[2] }, Some(a[1])),
            Prim::FoldRight => {
                let items = self.proper_list(program, node, p, a[2])?;
                let left = items.len();
                (NativeKind::FoldRight { items, left }, Some(a[1]))
            }
            _ => match self.heap.pair(a[2]) {
                None => return Ok(Next::Return(a[1])),
                Some([x1, rest]) => (NativeKind::Reduce { rest }, Some(x1)),
            },
        };
        self.natives.push(Native { kind, f, node });
        let idx = (self.natives.len() - 1) as u32;
        self.native_step(program, idx, first)
    }

    pub(super) fn native_resume(&mut self, program: &Program, idx: u32, v: Value) -> Result<Next> {
        self.native_step(program, idx, Some(v))
    }

    /// Advances a prelude procedure with the value of its last call (or its initial value).
    fn native_step(&mut self, program: &Program, idx: u32, v: Option<Value>) -> Result<Next> {
        let Some(mut st) = self.natives.pop() else {
            return Ok(Next::Return(Value::NIL));
        };
        let node = st.node;
        let mut call_args: Vec<Value> = Vec::new();
        let done: Option<Value> = match &mut st.kind {
            NativeKind::Map { lists, acc } => {
                if let Some(v) = v {
                    acc.push(v);
                }
                let mut cars = Vec::with_capacity(lists.len());
                for l in lists.iter_mut() {
                    match self.heap.pair(*l) {
                        Some([a, d]) => {
                            cars.push(a);
                            *l = d;
                        }
                        None => break,
                    }
                }
                if cars.len() < lists.len() {
                    let out = lists::from_slice(&mut self.heap, acc, Value::NIL);
                    self.check_heap(program, node)?;
                    Some(out)
                } else {
                    call_args = cars;
                    None
                }
            }
            NativeKind::Filter { rest, x, acc } => {
                if let Some(v) = v
                    && self.truth(program, node, v)?
                {
                    acc.push(*x);
                }
                match self.heap.pair(*rest) {
                    Some([a, d]) => {
                        *x = a;
                        *rest = d;
                        call_args.push(a);
                        None
                    }
                    None => {
                        let out = lists::from_slice(&mut self.heap, acc, Value::NIL);
                        self.check_heap(program, node)?;
                        Some(out)
                    }
                }
            }
            NativeKind::FoldLeft { rest } => {
                let acc = v.unwrap_or(Value::NIL);
                match self.heap.pair(*rest) {
                    Some([a, d]) => {
                        *rest = d;
                        call_args.extend([acc, a]);
                        None
                    }
                    None => Some(acc),
                }
            }
            NativeKind::FoldRight { items, left } => {
                let acc = v.unwrap_or(Value::NIL);
                if *left == 0 {
                    Some(acc)
                } else {
                    *left -= 1;
                    call_args.extend([items[*left], acc]);
                    None
                }
            }
            NativeKind::Reduce { rest } => {
                let acc = v.unwrap_or(Value::NIL);
                match self.heap.pair(*rest) {
                    Some([a, d]) => {
                        *rest = d;
                        call_args.extend([a, acc]);
                        None
                    }
                    None => Some(acc),
                }
            }
        };
        if let Some(out) = done {
            return Ok(Next::Return(out));
        }
        let f = st.f;
        self.natives.push(st);
        debug_assert_eq!(self.natives.len() as u32 - 1, idx);
        self.push(Kont::Native { idx });
        let base = self.vals.len();
        self.vals.extend(call_args);
        self.apply(program, node, f, base, base, false)
    }
}
