//! Lane kernels: the loops that apply an op's formula (from [`super::scalar`]) to every lane.
//!
//! [`per_op!`] expands a loop body once per op with the op as a constant, so each loop is
//! monomorphized and the compiler vectorizes it; the scalar formula is shared with constant
//! folding and the one-lane fast paths, which keeps every path bit-identical.

use super::scalar::Op;
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
            // Merges are written by the walk and differentiated by the backward pass directly.
            Op::Select => {}
        }
    };
}

/// An operand of a lane kernel: a lane slice or a constant broadcast to every lane.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a, R> {
    Lanes(&'a [R]),
    Const(R),
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
