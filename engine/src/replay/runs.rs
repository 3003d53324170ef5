//! Element runs: a 2-, 3- or 4-element `+`, `-` or `*` node of the flat program as one step, and
//! likewise the 2..=4 one-element nodes of a number broadcast over a tensor (`scale`).
//!
//! The tensors of scientific candidates are small (a 2×2 covariance, a 3-vector), and an
//! elementwise node over one runs the same formula on consecutive slots (a broadcast records
//! one node per element, so that the number's adjoint sums what each element sends it). Unrolled one step per
//! element, each element pays a dispatch and a bounds check per operand; as one run it pays one
//! dispatch and one check per operand *range*, and the fixed-size body compiles to straight-line
//! code (`N` is a const parameter, so there is no loop and no stride bookkeeping).
//!
//! Every element still runs the formula the per-element steps run ([`Op::eval2`] forward, the
//! [`Op::vjp2`] adjoint added into each operand backward), so the bits are unchanged. A run is
//! formed only where that reorders nothing observable: forward, the output range overlaps no
//! operand range (every operand is loaded before the first store); backward, the output range
//! and the ranges receiving adjoints are pairwise disjoint, so every slot gets exactly one
//! addition and their order does not matter.

use crate::prims::scalar::Op;
use crate::real::Real;
use crate::tape::{Form, SKIP_A, SKIP_B, TapeNode};

/// The sizes a run covers; longer nodes stay one step per element.
const SIZES: std::ops::RangeInclusive<u32> = 2..=4;

/// Which operands of a backward run receive adjoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    Both,
    /// Only `a` (for the symmetric `+` and `*` a lone `b` is swapped into `a` at build time).
    First,
    /// Only `b` of a `-`: it receives the negated adjoint.
    Second,
}

impl Want {
    /// Which of two operands want adjoints; `None` when neither does.
    pub(super) fn of(a: bool, b: bool) -> Option<Want> {
        match (a, b) {
            (true, true) => Some(Want::Both),
            (true, false) => Some(Want::First),
            (false, true) => Some(Want::Second),
            (false, false) => None,
        }
    }

    /// Whether the first and the second operand want adjoints.
    pub(super) fn pair(self) -> (bool, bool) {
        (self != Want::Second, self != Want::First)
    }
}

/// Whether `[x, x + n)` and `[y, y + n)` share no slot.
fn disjoint(x: u32, y: u32, n: u32) -> bool {
    x + n <= y || y + n <= x
}

/// Whether node `n` (one lane) runs forward as one run.
pub(super) fn forward_fits(n: &TapeNode) -> bool {
    let k = n.elements();
    n.form == Form::SlotSlot
        && matches!(n.op, Op::Add | Op::Add0 | Op::Sub | Op::Mul)
        && SIZES.contains(&k)
        && disjoint(n.out, n.a, k)
        && disjoint(n.out, n.b, k)
}

/// The backward run of node `n` given which operands want adjoints: `(want, a, b)` with the
/// operands swapped where [`Want::First`] stands for a lone `b`; `None` when it does not fit.
pub(super) fn backward_fits(n: &TapeNode, grad_a: bool, grad_b: bool) -> Option<(Want, u32, u32)> {
    let k = n.elements();
    if !forward_fits(n) || !(grad_a || grad_b) || (grad_a && grad_b && !disjoint(n.a, n.b, k)) {
        return None;
    }
    Some(match (grad_a, grad_b, n.op) {
        (true, true, _) => (Want::Both, n.a, n.b),
        (true, false, _) => (Want::First, n.a, n.b),
        (false, _, Op::Sub) => (Want::Second, n.a, n.b),
        (false, _, _) => (Want::First, n.b, n.a),
    })
}

/// `N` consecutive slots from `at`, as an array (one bounds check).
#[inline(always)]
fn load<R: Real, const N: usize>(x: &[R], at: u32) -> [R; N] {
    let mut v = [R::zero(); N];
    v.copy_from_slice(&x[at as usize..at as usize + N]);
    v
}

/// `x[o + e] = op(x[a + e], x[b + e])` for `e < N`.
#[inline(always)]
fn forward_n<R: Real, const N: usize>(op: Op, x: &mut [R], (o, a, b): (u32, u32, u32)) {
    let (xa, xb) = (load::<R, N>(x, a), load::<R, N>(x, b));
    let out = &mut x[o as usize..o as usize + N];
    for e in 0..N {
        out[e] = op.eval2(xa[e], xb[e]);
    }
}

