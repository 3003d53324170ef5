//! Primitives: the procedures of the base environment (docs/language-reference.md §6).
//!
//! Every primitive has an id ([`Prim`]), a name and an arity; the decoder resolves names to ids
//! once. Numeric primitives are defined in [`scalar`] as a forward formula and a vector-Jacobian
//! product, run over lanes by [`kernels`] (with [`fastmath`] for f32 `exp`/`sin`/`cos`);
//! comparisons are in [`compare`], list helpers in [`lists`], the tensor
//! primitives that are not elementwise in [`linalg`]; the prelude procedures that call
//! back into the program (`map`, `filter`, the folds, `apply`) are driven by the walk.

pub mod compare;
pub mod fastmath;
pub mod kernels;
pub mod linalg;
pub mod lists;
pub mod scalar;

macro_rules! prims {
    ($($v:ident = $name:literal, $min:literal, $max:expr;)*) => {
        /// A primitive's id.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum Prim { $($v),* }

        impl Prim {
            /// Every primitive, in id order.
            pub const ALL: &'static [Prim] = &[$(Prim::$v),*];

            /// The name the base environment binds.
            pub fn name(self) -> &'static str {
                match self { $(Prim::$v => $name),* }
            }

            /// Minimum and maximum operand count (`u16::MAX`: variadic).
            pub fn arity(self) -> (u16, u16) {
                match self { $(Prim::$v => ($min, $max)),* }
            }
        }
    };
}

const N: u16 = u16::MAX;

prims! {
    Add = "+", 0, N; Sub = "-", 1, N; Mul = "*", 0, N; Div = "/", 1, N;
    NumEq = "=", 2, N; Lt = "<", 2, N; Gt = ">", 2, N; Le = "<=", 2, N; Ge = ">=", 2, N;
    Not = "not", 1, 1;
    Sin = "sin", 1, 1; Cos = "cos", 1, 1; Tan = "tan", 1, 1; Asin = "asin", 1, 1; Acos = "acos", 1, 1;
    Atan = "atan", 1, 2; Sinh = "sinh", 1, 1; Cosh = "cosh", 1, 1; Tanh = "tanh", 1, 1;
    Exp = "exp", 1, 1; Log = "log", 1, 1; Sqrt = "sqrt", 1, 1; Abs = "abs", 1, 1; Square = "square", 1, 1;
    Floor = "floor", 1, 1; Ceiling = "ceiling", 1, 1; Round = "round", 1, 1; Truncate = "truncate", 1, 1;
    Pow = "pow", 2, 2; Min = "min", 2, 2; Max = "max", 2, 2; Modulo = "modulo", 2, 2; Remainder = "remainder", 2, 2;
    ZeroP = "zero?", 1, 1; PositiveP = "positive?", 1, 1; NegativeP = "negative?", 1, 1;
    NumberP = "number?", 1, 1; BooleanP = "boolean?", 1, 1; SymbolP = "symbol?", 1, 1; NullP = "null?", 1, 1;
    PairP = "pair?", 1, 1; ProcedureP = "procedure?", 1, 1;
    Eq = "eq?", 2, 2; Equal = "equal?", 2, 2;
    Cons = "cons", 2, 2; Car = "car", 1, 1; Cdr = "cdr", 1, 1; List = "list", 0, N; Length = "length", 1, 1;
    Append = "append", 0, N; Reverse = "reverse", 1, 1; ListRef = "list-ref", 2, 2; Apply = "apply", 2, N;
    Caar = "caar", 1, 1; Cadr = "cadr", 1, 1; Cdar = "cdar", 1, 1; Cddr = "cddr", 1, 1;
    Caaar = "caaar", 1, 1; Caadr = "caadr", 1, 1; Cadar = "cadar", 1, 1; Caddr = "caddr", 1, 1;
    Cdaar = "cdaar", 1, 1; Cdadr = "cdadr", 1, 1; Cddar = "cddar", 1, 1; Cdddr = "cdddr", 1, 1;
    Map = "map", 2, N; Filter = "filter", 2, 2; FoldLeft = "fold-left", 3, 3; FoldRight = "fold-right", 3, 3;
    Reduce = "reduce", 3, 3; Assoc = "assoc", 2, 2; Member = "member", 2, 2;
    Vec = "vec", 1, N; Mat = "mat", 1, N; Ref = "ref", 2, 2; VLen = "vlen", 1, 1; VSum = "vsum", 1, 1;
    Dot = "dot", 2, 2; Cross = "cross", 2, 2; Norm = "norm", 1, 1; Normalize = "normalize", 1, 1;
    Scale = "scale", 2, 2; Outer = "outer", 2, 2; MatVec = "matvec", 2, 2; MatMul = "matmul", 2, 2;
    Transpose = "transpose", 1, 1; Trace = "trace", 1, 1; Det = "det", 1, 1; LogDet = "logdet", 1, 1;
    Inv = "inv", 1, 1; Eye = "eye", 1, 1; Zeros = "zeros", 1, 1; Ones = "ones", 1, 1;
}

