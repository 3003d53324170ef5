//! Determinants and inverses: `det`, `logdet`, `inv` (docs/language-reference.md §6.6).
//!
//! For n ≤ 3, `det` is the cofactor expansion along the first row, `logdet` is ln |det| and `inv`
//! the adjugate over the determinant. For n ≥ 4, `det` and `logdet` come from an LU factorization
//! with partial pivoting (the row with the largest |pivot|, the first on ties) — the signed product
//! of the pivots and the sum of ln |pivot| — and `inv` is Gauss–Jordan elimination with the same
//! pivoting. A matrix is singular in a lane when its determinant (n ≤ 3) or a pivot (n ≥ 4) is
//! exactly 0: then `det` is 0, `logdet` −inf and every entry of `inv` NaN. None is an error.
//!
//! VJPs: `inv` differentiates through its own result. For n ≥ 4 the forward keeps what the VJP
//! needs — `det` its cofactor matrix (at a singular matrix too, from the minors), `logdet` the
//! inverse; for n ≤ 3 the closed forms are cheaper to recompute from A than to store. Each lane
//! is gathered into a small row-major buffer, solved and scattered back.

use super::{Lanes, LinNode, OneLane, Work, add_mul, set_mul};
use crate::prims::scalar::Op;
use crate::real::Real;

/// The determinant by the closed form (n ≤ 3, with the cofactor matrix when `cof` is given) or by
/// LU; also ln |det| (by LU, the sum of ln |pivot|).
fn det<R: Real>(n: usize, a: &[R], cof: Option<&mut [R]>, lu: &mut Vec<R>) -> (R, R) {
    if n <= 3 {
        let d = closed_det(n, a, cof);
        return (d, d.abs().ln());
    }
    lu.clear();
    lu.extend_from_slice(&a[..n * n]);
    let (mut prod, mut logs, mut negative) = (R::one(), R::zero(), false);
    for col in 0..n {
        let p = pivot(n, lu, col);
        if lu[p * n + col] == R::zero() {
            return (R::zero(), R::neg_infinity());
        }
        if p != col {
            swap_rows(n, lu, p, col);
            negative = !negative;
        }
        let piv = lu[col * n + col];
        for r in col + 1..n {
            let f = lu[r * n + col] / piv;
            for c in col + 1..n {
                lu[r * n + c] = lu[r * n + c] - f * lu[col * n + c];
            }
        }
        prod = if col == 0 { piv } else { prod * piv };
        logs = if col == 0 {
            piv.abs().ln()
        } else {
            logs + piv.abs().ln()
        };
    }
    (if negative { -prod } else { prod }, logs)
}

/// The row at or below `col` with the largest |entry| in column `col` (the first on ties).
fn pivot<R: Real>(n: usize, m: &[R], col: usize) -> usize {
    let mut best = col;
    for r in col + 1..n {
        if m[r * n + col].abs() > m[best * n + col].abs() {
            best = r;
        }
    }
    best
}

fn swap_rows<R: Real>(n: usize, m: &mut [R], i: usize, j: usize) {
    for c in 0..n {
        m.swap(i * n + c, j * n + c);
    }
}

/// det of a 1x1, 2x2 or 3x3 matrix by cofactor expansion along the first row, writing the
/// cofactor matrix (row-major) when asked.
fn closed_det<R: Real>(n: usize, m: &[R], cof: Option<&mut [R]>) -> R {
    match n {
        1 => {
            if let Some(c) = cof {
                c[0] = R::one();
            }
            m[0]
        }
        2 => {
            let (a, b, c, d) = (m[0], m[1], m[2], m[3]);
            if let Some(k) = cof {
                k[..4].copy_from_slice(&[d, -c, -b, a]);
            }
            a * d - b * c
        }
        _ => {
            let [a, b, c, d, e, f, g, h, i] =
                [m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]];
            let k = [
                e * i - f * h,
                f * g - d * i,
                d * h - e * g,
                c * h - b * i,
                a * i - c * g,
                b * g - a * h,
                b * f - c * e,
                c * d - a * f,
                a * e - b * d,
            ];
            if let Some(out) = cof {
                out[..9].copy_from_slice(&k);
            }
            a * k[0] + b * k[1] + c * k[2]
        }
    }
}

