//! Linear-algebra kernels: forward values and VJPs of the tensor primitives that are not
//! elementwise (docs/language-reference.md §6.5–§6.6).
//!
//! A tensor's elements sit in consecutive payload slots, element-major and lane-minor: element
//! `e` of lane `l` of the tensor at slot `t` is at `(t + e) * B + l`. Every kernel therefore works
//! on lane slices — "element e over lanes s..e" — and the loops over lanes vectorize. A kernel
//! runs over one lane range at a time; the walk and the backward pass call it for every range of
//! the active lane layout, so a node touches only the lanes that were active when it ran.
//!
//! Reductions accumulate in increasing index order (§7). VJPs reuse what the forward computed:
//! above 3x3, `det` keeps its cofactor matrix and `logdet` its inverse in extra slots after the
//! result; `normalize` keeps its norm; `inv` differentiates through its own output. With one lane
//! (B = 1) a tensor's elements are contiguous and the `*_one` kernels index them directly, with
//! the same arithmetic in the same order, so a lane alone and the same lane in a batch agree bit
//! for bit.
//!
//! - [`products`]: `dot`, `vsum`, `trace`, `transpose`, `matmul`, `matvec`, `outer`;
//! - [`geometry`]: `cross`, `norm`, `normalize`;
//! - [`solve`]: `det`, `logdet`, `inv` (closed forms up to 3x3, LU with partial pivoting above).

pub mod geometry;
pub mod products;
pub mod solve;

use super::scalar::Op;
use crate::real::Real;
use std::ops::Range;

/// One linear-algebra application: the op, its slots and its sizes.
///
/// Sizes by op: `dot`/`norm`/`normalize`/`vsum` — `n`; `cross` — 3; `trace`/`transpose` — an
/// `m×n` operand; `matmul` — `m×k` by `k×n`; `matvec` — `m×k` by `k`; `outer` — `m` by `n`;
/// `det`/`logdet`/`inv` — `n×n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinNode {
    pub op: Op,
    pub out: u32,
    /// The first operand.
    pub a: u32,
    /// The second operand, or for `normalize`, `det` and `logdet` the extra slots their VJPs read.
    pub b: u32,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// Operands whose adjoints the VJP skips ([`crate::tape::SKIP_A`], [`crate::tape::SKIP_B`]).
    pub skip: u8,
    /// Where the lane VJPs ([`vjp`]) accumulate the adjoints of `a` and `b`: their own slots,
    /// unless the backward pass placed them elsewhere ([`crate::backward`]'s placement).
    pub adj_a: u32,
    pub adj_b: u32,
}

impl LinNode {
    /// The number of elements of the result.
    pub fn out_len(&self) -> u32 {
        let (m, n) = (self.m, self.n);
        match self.op {
            Op::Dot | Op::Norm | Op::VSum | Op::Trace | Op::Det | Op::LogDet => 1,
            Op::Cross => 3,
            Op::Normalize => n,
            Op::Transpose | Op::Outer => m * n,
            Op::MatMul => m * n,
            Op::MatVec => m,
            Op::Inv => n * n,
            _ => 1,
        }
    }

    /// The element counts of the operands `a` and `b` (0 when there is no second operand).
    pub fn operand_lens(&self) -> (u32, u32) {
        let (m, k, n) = (self.m, self.k, self.n);
        match self.op {
            Op::Dot => (n, n),
            Op::Cross => (3, 3),
            Op::Norm | Op::Normalize | Op::VSum => (n, 0),
            Op::Trace | Op::Transpose => (m * n, 0),
            Op::MatMul => (m * k, k * n),
            Op::MatVec => (m * k, k),
            Op::Outer => (m, n),
            Op::Det | Op::LogDet | Op::Inv => (n * n, 0),
            _ => (0, 0),
        }
    }

    /// Whether the VJP accumulates into operand `a` / `b`.
    pub fn grad_a(&self) -> bool {
        self.skip & crate::tape::SKIP_A == 0
    }

    pub fn grad_b(&self) -> bool {
        self.skip & crate::tape::SKIP_B == 0
    }

