//! Code: a verified, linked instruction stream, ready to run.
//!
//! Every front door (the assembler, the binary and JSON readers, the compiler from the dialect)
//! produces the same [`Parts`]; [`Code::link`] resolves callee names against the base
//! environment and the custom primitives, checks arities, verifies the stream
//! ([`crate::verify`]) and builds the engine's **site program** — a program with no forms whose
//! node `i` locates instruction `i` in the source — so every error the engine raises while
//! running instruction `i` points at its line.

use crate::instr::Instr;
use crate::verify::{Plan, verify};
use ndvm_engine::error::{Error, ErrorKind, Result, Span};
use ndvm_engine::extension::Registry;
use ndvm_engine::prims::Prim;
use ndvm_engine::program::Program;
use std::sync::Arc;

/// What a callee name resolved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    Base(Prim),
    /// A custom primitive, by its index in the registry.
    Custom(usize),
}

/// An unlinked instruction stream: instructions, where each came from, and the name tables its
/// operands index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parts {
    pub instrs: Vec<Instr>,
    /// The span of each instruction in `source`.
    pub spans: Vec<Span>,
    /// The text errors are located in (the `.nbc` file, the dialect program it was compiled
    /// from, or a listing of a binary or JSON file).
    pub source: String,
    /// Input names in binding order (`LOAD i` reads `inputs[i]`).
    pub inputs: Vec<String>,
    /// Local names (for messages).
    pub locals: Vec<String>,
    /// Callee names (`CALL c n` calls `callees[c]`).
    pub callees: Vec<String>,
}

/// Linked, verified bytecode.
#[derive(Debug)]
pub struct Code {
    pub parts: Parts,
    pub(crate) resolved: Vec<Callee>,
    pub(crate) plan: Plan,
    pub(crate) sites: Arc<Program>,
}

impl Code {
    /// Links and verifies `parts` against the custom primitives of `registry`.
    pub fn link(parts: Parts, registry: &Registry) -> Result<Code> {
        let at = |i: usize| parts.spans.get(i).copied().unwrap_or_default();
        if parts.spans.len() != parts.instrs.len() {
            return Err(Error::unlocated(
                ErrorKind::Syntax,
                "every instruction needs a span",
            ));
        }
        let mut resolved = Vec::with_capacity(parts.callees.len());
        for name in &parts.callees {
            let callee = match (Prim::from_name(name), registry.find(name)) {
                (Some(p), _) => Callee::Base(p),
                (None, Some(i)) => Callee::Custom(i),
                (None, None) => {
                    let first = parts.instrs.iter().position(|ins| {
                        matches!(ins, Instr::Call { callee, .. }
                            if parts.callees.get(*callee as usize) == Some(name))
                    });
                    let msg = format!("unknown primitive `{name}`");
                    return Err(match first {
                        Some(i) => Error::new(ErrorKind::Unbound, msg, at(i)),
                        None => Error::unlocated(ErrorKind::Unbound, msg),
                    });
                }
            };
            resolved.push(callee);
        }
        for (i, ins) in parts.instrs.iter().enumerate() {
            let bad = |what: &str, n: u32, len: usize| {
                Error::new(
                    ErrorKind::Syntax,
                    format!(
                        "instruction {i} (`{}`): {what} {n} does not exist (there are {len})",
                        ins.mnemonic()
                    ),
                    at(i),
                )
            };
            match *ins {
                Instr::Load { input } if input as usize >= parts.inputs.len() => {
                    return Err(bad("input", input, parts.inputs.len()));
                }
                Instr::Get { local } | Instr::Set { local }
                    if local as usize >= parts.locals.len() =>
                {
                    return Err(bad("local", local, parts.locals.len()));
                }
                Instr::Call { callee, argc } => {
                    let Some(c) = resolved.get(callee as usize) else {
                        return Err(bad("callee", callee, resolved.len()));
                    };
                    let name = &parts.callees[callee as usize];
                    let ok = match *c {
                        Callee::Base(p) => p.accepts(argc as usize),
                        Callee::Custom(k) => {
                            registry.get(k).is_some_and(|p| p.arity() == argc as usize)
                        }
                    };
                    if !ok {
                        let wants = match *c {
                            Callee::Base(p) => p.arity_text(),
                            Callee::Custom(k) => {
                                format!("takes {}", registry.get(k).map_or(0, |p| p.arity()))
                            }
                        };
                        return Err(Error::new(
                            ErrorKind::Arity,
                            format!("`{name}` {wants} operands, called with {argc}"),
                            at(i),
                        ));
                    }
                }
                _ => {}
            }
        }
        let plan = verify(&parts.instrs, &parts.spans, parts.locals.len())?;
        let names: Vec<&str> = parts.inputs.iter().map(String::as_str).collect();
        let sites = Program::client(&parts.source, &names, parts.spans.clone(), registry.clone());
        Ok(Code {
            parts,
            resolved,
            plan,
            sites: Arc::new(sites),
        })
    }

    /// The engine's site program: locations of the instructions, the input names, the custom
    /// primitives. [`ndvm_engine::Vm::replay`] and [`ndvm_engine::Vm::input_grad`] take it.
    pub fn sites(&self) -> &Program {
        &self.sites
    }

    /// The site program, shared.
    pub fn sites_shared(&self) -> Arc<Program> {
        self.sites.clone()
    }

    pub fn instrs(&self) -> &[Instr] {
        &self.parts.instrs
    }

    pub fn inputs(&self) -> &[String] {
        &self.parts.inputs
    }

    pub fn source(&self) -> &str {
        &self.parts.source
    }

    /// A shareable handle.
    pub fn shared(self) -> Arc<Code> {
        Arc::new(self)
    }
}