/// A⁻¹ into `z` (row-major); every entry NaN when A is singular.
fn inverse<R: Real>(n: usize, a: &[R], z: &mut [R], w: &mut Vec<R>) {
    if n <= 3 {
        let mut k = [R::zero(); 9];
        let d = closed_det(n, a, Some(&mut k));
        for i in 0..n {
            for j in 0..n {
                z[i * n + j] = if d == R::zero() {
                    R::nan()
                } else {
                    k[j * n + i] / d
                };
            }
        }
        return;
    }
    w.clear();
    w.extend_from_slice(&a[..n * n]);
    let m = w;
    for i in 0..n {
        for j in 0..n {
            z[i * n + j] = if i == j { R::one() } else { R::zero() };
        }
    }
    for col in 0..n {
        let p = pivot(n, m, col);
        if m[p * n + col] == R::zero() {
            z[..n * n].fill(R::nan());
            return;
        }
        swap_rows(n, m, p, col);
        swap_rows(n, z, p, col);
        let piv = m[col * n + col];
        for c in 0..n {
            m[col * n + c] = m[col * n + c] / piv;
            z[col * n + c] = z[col * n + c] / piv;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = m[r * n + col];
            for c in 0..n {
                m[r * n + c] = m[r * n + c] - f * m[col * n + c];
                z[r * n + c] = z[r * n + c] - f * z[col * n + c];
            }
        }
    }
}

/// The cofactor matrix for n ≥ 4: det · A⁻ᵀ when A is invertible, else from the minors.
fn cofactors<R: Real>(n: usize, a: &[R], d: R, cof: &mut [R], w: &mut Work<R>) {
    let mut z = std::mem::take(&mut w.c);
    z.resize(n * n, R::zero());
    inverse(n, a, &mut z, &mut w.b);
    if d != R::zero() && !z[0].is_nan() {
        for i in 0..n {
            for j in 0..n {
                cof[i * n + j] = d * z[j * n + i];
            }
        }
    } else {
        let mut minor = Vec::with_capacity((n - 1) * (n - 1));
        for i in 0..n {
            for j in 0..n {
                minor.clear();
                for r in (0..n).filter(|&r| r != i) {
                    minor.extend((0..n).filter(|&c| c != j).map(|c| a[r * n + c]));
                }
                let m = det(n - 1, &minor, None, &mut w.b).0;
                cof[i * n + j] = if (i + j) % 2 == 0 { m } else { -m };
            }
        }
    }
    w.c = z;
}

pub fn forward<R: Real>(
    node: &LinNode,
    src: &[R],
    dst: &mut [R],
    ln: Lanes,
    record: bool,
    w: &mut Work<R>,
) {
    match node.n {
        1 => closed_forward::<1, 1, R>(node, src, dst, ln),
        2 => closed_forward::<2, 4, R>(node, src, dst, ln),
        3 => closed_forward::<3, 9, R>(node, src, dst, ln),
        _ => lu_forward(node, src, dst, ln, record, w),
    }
}

/// n ≤ 3: the closed forms, lane by lane from the element slices.
#[allow(clippy::needless_range_loop)] // one lane index across N² slices
fn closed_forward<const N: usize, const N2: usize, R: Real>(
    node: &LinNode,
    src: &[R],
    dst: &mut [R],
    ln: Lanes,
) {
    // Every slice cut to one length, so the lane loops vectorize.
    let len = ln.len();
    let s: [&[R]; N2] = std::array::from_fn(|e| &src[ln.at(node.a, e as u32)][..len]);
    let lane = |l: usize| -> [R; N2] { std::array::from_fn(|e| s[e][l]) };
    match node.op {
        Op::Det | Op::LogDet => {
            let o = &mut dst[ln.at(0, 0)][..len];
            for (l, o) in o.iter_mut().enumerate() {
                let d = closed_det(N, &lane(l), None);
                *o = if node.op == Op::Det { d } else { d.abs().ln() };
            }
        }
        Op::Inv => {
            let mut outs = element_slices::<N2, R>(dst, 0, ln);
            for l in 0..len {
                let z = closed_inverse::<N, N2, R>(&lane(l));
                for (o, z) in outs.iter_mut().zip(z) {
                    o[l] = z;
                }
            }
        }
        _ => {}
    }
}

