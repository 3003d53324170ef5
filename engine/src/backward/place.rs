//! Where the backward pass keeps adjoints.
//!
//! An intermediate value's adjoint is live only from the last node that reads the value (the
//! first one the backward pass reaches) until the node that produced it has run its VJP, after
//! which it is zero again (`payload.rs`). An adjoint buffer that mirrors the payload therefore
//! touches every slot once per pass, and at wide batches the payload is megabytes: the adjoints
//! stream through memory a second time beside the primal values the VJPs read. A [`Placement`]
//! puts the intermediates' adjoints in a small pool instead, reusing a region as soon as the
//! value that held it is dead, so the pass works in cache. Leaves (inputs, constant tensor
//! elements) keep their adjoints at their own slots, where gradients are read.
//!
//! The plan works on **units**: slot ranges that nodes touch together. Every node writes one
//! range (its result, with any extra slots its VJP reads) and reads its operands' ranges, and an
//! operand may be part of a larger value (a matrix row read with `ref`); overlapping ranges
//! merge into one unit, which moves as a whole, so an operand's adjoint stays contiguous. A unit
//! made only of node results is pooled; it is live from its last reader to its first writer
//! (the result slots, seeded before any node runs, to the end). Regions are handed out in the
//! backward order, each unit taking a freed region of its exact size or a new one; everything is
//! a pure function of the tape, so the same tape gives the same placement and the same bits.

use crate::payload::Payload;
use crate::prims::scalar::Op;
use crate::real::Real;
use crate::tape::{ExtArg, Form, Tape, TapeNode};
use std::collections::BTreeMap;
use std::ops::Range;

/// Adjoint buffers at least this large (bytes, all lanes) are worth a pooled placement: about
/// a quarter of a core's L2 cache on current server parts. Below it the whole buffer stays in
/// cache anyway and the plan would cost more than it saves.
pub const POOL_BYTES: usize = 512 << 10;

/// When the backward pass pools adjoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pooling {
    /// When the adjoint buffer would be at least [`POOL_BYTES`].
    #[default]
    Auto,
    /// Never: every adjoint at its own slot.
    Off,
    /// Always (the result is the same bits; this is for tests and measurements).
    Always,
}

/// Per payload slot, the slot its adjoint lives at. See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Per slot, its adjoint's slot; empty when every adjoint sits at its own slot.
    map: Vec<u32>,
    /// Slots the adjoint buffer needs.
    len: usize,
    /// The result slots the plan was made for.
    seeds: Range<u32>,
}

impl Placement {
    /// Every adjoint at its own slot.
    pub fn identity(slots: usize, seeds: Range<u32>) -> Self {
        Placement {
            map: Vec::new(),
            len: slots,
            seeds,
        }
    }

    /// The placement for a backward pass over `tape` from `seeds`: pooled or the identity, as
    /// `pooling` says.
    pub fn plan<R: Real>(
        tape: &Tape<R>,
        payload: &Payload<R>,
        seeds: Range<u32>,
        pooling: Pooling,
    ) -> Self {
        let slots = payload.slots();
        let pool = match pooling {
            Pooling::Auto => slots * payload.lanes * size_of::<R>() >= POOL_BYTES,
            Pooling::Off => false,
            Pooling::Always => true,
        };
        if pool {
            Self::pooled(tape, payload, seeds)
        } else {
            Self::identity(slots, seeds)
        }
    }

    /// Whether this placement was made for a pass from `seeds` over `slots` slots.
    pub fn fits(&self, slots: usize, seeds: &Range<u32>) -> bool {
        self.seeds == *seeds
            && (self.map.is_empty() && self.len == slots || self.map.len() == slots)
    }

    /// Whether adjoints are pooled (as opposed to each at its own slot).
    pub fn is_pooled(&self) -> bool {
        !self.map.is_empty()
    }

