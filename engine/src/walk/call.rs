//! Calls: entering closures, applying primitives, and the prelude procedures that call back
//! into the program (`apply`, `map`, `filter`, `fold-left`, `fold-right`, `reduce`).
//!
//! A call's operands sit on the value stack. Entering a closure pushes a frame and, unless the
//! call is in tail position, a [`Kont::Return`]; a tail call first pops the frames of the
//! invocation it replaces. Prelude procedures keep their state in [`Native`] records and make
//! ordinary non-tail calls, so their calls count toward every limit like any other.

use super::kont::Kont;
use super::{Next, Vm};
use crate::error::{ErrorKind, Result};
use crate::prims::Prim;
use crate::prims::compare::Cmp;
use crate::prims::lists;
use crate::prims::scalar::Op;
use crate::program::{Node, NodeId, Program};
use crate::real::Real;
use crate::value::{Value, tag};

impl<R: Real> Vm<R> {
    /// Applies call `node` to the operands on the value stack.
    pub(super) fn call(&mut self, program: &Program, node: NodeId) -> Result<Next> {
        match program.node(node) {
            Node::PrimCall {
                prim, len, tail, ..
            } => {
                let base = self.vals.len() - len as usize;
                // The common case: two numbers or tensors through + - * / (what `arithmetic`
                // does for two operands, without the general dispatch).
                if len == 2 && matches!(prim, Prim::Add | Prim::Sub | Prim::Mul | Prim::Div) {
                    let (x, y) = (self.vals[base], self.vals[base + 1]);
                    let numeric = |v: Value| v.is_number() || v.is_tensor();
                    if numeric(x) && numeric(y) {
                        let op = match prim {
                            Prim::Add => Op::Add0,
                            Prim::Sub => Op::Sub,
                            Prim::Mul => Op::Mul,
                            _ => Op::Div,
                        };
                        self.vals.truncate(base);
                        return Ok(Next::Return(self.binary(program, node, op, x, y)?));
                    }
                }
                self.apply_prim(program, node, prim, base, base, tail)
            }
            Node::Call { len, tail, .. } => {
                let base = self.vals.len() - len as usize;
                let f = self.vals[base];
                self.apply(program, node, f, base + 1, base, tail)
            }
            _ => Ok(Next::Return(Value::NIL)),
        }
    }

    /// Calls `f` with the operands `vals[args..]`; afterwards the stack is cut back to `drop`.
    pub(super) fn apply(
        &mut self,
        program: &Program,
        node: NodeId,
        f: Value,
        args: usize,
        drop: usize,
        tail: bool,
    ) -> Result<Next> {
        match f.tag {
            tag::CLOSURE => self.enter(program, node, f.slot, args, drop, tail),
            tag::PRIM => match Prim::from_id(f.aux) {
                Some(p) => self.apply_prim(program, node, p, args, drop, tail),
                None => self.apply_ext(program, node, f.aux, args, drop),
            },
            _ => Err(self.error(
                program,
                node,
                ErrorKind::Type,
                format!("cannot call {}: it is not a procedure", f.kind_name()),
            )),
        }
    }

    fn enter(
        &mut self,
        program: &Program,
        node: NodeId,
        closure: u32,
        args: usize,
        drop: usize,
        tail: bool,
    ) -> Result<Next> {
        let c = self.heap.closures[closure as usize];
        let lambda = program.lambdas[c.lambda as usize];
        let argc = self.vals.len() - args;
        if argc != lambda.params as usize {
            let p = lambda.params;
            return Err(self.error(
                program,
                node,
                ErrorKind::Arity,
                format!(
                    "procedure takes {p} argument{}, got {argc}",
                    if p == 1 { "" } else { "s" }
                ),
            ));
        }
        if tail {
            self.step(program, node)?;
            self.heap.pop_frames(self.height);
        } else {
            self.nest(program, node)?;
            self.push(Kont::Return {
                env: self.env,
                height: self.height,
            });
            self.height = self.heap.frames.len() as u32;
        }
        let frame = self
            .heap
            .push_frame(c.env, lambda.frame_size, &self.vals[args..]);
        self.vals.truncate(drop);
        self.check_heap(program, node)?;
        self.env = frame;
        Ok(Next::Eval(lambda.body))
    }

