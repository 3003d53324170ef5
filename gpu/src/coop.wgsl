// The cooperative interpreter: one workgroup of COOP invocations per lane.
//
// The per-lane entry (`main`) gives each lane one invocation, which runs every D x D product,
// inverse and determinant alone: the work per invocation grows as D^3 while the device keeps
// far more threads in flight than there are lanes. Here a workgroup shares one lane: scalar
// nodes, guards and the O(n) vector nodes run on invocation 0 (with the per-lane code above),
// and the wide nodes — elementwise over many elements, transpose, matmul, matvec, outer, and
// det / logdet / inv above 3 x 3 — split their elements over the workgroup, with operands
// staged in workgroup memory and results written once. The arithmetic per element is the
// per-lane code's, in the same order, so both entries compute the same values.
//
// Every invocation walks the same nodes: whether a node is wide depends only on the program
// words (read-only, so uniform), and a barrier separates a wide node from what it reads and
// what reads it. Values one invocation decides for all (a pivot row, a singular matrix) pass
// through `workgroupUniformLoad`.

const COOP: u32 = 64u;
// WSIZE (workgroup memory in floats, with WT within the 16 KiB every adapter offers) and BATCH
// (the longest run of independent scalar nodes) are prepended by the host (encode.rs).
const NONE: u32 = 0xffffffffu; // "no adjoint target"

var<workgroup> W: array<f32, WSIZE>;
var<workgroup> WT: array<u32, 2u * BATCH>; // a batch's adjoint targets, two per node
var<workgroup> W_PIVOT: u32;
const SINGULAR: u32 = 0xffffffffu;
var<workgroup> W_VALUE: f32;

var<private> T: u32; // this invocation's index in its workgroup

// Orders the workgroup's writes to the payload and to workgroup memory before what follows.
fn sync() {
    storageBarrier();
    workgroupBarrier();
}

// Lane-set membership for a lane the whole workgroup shares (uniform, unlike `member`).
fn member_of(ls: u32, gl: u32) -> bool {
    if ls == 0u { return true; }
    let w = bits[(ls - 1u) * P.set_words + gl / 32u];
    return ((w >> (gl % 32u)) & 1u) == 1u;
}

// Whether a node splits its elements over the workgroup (else invocation 0 runs it): the host
// decides (encode.rs: `wide`) and sets bit 23 of the node's first word.
fn is_wide(i: u32) -> bool { return ((prog[i * 8u] >> 23u) & 1u) == 1u; }

// ---- forward ----

fn coop_forward(nd: Node, gl: u32) {
    if !member_of(nd.lanes, gl) { return; }
    switch nd.op {
        case OP_MATMUL: { coop_matmul(nd); }
        case OP_DET, OP_LOGDET, OP_INV: { coop_solve(nd); }
        default: {
            // elementwise, transpose, outer, matvec: element by element (batched.wgsl)
            for (var e = T; e < part_elements(nd, 0u); e += COOP) { elem_forward(nd, e); }
        }
    }
}

fn coop_matmul(nd: Node) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let mk = m * k;
    if mk + k * n > WSIZE {
        for (var e = T; e < m * n; e += COOP) { elem_forward(nd, e); }
        return;
    }
    for (var e = T; e < mk; e += COOP) { W[e] = X(nd.a + e); }
    for (var e = T; e < k * n; e += COOP) { W[mk + e] = X(nd.b + e); }
    workgroupBarrier();
    for (var e = T; e < m * n; e += COOP) {
        let i = e / n;
        let j = e % n;
        var s = W[i * k] * W[mk + j];
        for (var p = 1u; p < k; p++) { s = s + W[i * k + p] * W[mk + p * n + j]; }
        setX(nd.out + e, s);
    }
}

// Copies the n x n matrix at slot `a` into workgroup memory from `at`.
fn stage(a: u32, n: u32, at: u32) {
    for (var e = T; e < n * n; e += COOP) { W[at + e] = X(a + e); }
    workgroupBarrier();
}

