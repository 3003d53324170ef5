//! Lane kernels: the loops that apply an op's formula (from [`super::scalar`]) to every lane.
//!
//! `per_op!` expands a loop body once per op with the op as a constant, so each loop is
//! monomorphized and the compiler vectorizes it; the scalar formula is shared with constant
//! folding and the one-lane fast paths, which keeps every path bit-identical.

use super::scalar::Op;
use crate::lanes::Layout;
use crate::real::Real;

/// Expands `$body!(Op::X)` in a match arm for every op.
macro_rules! per_op {
    ($op:expr, $body:ident) => {
        match $op {
            Op::Sin => $body!(Op::Sin),
            Op::Cos => $body!(Op::Cos),
            Op::Tan => $body!(Op::Tan),
            Op::Asin => $body!(Op::Asin),
            Op::Acos => $body!(Op::Acos),
            Op::Atan => $body!(Op::Atan),
            Op::Sinh => $body!(Op::Sinh),
            Op::Cosh => $body!(Op::Cosh),
            Op::Tanh => $body!(Op::Tanh),
            Op::Exp => $body!(Op::Exp),
            Op::Log => $body!(Op::Log),
            Op::Sqrt => $body!(Op::Sqrt),
            Op::Abs => $body!(Op::Abs),
            Op::Square => $body!(Op::Square),
            Op::Floor => $body!(Op::Floor),
            Op::Ceiling => $body!(Op::Ceiling),
            Op::Round => $body!(Op::Round),
            Op::Truncate => $body!(Op::Truncate),
            Op::Copy => $body!(Op::Copy),
            Op::Add => $body!(Op::Add),
            Op::Add0 => $body!(Op::Add0),
            Op::Sub => $body!(Op::Sub),
            Op::Mul => $body!(Op::Mul),
            Op::Div => $body!(Op::Div),
            Op::Pow => $body!(Op::Pow),
            Op::Min => $body!(Op::Min),
            Op::Max => $body!(Op::Max),
            Op::Modulo => $body!(Op::Modulo),
            Op::Remainder => $body!(Op::Remainder),
            Op::Atan2 => $body!(Op::Atan2),
            // Merges are written by the walk and differentiated by the backward pass directly;
            // linear algebra has its own kernels (`prims::linalg`).
            Op::Select
            | Op::Ext
            | Op::Dot
            | Op::Cross
            | Op::Norm
            | Op::Normalize
            | Op::VSum
            | Op::Trace
            | Op::Transpose
            | Op::MatMul
            | Op::MatVec
            | Op::Outer
            | Op::Det
            | Op::LogDet
            | Op::Inv => {}
        }
    };
}

/// An operand of a lane kernel: a lane slice or a constant broadcast to every lane.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a, R> {
    Lanes(&'a [R]),
    Const(R),
}

impl<'a, R: Copy> Arg<'a, R> {
    /// Lanes `[s, e)` of this operand.
    fn range(self, s: usize, e: usize) -> Arg<'a, R> {
        match self {
            Arg::Lanes(x) => Arg::Lanes(&x[s..e]),
            c => c,
        }
    }
}

/// `out[b] = op(x[b])` over lanes.
pub fn forward1<R: Real>(op: Op, out: &mut [R], x: &[R]) {
    // exp, sin and cos vectorize when every lane is in their polynomial's range.
    match op {
        Op::Exp if R::exp_vectorizable(x) => {
            return out.iter_mut().zip(x).for_each(|(o, &v)| *o = v.exp_v());
        }
        Op::Sin if R::trig_vectorizable(x) => {
            return out.iter_mut().zip(x).for_each(|(o, &v)| *o = v.sin_v());
        }
        Op::Cos if R::trig_vectorizable(x) => {
            return out.iter_mut().zip(x).for_each(|(o, &v)| *o = v.cos_v());
        }
        Op::Log if R::log_vectorizable(x) => {
            let eps = R::clamp_eps();
            let clamp = |v: R| if v <= eps { eps } else { v };
            return out
                .iter_mut()
                .zip(x)
                .for_each(|(o, &v)| *o = clamp(v).ln_v());
        }
        _ => {}
    }
    macro_rules! body {
        ($k:expr) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = $k.eval1(v);
            }
        };
    }
    per_op!(op, body)
}

