// Linear algebra inside the interpreter (engine: prims/linalg): each lane's tensors are read
// element by element from its payload column; `det`, `logdet` and `inv` work in four scratch
// regions of P.sq rows per lane: R0 the operand, R1 an inverse, R2 a working copy, R3 a minor.

fn R1() -> u32 { return P.sq; }
fn R2() -> u32 { return 2u * P.sq; }
fn R3() -> u32 { return 3u * P.sq; }

// det of the n x n (n <= 3) matrix at scratch r by cofactor expansion along the first row,
// writing the cofactor matrix at scratch `cof` when asked.
fn closed_det(r: u32, n: u32, cof: u32, want: bool) -> f32 {
    if n == 1u {
        if want { setS(cof, 1.0); }
        return S(r);
    }
    if n == 2u {
        let a = S(r); let b = S(r + 1u); let c = S(r + 2u); let d = S(r + 3u);
        if want { setS(cof, d); setS(cof + 1u, -c); setS(cof + 2u, -b); setS(cof + 3u, a); }
        return a * d - b * c;
    }
    let a = S(r); let b = S(r + 1u); let c = S(r + 2u);
    let d = S(r + 3u); let e = S(r + 4u); let f = S(r + 5u);
    let gg = S(r + 6u); let h = S(r + 7u); let i = S(r + 8u);
    let k0 = e * i - f * h;
    let k1 = f * gg - d * i;
    let k2 = d * h - e * gg;
    if want {
        setS(cof, k0); setS(cof + 1u, k1); setS(cof + 2u, k2);
        setS(cof + 3u, c * h - b * i); setS(cof + 4u, a * i - c * gg); setS(cof + 5u, b * gg - a * h);
        setS(cof + 6u, b * f - c * e); setS(cof + 7u, c * d - a * f); setS(cof + 8u, a * e - b * d);
    }
    return a * k0 + b * k1 + c * k2;
}

fn pivot(r: u32, n: u32, col: u32) -> u32 {
    var best = col;
    for (var q = col + 1u; q < n; q++) {
        if abs(S(r + q * n + col)) > abs(S(r + best * n + col)) { best = q; }
    }
    return best;
}

fn swap_rows(r: u32, n: u32, i: u32, j: u32) {
    for (var c = 0u; c < n; c++) {
        let t = S(r + i * n + c);
        setS(r + i * n + c, S(r + j * n + c));
        setS(r + j * n + c, t);
    }
}

// (det, ln |det|) of the n x n matrix at scratch r (left unchanged): the closed form for n <= 3,
// LU with partial pivoting in R2 above.
fn det_any(r: u32, n: u32) -> vec2<f32> {
    if n <= 3u {
        let d = closed_det(r, n, 0u, false);
        return vec2<f32>(d, ln_f(abs(d)));
    }
    let w = R2();
    for (var e = 0u; e < n * n; e++) { setS(w + e, S(r + e)); }
    var prod = 1.0;
    var logs = 0.0;
    var negative = false;
    for (var col = 0u; col < n; col++) {
        let p = pivot(w, n, col);
        if S(w + p * n + col) == 0.0 { return vec2<f32>(0.0, -inf()); }
        if p != col { swap_rows(w, n, p, col); negative = !negative; }
        let piv = S(w + col * n + col);
        for (var q = col + 1u; q < n; q++) {
            let f = S(w + q * n + col) / piv;
            for (var c = col + 1u; c < n; c++) {
                setS(w + q * n + c, S(w + q * n + c) - f * S(w + col * n + c));
            }
        }
        if col == 0u { prod = piv; logs = ln_f(abs(piv)); } else { prod = prod * piv; logs = logs + ln_f(abs(piv)); }
    }
    return vec2<f32>(select(prod, -prod, negative), logs);
}

// A^-1 of the matrix at scratch r into scratch z (row-major); NaN everywhere when singular.
fn inverse(r: u32, n: u32, z: u32) {
    if n <= 3u {
        let k = R3();
        let d = closed_det(r, n, k, true);
        for (var i = 0u; i < n; i++) {
            for (var j = 0u; j < n; j++) {
                setS(z + i * n + j, select(S(k + j * n + i) / d, nan(), d == 0.0));
            }
        }
        return;
    }
    let m = R2();
    for (var e = 0u; e < n * n; e++) {
        setS(m + e, S(r + e));
        setS(z + e, select(0.0, 1.0, e / n == e % n));
    }
    for (var col = 0u; col < n; col++) {
        let p = pivot(m, n, col);
        if S(m + p * n + col) == 0.0 {
            for (var e = 0u; e < n * n; e++) { setS(z + e, nan()); }
            return;
        }
        swap_rows(m, n, p, col);
        swap_rows(z, n, p, col);
        let piv = S(m + col * n + col);
        for (var c = 0u; c < n; c++) {
            setS(m + col * n + c, S(m + col * n + c) / piv);
            setS(z + col * n + c, S(z + col * n + c) / piv);
        }
        for (var q = 0u; q < n; q++) {
            if q == col { continue; }
            let f = S(m + q * n + col);
            for (var c = 0u; c < n; c++) {
                setS(m + q * n + c, S(m + q * n + c) - f * S(m + col * n + c));
                setS(z + q * n + c, S(z + q * n + c) - f * S(z + col * n + c));
            }
        }
    }
}

