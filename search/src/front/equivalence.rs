//! Skeletons equal up to their constants, decided by equality saturation (the `egg` crate).
//!
//! Two skeletons are *equivalent* when they describe the same family of functions as their
//! parameters range over the reals (every `P` a constant of its own): `(/ (* P S) (+ (* P S) P))` and `(/ (* P S) (+ S P))` are
//! both Michaelis–Menten (divide through by the second `P`). Every skeleton of a front goes into
//! one e-graph, the rewrites below run to a fixed node and iteration budget (never a clock, so
//! the grouping is the same on every machine), and skeletons that end in one e-class are one
//! law.
//!
//! Literals (`C`) count as parameters here, as SRBench's "equal up to constants" does. The
//! rewrites hold for the families, not for fixed values: a subterm of parameters alone is one
//! parameter (`(* P P)` → `P`, `(exp P)` → `P`); `P·(x + x)` and `P·x + x` are a scaled `x`; a
//! parameter factors out of a sum of a scaled term and a parameter (`P·x + P` → `P·(x + P)`);
//! signs and reciprocals fold into a parameter beside them (`P − x` is `−(x + P)`); with commutativity, associativity,
//! `a/b = a·b⁻¹`, `square x = x·x`, `x − x = 0`, `x/x = 1`, `log(exp x) = x` and `exp(log x) = x`. Ranges (`exp P > 0`,
//! `log` of a negative) and zero divisors are ignored: a cheap, documented approximation. What
//! the budget does not reach is left ungrouped: a missed equivalence shows as two front
//! entries.

use crate::symbolic::expr::Expr;
use egg::{
    Analysis, ConditionalApplier, DidMerge, EGraph, Id, Pattern, RecExpr, Rewrite, Runner, Subst,
    SymbolLang, Var,
};
use std::time::Duration;

/// Largest skeleton (in atoms) put into the e-graph.
pub const MAX_ATOMS: usize = 64;
/// E-graph nodes and iterations the rewrites may use.
const NODE_LIMIT: usize = 20_000;
const ITER_LIMIT: usize = 12;

type Rule = Rewrite<SymbolLang, Free>;

