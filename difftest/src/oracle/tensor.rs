//! Vectors and matrices (docs/language-reference.md §6.5–§6.7) over dual numbers. Determinants and
//! inverses come from the cofactor expansion — exponential in n, but obviously right, and the
//! generator keeps n ≤ 4.

use super::dual::Dual;
use super::eval::{Flow, Interp, Signal, err};
use super::prims::{binary, index, num};
use super::value::Value;

pub const NAMES: &[&str] = &[
    "vec",
    "mat",
    "ref",
    "vlen",
    "vsum",
    "dot",
    "cross",
    "norm",
    "normalize",
    "scale",
    "outer",
    "matvec",
    "matmul",
    "transpose",
    "trace",
    "det",
    "logdet",
    "inv",
    "eye",
    "zeros",
    "ones",
];

/// Applies `f` to a number or to every element of a tensor.
pub fn map1(v: &Value, mut f: impl FnMut(&Dual) -> Dual) -> Flow {
    Ok(match v {
        Value::Num(x) => Value::Num(f(x)),
        Value::Vector(xs) => Value::Vector(xs.iter().map(f).collect()),
        Value::Matrix(r, c, xs) => Value::Matrix(*r, *c, xs.iter().map(f).collect()),
        other => return err(format!("expected a number, got a {}", other.kind())),
    })
}

/// Shape and elements of a tensor (a number has none).
fn parts(v: &Value) -> Option<((usize, usize), &[Dual])> {
    match v {
        Value::Vector(xs) => Some(((0, xs.len()), xs)),
        Value::Matrix(r, c, xs) => Some(((*r, *c), xs)),
        _ => None,
    }
}

fn rebuild(like: &Value, xs: Vec<Dual>) -> Value {
    match like {
        Value::Matrix(r, c, _) => Value::Matrix(*r, *c, xs),
        _ => Value::Vector(xs),
    }
}

fn vector(v: &Value) -> Result<&[Dual], Signal> {
    match v {
        Value::Vector(xs) => Ok(xs),
        other => err(format!("expected a vector, got a {}", other.kind())),
    }
}

fn matrix(v: &Value) -> Result<(usize, usize, &[Dual]), Signal> {
    match v {
        Value::Matrix(r, c, xs) => Ok((*r, *c, xs)),
        other => err(format!("expected a matrix, got a {}", other.kind())),
    }
}

/// `Σ xᵢ·yᵢ` accumulated in increasing index order.
fn dot(n: usize, x: impl Iterator<Item = Dual>, y: impl Iterator<Item = Dual>) -> Dual {
    x.zip(y)
        .fold(Dual::constant(0.0, n), |acc, (a, b)| acc.add(&a.mul(&b)))
}

/// Determinant by cofactor expansion along the first row.
fn det(k: usize, a: &[Dual], n: usize) -> Dual {
    if k == 1 {
        return a[0].clone();
    }
    let mut acc = Dual::constant(0.0, n);
    for j in 0..k {
        let term = a[j].mul(&det(k - 1, &minor(k, a, 0, j), n));
        acc = if j % 2 == 0 {
            acc.add(&term)
        } else {
            acc.sub(&term)
        };
    }
    acc
}

/// `a` without row `i` and column `j`.
fn minor(k: usize, a: &[Dual], i: usize, j: usize) -> Vec<Dual> {
    (0..k * k)
        .filter(|e| e / k != i && e % k != j)
        .map(|e| a[e].clone())
        .collect()
}

impl Interp {
    /// An elementwise binary primitive with number broadcasting (§6.7).
    pub fn elementwise(&mut self, name: &str, a: &Value, b: &Value) -> Flow {
        match (a, b) {
            (Value::Num(x), Value::Num(y)) => Ok(Value::Num(binary(self, name, x, y))),
            (Value::Num(x), t) => {
                let (_, ys) = parts(t).ok_or_else(|| Signal::Error("type".into()))?;
                let out = ys.iter().map(|y| binary(self, name, x, y)).collect();
                Ok(rebuild(t, out))
            }
            (t, Value::Num(y)) => {
                let (_, xs) = parts(t).ok_or_else(|| Signal::Error("type".into()))?;
                let out = xs.iter().map(|x| binary(self, name, x, y)).collect();
                Ok(rebuild(t, out))
            }
            (s, t) => match (parts(s), parts(t)) {
                (Some((sa, xs)), Some((sb, ys))) if sa == sb => {
                    let out = xs
                        .iter()
                        .zip(ys)
                        .map(|(x, y)| binary(self, name, x, y))
                        .collect();
                    Ok(rebuild(s, out))
                }
                (Some(_), Some(_)) => err("shape mismatch"),
                _ => err("type"),
            },
        }
    }

