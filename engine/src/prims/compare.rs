//! Numeric comparisons (docs/language-reference.md §6.2): IEEE relations, false whenever NaN is
//! involved.

use crate::real::Real;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Lt,
    Gt,
    Le,
    Ge,
}

impl Cmp {
    #[inline(always)]
    pub fn eval<R: Real>(self, a: R, b: R) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Lt => a < b,
            Cmp::Gt => a > b,
            Cmp::Le => a <= b,
            Cmp::Ge => a >= b,
        }
    }

    pub fn from_prim(p: super::Prim) -> Option<Cmp> {
        use super::Prim;
        Some(match p {
            Prim::NumEq => Cmp::Eq,
            Prim::Lt => Cmp::Lt,
            Prim::Gt => Cmp::Gt,
            Prim::Le => Cmp::Le,
            Prim::Ge => Cmp::Ge,
            _ => return None,
        })
    }
}
