//! The recording as the interpreter reads it.
//!
//! - **Program words** (`prog`): 8 words per node — `op | form << 8 | skip << 16`, with bit 23
//!   marking a wide node and bits 24–31 a run of independent nodes (`mark_batches`), lane set,
//!   output slot, operand `a`, operand `b`, then the elements (elementwise), the else-set (a
//!   merge) or `n` (linear algebra), and `m`, `k` of linear algebra — then 8 per guard —
//!   position, lane set, kind (0 comparison, 1 index), `cmp | form << 8 | outcome << 16`
//!   (outcome 0 false, 1 true, 2 per lane), `a`, `b`, the per-lane outcomes' first bit or the
//!   index as an f32 — then the constants as f32 bits.
//! - **Bits**: each lane subset as a bitmask over the batch's lanes (set `s` at word
//!   `(s − 1) · set_words`), then the per-lane comparison outcomes.
//!
//! Custom primitives (plugins' Rust code) cannot run on the device: a tape with one is
//! [`GpuError::Unsupported`] and stays on the CPU.

use crate::GpuError;
use crate::kernel::{BATCH_FROM, Entry, Segmenting};
use ndvm_engine::export::Recording;
use ndvm_engine::prims::scalar::Op;
use ndvm_engine::tape::{Check, Form, SKIP_A, SKIP_B, Tape, TapeNode};

/// Words per node and per guard.
pub const NODE_WORDS: usize = 8;

/// A recording encoded for the interpreter.
#[derive(Debug, Clone, Default)]
pub struct Encoded {
    pub prog: Vec<u32>,
    pub bits: Vec<u32>,
    pub nodes: u32,
    pub guards: u32,
    pub guard_base: u32,
    pub const_base: u32,
    pub set_words: u32,
    pub outcome_base: u32,
    /// Scratch rows of one region per lane: the largest n² that `det`, `logdet` or `inv` solve.
    pub sq: u32,
    /// The tape split into segments `[from, to)` within a [`Segmenting`], one dispatch per
    /// segment and direction (never empty: a tape without nodes has one empty segment).
    pub segments: Vec<(u32, u32)>,
    /// The tape as [`crate::Kernel::Batched`] runs it: each wide node alone with the entry
    /// that runs it, the nodes between in per-lane segments within the [`Segmenting`]; the
    /// last segment is always a per-lane one (it checks the guards after the last node and
    /// seeds the backward pass), empty where the tape ends with a wide node. A cooperative
    /// solve ending the tape does both too, which is harmless: the checks only set flags, and
    /// seeding writes 1 to rows nothing has added to yet.
    pub batched: Vec<Segment>,
    /// The tape's work per lane (multiply-adds, roughly), and the part of it the cooperative
    /// entry runs on one invocation (neither in a wide node nor in a run of independent nodes).
    pub work: u64,
    pub serial_work: u64,
    /// Elements of the widest wide node (0 when there is none).
    pub widest: u32,
    /// The most loop iterations one invocation runs for one node: per lane, cooperative,
    /// batched.
    pub longest: [u64; 3],
}

/// Nodes `[from, to)` run by one entry ([`Encoded::batched`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub from: u32,
    pub to: u32,
    pub entry: Entry,
}

/// A node's work per lane (multiply-adds, roughly).
fn work(op: Op, aux: u32, m: u32, k: u32) -> u64 {
    let (n, m, k) = (
        u64::from(aux.max(1)),
        u64::from(m.max(1)),
        u64::from(k.max(1)),
    );
    match op {
        Op::Det | Op::LogDet | Op::Inv => 4 * n * n * n + 8,
        Op::MatMul => m * k * n + 4,
        Op::MatVec | Op::Outer | Op::Transpose | Op::Trace => m * k.max(n) + 4,
        op if op.is_linalg() => 4 * n + 4,
        _ => 2 * n + 2,
    }
}

