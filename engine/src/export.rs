//! Export: a recorded walk as plain data, for executors outside the engine.
//!
//! The engine's replay ([`crate::replay`]) recomputes a recorded tape's numbers for new inputs
//! on the CPU. Another executor — the GPU system (`ndvm-gpu`) — can run the same tape elsewhere
//! if it sees what the replay sees: the nodes and guards ([`Tape`]), the lane sets the nodes ran
//! over, the payload's values (every leaf — inputs, data, constant tensor elements — is written
//! there by the walk, the rest by nodes), and which slots hold the program's inputs and result.
//! [`Recording`] is that view, borrowed from the evaluator; nothing is copied.
//!
//! The contract an executor keeps (the CPU replay's): run the nodes in order over the lanes of
//! each node's set, check each guard once the nodes before it have run (marking the lanes where
//! it no longer holds: those must be walked again), then run the VJPs in reverse from the
//! result's slots seeded with 1. A lane whose guards held equals a fresh walk's lane, up to the
//! executor's arithmetic.
//!
//! Between steps of a calibration, [`Vm::rebind`] writes new input values into their slots (the
//! same checks [`Vm::replay`] makes) without running anything, so the executor copies only the
//! input rows of [`Recording::primal`].

use crate::bindings::Bindings;
use crate::lanes::LaneSets;
use crate::program::Program;
use crate::real::Real;
use crate::tape::Tape;
use crate::value::tag;
use crate::walk::Vm;

/// Where a program input lives in the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputSlots {
    /// The first slot (a number has one; a matrix its elements, row-major).
    pub slot: u32,
    pub len: u32,
    /// Whether it is a number in lanes (gradients are read at its slot).
    pub number: bool,
}

/// A recorded walk, borrowed from the evaluator that recorded it (see the module docs).
#[derive(Debug)]
pub struct Recording<'a, R> {
    pub tape: &'a Tape<R>,
    /// The lane count B; slot `s` of lane `l` is `primal[s * lanes + l]`.
    pub lanes: usize,
    /// Numeric slots allocated.
    pub slots: usize,
    /// Every slot's current values.
    pub primal: &'a [R],
    /// Slot ranges `(first, count)` written without a node: an executor copies these before it
    /// runs the nodes.
    pub leaves: &'a [(u32, u32)],
    pub sets: &'a LaneSets,
    /// Per program input (in the program's order), where it lives; `None` when the walk folded
    /// it as a constant.
    pub inputs: Vec<Option<InputSlots>>,
    /// The result's slots (a number has one): the backward pass seeds them with 1.
    pub result: std::ops::Range<u32>,
}

impl<R: Real> Vm<R> {
    /// The last recorded walk, when it finished with a numeric result (see the module docs).
    pub fn recording(&self) -> Option<Recording<'_, R>> {
        let result = self.replayable?;
        let seeds = match (result.tag, self.shape(result)) {
            (tag::NUM, _) => result.slot..result.slot + 1,
            (_, Some(s)) => result.slot..result.slot + s.len(),
            _ => return None,
        };
        let inputs = self
            .inputs
            .iter()
            .map(|&v| match (v.tag, self.shape(v)) {
                (tag::NUM, _) => Some(InputSlots {
                    slot: v.slot,
                    len: 1,
                    number: true,
                }),
                (_, Some(s)) => Some(InputSlots {
                    slot: v.slot,
                    len: s.len(),
                    number: false,
                }),
                _ => None,
            })
            .collect();
        Some(Recording {
            tape: &self.tape,
            lanes: self.payload.lanes,
            slots: self.payload.slots(),
            primal: self.payload.values(),
            leaves: &self.payload.leaves,
            sets: &self.lane_sets,
            inputs,
            result: seeds,
        })
    }

    /// Writes `bindings` into the recorded walk's input slots without running anything, with
    /// the checks of [`Vm::replay`]: the same program and lane count, constant inputs unchanged,
    /// every other input of the same kind and shape. On an error the tape is stale (no longer
    /// replayable) and the reason is returned.
    pub fn rebind(
        &mut self,
        program: &Program,
        bindings: &Bindings<R>,
    ) -> Result<(), &'static str> {
        if self.replayable.is_none() {
            return Err("no recorded walk to replay");
        }
        self.payload.has_grads = false;
        let r = self.rebind_inputs(program, bindings);
        if r.is_err() {
            self.replayable = None;
        }
        r
    }
}
