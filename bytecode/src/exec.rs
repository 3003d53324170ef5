//! The executor: one fixed loop over the instruction stream, all lanes at once.
//!
//! The stack and the locals hold engine [`Value`]s; every numeric instruction is one call into
//! the engine's client API ([`Vm::call_prim`]), which runs the lane kernels over the active
//! lanes and records tape nodes. Control lives here, in a stack of [`Frame`]s:
//!
//! - `IF` asks the engine to [`Vm::decide`] the test over the active lanes. Decided the same way
//!   everywhere, it jumps, and at its `END` the values it leaves are [`Vm::settle`]d as the
//!   walk's `if` does. Split, the then-arm runs with only the then-lanes active, the state is
//!   saved, the else-arm runs from the saved entry state with only the else-lanes, and at `END`
//!   each stack value the block produced and each live local it wrote or that differs is
//!   [`Vm::merge`]d per lane — the walk's masked merge, node for node.
//! - A jump that leaves `IF`s backward (a loop written with labels) keeps their frames: the lanes
//!   re-enter the test, a further split nests, and everything rejoins at the `END` of the
//!   outermost block it left, innermost first — exactly how the walk's loop nests its exits.
//!   Frames decided uniformly collapse into one, so a long loop runs in constant space.
//! - `LOOP` counts; `EXITIF` splits the lanes that leave from those that stay, and the leavers'
//!   locals are merged in when the loop ends.
//!
//! A lane must get the same bits alone as in any batch (docs/language-reference.md §9.1), and a
//! merge adds a place's adjoint into its value only when the backward pass reaches the merge.
//! So wherever a batch could have merged, a lone lane copies instead, one copy per place: at the
//! `END` of a uniform `IF` (values older than the `IF`, and any value at two places), when every
//! lane leaves at an `EXITIF`, and when a loop that has an `EXITIF` ends with no lane gone.

use crate::code::{Callee, Code};
use crate::instr::Instr;
use crate::verify::{Kind, NONE};
use ndvm_engine::error::{ErrorKind, Result};
use ndvm_engine::prims::Prim;
use ndvm_engine::value::{Value, tag};
use ndvm_engine::{Bindings, Decision, Evaluation, Real, Vm};

/// A saved stack and locals.
#[derive(Clone, Debug, Default)]
struct State {
    stack: Vec<Value>,
    locals: Vec<Value>,
}

/// An open block.
#[derive(Debug)]
enum Frame {
    /// An `IF` decided the same way in every active lane; settles at `join`.
    Uniform {
        join: u32,
        watermark: u32,
    },
    /// An `IF` whose lanes split; they rejoin at `join` (its `END`, or the `END` of the outermost
    /// block a jump left).
    Split {
        block: u32,
        join: u32,
        then_set: u32,
        else_set: u32,
        prev: u32,
        entry: State,
        then: Option<State>,
    },
    Loop {
        block: u32,
        left: usize,
    },
    /// Lanes that left loop `block` at an `EXITIF`, with their locals.
    Exit {
        block: u32,
        exit_set: u32,
        prev: u32,
        locals: Vec<Value>,
    },
}

impl Frame {
    fn block_join(&self) -> Option<u32> {
        match self {
            Frame::Uniform { join, .. } | Frame::Split { join, .. } => Some(*join),
            _ => None,
        }
    }
}

/// A reusable executor: its stacks are kept (cleared) between runs.
#[derive(Debug, Default)]
pub struct Runner {
    stack: Vec<Value>,
    locals: Vec<Value>,
    frames: Vec<Frame>,
    /// Scratch for [`Runner::settle`].
    places: Vec<Value>,
    /// The instruction running (for error messages).
    pc: usize,
}