// The pivot row of column `col` of the n x n matrix in W from `at` (as `pivot`), chosen by
// invocation 0 and returned to all (SINGULAR where the pivot is 0); its value in W_VALUE.
fn coop_pivot(at: u32, n: u32, col: u32) -> u32 {
    if T == 0u {
        var best = col;
        for (var q = col + 1u; q < n; q++) {
            if abs(W[at + q * n + col]) > abs(W[at + best * n + col]) { best = q; }
        }
        W_VALUE = W[at + best * n + col];
        W_PIVOT = select(best, SINGULAR, W_VALUE == 0.0);
    }
    return workgroupUniformLoad(&W_PIVOT);
}

// (det, ln |det|) of the matrix at slot `a` (n > 3) by LU with partial pivoting in W, as
// `det_any`.
fn coop_det(a: u32, n: u32) -> vec2<f32> {
    stage(a, n, 0u);
    var prod = 1.0;
    var logs = 0.0;
    var negative = false;
    for (var col = 0u; col < n; col++) {
        let p = coop_pivot(0u, n, col);
        if p == SINGULAR { return vec2<f32>(0.0, -inf()); }
        let piv = W_VALUE;
        if p != col {
            for (var c = T; c < n; c += COOP) {
                let t = W[p * n + c];
                W[p * n + c] = W[col * n + c];
                W[col * n + c] = t;
            }
            negative = !negative;
        }
        workgroupBarrier();
        let r = n - col - 1u;
        for (var e = T; e < r * r; e += COOP) {
            let q = col + 1u + e / r;
            let c = col + 1u + e % r;
            let f = W[q * n + col] / piv;
            W[q * n + c] = W[q * n + c] - f * W[col * n + c];
        }
        workgroupBarrier();
        if col == 0u { prod = piv; logs = ln_f(abs(piv)); } else { prod = prod * piv; logs = logs + ln_f(abs(piv)); }
    }
    return vec2<f32>(select(prod, -prod, negative), logs);
}

// A^-1 of the matrix at slot `a` (n > 3) by Gauss–Jordan in W, as `inverse`: the result at
// W[n²..2n²), or false when A is singular.
fn coop_inverse(a: u32, n: u32) -> bool {
    let nn = n * n;
    let f = 2u * nn; // each row's factor
    for (var e = T; e < nn; e += COOP) {
        W[e] = X(a + e);
        W[nn + e] = select(0.0, 1.0, e / n == e % n);
    }
    workgroupBarrier();
    for (var col = 0u; col < n; col++) {
        let p = coop_pivot(0u, n, col);
        if p == SINGULAR { return false; }
        let piv = W_VALUE;
        // swap rows p and col, dividing the new pivot row: one column per invocation
        for (var c = T; c < n; c += COOP) {
            let tm = W[col * n + c];
            let tz = W[nn + col * n + c];
            W[col * n + c] = W[p * n + c] / piv;
            W[nn + col * n + c] = W[nn + p * n + c] / piv;
            if p != col {
                W[p * n + c] = tm;
                W[nn + p * n + c] = tz;
            }
        }
        workgroupBarrier();
        for (var q = T; q < n; q += COOP) { W[f + q] = W[q * n + col]; }
        workgroupBarrier();
        let r = n - 1u;
        for (var e = T; e < r * n; e += COOP) {
            var q = e / n;
            if q >= col { q = q + 1u; }
            let c = e % n;
            let fq = W[f + q];
            W[q * n + c] = W[q * n + c] - fq * W[col * n + c];
            W[nn + q * n + c] = W[nn + q * n + c] - fq * W[nn + col * n + c];
        }
        workgroupBarrier();
    }
    return true;
}

// det, logdet and inv above 3 x 3 (the closed forms below stay on invocation 0).
fn coop_solve(nd: Node) {
    let n = nd.aux;
    let nn = n * n;
    if 2u * nn + n > WSIZE {
        if T == 0u { linalg_forward(nd); }
        return;
    }
    if nd.op == OP_INV {
        let ok = coop_inverse(nd.a, n);
        for (var e = T; e < nn; e += COOP) { setX(nd.out + e, select(nan(), W[nn + e], ok)); }
        return;
    }
    let d = coop_det(nd.a, n);
    workgroupBarrier();
    if T == 0u { setX(nd.out, select(d.y, d.x, nd.op == OP_DET)); }
    let ok = coop_inverse(nd.a, n);
    if nd.op == OP_LOGDET {
        for (var e = T; e < nn; e += COOP) { setX(nd.b + e, select(nan(), W[nn + e], ok)); }
        return;
    }
    // det's cofactors: d * A^-T, or from the minors at a singular matrix (invocation 0)
    if ok && d.x != 0.0 && !is_nan(W[nn]) {
        for (var e = T; e < nn; e += COOP) { setX(nd.b + e, d.x * W[nn + (e % n) * n + e / n]); }
    } else if T == 0u {
        for (var e = 0u; e < nn; e++) { setS(e, X(nd.a + e)); }
        cofactors(n, d.x, nd.b);
    }
}