/// The lane ranges of the N2 consecutive elements of the tensor at `slot` of `buf`.
fn element_slices<const N2: usize, R>(buf: &mut [R], slot: u32, ln: Lanes) -> [&mut [R]; N2] {
    let base = &mut buf[slot as usize * ln.b..(slot as usize + N2) * ln.b];
    let mut chunks = base.chunks_mut(ln.b).map(|c| &mut c[ln.s..ln.e]);
    std::array::from_fn(|_| chunks.next().unwrap_or_default())
}

/// A⁻¹ of a 1x1, 2x2 or 3x3 matrix: the adjugate over the determinant, NaN when singular.
#[inline(always)]
fn closed_inverse<const N: usize, const N2: usize, R: Real>(m: &[R; N2]) -> [R; N2] {
    let mut k = [R::zero(); N2];
    let d = closed_det(N, m, Some(&mut k));
    std::array::from_fn(|e| {
        let (i, j) = (e / N, e % N);
        if d == R::zero() {
            R::nan()
        } else {
            k[j * N + i] / d
        }
    })
}

/// n ≥ 4: LU and Gauss–Jordan lane by lane; with `record`, the cofactor matrix (`det`) or the
/// inverse (`logdet`) goes to the extra slots for the VJP.
fn lu_forward<R: Real>(
    node: &LinNode,
    src: &[R],
    dst: &mut [R],
    ln: Lanes,
    record: bool,
    w: &mut Work<R>,
) {
    let n = node.n as usize;
    let nn = n * n;
    // The extra slots (only allocated when recording) follow the result.
    let extra = || node.b.saturating_sub(node.out) as usize * ln.b;
    let (mut m, mut k) = (std::mem::take(&mut w.a), std::mem::take(&mut w.d));
    m.resize(nn, R::zero());
    k.resize(nn, R::zero());
    for l in 0..ln.len() {
        for (e, v) in m.iter_mut().enumerate() {
            *v = src[ln.at(node.a, e as u32)][l];
        }
        match node.op {
            Op::Det => {
                let d = det(n, &m, None, &mut w.b).0;
                dst[ln.at(0, 0)][l] = d;
                if record {
                    cofactors(n, &m, d, &mut k, w);
                    scatter(&k, &mut dst[extra()..], ln, l);
                }
            }
            Op::LogDet => {
                dst[ln.at(0, 0)][l] = det(n, &m, None, &mut w.b).1;
                if record {
                    inverse(n, &m, &mut k, &mut w.b);
                    scatter(&k, &mut dst[extra()..], ln, l);
                }
            }
            Op::Inv => {
                inverse(n, &m, &mut k, &mut w.b);
                scatter(&k, dst, ln, l);
            }
            _ => {}
        }
    }
    w.a = m;
    w.d = k;
}

/// Writes a lane's row-major matrix into the tensor at slot 0 of `dst`.
fn scatter<R: Real>(k: &[R], dst: &mut [R], ln: Lanes, l: usize) {
    for (e, &v) in k.iter().enumerate() {
        dst[ln.at(0, e as u32)][l] = v;
    }
}

