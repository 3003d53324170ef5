//! Programs as mathematics: skeletons and small trees ([`expr`]), equations in sympy's and
//! LaTeX's notation ([`infix`]), and nice constants ([`snap`]).

pub mod expr;
pub mod infix;
pub mod snap;