/// `out[b] = op(a[b], b[b])` over lanes, either operand possibly a constant.
pub fn forward2<R: Real>(op: Op, out: &mut [R], a: Arg<R>, b: Arg<R>) {
    macro_rules! body {
        ($k:expr) => {
            match (a, b) {
                (Arg::Lanes(x), Arg::Lanes(y)) => {
                    for ((o, &u), &v) in out.iter_mut().zip(x).zip(y) {
                        *o = $k.eval2(u, v);
                    }
                }
                (Arg::Lanes(x), Arg::Const(v)) => {
                    for (o, &u) in out.iter_mut().zip(x) {
                        *o = $k.eval2(u, v);
                    }
                }
                (Arg::Const(u), Arg::Lanes(y)) => {
                    for (o, &v) in out.iter_mut().zip(y) {
                        *o = $k.eval2(u, v);
                    }
                }
                (Arg::Const(u), Arg::Const(v)) => out.fill($k.eval2(u, v)),
            }
        };
    }
    per_op!(op, body)
}

/// `gx[b] += vjp1(x[b], z[b], g[b])` over lanes.
pub fn backward1<R: Real>(op: Op, gx: &mut [R], x: &[R], z: &[R], g: &[R]) {
    let n = gx.len();
    let (x, z, g) = (&x[..n], &z[..n], &g[..n]);
    // The same formulas as `vjp1`, vectorized when every lane is in the polynomials' range.
    match op {
        Op::Sin if R::trig_vectorizable(x) => {
            for i in 0..n {
                gx[i] = gx[i] + g[i] * x[i].cos_v();
            }
            return;
        }
        Op::Cos if R::trig_vectorizable(x) => {
            for i in 0..n {
                gx[i] = gx[i] + -(g[i] * x[i].sin_v());
            }
            return;
        }
        _ => {}
    }
    macro_rules! body {
        ($k:expr) => {
            for i in 0..n {
                gx[i] = gx[i] + $k.vjp1(x[i], z[i], g[i]);
            }
        };
    }
    per_op!(op, body)
}

/// Where a binary op's adjoints go: two distinct slices, one slice receiving both (an operand
/// used twice, as in `(* x x)`), or only one operand being a lane value.
#[derive(Debug)]
pub enum Grads<'a, R> {
    Both(&'a mut [R], &'a mut [R]),
    Same(&'a mut [R]),
    First(&'a mut [R]),
    Second(&'a mut [R]),
}

impl<R> Grads<'_, R> {
    /// Lanes `[s, e)` of these accumulators.
    fn range(&mut self, s: usize, e: usize) -> Grads<'_, R> {
        match self {
            Grads::Both(a, b) => Grads::Both(&mut a[s..e], &mut b[s..e]),
            Grads::Same(a) => Grads::Same(&mut a[s..e]),
            Grads::First(a) => Grads::First(&mut a[s..e]),
            Grads::Second(b) => Grads::Second(&mut b[s..e]),
        }
    }
}

/// [`forward1`] over the lanes of a layout; slices hold every lane of their slot.
pub fn forward1_over<R: Real>(
    op: Op,
    out: &mut [R],
    x: &[R],
    layout: Layout,
    gather: &mut Gather<R>,
) {
    match layout {
        Layout::All => forward1(op, out, x),
        Layout::Runs(runs) => {
            for &(s, n) in runs {
                let (s, e) = (s as usize, (s + n) as usize);
                forward1(op, &mut out[s..e], &x[s..e]);
            }
        }
        Layout::Scattered(lanes) => gather.forward1(op, out, x, lanes),
    }
}

/// [`forward2`] over the lanes of a layout.
pub fn forward2_over<R: Real>(
    op: Op,
    out: &mut [R],
    a: Arg<R>,
    b: Arg<R>,
    layout: Layout,
    gather: &mut Gather<R>,
) {
    match layout {
        Layout::All => forward2(op, out, a, b),
        Layout::Runs(runs) => {
            for &(s, n) in runs {
                let (s, e) = (s as usize, (s + n) as usize);
                forward2(op, &mut out[s..e], a.range(s, e), b.range(s, e));
            }
        }
        Layout::Scattered(lanes) => gather.forward2(op, out, a, b, lanes),
    }
}

