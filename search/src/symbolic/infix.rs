//! A fitted program as an equation: a string `sympy.sympify` reads, and LaTeX.
//!
//! Only programs that are one arithmetic expression have an equation: numbers, inputs, the
//! fitted parameters (written as their values), `+ - * /`, `pow`/`expt`, `square` and the
//! one-argument functions in [`FUNCTIONS`]. Anything else (`let`, loops, closures, a name sympy
//! cannot read) has none. Subterms without inputs are folded into numbers first, computed as
//! the dialect computes them. The sympy string keeps every digit; LaTeX rounds to four
//! significant digits.
//!
//! The dialect clamps the operands of `sqrt` and `log` at 1e-8; the equation writes the plain
//! functions, which agree with the program wherever the operand (an expression of the inputs)
//! stays above 1e-8.

use crate::symbolic::expr::Expr;
use crate::symbolic::snap;
use std::collections::BTreeMap;

/// One-argument functions: (dialect name, sympy name, LaTeX command).
const FUNCTIONS: &[(&str, &str, &str)] = &[
    ("exp", "exp", "\\exp"),
    ("log", "log", "\\log"),
    ("sqrt", "sqrt", "\\sqrt"),
    ("sin", "sin", "\\sin"),
    ("cos", "cos", "\\cos"),
    ("tan", "tan", "\\tan"),
    ("tanh", "tanh", "\\tanh"),
    ("sinh", "sinh", "\\sinh"),
    ("cosh", "cosh", "\\cosh"),
    ("asin", "asin", "\\arcsin"),
    ("acos", "acos", "\\arccos"),
    ("atan", "atan", "\\arctan"),
    ("abs", "Abs", ""),
];

/// Largest program turned into an equation (nodes).
pub(crate) const MAX_NODES: usize = 4096;

/// Binding strength, loosest first.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Level {
    Sum,
    Product,
    Power,
    Atom,
}

/// A fitted program in infix form.
#[derive(Clone, Debug)]
pub struct Equation(Expr);

impl Equation {
    /// The equation of `src` with `params` written as their values, or `None`.
    pub fn of(src: &str, params: &BTreeMap<String, f64>) -> Option<Equation> {
        let mut e = Expr::parse(src, MAX_NODES).ok()?;
        if params.values().any(|v| !v.is_finite()) {
            return None;
        }
        for (name, &v) in params {
            e.substitute(name, v);
        }
        fold(&mut e);
        // A dry run in each form: `None` if any node has no infix form.
        let eq = Equation(e);
        sympy(&eq.0)?;
        Some(eq)
    }

    pub fn sympy(&self) -> String {
        sympy(&self.0).map(|(s, _)| s).unwrap_or_default()
    }

    pub fn latex(&self) -> String {
        latex(&self.0).map(|(s, _)| s).unwrap_or_default()
    }
}

/// Folds every subterm without inputs into its value, computed as the dialect does (`sqrt` and
/// `log` clamp their operand at 1e-8), so that `(sqrt (- a))` with `a > 0` becomes the number
/// the program used rather than an imaginary one.
fn fold(e: &mut Expr) {
    let Expr::List(items) = e else { return };
    items.iter_mut().skip(1).for_each(fold);
    let Some((Expr::Sym(head), args)) = items.split_first() else {
        return;
    };
    let xs: Option<Vec<f64>> = args
        .iter()
        .map(|a| match a {
            Expr::Num(x) => Some(*x),
            _ => None,
        })
        .collect();
    let Some(xs) = xs else { return };
    let clamp = |x: f64| x.max(1e-8);
    let v = match (head.as_str(), xs.as_slice()) {
        ("+", _) => xs.iter().sum(),
        ("*", _) => xs.iter().product(),
        ("-", [x]) => -x,
        ("-", [x, rest @ ..]) => rest.iter().fold(*x, |a, b| a - b),
        ("/", [x]) => 1.0 / x,
        ("/", [x, rest @ ..]) => rest.iter().fold(*x, |a, b| a / b),
        ("exp", [x]) => x.exp(),
        ("log", [x]) => clamp(*x).ln(),
        ("sqrt", [x]) => clamp(*x).sqrt(),
        ("sin", [x]) => x.sin(),
        ("cos", [x]) => x.cos(),
        ("tan", [x]) => x.tan(),
        ("tanh", [x]) => x.tanh(),
        ("sinh", [x]) => x.sinh(),
        ("cosh", [x]) => x.cosh(),
        ("atan", [x]) => x.atan(),
        ("abs", [x]) => x.abs(),
        ("square", [x]) => x * x,
        ("pow" | "expt", [x, y]) => x.powf(*y),
        _ => return,
    };
    if v.is_finite() {
        *e = Expr::Num(v);
    }
}