    /// Multiply-adds per lane, roughly: what the op costs beyond the size of its result.
    pub fn work(&self) -> u64 {
        let (m, k, n) = (self.m as u64, self.k as u64, self.n as u64);
        match self.op {
            Op::MatMul => m * k * n,
            Op::MatVec => m * k,
            Op::Det | Op::LogDet | Op::Inv if n > 3 => n * n * n,
            Op::Transpose | Op::Outer | Op::Trace => m * n,
            _ => n,
        }
    }

    /// Extra slots after the result: `normalize` keeps its norm (always), `det` its cofactor
    /// matrix and `logdet` its inverse (only when recording, for the VJP).
    pub fn extra_len(&self, record: bool) -> u32 {
        match self.op {
            Op::Normalize => 1,
            Op::Det | Op::LogDet if record && self.n > 3 => self.n * self.n,
            _ => 0,
        }
    }
}

/// Lane slices of element `e` of the tensor at `slot` (slot relative to the slice's start).
#[derive(Clone, Copy, Debug)]
pub struct Lanes {
    /// The batch width B.
    pub b: usize,
    /// The lane range.
    pub s: usize,
    pub e: usize,
}

impl Lanes {
    #[inline(always)]
    pub fn at(&self, slot: u32, el: u32) -> Range<usize> {
        let o = (slot + el) as usize * self.b;
        o + self.s..o + self.e
    }

    pub fn len(&self) -> usize {
        self.e - self.s
    }

    pub fn is_empty(&self) -> bool {
        self.e == self.s
    }
}

/// Reusable scratch buffers for kernels that need temporaries.
#[derive(Debug, Default)]
pub struct Work<R> {
    pub(crate) a: Vec<R>,
    pub(crate) b: Vec<R>,
    pub(crate) c: Vec<R>,
    pub(crate) d: Vec<R>,
}

/// Which kernel file runs an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Products,
    Geometry,
    Solve,
}

fn family(op: Op) -> Option<Family> {
    match op {
        Op::Dot | Op::VSum | Op::Trace | Op::Transpose | Op::MatMul | Op::MatVec | Op::Outer => {
            Some(Family::Products)
        }
        Op::Cross | Op::Norm | Op::Normalize => Some(Family::Geometry),
        Op::Det | Op::LogDet | Op::Inv => Some(Family::Solve),
        _ => None,
    }
}

/// Whether the one-lane (contiguous) kernels cover this op: products, `cross` and `norm`.
fn has_one_lane(op: Op) -> bool {
    family(op) == Some(Family::Products) || matches!(op, Op::Cross | Op::Norm)
}

/// A one-lane (B = 1) kernel with its op and sizes resolved: forward `(node, the buffer below
/// the result, the buffer from the result on)` or VJP `(node, primal, adjoint)`.
pub type OneLane<R> = fn(&LinNode, &[R], &mut [R]);

/// The one-lane forward and VJP kernels [`forward`] and [`vjp`] dispatch `node` to at B = 1,
/// chosen once (for a loop that runs the same node many times), when it has them. The VJP
/// kernel does not check the skip bits for "no operand wants an adjoint": callers skip it then.
pub fn one_lane<R: Real>(node: &LinNode) -> Option<(OneLane<R>, OneLane<R>)> {
    match family(node.op) {
        Some(Family::Products) => Some((products::forward_one, products::vjp_one)),
        Some(Family::Solve) => solve::one_lane(node),
        _ => None,
    }
}

/// Whether `node`'s VJP sends an adjoint anywhere (false when every operand is a constant leaf).
pub fn wants_vjp(node: &LinNode) -> bool {
    node.grad_a() || (node.operand_lens().1 > 0 && node.grad_b())
}

/// Runs `node` forward over lanes `ln`; `x` is the whole primal buffer. With `record`, also
/// fills the extra slots its VJP reads.
pub fn forward<R: Real>(node: &LinNode, x: &mut [R], ln: Lanes, record: bool, w: &mut Work<R>) {
    let (src, dst) = x.split_at_mut(node.out as usize * ln.b);
    let one = ln.b == 1 && has_one_lane(node.op);
    match family(node.op) {
        Some(Family::Products) if one => products::forward_one(node, src, dst),
        Some(Family::Products) => products::forward(node, src, dst, ln),
        Some(Family::Geometry) if one => geometry::forward_one(node, src, dst),
        Some(Family::Geometry) => geometry::forward(node, src, dst, ln),
        Some(Family::Solve) if ln.b == 1 && solve::forward_one(node, src, dst) => {}
        Some(Family::Solve) => solve::forward(node, src, dst, ln, record, w),
        None => {}
    }
}

