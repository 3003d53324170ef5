//! The evaluation API: run a program over lanes, get per-lane results and gradients.
//!
//! [`evaluate`] is the one-call entry point (what `ndvm run` uses); [`Vm::eval`] and
//! [`Vm::backward`] are the lower-level steps for callers that reuse buffers across evaluations.

use crate::backward::Pooling;
use crate::bindings::{Bindings, Input};
use crate::error::Result;
use crate::program::Program;
use crate::real::Real;
use crate::value::{Shape, Value, tag};
use crate::walk::Vm;

/// A program's result in every lane.
#[derive(Clone, Debug, PartialEq)]
pub enum Output<R> {
    /// A number per lane.
    Numbers(Vec<R>),
    /// A vector per lane.
    Vector(Vec<Vec<R>>),
    /// A matrix per lane: `data[lane]` is row-major.
    Matrix {
        rows: usize,
        cols: usize,
        data: Vec<Vec<R>>,
    },
    /// Any other value, written as Scheme data, per lane.
    Data(Vec<String>),
}

/// The result of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation<R> {
    pub lanes: usize,
    pub result: Output<R>,
    /// Per-lane gradient of the result with respect to each parameter input, in binding order
    /// (empty when gradients were not requested).
    pub grads: Vec<(String, Vec<R>)>,
}

/// Evaluates `program` over `bindings`, with gradients when `grad` is set.
pub fn evaluate<R: Real>(
    vm: &mut Vm<R>,
    program: &Program,
    bindings: &Bindings<R>,
    grad: bool,
) -> Result<Evaluation<R>> {
    let v = vm.eval(program, bindings, grad)?;
    Ok(vm.evaluation(program, bindings, v, grad))
}

impl<R: Real> Vm<R> {
    /// The [`Evaluation`] of a finished walk whose result is `v`: with `grad`, runs the backward
    /// pass and collects every parameter input's gradient. (A client walk ends here too.)
    pub fn evaluation(
        &mut self,
        program: &Program,
        bindings: &Bindings<R>,
        v: Value,
        grad: bool,
    ) -> Evaluation<R> {
        let grads = if grad {
            self.backward(v);
            bindings
                .items
                .iter()
                .filter(|b| b.param && !matches!(b.value, Input::Matrix { .. }))
                .map(|b| (b.name.clone(), self.input_grad(program, &b.name)))
                .collect()
        } else {
            Vec::new()
        };
        Evaluation {
            lanes: self.lanes(),
            result: self.output(program, v),
            grads,
        }
    }

    /// The reverse pass from `result` (seeded with 1 in every lane and element).
    pub fn backward(&mut self, result: Value) {
        let seeds = match (result.tag, self.shape(result)) {
            (tag::NUM, _) => result.slot..result.slot + 1,
            (_, Some(s)) => result.slot..result.slot + s.len(),
            _ => 0..0,
        };
        match &self.flat {
            // Only a replay builds it, and only for the tape it unrolled.
            Some(flat) => flat.backward(&self.tape, &mut self.payload, seeds, &mut self.work),
            None => crate::backward::backward(
                &self.tape,
                &mut self.payload,
                &self.lane_sets,
                seeds,
                (&mut self.placement, self.pooling),
            ),
        }
    }

    /// Sets when the backward pass pools adjoints (see [`crate::backward::Placement`]); the
    /// default, [`Pooling::Auto`], pools wide batches. Every setting gives the same bits.
    pub fn set_pooling(&mut self, pooling: Pooling) {
        self.pooling = pooling;
        self.placement = None;
    }