// ---- backward ----

fn coop_backward(nd: Node, gl: u32) {
    if !member_of(nd.lanes, gl) { return; }
    let ga = (nd.skip & 1u) == 0u;
    let gb = (nd.skip & 2u) == 0u;
    let n = nd.aux;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    switch nd.op {
        case OP_MATMUL: { coop_matmul_back(nd, ga, gb); }
        case OP_DET, OP_LOGDET: {
            if !ga { return; }
            let gz = G(o);
            for (var e = T; e < n * n; e += COOP) {
                if nd.op == OP_DET {
                    addG(a + e, gz * X(b + e));
                } else {
                    addG(a + e, gz * X(b + (e % n) * n + e / n));
                }
            }
        }
        case OP_INV: {
            if ga { coop_inv_back(nd); }
        }
        default: {
            // elementwise, transpose, outer, matvec: element by element (batched.wgsl)
            for (var e = T; e < part_elements(nd, 1u); e += COOP) { elem_back_a(nd, e); }
            sync(); // `(outer v v)`: both sides add into the same slots
            for (var e = T; e < part_elements(nd, 2u); e += COOP) { elem_back_b(nd, e); }
        }
    }
}

// dA = dC B^T and dB = A^T dC, with dC, B and A staged in W when they fit.
fn coop_matmul_back(nd: Node, ga: bool, gb: bool) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let mn = m * n;
    let kn = k * n;
    let mk = m * k;
    let staged = mn + kn + mk <= WSIZE;
    if staged {
        for (var e = T; e < mn; e += COOP) { W[e] = G(nd.out + e); }
        for (var e = T; e < kn; e += COOP) { W[mn + e] = X(nd.b + e); }
        for (var e = T; e < mk; e += COOP) { W[mn + kn + e] = X(nd.a + e); }
        workgroupBarrier();
    }
    if ga {
        for (var e = T; e < mk; e += COOP) {
            if !staged {
                elem_back_a(nd, e);
                continue;
            }
            let i = e / k;
            let p = e % k;
            var s = W[i * n] * W[mn + p * n];
            for (var j = 1u; j < n; j++) { s = s + W[i * n + j] * W[mn + p * n + j]; }
            addG(nd.a + e, s);
        }
    }
    sync(); // `(matmul A A)`: both sides add into the same slots
    if gb {
        for (var e = T; e < kn; e += COOP) {
            if !staged {
                elem_back_b(nd, e);
                continue;
            }
            let p = e / n;
            let j = e % n;
            var s = W[mn + kn + p] * W[j];
            for (var i = 1u; i < m; i++) { s = s + W[mn + kn + i * k + p] * W[i * n + j]; }
            addG(nd.b + e, s);
        }
    }
}

// With Z = A^-1 (the result): T = Z^T G, then A_bar -= T Z^T (as `linalg_backward`).
fn coop_inv_back(nd: Node) {
    let n = nd.aux;
    let nn = n * n;
    if 3u * nn > WSIZE {
        if T == 0u { linalg_backward(nd, true, false); }
        return;
    }
    let o = nd.out;
    for (var e = T; e < nn; e += COOP) {
        W[e] = X(o + e);
        W[nn + e] = G(o + e);
    }
    workgroupBarrier();
    let t = 2u * nn;
    for (var e = T; e < nn; e += COOP) {
        let i = e / n;
        let q = e % n;
        var s = W[i] * W[nn + q];
        for (var p = 1u; p < n; p++) { s = s + W[p * n + i] * W[nn + p * n + q]; }
        W[t + e] = s;
    }
    workgroupBarrier();
    for (var e = T; e < nn; e += COOP) {
        let i = e / n;
        let j = e % n;
        var acc = G(nd.a + e);
        for (var q = 0u; q < n; q++) { acc = acc - W[t + i * n + q] * W[j * n + q]; }
        g[(nd.a + e) * P.lanes + L] = acc;
    }
}

