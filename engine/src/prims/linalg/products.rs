//! Products and reductions: `dot`, `vsum`, `trace`, `transpose`, `matmul`, `matvec`, `outer`.
//!
//! Each forward writes the result's elements from lane slices of the operands; each VJP adds
//! into the operands' adjoints (`lo`) from the result's adjoint (`hi`, slot 0 is the result).
//! Sums run in increasing index order starting from the first term.

use super::{Lanes, LinNode, add, add_mul, dots, set_mul};
use crate::prims::scalar::Op;
use crate::real::Real;

pub fn forward<R: Real>(node: &LinNode, src: &[R], dst: &mut [R], ln: Lanes) {
    let (a, b, m, k, n) = (node.a, node.b, node.m, node.k, node.n);
    match node.op {
        Op::Dot => {
            let term = |j| (&src[ln.at(a, j)], &src[ln.at(b, j)]);
            dots(&mut dst[ln.at(0, 0)], true, n, term);
        }
        Op::VSum => {
            let o = &mut dst[ln.at(0, 0)];
            o.copy_from_slice(&src[ln.at(a, 0)]);
            for j in 1..n {
                add(o, &src[ln.at(a, j)]);
            }
        }
        Op::Trace => {
            let o = &mut dst[ln.at(0, 0)];
            o.copy_from_slice(&src[ln.at(a, 0)]);
            for i in 1..m.min(n) {
                add(o, &src[ln.at(a, i * n + i)]);
            }
        }
        Op::Transpose => {
            for i in 0..m {
                for j in 0..n {
                    dst[ln.at(0, j * m + i)].copy_from_slice(&src[ln.at(a, i * n + j)]);
                }
            }
        }
        Op::MatMul => {
            for i in 0..m {
                for j in 0..n {
                    let term = |kk| (&src[ln.at(a, i * k + kk)], &src[ln.at(b, kk * n + j)]);
                    dots(&mut dst[ln.at(0, i * n + j)], true, k, term);
                }
            }
        }
        Op::MatVec => {
            for i in 0..m {
                let term = |kk| (&src[ln.at(a, i * k + kk)], &src[ln.at(b, kk)]);
                dots(&mut dst[ln.at(0, i)], true, k, term);
            }
        }
        Op::Outer => {
            for i in 0..m {
                for j in 0..n {
                    set_mul(
                        &mut dst[ln.at(0, i * n + j)],
                        &src[ln.at(a, i)],
                        &src[ln.at(b, j)],
                    );
                }
            }
        }
        _ => {}
    }
}

