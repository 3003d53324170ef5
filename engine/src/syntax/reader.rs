//! The reader: source text to data with spans (docs/language-reference.md §2).
//!
//! It is iterative (an explicit stack, no host recursion) and writes every datum into one flat
//! arena, so arbitrarily nested input can neither overflow the host stack nor be slow to drop.
//! Nesting deeper than [`MAX_NESTING`] is a syntax error.

use super::symbols::{Sym, Symbols};
use crate::error::{Error, Result, Span};

/// The deepest list nesting the reader accepts.
pub const MAX_NESTING: usize = 10_000;

/// A numeric literal, correctly rounded to both precisions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Literal {
    pub f32: f32,
    pub f64: f64,
}

/// Index of a datum in [`Data`].
pub type DatumId = u32;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DatumKind {
    Num(Literal),
    Bool(bool),
    Sym(Sym),
    /// A list; its elements are `kids[start .. start + len]`.
    List {
        start: u32,
        len: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Datum {
    pub kind: DatumKind,
    pub span: Span,
}

/// The data read from one source text.
#[derive(Clone, Debug, Default)]
pub struct Data {
    pub items: Vec<Datum>,
    pub kids: Vec<DatumId>,
    pub symbols: Symbols,
    /// The top-level data, in order.
    pub top: Vec<DatumId>,
}

impl Data {
    pub fn get(&self, id: DatumId) -> &Datum {
        &self.items[id as usize]
    }

    /// The elements of a list datum (empty for atoms).
    pub fn list(&self, id: DatumId) -> &[DatumId] {
        match self.items[id as usize].kind {
            DatumKind::List { start, len } => &self.kids[start as usize..(start + len) as usize],
            _ => &[],
        }
    }

    pub fn is_list(&self, id: DatumId) -> bool {
        matches!(self.items[id as usize].kind, DatumKind::List { .. })
    }

    pub fn sym(&self, id: DatumId) -> Option<Sym> {
        match self.items[id as usize].kind {
            DatumKind::Sym(s) => Some(s),
            _ => None,
        }
    }

    fn push(&mut self, kind: DatumKind, span: Span) -> DatumId {
        self.items.push(Datum { kind, span });
        (self.items.len() - 1) as DatumId
    }
}

enum Open {
    /// An open list: its closer, where it started, where its elements start on `pending`.
    List {
        closer: u8,
        start: u32,
        first: usize,
        bracket: bool,
    },
    /// A `'` waiting for its datum.
    Quote { start: u32 },
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'\''
            | b';'
            | b'`'
            | b','
            | b'"'
    )
}

/// Reads a whole source text.
pub fn read(src: &str) -> Result<Data> {
    if src.len() >= u32::MAX as usize {
        return Err(Error::syntax("program text too large", Span::new(0, 0)));
    }
    let bytes = src.as_bytes();
    // About one datum per four bytes of source, reserved instead of grown (up to 64 Ki: a
    // large text grows as it reads).
    let guess = (src.len() / 4).min(1 << 16);
    let mut data = Data::default();
    data.items.reserve(guess);
    data.kids.reserve(guess);
    // The expander's keywords and a program's names.
    data.symbols.reserve(32 + guess / 16);
    let mut stack: Vec<Open> = Vec::new();
    let mut pending: Vec<DatumId> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        let at = i as u32;
        let done: Option<DatumId>;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b';' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'(' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Error::syntax(
                        format!("lists nested deeper than {MAX_NESTING} levels"),
                        Span::new(at, at + 1),
                    ));
                }
                let bracket = c == b'[';
                let first = pending.len();
                if bracket {
                    let vec = data.symbols.intern_static("vec");
                    let id = data.push(DatumKind::Sym(vec), Span::new(at, at + 1));
                    pending.push(id);
                }
                stack.push(Open::List {
                    closer: if bracket { b']' } else { b')' },
                    start: at,
                    first,
                    bracket,
                });
                i += 1;
                continue;
            }
            b')' | b']' => match stack.pop() {
                Some(Open::List {
                    closer,
                    start,
                    first,
                    bracket,
                }) => {
                    if closer != c {
                        let open = if bracket { '[' } else { '(' };
                        return Err(Error::syntax(
                            format!("`{}` closes a list opened with `{open}`", c as char),
                            Span::new(at, at + 1),
                        ));
                    }
                    depth -= 1;
                    let kstart = data.kids.len() as u32;
                    let len = (pending.len() - first) as u32;
                    data.kids.extend(pending.drain(first..));
                    done = Some(data.push(
                        DatumKind::List { start: kstart, len },
                        Span::new(start, at + 1),
                    ));
                    i += 1;
                }
                Some(Open::Quote { start }) => {
                    return Err(Error::syntax(
                        "`'` must be followed by a datum",
                        Span::new(start, start + 1),
                    ));
                }
                None => {
                    return Err(Error::syntax(
                        format!("`{}` has no matching opener", c as char),
                        Span::new(at, at + 1),
                    ));
                }
            },
            b'\'' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Error::syntax(
                        format!("data nested deeper than {MAX_NESTING} levels"),
                        Span::new(at, at + 1),
                    ));
                }
                stack.push(Open::Quote { start: at });
                i += 1;
                continue;
            }
            b'`' | b',' => {
                return Err(Error::syntax(
                    "quasiquote (`` ` ``, `,`, `,@`) is not supported",
                    Span::new(at, at + 1),
                ));
            }
            b'"' => {
                return Err(Error::syntax(
                    "strings are not supported",
                    Span::new(at, at + 1),
                ));
            }
            _ => {
                let start = i;
                while i < bytes.len() && !is_delimiter(bytes[i]) {
                    i += 1;
                }
                let span = Span::new(start as u32, i as u32);
                let tok = &src[start..i];
                let kind = atom(tok, span, &mut data.symbols)?;
                done = Some(data.push(kind, span));
            }
        }
        // A finished datum closes any quotes waiting for it, then joins its list or the top level.
        let Some(mut id) = done else { continue };
        while let Some(Open::Quote { start }) = stack.last() {
            let start = *start;
            stack.pop();
            depth -= 1;
            let quote = data.symbols.intern_static("quote");
            let q = data.push(DatumKind::Sym(quote), Span::new(start, start + 1));
            let kstart = data.kids.len() as u32;
            data.kids.extend([q, id]);
            let span = Span::new(start, data.get(id).span.end);
            id = data.push(
                DatumKind::List {
                    start: kstart,
                    len: 2,
                },
                span,
            );
        }
        if stack.is_empty() {
            data.top.push(id);
        } else {
            pending.push(id);
        }
    }
    match stack.pop() {
        Some(Open::List { start, bracket, .. }) => {
            let open = if bracket { '[' } else { '(' };
            Err(Error::syntax(
                format!("`{open}` is never closed"),
                Span::new(start, start + 1),
            ))
        }
        Some(Open::Quote { start }) => Err(Error::syntax(
            "`'` must be followed by a datum",
            Span::new(start, start + 1),
        )),
        None => Ok(data),
    }
}