    fn apply_prim(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        args: usize,
        drop: usize,
        tail: bool,
    ) -> Result<Next> {
        let argc = self.vals.len() - args;
        if !p.accepts(argc) {
            return Err(self.error(
                program,
                node,
                ErrorKind::Arity,
                format!("`{}` {}, got {argc}", p.name(), p.arity_text()),
            ));
        }
        match p {
            Prim::Apply => {
                let l = self.vals.pop().unwrap_or(Value::NIL);
                let Some(items) = lists::to_vec(&self.heap, l) else {
                    return Err(self.error(
                        program,
                        node,
                        ErrorKind::Type,
                        format!(
                            "`apply`: the last operand must be a proper list, got {}",
                            l.kind_name()
                        ),
                    ));
                };
                self.vals.extend(items);
                let f = self.vals[args];
                self.apply(program, node, f, args + 1, drop, tail)
            }
            Prim::Map | Prim::Filter | Prim::FoldLeft | Prim::FoldRight | Prim::Reduce => {
                self.native_start(program, node, p, args, drop)
            }
            _ => {
                let vals = std::mem::take(&mut self.vals);
                let out = self.prim_value(program, node, p, &vals[args..]);
                self.vals = vals;
                self.vals.truncate(drop);
                Ok(Next::Return(out?))
            }
        }
    }