    /// The slot where `slot`'s adjoint lives.
    #[inline(always)]
    pub fn at(&self, slot: u32) -> u32 {
        self.map.get(slot as usize).copied().unwrap_or(slot)
    }

    /// Slots the adjoint buffer needs (the payload's, then the pool's).
    pub fn buffer_slots(&self) -> usize {
        self.len
    }

    /// Slots in the pool (0 for the identity).
    pub fn pool(&self) -> usize {
        if self.map.is_empty() {
            0
        } else {
            self.len - self.map.len()
        }
    }

    /// Pools every unit made only of node results (see the module docs).
    pub fn pooled<R: Real>(tape: &Tape<R>, payload: &Payload<R>, seeds: Range<u32>) -> Self {
        let slots = payload.slots();
        let nodes = tape.nodes.len();
        // Per slot: the furthest end of a range that starts there, and whether a node writes it.
        let mut reach = vec![0u32; slots];
        let mut written = vec![false; slots];
        let mut mark = |s: u32, len: u32, writes: bool| {
            let (s, e) = (s as usize, (s + len) as usize);
            if len == 0 || e > slots {
                return;
            }
            reach[s] = reach[s].max(e as u32);
            if writes {
                written[s..e].fill(true);
            }
        };
        for n in &tape.nodes {
            ranges(tape, n, &mut mark);
        }
        mark(seeds.start, seeds.len() as u32, false);
        // Units: overlapping ranges merged, in slot order.
        let mut unit = vec![u32::MAX; slots];
        let mut units: Vec<Range<u32>> = Vec::new();
        for s in 0..slots {
            match units.last_mut() {
                Some(u) if (s as u32) < u.end => u.end = u.end.max(reach[s]),
                _ if reach[s] > s as u32 => units.push(s as u32..reach[s]),
                _ => continue,
            }
            unit[s] = units.len() as u32 - 1;
        }
        let mut leaf = vec![false; slots];
        for &(s, n) in &payload.leaves {
            let (s, e) = (s as usize, (s + n) as usize);
            leaf[s.min(slots)..e.min(slots)].fill(true);
        }
        let pooled: Vec<bool> = units
            .iter()
            .map(|u| (u.start..u.end).all(|s| written[s as usize] && !leaf[s as usize]))
            .collect();
        // Lifetimes in node order: the first node writing the unit, the last touching it.
        let mut first = vec![u32::MAX; units.len()];
        let mut last = vec![0u32; units.len()];
        for (i, n) in tape.nodes.iter().enumerate() {
            ranges(tape, n, &mut |s: u32, len: u32, writes: bool| {
                if len == 0 || (s + len) as usize > slots {
                    return;
                }
                let u = unit[s as usize] as usize;
                if writes {
                    first[u] = first[u].min(i as u32);
                }
                last[u] = last[u].max(i as u32);
            });
        }
        if !seeds.is_empty() && (seeds.end as usize) <= slots {
            last[unit[seeds.start as usize] as usize] = nodes as u32;
        }
        // Regions, handed out in the backward order.
        let mut opens: Vec<Vec<u32>> = vec![Vec::new(); nodes + 1];
        let mut closes: Vec<Vec<u32>> = vec![Vec::new(); nodes + 1];
        for u in 0..units.len() {
            if pooled[u] && first[u] != u32::MAX {
                opens[last[u] as usize].push(u as u32);
                closes[first[u] as usize].push(u as u32);
            }
        }
        let mut free: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut region = vec![u32::MAX; units.len()];
        let mut top = 0u32;
        for i in (0..=nodes).rev() {
            for &u in &opens[i] {
                let size = units[u as usize].len() as u32;
                region[u as usize] = match free.get_mut(&size).and_then(Vec::pop) {
                    Some(r) => r,
                    None => {
                        top += size;
                        top - size
                    }
                };
            }
            for &u in &closes[i] {
                let size = units[u as usize].len() as u32;
                free.entry(size).or_default().push(region[u as usize]);
            }
        }
        let mut map: Vec<u32> = (0..slots as u32).collect();
        for (u, r) in units.iter().zip(&region) {
            if *r != u32::MAX {
                for s in u.clone() {
                    map[s as usize] = slots as u32 + r + (s - u.start);
                }
            }
        }
        Placement {
            map,
            len: slots + top as usize,
            seeds,
        }
    }
}

