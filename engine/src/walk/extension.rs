//! Calling a custom primitive ([`crate::extension`]) during the walk.
//!
//! The operands must be numbers. Constants fold (no tape node); otherwise the primitive's
//! forward kernel runs over the active lanes only (gathered into `f64` columns, results
//! rounded to `R`), and one [`Op::Ext`] node records the call and its operands for the
//! backward pass.

use super::{Next, Vm};
use crate::error::{ErrorKind, Result};
use crate::extension::EXT_BASE;
use crate::prims::scalar::Op;
use crate::program::{NodeId, Program};
use crate::real::Real;
use crate::tape::{ExtArg, ExtCall, Form};
use crate::value::{Value, tag};

impl<R: Real> Vm<R> {
    /// Applies custom primitive `id` (`EXT_BASE + index`) to `vals[args..]`, then cuts the value
    /// stack back to `drop`.
    pub(super) fn apply_ext(
        &mut self,
        program: &Program,
        node: NodeId,
        id: u32,
        args: usize,
        drop: usize,
    ) -> Result<Next> {
        let index = id.wrapping_sub(EXT_BASE);
        let Some(prim) = program.primitives.get(index as usize).cloned() else {
            return Err(self.error(
                program,
                node,
                ErrorKind::Type,
                "unknown primitive".to_string(),
            ));
        };
        let operands: Vec<Value> = self.vals[args..].to_vec();
        let name = prim.name();
        if operands.len() != prim.arity() {
            let n = prim.arity();
            let msg = format!(
                "`{name}` takes {n} operand{}, got {}",
                if n == 1 { "" } else { "s" },
                operands.len()
            );
            return Err(self.error(program, node, ErrorKind::Arity, msg));
        }
        if let Some(v) = operands.iter().find(|v| !v.is_number()) {
            let msg = format!("`{name}`: expected a number, got {}", v.kind_name());
            return Err(self.error(program, node, ErrorKind::Type, msg));
        }
        self.vals.truncate(drop);
        if operands.iter().all(|v| v.tag == tag::CONST) {
            let cols: Vec<[f64; 1]> = operands
                .iter()
                .map(|v| [v.const_value::<R>().to_f64()])
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(|c| &c[..]).collect();
            let mut out = [0.0];
            prim.forward(&refs, &mut out);
            return Ok(Next::Return(Value::constant(R::from_f64(out[0]))));
        }
        let out = self.alloc_slots(program, 1, node)?;
        let cols: Vec<Column<R>> = operands
            .iter()
            .map(|v| match v.tag {
                tag::CONST => Column::Const(v.const_value::<R>()),
                _ => Column::Slot(v.slot),
            })
            .collect();
        let layout = self.lane_sets.layout(self.active);
        forward_lanes(&*prim, &cols, &mut self.payload, layout, out);
        if self.record {
            if self.tape.primitives.is_empty() {
                self.tape.primitives = program.primitives.clone();
            }
            let start = self.tape.ext_args.len() as u32;
            for v in &operands {
                let arg = if v.tag == tag::CONST {
                    ExtArg::Const(self.tape.constant(v.const_value::<R>()))
                } else if self.payload.all_constant(v.slot, 1) {
                    ExtArg::Data(v.slot)
                } else {
                    ExtArg::Slot(v.slot)
                };
                self.tape.ext_args.push(arg);
            }
            self.tape.ext.push(ExtCall {
                prim: index,
                start,
                len: operands.len() as u32,
            });
            let call = (self.tape.ext.len() - 1) as u32;
            self.record_op(program, node, Op::Ext, Form::ConstConst, (out, call, 0), 0)?;
        }
        Ok(Next::Return(Value::lanes(out)))
    }
}

/// An operand of a custom primitive over lanes: a payload slot or a constant.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Column<R> {
    Slot(u32),
    Const(R),
}

/// Runs `prim`'s forward kernel over the lanes of `layout` into slot `out`: operands gathered
/// into `f64` columns, results rounded to `R` (the walk and the replay share it, so they agree
/// bit for bit).
pub(crate) fn forward_lanes<R: Real>(
    prim: &dyn crate::extension::Primitive,
    operands: &[Column<R>],
    payload: &mut crate::payload::Payload<R>,
    layout: crate::lanes::Layout,
    out: u32,
) {
    let b = payload.lanes;
    let mut active = Vec::with_capacity(b);
    layout.for_ranges(b, |s, e| active.extend(s..e));
    let cols: Vec<Vec<f64>> = operands
        .iter()
        .map(|c| match *c {
            Column::Const(x) => vec![x.to_f64(); active.len()],
            Column::Slot(s) => {
                let x = payload.lane_values(s);
                active.iter().map(|&l| x[l].to_f64()).collect()
            }
        })
        .collect();
    let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    let mut ys = vec![0.0; active.len()];
    prim.forward(&refs, &mut ys);
    let dest = payload.lane_values_mut(out);
    for (&l, &y) in active.iter().zip(&ys) {
        dest[l] = R::from_f64(y);
    }
}
