//! The backward pass: the tape replayed in reverse over lanes (ARCHITECTURE.md "Tape").
//!
//! The result's adjoint is seeded with 1 in every lane (LANGUAGE.md §8.2); each node then sends
//! its output adjoint to its operands through the op's VJP, touching only the lanes that were
//! active when it was recorded. Lanes never mix: lane `b` of a gradient is ∂result_b/∂input_b.
//! Every node runs the monomorphized lane kernels of [`crate::prims::kernels`] over its lanes: all
//! of them, or each run of consecutive lanes of its subset. An elementwise node over a tensor's
//! `len` elements runs one kernel over `len × B` numbers; linear-algebra nodes run their VJPs from
//! [`crate::prims::linalg`] over each lane range.

use crate::lanes::{LaneSets, Layout};
use crate::payload::Payload;
use crate::prims::kernels::{Arg, Gather, Grads, backward1_over, backward2_over};
use crate::prims::linalg::{self, Lanes, LinNode, Work};
use crate::prims::scalar::Op;
use crate::real::Real;
use crate::tape::{ExtArg, Form, Tape, TapeNode};
use crate::tape::{SKIP_A, SKIP_B};

/// Runs the backward pass, seeding the given result slots (a scalar result has one).
pub fn backward<R: Real>(
    tape: &Tape<R>,
    payload: &mut Payload<R>,
    sets: &LaneSets,
    seeds: std::ops::Range<u32>,
) {
    let lanes = payload.lanes;
    // Scratch for linear-algebra VJPs, made on first use.
    let mut work: Option<Work<R>> = None;
    if lanes == 1 && sets.is_empty() {
        seed_one_lane(payload, seeds);
        for (i, n) in tape.nodes.iter().enumerate().rev() {
            let skip = tape.skip.get(i).copied().unwrap_or(0);
            if n.op == Op::Ext {
                ext_vjp(tape, payload, n, Layout::All);
            } else if n.op.is_linalg() {
                linalg_vjp(
                    tape,
                    payload,
                    n,
                    skip,
                    Layout::All,
                    work.get_or_insert_with(Work::default),
                );
            } else {
                node_one_lane(tape, payload, n, skip);
            }
        }
        return;
    }
    payload.has_grads = true;
    let need = payload.slots() * lanes;
    let seeds = (seeds.start as usize * lanes, seeds.end as usize * lanes);
    // The buffer is zero but for what the last pass left (see `payload.rs`).
    let mut dirty = std::mem::take(&mut payload.dirty);
    for &(s, e) in &dirty {
        let end = e.min(payload.adjoint.len());
        payload.adjoint[s.min(end)..end].fill(R::zero());
    }
    dirty.clear();
    if payload.adjoint.len() < need {
        payload.adjoint.resize(need, R::zero());
    }
    payload.adjoint[seeds.0..seeds.1].fill(R::one());
    let mut gather = Gather::default();
    for (i, n) in tape.nodes.iter().enumerate().rev() {
        let skip = tape.skip.get(i).copied().unwrap_or(0);
        let layout = sets.layout(n.lanes);
        if n.op == Op::Select {
            select_vjp(payload, sets, n, skip);
        } else if n.op == Op::Ext {
            ext_vjp(tape, payload, n, layout);
        } else if n.op.is_linalg() {
            linalg_vjp(
                tape,
                payload,
                n,
                skip,
                layout,
                work.get_or_insert_with(Work::default),
            );
        } else if layout == Layout::All {
            // Every lane: the node's elements are one contiguous run.
            let width = n.elements() as usize * lanes;
            node_vjp(tape, payload, &mut gather, (n, skip), 0, width, layout);
        } else {
            for e in 0..n.elements() {
                node_vjp(tape, payload, &mut gather, (n, skip), e, lanes, layout);
            }
        }
        clear_output(tape, payload, n);
    }
    // Every node zeroed its output's adjoint once read; what is left non-zero are the leaves
    // (and the seeds, when the result is one).
    let leaves = payload.leaves.iter();
    dirty.extend(leaves.map(|&(s, n)| (s as usize * lanes, (s + n) as usize * lanes)));
    dirty.push(seeds);
    payload.dirty = dirty;
}

/// Starts a one-lane backward pass: the adjoint buffer is small, so it is cleared whole (and
/// anything beyond it dropped), then the result slots `seeds` get 1.
pub(crate) fn seed_one_lane<R: Real>(payload: &mut Payload<R>, seeds: std::ops::Range<u32>) {
    let need = payload.slots();
    payload.has_grads = true;
    payload.adjoint.clear();
    payload.adjoint.resize(need, R::zero());
    payload.dirty.clear();
    payload.dirty.push((0, need));
    payload.adjoint[seeds.start as usize..seeds.end as usize].fill(R::one());
}

/// Zeroes the adjoint of a node's output (every lane) once its VJP has run.
#[inline]
fn clear_output<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode) {
    let len = if n.op.is_linalg() {
        tape.linalg(n).out_len()
    } else if n.op == Op::Select {
        1
    } else {
        n.elements()
    };
    let b = p.lanes;
    p.adjoint[n.out as usize * b..(n.out + len) as usize * b].fill(R::zero());
}

