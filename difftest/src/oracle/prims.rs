//! Numbers, comparisons, predicates, lists and the prelude procedures (docs/language-reference.md
//! §6.1–§6.4, §6.8). Tensor primitives are in `tensor.rs`.

use super::dual::Dual;
use super::eval::{Flow, Interp, Signal, err};
use super::tensor;
use super::value::Value;
use std::rc::Rc;

const SCALAR_MATH: &[&str] = &[
    "sin", "cos", "exp", "sqrt", "log", "abs", "tan", "asin", "acos", "sinh", "cosh", "tanh",
    "square", "floor", "ceiling", "round", "truncate",
];

const OTHERS: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "=",
    "<",
    ">",
    "<=",
    ">=",
    "not",
    "pow",
    "expt",
    "min",
    "max",
    "modulo",
    "remainder",
    "atan",
    "cons",
    "car",
    "cdr",
    "list",
    "null?",
    "pair?",
    "number?",
    "boolean?",
    "symbol?",
    "procedure?",
    "zero?",
    "positive?",
    "negative?",
    "eq?",
    "eqv?",
    "equal?",
    "length",
    "append",
    "reverse",
    "list-ref",
    "apply",
    "map",
    "filter",
    "fold-left",
    "fold-right",
    "reduce",
];

/// The primitive or prelude procedure `name` names in the base environment, under its one
/// canonical name (`expt` is `pow`, `eqv?` is `eq?`), if it is one.
pub fn primitive(name: &str) -> Option<&'static str> {
    let name = match name {
        "expt" => "pow",
        "eqv?" => "eq?",
        n => n,
    };
    [SCALAR_MATH, OTHERS, tensor::NAMES, CXR]
        .iter()
        .flat_map(|t| t.iter())
        .find(|n| **n == name)
        .copied()
}

const CXR: &[&str] = &[
    "caar", "cadr", "cdar", "cddr", "caaar", "caadr", "cadar", "caddr", "cdaar", "cdadr", "cddar",
    "cdddr",
];

fn cxr(name: &str) -> Option<&'static str> {
    CXR.iter().find(|n| **n == name).copied()
}

pub fn num(v: &Value) -> Result<&Dual, Signal> {
    match v {
        Value::Num(d) => Ok(d),
        other => err(format!("expected a number, got a {}", other.kind())),
    }
}

/// A structural number (index or size): finite, truncated toward zero, ≥ 0.
pub fn index(v: &Value) -> Result<usize, Signal> {
    let x = num(v)?.v;
    if !x.is_finite() || x < 0.0 {
        return err("bad index");
    }
    Ok(x.trunc() as usize)
}

fn arity(args: &[Value], lo: usize, hi: usize) -> Result<(), Signal> {
    if args.len() < lo || args.len() > hi {
        return err("arity");
    }
    Ok(())
}

/// The scalar math of §6.3/§6.8 on one number; `it` records switching margins.
pub fn unary(it: &mut Interp, name: &str, x: &Dual) -> Dual {
    let v = x.v;
    const CLAMP: f64 = 1e-8;
    match name {
        "sin" => x.chain(v.sin(), v.cos()),
        "cos" => x.chain(v.cos(), -v.sin()),
        "exp" => x.chain(v.exp(), v.exp()),
        "sqrt" | "log" => {
            it.near(x, &Dual::constant(CLAMP, x.d.len()));
            let c = v.max(CLAMP);
            let (z, slope) = if name == "sqrt" {
                (c.sqrt(), 1.0 / (2.0 * c.sqrt()))
            } else {
                (c.ln(), 1.0 / v)
            };
            x.chain(z, if v > CLAMP { slope } else { 0.0 })
        }
        "abs" => {
            it.near(x, &Dual::constant(0.0, x.d.len()));
            let sign = if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                0.0
            };
            x.chain(v.abs(), sign)
        }
        "tan" => x.chain(v.tan(), 1.0 + v.tan() * v.tan()),
        "asin" => x.chain(v.asin(), 1.0 / (1.0 - v * v).sqrt()),
        "acos" => x.chain(v.acos(), -1.0 / (1.0 - v * v).sqrt()),
        "atan" => x.chain(v.atan(), 1.0 / (1.0 + v * v)),
        "sinh" => x.chain(v.sinh(), v.cosh()),
        "cosh" => x.chain(v.cosh(), v.sinh()),
        "tanh" => x.chain(v.tanh(), 1.0 - v.tanh() * v.tanh()),
        "square" => x.chain(v * v, 2.0 * v),
        _ => {
            it.near(x, &Dual::constant(v.round(), x.d.len()));
            let z = match name {
                "floor" => v.floor(),
                "ceiling" => v.ceil(),
                "round" => v.round_ties_even(),
                _ => v.trunc(),
            };
            x.chain(z, 0.0)
        }
    }
}

