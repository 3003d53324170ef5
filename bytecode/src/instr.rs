//! The instruction set.
//!
//! A stack machine over engine values. The reference's fifteen instructions (`PUSH LOAD ADD SUB
//! MUL DIV NEG EXP LOG SIN COS DUP LOOP BRANCH DOT`) plus what real models need: locals
//! (`GET`/`SET`), `POP`/`SWAP`, comparisons and `NOT`, calls into any engine primitive by name
//! (`CALL`), a per-lane conditional (`IF`/`ELSE`/`END`), a per-lane loop exit (`EXITIF`), an
//! unconditional `JUMP` and `RET`. Operands that name things (inputs, locals, callees) are
//! indices into the [`crate::Code`]'s tables; jump targets are instruction indices.

use serde::{Deserialize, Serialize};

/// A numeric literal, correctly rounded to both precisions (as the dialect's reader does, so
/// the two clients start from the same bits).
/// In the JSON form a non-finite value is the string `"nan"`, `"inf"` or `"-inf"` (JSON has no
/// such numbers: they were once written as `null`, which no reader accepted).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Number {
    #[serde(with = "json_f64")]
    pub value: f64,
    /// The literal rounded to `f32` from its text (defaults to `value` rounded to `f32`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "json_f32")]
    pub f32: Option<f32>,
}

/// A number of the JSON form: itself when finite, else `"nan"`, `"inf"` or `"-inf"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum JsonNumber {
    Finite(f64),
    Named(String),
}

impl JsonNumber {
    fn of(x: f64) -> JsonNumber {
        match x {
            x if x.is_finite() => JsonNumber::Finite(x),
            x if x.is_nan() => JsonNumber::Named("nan".into()),
            x if x > 0.0 => JsonNumber::Named("inf".into()),
            _ => JsonNumber::Named("-inf".into()),
        }
    }

    fn value<E: serde::de::Error>(self) -> Result<f64, E> {
        match self {
            JsonNumber::Finite(x) => Ok(x),
            JsonNumber::Named(s) => match s.as_str() {
                "nan" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                _ => Err(E::custom(format!(
                    "`{s}` is not a number (non-finite values are \"nan\", \"inf\", \"-inf\")"
                ))),
            },
        }
    }
}

mod json_f64 {
    use super::JsonNumber;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        JsonNumber::of(*x).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        JsonNumber::deserialize(d)?.value()
    }
}

mod json_f32 {
    use super::JsonNumber;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(x: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
        x.map(|x| JsonNumber::of(f64::from(x))).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
        Option::<JsonNumber>::deserialize(d)?
            .map(|n| n.value().map(|x: f64| x as f32))
            .transpose()
    }
}

impl Number {
    /// Parses a literal the way the dialect's reader does.
    pub fn parse(text: &str) -> Option<Number> {
        let l = ndvm_engine::syntax::reader::parse_number(text)?;
        Some(Number::from(l))
    }

    pub fn literal(self) -> ndvm_engine::syntax::reader::Literal {
        ndvm_engine::syntax::reader::Literal {
            f64: self.value,
            f32: self.f32.unwrap_or(self.value as f32),
        }
    }
}

impl From<ndvm_engine::syntax::reader::Literal> for Number {
    fn from(l: ndvm_engine::syntax::reader::Literal) -> Number {
        Number {
            value: l.f64,
            f32: Some(l.f32),
        }
    }
}

/// One instruction. Stack effects are written `(before -- after)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Instr {
    /// `( -- c)` a constant.
    Push {
        #[serde(flatten)]
        value: Number,
    },
    /// `( -- x)` the input with this index.
    Load {
        input: u32,
    },
    /// `( -- x)` a local's value.
    Get {
        local: u32,
    },
    /// `(x -- )` sets a local.
    Set {
        local: u32,
    },
    /// `(x -- x x)`
    Dup,
    /// `(x -- )`
    Pop,
    /// `(x y -- y x)`
    Swap,
    /// `(x y -- x+y)`; the arithmetic and `DOT` work on numbers and tensors as the dialect's
    /// `+ - * / dot` do.
    Add,
    Sub,
    Mul,
    Div,
    /// `(x -- -x)`
    Neg,
    Exp,
    Log,
    Sin,
    Cos,
    /// `(u v -- u·v)`
    Dot,
    /// `(x y -- x<y)` a boolean per lane; likewise `LE GT GE EQ`.
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    /// `(b -- not b)`
    Not,
    /// `(x1 … xn -- f(x1, …, xn))` callee `callee` (an index into the code's callee table).
    Call {
        callee: u32,
        argc: u32,
    },
    /// `(b -- )` runs the then-arm in the lanes where `b` holds and the else-arm in the others;
    /// lanes that disagree are masked and merged at `END` exactly as the walk's `if`.
    If,
    Else,
    /// Ends an `IF` or a `LOOP` block.
    End,
    /// A counted loop: the body up to its `END` runs `count` times (`None`: the count is
    /// popped, `(n -- )`, and must be the same in every lane).
    Loop {
        count: Option<u32>,
    },
    /// `(b -- )` in a loop body: the lanes where `b` holds leave the loop (their locals are
    /// kept and merged when the loop ends); the others go on.
    ExitIf,
    /// Continues at `target`.
    Jump {
        target: u32,
    },
    /// `(b -- )` continues at `target` when `b` holds; `b` must be the same in every active lane
    /// (a data-independent branch; `IF` is the per-lane one).
    Branch {
        target: u32,
    },
    /// `(x -- )` the program's result.
    Ret,
}

