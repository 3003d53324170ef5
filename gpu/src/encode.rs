//! The recording as the interpreter reads it.
//!
//! - **Program words** (`prog`): 8 words per node — `op | form << 8 | skip << 16`, lane set,
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
use ndvm_engine::export::Recording;
use ndvm_engine::prims::scalar::Op;
use ndvm_engine::tape::{Check, SKIP_A, SKIP_B};

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
    /// The tape split into segments `[from, to)` of about [`SEGMENT_WORK`] each, one dispatch
    /// per segment and direction (never empty: a tape without nodes has one empty segment).
    pub segments: Vec<(u32, u32)>,
}

/// Work (multiply-adds per lane, roughly) one dispatch runs at most: drivers stop a shader that
/// runs long (a watchdog; Mesa's software Vulkan among them), and a long tape is split.
pub const SEGMENT_WORK: u64 = 4096;

/// Nodes one dispatch runs at most (Mesa's lavapipe stops an invocation after about 900
/// iterations of the interpreter's loop, whatever their work).
pub const SEGMENT_NODES: usize = 256;

/// A node's work for [`SEGMENT_WORK`].
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

/// Splits `costs` (per node) into consecutive segments of at most `budget` (a node over the
/// budget gets its own).
pub fn segments(costs: &[u64], budget: u64) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut from, mut acc) = (0usize, 0u64);
    for (i, &c) in costs.iter().enumerate() {
        if (acc + c > budget || i - from == SEGMENT_NODES) && i > from {
            out.push((from as u32, i as u32));
            (from, acc) = (i, 0);
        }
        acc += c;
    }
    out.push((from as u32, costs.len() as u32));
    out
}

impl Encoded {
    pub fn new(rec: &Recording<'_, f32>) -> Result<Encoded, GpuError> {
        let tape = rec.tape;
        let mut prog = Vec::with_capacity((tape.nodes.len() + tape.guards.len()) * NODE_WORDS);
        let mut sq = 0u32;
        let mut costs = Vec::with_capacity(tape.nodes.len());
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
                op if op.is_linalg() => {
                    let l = tape.linalg(n);
                    if matches!(op, Op::Det | Op::LogDet | Op::Inv) {
                        sq = sq.max(l.n * l.n);
                    }
                    (l.n, l.m, l.k)
                }
                _ => (n.aux, 0, 0),
            };
            costs.push(work(n.op, aux, m, k));
            prog.extend_from_slice(&[
                n.op as u32 | (n.form as u32) << 8 | u32::from(skip) << 16,
                n.lanes,
                n.out,
                n.a,
                n.b,
                aux,
                m,
                k,
            ]);
        }
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
            segments: segments(&costs, SEGMENT_WORK),
        })
    }
}
