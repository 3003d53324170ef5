//! The one-lane flat program: a recorded tape unrolled once into element steps, for replaying a
//! single lane (B = 1) many times.
//!
//! At B = 1 the replay and the backward pass spend most of their time interpreting nodes, not
//! computing: each node decodes its operand forms, looks up its constants and skip bits, and
//! walks its elements — every step, although none of that changes while the tape is the same.
//! [`Flat::build`] does that work once. Every elementwise node becomes one [`Step`] per element
//! (absolute slots, constants inlined, a constant-only element folded to its value) and one
//! [`Back`] per element that has an adjoint to send (the skipped operands dropped,
//! the `a == b` case resolved) — except small tensor ops and number broadcasts, which become
//! one step each ([`super::runs`]). A fixed-size `dot`/`matmul`/`matvec` becomes a step naming
//! its kernel and slots; any other linear-algebra node one step carrying its [`LinNode`], sizes
//! and skip bits resolved. The guards sit between the steps where the tape's positions put
//! them. Anything else (custom primitives, `exp`/`sin`/`cos`/`log` over a tensor, which take the
//! lane kernel's vectorized path) runs through the general per-node code.
//!
//! Every step calls the same formula the per-node code calls ([`Op::eval2`], [`Op::vjp2`], the
//! one-lane linear-algebra kernels) in the same order, so a flat replay and its backward pass
//! give the per-node replay's bits — which are a fresh walk's. Nothing is compiled: the steps
//! are data and [`Flat::forward`] / [`Flat::backward`] are two fixed loops.

use super::Runner;
use super::runs::{self, Want};
use crate::backward::{ext_vjp_in_place, seed_one_lane};
use crate::payload::Payload;
use crate::prims::linalg::{self, Lanes, LinNode, OneLane, Work, products};
use crate::prims::scalar::Op;
use crate::real::Real;
use crate::tape::{Form, SKIP_A, SKIP_B, Tape, TapeNode};

/// The lane range of a one-lane kernel call.
const ONE: Lanes = Lanes { b: 1, s: 0, e: 1 };

/// One forward step, on absolute slots of the one-lane primal buffer.
#[derive(Clone, Copy, Debug)]
enum Step<R> {
    /// `x[o] = op(x[a])`.
    Unary {
        op: Op,
        o: u32,
        a: u32,
    },
    /// `x[o] = op(x[a], x[b])`.
    Binary {
        op: Op,
        o: u32,
        a: u32,
        b: u32,
    },
    /// The commonest binary ops, named so that the step's tag is the only dispatch.
    Add {
        o: u32,
        a: u32,
        b: u32,
    },
    Add0 {
        o: u32,
        a: u32,
        b: u32,
    },
    Sub {
        o: u32,
        a: u32,
        b: u32,
    },
    Mul {
        o: u32,
        a: u32,
        b: u32,
    },
    /// A 2..=4-element `+`/`-`/`*` node on consecutive slots (see [`runs`]).
    Run {
        k: u8,
        o: u32,
        a: u32,
        b: u32,
    },
    /// A number broadcast by `+`/`*` over 2..=4 consecutive slots (see [`runs::broadcast`]).
    Broadcast {
        k: u8,
        first: bool,
        o: u32,
        s: u32,
        v: u32,
    },
    /// `x[o] = op(x[a], c)`.
    SlotConst {
        op: Op,
        o: u32,
        a: u32,
        c: R,
    },
    /// `x[o] = op(c, x[b])`.
    ConstSlot {
        op: Op,
        o: u32,
        c: R,
        b: u32,
    },
    /// `x[o] = v` (an element of constants only, folded at build time).
    Set {
        o: u32,
        v: R,
    },
    /// A fixed-size `dot`, `matmul` or `matvec` ([`products::fixed_kind`]).
    Product {
        kind: u8,
        o: u32,
        a: u32,
        b: u32,
    },
    /// A linear-algebra node through its one-lane kernel: [`Flat::linalg`]`[i]`.
    Linalg(u32),
    /// Any other node, by index, through the per-node replay.
    Node(u32),
    /// Guard `i` of the tape.
    Guard(u32),
}