impl Runner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `code` over the lanes of `bindings` on `vm`; with `record`, the tape is kept for
    /// [`Vm::backward`] and [`Vm::replay`] (pass [`Code::sites`] as the program).
    pub fn run<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        bindings: &Bindings<R>,
        record: bool,
    ) -> Result<Value> {
        self.pc = usize::MAX;
        self.exec(vm, code, bindings, record).map_err(|mut e| {
            // Name the instruction an error is located at.
            let at = code.parts.spans.get(self.pc);
            if e.span.is_some() && e.span == at.copied() {
                let ins = code.parts.instrs[self.pc].mnemonic();
                e.message = format!("instruction {} (`{ins}`): {}", self.pc, e.message);
            }
            e
        })
    }

    fn exec<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        bindings: &Bindings<R>,
        record: bool,
    ) -> Result<Value> {
        let sites = &code.sites;
        vm.begin(sites, bindings, record)?;
        self.stack.clear();
        self.frames.clear();
        self.locals.clear();
        self.locals.resize(code.parts.locals.len(), Value::UNBOUND);
        let instrs = &code.parts.instrs;
        let plan = &code.plan;
        let mut pc = 0usize;
        while pc < instrs.len() {
            let at = pc as u32;
            self.pc = pc;
            vm.tick(sites, at)?;
            let ins = instrs[pc];
            pc += 1;
            match ins {
                Instr::Push { value } => self
                    .stack
                    .push(Value::constant(R::from_literal(value.literal()))),
                Instr::Load { input } => self
                    .stack
                    .push(vm.input(input as usize).unwrap_or(Value::NIL)),
                Instr::Get { local } => {
                    let v = self.locals[local as usize];
                    if v.tag == tag::UNBOUND {
                        let name = &code.parts.locals[local as usize];
                        return Err(vm.fault(
                            sites,
                            at,
                            ErrorKind::Unbound,
                            format!("local `{name}` is read before it is set (in these lanes)"),
                        ));
                    }
                    self.stack.push(v);
                }
                Instr::Set { local } => self.locals[local as usize] = self.pop(),
                Instr::Dup => {
                    let v = self.stack.last().copied().unwrap_or(Value::NIL);
                    self.stack.push(v);
                }
                Instr::Pop => {
                    self.pop();
                }
                Instr::Swap => {
                    let n = self.stack.len();
                    self.stack.swap(n - 2, n - 1);
                }
                Instr::Call { callee, argc } => {
                    let base = self.stack.len() - argc as usize;
                    let args = &self.stack[base..];
                    let v = match code.resolved[callee as usize] {
                        Callee::Base(p) => vm.call_prim(sites, at, p, args)?,
                        Callee::Custom(k) => vm.call_custom(sites, at, k, args)?,
                    };
                    self.stack.truncate(base);
                    self.stack.push(v);
                }
                Instr::If => {
                    let test = self.pop();
                    let b = plan.block_of[at as usize];
                    let blk = &plan.blocks[b as usize];
                    match vm.decide(sites, at, test)? {
                        Decision::All(t) => {
                            let watermark = vm.watermark();
                            match self.frames.last_mut() {
                                Some(Frame::Uniform { join, watermark: w }) if *join == blk.end => {
                                    *w = watermark;
                                }
                                _ => self.open(
                                    vm,
                                    code,
                                    at,
                                    Frame::Uniform {
                                        join: blk.end,
                                        watermark,
                                    },
                                )?,
                            }
                            if !t {
                                pc = blk.else_pc.map_or(blk.end, |e| e + 1) as usize;
                            }
                        }
                        Decision::Split {
                            then_lanes,
                            else_lanes,
                        } => {
                            let entry = State {
                                stack: self.stack.clone(),
                                locals: self.locals.clone(),
                            };
                            let frame = Frame::Split {
                                block: b,
                                join: blk.end,
                                then_set: then_lanes,
                                else_set: else_lanes,
                                prev: vm.active_set(),
                                entry,
                                then: None,
                            };
                            self.open(vm, code, at, frame)?;
                            vm.set_active(then_lanes);
                        }
                    }
                }
                Instr::Else => pc = plan.blocks[plan.block_of[at as usize] as usize].end as usize,
                Instr::End => pc = self.end(vm, code, at)?,
                Instr::Loop { count } => {
                    let b = plan.block_of[at as usize];
                    let count = match count {
                        Some(c) => c as usize,
                        None => {
                            let v = self.pop();
                            vm.index(sites, at, "the LOOP count", v)?
                        }
                    };
                    if count == 0 {
                        pc = plan.blocks[b as usize].end as usize + 1;
                    } else {
                        self.open(
                            vm,
                            code,
                            at,
                            Frame::Loop {
                                block: b,
                                left: count,
                            },
                        )?;
                    }
                }
                Instr::ExitIf => pc = self.exit_if(vm, code, at, pc)?,
                Instr::Jump { target } => {
                    self.leave(code, at);
                    pc = target as usize;
                }
                Instr::Branch { target } => {
                    let test = self.pop();
                    if vm.uniform(sites, at, test)? {
                        self.leave(code, at);
                        pc = target as usize;
                    }
                }
                Instr::Ret => return self.ret(vm, code, at),
                op => {
                    let Some(p) = op.primitive() else { continue };
                    let k = op.effect().0 as usize;
                    let base = self.stack.len() - k;
                    let v = if op == Instr::Neg {
                        vm.call_prim(sites, at, Prim::Sub, &self.stack[base..])?
                    } else {
                        vm.call_prim(sites, at, p, &self.stack[base..])?
                    };
                    self.stack.truncate(base);
                    self.stack.push(v);
                }
            }
        }
        self.ret(vm, code, instrs.len().saturating_sub(1) as u32)
    }

    /// Runs `code` and collects its [`Evaluation`]: results and, with `grad`, every parameter
    /// input's per-lane gradient.
    pub fn evaluate<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        bindings: &Bindings<R>,
        grad: bool,
    ) -> Result<Evaluation<R>> {
        let v = self.run(vm, code, bindings, grad)?;
        Ok(vm.evaluation(&code.sites, bindings, v, grad))
    }

    fn pop(&mut self) -> Value {
        self.stack.pop().unwrap_or(Value::NIL)
    }

    /// Pushes a frame, within the recursion-depth limit.
    fn open<R: Real>(&mut self, vm: &Vm<R>, code: &Code, at: u32, f: Frame) -> Result<()> {
        if self.frames.len() as u64 >= vm.limits.recursion_depth {
            let msg = format!(
                "recursion depth limit of {} exceeded (open blocks)",
                vm.limits.recursion_depth
            );
            return Err(vm.fault(&code.sites, at, ErrorKind::Limit, msg));
        }
        self.frames.push(f);
        Ok(())
    }

    /// The result: the top of the stack. Every split must have rejoined.
    fn ret<R: Real>(&mut self, vm: &mut Vm<R>, code: &Code, at: u32) -> Result<Value> {
        if let Some(f) = self
            .frames
            .iter()
            .find(|f| !matches!(f, Frame::Uniform { .. }))
        {
            return Err(self.stranded(vm, code, f));
        }
        let v = self.stack.last().copied().unwrap_or(Value::NIL);
        if v.tag == tag::UNBOUND {
            return Err(vm.fault(&code.sites, at, ErrorKind::Unbound, "the result is unset"));
        }
        vm.finish(v);
        Ok(v)
    }

    /// The error for lanes that split (or a loop) whose block was never closed.
    fn stranded<R: Real>(&self, vm: &Vm<R>, code: &Code, f: &Frame) -> ndvm_engine::Error {
        let (b, what) = match f {
            Frame::Split { block, .. } => (*block, "lanes split at this IF never reached its END"),
            Frame::Loop { block, .. } | Frame::Exit { block, .. } => {
                (*block, "this LOOP was left before its END")
            }
            Frame::Uniform { .. } => (0, "a block was left open"),
        };
        let at = code.plan.blocks.get(b as usize).map_or(0, |blk| blk.opener);
        vm.fault(
            &code.sites,
            at,
            ErrorKind::Divergence,
            format!("{what} (a jump skipped it); the lanes cannot be merged"),
        )
    }

    /// `END` at `at`: closes what ends here; returns the next instruction.
    fn end<R: Real>(&mut self, vm: &mut Vm<R>, code: &Code, at: u32) -> Result<usize> {
        let plan = &code.plan;
        let b = plan.block_of[at as usize];
        let blk = &plan.blocks[b as usize];
        if blk.kind == Kind::Loop {
            self.drop_foreign(vm, code, |f| {
                matches!(f, Frame::Loop { block, .. } | Frame::Exit { block, .. } if *block == b)
            })?;
            if let Some(Frame::Exit { .. }) = self.frames.last() {
                // Lanes have left: the others go on counting in the Loop frame below.
                let i = self
                    .frames
                    .iter()
                    .rposition(|f| matches!(f, Frame::Loop { block, .. } if *block == b));
                if let Some(Frame::Loop { left, .. }) = i.map(|i| &mut self.frames[i]) {
                    *left -= 1;
                    if *left > 0 {
                        return Ok(blk.opener as usize + 1);
                    }
                }
            } else if let Some(Frame::Loop { left, .. }) = self.frames.last_mut() {
                *left -= 1;
                if *left > 0 {
                    return Ok(blk.opener as usize + 1);
                }
                if blk.exits {
                    // No lane left early: had one (in a batch holding this lane), these locals
                    // would be merged, so they are copied as that merge would route them.
                    let wm = vm.watermark();
                    self.settle_written(vm, code, blk, at, wm)?;
                }
            }
            self.finish_loop(vm, code, b)?;
            return Ok(at as usize + 1);
        }
        while let Some(f) = self.frames.last() {
            if f.block_join() != Some(at) {
                break;
            }
            match self.frames.pop() {
                Some(Frame::Uniform { watermark, .. }) => self.settle(vm, code, at, watermark)?,
                Some(Frame::Split {
                    block,
                    join,
                    then_set,
                    else_set,
                    prev,
                    entry,
                    then: None,
                }) => {
                    // The then-lanes are done; the else-lanes run their arm from the entry state.
                    let done = State {
                        stack: std::mem::replace(&mut self.stack, entry.stack),
                        locals: std::mem::replace(&mut self.locals, entry.locals),
                    };
                    vm.set_active(else_set);
                    let own = &plan.blocks[block as usize];
                    let resume = own.else_pc.map_or(own.end, |e| e + 1);
                    self.frames.push(Frame::Split {
                        block,
                        join,
                        then_set,
                        else_set,
                        prev,
                        entry: State::default(),
                        then: Some(done),
                    });
                    if resume != at {
                        return Ok(resume as usize);
                    }
                }
                Some(Frame::Split {
                    block,
                    then_set,
                    else_set,
                    prev,
                    then: Some(then),
                    ..
                }) => {
                    let opener = plan.blocks[block as usize].opener;
                    self.merge(vm, code, at, opener, (then_set, then), else_set)?;
                    vm.set_active(prev);
                    vm.rejoin();
                }
                _ => {}
            }
        }
        Ok(at as usize + 1)
    }

    /// Values leaving a uniformly decided block ending at `join`: the walk's copy rule, for each
    /// place a split's merge would fill (the stack the block produced, the live locals it wrote).
    /// A value older than `wm` is copied; so is one at two places, because a merge makes one
    /// selection per place and a lone lane must add their adjoints in the same order.
    fn settle<R: Real>(&mut self, vm: &mut Vm<R>, code: &Code, join: u32, wm: u32) -> Result<()> {
        let blk = &code.plan.blocks[code.plan.block_of[join as usize] as usize];
        let base = (blk.base as usize).min(self.stack.len());
        let written = || {
            blk.live
                .iter()
                .zip(&blk.written)
                .filter(|(_, w)| **w)
                .map(|(&l, _)| l as usize)
        };
        // The values at the places, sorted, to find those at two (kept between calls: this runs
        // at the end of every uniform `IF`).
        let key = |v: &Value| (v.tag, v.aux, v.slot);
        let mut seen = std::mem::take(&mut self.places);
        seen.clear();
        seen.extend(self.stack[base..].iter().copied());
        seen.extend(written().map(|l| self.locals[l]));
        seen.sort_unstable_by_key(key);
        let twice = |v: Value| {
            let at = seen.partition_point(|w| key(w) < key(&v));
            seen.get(at + 1).is_some_and(|w| *w == v)
        };
        let now = vm.watermark();
        let cut = |v: Value| if twice(v) { now } else { wm };
        for v in &mut self.stack[base..] {
            *v = vm.settle(&code.sites, blk.opener, *v, cut(*v))?;
        }
        for l in written() {
            let v = &mut self.locals[l];
            *v = vm.settle(&code.sites, blk.opener, *v, cut(*v))?;
        }
        self.places = seen;
        Ok(())
    }

    /// Copies each live local block `blk` wrote that was made before `wm` (see [`Vm::settle`]).
    fn settle_written<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        blk: &crate::verify::Block,
        at: u32,
        wm: u32,
    ) -> Result<()> {
        for (&l, _) in blk.live.iter().zip(&blk.written).filter(|(_, w)| **w) {
            let v = &mut self.locals[l as usize];
            *v = vm.settle(&code.sites, at, *v, wm)?;
        }
        Ok(())
    }

    /// The per-lane merge at `join` of the then-lanes' state with the current (else) state.
    fn merge<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        join: u32,
        opener: u32,
        (then_set, then): (u32, State),
        else_set: u32,
    ) -> Result<()> {
        let blk = &code.plan.blocks[code.plan.block_of[join as usize] as usize];
        let sites = &code.sites;
        let base = blk.base as usize;
        for (i, (&t, e)) in then.stack.iter().zip(self.stack.iter_mut()).enumerate() {
            if i >= base || t != *e {
                *e = vm.merge(sites, opener, (then_set, t), (else_set, *e))?;
            }
        }
        let locals = (then.locals.as_slice(), then_set, else_set);
        merge_locals(vm, code, opener, blk, locals, &mut self.locals)
    }

    /// `EXITIF` at `at`; returns the next instruction.
    fn exit_if<R: Real>(
        &mut self,
        vm: &mut Vm<R>,
        code: &Code,
        at: u32,
        next: usize,
    ) -> Result<usize> {
        let test = self.pop();
        let b = code.plan.block_of[at as usize];
        let blk = &code.plan.blocks[b as usize];
        let in_loop = matches!(self.frames.last(),
            Some(Frame::Loop { block, .. } | Frame::Exit { block, .. }) if *block == b);
        if !in_loop {
            return Err(vm.fault(
                &code.sites,
                at,
                ErrorKind::Divergence,
                "EXITIF reached inside an open IF (a jump re-entered the loop body from an arm); \
                 leave the IF first",
            ));
        }
        match vm.decide(&code.sites, at, test)? {
            Decision::All(false) => Ok(next),
            Decision::All(true) => {
                let wm = vm.watermark();
                self.settle_written(vm, code, blk, at, wm)?;
                self.finish_loop(vm, code, b)?;
                Ok(blk.end as usize + 1)
            }
            Decision::Split {
                then_lanes,
                else_lanes,
            } => {
                let frame = Frame::Exit {
                    block: b,
                    exit_set: then_lanes,
                    prev: vm.active_set(),
                    locals: self.locals.clone(),
                };
                self.open(vm, code, at, frame)?;
                vm.set_active(else_lanes);
                Ok(next)
            }
        }
    }

    /// Closes loop `b`: the lanes that left it early are merged back in, innermost first.
    fn finish_loop<R: Real>(&mut self, vm: &mut Vm<R>, code: &Code, b: u32) -> Result<()> {
        let blk = &code.plan.blocks[b as usize];
        while let Some(Frame::Exit { block, .. }) = self.frames.last() {
            if *block != b {
                break;
            }
            let Some(Frame::Exit {
                exit_set,
                prev,
                locals,
                ..
            }) = self.frames.pop()
            else {
                break;
            };
            let stay = vm.active_set();
            let saved = (locals.as_slice(), exit_set, stay);
            merge_locals(vm, code, blk.opener, blk, saved, &mut self.locals)?;
            vm.set_active(prev);
            vm.rejoin();
        }
        if matches!(self.frames.last(), Some(Frame::Loop { block, .. }) if *block == b) {
            self.frames.pop();
        }
        Ok(())
    }

    /// Pops frames above the nearest one `keep` accepts: uniform ones are dropped, anything
    /// else was stranded by a jump.
    fn drop_foreign<R: Real>(
        &mut self,
        vm: &Vm<R>,
        code: &Code,
        keep: impl Fn(&Frame) -> bool,
    ) -> Result<()> {
        while let Some(f) = self.frames.last() {
            if keep(f) {
                break;
            }
            if !matches!(f, Frame::Uniform { .. }) {
                return Err(self.stranded(vm, code, f));
            }
            self.frames.pop();
        }
        Ok(())
    }

    /// A jump at `at` leaving `IF` blocks backward: their frames now rejoin at the outermost
    /// block's `END`, and adjacent uniform frames collapse into one.
    fn leave(&mut self, code: &Code, at: u32) {
        let o = code.plan.leaves[at as usize];
        if o == NONE {
            return;
        }
        let blk = &code.plan.blocks[o as usize];
        let (lo, hi) = (blk.opener, blk.end);
        let mut k = self.frames.len();
        while k > 0 {
            match &mut self.frames[k - 1] {
                Frame::Uniform { join, .. } | Frame::Split { join, .. }
                    if lo <= *join && *join <= hi =>
                {
                    *join = hi;
                    k -= 1;
                }
                _ => break,
            }
        }
        let len = self.frames.len();
        if len < 2 {
            return;
        }
        let mut write = k.saturating_sub(1);
        for read in write + 1..len {
            let merged = match (&self.frames[write], &self.frames[read]) {
                (
                    Frame::Uniform {
                        join: a,
                        watermark: wa,
                    },
                    Frame::Uniform {
                        join: b,
                        watermark: wb,
                    },
                ) if a == b => Some((*a, (*wa).max(*wb))),
                _ => None,
            };
            match merged {
                Some((join, watermark)) => self.frames[write] = Frame::Uniform { join, watermark },
                None => {
                    write += 1;
                    self.frames.swap(write, read);
                }
            }
        }
        self.frames.truncate(write + 1);
    }
}

