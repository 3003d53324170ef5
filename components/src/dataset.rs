//! A loaded data set: the columns a data fit binds to program inputs, one value per data point.

use std::collections::BTreeMap;

/// Columns of equal length (one value per data point) bound to program inputs, the target the
/// output is fitted to, and the training mask (the other points are held out).
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Program input name → one value per point.
    pub inputs: BTreeMap<String, Vec<f64>>,
    /// The value the output is fitted to, per point.
    pub target: Vec<f64>,
    /// Whether each point is in the training split (the rest are held out).
    pub train: Vec<bool>,
    /// File rows (1-based, the header is row 1) left out for a NaN or infinite cell, when the
    /// scene asked for it (`drop_non_finite: true`).
    pub dropped_rows: Vec<usize>,
}

impl Dataset {
    pub fn points(&self) -> usize {
        self.target.len()
    }

    /// Whether any point is held out.
    pub fn has_held_out(&self) -> bool {
        self.train.iter().any(|t| !t)
    }
}
