// The tape interpreter: one fixed program for every candidate (see `lib.rs`).
//
// One invocation is one lane. It runs the recorded nodes in order over its own column of the
// payload (slot s of this lane at x[s * P.lanes + L]), checks every guard once the nodes before
// it have run, then — when gradients are wanted — runs the VJPs in reverse from the result's
// slots. Nodes and guards recorded under a lane subset touch only that subset's lanes, as on the
// CPU. The op and form codes (OP_*, FORM_*) are prepended by the host from the engine's enums.

struct Params {
    lanes: u32,        // lanes in this chunk: the payload's row stride
    offset: u32,       // the chunk's first lane in the whole batch
    total: u32,        // lanes in the whole batch
    nodes: u32,
    guards: u32,
    guard_base: u32,   // word offset of the guards in `prog`
    const_base: u32,   // word offset of the constants in `prog`
    set_words: u32,    // words of one lane set's bitmask in `bits`
    outcome_base: u32, // word offset of the per-lane comparison outcomes in `bits`
    seed_start: u32,
    seed_end: u32,
    phase: u32,       // 0: the forward over nodes [first, last); 1: the backward over them
    nan_bits: u32,
    inf_bits: u32,
    sq: u32,          // rows of one scratch region (the largest n x n solved)
    first: u32,
    last: u32,
    guard_from: u32,  // the first guard at or after node `first`
    grid: u32,        // workgroups per row of the cooperative grid (coop.wgsl), or rows of
                      // the node-major grid (batched.wgsl)
    part: u32,        // the node-major entry's part of its node (batched.wgsl)
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> prog: array<u32>;
@group(0) @binding(2) var<storage, read> bits: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> sc: array<f32>;
// flags[lane]: bit 0 a comparison failed, bit 1 an index guard failed; flags[lanes + guard]: 1
// when that guard failed in some lane.
@group(0) @binding(6) var<storage, read_write> flags: array<atomic<u32>>;

var<private> L: u32;  // this invocation's lane in the chunk
var<private> GL: u32; // ... and in the whole batch

fn nan() -> f32 { return bitcast<f32>(P.nan_bits); }
fn inf() -> f32 { return bitcast<f32>(P.inf_bits); }
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn is_finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }

fn X(s: u32) -> f32 { return x[s * P.lanes + L]; }
fn setX(s: u32, v: f32) { x[s * P.lanes + L] = v; }
fn G(s: u32) -> f32 { return g[s * P.lanes + L]; }
fn addG(s: u32, v: f32) { let i = s * P.lanes + L; g[i] = g[i] + v; }
fn S(i: u32) -> f32 { return sc[i * P.lanes + L]; }
fn setS(i: u32, v: f32) { sc[i * P.lanes + L] = v; }
fn konst(i: u32) -> f32 { return bitcast<f32>(prog[P.const_base + i]); }

fn member(ls: u32) -> bool {
    if ls == 0u { return true; }
    let w = bits[(ls - 1u) * P.set_words + GL / 32u];
    return ((w >> (GL % 32u)) & 1u) == 1u;
}

// A merge side: set 0 names no lanes there (as the CPU replay reads it).
fn in_side(ls: u32) -> bool {
    return ls != 0u && member(ls);
}

// ---- the engine's f32 transcendentals (prims/fastmath.rs), libm's role played by WGSL ----


fn exp_f(v: f32) -> f32 {
    if !(v >= -87.0 && v <= 88.0) {
        if is_nan(v) { return v; }
        return exp(v);
    }
    let fx = floor(v * 1.44269504 + 0.5);
    let n = i32(fx);
    let r = v - fx * 0.6933594 - fx * -2.1219444e-4;
    let z = r * r;
    let p = ((((1.9875691e-4 * r + 1.3981999e-3) * r + 8.333452e-3) * r + 4.1665796e-2) * r
        + 1.6666665e-1) * r + 0.5;
    let y = p * z + r + 1.0;
    return y * bitcast<f32>(u32(n + 127) << 23u);
}

fn sin_poly(r: f32, z: f32) -> f32 {
    return ((-1.9515296e-4 * z + 8.332161e-3) * z - 1.6666655e-1) * z * r + r;
}

fn cos_poly(z: f32) -> f32 {
    return ((2.4433157e-5 * z - 1.3887316e-3) * z + 4.1666646e-2) * z * z - 0.5 * z + 1.0;
}

