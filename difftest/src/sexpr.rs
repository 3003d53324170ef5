//! S-expression trees: what the generator builds, the minimizer shrinks and the oracle reads.
//!
//! This reader is deliberately separate from the engine's (which has spans, arenas and the full
//! token grammar): the oracle must share no code with what it checks. It reads the subset the
//! generator writes — lists, `[a b]` vector brackets, numbers, symbols, `#t`/`#f`, `'` quote and
//! `;` comments.

use std::fmt;

/// A datum: an atom (number, symbol or boolean, kept as its text) or a list.
#[derive(Clone, Debug, PartialEq)]
pub enum Sx {
    Atom(String),
    List(Vec<Sx>),
}

impl Sx {
    /// An atom.
    pub fn atom(text: impl Into<String>) -> Sx {
        Sx::Atom(text.into())
    }

    /// A number literal, written with at most four decimals (so the text is exact to read back).
    pub fn num(x: f64) -> Sx {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0');
        let s = if s.ends_with('.') {
            format!("{s}0")
        } else {
            s.to_string()
        };
        Sx::Atom(if s == "-0.0" { "0.0".into() } else { s })
    }

    /// A call or special form: `(head args…)`.
    pub fn call(head: &str, args: impl IntoIterator<Item = Sx>) -> Sx {
        let mut v = vec![Sx::atom(head)];
        v.extend(args);
        Sx::List(v)
    }

    /// Number of nodes, atoms and lists alike.
    pub fn size(&self) -> usize {
        match self {
            Sx::Atom(_) => 1,
            Sx::List(xs) => 1 + xs.iter().map(Sx::size).sum::<usize>(),
        }
    }
}

impl fmt::Display for Sx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sx::Atom(a) => f.write_str(a),
            Sx::List(xs) => {
                f.write_str("(")?;
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Writes a whole program: its top-level forms on separate lines.
pub fn program_text(forms: &[Sx]) -> String {
    forms
        .iter()
        .map(Sx::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads every top-level datum of `src`. `[a b]` reads as `(vec a b)` and `'d` as `(quote d)`.
pub fn read(src: &str) -> Result<Vec<Sx>, String> {
    let tokens = tokenize(src);
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < tokens.len() {
        out.push(datum(&tokens, &mut pos, 0)?);
    }
    Ok(out)
}

fn tokenize(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = src.chars();
    while let Some(c) = chars.next() {
        let delimiter = matches!(c, '(' | ')' | '[' | ']' | '\'') || c.is_whitespace();
        if (delimiter || c == ';') && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if c == ';' {
            for d in chars.by_ref() {
                if d == '\n' {
                    break;
                }
            }
        } else if delimiter {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn datum(tokens: &[String], pos: &mut usize, depth: usize) -> Result<Sx, String> {
    if depth > 200 {
        return Err("nesting too deep for the oracle".into());
    }
    let tok = tokens.get(*pos).ok_or("unexpected end of input")?;
    *pos += 1;
    match tok.as_str() {
        "(" | "[" => {
            let close = if tok == "(" { ")" } else { "]" };
            let mut items = if tok == "[" {
                vec![Sx::atom("vec")]
            } else {
                Vec::new()
            };
            loop {
                match tokens.get(*pos).map(String::as_str) {
                    None => return Err("unclosed list".into()),
                    Some(t) if t == close => {
                        *pos += 1;
                        return Ok(Sx::List(items));
                    }
                    Some(")" | "]") => return Err("mismatched bracket".into()),
                    Some(_) => items.push(datum(tokens, pos, depth + 1)?),
                }
            }
        }
        ")" | "]" => Err("unexpected close bracket".into()),
        "'" => Ok(Sx::call("quote", [datum(tokens, pos, depth + 1)?])),
        _ => Ok(Sx::Atom(tok.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes() {
        let src = "(define (f x) (+ x 1.5)) ; comment\n(f [1 -2.0 p0]) '(a b)";
        let forms = read(src).expect("read");
        assert_eq!(forms.len(), 3);
        assert_eq!(forms[1].to_string(), "(f (vec 1 -2.0 p0))");
        assert_eq!(forms[2].to_string(), "(quote (a b))");
        assert_eq!(read(&program_text(&forms)).expect("reread"), forms);
        assert!(read("(a b").is_err());
        assert!(read("(a ]").is_err());
    }

    #[test]
    fn numbers_print_exactly() {
        assert_eq!(Sx::num(1.25).to_string(), "1.25");
        assert_eq!(Sx::num(-3.0).to_string(), "-3.0");
        assert_eq!(Sx::num(0.12345).to_string(), "0.1235");
        assert_eq!(Sx::num(-0.00001).to_string(), "0.0");
    }
}
