//! Vector geometry: `cross`, `norm`, `normalize`.
//!
//! `norm` does not clamp (its VJP is 0 at the zero vector); `normalize` divides by
//! m = max(‖a‖, 1e-8) and keeps ‖a‖ in an extra slot for its VJP (docs/language-reference.md §6.5,
//! §8.3).

use super::{Lanes, LinNode, add_mul, set_mul};
use crate::prims::scalar::Op;
use crate::real::Real;

/// `dst[o] = √Σ a_j²` over the lanes.
fn norm_into<R: Real>(src: &[R], a: u32, n: u32, o: &mut [R], ln: Lanes) {
    let a0 = &src[ln.at(a, 0)];
    set_mul(o, a0, a0);
    for j in 1..n {
        let aj = &src[ln.at(a, j)];
        add_mul(o, aj, aj);
    }
    o.iter_mut().for_each(|v| *v = v.sqrt());
}

/// The clamped norm m = max(r, 1e-8), letting NaN through.
#[inline(always)]
fn clamped<R: Real>(r: R) -> R {
    if r <= R::clamp_eps() {
        R::clamp_eps()
    } else {
        r
    }
}

pub fn forward<R: Real>(node: &LinNode, src: &[R], dst: &mut [R], ln: Lanes) {
    let (a, b, n) = (node.a, node.b, node.n);
    match node.op {
        Op::Cross => {
            let e = |s: u32, j: u32| &src[ln.at(s, j)];
            let (a0, a1, a2) = (e(a, 0), e(a, 1), e(a, 2));
            let (b0, b1, b2) = (e(b, 0), e(b, 1), e(b, 2));
            for l in 0..ln.len() {
                let z = [
                    a1[l] * b2[l] - a2[l] * b1[l],
                    a2[l] * b0[l] - a0[l] * b2[l],
                    a0[l] * b1[l] - a1[l] * b0[l],
                ];
                for (j, z) in z.into_iter().enumerate() {
                    dst[ln.at(0, j as u32)][l] = z;
                }
            }
        }
        Op::Norm => norm_into(src, a, n, &mut dst[ln.at(0, 0)], ln),
        Op::Normalize => {
            // The norm goes to the extra slot after the result, which the VJP reads too.
            let (outs, extra) = dst.split_at_mut((b - node.out) as usize * ln.b);
            let norm = &mut extra[ln.at(0, 0)];
            norm_into(src, a, n, norm, ln);
            for j in 0..n {
                let (aj, o) = (&src[ln.at(a, j)], &mut outs[ln.at(0, j)]);
                for l in 0..ln.len() {
                    o[l] = aj[l] / clamped(norm[l]);
                }
            }
        }
        _ => {}
    }
}

