//! The backward pass: the tape replayed in reverse over lanes (docs/architecture.md "From text to numbers").
//!
//! The result's adjoint is seeded with 1 in every lane (docs/language-reference.md §8.2); each node
//! then sends its output adjoint to its operands through the op's VJP, touching only the lanes that
//! were active when it was recorded. Lanes never mix: lane `b` of a gradient is ∂result_b/∂input_b.
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
use std::ops::Range;

mod place;

pub use place::{POOL_BYTES, Placement, Pooling};

/// Runs the backward pass, seeding the given result slots (a scalar result has one).
/// `place` says where adjoints live; it is planned (or re-planned) here as `pooling` says when
/// it does not fit this pass, and kept for the next pass over the same walk.
pub fn backward<R: Real>(
    tape: &Tape<R>,
    payload: &mut Payload<R>,
    sets: &LaneSets,
    seeds: std::ops::Range<u32>,
    (place, pooling): (&mut Option<Placement>, Pooling),
) {
    let lanes = payload.lanes;
    // Scratch for linear-algebra VJPs, made on first use.
    let mut work: Option<Work<R>> = None;
    if lanes == 1 && sets.is_empty() {
        seed_one_lane(payload, seeds);
        for (i, n) in tape.nodes.iter().enumerate().rev() {
            let skip = tape.skip.get(i).copied().unwrap_or(0);
            if n.op == Op::Ext {
                ext_vjp_in_place(tape, payload, n);
            } else if n.op.is_linalg() {
                let node = LinNode {
                    skip,
                    ..tape.linalg(n)
                };
                let work = work.get_or_insert_with(Work::default);
                linalg::vjp_one_lane(&node, &payload.primal, &mut payload.adjoint, work);
            } else {
                node_one_lane(tape, payload, n, skip);
            }
        }
        return;
    }
    if !place
        .as_ref()
        .is_some_and(|p| p.fits(payload.slots(), &seeds))
    {
        *place = None;
    }
    let place =
        &*place.get_or_insert_with(|| Placement::plan(tape, payload, seeds.clone(), pooling));
    payload.has_grads = true;
    let need = place.buffer_slots() * lanes;
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
    for s in seeds.clone() {
        let at = place.at(s) as usize * lanes;
        payload.adjoint[at..at + lanes].fill(R::one());
    }
    let mut gather = Gather::default();
    // The adjoint of the node being differentiated, taken out of the buffer (see `take`).
    let mut g: Vec<R> = Vec::new();
    for (i, n) in tape.nodes.iter().enumerate().rev() {
        let skip = tape.skip.get(i).copied().unwrap_or(0);
        let layout = sets.layout(n.lanes);
        if n.op == Op::Select {
            take(tape, payload, place, n, &mut g);
            select_vjp(payload, sets, place, (n, skip), &g);
        } else if n.op == Op::Ext {
            take(tape, payload, place, n, &mut g);
            ext_vjp(tape, payload, n, layout, &g, place);
        } else if n.op.is_linalg() {
            take(tape, payload, place, n, &mut g);
            let work = work.get_or_insert_with(Work::default);
            linalg_vjp(tape, payload, place, (n, skip), layout, &g, work);
        } else {
            // The output's adjoint is read where it is when no operand's adjoint overlaps it
            // (no copy), and zeroed once the node is done; otherwise it is taken out first.
            let at = place.at(n.out) as usize;
            let whole = at * lanes..(at + n.elements() as usize) * lanes;
            let up = if apart(place, n) {
                Upstream::InPlace(whole.start)
            } else {
                take(tape, payload, place, n, &mut g);
                Upstream::Taken(&g)
            };
            let mut vjp = |span| {
                let node = (n, skip);
                node_vjp(tape, payload, place, &mut gather, node, span, up, layout);
            };
            if layout == Layout::All {
                // Every lane: the node's elements are one contiguous run.
                vjp((0, n.elements() as usize * lanes));
            } else {
                for e in 0..n.elements() {
                    vjp((e, lanes));
                }
            }
            if let Upstream::InPlace(_) = up {
                payload.adjoint[whole].fill(R::zero());
            }
        }
    }
    // Every node zeroed its output's adjoint when it took it; what is left non-zero are the
    // leaves, at their own slots (and the seeds, when the result is one).
    let leaves = payload.leaves.iter();
    dirty.extend(leaves.map(|&(s, n)| (s as usize * lanes, (s + n) as usize * lanes)));
    dirty.extend(seeds.map(|s| {
        (
            place.at(s) as usize * lanes,
            (place.at(s) as usize + 1) * lanes,
        )
    }));
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

/// Moves the adjoint of a node's output (every lane) into `g` and zeroes it in the buffer: no
/// other node writes it afterwards, and the VJP reads it from `g` while it accumulates into the
/// operands' adjoints, wherever the placement put them.
#[inline]
fn take<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    place: &Placement,
    n: &TapeNode,
    g: &mut Vec<R>,
) {
    let len = if n.op.is_linalg() {
        tape.linalg(n).out_len()
    } else if matches!(n.op, Op::Select | Op::Ext) {
        1
    } else {
        n.elements()
    };
    let b = p.lanes;
    let at = place.at(n.out) as usize * b;
    let out = &mut p.adjoint[at..at + len as usize * b];
    g.clear();
    g.extend_from_slice(out);
    out.fill(R::zero());
}

