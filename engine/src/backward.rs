//! The backward pass: the tape replayed in reverse over lanes (ARCHITECTURE.md "Tape").
//!
//! The result's adjoint is seeded with 1 in every lane (LANGUAGE.md §8.2); each node then sends
//! its output adjoint to its operands through the op's VJP, touching only the lanes that were
//! active when it was recorded. Lanes never mix: lane `b` of a gradient is ∂result_b/∂input_b.
//! Nodes recorded with every lane active run the monomorphized lane kernels of
//! [`crate::prims::kernels`]; nodes of a lane subset visit only their lanes.

use crate::lanes::LaneSets;
use crate::payload::Payload;
use crate::prims::kernels::{Arg, Grads, backward1, backward2};
use crate::real::Real;
use crate::tape::{Form, Tape, TapeNode};

/// Runs the backward pass, seeding the given result slots (a scalar result has one).
pub fn backward<R: Real>(
    tape: &Tape<R>,
    payload: &mut Payload<R>,
    sets: &LaneSets,
    seeds: std::ops::Range<u32>,
) {
    let lanes = payload.lanes;
    payload.adjoint.clear();
    payload.adjoint.resize(payload.slots() * lanes, R::zero());
    payload.adjoint[seeds.start as usize * lanes..seeds.end as usize * lanes].fill(R::one());
    if lanes == 1 && tape.nodes.iter().all(|n| sets.get(n.lanes).is_none()) {
        for n in tape.nodes.iter().rev() {
            node_one_lane(tape, payload, n);
        }
        return;
    }
    for n in tape.nodes.iter().rev() {
        match sets.get(n.lanes) {
            None => node_all_lanes(tape, payload, n),
            Some(subset) => node_some_lanes(tape, payload, n, subset),
        }
    }
}

fn node_all_lanes<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode) {
    let b = p.lanes;
    let (o, a, c) = (n.out as usize * b, n.a as usize * b, n.b as usize * b);
    let x = &p.primal;
    // Operands are always recorded before the node's output: their adjoints lie below it.
    let (below, above) = p.adjoint.split_at_mut(o);
    let g = &above[..b];
    let z = &x[o..o + b];
    let lanes = |s: usize| &x[s..s + b];
    match n.form {
        Form::Unary => backward1(n.op, &mut below[a..a + b], lanes(a), z, g),
        Form::SlotConst => {
            let k = tape.consts[n.b as usize];
            backward2(
                n.op,
                Arg::Lanes(lanes(a)),
                Arg::Const(k),
                z,
                g,
                Grads::First(&mut below[a..a + b]),
            );
        }
        Form::ConstSlot => {
            let k = tape.consts[n.a as usize];
            backward2(
                n.op,
                Arg::Const(k),
                Arg::Lanes(lanes(c)),
                z,
                g,
                Grads::Second(&mut below[c..c + b]),
            );
        }
        Form::SlotSlot if a == c => {
            backward2(
                n.op,
                Arg::Lanes(lanes(a)),
                Arg::Lanes(lanes(c)),
                z,
                g,
                Grads::Same(&mut below[a..a + b]),
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
            backward2(
                n.op,
                Arg::Lanes(lanes(a)),
                Arg::Lanes(lanes(c)),
                z,
                g,
                grads,
            );
        }
    }
}

/// One lane: the kernels' formulas without lane loops (same bits as the lane kernels).
#[inline]
fn node_one_lane<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode) {
    let (o, a, c) = (n.out as usize, n.a as usize, n.b as usize);
    let (x, adj) = (&p.primal, &mut p.adjoint);
    let (z, g) = (x[o], adj[o]);
    match n.form {
        Form::Unary => adj[a] = adj[a] + n.op.vjp1(x[a], z, g),
        Form::SlotSlot => {
            let (da, db) = n.op.vjp2(x[a], x[c], z, g);
            if a == c {
                adj[a] = adj[a] + da + db;
            } else {
                adj[a] = adj[a] + da;
                adj[c] = adj[c] + db;
            }
        }
        Form::SlotConst => adj[a] = adj[a] + n.op.vjp2(x[a], tape.consts[c], z, g).0,
        Form::ConstSlot => adj[c] = adj[c] + n.op.vjp2(tape.consts[a], x[c], z, g).1,
    }
}

fn node_some_lanes<R: Real>(tape: &Tape<R>, p: &mut Payload<R>, n: &TapeNode, subset: &[u32]) {
    let b = p.lanes;
    let (o, a, c) = (n.out as usize * b, n.a as usize * b, n.b as usize * b);
    let (x, adj) = (&p.primal, &mut p.adjoint);
    for &l in subset {
        let l = l as usize;
        let g = adj[o + l];
        match n.form {
            Form::Unary => adj[a + l] = adj[a + l] + n.op.vjp1(x[a + l], x[o + l], g),
            Form::SlotSlot => {
                let (da, db) = n.op.vjp2(x[a + l], x[c + l], x[o + l], g);
                adj[a + l] = adj[a + l] + da;
                adj[c + l] = adj[c + l] + db;
            }
            Form::SlotConst => {
                let da =
                    n.op.vjp2(x[a + l], tape.consts[n.b as usize], x[o + l], g)
                        .0;
                adj[a + l] = adj[a + l] + da;
            }
            Form::ConstSlot => {
                let db =
                    n.op.vjp2(tape.consts[n.a as usize], x[c + l], x[o + l], g)
                        .1;
                adj[c + l] = adj[c + l] + db;
            }
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