/// Merges the live locals a block wrote, or that differ, per lane: `then` (the saved side) in
/// its lanes, `cur` in `other`. A local only one side set, or set to kinds that cannot be
/// merged, becomes unset (reading it is an error; a dead one is never read).
fn merge_locals<R: Real>(
    vm: &mut Vm<R>,
    code: &Code,
    opener: u32,
    blk: &crate::verify::Block,
    (then, then_set, other): (&[Value], u32, u32),
    cur: &mut [Value],
) -> Result<()> {
    for (&l, &written) in blk.live.iter().zip(&blk.written) {
        let (t, e) = (then[l as usize], cur[l as usize]);
        if !written && t == e {
            continue;
        }
        cur[l as usize] = if t.tag == tag::UNBOUND || e.tag == tag::UNBOUND {
            Value::UNBOUND
        } else {
            match vm.merge(&code.sites, opener, (then_set, t), (other, e)) {
                Ok(v) => v,
                Err(err) if err.kind == ErrorKind::Divergence => Value::UNBOUND,
                Err(err) => return Err(err),
            }
        };
    }
    Ok(())
}

/// Runs `code` once with a fresh [`Runner`] (see [`Runner::evaluate`]).
pub fn evaluate<R: Real>(
    vm: &mut Vm<R>,
    code: &Code,
    bindings: &Bindings<R>,
    grad: bool,
) -> Result<Evaluation<R>> {
    Runner::new().evaluate(vm, code, bindings, grad)
}
