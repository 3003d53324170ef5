//! Runtime values: a small `Copy` record `{tag, aux, slot}` (docs/architecture.md, invariant 2).
//!
//! Only numbers and per-lane booleans own payload. A number is either a **constant** — the same
//! in every lane, its bits stored inline in `aux:slot`, recording nothing — or a **lane value**
//! whose `slot` indexes the payload (lane `b` of slot `s` at `s * lanes + b`). Constants keep
//! loop counters and literals free of payload and tape; anything computed from an input is a lane
//! value. Everything else (symbols, pairs, closures, primitives) is structure and is shared by
//! every lane.

use crate::real::Real;
use bytemuck::{Pod, Zeroable};

/// Value tags.
pub mod tag {
    pub const NIL: u32 = 0;
    /// A boolean equal in every lane; `aux` is 0 or 1.
    pub const BOOL: u32 = 1;
    /// A per-lane boolean; `slot` indexes the boolean payload.
    pub const BOOLS: u32 = 2;
    /// A number equal in every lane, bits in `aux:slot` (high:low).
    pub const CONST: u32 = 3;
    /// A per-lane number; `slot` indexes the numeric payload.
    pub const NUM: u32 = 4;
    /// A matrix; `slot` is the base slot (element-major, lane-minor), `aux` the shape index.
    pub const MATRIX: u32 = 5;
    /// A vector; `slot` is the base slot (element-major, lane-minor), `aux` the length.
    pub const VECTOR: u32 = 11;
    pub const SYMBOL: u32 = 6;
    pub const PAIR: u32 = 7;
    pub const CLOSURE: u32 = 8;
    pub const PRIM: u32 = 9;
    /// The content of a variable slot before its definition has been evaluated.
    pub const UNBOUND: u32 = 10;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(C)]
pub struct Value {
    pub tag: u32,
    pub aux: u32,
    pub slot: u32,
}

impl Value {
    pub const NIL: Value = Value {
        tag: tag::NIL,
        aux: 0,
        slot: 0,
    };
    pub const TRUE: Value = Value {
        tag: tag::BOOL,
        aux: 1,
        slot: 0,
    };
    pub const FALSE: Value = Value {
        tag: tag::BOOL,
        aux: 0,
        slot: 0,
    };
    pub const UNBOUND: Value = Value {
        tag: tag::UNBOUND,
        aux: 0,
        slot: 0,
    };

    pub fn constant<R: Real>(x: R) -> Value {
        let bits = x.to_bits64();
        Value {
            tag: tag::CONST,
            aux: (bits >> 32) as u32,
            slot: bits as u32,
        }
    }

    /// The constant's number (only meaningful for `tag::CONST`).
    pub fn const_value<R: Real>(self) -> R {
        R::from_bits64(((self.aux as u64) << 32) | self.slot as u64)
    }

    pub fn lanes(slot: u32) -> Value {
        Value {
            tag: tag::NUM,
            aux: 0,
            slot,
        }
    }

    pub fn boolean(b: bool) -> Value {
        if b { Value::TRUE } else { Value::FALSE }
    }

    pub fn is_number(self) -> bool {
        self.tag == tag::CONST || self.tag == tag::NUM
    }

    pub fn is_boolean(self) -> bool {
        self.tag == tag::BOOL || self.tag == tag::BOOLS
    }

    pub fn is_tensor(self) -> bool {
        self.tag == tag::VECTOR || self.tag == tag::MATRIX
    }

    pub fn is_procedure(self) -> bool {
        self.tag == tag::CLOSURE || self.tag == tag::PRIM
    }

    /// Whether this is the constant `#f` (a per-lane boolean is never constant).
    pub fn is_false(self) -> bool {
        self.tag == tag::BOOL && self.aux == 0
    }

    /// "a number", "a pair", … for type errors.
    pub fn kind_name(self) -> &'static str {
        match self.tag {
            tag::NIL => "the empty list",
            tag::BOOL | tag::BOOLS => "a boolean",
            tag::CONST | tag::NUM => "a number",
            tag::MATRIX => "a matrix",
            tag::VECTOR => "a vector",
            tag::SYMBOL => "a symbol",
            tag::PAIR => "a pair",
            tag::CLOSURE | tag::PRIM => "a procedure",
            _ => "an undefined value",
        }
    }
}

/// A tensor's shape (docs/language-reference.md §1): a vector `[n]` or a row-major matrix `[m,n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    Vector(u32),
    Matrix(u32, u32),
}

impl Shape {
    /// The number of elements.
    pub fn len(self) -> u32 {
        match self {
            Shape::Vector(n) => n,
            Shape::Matrix(m, n) => m * n,
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Vector(n) => write!(f, "[{n}]"),
            Shape::Matrix(m, n) => write!(f, "[{m},{n}]"),
        }
    }
}