    pub fn tensor_prim(&mut self, name: &str, args: Vec<Value>) -> Flow {
        let n = self.n;
        let want = |k: usize| -> Result<(), Signal> {
            if args.len() == k {
                Ok(())
            } else {
                err("arity")
            }
        };
        match name {
            "vec" => {
                if args.is_empty() {
                    return err("arity");
                }
                let xs = args
                    .iter()
                    .map(|a| num(a).cloned())
                    .collect::<Result<_, _>>()?;
                Ok(Value::Vector(xs))
            }
            "mat" => {
                if args.is_empty() {
                    return err("arity");
                }
                let rows = args.iter().map(vector).collect::<Result<Vec<_>, _>>()?;
                let c = rows[0].len();
                if rows.iter().any(|r| r.len() != c) {
                    return err("shape mismatch");
                }
                Ok(Value::Matrix(rows.len(), c, rows.concat()))
            }
            "ref" => {
                want(2)?;
                let i = index(&args[1])?;
                match &args[0] {
                    Value::Vector(xs) if i < xs.len() => Ok(Value::Num(xs[i].clone())),
                    Value::Matrix(r, c, xs) if i < *r => {
                        Ok(Value::Vector(xs[i * c..(i + 1) * c].to_vec()))
                    }
                    _ => err("bad ref"),
                }
            }
            "vlen" => {
                want(1)?;
                Ok(Value::Num(Dual::constant(
                    vector(&args[0])?.len() as f64,
                    n,
                )))
            }
            "vsum" => {
                want(1)?;
                let xs = vector(&args[0])?;
                Ok(Value::Num(
                    xs.iter().fold(Dual::constant(0.0, n), |a, x| a.add(x)),
                ))
            }
            "dot" => {
                want(2)?;
                let (x, y) = (vector(&args[0])?, vector(&args[1])?);
                if x.len() != y.len() {
                    return err("shape mismatch");
                }
                Ok(Value::Num(dot(n, x.iter().cloned(), y.iter().cloned())))
            }
            "norm" | "normalize" => {
                want(1)?;
                let x = vector(&args[0])?;
                let sq = dot(n, x.iter().cloned(), x.iter().cloned());
                let m = sq.v.sqrt();
                let norm = sq.chain(m, if m > 0.0 { 0.5 / m } else { 0.0 });
                if name == "norm" {
                    return Ok(Value::Num(norm));
                }
                self.near(&norm, &Dual::constant(1e-8, n));
                let m = if m > 1e-8 {
                    norm
                } else {
                    Dual::constant(1e-8, n)
                };
                Ok(Value::Vector(x.iter().map(|e| e.div(&m)).collect()))
            }
            "cross" => {
                want(2)?;
                let (a, b) = (vector(&args[0])?, vector(&args[1])?);
                if a.len() != 3 || b.len() != 3 {
                    return err("shape mismatch");
                }
                let c = |i: usize, j: usize| a[i].mul(&b[j]).sub(&a[j].mul(&b[i]));
                Ok(Value::Vector(vec![c(1, 2), c(2, 0), c(0, 1)]))
            }
            "scale" => {
                want(2)?;
                match (&args[0], &args[1]) {
                    (Value::Num(_), Value::Num(_)) => err("type"),
                    (s @ Value::Num(_), t) | (t, s @ Value::Num(_)) => self.elementwise("*", s, t),
                    _ => err("type"),
                }
            }
            "outer" => {
                want(2)?;
                let (a, b) = (vector(&args[0])?, vector(&args[1])?);
                let xs = a
                    .iter()
                    .flat_map(|x| b.iter().map(move |y| x.mul(y)))
                    .collect();
                Ok(Value::Matrix(a.len(), b.len(), xs))
            }
            "matvec" => {
                want(2)?;
                let (r, c, m) = matrix(&args[0])?;
                let v = vector(&args[1])?;
                if v.len() != c {
                    return err("shape mismatch");
                }
                let xs = (0..r)
                    .map(|i| dot(n, m[i * c..(i + 1) * c].iter().cloned(), v.iter().cloned()))
                    .collect();
                Ok(Value::Vector(xs))
            }
            "matmul" => {
                want(2)?;
                let (r, k, a) = matrix(&args[0])?;
                let (k2, c, b) = matrix(&args[1])?;
                if k != k2 {
                    return err("shape mismatch");
                }
                let xs = (0..r * c)
                    .map(|e| {
                        let (i, j) = (e / c, e % c);
                        dot(
                            n,
                            a[i * k..(i + 1) * k].iter().cloned(),
                            (0..k).map(|t| b[t * c + j].clone()),
                        )
                    })
                    .collect();
                Ok(Value::Matrix(r, c, xs))
            }
            "transpose" => {
                want(1)?;
                let (r, c, a) = matrix(&args[0])?;
                let xs = (0..r * c).map(|e| a[(e % r) * c + e / r].clone()).collect();
                Ok(Value::Matrix(c, r, xs))
            }
            "trace" => {
                want(1)?;
                let (r, c, a) = matrix(&args[0])?;
                let t = (0..r.min(c)).fold(Dual::constant(0.0, n), |acc, i| acc.add(&a[i * c + i]));
                Ok(Value::Num(t))
            }
            "det" | "logdet" | "inv" => {
                want(1)?;
                let (r, c, a) = matrix(&args[0])?;
                if r != c {
                    return err("shape mismatch");
                }
                let d = det(r, a, n);
                match name {
                    "det" => Ok(Value::Num(d)),
                    "logdet" => Ok(Value::Num(d.chain(d.v.abs().ln(), 1.0 / d.v))),
                    _ => {
                        // Z[i][j] = (−1)^(i+j) det(minor(j, i)) / det A
                        let xs = (0..r * r)
                            .map(|e| {
                                let (i, j) = (e / r, e % r);
                                let cof = if r == 1 {
                                    Dual::constant(1.0, n)
                                } else {
                                    det(r - 1, &minor(r, a, j, i), n)
                                };
                                let cof = if (i + j) % 2 == 0 { cof } else { cof.neg() };
                                cof.div(&d)
                            })
                            .collect();
                        Ok(Value::Matrix(r, r, xs))
                    }
                }
            }
            _ => {
                // eye, zeros, ones: constants of a structural size.
                want(1)?;
                let k = index(&args[0])?;
                if k < 1 {
                    return err("size must be at least 1");
                }
                Ok(match name {
                    "eye" => Value::Matrix(
                        k,
                        k,
                        (0..k * k)
                            .map(|e| Dual::constant(if e / k == e % k { 1.0 } else { 0.0 }, n))
                            .collect(),
                    ),
                    _ => Value::Vector(vec![
                        Dual::constant(
                            if name == "ones" { 1.0 } else { 0.0 },
                            n
                        );
                        k
                    ]),
                })
            }
        }
    }
}
