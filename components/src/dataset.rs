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
    /// What the data calls its columns (plots and exports use these names).
    pub names: ColumnNames,
}

/// The names of a data set's columns, for people: a CSV file's headers, or a synthetic data
/// set's input names and `y` for its output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnNames {
    /// Program input → the column it was read from.
    pub inputs: BTreeMap<String, String>,
    /// The target column.
    pub target: String,
}

impl ColumnNames {
    /// Each input named by itself, and the target `target`.
    pub fn same(inputs: impl IntoIterator<Item = String>, target: &str) -> ColumnNames {
        ColumnNames {
            inputs: inputs.into_iter().map(|n| (n.clone(), n)).collect(),
            target: target.to_string(),
        }
    }

    /// The column an input was read from (the input's own name if unknown).
    pub fn input<'a>(&'a self, input: &'a str) -> &'a str {
        self.inputs.get(input).map_or(input, String::as_str)
    }
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