/// Accumulates `node`'s VJP over lanes `ln` into the operands' adjoints, which sit at
/// `node.adj_a` and `node.adj_b` of `adj`; `g` holds the result's adjoint, laid out as a tensor
/// at slot 0 (element `e` of lane `l` at `e * B + l`).
pub fn vjp<R: Real>(node: &LinNode, x: &[R], adj: &mut [R], g: &[R], ln: Lanes, w: &mut Work<R>) {
    if !wants_vjp(node) {
        return; // every operand is a constant leaf
    }
    match family(node.op) {
        Some(Family::Products) => products::vjp(node, x, adj, g, ln),
        Some(Family::Geometry) => geometry::vjp(node, x, adj, g, ln, &mut w.a),
        Some(Family::Solve) => solve::vjp(node, x, adj, g, ln, w),
        None => {}
    }
}

/// [`vjp`] in one lane (B = 1) with every adjoint at its own slot, the result's included: the
/// contiguous `*_one` kernels where the op has them (same arithmetic, same order).
pub fn vjp_one_lane<R: Real>(node: &LinNode, x: &[R], adj: &mut [R], w: &mut Work<R>) {
    if !wants_vjp(node) {
        return;
    }
    let one = has_one_lane(node.op);
    match family(node.op) {
        Some(Family::Products) if one => products::vjp_one(node, x, adj),
        Some(Family::Geometry) if one => geometry::vjp_one(node, x, adj),
        Some(Family::Solve) if solve::vjp_one(node, x, adj) => {}
        Some(_) => {
            // Operands are always allocated before the result: their adjoints lie below it.
            let (lo, hi) = adj.split_at_mut(node.out as usize);
            vjp(node, x, lo, hi, Lanes { b: 1, s: 0, e: 1 }, w);
        }
        None => {}
    }
}

/// `o = a * b` over lanes.
#[inline(always)]
pub(crate) fn set_mul<R: Real>(o: &mut [R], a: &[R], b: &[R]) {
    for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
        *o = a * b;
    }
}

/// `o += a * b` over lanes.
#[inline(always)]
pub(crate) fn add_mul<R: Real>(o: &mut [R], a: &[R], b: &[R]) {
    for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
        *o = *o + a * b;
    }
}

/// `o += a` over lanes.
#[inline(always)]
pub(crate) fn add<R: Real>(o: &mut [R], a: &[R]) {
    for (o, &a) in o.iter_mut().zip(a) {
        *o = *o + a;
    }
}

/// `o = Σ_t a_t·b_t` (`init`: the sum starts from the first term) or `o += Σ_t a_t·b_t` over
/// lanes, terms added in order — the arithmetic of one [`set_mul`] or [`add_mul`] per term, two
/// terms per pass over `o` so it is loaded and stored half as often. `term(t)` gives term t's
/// lane slices.
#[inline(always)]
pub(crate) fn dots<'a, R: Real + 'a>(
    o: &mut [R],
    init: bool,
    count: u32,
    term: impl Fn(u32) -> (&'a [R], &'a [R]),
) {
    let n = o.len();
    let mut t = 0;
    if init {
        let (a, b) = term(0);
        if count >= 2 {
            let (c, d) = term(1);
            let (a, b, c, d) = (&a[..n], &b[..n], &c[..n], &d[..n]);
            for l in 0..n {
                o[l] = a[l] * b[l] + c[l] * d[l];
            }
            t = 2;
        } else {
            set_mul(o, a, b);
            t = 1;
        }
    }
    while t + 1 < count {
        let ((a, b), (c, d)) = (term(t), term(t + 1));
        let (a, b, c, d) = (&a[..n], &b[..n], &c[..n], &d[..n]);
        for l in 0..n {
            o[l] = o[l] + a[l] * b[l] + c[l] * d[l];
        }
        t += 2;
    }
    if t < count {
        let (a, b) = term(t);
        add_mul(o, a, b);
    }
}