fn atom(tok: &str, span: Span, symbols: &mut Symbols) -> Result<DatumKind> {
    if let Some(rest) = tok.strip_prefix('#') {
        return match rest {
            "t" | "true" => Ok(DatumKind::Bool(true)),
            "f" | "false" => Ok(DatumKind::Bool(false)),
            _ => Err(Error::syntax(
                format!("`{tok}` is not valid syntax (only #t, #true, #f, #false)"),
                span,
            )),
        };
    }
    if tok == "." {
        return Err(Error::syntax("dotted pairs are not supported", span));
    }
    if let Some(lit) = parse_number(tok) {
        return Ok(DatumKind::Num(lit));
    }
    Ok(DatumKind::Sym(symbols.intern(tok)))
}

/// Parses a token that matches the number grammar of docs/language-reference.md §2.3 in full.
pub fn parse_number(tok: &str) -> Option<Literal> {
    let (neg, body) = match tok.as_bytes().first()? {
        b'+' => (false, &tok[1..]),
        b'-' => (true, &tok[1..]),
        _ => (false, tok),
    };
    let signed = body.len() != tok.len();
    let is = |word: &str| body.eq_ignore_ascii_case(word);
    let special = if is("inf") || is("infinity") || (signed && is("inf.0")) {
        Some(f64::INFINITY)
    } else if is("nan") || (signed && is("nan.0")) {
        Some(f64::NAN)
    } else {
        None
    };
    if let Some(v) = special {
        let v = if neg { -v } else { v };
        return Some(Literal {
            f32: v as f32,
            f64: v,
        });
    }
    if !is_decimal(body.as_bytes()) {
        return None;
    }
    // Both parses are correctly rounded from the decimal text (no double rounding through f64).
    let f32v: f32 = tok.parse().ok()?;
    let f64v: f64 = tok.parse().ok()?;
    Some(Literal {
        f32: f32v,
        f64: f64v,
    })
}