/// Calls `f(first slot, length, writes)` for each slot range node `n` touches: the range it
/// writes (its result and any extra slots), then each operand range it reads.
pub fn ranges<R: Real>(tape: &Tape<R>, n: &TapeNode, f: &mut impl FnMut(u32, u32, bool)) {
    let const_a = matches!(n.form, Form::ConstSlot | Form::ConstConst);
    let const_b = matches!(n.form, Form::SlotConst | Form::ConstConst | Form::Unary);
    match n.op {
        Op::Select => {
            f(n.out, 1, true);
            if !const_a {
                f(n.a, 1, false);
            }
            if !matches!(n.form, Form::SlotConst | Form::ConstConst) {
                f(n.b, 1, false);
            }
        }
        Op::Ext => {
            f(n.out, 1, true);
            let Some(call) = tape.ext.get(n.a as usize) else {
                return;
            };
            let args = tape
                .ext_args
                .get(call.start as usize..(call.start + call.len) as usize);
            for a in args.unwrap_or(&[]) {
                if let ExtArg::Slot(s) | ExtArg::Data(s) = *a {
                    f(s, 1, false);
                }
            }
        }
        op if op.is_linalg() => {
            let node = tape.linalg(n);
            f(node.out, node.out_len() + node.extra_len(true), true);
            let (la, lb) = node.operand_lens();
            f(node.a, la, false);
            if lb > 0 {
                f(node.b, lb, false);
            }
        }
        _ => {
            let e = n.elements();
            f(n.out, e, true);
            if !const_a {
                f(n.a, e, false);
            }
            if !const_b {
                f(n.b, e, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    /// The 80-step Kalman filter recorded over `lanes` lanes: the walk and its result slot.
    fn kalman(lanes: usize) -> (Vm<f32>, u32) {
        let src = include_str!("../../../docs/examples/kalman2d.scm");
        let program = Program::new(src, &["q", "r", "obs"]).expect("program");
        let mut b = Bindings::<f32>::new();
        let per_lane = |x: f32| (0..lanes).map(|l| x * (1.0 + 0.01 * l as f32)).collect();
        let obs = (0..160)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
            .collect();
        b.lanes("q", per_lane(0.1))
            .lanes("r", per_lane(0.5))
            .matrix("obs", 80, 2, obs);
        let mut vm = Vm::default();
        let v = vm.eval(&program, &b, true).expect("walk");
        (vm, v.slot)
    }

    /// Checked slot by slot, independently of the unit bookkeeping: two slots whose adjoints
    /// share a pool slot are never live at once, leaves keep their own slots, and the pool is a
    /// small fraction of the payload.
    #[test]
    fn pooled_adjoints_never_share_a_slot_while_live() {
        let (vm, y) = kalman(4);
        let (tape, payload) = (&vm.tape, &vm.payload);
        let slots = payload.slots();
        let place = Placement::pooled(tape, payload, y..y + 1);
        assert!(place.is_pooled() && place.fits(slots, &(y..y + 1)));
        assert!(
            place.pool() * 10 < slots,
            "pool of {} slots for {slots}",
            place.pool()
        );
        for &(s, n) in &payload.leaves {
            for s in s..s + n {
                assert_eq!(place.at(s), s, "leaf slot {s} moved");
            }
        }
        // Per slot: [first node writing it, last node touching it] (the result: to the end).
        let mut live = vec![(u32::MAX, 0u32); slots];
        for (i, n) in tape.nodes.iter().enumerate() {
            ranges(tape, n, &mut |s, len, writes| {
                for s in s..s + len {
                    let l = &mut live[s as usize];
                    if writes {
                        l.0 = l.0.min(i as u32);
                    }
                    l.1 = l.1.max(i as u32);
                }
            });
        }
        live[y as usize].1 = u32::MAX;
        let mut sharing: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for s in 0..slots as u32 {
            let at = place.at(s);
            assert!((at as usize) < place.buffer_slots());
            if at as usize >= slots {
                sharing.entry(at).or_default().push(s);
            } else {
                assert_eq!(at, s, "a payload slot holds another slot's adjoint");
            }
        }
        let mut shared = 0;
        for (at, group) in &sharing {
            let mut spans: Vec<(u32, u32)> = group.iter().map(|&s| live[s as usize]).collect();
            spans.sort();
            for w in spans.windows(2) {
                assert!(w[0].1 < w[1].0, "pool slot {at}: lifetimes {w:?} overlap");
            }
            shared += group.len() - 1;
        }
        assert!(
            shared > slots / 2,
            "only {shared} of {slots} adjoints share"
        );
    }

    /// The plan is a function of the tape: two walks give the same placement.
    #[test]
    fn placement_is_deterministic_and_auto_pools_only_wide_batches() {
        let (a, y) = kalman(256);
        let (b, _) = kalman(256);
        let plan = |vm: &Vm<f32>, p| Placement::plan(&vm.tape, &vm.payload, y..y + 1, p);
        assert_eq!(plan(&a, Pooling::Auto), plan(&b, Pooling::Auto));
        assert!(plan(&a, Pooling::Auto).is_pooled());
        assert!(!plan(&a, Pooling::Off).is_pooled());
        let (narrow, y) = kalman(2);
        let auto = Placement::plan(&narrow.tape, &narrow.payload, y..y + 1, Pooling::Auto);
        assert_eq!(auto, Placement::identity(narrow.payload.slots(), y..y + 1));
    }

    /// The backward pass reads an elementwise node's output adjoint in place only when no
    /// operand's adjoint shares its units (`backward::apart`). The planner never makes them
    /// share (the test above), but a placement that does — here `(sin x)`'s adjoint in the
    /// units of the product that reads it — still gives the same bits: the output's adjoint is
    /// taken out before the operand's accumulates there.
    #[test]
    fn an_operand_in_its_readers_units_gives_the_same_bits() {
        let program = Program::new("(* (sin x) (+ x 2.0))", &["x"]).expect("program");
        let mut b = Bindings::<f64>::new();
        b.lanes("x", (0..6).map(|l| 0.3 + 0.4 * l as f64).collect());
        let grad = |share: bool| {
            let mut vm = Vm::default();
            let v = vm.eval(&program, &b, true).expect("walk");
            let slots = vm.payload.slots();
            let product = vm.tape.nodes.last().expect("the product");
            assert_eq!(product.out, v.slot);
            if share {
                let mut map: Vec<u32> = (0..slots as u32).collect();
                map[product.a as usize] = product.out;
                vm.placement = Some(Placement {
                    map,
                    len: slots,
                    seeds: v.slot..v.slot + 1,
                });
            }
            vm.backward(v);
            assert_eq!(vm.placement.as_ref().map(|p| p.is_pooled()), Some(share));
            vm.grad(0).iter().map(|g| g.to_bits()).collect::<Vec<_>>()
        };
        let own = grad(false);
        let want: Vec<u64> = (0..6)
            .map(|l| {
                let x = 0.3 + 0.4 * l as f64;
                (x.cos() * (x + 2.0) + x.sin()).to_bits()
            })
            .collect();
        assert_eq!(own.len(), 6);
        for (g, w) in own.iter().zip(&want) {
            let (g, w) = (f64::from_bits(*g), f64::from_bits(*w));
            assert!((g - w).abs() <= 1e-14 * w.abs(), "{g} against {w}");
        }
        assert_eq!(grad(true), own);
    }
}