/// A custom primitive's VJP over the node's lanes: operands gathered into `f64` columns, the
/// primitive's VJP, and each differentiable operand's adjoint increased lane by lane.
pub(crate) fn ext_vjp<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode, layout: Layout) {
    let Some(call) = tape.ext.get(n.a as usize) else {
        return;
    };
    let Some(prim) = tape.primitives.get(call.prim as usize) else {
        return;
    };
    let args = &tape.ext_args[call.start as usize..(call.start + call.len) as usize];
    let b = p.lanes;
    let mut active = Vec::with_capacity(b);
    layout.for_ranges(b, |s, e| active.extend(s..e));
    let column = |slot: u32| -> Vec<f64> {
        let x = p.lane_values(slot);
        active.iter().map(|&l| x[l].to_f64()).collect()
    };
    let cols: Vec<Vec<f64>> = args
        .iter()
        .map(|a| match *a {
            ExtArg::Slot(s) | ExtArg::Data(s) => column(s),
            ExtArg::Const(c) => vec![tape.consts[c as usize].to_f64(); active.len()],
        })
        .collect();
    let out = column(n.out);
    let g: Vec<f64> = {
        let adj = &p.adjoint[n.out as usize * b..(n.out as usize + 1) * b];
        active.iter().map(|&l| adj[l].to_f64()).collect()
    };
    let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    let mut grads = vec![vec![0.0; active.len()]; args.len()];
    prim.vjp(&refs, &out, &g, &mut grads);
    for (a, d) in args.iter().zip(&grads) {
        if let ExtArg::Slot(s) = *a {
            let adj = &mut p.adjoint[s as usize * b..(s as usize + 1) * b];
            for (&l, &x) in active.iter().zip(d) {
                adj[l] = adj[l] + R::from_f64(x);
            }
        }
    }
}

/// A linear-algebra node's VJP over each lane range of its layout.
fn linalg_vjp<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    n: &TapeNode,
    skip: u8,
    layout: Layout,
    work: &mut Work<R>,
) {
    let node = LinNode {
        skip,
        ..tape.linalg(n)
    };
    let b = p.lanes;
    let (x, adj) = (&p.primal, &mut p.adjoint);
    layout.for_ranges(b, |s, e| {
        linalg::vjp(&node, x, adj, Lanes { b, s, e }, work)
    });
}

/// One node's VJP over the lanes of its set, through the vectorized lane kernels: element `e` of
/// the node's elements, `b` numbers wide (B, or every element's B lanes at once from `e = 0`).
fn node_vjp<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    gather: &mut Gather<R>,
    (n, skip): (&TapeNode, u8),
    e: u32,
    b: usize,
    layout: Layout,
) {
    let (grad_a, grad_b) = (skip & SKIP_A == 0, skip & SKIP_B == 0);
    // Constant leaves get no adjoint: drop them from the node's operands.
    let form = match n.form {
        Form::Unary | Form::SlotConst if !grad_a => return,
        Form::ConstSlot if !grad_b => return,
        Form::SlotSlot if !grad_a && !grad_b => return,
        f => f,
    };
    let lanes = p.lanes;
    let at = |slot: u32| (slot + e) as usize * lanes;
    let (o, a, c) = (at(n.out), at(n.a), at(n.b));
    let x = &p.primal;
    // Operands are always recorded before the node's output: their adjoints lie below it.
    let (below, above) = p.adjoint.split_at_mut(o);
    let zg = (&x[o..o + b], &above[..b]);
    let slot = |at: usize| &x[at..at + b];
    let op = n.op;
    match form {
        Form::SlotSlot if a != c && !(grad_a && grad_b) => {
            // One side is a constant leaf: accumulate into the other only.
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            let at = if grad_a { a } else { c };
            let g = &mut below[at..at + b];
            let grads = if grad_a {
                Grads::First(g)
            } else {
                Grads::Second(g)
            };
            backward2_over(op, ab, zg, grads, layout, gather);
        }
        Form::Unary => backward1_over(
            op,
            &mut below[a..a + b],
            (slot(a), zg.0, zg.1),
            layout,
            gather,
        ),
        Form::SlotConst => {
            let ab = (Arg::Lanes(slot(a)), Arg::Const(tape.consts[n.b as usize]));
            backward2_over(
                op,
                ab,
                zg,
                Grads::First(&mut below[a..a + b]),
                layout,
                gather,
            );
        }
        Form::ConstSlot => {
            let ab = (Arg::Const(tape.consts[n.a as usize]), Arg::Lanes(slot(c)));
            backward2_over(
                op,
                ab,
                zg,
                Grads::Second(&mut below[c..c + b]),
                layout,
                gather,
            );
        }
        Form::SlotSlot if a == c => {
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            backward2_over(
                op,
                ab,
                zg,
                Grads::Same(&mut below[a..a + b]),
                layout,
                gather,
            );
        }
        Form::SlotSlot => {
            let (lo, hi, swap) = if a < c { (a, c, false) } else { (c, a, true) };
            let (first, second) = below.split_at_mut(hi);
            let (g_lo, g_hi) = (&mut first[lo..lo + b], &mut second[..b]);
            let grads = if swap {
                Grads::Both(g_hi, g_lo)
            } else {
                Grads::Both(g_lo, g_hi)
            };
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            backward2_over(op, ab, zg, grads, layout, gather);
        }
        Form::ConstConst => {}
    }
}