pub fn vjp<R: Real>(node: &LinNode, x: &[R], lo: &mut [R], hi: &[R], ln: Lanes, d: &mut Vec<R>) {
    let (a, b, n) = (node.a, node.b, node.n);
    let (da, db) = (node.adj_a, node.adj_b);
    match node.op {
        Op::Cross => {
            let g = |j: u32| &hi[ln.at(0, j)];
            let (g0, g1, g2) = (g(0), g(1), g(2));
            let e = |s: u32, j: u32| &x[ln.at(s, j)];
            // ā += b × G
            let (b0, b1, b2) = (e(b, 0), e(b, 1), e(b, 2));
            for l in 0..ln.len() * usize::from(node.grad_a()) {
                let d = [
                    b1[l] * g2[l] - b2[l] * g1[l],
                    b2[l] * g0[l] - b0[l] * g2[l],
                    b0[l] * g1[l] - b1[l] * g0[l],
                ];
                for (j, d) in d.into_iter().enumerate() {
                    let o = &mut lo[ln.at(da, j as u32)][l];
                    *o = *o + d;
                }
            }
            // b̄ += G × a
            let (a0, a1, a2) = (e(a, 0), e(a, 1), e(a, 2));
            for l in 0..ln.len() * usize::from(node.grad_b()) {
                let d = [
                    g1[l] * a2[l] - g2[l] * a1[l],
                    g2[l] * a0[l] - g0[l] * a2[l],
                    g0[l] * a1[l] - g1[l] * a0[l],
                ];
                for (j, d) in d.into_iter().enumerate() {
                    let o = &mut lo[ln.at(db, j as u32)][l];
                    *o = *o + d;
                }
            }
        }
        Op::Norm => {
            let (g, z) = (&hi[ln.at(0, 0)], &x[ln.at(node.out, 0)]);
            for j in 0..n {
                let (aj, o) = (&x[ln.at(a, j)], &mut lo[ln.at(da, j)]);
                for l in 0..ln.len() {
                    if z[l] > R::zero() {
                        o[l] = o[l] + g[l] * aj[l] / z[l];
                    }
                }
            }
        }
        Op::Normalize => {
            let r = &x[ln.at(b, 0)];
            // d = G·a per lane, in increasing index order.
            d.clear();
            d.resize(ln.len(), R::zero());
            set_mul(d, &hi[ln.at(0, 0)], &x[ln.at(a, 0)]);
            for j in 1..n {
                add_mul(d, &hi[ln.at(0, j)], &x[ln.at(a, j)]);
            }
            for j in 0..n {
                let (g, aj) = (&hi[ln.at(0, j)], &x[ln.at(a, j)]);
                let o = &mut lo[ln.at(da, j)];
                for l in 0..ln.len() {
                    let m = clamped(r[l]);
                    o[l] = if r[l] > R::clamp_eps() {
                        o[l] + (g[l] / m - d[l] * aj[l] / (m * m * m))
                    } else {
                        o[l] + g[l] / m
                    };
                }
            }
        }
        _ => {}
    }
}

/// `cross` and `norm` for one lane (B = 1, contiguous elements), as [`forward`] computes them.
pub fn forward_one<R: Real>(node: &LinNode, src: &[R], o: &mut [R]) {
    let (a, n) = (&src[node.a as usize..], node.n as usize);
    match node.op {
        Op::Cross => {
            let b = &src[node.b as usize..];
            o[0] = a[1] * b[2] - a[2] * b[1];
            o[1] = a[2] * b[0] - a[0] * b[2];
            o[2] = a[0] * b[1] - a[1] * b[0];
        }
        Op::Norm => {
            let mut s = a[0] * a[0];
            for &v in &a[1..n] {
                s = s + v * v;
            }
            o[0] = s.sqrt();
        }
        _ => {}
    }
}

/// The `cross` and `norm` VJPs of [`vjp`] for one lane; `adj` is the whole adjoint.
pub fn vjp_one<R: Real>(node: &LinNode, x: &[R], adj: &mut [R]) {
    let (a, b, out, n) = (
        node.a as usize,
        node.b as usize,
        node.out as usize,
        node.n as usize,
    );
    match node.op {
        Op::Cross => {
            let g = [adj[out], adj[out + 1], adj[out + 2]];
            let (u, v) = ([x[a], x[a + 1], x[a + 2]], [x[b], x[b + 1], x[b + 2]]);
            let da = [
                v[1] * g[2] - v[2] * g[1],
                v[2] * g[0] - v[0] * g[2],
                v[0] * g[1] - v[1] * g[0],
            ];
            for (j, d) in da
                .into_iter()
                .enumerate()
                .take(3 * usize::from(node.grad_a()))
            {
                adj[a + j] = adj[a + j] + d;
            }
            let db = [
                g[1] * u[2] - g[2] * u[1],
                g[2] * u[0] - g[0] * u[2],
                g[0] * u[1] - g[1] * u[0],
            ];
            for (j, d) in db
                .into_iter()
                .enumerate()
                .take(3 * usize::from(node.grad_b()))
            {
                adj[b + j] = adj[b + j] + d;
            }
        }
        Op::Norm => {
            let (g, z) = (adj[out], x[out]);
            if z > R::zero() {
                for j in 0..n {
                    adj[a + j] = adj[a + j] + g * x[a + j] / z;
                }
            }
        }
        _ => {}
    }
}