/// The binary elementwise math on two numbers.
pub fn binary(it: &mut Interp, name: &str, a: &Dual, b: &Dual) -> Dual {
    match name {
        "+" => a.add(b),
        "-" => a.sub(b),
        "*" => a.mul(b),
        "/" => a.div(b),
        "pow" => {
            let z = a.v.powf(b.v);
            let da = if b.v == 0.0 {
                0.0
            } else {
                b.v * a.v.powf(b.v - 1.0)
            };
            let db = if a.v == 0.0 && b.v >= 0.0 {
                0.0
            } else {
                z * a.v.ln()
            };
            a.chain(z, da).add(&b.chain(0.0, db)).with_value(z)
        }
        "min" | "max" => {
            it.near(a, b);
            let first = if name == "min" { a.v < b.v } else { a.v > b.v };
            if a.v.is_nan() || b.v.is_nan() {
                a.add(b).with_value(f64::NAN)
            } else if a.v == b.v {
                a.add(b).chain(a.v, 0.5).with_value(a.v)
            } else if first {
                a.clone()
            } else {
                b.clone()
            }
        }
        "atan" => {
            let r = a.v * a.v + b.v * b.v;
            let z = a.v.atan2(b.v);
            if r == 0.0 {
                Dual::constant(z, a.d.len())
            } else {
                a.chain(z, b.v / r)
                    .add(&b.chain(0.0, -a.v / r))
                    .with_value(z)
            }
        }
        _ => {
            // modulo / remainder from fmod (§7).
            let r = a.v % b.v;
            let (z, q) = if name == "remainder" {
                (r, (a.v / b.v).trunc())
            } else if r != 0.0 && (r < 0.0) != (b.v < 0.0) {
                (r + b.v, (a.v / b.v).floor())
            } else {
                (r, (a.v / b.v).floor())
            };
            a.sub(&b.chain(0.0, q)).with_value(z)
        }
    }
}

impl Dual {
    /// The same derivatives with another value.
    pub fn with_value(mut self, v: f64) -> Dual {
        self.v = v;
        self
    }
}

impl Interp {
    /// Calls primitive `name`.
    pub fn prim(&mut self, name: &str, args: Vec<Value>) -> Flow {
        if SCALAR_MATH.contains(&name) {
            arity(&args, 1, 1)?;
            return tensor::map1(&args[0], |x| unary(self, name, x));
        }
        if tensor::NAMES.contains(&name) {
            return self.tensor_prim(name, args);
        }
        if let Some(path) = cxr(name) {
            arity(&args, 1, 1)?;
            let mut v = args[0].clone();
            for c in path[1..path.len() - 1].chars().rev() {
                v = self.prim(if c == 'a' { "car" } else { "cdr" }, vec![v])?;
            }
            return Ok(v);
        }
        let n = self.n;
        match name {
            "+" | "*" => {
                let init = Value::Num(Dual::constant(if name == "+" { 0.0 } else { 1.0 }, n));
                args.iter()
                    .try_fold(init, |acc, x| self.elementwise(name, &acc, x))
            }
            "-" | "/" => {
                arity(&args, 1, usize::MAX)?;
                if args.len() == 1 {
                    let unit = Value::Num(Dual::constant(if name == "-" { 0.0 } else { 1.0 }, n));
                    return self.elementwise(name, &unit, &args[0]);
                }
                args[1..]
                    .iter()
                    .try_fold(args[0].clone(), |acc, x| self.elementwise(name, &acc, x))
            }
            "pow" | "min" | "max" | "modulo" | "remainder" => {
                arity(&args, 2, 2)?;
                self.elementwise(name, &args[0], &args[1])
            }
            "atan" => {
                arity(&args, 1, 2)?;
                if args.len() == 1 {
                    tensor::map1(&args[0], |x| unary(self, "atan", x))
                } else {
                    self.elementwise("atan", &args[0], &args[1])
                }
            }
            "=" | "<" | ">" | "<=" | ">=" => {
                arity(&args, 2, usize::MAX)?;
                let mut all = true;
                for w in args.windows(2) {
                    let (a, b) = (num(&w[0])?, num(&w[1])?);
                    self.near(a, b);
                    all &= match name {
                        "=" => a.v == b.v,
                        "<" => a.v < b.v,
                        ">" => a.v > b.v,
                        "<=" => a.v <= b.v,
                        _ => a.v >= b.v,
                    };
                }
                Ok(Value::Bool(all))
            }
            "zero?" | "positive?" | "negative?" => {
                arity(&args, 1, 1)?;
                let x = num(&args[0])?;
                self.near(x, &Dual::constant(0.0, n));
                Ok(Value::Bool(match name {
                    "zero?" => x.v == 0.0,
                    "positive?" => x.v > 0.0,
                    _ => x.v < 0.0,
                }))
            }
            _ => self.list_prim(name, args),
        }
    }