impl Instr {
    /// The assembly mnemonic.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Instr::Push { .. } => "PUSH",
            Instr::Load { .. } => "LOAD",
            Instr::Get { .. } => "GET",
            Instr::Set { .. } => "SET",
            Instr::Dup => "DUP",
            Instr::Pop => "POP",
            Instr::Swap => "SWAP",
            Instr::Add => "ADD",
            Instr::Sub => "SUB",
            Instr::Mul => "MUL",
            Instr::Div => "DIV",
            Instr::Neg => "NEG",
            Instr::Exp => "EXP",
            Instr::Log => "LOG",
            Instr::Sin => "SIN",
            Instr::Cos => "COS",
            Instr::Dot => "DOT",
            Instr::Lt => "LT",
            Instr::Le => "LE",
            Instr::Gt => "GT",
            Instr::Ge => "GE",
            Instr::Eq => "EQ",
            Instr::Not => "NOT",
            Instr::Call { .. } => "CALL",
            Instr::If => "IF",
            Instr::Else => "ELSE",
            Instr::End => "END",
            Instr::Loop { .. } => "LOOP",
            Instr::ExitIf => "EXITIF",
            Instr::Jump { .. } => "JUMP",
            Instr::Branch { .. } => "BRANCH",
            Instr::Ret => "RET",
        }
    }

    /// The operator-only instructions by mnemonic (those without operands).
    pub fn plain(mnemonic: &str) -> Option<Instr> {
        Some(match mnemonic {
            "DUP" => Instr::Dup,
            "POP" => Instr::Pop,
            "SWAP" => Instr::Swap,
            "ADD" => Instr::Add,
            "SUB" => Instr::Sub,
            "MUL" => Instr::Mul,
            "DIV" => Instr::Div,
            "NEG" => Instr::Neg,
            "EXP" => Instr::Exp,
            "LOG" => Instr::Log,
            "SIN" => Instr::Sin,
            "COS" => Instr::Cos,
            "DOT" => Instr::Dot,
            "LT" => Instr::Lt,
            "LE" => Instr::Le,
            "GT" => Instr::Gt,
            "GE" => Instr::Ge,
            "EQ" => Instr::Eq,
            "NOT" => Instr::Not,
            "IF" => Instr::If,
            "ELSE" => Instr::Else,
            "END" => Instr::End,
            "EXITIF" => Instr::ExitIf,
            "RET" => Instr::Ret,
            _ => return None,
        })
    }

    /// Values popped and pushed.
    pub fn effect(&self) -> (u32, u32) {
        match self {
            Instr::Push { .. } | Instr::Load { .. } | Instr::Get { .. } => (0, 1),
            Instr::Set { .. } | Instr::Pop | Instr::If | Instr::ExitIf | Instr::Branch { .. } => {
                (1, 0)
            }
            Instr::Ret => (1, 0),
            Instr::Dup => (1, 2),
            Instr::Swap => (2, 2),
            Instr::Add
            | Instr::Sub
            | Instr::Mul
            | Instr::Div
            | Instr::Dot
            | Instr::Lt
            | Instr::Le
            | Instr::Gt
            | Instr::Ge
            | Instr::Eq => (2, 1),
            Instr::Neg | Instr::Exp | Instr::Log | Instr::Sin | Instr::Cos | Instr::Not => (1, 1),
            Instr::Call { argc, .. } => (*argc, 1),
            Instr::Loop { count: None } => (1, 0),
            Instr::Loop { .. } | Instr::Else | Instr::End | Instr::Jump { .. } => (0, 0),
        }
    }

    /// The engine primitive an operator instruction applies.
    pub fn primitive(&self) -> Option<ndvm_engine::prims::Prim> {
        use ndvm_engine::prims::Prim;
        Some(match self {
            Instr::Add => Prim::Add,
            Instr::Sub | Instr::Neg => Prim::Sub,
            Instr::Mul => Prim::Mul,
            Instr::Div => Prim::Div,
            Instr::Exp => Prim::Exp,
            Instr::Log => Prim::Log,
            Instr::Sin => Prim::Sin,
            Instr::Cos => Prim::Cos,
            Instr::Dot => Prim::Dot,
            Instr::Lt => Prim::Lt,
            Instr::Le => Prim::Le,
            Instr::Gt => Prim::Gt,
            Instr::Ge => Prim::Ge,
            Instr::Eq => Prim::NumEq,
            Instr::Not => Prim::Not,
            _ => return None,
        })
    }
}