// The cofactor matrix of the n x n (n >= 4) matrix at scratch R0 with determinant d into the
// payload from slot `dst`: d * A^-T when A is invertible, else from the minors.
fn cofactors(n: u32, d: f32, dst: u32) {
    let z = R1();
    inverse(0u, n, z);
    if d != 0.0 && !is_nan(S(z)) {
        for (var i = 0u; i < n; i++) {
            for (var j = 0u; j < n; j++) { setX(dst + i * n + j, d * S(z + j * n + i)); }
        }
        return;
    }
    let mr = R3();
    for (var i = 0u; i < n; i++) {
        for (var j = 0u; j < n; j++) {
            var e = 0u;
            for (var r = 0u; r < n; r++) {
                if r == i { continue; }
                for (var c = 0u; c < n; c++) {
                    if c == j { continue; }
                    setS(mr + e, S(r * n + c));
                    e++;
                }
            }
            let m = det_any(mr, n - 1u).x;
            setX(dst + i * n + j, select(-m, m, (i + j) % 2u == 0u));
        }
    }
}

fn linalg_forward(nd: Node) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    switch nd.op {
        case OP_DOT: {
            var s = X(a) * X(b);
            for (var j = 1u; j < n; j++) { s = s + X(a + j) * X(b + j); }
            setX(o, s);
        }
        case OP_CROSS: {
            setX(o, X(a + 1u) * X(b + 2u) - X(a + 2u) * X(b + 1u));
            setX(o + 1u, X(a + 2u) * X(b) - X(a) * X(b + 2u));
            setX(o + 2u, X(a) * X(b + 1u) - X(a + 1u) * X(b));
        }
        case OP_NORM, OP_NORMALIZE: {
            var s = X(a) * X(a);
            for (var j = 1u; j < n; j++) { s = s + X(a + j) * X(a + j); }
            let r = sqrt(s);
            if nd.op == OP_NORM {
                setX(o, r);
            } else {
                setX(b, r);
                for (var j = 0u; j < n; j++) { setX(o + j, X(a + j) / clamp_eps(r)); }
            }
        }
        case OP_VSUM: {
            var s = X(a);
            for (var j = 1u; j < n; j++) { s = s + X(a + j); }
            setX(o, s);
        }
        case OP_TRACE: {
            var s = X(a);
            for (var i = 1u; i < min(m, n); i++) { s = s + X(a + i * n + i); }
            setX(o, s);
        }
        case OP_TRANSPOSE: {
            for (var i = 0u; i < m; i++) {
                for (var j = 0u; j < n; j++) { setX(o + j * m + i, X(a + i * n + j)); }
            }
        }
        case OP_MATMUL: {
            for (var i = 0u; i < m; i++) {
                for (var j = 0u; j < n; j++) {
                    var s = X(a + i * k) * X(b + j);
                    for (var p = 1u; p < k; p++) { s = s + X(a + i * k + p) * X(b + p * n + j); }
                    setX(o + i * n + j, s);
                }
            }
        }
        case OP_MATVEC: {
            for (var i = 0u; i < m; i++) {
                var s = X(a + i * k) * X(b);
                for (var p = 1u; p < k; p++) { s = s + X(a + i * k + p) * X(b + p); }
                setX(o + i, s);
            }
        }
        case OP_OUTER: {
            for (var i = 0u; i < m; i++) {
                for (var j = 0u; j < n; j++) { setX(o + i * n + j, X(a + i) * X(b + j)); }
            }
        }
        case OP_DET, OP_LOGDET, OP_INV: {
            for (var e = 0u; e < n * n; e++) { setS(e, X(a + e)); }
            if nd.op == OP_INV {
                inverse(0u, n, R1());
                for (var e = 0u; e < n * n; e++) { setX(o + e, S(R1() + e)); }
                return;
            }
            let d = det_any(0u, n);
            if nd.op == OP_DET {
                setX(o, d.x);
                if n > 3u { cofactors(n, d.x, b); }
            } else {
                setX(o, d.y);
                if n > 3u {
                    inverse(0u, n, R1());
                    for (var e = 0u; e < n * n; e++) { setX(b + e, S(R1() + e)); }
                }
            }
        }
        default: {}
    }
}