pub fn vjp<R: Real>(node: &LinNode, x: &[R], lo: &mut [R], hi: &[R], ln: Lanes) {
    let (a, b, m, k, n) = (node.a, node.b, node.m, node.k, node.n);
    let (da, db) = (node.adj_a, node.adj_b);
    // A constant-leaf operand gets nothing (its loops run zero times).
    let (ga, gb) = (node.grad_a(), node.grad_b());
    match node.op {
        Op::Dot => {
            let g = &hi[ln.at(0, 0)];
            for j in 0..n * u32::from(ga) {
                add_mul(&mut lo[ln.at(da, j)], g, &x[ln.at(b, j)]);
            }
            for j in 0..n * u32::from(gb) {
                add_mul(&mut lo[ln.at(db, j)], g, &x[ln.at(a, j)]);
            }
        }
        Op::VSum => {
            let g = &hi[ln.at(0, 0)];
            for j in 0..n {
                add(&mut lo[ln.at(da, j)], g);
            }
        }
        Op::Trace => {
            let g = &hi[ln.at(0, 0)];
            for i in 0..m.min(n) {
                add(&mut lo[ln.at(da, i * n + i)], g);
            }
        }
        Op::Transpose => {
            for i in 0..m {
                for j in 0..n {
                    add(&mut lo[ln.at(da, i * n + j)], &hi[ln.at(0, j * m + i)]);
                }
            }
        }
        Op::MatMul => {
            // Ā += G·Bᵀ, then B̄ += Aᵀ·G.
            for i in 0..m * u32::from(ga) {
                for kk in 0..k {
                    let term = |j| (&hi[ln.at(0, i * n + j)], &x[ln.at(b, kk * n + j)]);
                    dots(&mut lo[ln.at(da, i * k + kk)], false, n, term);
                }
            }
            for kk in 0..k * u32::from(gb) {
                for j in 0..n {
                    let term = |i| (&x[ln.at(a, i * k + kk)], &hi[ln.at(0, i * n + j)]);
                    dots(&mut lo[ln.at(db, kk * n + j)], false, m, term);
                }
            }
        }
        Op::MatVec => {
            // Ā += G·vᵀ, then v̄ += Aᵀ·G.
            for i in 0..m * u32::from(ga) {
                let g = &hi[ln.at(0, i)];
                for kk in 0..k {
                    add_mul(&mut lo[ln.at(da, i * k + kk)], g, &x[ln.at(b, kk)]);
                }
            }
            for kk in 0..k * u32::from(gb) {
                let term = |i| (&x[ln.at(a, i * k + kk)], &hi[ln.at(0, i)]);
                dots(&mut lo[ln.at(db, kk)], false, m, term);
            }
        }
        Op::Outer => {
            // ā += G·b, then b̄ += Gᵀ·a.
            for i in 0..m * u32::from(ga) {
                let term = |j| (&hi[ln.at(0, i * n + j)], &x[ln.at(b, j)]);
                dots(&mut lo[ln.at(da, i)], false, n, term);
            }
            for j in 0..n * u32::from(gb) {
                let term = |i| (&hi[ln.at(0, i * n + j)], &x[ln.at(a, i)]);
                dots(&mut lo[ln.at(db, j)], false, m, term);
            }
        }
        _ => {}
    }
}

/// Calls `f(args.., m, k, n)` with the sizes as constants for the common small shapes, so the
/// `*_one` kernels' loops unroll; the arithmetic is the same code in the same order either way.
macro_rules! sized {
    (($m:expr, $k:expr, $n:expr), $f:ident($($arg:expr),*)) => {
        match ($m, $k, $n) {
            (2, 2, 2) => $f($($arg,)* 2, 2, 2),
            (2, 2, 1) => $f($($arg,)* 2, 2, 1),
            (3, 3, 3) => $f($($arg,)* 3, 3, 3),
            (3, 3, 1) => $f($($arg,)* 3, 3, 1),
            (4, 4, 4) => $f($($arg,)* 4, 4, 4),
            (4, 4, 1) => $f($($arg,)* 4, 4, 1),
            (m, k, n) => $f($($arg,)* m, k, n),
        }
    };
}

/// One lane (B = 1): each operand's elements are contiguous, so the kernels index them directly.
/// The arithmetic and its order are those of [`forward`], so results are bit-identical.
pub fn forward_one<R: Real>(node: &LinNode, src: &[R], o: &mut [R]) {
    let (m, k, n) = (node.m as usize, node.k as usize, node.n as usize);
    let a = &src[node.a as usize..];
    let b = src.get(node.b as usize..).unwrap_or(&[]);
    match node.op {
        Op::Dot => o[0] = dot_one(a, b, n),
        Op::VSum => {
            let mut s = a[0];
            for &v in &a[1..n] {
                s = s + v;
            }
            o[0] = s;
        }
        Op::Trace => {
            let mut s = a[0];
            for i in 1..m.min(n) {
                s = s + a[i * n + i];
            }
            o[0] = s;
        }
        Op::Transpose => {
            for i in 0..m {
                for j in 0..n {
                    o[j * m + i] = a[i * n + j];
                }
            }
        }
        Op::MatMul => sized!((m, k, n), matmul_one(a, b, o)),
        // A vector is a one-column matrix: `matvec` is `matmul` with n = 1, term for term.
        Op::MatVec => sized!((m, k, 1), matmul_one(a, b, o)),
        Op::Outer => {
            for i in 0..m {
                for j in 0..n {
                    o[i * n + j] = a[i] * b[j];
                }
            }
        }
        _ => {}
    }
}

