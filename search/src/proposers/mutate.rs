//! Structural mutations of small programs, for the evolutionary proposer.
//!
//! A mutation picks a *position* — a subtree that is a numeric expression, found by
//! [`positions`] — and rewrites it: wraps it in an operator with a new term, inserts or drops a
//! unary primitive, swaps an operator, replaces it with a random term, scales or shifts it by a
//! new parameter, hoists one of its operands, or splices in a subtree of another candidate. A
//! whole program can also be wrapped in a counted `loop` (a recurrence `s ← f(s, x)`).
//!
//! New parameters are written `?` ([`FRESH`]); [`normalize`] names them. Loop counters and the
//! forms around them (`(= k 10)`, `(+ k 1)`) are never touched, so a mutated loop still ends.

use crate::symbolic::expr::Expr;
use rand::Rng;
use rand::seq::IndexedRandom;

/// A parameter still to be named.
pub const FRESH: &str = "?";

/// What a mutation may build with.
#[derive(Clone, Debug)]
pub struct Grammar {
    /// Variables (data columns).
    pub inputs: Vec<String>,
    pub unary: Vec<String>,
    pub binary: Vec<String>,
    /// Iteration counts of loop wrappers (empty: no loops).
    pub loop_steps: Vec<u32>,
}

/// Forms whose insides are not mutated (their parts are not plain numeric expressions).
const OPAQUE: [&str; 6] = ["lambda", "define", "quote", "cond", "case", "begin"];

/// Paths of the subtrees that are numeric expressions a mutation may rewrite, root first.
pub fn positions(e: &Expr) -> Vec<Vec<usize>> {
    let mut frozen = Vec::new();
    counters(e, &mut frozen);
    let mut out = Vec::new();
    collect(e, &mut Vec::new(), &frozen, &mut out);
    out
}

/// Loop variables that start at an integer literal: counters.
fn counters(e: &Expr, out: &mut Vec<String>) {
    if let Expr::List(items) = e {
        if e.head() == Some("loop")
            && let Some(Expr::List(bindings)) = items.get(1)
        {
            for b in bindings {
                if let Expr::List(pair) = b
                    && let [Expr::Sym(name), Expr::Num(x)] = &pair[..]
                    && x.fract() == 0.0
                {
                    out.push(name.clone());
                }
            }
        }
        items.iter().for_each(|i| counters(i, out));
    }
}

fn collect(e: &Expr, path: &mut Vec<usize>, frozen: &[String], out: &mut Vec<Vec<usize>>) {
    let free = !frozen.iter().any(|f| e.mentions(f));
    let Expr::List(items) = e else {
        if free && !matches!(e, Expr::Bool(_)) {
            out.push(path.clone());
        }
        return;
    };
    let visit = |i: usize, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>| {
        path.push(i);
        collect(&items[i], path, frozen, out);
        path.pop();
    };
    match e.head() {
        Some("loop" | "let" | "let*") => {
            if free {
                out.push(path.clone());
            }
            if let Some(Expr::List(bindings)) = items.get(1) {
                for (j, b) in bindings.iter().enumerate() {
                    if let Expr::List(pair) = b
                        && pair.len() == 2
                    {
                        path.extend([1, j]);
                        visit_inner(&pair[1], 1, path, frozen, out);
                        path.truncate(path.len() - 2);
                    }
                }
            }
            (2..items.len()).for_each(|i| visit(i, path, out));
        }
        Some("if") => {
            if free {
                out.push(path.clone());
            }
            (2..items.len()).for_each(|i| visit(i, path, out));
        }
        Some("recur") => (1..items.len()).for_each(|i| visit(i, path, out)),
        Some(h) if OPAQUE.contains(&h) => {}
        Some(_) => {
            if free {
                out.push(path.clone());
            }
            (1..items.len()).for_each(|i| visit(i, path, out));
        }
        None => {}
    }
}

