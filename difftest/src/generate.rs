//! The program generator: typed, seeded and deterministic.
//!
//! A program is built top-down from a wanted type — a number at the root, vectors and matrices
//! of small shapes below — so every program it writes is well formed: names are bound before
//! use, shapes agree, `recur` is in tail position, loops have a counter that ends them and
//! recursion has a bound. Numeric domains are guarded by construction (denominators
//! `1 + b²`, `log`/`sqrt` of `1 + x²`, `exp` of a tenth of its argument, `inv`/`logdet` of
//! `I + 0.2·tanh(A)`, which is diagonally dominant). What construction cannot promise —
//! a value that stays moderate, a branch test away from its boundary — the campaign checks
//! with the oracle, regenerating from the next seed when it fails.

use crate::feature::Feature;
use crate::sexpr::{Sx, program_text};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// One generated program.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    /// The top-level forms (definitions, then the result expression).
    pub forms: Vec<Sx>,
    /// The program text.
    pub src: String,
    /// Parameter names and values, in binding order.
    pub params: Vec<(String, f64)>,
    /// The feature families the program uses.
    pub features: BTreeSet<Feature>,
}

/// A value type the generator can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Num,
    Vec(usize),
    Mat(usize, usize),
}

/// Generates the program for `seed`: the same seed always gives the same program.
pub fn generate(seed: u64) -> Generated {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        scope: Vec::new(),
        fresh: 0,
        features: BTreeSet::new(),
        defs: Vec::new(),
        params: 0,
    };
    g.params = g.rng.random_range(1..=3);
    let params: Vec<(String, f64)> = (0..g.params)
        .map(|i| (format!("p{i}"), round(g.rng.random_range(-1.5..1.5), 4)))
        .collect();
    let depth = g.rng.random_range(2..=4);
    let body = g.num(depth);
    let mut forms = std::mem::take(&mut g.defs);
    forms.push(body);
    Generated {
        src: program_text(&forms),
        forms,
        params,
        features: g.features,
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (x * s).round() / s
}

struct Gen {
    rng: ChaCha8Rng,
    /// Local variables in scope, innermost last.
    scope: Vec<(String, Ty)>,
    fresh: usize,
    features: BTreeSet<Feature>,
    /// Top-level definitions made so far.
    defs: Vec<Sx>,
    params: usize,
}