/// The rewrites as (name, left, right); `<=>` pairs are listed both ways.
const RULES: &[(&str, &str, &str)] = &[
    ("add-comm", "(+ ?a ?b)", "(+ ?b ?a)"),
    ("mul-comm", "(* ?a ?b)", "(* ?b ?a)"),
    ("add-assoc", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"),
    ("add-assoc-rev", "(+ (+ ?a ?b) ?c)", "(+ ?a (+ ?b ?c))"),
    ("mul-assoc", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"),
    ("mul-assoc-rev", "(* (* ?a ?b) ?c)", "(* ?a (* ?b ?c))"),
    ("sub", "(- ?a ?b)", "(+ ?a (neg ?b))"),
    ("unary-minus", "(- ?a)", "(neg ?a)"),
    ("div", "(/ ?a ?b)", "(* ?a (inv ?b))"),
    ("reciprocal", "(/ ?a)", "(inv ?a)"),
    ("inv-mul", "(inv (* ?a ?b))", "(* (inv ?a) (inv ?b))"),
    ("inv-inv", "(inv (inv ?a))", "?a"),
    ("neg-neg", "(neg (neg ?a))", "?a"),
    ("neg-add", "(neg (+ ?a ?b))", "(+ (neg ?a) (neg ?b))"),
    ("neg-mul", "(* ?a (neg ?b))", "(neg (* ?a ?b))"),
    ("neg-inv", "(inv (neg ?a))", "(neg (inv ?a))"),
    ("sub-from-param", "(+ P (neg ?a))", "(neg (+ P ?a))"),
    ("add-zero", "(+ ?a 0)", "?a"),
    ("mul-one", "(* ?a 1)", "?a"),
    ("log-exp", "(log (exp ?a))", "?a"),
    ("square-scaled", "(square (* P ?a))", "(* P (square ?a))"),
    ("square-neg", "(square ?a)", "(square (neg ?a))"),
    ("exp-log", "(exp (log ?a))", "?a"),
    ("neg-scaled", "(neg (* P ?a))", "(* P ?a)"),
    ("scaled-neg", "(* P (neg ?a))", "(* P ?a)"),
    ("factor-param", "(+ (* P ?x) P)", "(* P (+ ?x P))"),
    ("factor-param-rev", "(* P (+ ?x P))", "(+ (* P ?x) P)"),
    (
        "factor-scaled",
        "(+ (* P ?x) (* P ?y))",
        "(* P (+ ?x (* P ?y)))",
    ),
    (
        "factor-scaled-rev",
        "(* P (+ ?x (* P ?y)))",
        "(+ (* P ?x) (* P ?y))",
    ),
];

/// Rewrites that repeat `?a`: they hold only where `?a` has no free constant. Two occurrences
/// of one e-class are two independent members of its family — `sin(P·x) + sin(P·x)` is not
/// `P·sin(P·x)` — but a term without `P` is one function. (`x + x` alone is not `P·x`: one
/// function is not a family; under a free scale it is.)
const WITHOUT_CONSTANTS: &[(&str, &str, &str)] = &[
    ("double", "(* P (+ ?a ?a))", "(* P ?a)"),
    ("absorb", "(+ (* P ?a) ?a)", "(* P ?a)"),
    ("cancel", "(+ ?a (neg ?a))", "0"),
    ("ratio", "(* ?a (inv ?a))", "1"),
    ("square", "(square ?a)", "(* ?a ?a)"),
    ("square-rev", "(* ?a ?a)", "(square ?a)"),
];

/// What an e-class's family depends on: a free constant (some member mentions `P`), and the
/// inputs (every member mentions one; a member without any makes the family constant).
#[derive(Debug, Default)]
pub struct Free;

/// [`Free`]'s facts about a class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    constant: bool,
    input: bool,
}

impl Analysis<SymbolLang> for Free {
    type Data = Facts;

    fn make(egraph: &mut EGraph<SymbolLang, Self>, enode: &SymbolLang) -> Facts {
        let op = enode.op.as_str();
        let children = || enode.children.iter().map(|&c| egraph[c].data);
        Facts {
            constant: op == "P" || children().any(|f| f.constant),
            input: op.starts_with('$') || children().any(|f| f.input),
        }
    }

    fn merge(&mut self, a: &mut Facts, b: Facts) -> DidMerge {
        let before = *a;
        a.constant |= b.constant;
        a.input &= b.input;
        DidMerge(*a != before, a.constant != b.constant || a.input != b.input)
    }

    /// A term of constants with a free one among them is one free constant: `(* 2 P)`,
    /// `(exp P)`, `(sin (+ P 1))` are all `P`.
    fn modify(egraph: &mut EGraph<SymbolLang, Self>, id: Id) {
        let f = egraph[id].data;
        if f.constant && !f.input {
            let p = egraph.add(SymbolLang::leaf("P"));
            egraph.union(id, p);
        }
    }
}

fn rules() -> Vec<Rule> {
    let parse = |l: &str, r: &str| -> Option<(Pattern<SymbolLang>, Pattern<SymbolLang>)> {
        Some((l.parse().ok()?, r.parse().ok()?))
    };
    let plain = RULES.iter().filter_map(|(name, l, r)| {
        let (l, r) = parse(l, r)?;
        Rewrite::new(*name, l, r).ok()
    });
    let a: Option<Var> = "?a".parse().ok();
    let guarded = WITHOUT_CONSTANTS.iter().filter_map(move |(name, l, r)| {
        let (l, r) = parse(l, r)?;
        let a = a?;
        let condition = move |eg: &mut EGraph<SymbolLang, Free>, _: Id, s: &Subst| {
            s.get(a).is_some_and(|&c| !eg[c].data.constant)
        };
        Rewrite::new(
            *name,
            l,
            ConditionalApplier {
                condition,
                applier: r,
            },
        )
        .ok()
    });
    plain.chain(guarded).collect()
}

/// The e-class of each program after saturation (`None`: too big or not an expression).
#[derive(Debug)]
pub struct Classes {
    ids: Vec<Option<Id>>,
}

impl Classes {
    /// The classes of `programs`, each its source and the names of its fitted constants.
    pub fn of(programs: &[(&str, &[String])]) -> Classes {
        let mut egraph: EGraph<SymbolLang, Free> = EGraph::new(Free);
        let mut ids: Vec<Option<Id>> = programs
            .iter()
            .map(|(src, params)| expression(src, params).map(|e| egraph.add_expr(&e)))
            .collect();
        if ids.iter().flatten().count() > 1 {
            let runner = Runner::default()
                .with_egraph(egraph)
                .with_node_limit(NODE_LIMIT)
                .with_iter_limit(ITER_LIMIT)
                .with_time_limit(Duration::from_secs(86_400))
                .run(&rules());
            for id in ids.iter_mut().flatten() {
                *id = runner.egraph.find(*id);
            }
        }
        Classes { ids }
    }

    /// `n` skeletons left ungrouped (no class each).
    pub fn apart(n: usize) -> Classes {
        Classes { ids: vec![None; n] }
    }

    /// The class of the `i`-th skeleton.
    pub fn class(&self, i: usize) -> Option<Id> {
        self.ids.get(i).copied().flatten()
    }
}

/// The program as an egg expression — its constants `P`, its inputs `$name` (so that an input
/// called `P` stays an input), each literal its own atom `#value` — or `None` when it is too
/// big or not one arithmetic expression.
fn expression(src: &str, params: &[String]) -> Option<RecExpr<SymbolLang>> {
    let e = Expr::parse(src, 2 * MAX_ATOMS).ok()?;
    let mut out = String::new();
    write(&e, params, &mut out)?;
    out.parse().ok()
}

fn write(e: &Expr, params: &[String], out: &mut String) -> Option<()> {
    match e {
        Expr::Num(x) if x.is_finite() => out.push_str(&format!("#{x:?}")),
        Expr::Sym(s) if params.contains(s) => out.push('P'),
        Expr::Sym(s) => {
            out.push('$');
            out.push_str(s);
        }
        Expr::List(items) => {
            let (Expr::Sym(head), args) = items.split_first()? else {
                return None;
            };
            if args.is_empty() {
                return None;
            }
            out.push('(');
            out.push_str(head);
            for a in args {
                out.push(' ');
                write(a, params, out)?;
            }
            out.push(')');
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two programs whose constants are all named `P` share a class.
    fn same(a: &str, b: &str) -> bool {
        let p = ["P".to_string()];
        let c = Classes::of(&[(a, &p), (b, &p)]);
        c.class(0).is_some() && c.class(0) == c.class(1)
    }

    #[test]
    fn every_rule_parses() {
        assert_eq!(rules().len(), RULES.len() + WITHOUT_CONSTANTS.len());
    }

    #[test]
    fn equal_laws_up_to_constants_share_a_class() {
        // Michaelis–Menten, divided through by a parameter.
        assert!(same("(/ (* P S) (+ (* P S) P))", "(/ (* P S) (+ S P))"));
        assert!(same("(/ (* P S) (+ S P))", "(/ S (+ (* P S) P))"));
        // S/(a − S)/b with a < 0: the sign comes out of the difference into the scale.
        assert!(same("(/ (/ S (- P S)) P)", "(/ (* P S) (+ P S))"));
        assert!(
            !same("(/ S (- P S))", "(/ S (+ P S))"),
            "no free scale takes the sign"
        );
        assert!(
            !same("(/ (* P S) (+ S P))", "(/ S (+ P S))"),
            "no free scale"
        );
        // Commuted and regrouped products; a literal beside a free constant is absorbed.
        assert!(same(
            "(/ (* P (* m1 m2)) (* r r))",
            "(* (/ m2 (* r r)) (* m1 (* 2.0 P)))"
        ));
        assert!(same("(- P (* P x))", "(+ (* x P) P)"));
        assert!(same("(* P (exp (* P P)))", "P"));
        // A scaled x plus x is a scaled x; sin of a constant is a constant.
        assert!(same(
            "(/ x0 (+ (* P x0) (+ (sin P) x0)))",
            "(/ x0 (* P (- x0 P)))"
        ));
        // Terms without constants cancel; x/x is 1; log∘exp.
        assert!(same("(cos (/ theta (* P theta)))", "P"));
        assert!(same(
            "(sqrt (exp (- (+ theta P) (+ (* (log (exp theta)) theta) theta))))",
            "(sqrt (exp (- P (* theta theta))))"
        ));
        // x + x under a free scale is a scaled x.
        assert!(same(
            "(/ (+ x0 x0) (+ (/ P (* P P)) (* P x0)))",
            "(/ (* P x0) (+ P x0))"
        ));
        // `square` is a product of a term with itself; a free scale comes out of it.
        assert!(same(
            "(sqrt (+ (square (- x1 x2)) (square (- y1 y2))))",
            "(sqrt (+ (* (- y2 y1) (- y2 y1)) (* (- x2 x1) (- x2 x1))))"
        ));
        assert!(same(
            "(exp (square (/ theta (* P s))))",
            "(exp (* P (* theta (/ theta (* s s)))))"
        ));
    }

    #[test]
    fn different_laws_stay_apart() {
        // Two members of one family are not one function: no constant collapses to zero, and
        // repeated terms with constants in them are not rescaled.
        assert!(!same("(+ (* P x) (- P (* P x)))", "P"));
        assert!(!same("(* P x)", "x"));
        assert!(!same(
            "(+ (sin (* P x)) (sin (* P x)))",
            "(* P (sin (* P x)))"
        ));
        assert!(!same(
            "(+ (* P (sin (* P x))) (sin (* P x)))",
            "(* P (sin (* P x)))"
        ));
        assert!(!same("(exp (* P x))", "P"));
        assert!(!same("(/ (* P S) (+ S P))", "(/ (* P S) (+ (* S S) P))"));
        assert!(!same("(* P x)", "(* P y)"));
        assert!(!same("(+ P (* P x))", "(* P x)"));
        assert!(!same("(exp (* P x))", "(* P (exp x))"));
        assert!(!same("(- P x)", "(+ P x)"));
        // The square of a term with a constant in it is not a product of two of its members.
        assert!(!same(
            "(square (sin (* P x)))",
            "(* (sin (* P x)) (sin (* P x)))"
        ));
    }

    #[test]
    fn programs_that_are_not_expressions_have_no_class() {
        let p = ["P".to_string()];
        let c = Classes::of(&[("(let ((y x)) y)", &p), ("(* P x)", &p)]);
        assert_eq!(c.class(0), None);
        assert!(c.class(1).is_some());
    }

    #[test]
    fn inputs_and_literals_are_not_free_constants() {
        // An input called `C` or `P` is an input (Feynman I.25.13 is q/C).
        let a = ["a".to_string()];
        let c = Classes::of(&[
            ("(/ (* a q) C)", &a),
            ("(* a q)", &a),
            ("(* a (/ q P))", &a),
        ]);
        assert_ne!(c.class(0), c.class(1));
        assert_ne!(c.class(2), c.class(1));
        // A literal is its value: x² is not x³, 2x is not a·x; beside a constant it is absorbed.
        assert!(!same("(pow x 2)", "(pow x 3)"));
        assert!(!same("(* 2 x)", "(* P x)"));
        assert!(same("(* P (* 2 x))", "(* P x)"));
        assert!(same("(pow x 2)", "(pow x 2.0)"));
    }
}
