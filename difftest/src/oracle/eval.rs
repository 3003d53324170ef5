//! The tree-walking evaluator: special forms, scopes, calls and `loop`/`recur`.
//!
//! Straight from docs/language-reference.md §3–§5, with no lanes and no tape: each value is one
//! boxed [`Value`], each number a [`Dual`] carrying its derivatives forward.

use super::dual::Dual;
use super::value::{Closure, Env, Value, lookup, scope};
use crate::sexpr::Sx;
use std::rc::Rc;

/// Why evaluation stopped early: an error, or a `recur` on its way to its loop.
#[derive(Debug)]
pub enum Signal {
    Error(String),
    Recur(Vec<Value>),
}

pub type Flow = Result<Value, Signal>;

pub fn err<T>(msg: impl Into<String>) -> Result<T, Signal> {
    Err(Signal::Error(msg.into()))
}

/// Bounds that keep the oracle itself finite on any program the minimizer makes.
const MAX_STEPS: u64 = 2_000_000;
const MAX_DEPTH: usize = 300;

/// One evaluation's state.
#[derive(Debug)]
pub struct Interp {
    /// Number of parameters (the length of every derivative vector).
    pub n: usize,
    steps: u64,
    depth: usize,
    /// The smallest distance, in parameter space and to first order, from the parameters to a
    /// point where a parameter-dependent comparison, `abs`, `min`/`max` or clamp would switch.
    pub margin: f64,
    /// The sign of `a − b` at every decision, in order: two runs with equal decisions took the
    /// same branches.
    pub decisions: Vec<i8>,
}

const KEYWORDS: &[&str] = &[
    "quote", "if", "define", "lambda", "begin", "let", "let*", "letrec", "letrec*", "cond", "else",
    "=>", "and", "or", "when", "unless", "loop", "recur",
];

impl Interp {
    pub fn new(n: usize) -> Interp {
        Interp {
            n,
            steps: 0,
            depth: 0,
            margin: f64::INFINITY,
            decisions: Vec::new(),
        }
    }

    /// Records a decision between `a` and `b` (a comparison, `min`/`max`, `abs` against 0, a
    /// clamp): the sign of `a − b` goes to [`Interp::decisions`], and its distance from switching
    /// — `|a − b|` over the slope of `a − b`, to first order — to [`Interp::margin`].
    pub fn near(&mut self, a: &Dual, b: &Dual) {
        let x = a.v - b.v;
        self.decisions.push(if x > 0.0 {
            1
        } else if x < 0.0 {
            -1
        } else {
            0
        });
        let x = a.sub(b);
        if x.varies() {
            let slope: f64 = x.d.iter().map(|d| d.abs()).sum();
            self.margin = self.margin.min(x.v.abs() / slope);
        } else if (a.varies() || b.varies()) && x.v.abs() <= 1e-6 * a.v.abs().max(b.v.abs()) {
            // Two sides that depend on the parameters but are equal for every parameter value,
            // computed in different orders (`(+ (* 2 p) q)` against `(+ p (+ p q))`): which way
            // the test goes is decided by rounding alone, and differs between f32 and f64. No
            // margin. (Counters compared with constants vary with nothing: exact, kept.)
            self.margin = 0.0;
        }
    }

    /// A whole program: top-level definitions in one scope, forms evaluated in order.
    pub fn program(&mut self, forms: &[Sx], inputs: &Env) -> Flow {
        self.body(forms, inputs, false)
    }

    /// A body: leading definitions (as `letrec*`), then expressions; the last is the value.
    fn body(&mut self, forms: &[Sx], env: &Env, tail: bool) -> Flow {
        let mut names = Vec::new();
        for f in forms {
            if let Some((name, _)) = definition(f)? {
                if names.contains(&name) {
                    return err(format!("{name} defined twice"));
                }
                names.push(name);
            }
        }
        let env = if names.is_empty() {
            env.clone()
        } else {
            let n = names.len();
            scope(Some(env), names, vec![None; n])
        };
        let mut last = None;
        for (i, f) in forms.iter().enumerate() {
            if let Some((name, init)) = definition(f)? {
                let v = self.eval(&init, &env, false)?;
                let slot = env.names.iter().position(|n| *n == name).unwrap_or(0);
                env.values.borrow_mut()[slot] = Some(v);
                last = None;
            } else {
                last = Some(self.eval(f, &env, tail && i + 1 == forms.len())?);
            }
        }
        last.map_or_else(|| err("no result expression"), Ok)
    }

