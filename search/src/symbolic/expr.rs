//! Candidate programs as trees: skeletons for deduplication and small trees for mutation.
//!
//! A *skeleton* is a program's structure with its fitted parameters written `P` and its numeric
//! literals `C` (the shared co-search format): `(* a (exp (* b x)))` with parameters `a`, `b`
//! is `(* P (exp (* P x)))`. Two candidates with one skeleton differ only in constants, so a
//! search counts distinct structures by skeleton. Skeletons are printed from the engine's own
//! reader (one parser for the dialect) by an iterative walk, so any program the reader accepts —
//! however deep — has one, at no risk to the host stack.
//!
//! [`Expr`] is an owned tree for the evolutionary proposer; it is only built for programs of
//! bounded size ([`Expr::parse`]), so the recursive functions on it are safe.

use ndvm_engine::syntax::reader::{self, Data, DatumId, DatumKind};
use std::fmt;

/// Deepest tree [`Expr::parse`] builds.
const MAX_DEPTH: usize = 48;

/// The skeleton of `src`, whose parameters are `params`: the program with parameters as `P`,
/// numeric literals as `C`, one space between list items. `Err` carries the reader's message.
pub fn skeleton(src: &str, params: &[String]) -> Result<String, String> {
    let data = reader::read(src).map_err(|e| e.message.clone())?;
    let mut out = String::with_capacity(src.len());
    for (i, &top) in data.top.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        print_datum(&data, top, params, &mut out);
    }
    Ok(out)
}

/// Writes one datum's skeleton without recursion (an explicit stack of list positions).
fn print_datum(data: &Data, root: DatumId, params: &[String], out: &mut String) {
    // Each entry: a list's elements and the next one to print.
    let mut stack: Vec<(&[DatumId], usize)> = Vec::new();
    let mut next = Some(root);
    loop {
        if let Some(id) = next.take() {
            match data.get(id).kind {
                DatumKind::Num(_) => out.push('C'),
                DatumKind::Bool(b) => out.push_str(if b { "#t" } else { "#f" }),
                DatumKind::Sym(s) => {
                    let name = data.symbols.name(s);
                    if params.iter().any(|p| p == name) {
                        out.push('P');
                    } else {
                        out.push_str(name);
                    }
                }
                DatumKind::List { .. } => {
                    out.push('(');
                    stack.push((data.list(id), 0));
                }
            }
        }
        let Some((items, at)) = stack.last_mut() else {
            return;
        };
        if *at < items.len() {
            if *at > 0 {
                out.push(' ');
            }
            next = Some(items[*at]);
            *at += 1;
        } else {
            out.push(')');
            stack.pop();
        }
    }
}

/// A small program tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(f64),
    Bool(bool),
    Sym(String),
    List(Vec<Expr>),
}

impl Expr {
    pub fn sym(name: &str) -> Expr {
        Expr::Sym(name.to_string())
    }

    /// `(head args…)`.
    pub fn call(head: &str, args: impl IntoIterator<Item = Expr>) -> Expr {
        let mut items = vec![Expr::sym(head)];
        items.extend(args);
        Expr::List(items)
    }

    /// The tree of a one-datum program with at most `max_nodes` nodes and bounded depth, or
    /// why it is not one (unreadable, with the reader's place; several top-level forms; too
    /// big or too deep).
    pub fn parse(src: &str, max_nodes: usize) -> Result<Expr, String> {
        let data = reader::read(src).map_err(|e| match e.span {
            Some(span) => {
                let (line, col) = span.line_col(src);
                format!("line {line}, column {col}: {}", e.message)
            }
            None => e.message.clone(),
        })?;
        let top = match data.top[..] {
            [top] => top,
            [] => return Err("it is empty".into()),
            ref all => {
                return Err(format!(
                    "it has {} top-level forms, and a seed is one expression",
                    all.len()
                ));
            }
        };
        if data.items.len() > max_nodes {
            return Err(format!(
                "it has {} nodes, over the limit of {max_nodes} (`max_nodes`)",
                data.items.len()
            ));
        }
        if depth(&data, top) > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        Ok(Expr::from_datum(&data, top))
    }

