//! Pair and list helpers over the heap (docs/language-reference.md §6.4, §6.8). They record
//! nothing: list operations move values, and gradients follow the values to exactly the elements
//! used.

use super::Prim;
use crate::heap::Heap;
use crate::value::{Value, tag};

/// The elements of a proper list, or `None` if `v` is not one.
pub fn to_vec(heap: &Heap, mut v: Value) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    loop {
        match v.tag {
            tag::NIL => return Some(out),
            tag::PAIR => {
                let [a, d] = heap.pairs[v.slot as usize];
                out.push(a);
                v = d;
            }
            _ => return None,
        }
    }
}

/// A fresh list of `items` ending in `tail`.
pub fn from_slice(heap: &mut Heap, items: &[Value], tail: Value) -> Value {
    items.iter().rev().fold(tail, |acc, &x| heap.cons(x, acc))
}

/// The `car`/`cdr` path of a composition: `cadr` is `[Cdr, Car]` (applied left to right).
pub fn cxr_path(p: Prim) -> Option<&'static [bool]> {
    // true = car, false = cdr; in application order (the letters read right to left).
    Some(match p {
        Prim::Car => &[true],
        Prim::Cdr => &[false],
        Prim::Caar => &[true, true],
        Prim::Cadr => &[false, true],
        Prim::Cdar => &[true, false],
        Prim::Cddr => &[false, false],
        Prim::Caaar => &[true, true, true],
        Prim::Caadr => &[false, true, true],
        Prim::Cadar => &[true, false, true],
        Prim::Caddr => &[false, false, true],
        Prim::Cdaar => &[true, true, false],
        Prim::Cdadr => &[false, true, false],
        Prim::Cddar => &[true, false, false],
        Prim::Cdddr => &[false, false, false],
        _ => return None,
    })
}