// sin (cosine = false) or cos of v.
fn trig_f(v: f32, cosine: bool) -> f32 {
    if !(abs(v) <= 8192.0) {
        if cosine { return cos(v); }
        return sin(v);
    }
    let ax = abs(v);
    let j = (i32(floor(ax * 1.2732395)) + 1) & ~1;
    let y = f32(j);
    let r = ((ax - y * 0.78515625) - y * 2.4187565e-4) - y * 3.774895e-8;
    let z = r * r;
    let o = u32(j & 7);
    let s = sin_poly(r, z);
    let c = cos_poly(z);
    var out: f32;
    var negate: u32;
    if cosine {
        out = select(c, s, (o & 2u) != 0u);
        negate = ((o >> 2u) ^ (o >> 1u)) & 1u;
    } else {
        out = select(s, c, (o & 2u) != 0u);
        negate = ((o >> 2u) & 1u) ^ (bitcast<u32>(v) >> 31u);
    }
    return bitcast<f32>(bitcast<u32>(out) ^ (negate << 31u));
}

fn ln_f(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    if !(v >= 1.17549435e-38 && b < 0x7f800000u) {
        if is_nan(v) || v < 0.0 { return nan(); }
        if v == 0.0 { return -inf(); }
        if b == 0x7f800000u { return inf(); }
        return log(v); // subnormal
    }
    var e = f32(i32(b >> 23u) - 126);
    let m = bitcast<f32>((b & 0x007fffffu) | 0x3f000000u);
    let small = m < 0.70710677;
    if small { e = e - 1.0; }
    let r = select(m - 1.0, m + m - 1.0, small);
    let z = r * r;
    let p = ((((((((7.0376836e-2 * r - 1.1514610e-1) * r + 1.1676999e-1) * r - 1.2420141e-1) * r
        + 1.4249323e-1) * r - 1.6668058e-1) * r + 2.0000714e-1) * r - 2.4999994e-1) * r
        + 0.3333333) * r * z;
    let y = p + -2.1219444e-4 * e - 0.5 * z;
    return r + y + 0.6933594 * e;
}

fn clamp_eps(v: f32) -> f32 { return select(v, 1e-8, v <= 1e-8); }

fn fmod_f(a: f32, b: f32) -> f32 {
    if b == 0.0 || !is_finite(a) || is_nan(b) { return nan(); }
    if !is_finite(b) { return a; }
    return a - b * trunc(a / b);
}

fn pow_f(a: f32, b: f32) -> f32 {
    if b == 0.0 { return 1.0; }
    if is_nan(a) || is_nan(b) { return nan(); }
    if a == 0.0 {
        if b > 0.0 { return 0.0; }
        return inf();
    }
    if a < 0.0 {
        if trunc(b) != b { return nan(); }
        let m = pow(-a, b);
        // odd integer exponents keep the sign
        if abs(b) < 16777216.0 && (i32(b) & 1) == 1 { return -m; }
        return m;
    }
    return pow(a, b);
}

fn round_even(v: f32) -> f32 { return round(v); }

fn eval1(op: u32, v: f32) -> f32 {
    switch op {
        case OP_SIN: { return trig_f(v, false); }
        case OP_COS: { return trig_f(v, true); }
        case OP_TAN: { return tan(v); }
        // by atan2: devices' asin/acos are loose near ±1
        case OP_ASIN: { if abs(v) > 1.0 { return nan(); } return atan2(v, sqrt((1.0 - v) * (1.0 + v))); }
        case OP_ACOS: { if abs(v) > 1.0 { return nan(); } return atan2(sqrt((1.0 - v) * (1.0 + v)), v); }
        case OP_ATAN: { return atan(v); }
        case OP_SINH: { return sinh(v); }
        case OP_COSH: { return cosh(v); }
        case OP_TANH: { return tanh(v); }
        case OP_EXP: { return exp_f(v); }
        case OP_LOG: { if is_nan(v) { return v; } return ln_f(clamp_eps(v)); }
        case OP_SQRT: { if is_nan(v) { return v; } return sqrt(clamp_eps(v)); }
        case OP_ABS: { return abs(v); }
        case OP_SQUARE: { return v * v; }
        case OP_FLOOR: { return floor(v); }
        case OP_CEILING: { return ceil(v); }
        case OP_ROUND: { return round_even(v); }
        case OP_TRUNCATE: { return trunc(v); }
        case OP_COPY: { return v; }
        default: { return nan(); }
    }
}