/// One backward step: an element's VJP into the adjoints that want it.
#[derive(Clone, Copy, Debug)]
enum Back<R> {
    /// `ā += op'(x[a])·ō`.
    Unary { op: Op, o: u32, a: u32 },
    /// Both operands, distinct slots.
    Both { op: Op, o: u32, a: u32, b: u32 },
    /// Only operand `a` (the other is a constant leaf).
    First { op: Op, o: u32, a: u32, b: u32 },
    /// Only operand `b`.
    Second { op: Op, o: u32, a: u32, b: u32 },
    /// Both operands are one slot: `ā = ā + da + db`.
    Same { op: Op, o: u32, a: u32 },
    /// `ā += ∂op(x[a], c)`.
    SlotConst { op: Op, o: u32, a: u32, c: R },
    /// `b̄ += ∂op(c, x[b])`.
    ConstSlot { op: Op, o: u32, c: R, b: u32 },
    /// `ā += ō`: an operand of `+` (or the first of `-`), the VJP of [`Op::Add`] inlined.
    Acc { o: u32, a: u32 },
    /// `ā += ō`, then `b̄ += ō`: both operands of `+`.
    AccBoth { o: u32, a: u32, b: u32 },
    /// `b̄ += -ō`: the second operand of `-`.
    AccNeg { o: u32, b: u32 },
    /// `ā += ō`, then `b̄ += -ō`: both operands of `-`.
    AccSub { o: u32, a: u32, b: u32 },
    /// `ā += ō·x[b]`: an operand of `*`.
    MulAcc { o: u32, a: u32, b: u32 },
    /// `ā += ō·x[b]`, then `b̄ += ō·x[a]`: both operands of `*`.
    MulBoth { o: u32, a: u32, b: u32 },
    /// A 2..=4-element `+`/`-`/`*` node's VJP on consecutive slots (see [`runs`]).
    Run {
        k: u8,
        want: Want,
        o: u32,
        a: u32,
        b: u32,
    },
    /// A broadcast run's VJP: [`Want::First`] the number, [`Want::Second`] the elements.
    Broadcast {
        k: u8,
        want: Want,
        o: u32,
        s: u32,
        v: u32,
    },
    /// A fixed-size product's VJP ([`products::fixed_kind`]).
    Product {
        kind: u8,
        want: Want,
        o: u32,
        a: u32,
        b: u32,
    },
    /// A linear-algebra node's one-lane VJP: [`Flat::linalg`]`[i]`.
    Linalg(u32),
    /// A custom primitive's VJP, by node index.
    Ext(u32),
}

/// A tape unrolled for one lane (see the module docs).
#[derive(Debug)]
pub(crate) struct Flat<R> {
    forward: Vec<Step<R>>,
    backward: Vec<Back<R>>,
    /// The linear-algebra nodes (with their skip bits) and their one-lane kernels.
    linalg: Vec<Linalg<R>>,
}

/// A linear-algebra node of the flat program.
#[derive(Clone, Copy, Debug)]
struct Linalg<R> {
    node: LinNode,
    /// Its forward and VJP kernels with op and sizes resolved; `None`: through
    /// [`linalg::forward`] and [`linalg::vjp`].
    kernels: Option<(OneLane<R>, OneLane<R>)>,
}

/// Whether a one-lane node runs through its op's scalar formula, as the per-node replay decides
/// ([`super::one_lane_formula`]) and as the backward pass always does for elementwise nodes.
fn elementwise(n: &TapeNode) -> bool {
    !matches!(n.op, Op::Select | Op::Ext) && !n.op.is_linalg()
}