    fn list_prim(&mut self, name: &str, mut args: Vec<Value>) -> Flow {
        let one = |args: &[Value]| arity(args, 1, 1);
        match name {
            "not" => {
                one(&args)?;
                Ok(Value::Bool(!args[0].truthy()))
            }
            "null?" | "pair?" | "number?" | "boolean?" | "symbol?" | "procedure?" => {
                one(&args)?;
                let kind = args[0].kind();
                Ok(Value::Bool(match name {
                    "null?" => kind == "()",
                    "pair?" => kind == "pair",
                    "number?" => kind == "number",
                    "boolean?" => kind == "boolean",
                    "symbol?" => kind == "symbol",
                    _ => kind == "procedure",
                }))
            }
            "cons" => {
                arity(&args, 2, 2)?;
                let b = args.pop().unwrap_or(Value::Nil);
                let a = args.pop().unwrap_or(Value::Nil);
                Ok(Value::Pair(Rc::new((a, b))))
            }
            "car" | "cdr" => {
                one(&args)?;
                match &args[0] {
                    Value::Pair(p) => Ok(if name == "car" {
                        p.0.clone()
                    } else {
                        p.1.clone()
                    }),
                    other => err(format!("{name} of a {}", other.kind())),
                }
            }
            "list" => Ok(Value::list(args)),
            "length" => {
                one(&args)?;
                let k = args[0].list_items().map_err(Signal::Error)?.len();
                Ok(Value::Num(Dual::constant(k as f64, self.n)))
            }
            "reverse" => {
                one(&args)?;
                let mut items = args[0].list_items().map_err(Signal::Error)?;
                items.reverse();
                Ok(Value::list(items))
            }
            "append" => {
                let Some(last) = args.pop() else {
                    return Ok(Value::Nil);
                };
                let mut out = last;
                for a in args.iter().rev() {
                    let items = a.list_items().map_err(Signal::Error)?;
                    for x in items.into_iter().rev() {
                        out = Value::Pair(Rc::new((x, out)));
                    }
                }
                Ok(out)
            }
            "list-ref" => {
                arity(&args, 2, 2)?;
                let items = args[0].list_items().map_err(Signal::Error)?;
                let k = index(&args[1])?;
                items
                    .get(k)
                    .cloned()
                    .map_or_else(|| err("list-ref out of range"), Ok)
            }
            "eq?" | "equal?" => {
                arity(&args, 2, 2)?;
                Ok(Value::Bool(equal(&args[0], &args[1], name == "equal?")))
            }
            "apply" => {
                arity(&args, 2, usize::MAX)?;
                let list = args.pop().unwrap_or(Value::Nil);
                let f = args.remove(0);
                args.extend(list.list_items().map_err(Signal::Error)?);
                self.apply(&f, args)
            }
            "map" => {
                arity(&args, 2, usize::MAX)?;
                let f = args.remove(0);
                let lists = args
                    .iter()
                    .map(|l| l.list_items().map_err(Signal::Error))
                    .collect::<Result<Vec<_>, _>>()?;
                let len = lists.iter().map(Vec::len).min().unwrap_or(0);
                let mut out = Vec::new();
                for i in 0..len {
                    out.push(self.apply(&f, lists.iter().map(|l| l[i].clone()).collect())?);
                }
                Ok(Value::list(out))
            }
            "filter" => {
                arity(&args, 2, 2)?;
                let mut out = Vec::new();
                for x in args[1].list_items().map_err(Signal::Error)? {
                    if self.apply(&args[0], vec![x.clone()])?.truthy() {
                        out.push(x);
                    }
                }
                Ok(Value::list(out))
            }
            "fold-left" | "fold-right" | "reduce" => {
                arity(&args, 3, 3)?;
                let mut items = args[2].list_items().map_err(Signal::Error)?;
                let f = &args[0];
                let mut acc = args[1].clone();
                match name {
                    "fold-left" => {
                        for x in items {
                            acc = self.apply(f, vec![acc, x])?;
                        }
                    }
                    "fold-right" => {
                        for x in items.into_iter().rev() {
                            acc = self.apply(f, vec![x, acc])?;
                        }
                    }
                    _ => {
                        if !items.is_empty() {
                            acc = items.remove(0);
                            for x in items {
                                acc = self.apply(f, vec![x, acc])?;
                            }
                        }
                    }
                }
                Ok(acc)
            }
            _ => err(format!("unknown primitive {name}")),
        }
    }
}

/// `eq?` (identity for cells) or `equal?` (structural), per docs/language-reference.md §6.4.
fn equal(a: &Value, b: &Value, structural: bool) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x.v == y.v,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Nil, Value::Nil) => true,
        (Value::Sym(x), Value::Sym(y)) => x == y,
        (Value::Pair(x), Value::Pair(y)) => {
            Rc::ptr_eq(x, y) || (structural && equal(&x.0, &y.0, true) && equal(&x.1, &y.1, true))
        }
        (Value::Closure(x), Value::Closure(y)) => Rc::ptr_eq(x, y),
        (Value::Prim(x), Value::Prim(y)) => x == y,
        (Value::Vector(x), Value::Vector(y)) => {
            structural && x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.v == q.v)
        }
        (Value::Matrix(r, c, x), Value::Matrix(s, d, y)) => {
            structural && (r, c) == (s, d) && x.iter().zip(y).all(|(p, q)| p.v == q.v)
        }
        _ => false,
    }
}