/// The VJPs of [`vjp`] for one lane (B = 1), in the same order; `adj` is the whole adjoint.
pub fn vjp_one<R: Real>(node: &LinNode, x: &[R], adj: &mut [R]) {
    let (m, k, n) = (node.m as usize, node.k as usize, node.n as usize);
    let (ga, gb) = (node.grad_a(), node.grad_b());
    let (a, b, out) = (node.a as usize, node.b as usize, node.out as usize);
    let g = |adj: &[R], e: usize| adj[out + e];
    match node.op {
        Op::Dot => dot_vjp_one(x, adj, (a, b, out), (ga, gb), n),
        Op::VSum => {
            let g = g(adj, 0);
            for j in 0..n {
                adj[a + j] = adj[a + j] + g;
            }
        }
        Op::Trace => {
            let g = g(adj, 0);
            for i in 0..m.min(n) {
                adj[a + i * n + i] = adj[a + i * n + i] + g;
            }
        }
        Op::Transpose => {
            for i in 0..m {
                for j in 0..n {
                    adj[a + i * n + j] = adj[a + i * n + j] + g(adj, j * m + i);
                }
            }
        }
        Op::MatMul => sized!((m, k, n), matmul_vjp_one(x, adj, (a, b, out), (ga, gb))),
        Op::MatVec => sized!((m, k, 1), matmul_vjp_one(x, adj, (a, b, out), (ga, gb))),
        Op::Outer => {
            for i in 0..m * usize::from(ga) {
                let mut s = adj[a + i];
                for j in 0..n {
                    s = s + g(adj, i * n + j) * x[b + j];
                }
                adj[a + i] = s;
            }
            for j in 0..n * usize::from(gb) {
                let mut s = adj[b + j];
                for i in 0..m {
                    s = s + g(adj, i * n + j) * x[a + i];
                }
                adj[b + j] = s;
            }
        }
        _ => {}
    }
}

/// The products with fixed sizes a one-lane loop runs as their own step kind (no kernel
/// pointer, no [`LinNode`] to decode): `dot` of 2..=4 elements and `matmul`/`matvec` of 2×2,
/// 3×3 and 4×4 matrices, as a kind number for [`fixed_forward`] and [`fixed_vjp`]. Other
/// products run [`forward_one`] and [`vjp_one`], which dispatch on the op at every call.
pub fn fixed_kind(node: &LinNode) -> Option<u8> {
    let n = if node.op == Op::MatVec { 1 } else { node.n };
    Some(match (node.op, node.m, node.k, n) {
        (Op::Dot, _, _, 2) => 0,
        (Op::Dot, _, _, 3) => 1,
        (Op::Dot, _, _, 4) => 2,
        (Op::MatMul | Op::MatVec, 2, 2, 2) => 3,
        (Op::MatMul | Op::MatVec, 2, 2, 1) => 4,
        (Op::MatMul | Op::MatVec, 3, 3, 3) => 5,
        (Op::MatMul | Op::MatVec, 3, 3, 1) => 6,
        (Op::MatMul | Op::MatVec, 4, 4, 4) => 7,
        (Op::MatMul | Op::MatVec, 4, 4, 1) => 8,
        _ => return None,
    })
}

/// Runs fixed product `kind` ([`fixed_kind`]) forward in one lane: operands at `a` and `b`,
/// result at `o` (above both).
#[inline(always)]
pub fn fixed_forward<R: Real>(kind: u8, x: &mut [R], (o, a, b): (u32, u32, u32)) {
    let (src, dst) = x.split_at_mut(o as usize);
    let a = &src[a as usize..];
    let b = src.get(b as usize..).unwrap_or(&[]);
    match kind {
        0 => dst[0] = dot_one(a, b, 2),
        1 => dst[0] = dot_one(a, b, 3),
        2 => dst[0] = dot_one(a, b, 4),
        3 => matmul_one(a, b, dst, 2, 2, 2),
        4 => matmul_one(a, b, dst, 2, 2, 1),
        5 => matmul_one(a, b, dst, 3, 3, 3),
        6 => matmul_one(a, b, dst, 3, 3, 1),
        7 => matmul_one(a, b, dst, 4, 4, 4),
        _ => matmul_one(a, b, dst, 4, 4, 1),
    }
}