    /// Evaluates `x`; `tail` is whether `x` is in tail position of the innermost `loop` body.
    pub fn eval(&mut self, x: &Sx, env: &Env, tail: bool) -> Flow {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return err("step limit");
        }
        match x {
            Sx::Atom(a) => self.atom(a, env),
            Sx::List(items) => {
                let Some((head, rest)) = items.split_first() else {
                    return err("empty combination");
                };
                if let Sx::Atom(h) = head
                    && KEYWORDS.contains(&h.as_str())
                    && lookup(env, h).is_none()
                {
                    return self.special(h, rest, env, tail);
                }
                let f = self.eval(head, env, false)?;
                let mut args = Vec::with_capacity(rest.len());
                for a in rest {
                    args.push(self.eval(a, env, false)?);
                }
                self.apply(&f, args)
            }
        }
    }

    fn atom(&mut self, a: &str, env: &Env) -> Flow {
        match a {
            "#t" => return Ok(Value::Bool(true)),
            "#f" => return Ok(Value::Bool(false)),
            _ => {}
        }
        if let Ok(x) = a.parse::<f64>()
            && a.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.')
        {
            return Ok(Value::Num(Dual::constant(x, self.n)));
        }
        match lookup(env, a) {
            Some(Some(v)) => Ok(v),
            Some(None) => err(format!("{a} used before its definition")),
            None => super::prims::primitive(a)
                .map_or_else(|| err(format!("unbound {a}")), |p| Ok(Value::Prim(p))),
        }
    }

    /// Calls a procedure value.
    pub fn apply(&mut self, f: &Value, args: Vec<Value>) -> Flow {
        match f {
            Value::Prim(name) => self.prim(name, args),
            Value::Closure(c) => {
                if c.params.len() != args.len() {
                    return err("arity");
                }
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return err("recursion depth");
                }
                let env = scope(
                    Some(&c.env),
                    c.params.clone(),
                    args.into_iter().map(Some).collect(),
                );
                let out = self.body(&c.body, &env, false);
                self.depth -= 1;
                out
            }
            other => err(format!("cannot call a {}", other.kind())),
        }
    }

    fn special(&mut self, kw: &str, rest: &[Sx], env: &Env, tail: bool) -> Flow {
        match (kw, rest) {
            ("quote", [d]) => Ok(self.quote(d)),
            ("if", [c, a, b]) => {
                if self.eval(c, env, false)?.truthy() {
                    self.eval(a, env, tail)
                } else {
                    self.eval(b, env, tail)
                }
            }
            ("lambda", [Sx::List(params), body @ ..]) if !body.is_empty() => {
                Ok(Value::Closure(Rc::new(Closure {
                    params: names(params)?,
                    body: body.to_vec(),
                    env: env.clone(),
                })))
            }
            ("begin", body) if !body.is_empty() => {
                let mut last = Value::Nil;
                for (i, f) in body.iter().enumerate() {
                    last = self.eval(f, env, tail && i + 1 == body.len())?;
                }
                Ok(last)
            }
            ("let", [Sx::List(binds), body @ ..]) if !body.is_empty() => {
                let (ns, inits) = bindings(binds)?;
                let mut vals = Vec::new();
                for i in &inits {
                    vals.push(Some(self.eval(i, env, false)?));
                }
                self.body(body, &scope(Some(env), ns, vals), tail)
            }
            ("let*", [Sx::List(binds), body @ ..]) if !body.is_empty() => {
                let (ns, inits) = bindings(binds)?;
                let mut env = env.clone();
                for (n, i) in ns.into_iter().zip(&inits) {
                    let v = self.eval(i, &env, false)?;
                    env = scope(Some(&env), vec![n], vec![Some(v)]);
                }
                self.body(body, &env, tail)
            }
            ("letrec" | "letrec*", [Sx::List(binds), body @ ..]) if !body.is_empty() => {
                let (ns, inits) = bindings(binds)?;
                let k = ns.len();
                let env = scope(Some(env), ns, vec![None; k]);
                for (i, init) in inits.iter().enumerate() {
                    let v = self.eval(init, &env, false)?;
                    env.values.borrow_mut()[i] = Some(v);
                }
                self.body(body, &env, tail)
            }
            ("cond", clauses) if !clauses.is_empty() => {
                for (i, c) in clauses.iter().enumerate() {
                    let Sx::List(parts) = c else {
                        return err("bad cond clause");
                    };
                    let [test, body @ ..] = parts.as_slice() else {
                        return err("bad cond clause");
                    };
                    if body.is_empty() {
                        return err("bad cond clause");
                    }
                    let taken = if *test == Sx::atom("else") {
                        if i + 1 != clauses.len() {
                            return err("else must be last");
                        }
                        true
                    } else {
                        self.eval(test, env, false)?.truthy()
                    };
                    if taken {
                        return self.special("begin", body, env, tail);
                    }
                }
                Ok(Value::Bool(false))
            }
            ("and", xs) => {
                let mut last = Value::Bool(true);
                for (i, x) in xs.iter().enumerate() {
                    last = self.eval(x, env, tail && i + 1 == xs.len())?;
                    if !last.truthy() {
                        break;
                    }
                }
                Ok(last)
            }
            ("or", xs) => {
                let mut last = Value::Bool(false);
                for (i, x) in xs.iter().enumerate() {
                    last = self.eval(x, env, tail && i + 1 == xs.len())?;
                    if last.truthy() {
                        break;
                    }
                }
                Ok(last)
            }
            ("when" | "unless", [c, body @ ..]) if !body.is_empty() => {
                if self.eval(c, env, false)?.truthy() == (kw == "when") {
                    self.special("begin", body, env, tail)
                } else {
                    Ok(Value::Bool(false))
                }
            }
            ("loop", [Sx::List(binds), body @ ..]) if !body.is_empty() => {
                let (ns, inits) = bindings(binds)?;
                let mut vals = Vec::new();
                for i in &inits {
                    vals.push(self.eval(i, env, false)?);
                }
                loop {
                    let scope_ = scope(Some(env), ns.clone(), vals.into_iter().map(Some).collect());
                    match self.body(body, &scope_, true) {
                        Err(Signal::Recur(next)) if next.len() == ns.len() => vals = next,
                        Err(Signal::Recur(_)) => return err("recur arity"),
                        other => return other,
                    }
                }
            }
            ("recur", args) if tail => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a, env, false)?);
                }
                Err(Signal::Recur(vals))
            }
            _ => err(format!("bad {kw} form")),
        }
    }

    fn quote(&self, d: &Sx) -> Value {
        match d {
            Sx::Atom(a) => match a.as_str() {
                "#t" => Value::Bool(true),
                "#f" => Value::Bool(false),
                _ => match a.parse::<f64>() {
                    Ok(x) => Value::Num(Dual::constant(x, self.n)),
                    Err(_) => Value::Sym(a.clone()),
                },
            },
            Sx::List(xs) => Value::list(xs.iter().map(|x| self.quote(x)).collect()),
        }
    }
}