fn eval2(op: u32, a: f32, b: f32) -> f32 {
    switch op {
        case OP_ADD: { return a + b; }
        case OP_ADD0: { return (0.0 + a) + b; }
        case OP_SUB: { return a - b; }
        case OP_MUL: { return a * b; }
        case OP_DIV: { return a / b; }
        case OP_POW: { return pow_f(a, b); }
        case OP_MIN: {
            if is_nan(a) || is_nan(b) { return nan(); }
            return select(a, b, b < a);
        }
        case OP_MAX: {
            if is_nan(a) || is_nan(b) { return nan(); }
            return select(a, b, b > a);
        }
        case OP_MODULO: {
            let r = fmod_f(a, b);
            if r != 0.0 && (r < 0.0) != (b < 0.0) { return r + b; }
            return r;
        }
        case OP_REMAINDER: { return fmod_f(a, b); }
        case OP_ATAN2: { return atan2(a, b); }
        default: { return nan(); }
    }
}

fn vjp1(op: u32, v: f32, z: f32, gz: f32) -> f32 {
    switch op {
        case OP_SIN: { return gz * trig_f(v, true); }
        case OP_COS: { return -(gz * trig_f(v, false)); }
        case OP_TAN: { return gz * (1.0 + z * z); }
        case OP_ASIN: { return gz / sqrt(1.0 - v * v); }
        case OP_ACOS: { return -(gz / sqrt(1.0 - v * v)); }
        case OP_ATAN: { return gz / (1.0 + v * v); }
        case OP_SINH: { return gz * cosh(v); }
        case OP_COSH: { return gz * sinh(v); }
        case OP_TANH: { return gz * (1.0 - z * z); }
        case OP_EXP: { return gz * z; }
        case OP_LOG: { return select(0.0, gz / v, v > 1e-8); }
        case OP_SQRT: { return select(0.0, gz / (z + z), v > 1e-8); }
        case OP_ABS: {
            if v > 0.0 { return gz; }
            if v < 0.0 { return -gz; }
            if is_nan(v) { return nan(); }
            return 0.0;
        }
        case OP_SQUARE: { return (gz + gz) * v; }
        case OP_COPY: { return gz; }
        default: { return 0.0; }
    }
}

fn vjp2(op: u32, a: f32, b: f32, z: f32, gz: f32) -> vec2<f32> {
    switch op {
        case OP_ADD, OP_ADD0: { return vec2<f32>(gz, gz); }
        case OP_SUB: { return vec2<f32>(gz, -gz); }
        case OP_MUL: { return vec2<f32>(gz * b, gz * a); }
        case OP_DIV: { return vec2<f32>(gz / b, -(gz * z / b)); }
        case OP_POW: {
            var da = 0.0;
            if b != 0.0 { da = gz * b * pow_f(a, b - 1.0); }
            var db = 0.0;
            if !(a == 0.0 && b >= 0.0) { db = gz * z * log(a); }
            return vec2<f32>(da, db);
        }
        case OP_MIN, OP_MAX: {
            if is_nan(a) || is_nan(b) { return vec2<f32>(gz, gz); }
            if a == b { let h = gz / 2.0; return vec2<f32>(h, h); }
            if (op == OP_MIN) == (a < b) { return vec2<f32>(gz, 0.0); }
            return vec2<f32>(0.0, gz);
        }
        case OP_MODULO: { return vec2<f32>(gz, -(gz * floor(a / b))); }
        case OP_REMAINDER: { return vec2<f32>(gz, -(gz * trunc(a / b))); }
        case OP_ATAN2: {
            let d = a * a + b * b;
            if d == 0.0 { return vec2<f32>(0.0, 0.0); }
            return vec2<f32>(gz * b / d, -(gz * a / d));
        }
        default: { return vec2<f32>(0.0, 0.0); }
    }
}

// ---- one node ----

struct Node {
    op: u32,
    form: u32,
    skip: u32,
    lanes: u32,
    out: u32,
    a: u32,
    b: u32,
    aux: u32, // elements (elementwise), the else-set (merge), n (linear algebra)
    m: u32,
    k: u32,
}

fn node(i: u32) -> Node {
    let w = i * 8u;
    let h = prog[w];
    return Node(h & 0xffu, (h >> 8u) & 0xffu, (h >> 16u) & 3u, prog[w + 1u], prog[w + 2u],
        prog[w + 3u], prog[w + 4u], prog[w + 5u], prog[w + 6u], prog[w + 7u]);
}

fn a_const(f: u32) -> bool { return f == FORM_CONST_SLOT || f == FORM_CONST_CONST; }
fn b_const(f: u32) -> bool { return f == FORM_SLOT_CONST || f == FORM_CONST_CONST; }