/// [`backward1`] over the lanes of a layout.
pub fn backward1_over<R: Real>(
    op: Op,
    gx: &mut [R],
    (x, z, g): (&[R], &[R], &[R]),
    layout: Layout,
    gather: &mut Gather<R>,
) {
    match layout {
        Layout::All => backward1(op, gx, x, z, g),
        Layout::Runs(runs) => {
            for &(s, n) in runs {
                let (s, e) = (s as usize, (s + n) as usize);
                backward1(op, &mut gx[s..e], &x[s..e], &z[s..e], &g[s..e]);
            }
        }
        Layout::Scattered(lanes) => gather.backward1(op, gx, x, z, g, lanes),
    }
}

/// [`backward2`] over the lanes of a layout.
pub fn backward2_over<R: Real>(
    op: Op,
    (a, b): (Arg<R>, Arg<R>),
    (z, g): (&[R], &[R]),
    mut out: Grads<R>,
    layout: Layout,
    gather: &mut Gather<R>,
) {
    match layout {
        Layout::All => backward2(op, a, b, z, g, out),
        Layout::Runs(runs) => {
            for &(s, n) in runs {
                let (s, e) = (s as usize, (s + n) as usize);
                backward2(
                    op,
                    a.range(s, e),
                    b.range(s, e),
                    &z[s..e],
                    &g[s..e],
                    out.range(s, e),
                );
            }
        }
        Layout::Scattered(lanes) => gather.backward2(op, (a, b), z, g, out, lanes),
    }
}

/// Accumulates a binary op's adjoints over lanes.
pub fn backward2<R: Real>(op: Op, a: Arg<R>, b: Arg<R>, z: &[R], g: &[R], out: Grads<R>) {
    let n = z.len();
    let g = &g[..n];
    let lane = |v: Arg<R>, i: usize| match v {
        Arg::Lanes(x) => x[i],
        Arg::Const(c) => c,
    };
    macro_rules! body {
        ($k:expr) => {
            match (out, a, b) {
                (Grads::Both(ga, gb), Arg::Lanes(x), Arg::Lanes(y)) => {
                    let (ga, gb, x, y) = (&mut ga[..n], &mut gb[..n], &x[..n], &y[..n]);
                    for i in 0..n {
                        let (da, db) = $k.vjp2(x[i], y[i], z[i], g[i]);
                        ga[i] = ga[i] + da;
                        gb[i] = gb[i] + db;
                    }
                }
                (Grads::Same(gx), _, _) => {
                    let gx = &mut gx[..n];
                    for i in 0..n {
                        let (da, db) = $k.vjp2(lane(a, i), lane(b, i), z[i], g[i]);
                        gx[i] = gx[i] + da + db;
                    }
                }
                (Grads::First(ga), Arg::Lanes(x), Arg::Lanes(y)) => {
                    // The second operand is a constant leaf.
                    let (ga, x, y) = (&mut ga[..n], &x[..n], &y[..n]);
                    for i in 0..n {
                        ga[i] = ga[i] + $k.vjp2(x[i], y[i], z[i], g[i]).0;
                    }
                }
                (Grads::Second(gb), Arg::Lanes(x), Arg::Lanes(y)) => {
                    // The first operand is a constant leaf.
                    let (gb, x, y) = (&mut gb[..n], &x[..n], &y[..n]);
                    for i in 0..n {
                        gb[i] = gb[i] + $k.vjp2(x[i], y[i], z[i], g[i]).1;
                    }
                }
                (Grads::First(ga), Arg::Lanes(x), Arg::Const(c)) => {
                    let (ga, x) = (&mut ga[..n], &x[..n]);
                    for i in 0..n {
                        ga[i] = ga[i] + $k.vjp2(x[i], c, z[i], g[i]).0;
                    }
                }
                (Grads::Second(gb), Arg::Const(c), Arg::Lanes(y)) => {
                    let (gb, y) = (&mut gb[..n], &y[..n]);
                    for i in 0..n {
                        gb[i] = gb[i] + $k.vjp2(c, y[i], z[i], g[i]).1;
                    }
                }
                (out, a, b) => {
                    // Any other pairing is a caller bug; fall back to the generic loop.
                    let (mut ga, mut gb) = match out {
                        Grads::Both(x, y) => (Some(x), Some(y)),
                        Grads::First(x) => (Some(x), None),
                        Grads::Second(y) => (None, Some(y)),
                        Grads::Same(x) => (Some(x), None),
                    };
                    for i in 0..n {
                        let (da, db) = $k.vjp2(lane(a, i), lane(b, i), z[i], g[i]);
                        if let Some(ga) = ga.as_deref_mut() {
                            ga[i] = ga[i] + da;
                        }
                        if let Some(gb) = gb.as_deref_mut() {
                            gb[i] = gb[i] + db;
                        }
                    }
                }
            }
        };
    }
    per_op!(op, body)
}