    fn from_datum(data: &Data, id: DatumId) -> Expr {
        match data.get(id).kind {
            DatumKind::Num(l) => Expr::Num(l.f64),
            DatumKind::Bool(b) => Expr::Bool(b),
            DatumKind::Sym(s) => Expr::Sym(data.symbols.name(s).to_string()),
            DatumKind::List { .. } => Expr::List(
                data.list(id)
                    .iter()
                    .map(|&k| Expr::from_datum(data, k))
                    .collect(),
            ),
        }
    }

    /// Nodes in the tree (atoms and lists).
    pub fn nodes(&self) -> usize {
        match self {
            Expr::List(items) => 1 + items.iter().map(Expr::nodes).sum::<usize>(),
            _ => 1,
        }
    }

    /// The head symbol of a list.
    pub fn head(&self) -> Option<&str> {
        match self {
            Expr::List(items) => match items.first() {
                Some(Expr::Sym(s)) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `name` occurs anywhere in the tree.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Expr::Sym(s) => s == name,
            Expr::List(items) => items.iter().any(|e| e.mentions(name)),
            _ => false,
        }
    }

    /// Every symbol, in order of first appearance.
    pub fn symbols(&self, out: &mut Vec<String>) {
        match self {
            Expr::Sym(s) if !out.contains(s) => out.push(s.clone()),
            Expr::List(items) => items.iter().for_each(|e| e.symbols(out)),
            _ => {}
        }
    }

    /// The subtree at `path` (child indices from the root).
    pub fn at(&self, path: &[usize]) -> Option<&Expr> {
        path.iter().try_fold(self, |e, &i| match e {
            Expr::List(items) => items.get(i),
            _ => None,
        })
    }

    /// Replaces the subtree at `path` (which must exist) with `with`.
    pub fn replace(&mut self, path: &[usize], with: Expr) {
        let mut e = self;
        for &i in path {
            match e {
                Expr::List(items) if i < items.len() => e = &mut items[i],
                _ => return,
            }
        }
        *e = with;
    }

    /// Writes `value` for every occurrence of the symbol `name` outside a list's head.
    pub fn substitute(&mut self, name: &str, value: f64) {
        match self {
            Expr::Sym(s) if s == name => *self = Expr::Num(value),
            Expr::List(items) => items
                .iter_mut()
                .skip(1)
                .for_each(|e| e.substitute(name, value)),
            _ => {}
        }
    }

    /// Drops factors and divisors that are the literal 1: `(* 1 x)` and `(/ x 1)` become `x`.
    pub fn drop_unit_factors(&mut self) {
        let Expr::List(items) = self else {
            return;
        };
        items.iter_mut().skip(1).for_each(Expr::drop_unit_factors);
        let one = |e: &Expr| matches!(e, Expr::Num(x) if *x == 1.0);
        let kept = match (self.head(), &self.as_slice()[1..]) {
            (Some("*"), [a, b]) if one(a) => Some(b.clone()),
            (Some("*" | "/"), [a, b]) if one(b) => Some(a.clone()),
            _ => None,
        };
        if let Some(k) = kept {
            *self = k;
        }
    }

    /// Drops terms that are the literal 0: `(+ x 0)` and `(- x 0)` become `x`, a product or a
    /// quotient with a factor 0 becomes `0` (where nothing else is left of a sum, `0`).
    pub fn drop_zero_terms(&mut self) {
        let Expr::List(items) = self else {
            return;
        };
        items.iter_mut().skip(1).for_each(Expr::drop_zero_terms);
        let zero = |e: &Expr| matches!(e, Expr::Num(x) if *x == 0.0);
        let args = &self.as_slice()[1..];
        let kept = match self.head() {
            Some("*") if args.iter().any(zero) => Some(Expr::Num(0.0)),
            Some("/") if args.first().is_some_and(zero) => Some(Expr::Num(0.0)),
            Some("+") if args.iter().any(zero) => {
                let rest: Vec<Expr> = args.iter().filter(|a| !zero(a)).cloned().collect();
                Some(match rest.len() {
                    0 => Expr::Num(0.0),
                    1 => rest[0].clone(),
                    _ => Expr::call("+", rest),
                })
            }
            Some("-") if args.len() == 2 && zero(&args[1]) => Some(args[0].clone()),
            _ => None,
        };
        if let Some(k) = kept {
            *self = k;
        }
    }

    fn as_slice(&self) -> &[Expr] {
        match self {
            Expr::List(items) => items,
            _ => &[],
        }
    }

    /// Renames symbols: `rename(old)` returns the new name, or `None` to keep it.
    pub fn rename(&mut self, rename: &mut impl FnMut(&str) -> Option<String>) {
        match self {
            Expr::Sym(s) => {
                if let Some(n) = rename(s) {
                    *s = n;
                }
            }
            Expr::List(items) => items.iter_mut().for_each(|e| e.rename(rename)),
            _ => {}
        }
    }
}

/// Depth of a datum, without recursion.
fn depth(data: &Data, root: DatumId) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((id, d)) = stack.pop() {
        deepest = deepest.max(d);
        for &k in data.list(id) {
            stack.push((k, d + 1));
        }
    }
    deepest
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Num(x) => {
                if x.fract() == 0.0 && x.abs() < 1e15 {
                    write!(f, "{}", *x as i64)
                } else {
                    write!(f, "{x:?}")
                }
            }
            Expr::Bool(b) => f.write_str(if *b { "#t" } else { "#f" }),
            Expr::Sym(s) => f.write_str(s),
            Expr::List(items) => {
                f.write_str("(")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn skeletons_mask_parameters_and_literals() {
        let s = skeleton(
            "(+ c (* a (exp (- 0.0 (* b x)))))",
            &names(&["a", "b", "c"]),
        );
        assert_eq!(s.as_deref(), Ok("(+ P (* P (exp (- C (* P x)))))"));
        let s = skeleton("(if (< x 1) #t  ;comment\n a)", &names(&["a"]));
        assert_eq!(s.as_deref(), Ok("(if (< x C) #t P)"));
        assert!(skeleton("(+ 1", &[]).is_err());
    }

    #[test]
    fn a_deeply_nested_program_has_a_skeleton_and_no_tree() {
        let src = format!("{}x{}", "(- ".repeat(5000), ")".repeat(5000));
        let s = skeleton(&src, &[]).expect("skeleton");
        assert_eq!(s.len(), 5000 * 4 + 1);
        assert_eq!(
            Expr::parse(&src, usize::MAX),
            Err(format!("it nests deeper than {MAX_DEPTH} levels"))
        );
    }

    #[test]
    fn zero_terms_drop_out() {
        for (src, want) in [
            ("(+ (* a x) (* 0 x y))", "(* a x)"),
            ("(- (* a x) (/ 0 y))", "(* a x)"),
            ("(+ (* 0 x) 0 (sin x) y)", "(+ (sin x) y)"),
            ("(+ (* 0 x) 0)", "0"),
            ("(- 0 x)", "(- 0 x)"),
            ("(/ x 0)", "(/ x 0)"),
        ] {
            let mut e = Expr::parse(src, 100).expect("tree");
            e.drop_zero_terms();
            assert_eq!(e.to_string(), want, "{src}");
        }
    }

    #[test]
    fn trees_print_back_to_their_source() {
        let src = "(loop ((s (* c x)) (k 0)) (if (= k 10) s (recur (+ (* a s) 0.5) (+ k 1))))";
        let e = Expr::parse(src, 100).expect("tree");
        assert_eq!(e.to_string(), src);
        assert_eq!(e.nodes(), 32);
        assert_eq!(
            Expr::parse(src, 20),
            Err("it has 32 nodes, over the limit of 20 (`max_nodes`)".into())
        );
        assert_eq!(
            Expr::parse("(* a x", 20),
            Err("line 1, column 1: `(` is never closed".into())
        );
        assert_eq!(
            Expr::parse("(* a x) (+ b 1)", 20),
            Err("it has 2 top-level forms, and a seed is one expression".into())
        );
        assert_eq!(e.at(&[2, 1, 2]), Some(&Expr::Num(10.0)));
        let mut syms = Vec::new();
        e.symbols(&mut syms);
        assert_eq!(
            syms,
            names(&[
                "loop", "s", "*", "c", "x", "k", "if", "=", "recur", "+", "a"
            ])
        );
    }
}
