//! The text assembly format, `.nbc`.
//!
//! One instruction per line, mnemonics in any case, `;` to the end of a line is a comment, and
//! `name:` labels the next instruction (on its own line or before one):
//!
//! ```text
//! ; W2: x ← x·r + c, n times
//!         LOAD x0
//!         SET x
//!         LOOP 10          ; a counted loop, up to its END
//!           GET x
//!           LOAD r
//!           MUL
//!           LOAD c
//!           ADD
//!           SET x
//!         END
//!         GET x
//!         RET
//! ```
//!
//! Operands: `PUSH number`, `LOAD input`, `GET local`/`SET local` (locals are named; a name is
//! a local from its first use), `CALL primitive [operand count]` (the count may be left out for a
//! primitive of fixed arity), `LOOP [count]` (no count: pop it), `JUMP label`/`BRANCH label` (a
//! label, or an instruction index). Inputs are named as the bindings name them. Every error is
//! located at its line.

use crate::code::{Code, Parts};
use crate::instr::{Instr, Number};
use ndvm_engine::error::{Error, ErrorKind, Result, Span};
use ndvm_engine::extension::Registry;
use ndvm_engine::prims::Prim;
use std::collections::HashMap;

/// Assembles `.nbc` text against the input names (binding order) and the custom primitives.
pub fn assemble(source: &str, inputs: &[&str], registry: &Registry) -> Result<Code> {
    Code::link(parse(source, inputs, registry)?, registry)
}

/// A label reference waiting for its definition.
struct Fixup {
    instr: usize,
    label: String,
    span: Span,
}

/// Parses `.nbc` text into unlinked [`Parts`].
pub fn parse(source: &str, inputs: &[&str], registry: &Registry) -> Result<Parts> {
    if source.len() >= u32::MAX as usize {
        return Err(Error::syntax("source too large", Span::default()));
    }
    let mut parts = Parts {
        source: source.to_string(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        ..Parts::default()
    };
    let mut labels: HashMap<String, u32> = HashMap::new();
    let mut locals: HashMap<String, u32> = HashMap::new();
    let mut callees: HashMap<String, u32> = HashMap::new();
    let mut fixups: Vec<Fixup> = Vec::new();
    // The first GET of each local, to report one never set.
    let mut read: Vec<Option<Span>> = Vec::new();
    let mut set: Vec<bool> = Vec::new();
    let mut offset = 0usize;
    for line in source.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let code = line.split(';').next().unwrap_or("");
        let mut toks = tokens(code, start).peekable();
        // Labels.
        while let Some(&(t, span)) = toks.peek() {
            let Some(name) = t.strip_suffix(':') else {
                break;
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-.$".contains(c))
            {
                return Err(Error::syntax(format!("bad label `{t}`"), span));
            }
            if labels
                .insert(name.to_string(), parts.instrs.len() as u32)
                .is_some()
            {
                return Err(Error::syntax(
                    format!("label `{name}` is defined twice"),
                    span,
                ));
            }
            toks.next();
        }
        let Some((mnemonic, mspan)) = toks.next() else {
            continue;
        };
        let operands: Vec<(&str, Span)> = toks.collect();
        let span = operands.last().map_or(mspan, |&(_, s)| mspan.to(s));
        let upper = mnemonic.to_ascii_uppercase();
        let at = parts.instrs.len();
        let want = |n: std::ops::RangeInclusive<usize>| -> Result<()> {
            if n.contains(&operands.len()) {
                return Ok(());
            }
            let (lo, hi) = (*n.start(), *n.end());
            let wants = if lo == hi {
                format!("{lo} operand{}", if lo == 1 { "" } else { "s" })
            } else {
                format!("{lo} to {hi} operands")
            };
            Err(Error::syntax(
                format!("`{upper}` takes {wants}, got {}", operands.len()),
                span,
            ))
        };
        let ins = if let Some(plain) = Instr::plain(&upper) {
            want(0..=0)?;
            plain
        } else {
            match upper.as_str() {
                "PUSH" => {
                    want(1..=1)?;
                    let (t, s) = operands[0];
                    let Some(value) = Number::parse(t) else {
                        return Err(Error::syntax(format!("`{t}` is not a number"), s));
                    };
                    Instr::Push { value }
                }
                "LOAD" => {
                    want(1..=1)?;
                    let (t, s) = operands[0];
                    let input = match (inputs.iter().position(|n| *n == t), t.parse::<u32>()) {
                        (Some(i), _) => i as u32,
                        (None, Ok(i)) => i,
                        (None, Err(_)) => {
                            let known = if inputs.is_empty() {
                                "no inputs are bound".to_string()
                            } else {
                                format!("the inputs are {}", inputs.join(", "))
                            };
                            return Err(Error::new(
                                ErrorKind::Unbound,
                                format!("unknown input `{t}` ({known})"),
                                s,
                            ));
                        }
                    };
                    Instr::Load { input }
                }
                "GET" | "SET" => {
                    want(1..=1)?;
                    let (t, s) = operands[0];
                    let next = locals.len() as u32;
                    let local = *locals.entry(t.to_string()).or_insert(next);
                    if local == next {
                        parts.locals.push(t.to_string());
                        read.push(None);
                        set.push(false);
                    }
                    if upper == "GET" {
                        read[local as usize].get_or_insert(s);
                        Instr::Get { local }
                    } else {
                        set[local as usize] = true;
                        Instr::Set { local }
                    }
                }
                "CALL" => {
                    want(1..=2)?;
                    let (name, s) = operands[0];
                    let argc = match operands.get(1) {
                        Some(&(t, s)) => t.parse::<u32>().map_err(|_| {
                            Error::syntax(format!("`{t}` is not an operand count"), s)
                        })?,
                        None => fixed_arity(name, registry).ok_or_else(|| {
                            Error::syntax(
                                format!("`CALL {name}`: give the operand count (`CALL {name} 2`)"),
                                s,
                            )
                        })?,
                    };
                    let next = callees.len() as u32;
                    let callee = *callees.entry(name.to_string()).or_insert(next);
                    if callee == next {
                        parts.callees.push(name.to_string());
                    }
                    Instr::Call { callee, argc }
                }
                "LOOP" => {
                    want(0..=1)?;
                    let count = match operands.first() {
                        None => None,
                        Some(&(t, s)) => Some(t.parse::<u32>().map_err(|_| {
                            Error::syntax(format!("`{t}` is not a loop count (0 or more)"), s)
                        })?),
                    };
                    Instr::Loop { count }
                }
                "JUMP" | "BRANCH" => {
                    want(1..=1)?;
                    let (t, s) = operands[0];
                    let target = match t.parse::<u32>() {
                        Ok(i) => i,
                        Err(_) => {
                            fixups.push(Fixup {
                                instr: at,
                                label: t.to_string(),
                                span: s,
                            });
                            0
                        }
                    };
                    if upper == "JUMP" {
                        Instr::Jump { target }
                    } else {
                        Instr::Branch { target }
                    }
                }
                _ => {
                    return Err(Error::syntax(
                        format!("unknown instruction `{mnemonic}`"),
                        mspan,
                    ));
                }
            }
        };
        parts.instrs.push(ins);
        parts.spans.push(span);
    }
    for f in fixups {
        let Some(&t) = labels.get(&f.label) else {
            return Err(Error::syntax(
                format!("unknown label `{}`", f.label),
                f.span,
            ));
        };
        if let Instr::Jump { target } | Instr::Branch { target } = &mut parts.instrs[f.instr] {
            *target = t;
        }
    }
    if let Some(l) = (0..set.len()).find(|&l| !set[l]) {
        let name = &parts.locals[l];
        let span = read[l].unwrap_or_default();
        return Err(Error::new(
            ErrorKind::Unbound,
            format!("local `{name}` is read but never set"),
            span,
        ));
    }
    Ok(parts)
}

/// The operand count of a primitive of fixed arity.
fn fixed_arity(name: &str, registry: &Registry) -> Option<u32> {
    if let Some(p) = Prim::from_name(name) {
        let (lo, hi) = p.arity();
        return (lo == hi).then_some(lo as u32);
    }
    registry
        .find(name)
        .and_then(|i| registry.get(i))
        .map(|p| p.arity() as u32)
}

/// Whitespace-separated tokens of one line with their spans (`start` is the line's offset).
fn tokens(line: &str, start: usize) -> impl Iterator<Item = (&str, Span)> {
    let mut rest = line;
    let mut pos = start;
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start();
        pos += rest.len() - trimmed.len();
        if trimmed.is_empty() {
            return None;
        }
        let len = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let tok = &trimmed[..len];
        let span = Span::new(pos as u32, (pos + len) as u32);
        pos += len;
        rest = &trimmed[len..];
        Some((tok, span))
    })
}