/// Kernels over a scattered lane subset. Cheap ops index the listed lanes in place; costly ones
/// (transcendental functions) gather the lanes into contiguous scratch buffers, run the
/// vectorized kernel and scatter the results back. Each lane gets exactly the formula it would
/// get in a full-width kernel, so results do not depend on the layout.
#[derive(Debug, Default)]
pub struct Gather<R> {
    bufs: [Vec<R>; 6],
}

/// A gathered operand: the buffer, or the constant itself (so kernels keep their const paths).
fn gathered<'a, R: Real>(buf: &'a [R], src: Arg<'_, R>) -> Arg<'a, R> {
    match src {
        Arg::Const(c) => Arg::Const(c),
        Arg::Lanes(_) => Arg::Lanes(buf),
    }
}

impl<R: Real> Gather<R> {
    /// Fills buffer `k` with `src` at `lanes`.
    fn load(&mut self, k: usize, src: &[R], lanes: &[u32]) {
        let buf = &mut self.bufs[k];
        buf.clear();
        buf.extend(lanes.iter().map(|&l| src[l as usize]));
    }

    fn load_arg(&mut self, k: usize, src: Arg<R>, lanes: &[u32]) {
        match src {
            Arg::Lanes(x) => self.load(k, x, lanes),
            Arg::Const(_) => self.bufs[k].clear(),
        }
    }

    /// Makes buffer `k` hold `n` values (about to be overwritten by a kernel).
    fn sized(&mut self, k: usize, n: usize) {
        self.bufs[k].resize(n, R::zero());
    }

    fn store(&self, k: usize, dst: &mut [R], lanes: &[u32]) {
        for (&l, &v) in lanes.iter().zip(&self.bufs[k]) {
            dst[l as usize] = v;
        }
    }

    /// `out[l] = op(x[l])` for the listed lanes (slices hold every lane of their slot).
    pub fn forward1(&mut self, op: Op, out: &mut [R], x: &[R], lanes: &[u32]) {
        if op.is_cheap() {
            return forward1_at(op, out, x, lanes);
        }
        self.load(0, x, lanes);
        self.sized(1, lanes.len());
        let [xs, os, ..] = &mut self.bufs;
        forward1(op, os, xs);
        self.store(1, out, lanes);
    }

    /// `out[l] = op(a[l], b[l])` for the listed lanes.
    pub fn forward2(&mut self, op: Op, out: &mut [R], a: Arg<R>, b: Arg<R>, lanes: &[u32]) {
        if op.is_cheap() {
            return forward2_at(op, out, a, b, lanes);
        }
        self.load_arg(0, a, lanes);
        self.load_arg(1, b, lanes);
        self.sized(2, lanes.len());
        let [xs, ys, os, ..] = &mut self.bufs;
        forward2(op, os, gathered(xs, a), gathered(ys, b));
        self.store(2, out, lanes);
    }

    /// `gx[l] += vjp1(x[l], z[l], g[l])` for the listed lanes.
    pub fn backward1(&mut self, op: Op, gx: &mut [R], x: &[R], z: &[R], g: &[R], lanes: &[u32]) {
        if op.is_cheap() {
            return backward1_at(op, gx, x, z, g, lanes);
        }
        self.load(0, x, lanes);
        self.load(1, z, lanes);
        self.load(2, g, lanes);
        self.load(3, gx, lanes);
        let [xs, zs, gs, acc, ..] = &mut self.bufs;
        backward1(op, acc, xs, zs, gs);
        self.store(3, gx, lanes);
    }