/// One lane: the kernels' formulas without lane loops (same bits as the lane kernels).
#[inline]
fn node_one_lane<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode, skip: u8) {
    if n.aux > 1 {
        return node_elements_one_lane(tape, p, n, skip);
    }
    element_one_lane(tape, p, n, skip);
}

/// One element of a node in one lane (`out`, `a`, `b` already at that element).
#[inline(always)]
fn element_one_lane<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode, skip: u8) {
    let (o, a, c) = (n.out as usize, n.a as usize, n.b as usize);
    let (x, adj) = (&p.primal, &mut p.adjoint);
    let (z, g) = (x[o], adj[o]);
    let (grad_a, grad_b) = (skip & SKIP_A == 0, skip & SKIP_B == 0);
    match n.form {
        Form::Unary if grad_a => adj[a] = adj[a] + n.op.vjp1(x[a], z, g),
        Form::SlotSlot => {
            let (da, db) = n.op.vjp2(x[a], x[c], z, g);
            if a == c {
                if grad_a {
                    adj[a] = adj[a] + da + db;
                }
            } else {
                if grad_a {
                    adj[a] = adj[a] + da;
                }
                if grad_b {
                    adj[c] = adj[c] + db;
                }
            }
        }
        Form::SlotConst if grad_a => {
            adj[a] = adj[a] + n.op.vjp2(x[a], tape.consts[c], z, g).0;
        }
        Form::ConstSlot if grad_b => {
            adj[c] = adj[c] + n.op.vjp2(tape.consts[a], x[c], z, g).1;
        }
        _ => {}
    }
}

/// One lane of an elementwise node over several elements.
fn node_elements_one_lane<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode, skip: u8) {
    for e in 0..n.elements() {
        let slot = |s: u32, is_slot: bool| if is_slot { s + e } else { s };
        let one = TapeNode {
            out: n.out + e,
            a: slot(n.a, n.form != Form::ConstSlot),
            b: slot(n.b, matches!(n.form, Form::SlotSlot | Form::ConstSlot)),
            aux: 1,
            ..*n
        };
        element_one_lane(tape, p, &one, skip);
    }
}

/// A merge: each lane's adjoint goes to the side that lane took, and nowhere else.
fn select_vjp<R: Real>(p: &mut Payload<R>, sets: &LaneSets, n: &TapeNode, skip: u8) {
    let b = p.lanes;
    let o = n.out as usize * b;
    let then_const = matches!(n.form, Form::ConstSlot | Form::ConstConst) || skip & SKIP_A != 0;
    let else_const = matches!(n.form, Form::SlotConst | Form::ConstConst) || skip & SKIP_B != 0;
    for (set, operand, constant) in [(n.lanes, n.a, then_const), (n.aux, n.b, else_const)] {
        if constant {
            continue;
        }
        let base = operand as usize * b;
        for &l in sets.get(set).unwrap_or(&[]) {
            let l = l as usize;
            p.adjoint[base + l] = p.adjoint[base + l] + p.adjoint[o + l];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prims::scalar::Op;

    /// A node recorded under a lane subset sends adjoints to those lanes only, even when the
    /// other lanes hold values whose VJP would be NaN.
    #[test]
    fn subset_nodes_touch_only_their_lanes() {
        let mut p = Payload::<f32>::default();
        p.reset(4);
        let x = p.alloc(1);
        let y = p.alloc(1);
        p.lane_values_mut(x).copy_from_slice(&[1.0, 0.0, 2.0, 0.0]);
        // y = 1/x; lanes 1 and 3 (x = 0) were inactive when it was recorded.
        for l in 0..4 {
            p.lane_values_mut(y)[l] = Op::Div.eval2(1.0, p.lane_values(x)[l]);
        }
        let mut sets = LaneSets::default();
        let even = sets.add(vec![0, 2]);
        let mut tape = Tape::<f32>::default();
        tape.nodes.push(TapeNode {
            op: Op::Div,
            form: Form::ConstSlot,
            lanes: even,
            out: y,
            a: 0,
            b: x,
            aux: 0,
        });
        tape.consts.push(1.0);
        backward(&tape, &mut p, &sets, y..y + 1);
        // d(1/x)/dx = -1/x² in lanes 0 and 2; nothing in lanes 1 and 3 (1/0² would be inf).
        assert_eq!(p.grad(x), &[-1.0, 0.0, -0.25, 0.0]);
        // The same node over every lane reaches all four.
        let all = [TapeNode {
            lanes: crate::lanes::ALL,
            ..tape.nodes[0]
        }];
        tape.nodes.clear();
        tape.nodes.extend(all);
        backward(&tape, &mut p, &sets, y..y + 1);
        assert!(p.grad(x)[1].is_infinite());
    }
}
