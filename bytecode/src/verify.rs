//! Verification: what must hold before a stream runs, checked once, statically.
//!
//! 1. **Blocks.** `IF [ELSE] END` and `LOOP END` nest properly; every `LOOP` and `IF` has its
//!    `END`. Each block has *regions* (an `IF`'s then- and else-arm, a `LOOP`'s body).
//! 2. **Jumps.** A target is an instruction (or the end of the stream) in the jump's own region
//!    or an enclosing one — never into a block, never at an `ELSE`. Leaving blocks is allowed only
//!    out of `IF`s and only backward, to the outermost one's start or before (a loop written
//!    with labels re-enters its test; the lanes that split there rejoin at that block's `END`).
//!    Nothing jumps out of a `LOOP` (`EXITIF` does that per lane); `EXITIF` sits directly in a
//!    loop body; `RET` only outside every block.
//! 3. **Stack heights.** Every reachable instruction has one stack height, whatever the path:
//!    no instruction pops below its block's base (a block cannot eat its caller's operands), a
//!    loop body and an `IF` without `ELSE` leave the height unchanged, both arms of an `IF`
//!    leave the same height, and the stream ends with a value to return.
//! 4. **Liveness.** Which locals are live after each block, and which of those the block
//!    writes: what a join must merge per lane (see [`crate::exec`]).

use crate::instr::Instr;
use ndvm_engine::error::{Error, ErrorKind, Result, Span};

pub(crate) const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    If,
    Loop,
}

#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub kind: Kind,
    pub opener: u32,
    pub else_pc: Option<u32>,
    pub end: u32,
    /// The region the block sits in (`NONE`: top level).
    pub outer: u32,
    /// The stack height inside the block when it starts.
    pub base: u32,
    /// Locals live after the block, ascending.
    pub live: Vec<u32>,
    /// Per live local (same order): whether the block writes it.
    pub written: Vec<bool>,
    /// A loop with an `EXITIF`: lanes may leave it early.
    pub exits: bool,
}

/// What verification leaves for the executor.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub blocks: Vec<Block>,
    /// Per instruction: the block an `IF`/`ELSE`/`END`/`LOOP`/`EXITIF` belongs to (`NONE`
    /// otherwise; `EXITIF`: its loop).
    pub block_of: Vec<u32>,
    /// Per `JUMP`/`BRANCH`: the outermost block it leaves (`NONE`: none).
    pub leaves: Vec<u32>,
}

fn err(spans: &[Span], i: usize, msg: String) -> Error {
    Error::new(
        ErrorKind::Syntax,
        format!("instruction {i}: {msg}"),
        spans.get(i).copied().unwrap_or_default(),
    )
}

/// Verifies `code` (see the module docs).
pub(crate) fn verify(code: &[Instr], spans: &[Span], locals: usize) -> Result<Plan> {
    let n = code.len();
    if n >= NONE as usize / 2 {
        return Err(Error::unlocated(ErrorKind::Limit, "too many instructions"));
    }
    let (blocks, block_of, region) = structure(code, spans)?;
    let mut plan = Plan {
        blocks,
        block_of,
        leaves: vec![NONE; n],
    };
    let outer_of = |r: u32| plan.blocks[(r / 2) as usize].outer;
    for (pc, ins) in code.iter().enumerate() {
        let target = match *ins {
            Instr::Jump { target } | Instr::Branch { target } => target,
            Instr::ExitIf => {
                let b = plan.block_of[pc];
                if b == NONE || region[pc] != b * 2 {
                    return Err(err(
                        spans,
                        pc,
                        "EXITIF must be directly in a LOOP body".into(),
                    ));
                }
                continue;
            }
            Instr::Ret if region[pc] != NONE => {
                return Err(err(
                    spans,
                    pc,
                    "RET inside a block; return after its END".into(),
                ));
            }
            _ => continue,
        };
        let name = ins.mnemonic();
        if target as usize > n {
            return Err(err(
                spans,
                pc,
                format!("{name} target {target} is out of range (the code has {n} instructions)"),
            ));
        }
        if code.get(target as usize) == Some(&Instr::Else) {
            return Err(err(spans, pc, format!("{name} cannot target an ELSE")));
        }
        let want = region.get(target as usize).copied().unwrap_or(NONE);
        let (mut r, mut left) = (region[pc], NONE);
        while r != want {
            if r == NONE {
                return Err(err(
                    spans,
                    pc,
                    format!(
                        "{name} to instruction {target} jumps into a block; enter it at its start"
                    ),
                ));
            }
            let b = (r / 2) as usize;
            if plan.blocks[b].kind == Kind::Loop {
                return Err(err(
                    spans,
                    pc,
                    format!("{name} cannot leave a LOOP (use EXITIF for a per-lane exit)"),
                ));
            }
            left = b as u32;
            r = outer_of(r);
        }
        if left != NONE {
            if target > plan.blocks[left as usize].opener {
                return Err(err(
                    spans,
                    pc,
                    format!(
                        "{name} leaves an IF forward: lanes would skip its END; jump back to its \
                         start or before, or end the arm"
                    ),
                ));
            }
            plan.leaves[pc] = left;
        }
    }
    let succ = heights(code, spans, &region, &mut plan)?;
    crate::liveness::fill(code, &succ, locals, &mut plan);
    Ok(plan)
}

