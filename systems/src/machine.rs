//! The evaluator a lane group keeps between stages.
//!
//! The walk stage evaluates the group's program and leaves the result and the recorded tape in
//! the group's [`Machine`]; the backward stage later replays that tape in reverse from the same
//! machine. Arenas, payload and tape buffers stay allocated from step to step.

use bevy_ecs::prelude::*;
use ndvm_engine::Vm;
use ndvm_engine::value::Value;

/// A lane group's evaluator and the value its last walk returned.
#[derive(Component, Debug, Default)]
pub struct Machine {
    pub vm: Vm<f64>,
    pub result: Option<Value>,
}

/// An engine error as one line: where (line and column in the candidate's source) and what.
pub fn locate(e: &ndvm_engine::Error, src: &str) -> String {
    match e.span {
        Some(span) => {
            let (line, col) = span.line_col(src);
            format!("line {line}, column {col}: {e}")
        }
        None => e.to_string(),
    }
}