/// `(define name e)` or `(define (name p…) body…)` as a name and an initializer.
fn definition(f: &Sx) -> Result<Option<(String, Sx)>, Signal> {
    let Sx::List(items) = f else { return Ok(None) };
    match items.as_slice() {
        [Sx::Atom(d), Sx::Atom(name), init] if d == "define" => {
            Ok(Some((name.clone(), init.clone())))
        }
        [Sx::Atom(d), Sx::List(sig), body @ ..] if d == "define" && !body.is_empty() => {
            let [Sx::Atom(name), params @ ..] = sig.as_slice() else {
                return err("bad define");
            };
            let mut lambda = vec![Sx::atom("lambda"), Sx::List(params.to_vec())];
            lambda.extend(body.iter().cloned());
            Ok(Some((name.clone(), Sx::List(lambda))))
        }
        [Sx::Atom(d), ..] if d == "define" => err("bad define"),
        _ => Ok(None),
    }
}

fn names(xs: &[Sx]) -> Result<Vec<String>, Signal> {
    xs.iter()
        .map(|x| match x {
            Sx::Atom(a) if !KEYWORDS.contains(&a.as_str()) => Ok(a.clone()),
            _ => err("a name is required"),
        })
        .collect()
}

fn bindings(binds: &[Sx]) -> Result<(Vec<String>, Vec<Sx>), Signal> {
    let mut ns = Vec::new();
    let mut inits = Vec::new();
    for b in binds {
        match b {
            Sx::List(pair) if pair.len() == 2 => {
                ns.extend(names(&pair[..1])?);
                inits.push(pair[1].clone());
            }
            _ => return err("bad binding"),
        }
    }
    Ok((ns, inits))
}
