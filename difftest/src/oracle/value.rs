//! The oracle's values: boxed, reference-counted, one per program value (no lanes).

use super::dual::Dual;
use crate::sexpr::Sx;
use std::cell::RefCell;
use std::rc::Rc;

/// A value of the dialect.
#[derive(Clone, Debug)]
pub enum Value {
    Num(Dual),
    Bool(bool),
    Nil,
    Sym(String),
    Pair(Rc<(Value, Value)>),
    Closure(Rc<Closure>),
    Prim(&'static str),
    Vector(Vec<Dual>),
    /// Rows, columns and the row-major elements.
    Matrix(usize, usize, Vec<Dual>),
}

/// A `lambda` with the scope it was created in.
#[derive(Debug)]
pub struct Closure {
    pub params: Vec<String>,
    pub body: Vec<Sx>,
    pub env: Env,
}

/// A scope: names and values, then the enclosing scope. Values are `None` until initialized
/// (`letrec`, top-level definitions).
#[derive(Debug)]
pub struct Frame {
    pub names: Vec<String>,
    pub values: RefCell<Vec<Option<Value>>>,
    pub parent: Option<Env>,
}

pub type Env = Rc<Frame>;

/// A new scope inside `parent`.
pub fn scope(parent: Option<&Env>, names: Vec<String>, values: Vec<Option<Value>>) -> Env {
    Rc::new(Frame {
        names,
        values: RefCell::new(values),
        parent: parent.cloned(),
    })
}

/// Where `name` is bound: `Some(Some(v))` initialized, `Some(None)` not yet, `None` unbound.
pub fn lookup(env: &Env, name: &str) -> Option<Option<Value>> {
    let mut frame = Some(env);
    while let Some(f) = frame {
        if let Some(i) = f.names.iter().rposition(|n| n == name) {
            return Some(f.values.borrow()[i].clone());
        }
        frame = f.parent.as_ref();
    }
    None
}

impl Value {
    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Bool(false))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Value::Num(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Nil => "()",
            Value::Sym(_) => "symbol",
            Value::Pair(_) => "pair",
            Value::Closure(_) | Value::Prim(_) => "procedure",
            Value::Vector(_) => "vector",
            Value::Matrix(..) => "matrix",
        }
    }

    /// A proper list's elements.
    pub fn list_items(&self) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        let mut cur = self.clone();
        loop {
            match cur {
                Value::Nil => return Ok(out),
                Value::Pair(p) => {
                    out.push(p.0.clone());
                    cur = p.1.clone();
                }
                other => return Err(format!("not a proper list (ends in a {})", other.kind())),
            }
        }
    }

    /// A fresh proper list.
    pub fn list(items: Vec<Value>) -> Value {
        items
            .into_iter()
            .rev()
            .fold(Value::Nil, |tail, x| Value::Pair(Rc::new((x, tail))))
    }
}