/// Nesting levels a listing indents (deeper blocks are listed at this depth).
const MAX_INDENT: usize = 32;

/// Writes `parts` as `.nbc` text: one instruction per line, jump targets as labels `L<index>`.
/// Returns the text and the span of each instruction in it.
pub fn listing(parts: &Parts) -> (String, Vec<Span>) {
    let targets: std::collections::BTreeSet<u32> = parts
        .instrs
        .iter()
        .filter_map(|i| match i {
            Instr::Jump { target } | Instr::Branch { target } => Some(*target),
            _ => None,
        })
        .collect();
    let name = |table: &[String], i: u32| {
        table
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| i.to_string())
    };
    let mut out = String::new();
    let mut spans = Vec::with_capacity(parts.instrs.len());
    let mut depth = 0usize;
    for (pc, ins) in parts.instrs.iter().enumerate() {
        if targets.contains(&(pc as u32)) {
            out.push_str(&format!("L{pc}:\n"));
        }
        if matches!(ins, Instr::Else | Instr::End) {
            depth = depth.saturating_sub(1);
        }
        // Indentation stops growing at `MAX_INDENT` levels: the listing stays linear in the
        // code (20,000 nested `IF`s once made a 3.9 GB listing, and binary bytecode is listed to
        // locate its errors).
        out.push_str(&"  ".repeat(depth.min(MAX_INDENT) + 1));
        let start = out.len();
        let operand = match *ins {
            Instr::Push { value } => format!(" {}", value.value),
            Instr::Load { input } => format!(" {}", name(&parts.inputs, input)),
            Instr::Get { local } | Instr::Set { local } => {
                format!(" {}", name(&parts.locals, local))
            }
            Instr::Call { callee, argc } => format!(" {} {argc}", name(&parts.callees, callee)),
            Instr::Loop { count: Some(n) } => format!(" {n}"),
            Instr::Jump { target } | Instr::Branch { target } => format!(" L{target}"),
            _ => String::new(),
        };
        out.push_str(ins.mnemonic());
        out.push_str(&operand);
        spans.push(Span::new(start as u32, out.len() as u32));
        out.push('\n');
        if matches!(ins, Instr::If | Instr::Else | Instr::Loop { .. }) {
            depth += 1;
        }
    }
    if targets.contains(&(parts.instrs.len() as u32)) {
        out.push_str(&format!("L{}:\n", parts.instrs.len()));
    }
    (out, spans)
}