/// Whether sympy reads `name` as one symbol (names it gives a meaning, such as `S` or `E`,
/// need `sympify(s, locals={...})`, as the Python package's `sympy()` does).
fn plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `(head, args)` of a call.
fn call(e: &Expr) -> Option<(&str, &[Expr])> {
    match e {
        Expr::List(items) => match items.split_first() {
            Some((Expr::Sym(h), args)) => Some((h.as_str(), args)),
            _ => None,
        },
        _ => None,
    }
}

fn wrap((s, level): (String, Level), at_least: Level, open: &str, close: &str) -> String {
    if level >= at_least {
        s
    } else {
        format!("{open}{s}{close}")
    }
}

/// `a + b + …` (`plus`) or `a - b - …`, each operand printed by `part`.
fn sum(
    args: &[Expr],
    plus: bool,
    part: impl Fn(&Expr, Level) -> Option<String> + Copy,
) -> Option<(String, Level)> {
    let (a, rest) = args.split_first()?;
    let mut s = part(a, Level::Sum)?;
    for b in rest {
        s = signed(s, b, plus, part)?;
    }
    Some((s, Level::Sum))
}

/// `a*b*…`, or in LaTeX `a b …` (with `\cdot` before a factor that starts with a digit, so
/// that two numbers do not run together).
fn product(
    args: &[Expr],
    latex: bool,
    part: impl Fn(&Expr, Level) -> Option<String>,
) -> Option<(String, Level)> {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        let p = part(a, Level::Product)?;
        if i > 0 {
            let digit = p.starts_with(|c: char| c.is_ascii_digit());
            s.push_str(match (latex, digit) {
                (false, _) => "*",
                (true, true) => " \\cdot ",
                (true, false) => " ",
            });
        }
        s.push_str(&p);
    }
    Some((s, Level::Product))
}

/// `s + b` (`plus`) or `s - b`, with a negative number's sign folded into the operator.
fn signed(
    s: String,
    b: &Expr,
    plus: bool,
    part: impl Fn(&Expr, Level) -> Option<String>,
) -> Option<String> {
    let (plus, b) = match b {
        Expr::Num(x) if *x < 0.0 => (!plus, Expr::Num(-x)),
        _ => (plus, b.clone()),
    };
    let b = part(&b, if plus { Level::Sum } else { Level::Product })?;
    Some(format!("{s} {} {b}", if plus { '+' } else { '-' }))
}

fn sympy(e: &Expr) -> Option<(String, Level)> {
    let part = |e: &Expr, at: Level| sympy(e).map(|p| wrap(p, at, "(", ")"));
    match e {
        Expr::Num(x) if x.is_finite() => {
            // A literal a snap proposed (`pi/2`, `1/3`) prints exactly.
            if let Some((s, _)) = snap::name(*x) {
                let level = if *x < 0.0 { Level::Sum } else { Level::Product };
                return Some((s, level));
            }
            // Whole numbers print as integers: sympy reads `y**2`, not `y**2.0`, as a square.
            let s = if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", *x as i64)
            } else {
                format!("{x:?}")
            };
            let level = if *x < 0.0 { Level::Sum } else { Level::Atom };
            Some((s, level))
        }
        Expr::Sym(s) if plain_name(s) => Some((s.clone(), Level::Atom)),
        _ => {
            let (head, args) = call(e)?;
            match (head, args) {
                ("+", [_, ..]) => sum(args, true, part),
                ("-", [a]) => Some((format!("-{}", part(a, Level::Product)?), Level::Sum)),
                ("-", _) => sum(args, false, part),
                ("*", [_, ..]) => product(args, false, part),
                ("/", [a]) => Some((format!("1/{}", part(a, Level::Power)?), Level::Product)),
                ("/", [a, rest @ ..]) => {
                    let mut s = part(a, Level::Product)?;
                    for b in rest {
                        s = format!("{s}/{}", part(b, Level::Power)?);
                    }
                    Some((s, Level::Product))
                }
                ("pow" | "expt", [a, b]) => Some((
                    format!("{}**{}", part(a, Level::Atom)?, part(b, Level::Atom)?),
                    Level::Power,
                )),
                ("square", [a]) => Some((format!("{}**2", part(a, Level::Atom)?), Level::Power)),
                (f, [a]) => {
                    let (_, name, _) = FUNCTIONS.iter().find(|(n, _, _)| *n == f)?;
                    Some((format!("{name}({})", sympy(a)?.0), Level::Atom))
                }
                _ => None,
            }
        }
    }
}

