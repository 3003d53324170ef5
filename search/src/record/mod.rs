//! A calibration: every finished one (one candidate from one initial draw) becomes a
//! [`Record`], a line of the calibration log streamed to disk as it finishes. What the search
//! keeps of them is its tally ([`crate::tally`]).

pub mod views;

pub use views::{LogLine, LogTiming, ProgramLine, WireRecord};

use serde::Serialize;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// One calibration: a line of the log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// Position in the log (0, 1, 2, …).
    pub calibration: u64,
    /// The candidate (its position among all proposals) and which of its draws this is.
    pub candidate: u64,
    pub draw: u32,
    pub proposer: String,
    pub name: String,
    pub skeleton: String,
    /// The program's number in the log: `programs.jsonl` holds its source once
    /// ([`crate::log`]).
    pub program: u64,
    pub src: String,
    /// The fitted constants.
    pub params: BTreeMap<String, f64>,
    /// The training loss at those constants (`null` if it is not a number).
    pub train_loss: f64,
    /// R² on the held-out points, where there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_r2: Option<f64>,
    /// R² of the fitted trajectories integrated whole from their first observations, for a
    /// search over trajectories calibrated in windows: measured for the calibrations that join
    /// the front ([`crate::front`] chooses by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconstruction_r2: Option<f64>,
    pub success: bool,
    /// `done`, `converged`, `failed`, `non-finite` (the loss is not a number) or `stopped`.
    pub status: &'static str,
    /// The error of a failed calibration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// It joined the Pareto front when it finished ([`crate::front`]): no simpler-or-equal
    /// program had as low an adjusted loss.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub front: bool,
}

impl Record {
    /// The figure candidates are ranked by: held-out R² (higher is better) when ranking by R²,
    /// else minus the training loss; NaN ranks last.
    pub fn score(&self, by_r2: bool) -> f64 {
        let x = if by_r2 {
            self.held_out_r2.unwrap_or(f64::NAN)
        } else {
            -self.train_loss
        };
        if x.is_nan() { f64::NEG_INFINITY } else { x }
    }
}

pub use ndvm_systems::report::size;

/// Stable 64-bit key of a skeleton (for the sets that must stay small).
pub fn key(skeleton: &str) -> u64 {
    let mut h = DefaultHasher::new();
    skeleton.hash(&mut h);
    h.finish()
}

/// `text`, or its first `most` characters and how many more: for tables (a proposer's 60 KB
/// program once filled the terminal) and for refused programs too large to keep.
pub fn shortened(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}… ({} more characters)",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}

#[cfg(test)]
impl Record {
    /// A finished calibration for tests: number `i`, program `src`, no constants.
    pub(crate) fn sample(i: u64, src: &str, skeleton: &str, train_loss: f64) -> Record {
        Record {
            calibration: i,
            candidate: i,
            draw: 0,
            proposer: "t".into(),
            name: "t".into(),
            skeleton: skeleton.into(),
            program: i,
            src: src.into(),
            params: BTreeMap::new(),
            train_loss,
            held_out_r2: None,
            reconstruction_r2: None,
            success: false,
            status: "done",
            detail: None,
            front: false,
        }
    }
}