/// Each wanted operand's adjoint increased by its share of `ō` for `e < N` (`+ da` / `+ db`, as
/// the per-element steps add them).
#[inline(always)]
fn backward_n<R: Real, const N: usize>(
    op: Op,
    want: Want,
    x: &[R],
    adj: &mut [R],
    (o, a, b): (u32, u32, u32),
) {
    let g = load::<R, N>(adj, o);
    let (xa, xb) = match op {
        Op::Mul => (load::<R, N>(x, a), load::<R, N>(x, b)),
        _ => ([R::zero(); N], [R::zero(); N]),
    };
    let (mut da, mut db) = ([R::zero(); N], [R::zero(); N]);
    for e in 0..N {
        (da[e], db[e]) = op.vjp2(xa[e], xb[e], R::zero(), g[e]);
    }
    if want != Want::Second {
        add(adj, a, &da);
    }
    if want != Want::First {
        add(adj, b, &db);
    }
}

/// `adj[at + e] += d[e]` for `e < N`.
#[inline(always)]
fn add<R: Real, const N: usize>(adj: &mut [R], at: u32, d: &[R; N]) {
    let s = &mut adj[at as usize..at as usize + N];
    for e in 0..N {
        s[e] = s[e] + d[e];
    }
}

/// A run's op and size as one small number, so that running it is a single dispatch: the
/// op's index in `OPS` times 3 plus `n - 2`.
pub(super) fn kind(op: Op, n: u32) -> u8 {
    let op = OPS.iter().position(|&o| o == op).unwrap_or(3);
    (op * 3) as u8 + n.clamp(2, 4) as u8 - 2
}

/// The ops a run may hold, in [`kind`] order.
const OPS: [Op; 4] = [Op::Add, Op::Add0, Op::Sub, Op::Mul];

/// Runs kind `k` ([`kind`]) with its op and size as constants of the body.
macro_rules! dispatch {
    ($k:expr, $f:ident, ($($arg:expr),*)) => {
        match $k {
            0 => $f::<R, 2>(Op::Add, $($arg),*),
            1 => $f::<R, 3>(Op::Add, $($arg),*),
            2 => $f::<R, 4>(Op::Add, $($arg),*),
            3 => $f::<R, 2>(Op::Add0, $($arg),*),
            4 => $f::<R, 3>(Op::Add0, $($arg),*),
            5 => $f::<R, 4>(Op::Add0, $($arg),*),
            6 => $f::<R, 2>(Op::Sub, $($arg),*),
            7 => $f::<R, 3>(Op::Sub, $($arg),*),
            8 => $f::<R, 4>(Op::Sub, $($arg),*),
            9 => $f::<R, 2>(Op::Mul, $($arg),*),
            10 => $f::<R, 3>(Op::Mul, $($arg),*),
            _ => $f::<R, 4>(Op::Mul, $($arg),*),
        }
    };
}

/// A forward run of kind `k`.
#[inline(always)]
pub(super) fn forward<R: Real>(k: u8, x: &mut [R], slots: (u32, u32, u32)) {
    dispatch!(k, forward_n, (x, slots))
}

/// A backward run of kind `k`.
#[inline(always)]
pub(super) fn backward<R: Real>(k: u8, want: Want, x: &[R], adj: &mut [R], slots: (u32, u32, u32)) {
    dispatch!(k, backward_n, (want, x, adj, slots))
}

/// A broadcast run: `n` consecutive one-element nodes `x[o + e] = op(x[s], x[v + e])` (`first`)
/// or `op(x[v + e], x[s])` — a number `s` against consecutive tensor elements `v`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Broadcast {
    pub op: Op,
    pub n: u8,
    pub first: bool,
    pub o: u32,
    pub s: u32,
    pub v: u32,
    /// The nodes' common skip bits (which operands want no adjoint).
    pub skip: u8,
}

impl Broadcast {
    /// Backward: which of the number (`First`) and the tensor elements (`Second`) receive
    /// adjoints; `None` when neither does.
    pub fn want(&self) -> Option<Want> {
        let (sa, sb) = (self.skip & SKIP_A == 0, self.skip & SKIP_B == 0);
        let (number, tensor) = if self.first { (sa, sb) } else { (sb, sa) };
        Want::of(number, tensor)
    }
}