impl<R: Real> Flat<R> {
    /// Unrolls `tape` (recorded over one lane without lane subsets). `None` when it holds a
    /// per-lane merge, which one unsplit lane never records.
    pub(crate) fn build(tape: &Tape<R>) -> Option<Flat<R>> {
        if tape.nodes.iter().any(|n| n.op == Op::Select) {
            return None;
        }
        let mut linalg = Vec::new();
        let mut lin = vec![u32::MAX; tape.nodes.len()];
        for (i, n) in tape.nodes.iter().enumerate() {
            if n.op.is_linalg() {
                let skip = tape.skip.get(i).copied().unwrap_or(0);
                let node = LinNode {
                    skip,
                    ..tape.linalg(n)
                };
                lin[i] = linalg.len() as u32;
                linalg.push(Linalg {
                    node,
                    kernels: linalg::one_lane(&node),
                });
            }
        }
        let mut forward = Vec::with_capacity(tape.nodes.len() * 2 + tape.guards.len());
        let mut guard_at = vec![false; tape.nodes.len() + 1];
        for g in &tape.guards {
            guard_at[(g.pos as usize).min(tape.nodes.len())] = true;
        }
        // The broadcast runs, by their first node.
        let mut runs: Vec<Option<runs::Broadcast>> = vec![None; tape.nodes.len()];
        let mut guards = tape.guards.iter().enumerate().peekable();
        let mut i = 0;
        while let Some(n) = tape.nodes.get(i) {
            while let Some((g, _)) = guards.next_if(|(_, g)| g.pos as usize <= i) {
                forward.push(Step::Guard(g as u32));
            }
            let skip = tape.skip.get(i..).unwrap_or(&[]);
            if let Some(r) = runs::broadcast(&tape.nodes[i..], skip, |k| guard_at[i + k]) {
                let (k, first, o, s, v) = (runs::kind(r.op, r.n.into()), r.first, r.o, r.s, r.v);
                forward.push(Step::Broadcast { k, first, o, s, v });
                runs[i] = Some(r);
                i += r.n as usize;
                continue;
            }
            if n.op.is_linalg() {
                let node = &linalg[lin[i] as usize].node;
                forward.push(match products::fixed_kind(node) {
                    Some(kind) => Step::Product {
                        kind,
                        o: node.out,
                        a: node.a,
                        b: node.b,
                    },
                    None => Step::Linalg(lin[i]),
                });
            } else if runs::forward_fits(n) {
                let (k, o, a, b) = (runs::kind(n.op, n.elements()), n.out, n.a, n.b);
                forward.push(Step::Run { k, o, a, b });
            } else if super::one_lane_formula(n) {
                forward.extend((0..n.elements()).map(|e| step(tape, n, e)));
            } else {
                forward.push(Step::Node(i as u32));
            }
            i += 1;
        }
        forward.extend(guards.map(|(g, _)| Step::Guard(g as u32)));
        let mut backward = Vec::with_capacity(tape.nodes.len() * 2);
        let mut i = tape.nodes.len();
        while i > 0 {
            i -= 1;
            let n = &tape.nodes[i];
            let skip = tape.skip.get(i).copied().unwrap_or(0);
            // A broadcast run's last node stands for the run; its other nodes are skipped.
            let run = (i.saturating_sub(3)..=i)
                .find_map(|j| runs[j].filter(|r| j + r.n as usize > i).map(|r| (j, r)));
            if let Some((j, r)) = run {
                if let Some(want) = r.want() {
                    let (k, o, s, v) = (runs::kind(r.op, r.n.into()), r.o, r.s, r.v);
                    backward.push(Back::Broadcast { k, want, o, s, v });
                }
                i = j;
                continue;
            }
            if n.op == Op::Ext {
                backward.push(Back::Ext(i as u32));
            } else if n.op.is_linalg() {
                let node = &linalg[lin[i] as usize].node;
                let want = Want::of(node.grad_a(), node.grad_b());
                match (products::fixed_kind(node), want) {
                    (Some(kind), Some(want)) => backward.push(Back::Product {
                        kind,
                        want,
                        o: node.out,
                        a: node.a,
                        b: node.b,
                    }),
                    _ if linalg::wants_vjp(node) => backward.push(Back::Linalg(lin[i])),
                    _ => {}
                }
            } else if let Some((want, a, b)) =
                runs::backward_fits(n, skip & SKIP_A == 0, skip & SKIP_B == 0)
            {
                let (k, o) = (runs::kind(n.op, n.elements()), n.out);
                backward.push(Back::Run { k, want, o, a, b });
            } else if elementwise(n) {
                for e in 0..n.elements() {
                    back(tape, n, e, skip, &mut backward);
                }
            }
        }
        Some(Flat {
            forward,
            backward,
            linalg,
        })
    }

