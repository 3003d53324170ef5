//! Live locals at block exits.
//!
//! When lanes that split rejoin, their locals must be merged per lane — but only the ones read
//! later: merging a dead local records a selection node the dialect's walk would not have (the
//! walk has no mutable variables), and a local made inside one arm only would make a merge of a
//! number with nothing. So the verifier computes, by the usual backward data flow over the
//! control-flow graph, the locals live after each block, and which of them the block writes.

use crate::instr::Instr;
use crate::verify::{NONE, Plan, Succ};

/// The most `instructions × ⌈locals / 64⌉` words the analysis holds (32 MiB).
const MAX_WORDS: usize = 1 << 22;

/// Fills each block's `live` and `written`. Code too large for the analysis keeps every local
/// written in a block live after it (conservative: merges more, never less).
pub(crate) fn fill(code: &[Instr], succ: &[Succ], locals: usize, plan: &mut Plan) {
    let n = code.len();
    let words = locals.div_ceil(64);
    if words == 0 || plan.blocks.is_empty() {
        return;
    }
    // Positions of every SET, per local, ascending.
    let mut sets: Vec<Vec<u32>> = vec![Vec::new(); locals];
    for (pc, ins) in code.iter().enumerate() {
        if let Instr::Set { local } = ins {
            sets[*local as usize].push(pc as u32);
        }
    }
    let writes = |l: usize, from: u32, to: u32| {
        let s = &sets[l];
        let i = s.partition_point(|&p| p < from);
        s.get(i).is_some_and(|&p| p <= to)
    };
    let live_in = if (n + 1).saturating_mul(words) <= MAX_WORDS {
        Some(solve(code, succ, words))
    } else {
        None
    };
    for b in &mut plan.blocks {
        let after = (b.end + 1) as usize;
        let live: Vec<u32> = match &live_in {
            Some(v) => {
                let row = &v[after * words..(after + 1) * words];
                (0..locals)
                    .filter(|&l| row[l / 64] >> (l % 64) & 1 == 1)
                    .map(|l| l as u32)
                    .collect()
            }
            None => (0..locals)
                .filter(|&l| writes(l, b.opener, b.end))
                .map(|l| l as u32)
                .collect(),
        };
        b.written = live
            .iter()
            .map(|&l| writes(l as usize, b.opener, b.end))
            .collect();
        b.live = live;
    }
}

/// Live-in bit rows per instruction (row `n`, the end, is empty).
fn solve(code: &[Instr], succ: &[Succ], words: usize) -> Vec<u64> {
    let n = code.len();
    let mut live = vec![0u64; (n + 1) * words];
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    for (pc, s) in succ.iter().enumerate() {
        for &t in s.iter().filter(|&&t| t != NONE) {
            preds[t as usize].push(pc as u32);
        }
    }
    let mut queued = vec![true; n];
    let mut work: Vec<u32> = (0..n as u32).collect();
    let mut row = vec![0u64; words];
    while let Some(pc) = work.pop() {
        let pc = pc as usize;
        queued[pc] = false;
        row.fill(0);
        for &t in succ[pc].iter().filter(|&&t| t != NONE) {
            let t = t as usize;
            for (r, x) in row.iter_mut().zip(&live[t * words..(t + 1) * words]) {
                *r |= x;
            }
        }
        match code[pc] {
            Instr::Set { local } => row[local as usize / 64] &= !(1 << (local % 64)),
            Instr::Get { local } => row[local as usize / 64] |= 1 << (local % 64),
            _ => {}
        }
        let cur = &mut live[pc * words..(pc + 1) * words];
        if cur != row.as_slice() {
            cur.copy_from_slice(&row);
            for &p in &preds[pc] {
                if !queued[p as usize] {
                    queued[p as usize] = true;
                    work.push(p);
                }
            }
        }
    }
    live
}