/// The broadcast run starting at `nodes[0]`, if the nodes there form one: 2..=4 one-element
/// `+`/`*` nodes on slots with one operand fixed and the other and the output advancing by one,
/// the same skip bits, no guard between them (`guard_inside(k)`: a guard sits before node `k`),
/// and no overlap between the output range, the number and the tensor range. (`-` is left out:
/// its adjoints depend on the operand order, which `+` and `*` do not.)
pub(super) fn broadcast(
    nodes: &[TapeNode],
    skip: &[u8],
    guard_inside: impl Fn(usize) -> bool,
) -> Option<Broadcast> {
    let one = |n: &TapeNode, op: Op| {
        n.op == op && n.form == Form::SlotSlot && n.elements() == 1 && n.a != n.b
    };
    let (first, second) = (nodes.first()?, nodes.get(1)?);
    if !matches!(first.op, Op::Add | Op::Add0 | Op::Mul) || !one(first, first.op) {
        return None;
    }
    let number_first = second.a == first.a;
    let (s, v) = if number_first {
        (first.a, first.b)
    } else {
        (first.b, first.a)
    };
    let skip0 = skip.first().copied().unwrap_or(0);
    let mut n = 1u32;
    while (n as usize) < nodes.len() && SIZES.contains(&(n + 1)) {
        let k = &nodes[n as usize];
        let (ks, kv) = if number_first { (k.a, k.b) } else { (k.b, k.a) };
        let fits = one(k, first.op)
            && k.out == first.out + n
            && ks == s
            && kv == v + n
            && skip.get(n as usize).copied().unwrap_or(0) == skip0
            && !guard_inside(n as usize);
        if !fits {
            break;
        }
        n += 1;
    }
    let o = first.out;
    let apart = disjoint(o, v, n) && !(o..o + n).contains(&s) && !(v..v + n).contains(&s);
    (SIZES.contains(&n) && apart).then_some(Broadcast {
        op: first.op,
        n: n as u8,
        first: number_first,
        o,
        s,
        v,
        skip: skip0,
    })
}

/// `x[o + e] = op(x[s], x[v + e])` (or the operands the other way round) for `e < N`.
#[inline(always)]
fn broadcast_n<R: Real, const N: usize>(
    op: Op,
    first: bool,
    x: &mut [R],
    (o, s, v): (u32, u32, u32),
) {
    let (xs, xv) = (x[s as usize], load::<R, N>(x, v));
    let out = &mut x[o as usize..o as usize + N];
    for e in 0..N {
        out[e] = if first {
            op.eval2(xs, xv[e])
        } else {
            op.eval2(xv[e], xs)
        };
    }
}

/// The adjoints of a broadcast run: the tensor elements' once each, the number's summed over
/// the elements from the last to the first (the order the per-element steps add them in).
#[inline(always)]
fn broadcast_back_n<R: Real, const N: usize>(
    op: Op,
    want: Want,
    x: &[R],
    adj: &mut [R],
    (o, s, v): (u32, u32, u32),
) {
    let g = load::<R, N>(adj, o);
    let zero = R::zero();
    // `+` sends `ō` to both sides, `*` sends `ō·other`: the operand order does not matter.
    let xs = if op == Op::Mul && want != Want::First {
        x[s as usize]
    } else {
        zero
    };
    let xv = if op == Op::Mul && want != Want::Second {
        load::<R, N>(x, v)
    } else {
        [zero; N]
    };
    if want != Want::First {
        let mut dv = [zero; N];
        for e in 0..N {
            dv[e] = op.vjp2(xv[e], xs, zero, g[e]).0;
        }
        add(adj, v, &dv);
    }
    if want != Want::Second {
        let mut acc = adj[s as usize];
        for e in (0..N).rev() {
            acc = acc + op.vjp2(xs, xv[e], zero, g[e]).0;
        }
        adj[s as usize] = acc;
    }
}

/// A forward broadcast run.
#[inline(always)]
pub(super) fn broadcast_forward<R: Real>(k: u8, first: bool, x: &mut [R], slots: (u32, u32, u32)) {
    dispatch!(k, broadcast_n, (first, x, slots))
}

/// A backward broadcast run.
#[inline(always)]
pub(super) fn broadcast_backward<R: Real>(
    k: u8,
    want: Want,
    x: &[R],
    adj: &mut [R],
    slots: (u32, u32, u32),
) {
    dispatch!(k, broadcast_back_n, (want, x, adj, slots))
}