/// Fixed product `kind`'s VJP in one lane, into the operands that `want` adjoints.
#[inline(always)]
pub fn fixed_vjp<R: Real>(
    kind: u8,
    x: &[R],
    adj: &mut [R],
    (o, a, b): (u32, u32, u32),
    want: (bool, bool),
) {
    let at = (a as usize, b as usize, o as usize);
    match kind {
        0 => dot_vjp_one(x, adj, at, want, 2),
        1 => dot_vjp_one(x, adj, at, want, 3),
        2 => dot_vjp_one(x, adj, at, want, 4),
        3 => matmul_vjp_one(x, adj, at, want, 2, 2, 2),
        4 => matmul_vjp_one(x, adj, at, want, 2, 2, 1),
        5 => matmul_vjp_one(x, adj, at, want, 3, 3, 3),
        6 => matmul_vjp_one(x, adj, at, want, 3, 3, 1),
        7 => matmul_vjp_one(x, adj, at, want, 4, 4, 4),
        _ => matmul_vjp_one(x, adj, at, want, 4, 4, 1),
    }
}

/// `a·b` over `n` elements in one lane (inlined, so a constant `n` unrolls the sum).
#[inline(always)]
fn dot_one<R: Real>(a: &[R], b: &[R], n: usize) -> R {
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = a[0] * b[0];
    for j in 1..n {
        s = s + a[j] * b[j];
    }
    s
}

/// `dot`'s VJP in one lane: ā += g·b, then b̄ += g·a, each if wanted.
#[inline(always)]
fn dot_vjp_one<R: Real>(
    x: &[R],
    adj: &mut [R],
    (a, b, out): (usize, usize, usize),
    (ga, gb): (bool, bool),
    n: usize,
) {
    let g = adj[out];
    for j in 0..n * usize::from(ga) {
        adj[a + j] = adj[a + j] + g * x[b + j];
    }
    for j in 0..n * usize::from(gb) {
        adj[b + j] = adj[b + j] + g * x[a + j];
    }
}

/// `o = a·b` (`m×k` by `k×n`) in one lane.
#[inline(always)]
fn matmul_one<R: Real>(a: &[R], b: &[R], o: &mut [R], m: usize, k: usize, n: usize) {
    let (a, b, o) = (&a[..m * k], &b[..k * n], &mut o[..m * n]);
    for i in 0..m {
        for j in 0..n {
            let mut s = a[i * k] * b[j];
            for kk in 1..k {
                s = s + a[i * k + kk] * b[kk * n + j];
            }
            o[i * n + j] = s;
        }
    }
}

/// `matmul`'s VJP in one lane: Ā += G·Bᵀ, then B̄ += Aᵀ·G (`adj` is the whole adjoint; the
/// operands lie below the result).
#[inline(always)]
fn matmul_vjp_one<R: Real>(
    x: &[R],
    adj: &mut [R],
    (a, b, out): (usize, usize, usize),
    (ga, gb): (bool, bool),
    m: usize,
    k: usize,
    n: usize,
) {
    let (lo, hi) = adj.split_at_mut(out);
    let g = &hi[..m * n];
    if ga {
        let (xb, da) = (&x[b..b + k * n], &mut lo[a..a + m * k]);
        for i in 0..m {
            for kk in 0..k {
                let mut s = da[i * k + kk];
                for j in 0..n {
                    s = s + g[i * n + j] * xb[kk * n + j];
                }
                da[i * k + kk] = s;
            }
        }
    }
    if gb {
        let (xa, db) = (&x[a..a + m * k], &mut lo[b..b + k * n]);
        for kk in 0..k {
            for j in 0..n {
                let mut s = db[kk * n + j];
                for i in 0..m {
                    s = s + xa[i * k + kk] * g[i * n + j];
                }
                db[kk * n + j] = s;
            }
        }
    }
}