/// [`ext_vjp`] in one lane, with the output's adjoint in place.
pub(crate) fn ext_vjp_in_place<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode) {
    let g = [p.adjoint[n.out as usize]];
    let place = Placement::identity(p.slots(), 0..0);
    ext_vjp(tape, p, n, Layout::All, &g, &place);
}

/// A custom primitive's VJP over the node's lanes: operands gathered into `f64` columns, the
/// primitive's VJP, and each differentiable operand's adjoint increased lane by lane. `g` is
/// the output's adjoint over all B lanes.
pub(crate) fn ext_vjp<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    n: &TapeNode,
    layout: Layout,
    g: &[R],
    place: &Placement,
) {
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
    let g: Vec<f64> = active.iter().map(|&l| g[l].to_f64()).collect();
    let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    let mut grads = vec![vec![0.0; active.len()]; args.len()];
    prim.vjp(&refs, &out, &g, &mut grads);
    for (a, d) in args.iter().zip(&grads) {
        if let ExtArg::Slot(s) = *a {
            let s = place.at(s) as usize;
            let adj = &mut p.adjoint[s * b..(s + 1) * b];
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
    place: &Placement,
    (n, skip): (&TapeNode, u8),
    layout: Layout,
    g: &[R],
    work: &mut Work<R>,
) {
    let node = LinNode {
        skip,
        adj_a: place.at(n.a),
        adj_b: place.at(n.b),
        ..tape.linalg(n)
    };
    let b = p.lanes;
    let (x, adj) = (&p.primal, &mut p.adjoint);
    layout.for_ranges(b, |s, e| {
        linalg::vjp(&node, x, adj, g, Lanes { b, s, e }, work)
    });
}

/// One node's VJP over the lanes of its set, through the vectorized lane kernels: element `e` of
/// the node's elements, `b` numbers wide (B, or every element's B lanes at once from `e = 0`).
/// `up` says where the output's adjoint (all elements, all lanes) is read.
#[allow(clippy::too_many_arguments)]
fn node_vjp<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    place: &Placement,
    gather: &mut Gather<R>,
    (n, skip): (&TapeNode, u8),
    (e, b): (u32, usize),
    up: Upstream<'_, R>,
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
    // The operands' adjoints, where the placement put them.
    let (da, dc) = (at(place.at(n.a)), at(place.at(n.b)));
    let x = &p.primal;
    let z = &x[o..o + b];
    let slot = |at: usize| &x[at..at + b];
    let op = n.op;
    // The output's adjoint for these lanes, within the node's.
    let g_run = e as usize * lanes..e as usize * lanes + b;
    let adj = &mut p.adjoint[..];
    match form {
        Form::SlotSlot if a != c && !(grad_a && grad_b) => {
            // One side is a constant leaf: accumulate into the other only.
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            let at = if grad_a { da } else { dc };
            let (d, g) = one_run(adj, at..at + b, up, g_run);
            let grads = if grad_a {
                Grads::First(d)
            } else {
                Grads::Second(d)
            };
            backward2_over(op, ab, (z, g), grads, layout, gather);
        }
        Form::Unary => {
            let (d, g) = one_run(adj, da..da + b, up, g_run);
            backward1_over(op, d, (slot(a), z, g), layout, gather);
        }
        Form::SlotConst => {
            let ab = (Arg::Lanes(slot(a)), Arg::Const(tape.consts[n.b as usize]));
            let (d, g) = one_run(adj, da..da + b, up, g_run);
            backward2_over(op, ab, (z, g), Grads::First(d), layout, gather);
        }
        Form::ConstSlot => {
            let ab = (Arg::Const(tape.consts[n.a as usize]), Arg::Lanes(slot(c)));
            let (d, g) = one_run(adj, dc..dc + b, up, g_run);
            backward2_over(op, ab, (z, g), Grads::Second(d), layout, gather);
        }
        Form::SlotSlot if a == c => {
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            let (d, g) = one_run(adj, da..da + b, up, g_run);
            backward2_over(op, ab, (z, g), Grads::Same(d), layout, gather);
        }
        Form::SlotSlot => {
            // Distinct operands have distinct adjoints (a placement keeps live units apart).
            let (da, dc, g) = two_runs(adj, (da..da + b, dc..dc + b), up, g_run);
            let ab = (Arg::Lanes(slot(a)), Arg::Lanes(slot(c)));
            backward2_over(op, ab, (z, g), Grads::Both(da, dc), layout, gather);
        }
        Form::ConstConst => {}
    }
}

/// Where a node's output adjoint is read in its VJP.
#[derive(Clone, Copy)]
enum Upstream<'g, R> {
    /// Taken out of the buffer first ([`take`]): an operand's adjoint overlaps it.
    Taken(&'g [R]),
    /// In the buffer, from this index: no operand's adjoint overlaps it ([`apart`]).
    InPlace(usize),
}

/// Whether the node's output adjoint (all its elements) and each operand's that its VJP writes
/// are apart in the buffer, so that the VJP can read the first in place while it writes the
/// others. Only a pooled placement ever puts an operand in units the output leaves free.
fn apart(place: &Placement, n: &TapeNode) -> bool {
    let len = n.elements() as usize;
    let run = |slot: u32| {
        let s = place.at(slot) as usize;
        s..s + len
    };
    let out = run(n.out);
    let off = |slot: u32| clear(&run(slot), &out);
    match n.form {
        Form::Unary | Form::SlotConst => off(n.a),
        Form::ConstSlot => off(n.b),
        Form::SlotSlot => off(n.a) && off(n.b),
        Form::ConstConst => true,
    }
}

/// The operand adjoint run `d` to write, and the output adjoint's lanes `g` (relative to the
/// node's output): in place, [`apart`] has kept the two clear of each other.
fn one_run<'a, R: Real>(
    adj: &'a mut [R],
    d: Range<usize>,
    up: Upstream<'a, R>,
    g: Range<usize>,
) -> (&'a mut [R], &'a [R]) {
    match up {
        Upstream::Taken(t) => (&mut adj[d], &t[g]),
        Upstream::InPlace(at) => {
            let [d, g] = disjoint(adj, [d, at + g.start..at + g.end]);
            (d, g)
        }
    }
}