fn visit_inner(
    e: &Expr,
    i: usize,
    path: &mut Vec<usize>,
    frozen: &[String],
    out: &mut Vec<Vec<usize>>,
) {
    path.push(i);
    collect(e, path, frozen, out);
    path.pop();
}

impl Grammar {
    fn fresh() -> Expr {
        Expr::sym(FRESH)
    }

    /// A leaf: an input, a scaled input, or a parameter.
    pub fn leaf(&self, rng: &mut impl Rng) -> Expr {
        match (self.inputs.choose(rng), rng.random_range(0..10)) {
            (Some(v), 0..=4) => Expr::sym(v),
            (Some(v), 5..=7) => Expr::call("*", [Grammar::fresh(), Expr::sym(v)]),
            _ => Grammar::fresh(),
        }
    }

    /// A random term of at most `depth` levels.
    pub fn term(&self, depth: u32, rng: &mut impl Rng) -> Expr {
        if depth == 0 || rng.random_bool(0.3) {
            return self.leaf(rng);
        }
        match (self.unary.choose(rng), rng.random_range(0..10)) {
            (Some(u), 0..=2) => Expr::call(u, [self.term(depth - 1, rng)]),
            _ => {
                let op = self.binary.choose(rng).map_or("+", String::as_str);
                Expr::call(op, [self.term(depth - 1, rng), self.term(depth - 1, rng)])
            }
        }
    }

    /// One mutation of `parent` (with `donor` and its parameters for crossover); `None` if the
    /// chosen mutation does not apply.
    pub fn mutate(
        &self,
        parent: &Expr,
        (donor, donor_params): (&Expr, &[String]),
        rng: &mut impl Rng,
    ) -> Option<Expr> {
        let spots = positions(parent);
        let path = spots.choose(rng)?.clone();
        let here = parent.at(&path)?.clone();
        let mut child = parent.clone();
        let new = match rng.random_range(0..100) {
            // Combine with a new term: (op here t) or (op t here).
            0..=29 => {
                let op = self.binary.choose(rng)?;
                let t = self.leaf(rng);
                if rng.random_bool(0.75) {
                    Expr::call(op, [here, t])
                } else {
                    Expr::call(op, [t, here])
                }
            }
            // Insert a unary primitive around the subtree as it is, scaled, or scaled and
            // shifted (`(sqrt (+ (* a x) b))`: `√(1 − β²)` is one step from `β²`).
            30..=44 => {
                let u = self.unary.choose(rng)?;
                let inner = match rng.random_range(0..10) {
                    0..=3 => here,
                    4..=6 => Expr::call("*", [Grammar::fresh(), here]),
                    _ => Expr::call(
                        "+",
                        [Expr::call("*", [Grammar::fresh(), here]), Grammar::fresh()],
                    ),
                };
                Expr::call(u, [inner])
            }
            // Drop a unary primitive.
            45..=51 => match &here {
                Expr::List(items) if items.len() == 2 && here.head().is_some() => items[1].clone(),
                _ => return None,
            },
            // Swap an operator for another of the same arity.
            52..=61 => {
                let Expr::List(mut items) = here.clone() else {
                    return None;
                };
                let head = here.head()?;
                let pool = if self.unary.iter().any(|u| u == head) {
                    &self.unary
                } else if self.binary.iter().any(|b| b == head) {
                    &self.binary
                } else {
                    return None;
                };
                items[0] = Expr::sym(pool.choose(rng)?);
                Expr::List(items)
            }
            // Replace with a random term.
            62..=71 => self.term(2, rng),
            // A new parameter: scale or shift, or a literal becomes a parameter.
            72..=81 => match here {
                Expr::Num(_) => Grammar::fresh(),
                _ if rng.random_bool(0.5) => Expr::call("*", [Grammar::fresh(), here]),
                _ => Expr::call("+", [here, Grammar::fresh()]),
            },
            // Hoist an operand.
            82..=89 => match &here {
                Expr::List(items) if items.len() >= 3 && here.head().is_some() => {
                    items[1..].choose(rng)?.clone()
                }
                _ => return None,
            },
            // Splice in a subtree of another candidate (its parameters become new ones).
            90..=95 => {
                let spots = positions(donor);
                graft(donor.at(spots.choose(rng)?)?, donor_params)
            }
            // Wrap the whole program in a counted loop.
            _ => return self.wrap_in_loop(parent, &spots, rng),
        };
        child.replace(&path, new);
        Some(child)
    }

