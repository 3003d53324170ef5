//! The backward pass: the tape replayed in reverse over lanes (ARCHITECTURE.md "Tape").
//!
//! The result's adjoint is seeded with 1 in every lane (LANGUAGE.md §8.2); each node then sends
//! its output adjoint to its operands through the op's VJP, touching only the lanes that were
//! active when it was recorded. Lanes never mix: lane `b` of a gradient is ∂result_b/∂input_b.

use crate::lanes::LaneSets;
use crate::payload::Payload;
use crate::real::Real;
use crate::tape::{Form, Tape, TapeNode};

/// Runs the backward pass, seeding the given result slots (a scalar result has one).
pub fn backward<R: Real>(tape: &Tape<R>, payload: &mut Payload<R>, sets: &LaneSets, seeds: &[u32]) {
    let lanes = payload.lanes;
    payload.adjoint.clear();
    payload.adjoint.resize(payload.primal.len(), R::zero());
    for &s in seeds {
        payload.adjoint[s as usize * lanes..(s as usize + 1) * lanes].fill(R::one());
    }
    for n in tape.nodes.iter().rev() {
        match sets.get(n.lanes) {
            None => node_vjp(tape, payload, n, 0..lanes),
            Some(subset) => node_vjp(tape, payload, n, subset.iter().map(|&l| l as usize)),
        }
    }
}

#[inline]
fn node_vjp<R: Real>(
    tape: &Tape<R>,
    p: &mut Payload<R>,
    n: &TapeNode,
    lanes: impl Iterator<Item = usize>,
) {
    let b = p.lanes;
    let (o, a, c) = (n.out as usize * b, n.a as usize * b, n.b as usize * b);
    let (x, adj) = (&p.primal, &mut p.adjoint);
    match n.form {
        Form::Unary => {
            for l in lanes {
                let g = adj[o + l];
                adj[a + l] = adj[a + l] + n.op.vjp1(x[a + l], x[o + l], g);
            }
        }
        Form::SlotSlot => {
            for l in lanes {
                let g = adj[o + l];
                let (da, db) = n.op.vjp2(x[a + l], x[c + l], x[o + l], g);
                adj[a + l] = adj[a + l] + da;
                adj[c + l] = adj[c + l] + db;
            }
        }
        Form::SlotConst => {
            let k = tape.consts[n.b as usize];
            for l in lanes {
                let g = adj[o + l];
                let (da, _) = n.op.vjp2(x[a + l], k, x[o + l], g);
                adj[a + l] = adj[a + l] + da;
            }
        }
        Form::ConstSlot => {
            let k = tape.consts[n.a as usize];
            for l in lanes {
                let g = adj[o + l];
                let (_, db) = n.op.vjp2(k, x[c + l], x[o + l], g);
                adj[c + l] = adj[c + l] + db;
            }
        }
    }
}