pub fn vjp<R: Real>(node: &LinNode, x: &[R], lo: &mut [R], hi: &[R], ln: Lanes, w: &mut Work<R>) {
    let n = node.n;
    match node.op {
        // n ≤ 3: the cofactors and the inverse are recomputed from A by the closed form, which
        // costs less than storing them.
        Op::Det | Op::LogDet if n <= 3 => match n {
            1 => closed_vjp::<1, 1, R>(node, x, lo, hi, ln),
            2 => closed_vjp::<2, 4, R>(node, x, lo, hi, ln),
            _ => closed_vjp::<3, 9, R>(node, x, lo, hi, ln),
        },
        Op::Det => {
            // Ā += g·cof A (kept by the forward)
            let g = &hi[ln.at(0, 0)];
            for e in 0..n * n {
                add_mul(&mut lo[ln.at(node.adj_a, e)], g, &x[ln.at(node.b, e)]);
            }
        }
        Op::LogDet => {
            // Ā += g·A⁻ᵀ (the inverse kept by the forward)
            let g = &hi[ln.at(0, 0)];
            for i in 0..n {
                for j in 0..n {
                    add_mul(
                        &mut lo[ln.at(node.adj_a, i * n + j)],
                        g,
                        &x[ln.at(node.b, j * n + i)],
                    );
                }
            }
        }
        Op::Inv => {
            // With Z = A⁻¹ (the result): T = Zᵀ·G, then Ā −= T·Zᵀ.
            let len = ln.len();
            let t = &mut w.b;
            t.clear();
            t.resize((n * n) as usize * len, R::zero());
            let z = |e: u32| &x[ln.at(node.out, e)];
            for i in 0..n {
                for q in 0..n {
                    let o = &mut t[(i * n + q) as usize * len..][..len];
                    set_mul(o, z(i), &hi[ln.at(0, q)]);
                    for p in 1..n {
                        add_mul(o, z(p * n + i), &hi[ln.at(0, p * n + q)]);
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    let o = &mut lo[ln.at(node.adj_a, i * n + j)];
                    for q in 0..n {
                        let (tv, zv) = (&t[(i * n + q) as usize * len..][..len], z(j * n + q));
                        for l in 0..len {
                            o[l] = o[l] - tv[l] * zv[l];
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// ∂det/∂A (the cofactor matrix) or ∂logdet/∂A (A⁻ᵀ) of an n ≤ 3 matrix, row-major.
#[inline(always)]
fn det_gradient<const N: usize, const N2: usize, R: Real>(op: Op, m: &[R; N2]) -> [R; N2] {
    if op == Op::Det {
        let mut k = [R::zero(); N2];
        closed_det(N, m, Some(&mut k));
        k
    } else {
        let z = closed_inverse::<N, N2, R>(m);
        std::array::from_fn(|e| z[(e % N) * N + e / N])
    }
}

/// `det` and `logdet` VJPs for n ≤ 3: Ā += g·cof A, resp. Ā += g·A⁻ᵀ.
fn closed_vjp<const N: usize, const N2: usize, R: Real>(
    node: &LinNode,
    x: &[R],
    lo: &mut [R],
    hi: &[R],
    ln: Lanes,
) {
    let len = ln.len();
    let g = &hi[ln.at(0, 0)][..len];
    let a: [&[R]; N2] = std::array::from_fn(|e| &x[ln.at(node.a, e as u32)][..len]);
    let mut outs = element_slices::<N2, R>(lo, node.adj_a, ln);
    for l in 0..len {
        let d = det_gradient::<N, N2, R>(node.op, &std::array::from_fn(|e| a[e][l]));
        for (o, d) in outs.iter_mut().zip(d) {
            o[l] = o[l] + g[l] * d;
        }
    }
}

/// Calls `f::<N, N², R>(args)` for n = 1, 2, 3 and returns true; false for larger n.
macro_rules! closed_sizes {
    ($n:expr, $f:ident($($arg:expr),*)) => {{
        match $n {
            1 => $f::<1, 1, R>($($arg),*),
            2 => $f::<2, 4, R>($($arg),*),
            3 => $f::<3, 9, R>($($arg),*),
            _ => return false,
        }
        true
    }};
}

/// One lane (B = 1), n ≤ 3: the closed forms on the contiguous elements, with the arithmetic of
/// [`forward`] in the same order. Returns false (nothing done) for n ≥ 4.
pub fn forward_one<R: Real>(node: &LinNode, src: &[R], dst: &mut [R]) -> bool {
    closed_sizes!(node.n, closed_one(node, src, dst))
}

/// The one-lane forward and VJP kernels for `node` with its size fixed (n ≤ 3), or `None`.
pub fn one_lane<R: Real>(node: &LinNode) -> Option<(OneLane<R>, OneLane<R>)> {
    Some(match node.n {
        1 => (closed_one::<1, 1, R>, closed_vjp_one::<1, 1, R>),
        2 => (closed_one::<2, 4, R>, closed_vjp_one::<2, 4, R>),
        3 => (closed_one::<3, 9, R>, closed_vjp_one::<3, 9, R>),
        _ => return None,
    })
}

fn closed_one<const N: usize, const N2: usize, R: Real>(node: &LinNode, src: &[R], dst: &mut [R]) {
    let a = node.a as usize;
    let m: [R; N2] = std::array::from_fn(|e| src[a + e]);
    match node.op {
        Op::Det => dst[0] = closed_det(N, &m, None),
        Op::LogDet => dst[0] = closed_det(N, &m, None).abs().ln(),
        Op::Inv => dst[..N2].copy_from_slice(&closed_inverse::<N, N2, R>(&m)),
        _ => {}
    }
}

/// One lane (B = 1), n ≤ 3: the VJPs of [`vjp`] in the same order; `adj` is the whole adjoint.
/// Returns false (nothing done) for n ≥ 4.
pub fn vjp_one<R: Real>(node: &LinNode, x: &[R], adj: &mut [R]) -> bool {
    closed_sizes!(node.n, closed_vjp_one(node, x, adj))
}

fn closed_vjp_one<const N: usize, const N2: usize, R: Real>(
    node: &LinNode,
    x: &[R],
    adj: &mut [R],
) {
    let (a, out) = (node.a as usize, node.out as usize);
    let (lo, hi) = adj.split_at_mut(out);
    let da = &mut lo[a..a + N2];
    match node.op {
        Op::Det | Op::LogDet => {
            let d = det_gradient::<N, N2, R>(node.op, &std::array::from_fn(|e| x[a + e]));
            let g = hi[0];
            for (o, d) in da.iter_mut().zip(d) {
                *o = *o + g * d;
            }
        }
        Op::Inv => {
            // T = Zᵀ·G, then Ā −= T·Zᵀ (Z the result).
            let z = &x[out..out + N2];
            let g = &hi[..N2];
            let mut t = [R::zero(); N2];
            for i in 0..N {
                for q in 0..N {
                    let mut s = z[i] * g[q];
                    for p in 1..N {
                        s = s + z[p * N + i] * g[p * N + q];
                    }
                    t[i * N + q] = s;
                }
            }
            for i in 0..N {
                for j in 0..N {
                    let mut o = da[i * N + j];
                    for q in 0..N {
                        o = o - t[i * N + q] * z[j * N + q];
                    }
                    da[i * N + j] = o;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lu_matches_closed_forms_and_pivots() {
        let mut lu = Vec::new();
        // A permutation of the identity: det is the permutation's sign.
        let p = [
            0., 1., 0., 0., 1., 0., 0., 0., 0., 0., 0., 1., 0., 0., 1., 0.,
        ];
        assert_eq!(det::<f64>(4, &p, None, &mut lu).0, 1.0);
        let s = [
            0., 1., 0., 0., 1., 0., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.,
        ];
        assert_eq!(det::<f64>(4, &s, None, &mut lu).0, -1.0);
        // Singular: det 0, logdet -inf, inverse NaN.
        let z = [
            1., 2., 3., 4., 2., 4., 6., 8., 0., 1., 0., 1., 1., 0., 1., 0.,
        ];
        assert_eq!(det::<f64>(4, &z, None, &mut lu), (0.0, f64::NEG_INFINITY));
        let mut inv = [0.0; 16];
        inverse::<f64>(4, &z, &mut inv, &mut lu);
        assert!(inv.iter().all(|v| v.is_nan()));
        // 3x3 closed form against a hand value.
        let m = [2., 0., 1., 1., 3., 2., 1., 1., 2.];
        assert_eq!(closed_det::<f64>(3, &m, None), 2. * (6. - 2.) + (1. - 3.));
        let mut inv3 = [0.0; 9];
        inverse::<f64>(3, &m, &mut inv3, &mut lu);
        for i in 0..3 {
            for j in 0..3 {
                let e: f64 = (0..3).map(|k| m[i * 3 + k] * inv3[k * 3 + j]).sum();
                assert!((e - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }
}