/// Loop iterations one invocation runs for a node, in its longer direction (forward or
/// backward), under each entry: `[per lane, cooperative]`. The software driver stops counting
/// at [`Segmenting::loop_limit`]. In the cooperative entry a wide node's elements spread over
/// 64 invocations (invocation 0 also searches the pivots), unless its operands exceed the
/// workgroup memory that `det`, `logdet` and `inv` solve in ([`WORKGROUP_FLOATS`]).
fn iterations(op: Op, aux: u32, m: u32, k: u32) -> [u64; 2] {
    let (n, m, k) = (
        u64::from(aux.max(1)),
        u64::from(m.max(1)),
        u64::from(k.max(1)),
    );
    let spread = |i: u64, extra: u64| [i, i.div_ceil(64) + extra];
    match op {
        // LU (n³/3) and Gauss–Jordan (n³) forward; inv's backward is two n³ products
        Op::Det | Op::LogDet | Op::Inv if n > 3 => {
            let i = 2 * n * n * n + 4 * n * n;
            let w = WORKGROUP_FLOATS;
            let fits = 2 * n * n + n <= w && (op != Op::Inv || 3 * n * n <= w);
            if fits { spread(i, n * n) } else { [i, i] }
        }
        Op::MatMul => spread(m * k * n + m * n + m * k + k * n, 0),
        Op::MatVec | Op::Outer | Op::Transpose => spread(2 * m * k.max(n), 0),
        op if op.is_linalg() => [4 * n * n, 4 * n * n],
        _ if n >= 8 => spread(n, 0),
        _ => [n, n],
    }
}

/// The elements a node splits over a workgroup in the cooperative entry, or `None` where one
/// invocation runs it (marked with [`WIDE_BIT`] for the shader).
fn wide(op: Op, aux: u32, m: u32, k: u32) -> Option<u32> {
    match op {
        Op::Select => None,
        Op::Transpose | Op::MatMul | Op::MatVec | Op::Outer => {
            Some((m * k.max(1)).max(k * aux).max(m * aux))
        }
        Op::Det | Op::LogDet | Op::Inv => (aux > 3).then_some(aux * aux),
        op if op.is_linalg() => None,
        _ => (aux >= 8).then_some(aux),
    }
}

/// The elements of a wide node's parts, as `part_elements` in `batched.wgsl` counts them:
/// the forward, the backward into `a` (and `b`, elementwise), the backward into `b`.
pub fn part_elements(op: Op, aux: u32, m: u32, k: u32) -> [u32; 3] {
    let n = aux;
    match op {
        Op::Transpose => [m * n, m * n, 0],
        Op::Outer => [m * n, m, n],
        Op::MatVec => [m, m * k, k],
        Op::MatMul => [m * n, m * k, k * n],
        _ => [n.max(1), n.max(1), 0],
    }
}

/// Loop iterations one node-major invocation runs, in the longest of a wide node's parts: its
/// elements beyond the grid's rows (at most 65,535, a dimension's limit) each with the part's
/// inner loop (a row or column of a product).
fn node_iterations(op: Op, aux: u32, m: u32, k: u32) -> u64 {
    let inner = match op {
        Op::MatMul => [k, aux, m],
        Op::MatVec => [k, 1, m],
        Op::Outer => [1, aux, m],
        _ => [1, 1, 1],
    };
    let parts = part_elements(op, aux, m, k).into_iter().zip(inner);
    parts
        .map(|(count, inner)| {
            let count = u64::from(count);
            count.div_ceil(count.clamp(1, 65_535)) * (u64::from(inner) + 1)
        })
        .max()
        .unwrap_or(1)
}

/// Which entry runs a node under [`crate::Kernel::Batched`]: a wide node of at least
/// [`BATCH_FROM`] elements gets node-major dispatches of its own when no two invocations can
/// add into one slot — its operands are one tensor or disjoint, and neither touches its result
/// (else it stays per lane); `det`, `logdet` and `inv` above 3 × 3 solve cooperatively (a
/// workgroup spreads each elimination step over the matrix, in workgroup memory); the rest —
/// scalar nodes, small tensors, the closed-form solves — run per lane.
fn batched_entry(n: &TapeNode, aux: u32, m: u32, k: u32) -> Entry {
    match n.op {
        Op::Det | Op::LogDet | Op::Inv if aux > 3 => Entry::Coop,
        Op::Det | Op::LogDet | Op::Inv => Entry::Lane,
        op if wide(op, aux, m, k).is_none_or(|w| w < BATCH_FROM) => Entry::Lane,
        op => {
            // The slots each side covers (0: a constant or no operand).
            let (la, lb, lo) = match op {
                Op::Transpose => (m * aux, 0, m * aux),
                Op::Outer => (m, aux, m * aux),
                Op::MatVec => (m * k, k, m),
                Op::MatMul => (m * k, k * aux, m * aux),
                _ => {
                    let a = !matches!(n.form, Form::ConstSlot | Form::ConstConst);
                    let b = matches!(n.form, Form::SlotSlot | Form::ConstSlot);
                    (if a { aux } else { 0 }, if b { aux } else { 0 }, aux)
                }
            };
            let meet = |x: u32, lx: u32, y: u32, ly: u32| {
                lx > 0
                    && ly > 0
                    && u64::from(x) < u64::from(y) + u64::from(ly)
                    && u64::from(y) < u64::from(x) + u64::from(lx)
            };
            let same = n.a == n.b && la == lb;
            if meet(n.a, la, n.out, lo)
                || meet(n.b, lb, n.out, lo)
                || (!same && meet(n.a, la, n.b, lb))
            {
                Entry::Lane
            } else {
                Entry::Node
            }
        }
    }
}