    /// Runs the forward steps; false as soon as a guard fails (the caller then replays through
    /// the per-node loop, which reports the failure in full).
    pub(super) fn forward(&self, run: &mut Runner<'_, R>) -> bool {
        let mut failed = Vec::new();
        let mut i = 0;
        loop {
            i += self.run(&self.forward[i..], &mut run.payload.primal, run.work);
            match self.forward.get(i) {
                None => return true,
                Some(Step::Node(n)) => run.node(&run.tape.nodes[*n as usize]),
                Some(Step::Guard(g)) => {
                    if !run.check(&run.tape.guards[*g as usize], &mut failed) {
                        return false;
                    }
                }
                Some(_) => {} // `run` stops only at a node or a guard
            }
            i += 1;
        }
    }

    /// Runs `steps` up to the first that needs the whole evaluator (a node through the
    /// per-node code, or a guard) and returns how many it ran. The buffer is one borrowed
    /// slice for the whole stretch, so the loop keeps it in registers.
    #[inline(always)]
    fn run(&self, steps: &[Step<R>], x: &mut [R], work: &mut Work<R>) -> usize {
        for (i, s) in steps.iter().enumerate() {
            match *s {
                Step::Unary { op, o, a } => x[o as usize] = op.eval1(x[a as usize]),
                Step::Binary { op, o, a, b } => {
                    let (a, b) = (x[a as usize], x[b as usize]);
                    x[o as usize] = op.eval2(a, b);
                }
                Step::Add { o, a, b } => {
                    x[o as usize] = Op::Add.eval2(x[a as usize], x[b as usize])
                }
                Step::Add0 { o, a, b } => {
                    x[o as usize] = Op::Add0.eval2(x[a as usize], x[b as usize]);
                }
                Step::Sub { o, a, b } => {
                    x[o as usize] = Op::Sub.eval2(x[a as usize], x[b as usize])
                }
                Step::Mul { o, a, b } => {
                    x[o as usize] = Op::Mul.eval2(x[a as usize], x[b as usize])
                }
                Step::Run { k, o, a, b } => runs::forward(k, x, (o, a, b)),
                Step::Broadcast { k, first, o, s, v } => {
                    runs::broadcast_forward(k, first, x, (o, s, v))
                }
                Step::SlotConst { op, o, a, c } => x[o as usize] = op.eval2(x[a as usize], c),
                Step::ConstSlot { op, o, c, b } => x[o as usize] = op.eval2(c, x[b as usize]),
                Step::Set { o, v } => x[o as usize] = v,
                Step::Product { kind, o, a, b } => products::fixed_forward(kind, x, (o, a, b)),
                Step::Linalg(i) => match &self.linalg[i as usize] {
                    Linalg {
                        node,
                        kernels: Some((f, _)),
                    } => {
                        let (src, dst) = x.split_at_mut(node.out as usize);
                        f(node, src, dst);
                    }
                    Linalg {
                        node,
                        kernels: None,
                    } => linalg::forward(node, x, ONE, true, work),
                },
                Step::Node(_) | Step::Guard(_) => return i,
            }
        }
        steps.len()
    }