/// [`one_run`] for two operands, whose adjoint runs a placement keeps apart.
fn two_runs<'a, R: Real>(
    adj: &'a mut [R],
    (a, c): (Range<usize>, Range<usize>),
    up: Upstream<'a, R>,
    g: Range<usize>,
) -> (&'a mut [R], &'a mut [R], &'a [R]) {
    match up {
        Upstream::Taken(t) => {
            let [a, c] = disjoint(adj, [a, c]);
            (a, c, &t[g])
        }
        Upstream::InPlace(at) => {
            let [a, c, g] = disjoint(adj, [a, c, at + g.start..at + g.end]);
            (a, c, g)
        }
    }
}

/// Runs of the adjoint buffer borrowed together. They never overlap: a placement keeps live
/// units apart, and [`apart`] checked the output's against the operands' for an in-place `g`.
fn disjoint<R, const N: usize>(adj: &mut [R], runs: [Range<usize>; N]) -> [&mut [R]; N] {
    match adj.get_disjoint_mut(runs) {
        Ok(runs) => runs,
        Err(e) => unreachable!("adjoint runs overlap: {e}"),
    }
}

/// Whether two runs share nothing.
fn clear(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.end <= b.start || b.end <= a.start
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

/// A merge: each lane's adjoint (`g`) goes to the side that lane took, and nowhere else.
fn select_vjp<R: Real>(
    p: &mut Payload<R>,
    sets: &LaneSets,
    place: &Placement,
    (n, skip): (&TapeNode, u8),
    g: &[R],
) {
    let b = p.lanes;
    let then_const = matches!(n.form, Form::ConstSlot | Form::ConstConst) || skip & SKIP_A != 0;
    let else_const = matches!(n.form, Form::SlotConst | Form::ConstConst) || skip & SKIP_B != 0;
    for (set, operand, constant) in [(n.lanes, n.a, then_const), (n.aux, n.b, else_const)] {
        if constant {
            continue;
        }
        let base = place.at(operand) as usize * b;
        for &l in sets.get(set).unwrap_or(&[]) {
            let l = l as usize;
            p.adjoint[base + l] = p.adjoint[base + l] + g[l];
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
        backward(&tape, &mut p, &sets, y..y + 1, (&mut None, Pooling::Auto));
        // d(1/x)/dx = -1/x² in lanes 0 and 2; nothing in lanes 1 and 3 (1/0² would be inf).
        assert_eq!(p.grad(x), &[-1.0, 0.0, -0.25, 0.0]);
        // The same node over every lane reaches all four.
        let all = [TapeNode {
            lanes: crate::lanes::ALL,
            ..tape.nodes[0]
        }];
        tape.nodes.clear();
        tape.nodes.extend(all);
        backward(&tape, &mut p, &sets, y..y + 1, (&mut None, Pooling::Auto));
        assert!(p.grad(x)[1].is_infinite());
    }
}