/// `x` to four significant digits, without a trailing `.0000`.
fn number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor();
    if !(-3.0..5.0).contains(&mag) {
        let m = x / 10f64.powf(mag);
        return format!("{m:.3} \\times 10^{{{mag}}}");
    }
    let decimals = (3.0 - mag).max(0.0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn latex(e: &Expr) -> Option<(String, Level)> {
    let part = |e: &Expr, at: Level| latex(e).map(|p| wrap(p, at, "\\left(", "\\right)"));
    match e {
        Expr::Num(x) => {
            let level = if *x < 0.0 { Level::Sum } else { Level::Atom };
            match snap::name(*x) {
                Some((_, latex)) => Some((latex, level)),
                None => Some((number(*x), level)),
            }
        }
        Expr::Sym(s) => {
            let name = match s.split_at(1) {
                (h, t) if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) => {
                    format!("{h}_{{{t}}}")
                }
                _ => s.clone(),
            };
            Some((name, Level::Atom))
        }
        _ => {
            let (head, args) = call(e)?;
            match (head, args) {
                ("+", [_, ..]) => sum(args, true, part),
                ("-", [a]) => Some((format!("-{}", part(a, Level::Product)?), Level::Sum)),
                ("-", _) => sum(args, false, part),
                ("*", [_, ..]) => product(args, true, part),
                ("/", [a]) => Some((format!("\\frac{{1}}{{{}}}", latex(a)?.0), Level::Atom)),
                ("/", [a, rest @ ..]) => {
                    let mut s = latex(a)?.0;
                    for b in rest {
                        s = format!("\\frac{{{s}}}{{{}}}", latex(b)?.0);
                    }
                    Some((s, Level::Atom))
                }
                ("pow" | "expt", [a, b]) => Some((
                    format!("{}^{{{}}}", part(a, Level::Atom)?, latex(b)?.0),
                    Level::Power,
                )),
                ("square", [a]) => Some((format!("{}^{{2}}", part(a, Level::Atom)?), Level::Power)),
                ("sqrt", [a]) => Some((format!("\\sqrt{{{}}}", latex(a)?.0), Level::Atom)),
                ("abs", [a]) => Some((format!("\\left|{}\\right|", latex(a)?.0), Level::Atom)),
                (f, [a]) => {
                    let (_, _, cmd) = FUNCTIONS.iter().find(|(n, _, _)| *n == f)?;
                    Some((
                        format!("{cmd}{{\\left({}\\right)}}", latex(a)?.0),
                        Level::Atom,
                    ))
                }
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(src: &str, params: &[(&str, f64)]) -> Option<Equation> {
        let p = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Equation::of(src, &p)
    }

    #[test]
    fn fitted_programs_print_as_sympy_and_latex() {
        let e = eq("(/ (* a S) (+ S b))", &[("a", 2.313), ("b", 0.702)]).expect("an equation");
        assert_eq!(e.sympy(), "2.313*S/(S + 0.702)");
        assert_eq!(e.latex(), "\\frac{2.313 S}{S + 0.702}");
        let e = eq("(* a (exp (- 0 (* k t))))", &[("a", -1.5), ("k", 0.25)]).expect("an equation");
        assert_eq!(e.sympy(), "(-1.5)*exp(0 - 0.25*t)");
        assert_eq!(
            e.latex(),
            "\\left(-1.5\\right) \\exp{\\left(0 - 0.25 t\\right)}"
        );
        // Constant subterms fold, with the dialect's clamp: sqrt(-0.37) is 1e-4 there.
        let e = eq(
            "(* z (cos (sqrt (- a))) (/ b (* c 2)))",
            &[("a", 0.37), ("b", 3.0), ("c", 0.5)],
        )
        .expect("an equation");
        assert_eq!(e.sympy(), format!("z*{:?}*3", 1e-4f64.cos()));
        let e = eq("(/ S (- S c))", &[("c", -0.7)]).expect("an equation");
        assert_eq!(e.sympy(), "S/(S + 0.7)");
        assert_eq!(e.latex(), "\\frac{S}{S + 0.7}");
        let e = eq("(- x (pow y 2))", &[]).expect("an equation");
        assert_eq!(e.sympy(), "x - y**2");
        let e = eq("(* G (/ m1 (square r)))", &[("G", 6.674e-11)]).expect("an equation");
        assert_eq!(e.sympy(), "6.674e-11*m1/r**2");
        assert_eq!(e.latex(), "6.674 \\times 10^{-11} \\frac{m_{1}}{r^{2}}");
    }

    #[test]
    fn programs_that_are_not_one_expression_have_none() {
        assert!(eq("(let ((y x)) y)", &[]).is_none());
        assert!(eq("(f x)", &[]).is_none());
        assert!(eq("(* a x)", &[("a", f64::NAN)]).is_none());
        assert!(eq("(+ x-1 y)", &[]).is_none(), "not a name sympy reads");
    }
}