    /// The backward pass over the steps, seeding the result slots `seeds`: the adjoints
    /// [`crate::backward::backward`] leaves for the same tape at B = 1, bit for bit.
    pub(crate) fn backward(
        &self,
        tape: &Tape<R>,
        p: &mut Payload<R>,
        seeds: std::ops::Range<u32>,
        work: &mut Work<R>,
    ) {
        seed_one_lane(p, seeds);
        let mut i = 0;
        loop {
            i += self.back(&self.backward[i..], &p.primal, &mut p.adjoint, work);
            match self.backward.get(i) {
                None => return,
                Some(Back::Ext(n)) => ext_vjp_in_place(tape, p, &tape.nodes[*n as usize]),
                Some(_) => {} // `back` stops only at a custom primitive
            }
            i += 1;
        }
    }

    /// Runs backward `steps` up to the first custom primitive's and returns how many it ran
    /// (one borrowed primal and adjoint slice for the stretch, as in [`Flat::run`]).
    #[inline(always)]
    fn back(&self, steps: &[Back<R>], x: &[R], adj: &mut [R], work: &mut Work<R>) -> usize {
        let at = |s: u32| s as usize;
        for (i, s) in steps.iter().enumerate() {
            match *s {
                Back::Unary { op, o, a } => {
                    let d = op.vjp1(x[at(a)], x[at(o)], adj[at(o)]);
                    adj[at(a)] = adj[at(a)] + d;
                }
                Back::Acc { o, a } => vjp2(Op::Add, x, adj, (o, a, a), (true, false)),
                Back::AccBoth { o, a, b } => vjp2(Op::Add, x, adj, (o, a, b), (true, true)),
                Back::AccNeg { o, b } => vjp2(Op::Sub, x, adj, (o, b, b), (false, true)),
                Back::AccSub { o, a, b } => vjp2(Op::Sub, x, adj, (o, a, b), (true, true)),
                Back::MulAcc { o, a, b } => vjp2(Op::Mul, x, adj, (o, a, b), (true, false)),
                Back::MulBoth { o, a, b } => vjp2(Op::Mul, x, adj, (o, a, b), (true, true)),
                Back::Both { op, o, a, b } => vjp2(op, x, adj, (o, a, b), (true, true)),
                Back::First { op, o, a, b } => vjp2(op, x, adj, (o, a, b), (true, false)),
                Back::Second { op, o, a, b } => vjp2(op, x, adj, (o, a, b), (false, true)),
                Back::Same { op, o, a } => {
                    let (da, db) = op.vjp2(x[at(a)], x[at(a)], x[at(o)], adj[at(o)]);
                    adj[at(a)] = adj[at(a)] + da + db;
                }
                Back::SlotConst { op, o, a, c } => {
                    let (da, _) = op.vjp2(x[at(a)], c, x[at(o)], adj[at(o)]);
                    adj[at(a)] = adj[at(a)] + da;
                }
                Back::ConstSlot { op, o, c, b } => {
                    let (_, db) = op.vjp2(c, x[at(b)], x[at(o)], adj[at(o)]);
                    adj[at(b)] = adj[at(b)] + db;
                }
                Back::Run { k, want, o, a, b } => runs::backward(k, want, x, adj, (o, a, b)),
                Back::Broadcast { k, want, o, s, v } => {
                    runs::broadcast_backward(k, want, x, adj, (o, s, v))
                }
                Back::Product {
                    kind,
                    want,
                    o,
                    a,
                    b,
                } => products::fixed_vjp(kind, x, adj, (o, a, b), want.pair()),
                Back::Linalg(i) => match &self.linalg[i as usize] {
                    Linalg {
                        node,
                        kernels: Some((_, v)),
                    } => v(node, x, adj),
                    Linalg {
                        node,
                        kernels: None,
                    } => linalg::vjp_one_lane(node, x, adj, work),
                },
                Back::Ext(_) => return i,
            }
        }
        steps.len()
    }
}