fn operand(slot: u32, is_const: bool, e: u32) -> f32 {
    if is_const { return konst(slot); }
    return X(slot + e);
}

fn forward_node(n: Node) {
    if n.op == OP_SELECT {
        if in_side(n.lanes) {
            setX(n.out, operand(n.a, a_const(n.form), 0u));
        } else if in_side(n.aux) {
            setX(n.out, operand(n.b, b_const(n.form), 0u));
        }
        return;
    }
    if !member(n.lanes) { return; }
    if n.op > OP_SELECT {
        linalg_forward(n);
        return;
    }
    let count = max(n.aux, 1u);
    for (var e = 0u; e < count; e++) {
        let va = operand(n.a, a_const(n.form), e);
        if n.form == FORM_UNARY {
            setX(n.out + e, eval1(n.op, va));
        } else {
            setX(n.out + e, eval2(n.op, va, operand(n.b, b_const(n.form), e)));
        }
    }
}

fn backward_node(n: Node) {
    let da_on = (n.skip & 1u) == 0u && !a_const(n.form);
    let db_on = (n.skip & 2u) == 0u && !b_const(n.form) && n.form != FORM_UNARY;
    if n.op == OP_SELECT {
        let gz = G(n.out);
        if da_on && in_side(n.lanes) { addG(n.a, gz); }
        if db_on && in_side(n.aux) { addG(n.b, gz); }
        return;
    }
    if !member(n.lanes) { return; }
    if n.op > OP_SELECT {
        linalg_backward(n, (n.skip & 1u) == 0u, (n.skip & 2u) == 0u);
        return;
    }
    let count = max(n.aux, 1u);
    for (var e = 0u; e < count; e++) {
        let gz = G(n.out + e);
        let z = X(n.out + e);
        let va = operand(n.a, a_const(n.form), e);
        if n.form == FORM_UNARY {
            if da_on { addG(n.a + e, vjp1(n.op, va, z, gz)); }
        } else {
            let d = vjp2(n.op, va, operand(n.b, b_const(n.form), e), z, gz);
            if da_on { addG(n.a + e, d.x); }
            if db_on { addG(n.b + e, d.y); }
        }
    }
}

// ---- guards ----

fn check_guard(i: u32) {
    let w = P.guard_base + i * 8u;
    if !member(prog[w + 1u]) { return; }
    let kind = prog[w + 2u];
    var holds: bool;
    if kind == 0u {
        let c = prog[w + 3u];
        let cmp = c & 0xffu;
        let form = (c >> 8u) & 0xffu;
        let want_code = c >> 16u;
        let va = operand(prog[w + 4u], a_const(form), 0u);
        let vb = operand(prog[w + 5u], b_const(form), 0u);
        var got: bool;
        switch cmp {
            case CMP_EQ: { got = va == vb; }
            case CMP_LT: { got = va < vb; }
            case CMP_GT: { got = va > vb; }
            case CMP_LE: { got = va <= vb; }
            default: { got = va >= vb; }
        }
        // NaN compares false whatever the hardware's comparisons do
        if is_nan(va) || is_nan(vb) { got = false; }
        var want: bool;
        if want_code == 2u {
            let bit = prog[w + 6u] + GL;
            want = ((bits[P.outcome_base + bit / 32u] >> (bit % 32u)) & 1u) == 1u;
        } else {
            want = want_code == 1u;
        }
        holds = got == want;
    } else {
        let v = X(prog[w + 4u]);
        holds = is_finite(v) && v >= 0.0 && trunc(v) == bitcast<f32>(prog[w + 6u]);
    }
    if !holds {
        atomicOr(&flags[L], 1u << kind);
        atomicOr(&flags[P.lanes + i], 1u);
    }
}

// One dispatch runs one segment of the tape (the host splits long tapes so no invocation runs
// for long: drivers stop shaders that do).
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    L = id.x;
    if L >= P.lanes { return; }
    GL = P.offset + L;
    if P.phase == 0u {
        var next = P.guard_from; // the next guard to check
        for (var i = P.first; i < P.last; i++) {
            while next < P.guards && prog[P.guard_base + next * 8u] <= i {
                check_guard(next);
                next++;
            }
            forward_node(node(i));
        }
        if P.last == P.nodes {
            while next < P.guards {
                check_guard(next);
                next++;
            }
        }
        return;
    }
    if P.last == P.nodes {
        for (var s = P.seed_start; s < P.seed_end; s++) {
            g[s * P.lanes + L] = 1.0;
        }
    }
    for (var i = P.last; i > P.first; i--) {
        backward_node(node(i - 1u));
    }
}