impl Prim {
    /// The primitive a base-environment name denotes. `expt` is `pow` and `eqv?` is `eq?`: the
    /// same procedures under second names.
    pub fn from_name(name: &str) -> Option<Prim> {
        /// Every name, built once: the decoder looks up each operator it meets.
        static BY_NAME: std::sync::LazyLock<foldhash::HashMap<&'static str, Prim>> =
            std::sync::LazyLock::new(|| {
                let mut m: foldhash::HashMap<_, _> =
                    Prim::ALL.iter().map(|&p| (p.name(), p)).collect();
                m.insert("expt", Prim::Pow);
                m.insert("eqv?", Prim::Eq);
                m
            });
        BY_NAME.get(name).copied()
    }

    pub fn from_id(id: u32) -> Option<Prim> {
        Prim::ALL.get(id as usize).copied()
    }

    /// Whether `n` operands fit this primitive's arity.
    pub fn accepts(self, n: usize) -> bool {
        let (lo, hi) = self.arity();
        n >= lo as usize && (hi == N || n <= hi as usize)
    }

    /// "takes 2 operands" / "takes at least 1 operand", for arity errors.
    pub fn arity_text(self) -> String {
        let (lo, hi) = self.arity();
        let s = |n: u16| if n == 1 { "" } else { "s" };
        match (lo, hi) {
            (lo, N) => format!("takes at least {lo} operand{}", s(lo)),
            (lo, hi) if lo == hi => format!("takes {lo} operand{}", s(lo)),
            (lo, hi) => format!("takes {lo} to {hi} operands"),
        }
    }
}

/// Names that are not in the language (docs/language-reference.md §5.4) with why, for the
/// unbound-name message.
pub fn unsupported(name: &str) -> Option<&'static str> {
    const MUTATION: &[&str] = &["set!", "set-car!", "set-cdr!", "vector-set!"];
    const FORMS: &[&str] = &[
        "do",
        "case",
        "define-syntax",
        "let-syntax",
        "letrec-syntax",
        "syntax-rules",
        "define-record-type",
        "call/cc",
        "call-with-current-continuation",
        "values",
        "call-with-values",
        "delay",
        "force",
        "dynamic-wind",
        "raise",
        "error",
        "guard",
        "with-exception-handler",
        "quotient",
        "exact->inexact",
        "inexact->exact",
        "exact",
        "inexact",
        "let-values",
        "define-values",
        "case-lambda",
        "parameterize",
        "quasiquote",
        "unquote",
        "display",
        "newline",
    ];
    if MUTATION.contains(&name) {
        Some("is not supported: ndvm has no mutation")
    } else if FORMS.contains(&name) {
        Some("is not supported by the ndvm dialect")
    } else {
        None
    }
}