/// Block structure: the blocks, each block instruction's block, each instruction's region.
#[allow(clippy::type_complexity)]
fn structure(code: &[Instr], spans: &[Span]) -> Result<(Vec<Block>, Vec<u32>, Vec<u32>)> {
    let n = code.len();
    let mut blocks: Vec<Block> = Vec::new();
    let mut block_of = vec![NONE; n];
    let mut region = vec![NONE; n];
    // Open blocks and the region currently in.
    let mut open: Vec<u32> = Vec::new();
    let mut cur = NONE;
    for (pc, ins) in code.iter().enumerate() {
        match ins {
            Instr::If | Instr::Loop { .. } => {
                region[pc] = cur;
                let b = blocks.len() as u32;
                blocks.push(Block {
                    kind: if *ins == Instr::If {
                        Kind::If
                    } else {
                        Kind::Loop
                    },
                    opener: pc as u32,
                    else_pc: None,
                    end: NONE,
                    outer: cur,
                    base: 0,
                    live: Vec::new(),
                    written: Vec::new(),
                    exits: false,
                });
                block_of[pc] = b;
                open.push(b);
                cur = b * 2;
            }
            Instr::Else => {
                let Some(&b) = open.last() else {
                    return Err(err(spans, pc, "ELSE without an open IF".into()));
                };
                let blk = &mut blocks[b as usize];
                if blk.kind != Kind::If || blk.else_pc.is_some() {
                    let msg = if blk.kind == Kind::Loop {
                        "ELSE inside a LOOP body without an IF"
                    } else {
                        "a second ELSE for one IF"
                    };
                    return Err(err(spans, pc, msg.into()));
                }
                blk.else_pc = Some(pc as u32);
                region[pc] = cur;
                block_of[pc] = b;
                cur = b * 2 + 1;
            }
            Instr::End => {
                let Some(b) = open.pop() else {
                    return Err(err(spans, pc, "END without an open IF or LOOP".into()));
                };
                region[pc] = cur;
                block_of[pc] = b;
                blocks[b as usize].end = pc as u32;
                cur = blocks[b as usize].outer;
            }
            Instr::ExitIf => {
                region[pc] = cur;
                let lp = open
                    .iter()
                    .rev()
                    .find(|&&b| blocks[b as usize].kind == Kind::Loop)
                    .copied();
                if let Some(b) = lp {
                    blocks[b as usize].exits = true;
                }
                block_of[pc] = lp.unwrap_or(NONE);
            }
            _ => region[pc] = cur,
        }
    }
    if let Some(&b) = open.last() {
        let blk = &blocks[b as usize];
        let what = if blk.kind == Kind::Loop { "LOOP" } else { "IF" };
        return Err(err(
            spans,
            blk.opener as usize,
            format!("this {what} has no END"),
        ));
    }
    Ok((blocks, block_of, region))
}

/// Successors of an instruction (at most two; `NONE` for none). `n` stands for the end.
pub(crate) type Succ = [u32; 2];