impl Gen {
    fn uses(&mut self, f: Feature) {
        self.features.insert(f);
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn literal(&mut self, lo: f64, hi: f64) -> Sx {
        self.uses(Feature::Literal);
        Sx::num(round(self.rng.random_range(lo..hi), 3))
    }

    fn param(&mut self) -> Sx {
        self.uses(Feature::Param);
        let i = self.rng.random_range(0..self.params);
        Sx::atom(format!("p{i}"))
    }

    /// A variable of type `ty` in scope, if there is one.
    fn var(&mut self, ty: Ty) -> Option<Sx> {
        let names: Vec<String> = self
            .scope
            .iter()
            .filter(|(_, t)| *t == ty)
            .map(|(n, _)| n.clone())
            .collect();
        if names.is_empty() {
            return None;
        }
        Some(Sx::atom(
            names[self.rng.random_range(0..names.len())].clone(),
        ))
    }

    /// Runs `f` with `vars` in scope.
    fn with<T>(&mut self, vars: &[(String, Ty)], f: impl FnOnce(&mut Gen) -> T) -> T {
        let n = self.scope.len();
        self.scope.extend(vars.iter().cloned());
        let out = f(self);
        self.scope.truncate(n);
        out
    }

    fn of(&mut self, ty: Ty, d: u32) -> Sx {
        match ty {
            Ty::Num => self.num(d),
            Ty::Vec(n) => self.vector(n, d),
            Ty::Mat(r, c) => self.matrix(r, c, d),
        }
    }

    fn leaf(&mut self) -> Sx {
        let r = self.rng.random_range(0..10);
        if r < 3
            && let Some(v) = self.var(Ty::Num)
        {
            return v;
        }
        if r < 7 {
            self.param()
        } else {
            self.literal(-2.0, 2.0)
        }
    }

    fn test(&mut self, d: u32) -> Sx {
        let op = self.pick(&["<", ">", "<=", ">="]);
        Sx::call(op, [self.num(d), self.num(d)])
    }

    /// A number-valued expression of depth at most `d`.
    fn num(&mut self, d: u32) -> Sx {
        if d == 0 || self.chance(0.15) {
            return self.leaf();
        }
        let d1 = d - 1;
        match self.rng.random_range(0..40) {
            0..=5 => {
                self.uses(Feature::Binop);
                let op = self.pick(&["+", "-", "*"]);
                let k = if self.chance(0.2) { 3 } else { 2 };
                Sx::call(op, (0..k).map(|_| self.num(d1)).collect::<Vec<_>>())
            }
            6..=7 => {
                self.uses(Feature::DivGuarded);
                let a = self.num(d1);
                let b = self.num(d1);
                let den = if self.chance(0.5) {
                    Sx::call("+", [Sx::num(1.0), Sx::call("*", [b.clone(), b])])
                } else {
                    Sx::call("+", [Sx::num(2.0), Sx::call("cos", [b])])
                };
                Sx::call("/", [a, den])
            }
            8..=11 => {
                self.uses(Feature::UnaryTranscendental);
                let x = self.num(d1);
                let one_plus_sq =
                    |x: Sx| Sx::call("+", [Sx::num(1.0), Sx::call("*", [x.clone(), x])]);
                match self.rng.random_range(0..7) {
                    0 => Sx::call("sin", [x]),
                    1 => Sx::call("cos", [x]),
                    2 => Sx::call("tanh", [x]),
                    3 => Sx::call("atan", [x]),
                    4 => Sx::call("exp", [Sx::call("*", [Sx::num(0.1), x])]),
                    5 => Sx::call("log", [one_plus_sq(x)]),
                    _ => Sx::call("sqrt", [one_plus_sq(x)]),
                }
            }
            12..=13 => {
                self.uses(Feature::UnaryOther);
                match self.rng.random_range(0..6) {
                    0 => Sx::call("abs", [self.num(d1)]),
                    1 => Sx::call("square", [self.num(d1)]),
                    2 => Sx::call("-", [self.num(d1)]),
                    3 => Sx::call("min", [self.num(d1), self.num(d1)]),
                    4 => Sx::call("max", [self.num(d1), self.num(d1)]),
                    _ => {
                        let x = self.num(d1);
                        let base = Sx::call("+", [Sx::num(1.0), Sx::call("square", [x])]);
                        let e = self.pick(&[0.5, 1.5, -1.0, 2.0]);
                        Sx::call("pow", [base, Sx::num(e)])
                    }
                }
            }
            14..=15 => self.let_form(d1, false),
            16 => self.let_form(d1, true),
            17..=18 => {
                self.uses(Feature::IfCompare);
                Sx::call("if", [self.test(d1), self.num(d1), self.num(d1)])
            }
            19 => {
                self.uses(Feature::Cond);
                let k = self.rng.random_range(1..=2);
                let mut clauses: Vec<Sx> = (0..k)
                    .map(|_| Sx::List(vec![self.test(d1), self.num(d1)]))
                    .collect();
                clauses.push(Sx::List(vec![Sx::atom("else"), self.num(d1)]));
                Sx::call("cond", clauses)
            }
            20 => {
                self.uses(Feature::AndOr);
                let op = self.pick(&["and", "or"]);
                let t = Sx::call(op, [self.test(d1), self.test(d1)]);
                Sx::call("if", [t, self.num(d1), self.num(d1)])
            }
            21..=22 => self.loop_form(d1),
            23 => self.letrec_form(d1),
            24 => self.define_form(d1),
            25..=26 => self.lambda_form(d1),
            27..=28 => self.higher_order(d1),
            29..=30 => self.list_form(d1),
            31..=34 => {
                self.uses(Feature::Vector);
                let n = self.rng.random_range(1..=4);
                let v = self.vector(n, d1);
                match self.rng.random_range(0..5) {
                    0 => Sx::call("dot", [v, self.vector(n, d1)]),
                    1 => Sx::call("vsum", [v]),
                    2 => Sx::call("norm", [Sx::call("+", [v, Sx::num(2.5)])]),
                    3 => {
                        let i = self.rng.random_range(0..n);
                        Sx::call("ref", [v, Sx::num(i as f64)])
                    }
                    _ => Sx::call("*", [Sx::call("vlen", [v]), self.num(d1)]),
                }
            }
            35..=36 => {
                self.uses(Feature::Matrix);
                let (r, c) = (self.rng.random_range(1..=3), self.rng.random_range(1..=3));
                let m = self.matrix(r, c, d1);
                match self.rng.random_range(0..3) {
                    0 => Sx::call("trace", [m]),
                    1 => Sx::call("vsum", [Sx::call("matvec", [m, self.vector(c, d1)])]),
                    _ => {
                        let (i, j) = (self.rng.random_range(0..r), self.rng.random_range(0..c));
                        Sx::call(
                            "ref",
                            [Sx::call("ref", [m, Sx::num(i as f64)]), Sx::num(j as f64)],
                        )
                    }
                }
            }
            _ => {
                self.uses(Feature::Linalg);
                let n = self.rng.random_range(1..=4);
                match self.rng.random_range(0..4) {
                    // LU (n = 4) is accurate in f32 only on a well-conditioned matrix; the closed
                    // forms (n ≤ 3) take any matrix, singular ones included.
                    0 if n == 4 => Sx::call("det", [self.well_conditioned(n, d1)]),
                    0 => Sx::call("det", [self.matrix(n, n, d1)]),
                    1 => Sx::call("logdet", [self.well_conditioned(n, d1)]),
                    2 => Sx::call("trace", [Sx::call("inv", [self.well_conditioned(n, d1)])]),
                    _ => {
                        let inv = Sx::call("inv", [self.well_conditioned(n, d1)]);
                        Sx::call(
                            "dot",
                            [
                                self.vector(n, d1),
                                Sx::call("matvec", [inv, self.vector(n, d1)]),
                            ],
                        )
                    }
                }
            }
        }
    }

    /// `I + 0.2·tanh(A)`: every off-diagonal row sum is below 0.6 < 0.8, so it is invertible
    /// with a positive determinant.
    fn well_conditioned(&mut self, n: usize, d: u32) -> Sx {
        self.uses(Feature::Matrix);
        let a = self.matrix(n, n, d);
        Sx::call(
            "+",
            [
                Sx::call("eye", [Sx::num(n as f64)]),
                Sx::call("*", [Sx::num(0.2), Sx::call("tanh", [a])]),
            ],
        )
    }

    fn let_form(&mut self, d: u32, star: bool) -> Sx {
        let k = self.rng.random_range(1..=2);
        let mut binds = Vec::new();
        let mut vars = Vec::new();
        for _ in 0..k {
            let ty = self.pick(&[
                Ty::Num,
                Ty::Num,
                Ty::Num,
                Ty::Vec(2),
                Ty::Vec(3),
                Ty::Mat(2, 2),
            ]);
            let init = if star {
                let seen = vars.clone();
                self.with(&seen, |g| g.of(ty, d))
            } else {
                self.of(ty, d)
            };
            let name = self.name("u");
            binds.push(Sx::List(vec![Sx::atom(name.clone()), init]));
            vars.push((name, ty));
        }
        self.uses(if star { Feature::LetStar } else { Feature::Let });
        let body = self.with(&vars, |g| {
            // Use a tensor binding through a reduction so it matters.
            let reduce = match vars.iter().find(|(_, t)| *t != Ty::Num) {
                Some((v, Ty::Mat(..))) => Some(Sx::call("trace", [Sx::atom(v.clone())])),
                Some((v, _)) => Some(Sx::call("vsum", [Sx::atom(v.clone())])),
                None => None,
            };
            match reduce {
                Some(r) if g.chance(0.7) => Sx::call("+", [r, g.num(d)]),
                _ => g.num(d),
            }
        });
        Sx::call(if star { "let*" } else { "let" }, [Sx::List(binds), body])
    }

    /// `(loop ((x init) (k 0)) (if (= k N) x (recur step (+ k 1))))`, the step contracting.
    fn loop_form(&mut self, d: u32) -> Sx {
        self.uses(Feature::LoopRecur);
        let (x, k) = (self.name("x"), self.name("k"));
        let steps = self.rng.random_range(2..=12);
        let vector = self.chance(0.25);
        let ty = if vector {
            Ty::Vec(self.rng.random_range(2..=3))
        } else {
            Ty::Num
        };
        let init = self.of(ty, d);
        let e = self.with(&[(x.clone(), ty)], |g| g.of(ty, d));
        let step = if self.chance(0.5) {
            Sx::call("*", [Sx::num(0.5), Sx::call("+", [Sx::atom(x.clone()), e])])
        } else {
            Sx::call(
                "+",
                [
                    Sx::call("*", [Sx::num(0.6), Sx::atom(x.clone())]),
                    Sx::call("*", [Sx::num(0.5), Sx::call("tanh", [e])]),
                ],
            )
        };
        let result = if vector {
            self.uses(Feature::Vector);
            Sx::call("vsum", [Sx::atom(x.clone())])
        } else {
            Sx::atom(x.clone())
        };
        let body = Sx::call(
            "if",
            [
                Sx::call("=", [Sx::atom(k.clone()), Sx::num(steps as f64)]),
                result,
                Sx::call(
                    "recur",
                    [step, Sx::call("+", [Sx::atom(k.clone()), Sx::num(1.0)])],
                ),
            ],
        );
        let binds = Sx::List(vec![
            Sx::List(vec![Sx::atom(x), init]),
            Sx::List(vec![Sx::atom(k), Sx::num(0.0)]),
        ]);
        Sx::call("loop", [binds, body])
    }

    /// Self-recursion with a counter: `(letrec ((f (lambda (n acc) …))) (f K init))`.
    fn letrec_form(&mut self, d: u32) -> Sx {
        self.uses(Feature::Letrec);
        self.uses(Feature::Lambda);
        let (f, n, acc) = (self.name("f"), self.name("n"), self.name("acc"));
        let e = self.with(&[(acc.clone(), Ty::Num)], |g| g.num(d));
        let step = Sx::call(
            "+",
            [Sx::call("*", [Sx::num(0.5), Sx::atom(acc.clone())]), e],
        );
        let body = Sx::call(
            "if",
            [
                Sx::call("<", [Sx::atom(n.clone()), Sx::num(0.5)]),
                Sx::atom(acc.clone()),
                Sx::call(
                    &f,
                    [Sx::call("-", [Sx::atom(n.clone()), Sx::num(1.0)]), step],
                ),
            ],
        );
        let lambda = Sx::call("lambda", [Sx::List(vec![Sx::atom(n), Sx::atom(acc)]), body]);
        let count = self.rng.random_range(1..=5) as f64;
        let init = self.num(d);
        Sx::call(
            "letrec",
            [
                Sx::List(vec![Sx::List(vec![Sx::atom(f.clone()), lambda])]),
                Sx::call(&f, [Sx::num(count), init]),
            ],
        )
    }

    /// A top-level `(define (f a b) …)` and a call of it.
    fn define_form(&mut self, d: u32) -> Sx {
        self.uses(Feature::Define);
        let f = self.name("g");
        let k = self.rng.random_range(1..=2);
        let args: Vec<String> = (0..k).map(|_| self.name("a")).collect();
        // A top-level body sees only the inputs and its own parameters.
        let outer = std::mem::take(&mut self.scope);
        let vars: Vec<(String, Ty)> = args.iter().map(|a| (a.clone(), Ty::Num)).collect();
        let body = self.with(&vars, |g| g.num(d));
        self.scope = outer;
        let mut sig = vec![Sx::atom(f.clone())];
        sig.extend(args.iter().map(|a| Sx::atom(a.clone())));
        self.defs.push(Sx::call("define", [Sx::List(sig), body]));
        Sx::call(&f, (0..k).map(|_| self.num(d)).collect::<Vec<_>>())
    }

    fn lambda(&mut self, arity: usize, d: u32) -> Sx {
        self.uses(Feature::Lambda);
        let args: Vec<String> = (0..arity).map(|_| self.name("v")).collect();
        let vars: Vec<(String, Ty)> = args.iter().map(|a| (a.clone(), Ty::Num)).collect();
        let body = self.with(&vars, |g| g.num(d));
        Sx::call(
            "lambda",
            [Sx::List(args.into_iter().map(Sx::atom).collect()), body],
        )
    }

    fn lambda_form(&mut self, d: u32) -> Sx {
        if self.chance(0.5) {
            let f = self.lambda(1, d);
            Sx::List(vec![f, self.num(d)])
        } else {
            self.uses(Feature::Let);
            let name = self.name("h");
            let f = self.lambda(1, d);
            let call = |g: &mut Gen| Sx::call(&name, [g.num(d)]);
            let body = Sx::call("+", [call(self), call(self)]);
            Sx::call(
                "let",
                [
                    Sx::List(vec![Sx::List(vec![Sx::atom(name.clone()), f])]),
                    body,
                ],
            )
        }
    }

    fn list_of(&mut self, k: usize, d: u32) -> Sx {
        self.uses(Feature::List);
        Sx::call("list", (0..k).map(|_| self.num(d)).collect::<Vec<_>>())
    }

    fn higher_order(&mut self, d: u32) -> Sx {
        self.uses(Feature::HigherOrder);
        let k = self.rng.random_range(1..=4);
        match self.rng.random_range(0..4) {
            0 => {
                let f = self.lambda(2, d);
                let init = self.num(d);
                Sx::call("fold-left", [f, init, self.list_of(k, d)])
            }
            1 => {
                let f = self.lambda(1, d);
                let xs = self.list_of(k, d);
                Sx::call("apply", [Sx::atom("+"), Sx::call("map", [f, xs])])
            }
            2 => {
                // A procedure passed to a procedure: (g (g x)).
                let g = self.name("q");
                let applier = Sx::call(
                    "lambda",
                    [
                        Sx::List(vec![Sx::atom(g.clone())]),
                        Sx::call(&g, [Sx::call(&g, [self.num(d)])]),
                    ],
                );
                Sx::List(vec![applier, self.lambda(1, d)])
            }
            _ => {
                let f = self.lambda(2, d);
                let xs = self.list_of(2, d);
                Sx::call("apply", [f, xs])
            }
        }
    }

    fn list_form(&mut self, d: u32) -> Sx {
        let k = self.rng.random_range(2..=4);
        let xs = self.list_of(k, d);
        match self.rng.random_range(0..5) {
            0 => Sx::call("car", [Sx::call("cdr", [xs])]),
            1 => {
                let i = Sx::num(self.rng.random_range(0..k) as f64);
                // An index chosen by a test: lanes may need different structure (G4 then sees a
                // divergence error and reruns the lanes closer together).
                let index = if self.chance(0.3) {
                    self.uses(Feature::IfCompare);
                    let j = Sx::num(self.rng.random_range(0..k) as f64);
                    Sx::call("if", [self.test(d), i, j])
                } else {
                    i
                };
                Sx::call("list-ref", [xs, index])
            }
            2 => Sx::call("car", [Sx::call("reverse", [xs])]),
            3 => {
                let head = self.num(d);
                Sx::call("cadr", [Sx::call("cons", [head, xs])])
            }
            _ => Sx::call("*", [Sx::call("length", [xs]), self.num(d)]),
        }
    }

    /// A vector `[n]` of depth at most `d`.
    fn vector(&mut self, n: usize, d: u32) -> Sx {
        self.uses(Feature::Vector);
        if let Some(v) = self.var(Ty::Vec(n))
            && self.chance(0.5)
        {
            return v;
        }
        if d == 0 || self.chance(0.3) {
            return Sx::call(
                "vec",
                (0..n)
                    .map(|_| self.num(d.saturating_sub(1)))
                    .collect::<Vec<_>>(),
            );
        }
        let d1 = d - 1;
        match self.rng.random_range(0..10) {
            0 => {
                let op = self.pick(&["+", "-", "*"]);
                Sx::call(op, [self.vector(n, d1), self.vector(n, d1)])
            }
            1 => {
                let op = self.pick(&["+", "*", "-"]);
                if self.chance(0.5) {
                    Sx::call(op, [self.num(d1), self.vector(n, d1)])
                } else {
                    Sx::call(op, [self.vector(n, d1), self.num(d1)])
                }
            }
            2 => Sx::call("scale", [self.num(d1), self.vector(n, d1)]),
            3 => {
                let op = self.pick(&["sin", "tanh", "square"]);
                Sx::call(op, [self.vector(n, d1)])
            }
            4 => {
                self.uses(Feature::Matrix);
                let k = self.rng.random_range(1..=3);
                Sx::call("matvec", [self.matrix(n, k, d1), self.vector(k, d1)])
            }
            5 => {
                self.uses(Feature::Matrix);
                let m = self.rng.random_range(1..=3);
                let i = self.rng.random_range(0..m);
                Sx::call("ref", [self.matrix(m, n, d1), Sx::num(i as f64)])
            }
            6 => Sx::call(
                "normalize",
                [Sx::call("+", [self.vector(n, d1), Sx::num(2.5)])],
            ),
            7 if n == 3 => Sx::call("cross", [self.vector(3, d1), self.vector(3, d1)]),
            _ => Sx::call("vec", (0..n).map(|_| self.num(d1)).collect::<Vec<_>>()),
        }
    }

    /// A matrix `[r,c]` of depth at most `d`.
    fn matrix(&mut self, r: usize, c: usize, d: u32) -> Sx {
        self.uses(Feature::Matrix);
        if let Some(m) = self.var(Ty::Mat(r, c))
            && self.chance(0.5)
        {
            return m;
        }
        let rows = |g: &mut Gen, d: u32| {
            Sx::call("mat", (0..r).map(|_| g.vector(c, d)).collect::<Vec<_>>())
        };
        if d == 0 || self.chance(0.35) {
            return rows(self, d.saturating_sub(1));
        }
        let d1 = d - 1;
        match self.rng.random_range(0..7) {
            0 => {
                let k = self.rng.random_range(1..=3);
                Sx::call("matmul", [self.matrix(r, k, d1), self.matrix(k, c, d1)])
            }
            1 => Sx::call("transpose", [self.matrix(c, r, d1)]),
            2 => {
                let op = self.pick(&["+", "-", "*"]);
                Sx::call(op, [self.matrix(r, c, d1), self.matrix(r, c, d1)])
            }
            3 => Sx::call("*", [self.num(d1), self.matrix(r, c, d1)]),
            4 => Sx::call("outer", [self.vector(r, d1), self.vector(c, d1)]),
            5 if r == c => {
                self.uses(Feature::Linalg);
                Sx::call("inv", [self.well_conditioned(r, d1)])
            }
            _ => rows(self, d1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_program() {
        for seed in 0..50 {
            assert_eq!(generate(seed), generate(seed));
        }
        assert_ne!(generate(1).src, generate(2).src);
    }

    #[test]
    fn generated_programs_are_well_formed_for_the_oracle() {
        let mut ok = 0;
        for seed in 0..300 {
            let g = generate(seed);
            match crate::oracle::evaluate(&g.src, &g.params) {
                Ok(_) => ok += 1,
                Err(e) => panic!("seed {seed}: {e}\n{}", g.src),
            }
        }
        assert_eq!(ok, 300);
    }
}
