//! The binary (`.nbcb`) and JSON forms of bytecode.
//!
//! Both carry the name tables and the instructions, not the source: when one is read, a
//! listing ([`crate::asm::listing`]) becomes its source text, so errors point at a line of the
//! listing that names the instruction.
//!
//! **JSON**: `{"format": "ndvm-bytecode", "version": 1, "inputs": […], "locals": […],
//! "callees": […], "code": [{"op": "load", "input": 0}, {"op": "push", "value": 2.5}, …]}` —
//! one object per instruction, `op` the lower-case mnemonic and the operands as named in
//! [`Instr`] (`push` may carry `f32`, the literal rounded to single precision from its text).
//!
//! **Binary**, little-endian: the magic `NBC1`; three string tables (inputs, locals, callees),
//! each a `u32` count of (`u32` byte length, UTF-8 bytes); a `u32` instruction count; then per
//! instruction a `u8` opcode (the position of its mnemonic in [`OPCODES`]) and its operands:
//! `PUSH` `f64` + `f32`; `LOAD GET SET JUMP BRANCH` one `u32`; `CALL` callee `u32` + count
//! `u32`; `LOOP` a `u8` flag (1: a count follows) and the `u32` count.

use crate::asm::listing;
use crate::code::{Code, Parts};
use crate::instr::{Instr, Number};
use ndvm_engine::error::{Error, ErrorKind, Result};
use ndvm_engine::extension::Registry;
use serde::{Deserialize, Serialize};

/// Mnemonics in opcode order.
pub const OPCODES: [&str; 32] = [
    "PUSH", "LOAD", "GET", "SET", "DUP", "POP", "SWAP", "ADD", "SUB", "MUL", "DIV", "NEG", "EXP",
    "LOG", "SIN", "COS", "DOT", "LT", "LE", "GT", "GE", "EQ", "NOT", "CALL", "IF", "ELSE", "END",
    "LOOP", "EXITIF", "JUMP", "BRANCH", "RET",
];

const MAGIC: &[u8; 4] = b"NBC1";

#[derive(Serialize, Deserialize)]
struct Json {
    format: String,
    version: u32,
    #[serde(default)]
    inputs: Vec<String>,
    #[serde(default)]
    locals: Vec<String>,
    #[serde(default)]
    callees: Vec<String>,
    code: Vec<Instr>,
}

fn bad(msg: String) -> Error {
    Error::unlocated(ErrorKind::Syntax, msg)
}

/// Fills a read stream's source and spans with its listing, and links it. An error found
/// while linking (the verifier's) is located in that listing, which the caller does not have
/// (it holds the file's bytes or JSON): the error names the listing's line and text instead of
/// a span, so no excerpt of raw bytes or of unrelated JSON is shown.
fn link_listed(mut parts: Parts, registry: &Registry) -> Result<Code> {
    let (text, spans) = listing(&parts);
    parts.source = text.clone();
    parts.spans = spans;
    Code::link(parts, registry).map_err(|mut e| {
        if let Some(span) = e.span.take() {
            let (line, _) = span.line_col(&text);
            let shown = text
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or("")
                .trim();
            e.message = format!("{} (at `{shown}`, line {line} of the listing)", e.message);
        }
        e
    })
}

impl Code {
    /// The JSON form.
    pub fn to_json(&self) -> String {
        let j = Json {
            format: "ndvm-bytecode".into(),
            version: 1,
            inputs: self.parts.inputs.clone(),
            locals: self.parts.locals.clone(),
            callees: self.parts.callees.clone(),
            code: self.parts.instrs.clone(),
        };
        serde_json::to_string_pretty(&j).unwrap_or_default()
    }