/// [`Encoded::batched`]: wide nodes alone (with their entries), the rest in per-lane segments
/// within `limits`, ending with a per-lane one.
fn batched_segments(costs: &[u64], entries: &[Entry], limits: Segmenting) -> Vec<Segment> {
    let mut out = Vec::new();
    let lanes = |out: &mut Vec<Segment>, from: usize, to: usize| {
        if to > from {
            out.extend(
                segments(&costs[from..to], limits)
                    .into_iter()
                    .map(|(f, t)| Segment {
                        from: f + from as u32,
                        to: t + from as u32,
                        entry: Entry::Lane,
                    }),
            );
        }
    };
    let mut from = 0;
    for (i, &entry) in entries.iter().enumerate() {
        if entry != Entry::Lane {
            lanes(&mut out, from, i);
            out.push(Segment {
                from: i as u32,
                to: i as u32 + 1,
                entry,
            });
            from = i + 1;
        }
    }
    lanes(&mut out, from, entries.len());
    if out.last().is_none_or(|s| s.entry != Entry::Lane) {
        let end = entries.len() as u32;
        out.push(Segment {
            from: end,
            to: end,
            entry: Entry::Lane,
        });
    }
    out
}

/// Longest run of independent scalar nodes the cooperative entry spreads over its workgroup
/// (the length fits 7 bits of the node's first word; `coop.wgsl` sizes its buffers for it).
pub const BATCH: usize = 127;
/// Workgroup memory of the cooperative entry in floats, for staging operands and solving
/// (with the batch's adjoint targets, within the 16 KiB every adapter offers).
pub const WORKGROUP_FLOATS: u64 = 3776;
/// Bit of a node's first word that marks it wide (`coop.wgsl`: `is_wide`).
const WIDE_BIT: u32 = 1 << 23;

/// Marks runs of independent one-element nodes in `prog` (header bits 24–30: the run's
/// length, on its first node and, with bit 31, on its last). The cooperative entry runs such a
/// run with one node per invocation — `(scale q M)` records one multiply per element — instead
/// of one after another on invocation 0. A run never spans a segment's end or a guard (a guard
/// checks before its node), and no node in it reads a slot another one writes.
/// Returns which nodes are in a run.
fn mark_batches(
    prog: &mut [u32],
    tape: &ndvm_engine::tape::Tape<f32>,
    segments: &[(u32, u32)],
) -> Vec<bool> {
    let mut batched = vec![false; tape.nodes.len()];
    let batchable = |i: usize| {
        let n = &tape.nodes[i];
        (n.op as u8) < (Op::Select as u8) && n.aux <= 1
    };
    let reads = |i: usize| {
        let n = &tape.nodes[i];
        let a = !matches!(n.form, Form::ConstSlot | Form::ConstConst);
        let b = matches!(n.form, Form::SlotSlot | Form::ConstSlot);
        [a.then_some(n.a), b.then_some(n.b)]
    };
    let guarded: std::collections::HashSet<u32> = tape.guards.iter().map(|g| g.pos).collect();
    let mut mark = |from: usize, len: usize| {
        if len >= 2 {
            prog[from * NODE_WORDS] |= (len as u32) << 24;
            prog[(from + len - 1) * NODE_WORDS] |= (len as u32) << 24 | 1 << 31;
            batched[from..from + len].fill(true);
        }
    };
    for &(first, last) in segments {
        let (mut from, mut written) = (first as usize, Vec::<u32>::new());
        for i in first as usize..last as usize {
            let joins = batchable(i)
                && i > from
                && batchable(from)
                && i - from < BATCH
                && !guarded.contains(&(i as u32))
                && !reads(i).iter().flatten().any(|s| written.contains(s));
            if !joins {
                mark(from, i - from);
                (from, written) = (i, Vec::new());
            }
            written.push(tape.nodes[i].out);
        }
        mark(from, last as usize - from);
    }
    batched
}

/// Splits `costs` (per node) into consecutive segments within `limits` (a node over the work
/// budget gets its own).
pub fn segments(costs: &[u64], limits: Segmenting) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut from, mut acc) = (0usize, 0u64);
    for (i, &c) in costs.iter().enumerate() {
        if (acc + c > limits.work || i - from == limits.nodes) && i > from {
            out.push((from as u32, i as u32));
            (from, acc) = (i, 0);
        }
        acc += c;
    }
    out.push((from as u32, costs.len() as u32));
    out
}