/// `mantissa exponent?` with `mantissa := digits ("." digits?)? | "." digits`.
fn is_decimal(b: &[u8]) -> bool {
    let digits = |b: &[u8], mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = digits(b, 0);
    let int_digits = i;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        let j = digits(b, i + 1);
        frac_digits = j - i - 1;
        i = j;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let j = digits(b, i);
        if j == i {
            return false;
        }
        i = j;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_grammar() {
        for (t, v) in [
            ("5", 5.0),
            ("5.", 5.0),
            ("5.0", 5.0),
            (".5", 0.5),
            ("-2.5e3", -2500.0),
            ("+1E-2", 0.01),
        ] {
            assert_eq!(parse_number(t).map(|l| l.f64), Some(v), "{t}");
        }
        for t in [
            "1+", "0x10", "1_000", "1/2", "+", "-", "e5", ".", "1e", "1.2.3", "inf.0", "...", "5e+",
        ] {
            assert!(parse_number(t).is_none(), "{t} must be a symbol");
        }
        assert_eq!(parse_number("16777217").map(|l| l.f32), Some(16777216.0));
        assert_eq!(parse_number("1e39").map(|l| l.f32), Some(f32::INFINITY));
        assert_eq!(
            parse_number("-inf.0").map(|l| l.f64),
            Some(f64::NEG_INFINITY)
        );
        assert!(parse_number("NaN").is_some_and(|l| l.f32.is_nan()));
        assert_eq!(parse_number("Infinity").map(|l| l.f64), Some(f64::INFINITY));
    }

    #[test]
    fn reads_lists_quotes_and_brackets() {
        let d = read("(a [1 2] 'x) ; comment\n#true").expect("reads");
        assert_eq!(d.top.len(), 2);
        let l = d.list(d.top[0]);
        assert_eq!(l.len(), 3);
        assert_eq!(d.symbols.name(d.sym(d.list(l[1])[0]).expect("sym")), "vec");
        assert_eq!(
            d.symbols.name(d.sym(d.list(l[2])[0]).expect("sym")),
            "quote"
        );
        assert_eq!(d.get(l[2]).span, Span::new(9, 11));
        assert_eq!(d.get(d.top[1]).kind, DatumKind::Bool(true));
    }

    #[test]
    fn reader_errors_are_located() {
        for (src, at) in [
            ("(1 2]", 4),
            ("(a", 0),
            (")", 0),
            ("'", 0),
            ("(')", 1),
            ("#x10", 0),
            ("`a", 0),
            ("\"s\"", 0),
            ("(a . b)", 3),
            ("#tx", 0),
        ] {
            let e = read(src).expect_err(src);
            assert_eq!(e.span.map(|s| s.start), Some(at), "{src}: {e:?}");
        }
        let deep = "(".repeat(MAX_NESTING + 1);
        assert!(read(&deep).is_err());
    }
}