    /// Reads the JSON form.
    pub fn from_json(text: &str, registry: &Registry) -> Result<Code> {
        let j: Json = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "not ndvm bytecode JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if j.format != "ndvm-bytecode" || j.version != 1 {
            return Err(bad(format!(
                "unsupported bytecode format `{}` version {} (expected `ndvm-bytecode` 1)",
                j.format, j.version
            )));
        }
        let parts = Parts {
            instrs: j.code,
            inputs: j.inputs,
            locals: j.locals,
            callees: j.callees,
            ..Parts::default()
        };
        link_listed(parts, registry)
    }

    /// The binary form.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let u32le = |out: &mut Vec<u8>, x: u32| out.extend_from_slice(&x.to_le_bytes());
        for table in [&self.parts.inputs, &self.parts.locals, &self.parts.callees] {
            u32le(&mut out, table.len() as u32);
            for s in table {
                u32le(&mut out, s.len() as u32);
                out.extend_from_slice(s.as_bytes());
            }
        }
        u32le(&mut out, self.parts.instrs.len() as u32);
        for ins in &self.parts.instrs {
            let op = OPCODES
                .iter()
                .position(|m| *m == ins.mnemonic())
                .unwrap_or(0);
            out.push(op as u8);
            match *ins {
                Instr::Push { value } => {
                    out.extend_from_slice(&value.value.to_le_bytes());
                    out.extend_from_slice(&value.literal().f32.to_le_bytes());
                }
                Instr::Load { input: x }
                | Instr::Get { local: x }
                | Instr::Set { local: x }
                | Instr::Jump { target: x }
                | Instr::Branch { target: x } => u32le(&mut out, x),
                Instr::Call { callee, argc } => {
                    u32le(&mut out, callee);
                    u32le(&mut out, argc);
                }
                Instr::Loop { count } => {
                    out.push(count.is_some() as u8);
                    if let Some(n) = count {
                        u32le(&mut out, n);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Reads the binary form; a truncated or malformed stream is an error naming the byte.
    pub fn from_binary(bytes: &[u8], registry: &Registry) -> Result<Code> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(4, "the magic")? != MAGIC {
            return Err(bad(
                "not ndvm bytecode: the file does not start with `NBC1`".into(),
            ));
        }
        let mut tables: [Vec<String>; 3] = Default::default();
        for (table, what) in tables.iter_mut().zip(["input", "local", "callee"]) {
            let n = r.count(4, what)?;
            for _ in 0..n {
                let len = r.u32(what)? as usize;
                let at = r.pos;
                let s = std::str::from_utf8(r.take(len, what)?)
                    .map_err(|_| bad(format!("the {what} name at byte {at} is not UTF-8")))?;
                table.push(s.to_string());
            }
        }
        let n = r.count(1, "instruction")?;
        let mut instrs = Vec::with_capacity(n);
        for i in 0..n {
            let at = r.pos;
            let op = r.take(1, "an opcode")?[0];
            let Some(&m) = OPCODES.get(op as usize) else {
                return Err(bad(format!(
                    "unknown opcode {op:#04x} at byte {at} (instruction {i})"
                )));
            };
            let ins = match m {
                "PUSH" => {
                    let value = f64::from_le_bytes(r.array("a PUSH value")?);
                    let f32 = f32::from_le_bytes(r.array("a PUSH value")?);
                    Instr::Push {
                        value: Number {
                            value,
                            f32: Some(f32),
                        },
                    }
                }
                "LOAD" => Instr::Load {
                    input: r.u32("an input")?,
                },
                "GET" => Instr::Get {
                    local: r.u32("a local")?,
                },
                "SET" => Instr::Set {
                    local: r.u32("a local")?,
                },
                "JUMP" => Instr::Jump {
                    target: r.u32("a target")?,
                },
                "BRANCH" => Instr::Branch {
                    target: r.u32("a target")?,
                },
                "CALL" => Instr::Call {
                    callee: r.u32("a callee")?,
                    argc: r.u32("an operand count")?,
                },
                "LOOP" => match r.take(1, "a LOOP flag")?[0] {
                    0 => Instr::Loop { count: None },
                    1 => Instr::Loop {
                        count: Some(r.u32("a LOOP count")?),
                    },
                    f => return Err(bad(format!("bad LOOP flag {f} at byte {}", r.pos - 1))),
                },
                other => Instr::plain(other).unwrap_or(Instr::Ret),
            };
            instrs.push(ins);
        }
        if r.pos != bytes.len() {
            return Err(bad(format!(
                "{} unexpected bytes after the last instruction (byte {})",
                bytes.len() - r.pos,
                r.pos
            )));
        }
        let [inputs, locals, callees] = tables;
        let parts = Parts {
            instrs,
            inputs,
            locals,
            callees,
            ..Parts::default()
        };
        link_listed(parts, registry)
    }
}

/// A cursor over a binary stream.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(bad(format!(
                "truncated at byte {}: expected {what} ({n} bytes, {} left)",
                self.pos,
                self.bytes.len() - self.pos
            )));
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A count of items at least `min` bytes each (so a corrupt count cannot ask for more
    /// memory than the stream could hold).
    fn count(&mut self, min: usize, what: &str) -> Result<usize> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        let left = self.bytes.len() - self.pos;
        if n.saturating_mul(min) > left {
            return Err(bad(format!(
                "the {what} count {n} at byte {at} is larger than the rest of the stream"
            )));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use crate::asm::assemble;
    use crate::code::Code;
    use crate::instr::Instr;
    use ndvm_engine::extension::Registry;

    /// Non-finite constants survive the JSON form (they were written as `null`, which no reader
    /// accepted) and the binary form, bit for bit but for NaN's payload.
    #[test]
    fn non_finite_constants_round_trip_through_json_and_binary() {
        let src = "PUSH nan\nPUSH inf\nADD\nPUSH -inf\nADD\nPUSH 1.5\nADD\nRET\n";
        let code = assemble(src, &[], &Registry::default()).expect("assembles");
        let json = code.to_json();
        assert!(
            json.contains("\"value\": \"nan\"") && json.contains("\"-inf\""),
            "{json}"
        );
        let back = Code::from_json(&json, &Registry::default()).expect("reads back");
        let bin = Code::from_binary(&code.to_binary(), &Registry::default()).expect("binary");
        let pushes = |c: &Code| -> Vec<(f64, Option<f32>)> {
            c.parts
                .instrs
                .iter()
                .filter_map(|i| match i {
                    Instr::Push { value } => Some((value.value, value.f32)),
                    _ => None,
                })
                .collect()
        };
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        for other in [pushes(&back), pushes(&bin)] {
            for (a, b) in pushes(&code).into_iter().zip(&other) {
                assert!(same(a.0, b.0), "{a:?} vs {b:?}");
                let (fa, fb) = (a.1.map_or(0.0, f64::from), b.1.map_or(0.0, f64::from));
                assert!(same(fa, fb), "{a:?} vs {b:?}");
            }
        }
        let bad = json.replacen("\"nan\"", "\"nope\"", 1);
        let e = Code::from_json(&bad, &Registry::default()).expect_err("refused");
        assert!(
            e.message.contains("`nope` is not a number"),
            "{}",
            e.message
        );
    }
}