/// A node's sizes as the encoding and [`work`] read them: `(n, m, k)` of a linear-algebra node,
/// else its element count.
pub(crate) fn dims(tape: &Tape<f32>, n: &TapeNode) -> (u32, u32, u32) {
    if n.op.is_linalg() {
        let l = tape.linalg(n);
        (l.n, l.m, l.k)
    } else {
        (n.aux, 0, 0)
    }
}

/// A recorded tape's work per lane (multiply-adds, roughly; [`Encoded::work`]) without encoding
/// it: what `auto`'s cost model weighs before anything is uploaded.
pub fn tape_work(rec: &Recording<'_, f32>) -> u64 {
    let tape = rec.tape;
    tape.nodes
        .iter()
        .map(|n| {
            let (aux, m, k) = dims(tape, n);
            work(n.op, aux, m, k)
        })
        .sum()
}

impl Encoded {
    pub fn new(rec: &Recording<'_, f32>, limits: Segmenting) -> Result<Encoded, GpuError> {
        let tape = rec.tape;
        let mut prog = Vec::with_capacity((tape.nodes.len() + tape.guards.len()) * NODE_WORDS);
        let mut sq = 0u32;
        let mut costs = Vec::with_capacity(tape.nodes.len());
        let (mut is_wide, mut widest) = (Vec::with_capacity(tape.nodes.len()), 0u32);
        let mut entries = Vec::with_capacity(tape.nodes.len());
        let mut longest = [0u64; 3];
        for (i, n) in tape.nodes.iter().enumerate() {
            let skip = tape.skip.get(i).copied().unwrap_or(0) & (SKIP_A | SKIP_B);
            let (aux, m, k) = match n.op {
                Op::Ext => {
                    let name = tape
                        .ext
                        .get(n.a as usize)
                        .and_then(|c| tape.primitives.get(c.prim as usize))
                        .map_or("?".to_string(), |p| p.name().to_string());
                    return Err(GpuError::Unsupported(format!(
                        "the custom primitive `{name}` runs on the CPU only"
                    )));
                }
                _ => dims(tape, n),
            };
            if matches!(n.op, Op::Det | Op::LogDet | Op::Inv) {
                sq = sq.max(aux * aux);
            }
            let cost = work(n.op, aux, m, k);
            costs.push(cost);
            let it = iterations(n.op, aux, m, k);
            let entry = batched_entry(n, aux, m, k);
            // The iterations of one invocation under the entry that runs this node.
            let one = match entry {
                Entry::Lane => it[0],
                Entry::Coop => it[1],
                Entry::Node => node_iterations(n.op, aux, m, k),
            };
            entries.push(entry);
            longest = [
                longest[0].max(it[0]),
                longest[1].max(it[1]),
                longest[2].max(one),
            ];
            let w = wide(n.op, aux, m, k);
            widest = widest.max(w.unwrap_or(0));
            is_wide.push(w.is_some());
            let flag = if w.is_some() { WIDE_BIT } else { 0 };
            prog.extend_from_slice(&[
                n.op as u32 | (n.form as u32) << 8 | u32::from(skip) << 16 | flag,
                n.lanes,
                n.out,
                n.a,
                n.b,
                aux,
                m,
                k,
            ]);
        }
        let segments = segments(&costs, limits);
        let by_node = batched_segments(&costs, &entries, limits);
        let batched = mark_batches(&mut prog, tape, &segments);
        let serial_work = (0..costs.len())
            .filter(|&i| !is_wide[i] && !batched[i])
            .map(|i| costs[i])
            .sum();
        let guard_base = prog.len() as u32;
        for g in &tape.guards {
            let (kind, code, a, b, extra) = match g.check {
                Check::Compare {
                    cmp,
                    form,
                    a,
                    b,
                    outcome,
                    bits,
                } => {
                    let want = match outcome {
                        Some(false) => 0,
                        Some(true) => 1,
                        None => 2,
                    };
                    (0, cmp as u32 | (form as u32) << 8 | want << 16, a, b, bits)
                }
                Check::Index { slot, value } => (1, 0, slot, 0, (value as f32).to_bits()),
            };
            prog.extend_from_slice(&[g.pos, g.lanes, kind, code, a, b, extra, 0]);
        }
        let const_base = prog.len() as u32;
        prog.extend(tape.consts.iter().map(|c| c.to_bits()));
        // A binding is never empty.
        prog.push(0);
        let lanes = rec.lanes;
        let set_words = lanes.div_ceil(32);
        let sets = rec.sets.count();
        let mut bits = vec![0u32; sets * set_words + tape.outcomes.len().div_ceil(32) + 1];
        for s in 0..sets {
            for &l in rec.sets.get(s as u32 + 1).unwrap_or(&[]) {
                let l = l as usize;
                bits[s * set_words + l / 32] |= 1 << (l % 32);
            }
        }
        let outcome_base = sets * set_words;
        for (i, &o) in tape.outcomes.iter().enumerate() {
            if o {
                bits[outcome_base + i / 32] |= 1 << (i % 32);
            }
        }
        Ok(Encoded {
            prog,
            bits,
            nodes: tape.nodes.len() as u32,
            guards: tape.guards.len() as u32,
            guard_base,
            const_base,
            set_words: set_words as u32,
            outcome_base: outcome_base as u32,
            sq,
            segments,
            batched: by_node,
            work: costs.iter().sum(),
            serial_work,
            widest,
            longest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: Op, form: Form, (out, a, b): (u32, u32, u32), aux: u32) -> TapeNode {
        TapeNode {
            op,
            form,
            lanes: 0,
            out,
            a,
            b,
            aux,
        }
    }

    #[test]
    fn wide_nodes_go_node_major_unless_two_invocations_could_add_into_one_slot() {
        let add = |(out, a, b), aux| node(Op::Add, Form::SlotSlot, (out, a, b), aux);
        // 16 elements from disjoint operands; `(+ v v)`: each invocation adds both sides.
        assert_eq!(batched_entry(&add((100, 0, 40), 16), 16, 0, 0), Entry::Node);
        assert_eq!(batched_entry(&add((100, 0, 0), 16), 16, 0, 0), Entry::Node);
        // Operands overlapping without being one tensor, or one touching the result.
        assert_eq!(batched_entry(&add((100, 0, 8), 16), 16, 0, 0), Entry::Lane);
        assert_eq!(
            batched_entry(&add((100, 90, 40), 16), 16, 0, 0),
            Entry::Lane
        );
        // Fewer than BATCH_FROM elements, or a constant side that covers no slots.
        assert_eq!(batched_entry(&add((100, 0, 40), 8), 8, 0, 0), Entry::Lane);
        let scaled = node(Op::Mul, Form::SlotConst, (100, 0, 3), 16);
        assert_eq!(batched_entry(&scaled, 16, 0, 0), Entry::Node);
        // `(matmul A A)` of 4 × 4: node-major; solves above 3 × 3 cooperate.
        let mm = node(Op::MatMul, Form::SlotSlot, (100, 0, 0), 0);
        assert_eq!(batched_entry(&mm, 4, 4, 4), Entry::Node);
        let inv = node(Op::Inv, Form::Unary, (100, 0, 0), 0);
        assert_eq!(batched_entry(&inv, 3, 3, 3), Entry::Lane);
        assert_eq!(batched_entry(&inv, 4, 4, 4), Entry::Coop);
        assert_eq!(part_elements(Op::MatMul, 5, 3, 4), [15, 12, 20]);
        assert_eq!(part_elements(Op::Outer, 5, 3, 0), [15, 3, 5]);
        // A 40 × 40 product: 41 iterations; a 2,000 × 2,000 one loops over 62 rows of 2,001.
        assert_eq!(node_iterations(Op::MatMul, 40, 40, 40), 41);
        assert_eq!(node_iterations(Op::MatMul, 2000, 2000, 2000), 62 * 2001);
    }

    #[test]
    fn batched_segments_keep_wide_nodes_alone_and_end_per_lane() {
        let limits = Segmenting {
            nodes: 2,
            work: u64::MAX,
            loop_limit: None,
        };
        let (l, n, c) = (Entry::Lane, Entry::Node, Entry::Coop);
        let seg = |from, to, entry| Segment { from, to, entry };
        let entries = [l, l, l, n, c, l];
        let got = batched_segments(&[1; 6], &entries, limits);
        let want = [
            seg(0, 2, l),
            seg(2, 3, l),
            seg(3, 4, n),
            seg(4, 5, c),
            seg(5, 6, l),
        ];
        assert_eq!(got, want);
        // Ending on a wide node: an empty per-lane segment checks the last guards and seeds.
        let got = batched_segments(&[1; 2], &[l, n], limits);
        assert_eq!(got, [seg(0, 1, l), seg(1, 2, n), seg(2, 2, l)]);
        assert_eq!(batched_segments(&[], &[], limits), [seg(0, 0, l)]);
    }
}