    /// A binary op's adjoints for the listed lanes; `(a, b)` are its operands.
    pub fn backward2(
        &mut self,
        op: Op,
        (a, b): (Arg<R>, Arg<R>),
        z: &[R],
        g: &[R],
        out: Grads<R>,
        lanes: &[u32],
    ) {
        if op.is_cheap() {
            return backward2_at(op, a, b, z, g, out, lanes);
        }
        self.load_arg(0, a, lanes);
        self.load_arg(1, b, lanes);
        self.load(2, z, lanes);
        self.load(3, g, lanes);
        match out {
            Grads::Both(ga, gb) => {
                self.load(4, ga, lanes);
                self.load(5, gb, lanes);
                let [xs, ys, zs, gs, gas, gbs] = &mut self.bufs;
                backward2(
                    op,
                    gathered(xs, a),
                    gathered(ys, b),
                    zs,
                    gs,
                    Grads::Both(gas, gbs),
                );
                self.store(4, ga, lanes);
                self.store(5, gb, lanes);
            }
            single => {
                // One accumulator: an operand used twice, or only one lane-valued operand.
                let (dst, kind) = match single {
                    Grads::Same(x) => (x, 0),
                    Grads::First(x) => (x, 1),
                    Grads::Second(x) | Grads::Both(x, _) => (x, 2),
                };
                self.load(4, dst, lanes);
                let [xs, ys, zs, gs, acc, _] = &mut self.bufs;
                let grads = match kind {
                    0 => Grads::Same(acc),
                    1 => Grads::First(acc),
                    _ => Grads::Second(acc),
                };
                backward2(op, gathered(xs, a), gathered(ys, b), zs, gs, grads);
                self.store(4, dst, lanes);
            }
        }
    }
}

/// The value of an operand in lane `l`.
#[inline(always)]
fn at<R: Real>(v: Arg<R>, l: usize) -> R {
    match v {
        Arg::Lanes(x) => x[l],
        Arg::Const(c) => c,
    }
}

fn forward1_at<R: Real>(op: Op, out: &mut [R], x: &[R], lanes: &[u32]) {
    macro_rules! body {
        ($k:expr) => {
            for &l in lanes {
                let l = l as usize;
                out[l] = $k.eval1(x[l]);
            }
        };
    }
    per_op!(op, body)
}

fn forward2_at<R: Real>(op: Op, out: &mut [R], a: Arg<R>, b: Arg<R>, lanes: &[u32]) {
    macro_rules! body {
        ($k:expr) => {
            for &l in lanes {
                let l = l as usize;
                out[l] = $k.eval2(at(a, l), at(b, l));
            }
        };
    }
    per_op!(op, body)
}

fn backward1_at<R: Real>(op: Op, gx: &mut [R], x: &[R], z: &[R], g: &[R], lanes: &[u32]) {
    macro_rules! body {
        ($k:expr) => {
            for &l in lanes {
                let l = l as usize;
                gx[l] = gx[l] + $k.vjp1(x[l], z[l], g[l]);
            }
        };
    }
    per_op!(op, body)
}

fn backward2_at<R: Real>(
    op: Op,
    a: Arg<R>,
    b: Arg<R>,
    z: &[R],
    g: &[R],
    out: Grads<R>,
    lanes: &[u32],
) {
    macro_rules! body {
        ($k:expr) => {
            match out {
                Grads::Both(ga, gb) => {
                    for &l in lanes {
                        let l = l as usize;
                        let (da, db) = $k.vjp2(at(a, l), at(b, l), z[l], g[l]);
                        ga[l] = ga[l] + da;
                        gb[l] = gb[l] + db;
                    }
                }
                Grads::Same(gx) => {
                    for &l in lanes {
                        let l = l as usize;
                        let (da, db) = $k.vjp2(at(a, l), at(b, l), z[l], g[l]);
                        gx[l] = gx[l] + da + db;
                    }
                }
                Grads::First(ga) => {
                    for &l in lanes {
                        let l = l as usize;
                        ga[l] = ga[l] + $k.vjp2(at(a, l), at(b, l), z[l], g[l]).0;
                    }
                }
                Grads::Second(gb) => {
                    for &l in lanes {
                        let l = l as usize;
                        gb[l] = gb[l] + $k.vjp2(at(a, l), at(b, l), z[l], g[l]).1;
                    }
                }
            }
        };
    }
    per_op!(op, body)
}