    /// Per-lane gradient with respect to input `name` after [`Vm::backward`] (zeros for an
    /// input that is not a differentiable number).
    pub fn input_grad(&self, program: &Program, name: &str) -> Vec<R> {
        let lanes = self.payload.lanes;
        let v = program
            .inputs
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.inputs.get(i));
        match v {
            Some(v) if v.tag == tag::NUM => {
                let g = self.payload.grad(v.slot);
                if g.is_empty() {
                    vec![R::zero(); lanes]
                } else {
                    g.to_vec()
                }
            }
            _ => vec![R::zero(); lanes],
        }
    }

    /// Per-lane gradient with respect to the program's input `index` (in [`Program::inputs`]
    /// order) after [`Vm::backward`]; empty for an input that is not a differentiable number.
    pub fn grad(&self, index: usize) -> &[R] {
        match self.inputs.get(index) {
            Some(v) if v.tag == tag::NUM => self.payload.grad(v.slot),
            _ => &[],
        }
    }

    /// The number in every lane, if `v` is a number.
    pub fn numbers(&self, v: Value) -> Option<Vec<R>> {
        match v.tag {
            tag::CONST => Some(vec![v.const_value::<R>(); self.payload.lanes]),
            tag::NUM => Some(self.payload.lane_values(v.slot).to_vec()),
            _ => None,
        }
    }

    /// [`Vm::numbers`] widened to `f64`, into `out` (its buffer reused: a replay's outputs,
    /// every step); false, with `out` untouched, when `v` is not a number.
    pub fn numbers_into(&self, v: Value, out: &mut Vec<f64>) -> bool {
        let lanes = self.payload.lanes;
        match v.tag {
            tag::CONST => {
                out.clear();
                out.resize(lanes, Real::to_f64(v.const_value::<R>()));
            }
            tag::NUM => {
                out.clear();
                out.extend(
                    self.payload
                        .lane_values(v.slot)
                        .iter()
                        .map(|&x| Real::to_f64(x)),
                );
            }
            _ => return false,
        }
        true
    }

    /// `v` in every lane, as numbers, matrices or printed data.
    pub fn output(&self, program: &Program, v: Value) -> Output<R> {
        let lanes = self.payload.lanes;
        if let Some(xs) = self.numbers(v) {
            return Output::Numbers(xs);
        }
        if let Some(shape) = self.shape(v) {
            let data = (0..lanes)
                .map(|l| {
                    (0..shape.len())
                        .map(|e| self.payload.lane_values(v.slot + e)[l])
                        .collect()
                })
                .collect();
            return match shape {
                Shape::Vector(_) => Output::Vector(data),
                Shape::Matrix(r, c) => Output::Matrix {
                    rows: r as usize,
                    cols: c as usize,
                    data,
                },
            };
        }
        Output::Data((0..lanes).map(|l| self.render(program, v, l)).collect())
    }

    /// `v` in lane `lane`, written as Scheme data.
    pub fn render(&self, program: &Program, v: Value, lane: usize) -> String {
        let mut out = String::new();
        self.render_into(program, v, lane, &mut out);
        out
    }

    fn render_into(&self, program: &Program, v: Value, lane: usize, out: &mut String) {
        match v.tag {
            tag::NIL => out.push_str("()"),
            tag::BOOL => out.push_str(if v.aux != 0 { "#t" } else { "#f" }),
            tag::BOOLS => out.push_str(if self.payload.bool_lanes(v.slot)[lane] {
                "#t"
            } else {
                "#f"
            }),
            tag::CONST => out.push_str(&format_number(v.const_value::<R>())),
            tag::NUM => out.push_str(&format_number(self.payload.lane_values(v.slot)[lane])),
            tag::SYMBOL => out.push_str(program.symbol_name(crate::syntax::symbols::Sym(v.aux))),
            tag::PRIM => {
                let ext = v.aux.checked_sub(crate::extension::EXT_BASE);
                let name = match (crate::prims::Prim::from_id(v.aux), ext) {
                    (Some(p), _) => p.name(),
                    (None, Some(i)) => program.primitives.get(i as usize).map_or("?", |p| p.name()),
                    _ => "?",
                };
                out.push_str(&format!("#<procedure {name}>"));
            }
            tag::CLOSURE => out.push_str("#<procedure>"),
            tag::MATRIX | tag::VECTOR => {
                // Written as the program text that builds it: `[1 2]`, `(mat [1 2] [3 4])`.
                let (rows, cols, matrix) = match self.shape(v) {
                    Some(Shape::Matrix(r, c)) => (r, c, true),
                    Some(Shape::Vector(n)) => (1, n, false),
                    None => (0, 0, false),
                };
                if matrix {
                    out.push_str("(mat ");
                }
                for i in 0..rows {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push('[');
                    for j in 0..cols {
                        if j > 0 {
                            out.push(' ');
                        }
                        let x = self.payload.lane_values(v.slot + i * cols + j)[lane];
                        out.push_str(&format_number(x));
                    }
                    out.push(']');
                }
                if matrix {
                    out.push(')');
                }
            }
            tag::PAIR => {
                out.push('(');
                let mut cur = v;
                let mut first = true;
                while let Some([a, d]) = self.heap.pair(cur) {
                    if !first {
                        out.push(' ');
                    }
                    first = false;
                    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                        self.render_into(program, a, lane, out)
                    });
                    cur = d;
                }
                if cur.tag != tag::NIL {
                    out.push_str(" . ");
                    self.render_into(program, cur, lane, out);
                }
                out.push(')');
            }
            _ => out.push_str("#<undefined>"),
        }
    }
}

/// Shortest round-trip decimal; `+inf.0`, `-inf.0`, `+nan.0` for non-finite values.
pub fn format_number<R: Real>(x: R) -> String {
    if x.is_nan() {
        "+nan.0".into()
    } else if x.is_infinite() {
        if x > R::zero() {
            "+inf.0".into()
        } else {
            "-inf.0".into()
        }
    } else {
        format!("{x}")
    }
}