    /// `(loop ((s init) (k 0)) (if (= k N) s (recur body (+ k 1))))`: the subtree at a random
    /// position becomes the initial state `init` and is replaced by `s` in `body`.
    fn wrap_in_loop(&self, e: &Expr, spots: &[Vec<usize>], rng: &mut impl Rng) -> Option<Expr> {
        let n = *self.loop_steps.choose(rng)?;
        if e.mentions("loop") || spots.len() < 2 {
            return None;
        }
        let path = spots[1..].choose(rng)?;
        let init = e.at(path)?.clone();
        let (s, k) = (unused(e, "s"), unused(e, "k"));
        let mut body = e.clone();
        body.replace(path, Expr::sym(&s));
        Some(Expr::call(
            "loop",
            [
                Expr::List(vec![
                    Expr::List(vec![Expr::sym(&s), init]),
                    Expr::List(vec![Expr::sym(&k), Expr::Num(0.0)]),
                ]),
                Expr::call(
                    "if",
                    [
                        Expr::call("=", [Expr::sym(&k), Expr::Num(f64::from(n))]),
                        Expr::sym(&s),
                        Expr::call(
                            "recur",
                            [body, Expr::call("+", [Expr::sym(&k), Expr::Num(1.0)])],
                        ),
                    ],
                ),
            ],
        ))
    }
}

/// A copy of `e`, a part of another program, with that program's parameters `params` made
/// new ones (`?`): a graft shares no constant with the program it joins.
pub fn graft(e: &Expr, params: &[String]) -> Expr {
    let mut out = e.clone();
    out.rename(&mut |s: &str| params.iter().any(|p| p == s).then(|| FRESH.to_string()));
    out
}

/// Families of functions that do not nest within themselves unless a search allows it.
const FAMILIES: [&[&str]; 2] = [&["exp", "log"], &["sin", "cos", "tan"]];

/// Whether `e` has a function inside another of its family (`(exp (* a (log x)))`,
/// `(cos (sin x))`): what `Evolve(nested: false)` keeps out of its mutations.
pub fn nests(e: &Expr) -> bool {
    fn walk(e: &Expr, inside: &mut [bool; 2]) -> bool {
        let Expr::List(items) = e else {
            return false;
        };
        let family = e
            .head()
            .and_then(|h| FAMILIES.iter().position(|f| f.contains(&h)));
        if let Some(f) = family {
            if inside[f] {
                return true;
            }
            inside[f] = true;
        }
        let found = items.iter().skip(1).any(|i| walk(i, inside));
        if let Some(f) = family {
            inside[f] = false;
        }
        found
    }
    walk(e, &mut [false; 2])
}

/// `base`, or `base2`, `base3`, … — the first name `e` does not mention.
fn unused(e: &Expr, base: &str) -> String {
    (1..)
        .map(|i| {
            if i == 1 {
                base.to_string()
            } else {
                format!("{base}{i}")
            }
        })
        .find(|n| !e.mentions(n))
        .unwrap_or_else(|| base.to_string())
}

