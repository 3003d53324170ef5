//! The payload table: dense, lane-major numeric buffers.
//!
//! Slot `s`, lane `b` lives at `s * lanes + b`; a matrix occupies consecutive slots (element-major,
//! lane-minor), so every kernel is a loop over a contiguous lane slice that the compiler
//! vectorizes. The adjoint buffer mirrors the primal one and is filled by the backward pass.
//! Per-lane booleans (comparison results that differ across lanes) have their own table.
//!
//! The primal buffer keeps its length between walks and is only zero-filled where it grows: every
//! allocated slot is written in every lane (by its kernel or its input) before anything reads it,
//! so a reused evaluator skips refilling memory it is about to overwrite.
//!
//! The adjoint buffer is kept zero between backward passes instead of being cleared before each:
//! the backward pass zeroes every node's output adjoint right after the node's VJP has read it
//! (while it is in cache), so afterwards only the **leaves** — slots no node produced (inputs,
//! constant tensor elements) — hold adjoints. Those stay readable as gradients and are zeroed at
//! the start of the next backward pass. At wide batches this replaces a pass over megabytes of
//! memory with stores to lines the VJPs just touched.

use crate::bindings::Input;
use crate::real::Real;

#[derive(Debug, Default)]
pub struct Payload<R> {
    pub lanes: usize,
    pub primal: Vec<R>,
    pub adjoint: Vec<R>,
    pub bools: Vec<bool>,
    /// Numeric slots allocated (kept so allocation needs no division).
    slots: usize,
    /// Slot ranges `(first, count)` written by the walk without a tape node (inputs, constants).
    pub(crate) leaves: Vec<(u32, u32)>,
    /// Adjoint ranges (flat indices) left non-zero by the last backward pass.
    pub(crate) dirty: Vec<(usize, usize)>,
    /// Whether the adjoints belong to the current walk (a backward pass ran after it).
    pub(crate) has_grads: bool,
    /// Per slot: a leaf that is not a parameter (data, constant tensor elements). No gradient
    /// is wanted there, so the backward pass does not accumulate into it.
    pub(crate) constant: Vec<bool>,
}

impl<R: Real> Payload<R> {
    pub fn reset(&mut self, lanes: usize) {
        self.lanes = lanes;
        self.bools.clear();
        self.leaves.clear();
        self.has_grads = false;
        self.constant.clear();
        self.slots = 0;
    }

    /// Marks `n` slots from `slot` as a leaf that needs no gradient.
    pub fn constant_leaf(&mut self, slot: u32, n: u32) {
        self.leaf(slot, n);
        let (s, e) = (slot as usize, (slot + n) as usize);
        if self.constant.len() < e {
            self.constant.resize(e, false);
        }
        self.constant[s..e].fill(true);
    }

    /// Whether every slot of `[slot, slot + n)` is a constant leaf.
    pub fn all_constant(&self, slot: u32, n: u32) -> bool {
        self.constant
            .get(slot as usize..(slot + n) as usize)
            .is_some_and(|c| c.iter().all(|&x| x))
    }

    /// Marks `n` slots from `slot` as written without a tape node.
    pub fn leaf(&mut self, slot: u32, n: u32) {
        self.leaves.push((slot, n));
    }

    /// Number of numeric slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes held by primal values and per-lane booleans.
    pub fn bytes(&self) -> u64 {
        (self.slots * self.lanes * std::mem::size_of::<R>() + self.bools.len()) as u64
    }

    /// The primal values of every allocated slot.
    pub fn values(&self) -> &[R] {
        &self.primal[..self.slots * self.lanes]
    }

    /// Writes an input's values into the slots from `slot` on (one slot, or a matrix's elements
    /// row-major), in every lane.
    #[inline(always)]
    pub fn write_input(&mut self, slot: u32, input: &Input<R>) {
        match input {
            // The calibration step's commonest write, kept small enough to inline.
            Input::Scalar(x) if self.lanes == 1 => self.primal[slot as usize] = *x,
            _ => self.write_input_lanes(slot, input),
        }
    }

    fn write_input_lanes(&mut self, slot: u32, input: &Input<R>) {
        let lanes = self.lanes;
        match input {
            Input::Scalar(x) => self.lane_values_mut(slot).fill(*x),
            Input::Lanes(xs) => self.lane_values_mut(slot).copy_from_slice(&xs[..lanes]),
            Input::Matrix { rows, cols, data } if lanes == 1 => {
                let n = (rows * cols).min(data.len());
                self.primal[slot as usize..slot as usize + n].copy_from_slice(&data[..n]);
            }
            Input::Matrix { rows, cols, data } => {
                for (e, &x) in data.iter().enumerate().take(rows * cols) {
                    self.lane_values_mut(slot + e as u32).fill(x);
                }
            }
            Input::LaneMatrices { data, .. } => {
                for (l, m) in data.iter().enumerate().take(lanes) {
                    for (e, &x) in m.iter().enumerate() {
                        self.lane_values_mut(slot + e as u32)[l] = x;
                    }
                }
            }
        }
    }

    /// Appends `n` slots (zeroed) and returns the first.
    pub fn alloc(&mut self, n: usize) -> u32 {
        let s = self.slots;
        self.slots += n;
        let len = self.slots * self.lanes;
        if self.primal.len() < len {
            self.primal.resize(len, R::zero());
        }
        s as u32
    }

    #[inline]
    pub fn lane_values(&self, slot: u32) -> &[R] {
        let b = self.lanes;
        &self.primal[slot as usize * b..(slot as usize + 1) * b]
    }

    #[inline]
    pub fn lane_values_mut(&mut self, slot: u32) -> &mut [R] {
        let b = self.lanes;
        &mut self.primal[slot as usize * b..(slot as usize + 1) * b]
    }

    pub fn alloc_bools(&mut self, values: &[bool]) -> u32 {
        let s = self.bools.len() / self.lanes.max(1);
        self.bools.extend_from_slice(values);
        s as u32
    }

    pub fn bool_lanes(&self, slot: u32) -> &[bool] {
        let b = self.lanes;
        &self.bools[slot as usize * b..(slot as usize + 1) * b]
    }

    /// The adjoint of `slot` after a backward pass over the current walk (empty before one).
    pub fn grad(&self, slot: u32) -> &[R] {
        if !self.has_grads {
            return &[];
        }
        let b = self.lanes;
        self.adjoint
            .get(slot as usize * b..(slot as usize + 1) * b)
            .unwrap_or(&[])
    }
}