    /// The value of a primitive that makes no calls.
    pub(super) fn prim_value(
        &mut self,
        program: &Program,
        node: NodeId,
        p: Prim,
        a: &[Value],
    ) -> Result<Value> {
        let unary = |p: Prim| -> Option<Op> {
            Some(match p {
                Prim::Sin => Op::Sin,
                Prim::Cos => Op::Cos,
                Prim::Tan => Op::Tan,
                Prim::Asin => Op::Asin,
                Prim::Acos => Op::Acos,
                Prim::Atan => Op::Atan,
                Prim::Sinh => Op::Sinh,
                Prim::Cosh => Op::Cosh,
                Prim::Tanh => Op::Tanh,
                Prim::Exp => Op::Exp,
                Prim::Log => Op::Log,
                Prim::Sqrt => Op::Sqrt,
                Prim::Abs => Op::Abs,
                Prim::Square => Op::Square,
                Prim::Floor => Op::Floor,
                Prim::Ceiling => Op::Ceiling,
                Prim::Round => Op::Round,
                Prim::Truncate => Op::Truncate,
                _ => return None,
            })
        };
        let binary = |p: Prim| -> Option<Op> {
            Some(match p {
                Prim::Pow => Op::Pow,
                Prim::Min => Op::Min,
                Prim::Max => Op::Max,
                Prim::Modulo => Op::Modulo,
                Prim::Remainder => Op::Remainder,
                Prim::Atan => Op::Atan2,
                _ => return None,
            })
        };
        if matches!(p, Prim::Add | Prim::Sub | Prim::Mul | Prim::Div) {
            return self.arithmetic(program, node, p, a);
        }
        if a.len() == 2
            && let Some(op) = binary(p)
        {
            self.expect_numeric(program, node, p, a)?;
            return self.binary(program, node, op, a[0], a[1]);
        }
        if a.len() == 1
            && let Some(op) = unary(p)
        {
            self.expect_numeric(program, node, p, a)?;
            return self.unary(program, node, op, a[0]);
        }
        if let Some(v) = self.tensor_prim(program, node, p, a)? {
            return Ok(v);
        }
        if let Some(cmp) = Cmp::from_prim(p) {
            self.expect_numbers(program, node, p, a)?;
            return self.compare(program, node, cmp, a);
        }
        if let Some(path) = lists::cxr_path(p) {
            let mut v = a[0];
            for &car in path {
                match self.heap.pair(v) {
                    Some(pair) => v = pair[if car { 0 } else { 1 }],
                    None => {
                        return Err(self.error(
                            program,
                            node,
                            ErrorKind::Type,
                            format!("`{}`: expected a pair, got {}", p.name(), v.kind_name()),
                        ));
                    }
                }
            }
            return Ok(v);
        }
        let x = a.first().copied().unwrap_or(Value::NIL);
        Ok(match p {
            Prim::Not => match x.tag {
                tag::BOOL => Value::boolean(x.aux == 0),
                tag::BOOLS => {
                    let neg: Vec<bool> =
                        self.payload.bool_lanes(x.slot).iter().map(|b| !b).collect();
                    self.make_bool(program, node, &neg)?
                }
                _ => Value::FALSE,
            },
            Prim::ZeroP | Prim::PositiveP | Prim::NegativeP => {
                self.expect_numbers(program, node, p, a)?;
                let cmp = match p {
                    Prim::ZeroP => Cmp::Eq,
                    Prim::PositiveP => Cmp::Gt,
                    _ => Cmp::Lt,
                };
                self.compare(program, node, cmp, &[x, Value::constant(R::zero())])?
            }
            Prim::NumberP => Value::boolean(x.is_number()),
            Prim::BooleanP => Value::boolean(x.is_boolean()),
            Prim::SymbolP => Value::boolean(x.tag == tag::SYMBOL),
            Prim::NullP => Value::boolean(x.tag == tag::NIL),
            Prim::PairP => Value::boolean(x.tag == tag::PAIR),
            Prim::ProcedureP => Value::boolean(x.is_procedure()),
            Prim::Eq => self.eqv(program, node, a[0], a[1])?,
            Prim::Equal => self.equal(program, node, a[0], a[1])?,
            Prim::Cons => {
                let v = self.heap.cons(a[0], a[1]);
                self.check_heap(program, node)?;
                v
            }
            Prim::List => {
                let v = lists::from_slice(&mut self.heap, a, Value::NIL);
                self.check_heap(program, node)?;
                v
            }
            Prim::Length => Value::constant(R::from_f64(
                self.proper_list(program, node, p, x)?.len() as f64,
            )),
            Prim::Reverse => {
                let mut items = self.proper_list(program, node, p, x)?;
                items.reverse();
                let v = lists::from_slice(&mut self.heap, &items, Value::NIL);
                self.check_heap(program, node)?;
                v
            }
            Prim::Append => {
                let Some((&last, init)) = a.split_last() else {
                    return Ok(Value::NIL);
                };
                let mut items = Vec::new();
                for &l in init {
                    items.extend(self.proper_list(program, node, p, l)?);
                }
                let v = lists::from_slice(&mut self.heap, &items, last);
                self.check_heap(program, node)?;
                v
            }
            Prim::ListRef => {
                let k = self.structural_index(program, node, "`list-ref` index", a[1])?;
                let mut v = x;
                for _ in 0..k {
                    match self.heap.pair(v) {
                        Some([_, d]) => v = d,
                        None => break,
                    }
                }
                match self.heap.pair(v) {
                    Some([car, _]) => car,
                    None => {
                        let n = lists::to_vec(&self.heap, x).map(|l| l.len());
                        return Err(match n {
                            Some(n) => self.error(
                                program,
                                node,
                                ErrorKind::Shape,
                                format!(
                                    "`list-ref`: index {k} is out of range for a list of length {n}"
                                ),
                            ),
                            None => self.error(
                                program,
                                node,
                                ErrorKind::Type,
                                format!(
                                    "`list-ref`: expected a proper list, got {}",
                                    x.kind_name()
                                ),
                            ),
                        });
                    }
                }
            }
            Prim::Assoc | Prim::Member => {
                let mut cur = a[1];
                loop {
                    let Some([item, rest]) = self.heap.pair(cur) else {
                        if cur.tag != tag::NIL {
                            return Err(self.error(
                                program,
                                node,
                                ErrorKind::Type,
                                format!(
                                    "`{}`: expected a proper list, got {}",
                                    p.name(),
                                    a[1].kind_name()
                                ),
                            ));
                        }
                        break Value::FALSE;
                    };
                    let key = if p == Prim::Assoc {
                        match self.heap.pair(item) {
                            Some([k, _]) => k,
                            None => {
                                return Err(self.error(
                                    program,
                                    node,
                                    ErrorKind::Type,
                                    format!(
                                        "`assoc`: every element must be a pair, got {}",
                                        item.kind_name()
                                    ),
                                ));
                            }
                        }
                    } else {
                        item
                    };
                    let same = self.equal(program, node, x, key)?;
                    if self.truth(program, node, same)? {
                        break if p == Prim::Assoc { item } else { cur };
                    }
                    cur = rest;
                }
            }
            _ => Value::NIL,
        })
    }

    pub(super) fn proper_list(
        &self,
        program: &Program,
        node: NodeId,
        p: Prim,
        v: Value,
    ) -> Result<Vec<Value>> {
        lists::to_vec(&self.heap, v).ok_or_else(|| {
            self.error(
                program,
                node,
                ErrorKind::Type,
                format!(
                    "`{}`: expected a proper list, got {}",
                    p.name(),
                    v.kind_name()
                ),
            )
        })
    }
}