/// Names the parameters of `e` from `pool` in order of first appearance: every `?` gets a new
/// name, every name in `params` is renamed consistently. Returns the parameter list, or `None`
/// when the pool runs out.
pub fn normalize(e: &mut Expr, params: &[String], pool: &[String]) -> Option<Vec<String>> {
    let mut named: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    let mut short = false;
    e.rename(&mut |s: &str| {
        let fresh = s == FRESH;
        if !fresh && !params.iter().any(|p| p == s) {
            return None;
        }
        if !fresh && let Some((_, n)) = named.iter().find(|(old, _)| old == s) {
            return Some(n.clone());
        }
        let Some(n) = pool.get(out.len()) else {
            short = true;
            return None;
        };
        out.push(n.clone());
        if !fresh {
            named.push((s.to_string(), n.clone()));
        }
        Some(n.clone())
    });
    (!short).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn parse(s: &str) -> Expr {
        Expr::parse(s, 200).expect("tree")
    }

    #[test]
    fn loop_counters_and_their_tests_are_never_positions() {
        let e = parse("(loop ((s (* c x)) (k 0)) (if (= k 10) s (recur (+ (* a s) b) (+ k 1))))");
        let texts: Vec<String> = positions(&e)
            .iter()
            .map(|p| e.at(p).expect("path").to_string())
            .collect();
        assert!(texts.contains(&"(* c x)".to_string()), "{texts:?}");
        assert!(texts.contains(&"(+ (* a s) b)".to_string()), "{texts:?}");
        for t in &texts {
            assert!(!t.contains('k') && !t.contains("10"), "{t} in {texts:?}");
        }
    }

    #[test]
    fn normalize_names_parameters_in_order_of_appearance() {
        let mut e = parse("(+ (* ? x) (* b (exp ?)) b)");
        let pool: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let params = normalize(&mut e, &["b".to_string()], &pool).expect("names");
        assert_eq!(params, ["a", "b", "c"]);
        assert_eq!(e.to_string(), "(+ (* a x) (* b (exp c)) b)");
        let mut big = parse("(+ ? ? ? ? ?)");
        assert_eq!(normalize(&mut big, &[], &pool), None);
    }

    #[test]
    fn mutations_keep_programs_well_formed() {
        let g = Grammar {
            inputs: vec!["x".into(), "y".into()],
            unary: ["exp", "sin", "sqrt"].map(String::from).to_vec(),
            binary: ["+", "-", "*", "/"].map(String::from).to_vec(),
            loop_steps: vec![8],
        };
        let parent = parse("(* a (exp (* b x)))");
        let donor = parse("(sin (* c y))");
        let donor = (&donor, &["c".to_string()][..]);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut kinds = std::collections::BTreeSet::new();
        for _ in 0..500 {
            if let Some(child) = g.mutate(&parent, donor, &mut rng) {
                let text = child.to_string();
                assert!(ndvm_engine::syntax::reader::read(&text).is_ok(), "{text}");
                kinds.insert(child.head().unwrap_or("atom").to_string());
            }
        }
        assert!(kinds.contains("loop") && kinds.len() >= 5, "{kinds:?}");
    }

    #[test]
    fn a_function_nests_only_inside_another_family() {
        for nested in [
            "(exp (* a (exp x)))",
            "(log (+ 1 (exp x)))",
            "(cos (* a (sin x)))",
            "(sin (+ x (* b (tan (sqrt y)))))",
        ] {
            assert!(nests(&parse(nested)), "{nested}");
        }
        for flat in [
            "(/ m (cos (/ v c)))",
            "(exp (sin x))",
            "(+ (exp x) (log y))",
            "(asin (* n (sin t)))",
            "(sqrt (sqrt x))",
            "(log (cos (* a x)))",
        ] {
            assert!(!nests(&parse(flat)), "{flat}");
        }
    }

    #[test]
    fn an_inserted_function_can_shift_its_argument() {
        let g = Grammar {
            inputs: vec!["v".into()],
            unary: vec!["sqrt".into()],
            binary: vec!["*".into()],
            loop_steps: Vec::new(),
        };
        let parent = parse("(square v)");
        let donor = parse("v");
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let want = "(sqrt (+ (* ? (square v)) ?))";
        let found = (0..2000)
            .filter_map(|_| g.mutate(&parent, (&donor, &[]), &mut rng))
            .any(|c| c.to_string() == want);
        assert!(found, "no mutation built {want}");
    }
}