/// Stack heights by data flow; fills each block's base and returns the successor lists.
fn heights(code: &[Instr], spans: &[Span], region: &[u32], plan: &mut Plan) -> Result<Vec<Succ>> {
    let n = code.len();
    let mut height: Vec<u32> = vec![NONE; n + 1];
    let mut succ: Vec<Succ> = vec![[NONE, NONE]; n];
    // In instruction order, so the first defect on a path is the one reported.
    let mut work: std::collections::BTreeSet<usize> = Default::default();
    let blocks = plan.blocks.clone();
    let reach = |to: usize,
                 h: u32,
                 from: usize,
                 height: &mut Vec<u32>,
                 work: &mut std::collections::BTreeSet<usize>| {
        match height[to] {
            NONE => {
                height[to] = h;
                work.insert(to);
                Ok(())
            }
            old if old == h => Ok(()),
            old => {
                if code.get(to) == Some(&Instr::End) {
                    let blk = &blocks[plan_block(&blocks, to)];
                    if blk.kind == Kind::Loop || blk.else_pc.is_none() {
                        let what = if blk.kind == Kind::Loop {
                            "a LOOP body"
                        } else {
                            "an IF without ELSE"
                        };
                        return Err(err(
                            spans,
                            to,
                            format!(
                                "{what} must leave the stack as it found it: {} at its start, {} \
                                 at its END",
                                old.min(h),
                                old.max(h)
                            ),
                        ));
                    }
                }
                let at = to.min(n.saturating_sub(1));
                let place = if to == n {
                    "at the end of the code".to_string()
                } else {
                    format!("at instruction {to} (`{}`)", code[to].mnemonic())
                };
                Err(err(
                    spans,
                    if to == n { from } else { at },
                    format!(
                        "the stack height {place} differs by path: {old} on one, {h} on another \
                         (from instruction {from})"
                    ),
                ))
            }
        }
    };
    if n == 0 {
        return Err(Error::syntax(
            "the code is empty: nothing to return",
            Span::default(),
        ));
    }
    reach(0, 0, 0, &mut height, &mut work)?;
    // The floor of each instruction: its innermost block's base (filled as openers are seen).
    while let Some(pc) = work.pop_first() {
        if pc == n {
            if height[n] == 0 {
                return Err(err(
                    spans,
                    n - 1,
                    "the code ends with an empty stack: nothing to return".into(),
                ));
            }
            continue;
        }
        let h = height[pc];
        let ins = code[pc];
        let (pops, pushes) = ins.effect();
        let floor = match region[pc] {
            NONE => 0,
            r => plan.blocks[(r / 2) as usize].base,
        };
        if pops > h.saturating_sub(floor) || pops > h {
            let avail = h.saturating_sub(floor);
            let scope = if floor > 0 { " in this block" } else { "" };
            return Err(err(
                spans,
                pc,
                format!(
                    "stack underflow: `{}` needs {pops} value{}, the stack holds {avail}{scope}",
                    ins.mnemonic(),
                    if pops == 1 { "" } else { "s" }
                ),
            ));
        }
        let after = h - pops + pushes;
        let b = plan.block_of[pc];
        let next = pc + 1;
        let s: Succ = match ins {
            Instr::Ret => [NONE, NONE],
            Instr::Jump { target } => [target, NONE],
            Instr::Branch { target } => [next as u32, target],
            Instr::If => {
                let blk = &mut plan.blocks[b as usize];
                blk.base = after;
                let other = blk.else_pc.map_or(blk.end, |e| e + 1);
                [next as u32, other]
            }
            Instr::Loop { .. } => {
                let blk = &mut plan.blocks[b as usize];
                blk.base = after;
                [next as u32, blk.end + 1]
            }
            Instr::Else => [plan.blocks[b as usize].end, NONE],
            Instr::End => {
                let blk = &plan.blocks[b as usize];
                let want = blk.base;
                let no_else = blk.kind == Kind::Loop || blk.else_pc.is_none();
                if no_else && after != want {
                    let what = if blk.kind == Kind::Loop {
                        "a LOOP body"
                    } else {
                        "an IF without ELSE"
                    };
                    return Err(err(
                        spans,
                        pc,
                        format!(
                            "{what} must leave the stack as it found it: {want} value{} at its \
                             start, {after} at its END",
                            if want == 1 { "" } else { "s" }
                        ),
                    ));
                }
                if blk.kind == Kind::Loop {
                    [blk.opener + 1, next as u32]
                } else {
                    [next as u32, NONE]
                }
            }
            Instr::ExitIf => {
                let blk = &plan.blocks[b as usize];
                if after != blk.base {
                    return Err(err(
                        spans,
                        pc,
                        format!(
                            "EXITIF with {} value{} on the loop's stack: lanes leave the loop with \
                             the stack as the loop found it",
                            after - blk.base,
                            if after - blk.base == 1 { "" } else { "s" }
                        ),
                    ));
                }
                [next as u32, blk.end + 1]
            }
            _ => [next as u32, NONE],
        };
        succ[pc] = s;
        for to in s.into_iter().filter(|&t| t != NONE) {
            reach(to as usize, after, pc, &mut height, &mut work)?;
        }
    }
    Ok(succ)
}

/// The block whose `END` is at `pc`.
fn plan_block(blocks: &[Block], pc: usize) -> usize {
    blocks
        .iter()
        .position(|b| b.end as usize == pc)
        .unwrap_or(0)
}