// ---- runs of independent scalar nodes ----

// A run's length where node word `h` starts one (forward: its first node, bit 31 clear) or
// ends one (backward: its last node, bit 31 set); 0 elsewhere.
fn batch_at(h: u32, last: bool) -> u32 {
    if ((h >> 31u) == 1u) != last { return 0u; }
    return (h >> 24u) & 0x7fu;
}

// Nodes [i, i + len) read nothing the run writes: one node per invocation.
fn batch_forward(i: u32, len: u32) {
    for (var r = T; r < len; r += COOP) { forward_node(node(i + r)); }
}

// The run's VJPs in parallel into W / WT (r = 0 is its last node), then invocation 0 adds them
// in the sequential order: the same sums, in the same order, as `backward_node` one by one.
fn batch_backward(last: u32, len: u32) {
    for (var r = T; r < len; r += COOP) {
        let n = node(last - r);
        var ta = NONE;
        var tb = NONE;
        var da = 0.0;
        var db = 0.0;
        if member(n.lanes) {
            let gz = G(n.out);
            let z = X(n.out);
            let va = operand(n.a, a_const(n.form), 0u);
            let da_on = (n.skip & 1u) == 0u && !a_const(n.form);
            if n.form == FORM_UNARY {
                if da_on { ta = n.a; da = vjp1(n.op, va, z, gz); }
            } else {
                let d = vjp2(n.op, va, operand(n.b, b_const(n.form), 0u), z, gz);
                if da_on { ta = n.a; da = d.x; }
                if (n.skip & 2u) == 0u && !b_const(n.form) { tb = n.b; db = d.y; }
            }
        }
        W[2u * r] = da;
        W[2u * r + 1u] = db;
        WT[2u * r] = ta;
        WT[2u * r + 1u] = tb;
    }
    workgroupBarrier();
    if T == 0u {
        for (var e = 0u; e < 2u * len; e++) {
            if WT[e] != NONE { addG(WT[e], W[e]); }
        }
    }
}

// ---- the entry ----

// One workgroup per lane: workgroup (x, y) runs lane y * P.grid + x of the chunk.
@compute @workgroup_size(64)
fn main_coop(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let lane = wid.y * P.grid + wid.x;
    if lane >= P.lanes { return; }
    T = t;
    L = lane;
    GL = P.offset + lane;
    let gl = P.offset + lane;
    var after_wide = false; // the last node was wide: sync before anything reads it
    if P.phase == 0u {
        var next = P.guard_from;
        var i = P.first;
        while i < P.last {
            let nd = node(i);
            let run = min(batch_at(prog[i * 8u], false), P.last - i);
            let w = run > 1u || is_wide(i);
            if w || after_wide { sync(); }
            if T == 0u {
                while next < P.guards && prog[P.guard_base + next * 8u] <= i {
                    check_guard(next);
                    next++;
                }
            }
            if run > 1u {
                batch_forward(i, run);
                i += run;
            } else {
                if w {
                    coop_forward(nd, gl);
                } else if T == 0u {
                    forward_node(nd);
                }
                i++;
            }
            after_wide = w;
        }
        if after_wide { sync(); }
        if T == 0u && P.last == P.nodes {
            while next < P.guards {
                check_guard(next);
                next++;
            }
        }
        return;
    }
    if T == 0u && P.last == P.nodes {
        for (var s = P.seed_start; s < P.seed_end; s++) {
            g[s * P.lanes + L] = 1.0;
        }
    }
    var i = P.last;
    while i > P.first {
        let nd = node(i - 1u);
        let run = min(batch_at(prog[(i - 1u) * 8u], true), i - P.first);
        let w = run > 1u || is_wide(i - 1u);
        if w || after_wide { sync(); }
        if run > 1u {
            batch_backward(i - 1u, run);
            i -= run;
        } else {
            if w {
                coop_backward(nd, gl);
            } else if T == 0u {
                backward_node(nd);
            }
            i--;
        }
        after_wide = w;
    }
}
