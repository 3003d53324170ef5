// The node-major interpreter: one dispatch per wide node, one invocation per element per lane.
//
// The per-lane entry walks every node of a lane in one thread, and the cooperative one gives a
// workgroup to each lane; both run one lane's D x D product at a time. Here a wide node —
// elementwise over many elements, transpose, matmul, matvec, outer — is a dispatch of its own
// over lanes x elements, the way a batched library call runs one operation over a whole batch:
// invocation (lane L, element e) computes element e of lane L's result, reading its operands
// from the payload (adjacent lanes at adjacent addresses, so every read coalesces). The nodes
// between wide ones run in segments of the per-lane entry, and large solves (det, logdet, inv)
// in the cooperative entry, each a dispatch of its own: the host picks each segment's entry
// (encode.rs: `Entry`).
//
// A node's work is split in parts, each a dispatch: 0 the forward; 1 the backward into operand
// `a` (with `b` too for elementwise nodes, element by element); 2 the backward into `b`. The
// parts run in that order, so `(matmul A A)` adds A's two adjoints in the same order as the
// other entries. Each element's arithmetic is the per-lane code's in the same order (these
// functions are the cooperative entry's as well): every entry computes the same bits.

// Elements a wide node's part runs over (0 where the part does nothing).
fn part_elements(nd: Node, part: u32) -> u32 {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    if nd.op < OP_SELECT { return select(max(n, 1u), 0u, part == 2u); }
    switch nd.op {
        case OP_TRANSPOSE: { return select(m * n, 0u, part == 2u); }
        case OP_OUTER: { return select(select(m * n, m, part == 1u), n, part == 2u); }
        case OP_MATVEC: { return select(select(m, m * k, part == 1u), k, part == 2u); }
        case OP_MATMUL: { return select(select(m * n, m * k, part == 1u), k * n, part == 2u); }
        default: { return 0u; }
    }
}

// Element `e` of a wide node's result, from the payload.
fn elem_forward(nd: Node, e: u32) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    if nd.op < OP_SELECT {
        let va = operand(a, a_const(nd.form), e);
        if nd.form == FORM_UNARY {
            setX(o + e, eval1(nd.op, va));
        } else {
            setX(o + e, eval2(nd.op, va, operand(b, b_const(nd.form), e)));
        }
        return;
    }
    switch nd.op {
        case OP_TRANSPOSE: { setX(o + (e % n) * m + e / n, X(a + e)); }
        case OP_OUTER: { setX(o + e, X(a + e / n) * X(b + e % n)); }
        case OP_MATVEC: {
            var s = X(a + e * k) * X(b);
            for (var p = 1u; p < k; p++) { s = s + X(a + e * k + p) * X(b + p); }
            setX(o + e, s);
        }
        case OP_MATMUL: {
            let i = e / n;
            let j = e % n;
            var s = X(a + i * k) * X(b + j);
            for (var p = 1u; p < k; p++) { s = s + X(a + i * k + p) * X(b + p * n + j); }
            setX(o + e, s);
        }
        default: {}
    }
}

// Part 1 at element `e`: the adjoint into operand `a` (and into `b` for an elementwise node).
fn elem_back_a(nd: Node, e: u32) {
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    let ga = (nd.skip & 1u) == 0u;
    if nd.op < OP_SELECT {
        let da_on = ga && !a_const(nd.form);
        let db_on = (nd.skip & 2u) == 0u && !b_const(nd.form) && nd.form != FORM_UNARY;
        let gz = G(o + e);
        let z = X(o + e);
        let va = operand(a, a_const(nd.form), e);
        if nd.form == FORM_UNARY {
            if da_on { addG(a + e, vjp1(nd.op, va, z, gz)); }
        } else {
            let d = vjp2(nd.op, va, operand(b, b_const(nd.form), e), z, gz);
            if da_on { addG(a + e, d.x); }
            if db_on { addG(b + e, d.y); }
        }
        return;
    }
    if !ga { return; }
    switch nd.op {
        case OP_TRANSPOSE: { addG(a + e, G(o + (e % n) * m + e / n)); }
        case OP_OUTER: {
            var s = G(o + e * n) * X(b);
            for (var j = 1u; j < n; j++) { s = s + G(o + e * n + j) * X(b + j); }
            addG(a + e, s);
        }
        case OP_MATVEC: { addG(a + e, G(o + e / k) * X(b + e % k)); }
        case OP_MATMUL: {
            let i = e / k;
            let p = e % k;
            var s = G(o + i * n) * X(b + p * n);
            for (var j = 1u; j < n; j++) { s = s + G(o + i * n + j) * X(b + p * n + j); }
            addG(a + e, s);
        }
        default: {}
    }
}

// Part 2 at element `e`: the adjoint into operand `b` of a linear-algebra node.
fn elem_back_b(nd: Node, e: u32) {
    if (nd.skip & 2u) != 0u { return; }
    let n = nd.aux;
    let m = nd.m;
    let k = nd.k;
    let a = nd.a;
    let b = nd.b;
    let o = nd.out;
    switch nd.op {
        case OP_OUTER: {
            var s = G(o + e) * X(a);
            for (var i = 1u; i < m; i++) { s = s + G(o + i * n + e) * X(a + i); }
            addG(b + e, s);
        }
        case OP_MATVEC: {
            var s = X(a + e) * G(o);
            for (var i = 1u; i < m; i++) { s = s + X(a + i * k + e) * G(o + i); }
            addG(b + e, s);
        }
        case OP_MATMUL: {
            let p = e / n;
            let j = e % n;
            var s = X(a + p) * G(o + j);
            for (var i = 1u; i < m; i++) { s = s + X(a + i * k + p) * G(o + i * n + j); }
            addG(b + e, s);
        }
        default: {}
    }
}

// One part of node P.first over lanes x elements: invocation (x, y) runs lane x's elements
// y, y + P.grid, … (P.grid rows were dispatched). Before the forward, row 0 checks the guards
// at this node's position, as the per-lane entry does before a node.
@compute @workgroup_size(64)
fn main_batched(@builtin(global_invocation_id) id: vec3<u32>) {
    L = id.x;
    if L >= P.lanes { return; }
    GL = P.offset + L;
    if P.part == 0u && id.y == 0u {
        var next = P.guard_from;
        while next < P.guards && prog[P.guard_base + next * 8u] <= P.first {
            check_guard(next);
            next++;
        }
    }
    let nd = node(P.first);
    if !member(nd.lanes) { return; }
    let count = part_elements(nd, P.part);
    for (var e = id.y; e < count; e += P.grid) {
        switch P.part {
            case 0u: { elem_forward(nd, e); }
            case 1u: { elem_back_a(nd, e); }
            default: { elem_back_b(nd, e); }
        }
    }
}
