//! Core forms: what the expander produces and the decoder consumes.
//!
//! The eight core forms of docs/language-reference.md §4 (plus literals, variables and calls),
//! stored in one flat arena. Children lists live in side arrays so the arena never nests and never
//! needs a recursive drop.

use super::reader::{Data, DatumId, Literal};
use super::symbols::Sym;
use crate::error::Span;

pub type CoreId = u32;

/// A `(start, len)` range into one of the side arrays of [`Expanded`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Range {
    pub start: u32,
    pub len: u32,
}

impl Range {
    pub fn slice<T>(self, v: &[T]) -> &[T] {
        &v[self.start as usize..(self.start + self.len) as usize]
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CoreKind {
    Num(Literal),
    Bool(bool),
    /// `(quote d)`: a constant datum, rebuilt as fresh pairs each evaluation.
    Quote(DatumId),
    Var(Sym),
    If {
        test: CoreId,
        then: CoreId,
        els: CoreId,
    },
    /// Parameters in `syms`.
    Lambda {
        params: Range,
        body: CoreId,
    },
    /// Parallel `let`: bindings in `binds`, initializers see the enclosing scope only.
    Let {
        binds: Range,
        body: CoreId,
    },
    /// `letrec*`: one scope holding every name, initialized left to right.
    Letrec {
        binds: Range,
        body: CoreId,
    },
    /// Expressions in `ids`, evaluated in order.
    Begin {
        items: Range,
    },
    /// Operands in `ids`.
    Call {
        head: CoreId,
        args: Range,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Core {
    pub kind: CoreKind,
    pub span: Span,
}

/// One binding of `let`/`letrec*`, or one top-level definition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bind {
    pub name: Sym,
    pub init: CoreId,
    /// The span of the name.
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TopForm {
    Define(Bind),
    Expr(CoreId),
}

/// An expanded program.
#[derive(Clone, Debug, Default)]
pub struct Expanded {
    pub nodes: Vec<Core>,
    pub ids: Vec<CoreId>,
    pub syms: Vec<(Sym, Span)>,
    pub binds: Vec<Bind>,
    pub top: Vec<TopForm>,
    /// The read data (symbols, quoted data).
    pub data: Data,
}

impl Expanded {
    pub fn node(&self, id: CoreId) -> &Core {
        &self.nodes[id as usize]
    }
}