fn linalg_backward(nd: Node, ga: bool, gb: bool) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    switch nd.op {
        case OP_DOT: {
            let gz = G(o);
            for (var j = 0u; j < n; j++) {
                if ga { addG(a + j, gz * X(b + j)); }
                if gb { addG(b + j, gz * X(a + j)); }
            }
        }
        case OP_CROSS: {
            let g0 = G(o); let g1 = G(o + 1u); let g2 = G(o + 2u);
            let u0 = X(a); let u1 = X(a + 1u); let u2 = X(a + 2u);
            let v0 = X(b); let v1 = X(b + 1u); let v2 = X(b + 2u);
            if ga {
                addG(a, v1 * g2 - v2 * g1); addG(a + 1u, v2 * g0 - v0 * g2); addG(a + 2u, v0 * g1 - v1 * g0);
            }
            if gb {
                addG(b, g1 * u2 - g2 * u1); addG(b + 1u, g2 * u0 - g0 * u2); addG(b + 2u, g0 * u1 - g1 * u0);
            }
        }
        case OP_NORM: {
            let gz = G(o);
            let z = X(o);
            if z > 0.0 && ga {
                for (var j = 0u; j < n; j++) { addG(a + j, gz * X(a + j) / z); }
            }
        }
        case OP_NORMALIZE: {
            if !ga { return; }
            let r = X(b);
            let mm = clamp_eps(r);
            var d = G(o) * X(a);
            for (var j = 1u; j < n; j++) { d = d + G(o + j) * X(a + j); }
            for (var j = 0u; j < n; j++) {
                if r > 1e-8 {
                    addG(a + j, G(o + j) / mm - d * X(a + j) / (mm * mm * mm));
                } else {
                    addG(a + j, G(o + j) / mm);
                }
            }
        }
        case OP_VSUM: {
            if ga { for (var j = 0u; j < n; j++) { addG(a + j, G(o)); } }
        }
        case OP_TRACE: {
            if ga { for (var i = 0u; i < min(m, n); i++) { addG(a + i * n + i, G(o)); } }
        }
        case OP_TRANSPOSE: {
            if ga {
                for (var i = 0u; i < m; i++) {
                    for (var j = 0u; j < n; j++) { addG(a + i * n + j, G(o + j * m + i)); }
                }
            }
        }
        case OP_MATMUL: {
            if ga {
                for (var i = 0u; i < m; i++) {
                    for (var p = 0u; p < k; p++) {
                        var s = G(o + i * n) * X(b + p * n);
                        for (var j = 1u; j < n; j++) { s = s + G(o + i * n + j) * X(b + p * n + j); }
                        addG(a + i * k + p, s);
                    }
                }
            }
            if gb {
                for (var p = 0u; p < k; p++) {
                    for (var j = 0u; j < n; j++) {
                        var s = X(a + p) * G(o + j);
                        for (var i = 1u; i < m; i++) { s = s + X(a + i * k + p) * G(o + i * n + j); }
                        addG(b + p * n + j, s);
                    }
                }
            }
        }
        case OP_MATVEC: {
            if ga {
                for (var i = 0u; i < m; i++) {
                    for (var p = 0u; p < k; p++) { addG(a + i * k + p, G(o + i) * X(b + p)); }
                }
            }
            if gb {
                for (var p = 0u; p < k; p++) {
                    var s = X(a + p) * G(o);
                    for (var i = 1u; i < m; i++) { s = s + X(a + i * k + p) * G(o + i); }
                    addG(b + p, s);
                }
            }
        }
        case OP_OUTER: {
            if ga {
                for (var i = 0u; i < m; i++) {
                    var s = G(o + i * n) * X(b);
                    for (var j = 1u; j < n; j++) { s = s + G(o + i * n + j) * X(b + j); }
                    addG(a + i, s);
                }
            }
            if gb {
                for (var j = 0u; j < n; j++) {
                    var s = G(o + j) * X(a);
                    for (var i = 1u; i < m; i++) { s = s + G(o + i * n + j) * X(a + i); }
                    addG(b + j, s);
                }
            }
        }
        case OP_DET, OP_LOGDET: {
            if !ga { return; }
            let gz = G(o);
            if n <= 3u {
                for (var e = 0u; e < n * n; e++) { setS(e, X(a + e)); }
                if nd.op == OP_DET {
                    closed_det(0u, n, R1(), true);
                    for (var e = 0u; e < n * n; e++) { addG(a + e, gz * S(R1() + e)); }
                } else {
                    inverse(0u, n, R1());
                    for (var i = 0u; i < n; i++) {
                        for (var j = 0u; j < n; j++) { addG(a + i * n + j, gz * S(R1() + j * n + i)); }
                    }
                }
            } else if nd.op == OP_DET {
                for (var e = 0u; e < n * n; e++) { addG(a + e, gz * X(b + e)); }
            } else {
                for (var i = 0u; i < n; i++) {
                    for (var j = 0u; j < n; j++) { addG(a + i * n + j, gz * X(b + j * n + i)); }
                }
            }
        }
        case OP_INV: {
            if !ga { return; }
            // With Z = A^-1 (the result): T = Z^T G, then A_bar -= T Z^T.
            let t = R1();
            for (var i = 0u; i < n; i++) {
                for (var q = 0u; q < n; q++) {
                    var s = X(o + i) * G(o + q);
                    for (var p = 1u; p < n; p++) { s = s + X(o + p * n + i) * G(o + p * n + q); }
                    setS(t + i * n + q, s);
                }
            }
            for (var i = 0u; i < n; i++) {
                for (var j = 0u; j < n; j++) {
                    var acc = G(a + i * n + j);
                    for (var q = 0u; q < n; q++) { acc = acc - S(t + i * n + q) * X(o + j * n + q); }
                    g[(a + i * n + j) * P.lanes + L] = acc;
                }
            }
        }
        default: {}
    }
}
