//! Feature families: what a generated program exercises. The coverage table of `ndvm fuzz`
//! has one row per family; the first ten are the reference corpus's own families.

use serde::{Deserialize, Serialize};

/// One family of language features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// Number literals.
    Literal,
    /// Differentiable inputs.
    Param,
    /// `+ − *` on numbers.
    Binop,
    /// `/` with a denominator kept away from zero.
    DivGuarded,
    /// `sin cos exp log sqrt tanh atan` (arguments kept in range).
    UnaryTranscendental,
    /// `abs square` unary minus, `min max pow`.
    UnaryOther,
    Let,
    LetStar,
    /// `if` on a numeric comparison.
    IfCompare,
    /// `loop`/`recur` with a bounded counter.
    LoopRecur,
    /// `letrec` self-recursion.
    Letrec,
    /// Top-level `define` of a procedure.
    Define,
    /// `cond` with several clauses and `else`.
    Cond,
    /// `and`/`or` in tests.
    AndOr,
    /// `lambda` called directly or through a local name.
    Lambda,
    /// `map`, `fold-left`, `apply`, procedures passed as arguments.
    HigherOrder,
    /// `list cons car cdr list-ref reverse length`.
    List,
    /// Vectors: `vec dot vsum norm normalize cross scale ref`, elementwise and broadcast forms.
    Vector,
    /// Matrices: `mat matmul matvec transpose trace outer eye`, rows by `ref`.
    Matrix,
    /// `det logdet inv` (closed forms up to 3×3, LU above).
    Linalg,
}

impl Feature {
    /// Every family, in table order.
    pub const ALL: [Feature; 20] = [
        Feature::Literal,
        Feature::Param,
        Feature::Binop,
        Feature::DivGuarded,
        Feature::UnaryTranscendental,
        Feature::UnaryOther,
        Feature::Let,
        Feature::LetStar,
        Feature::IfCompare,
        Feature::LoopRecur,
        Feature::Letrec,
        Feature::Define,
        Feature::Cond,
        Feature::AndOr,
        Feature::Lambda,
        Feature::HigherOrder,
        Feature::List,
        Feature::Vector,
        Feature::Matrix,
        Feature::Linalg,
    ];

    /// The family's name as the corpus files spell it (`unary_transcendental`).
    pub fn name(self) -> &'static str {
        match self {
            Feature::Literal => "literal",
            Feature::Param => "param",
            Feature::Binop => "binop",
            Feature::DivGuarded => "div_guarded",
            Feature::UnaryTranscendental => "unary_transcendental",
            Feature::UnaryOther => "unary_other",
            Feature::Let => "let",
            Feature::LetStar => "let_star",
            Feature::IfCompare => "if_compare",
            Feature::LoopRecur => "loop_recur",
            Feature::Letrec => "letrec",
            Feature::Define => "define",
            Feature::Cond => "cond",
            Feature::AndOr => "and_or",
            Feature::Lambda => "lambda",
            Feature::HigherOrder => "higher_order",
            Feature::List => "list",
            Feature::Vector => "vector",
            Feature::Matrix => "matrix",
            Feature::Linalg => "linalg",
        }
    }
}