/// A binary element's VJP on two slots: `ā += da` then `b̄ += db`, each if wanted (the op is a
/// constant at the named steps, so each compiles to its own straight-line code, reading only the
/// primal values its formula uses: none for `+` and `-`, the other operand's for `*`).
#[inline(always)]
fn vjp2<R: Real>(op: Op, x: &[R], adj: &mut [R], (o, a, b): (u32, u32, u32), want: (bool, bool)) {
    let (o, a, b) = (o as usize, a as usize, b as usize);
    let zero = R::zero();
    let (da, db) = match op {
        Op::Add | Op::Add0 | Op::Sub => op.vjp2(zero, zero, zero, adj[o]),
        Op::Mul => {
            let xa = if want.1 { x[a] } else { zero };
            let xb = if want.0 { x[b] } else { zero };
            op.vjp2(xa, xb, zero, adj[o])
        }
        _ => op.vjp2(x[a], x[b], x[o], adj[o]),
    };
    if want.0 {
        adj[a] = adj[a] + da;
    }
    if want.1 {
        adj[b] = adj[b] + db;
    }
}

/// Element `e` of an elementwise node as a forward step.
fn step<R: Real>(tape: &Tape<R>, n: &TapeNode, e: u32) -> Step<R> {
    let (op, o, c) = (n.op, n.out + e, &tape.consts);
    match n.form {
        Form::Unary => Step::Unary { op, o, a: n.a + e },
        Form::SlotSlot => {
            let (a, b) = (n.a + e, n.b + e);
            match op {
                Op::Add => Step::Add { o, a, b },
                Op::Add0 => Step::Add0 { o, a, b },
                Op::Sub => Step::Sub { o, a, b },
                Op::Mul => Step::Mul { o, a, b },
                _ => Step::Binary { op, o, a, b },
            }
        }
        Form::SlotConst => Step::SlotConst {
            op,
            o,
            a: n.a + e,
            c: c[n.b as usize],
        },
        Form::ConstSlot => Step::ConstSlot {
            op,
            o,
            c: c[n.a as usize],
            b: n.b + e,
        },
        Form::ConstConst => Step::Set {
            o,
            v: op.eval2(c[n.a as usize], c[n.b as usize]),
        },
    }
}

/// Element `e` of an elementwise node as backward steps (none when no operand of it wants an
/// adjoint; `+`, `-` and `*` on two slots as one step per operand, in the order their VJP adds).
fn back<R: Real>(tape: &Tape<R>, n: &TapeNode, e: u32, skip: u8, out: &mut Vec<Back<R>>) {
    let (op, o, c) = (n.op, n.out + e, &tape.consts);
    let (grad_a, grad_b) = (skip & SKIP_A == 0, skip & SKIP_B == 0);
    let (a, b) = (n.a + e, n.b + e);
    if n.form == Form::SlotSlot && a != b && matches!(op, Op::Add | Op::Add0 | Op::Sub | Op::Mul) {
        if grad_a && grad_b {
            out.push(match op {
                Op::Mul => Back::MulBoth { o, a, b },
                Op::Sub => Back::AccSub { o, a, b },
                _ => Back::AccBoth { o, a, b },
            });
        } else if grad_a {
            out.push(match op {
                Op::Mul => Back::MulAcc { o, a, b },
                _ => Back::Acc { o, a },
            });
        } else if grad_b {
            out.push(match op {
                Op::Mul => Back::MulAcc { o, a: b, b: a },
                Op::Sub => Back::AccNeg { o, b },
                _ => Back::Acc { o, a: b },
            });
        }
        return;
    }
    out.extend(Some(match n.form {
        Form::Unary if grad_a => Back::Unary { op, o, a },
        Form::SlotSlot if a == b && grad_a => Back::Same { op, o, a },
        Form::SlotSlot if a != b && grad_a && grad_b => Back::Both { op, o, a, b },
        Form::SlotSlot if a != b && grad_a => Back::First { op, o, a, b },
        Form::SlotSlot if a != b && grad_b => Back::Second { op, o, a, b },
        Form::SlotConst if grad_a => Back::SlotConst {
            op,
            o,
            a,
            c: c[n.b as usize],
        },
        Form::ConstSlot if grad_b => Back::ConstSlot {
            op,
            o,
            c: c[n.a as usize],
            b,
        },
        _ => return,
    }));
}
