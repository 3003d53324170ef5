//! The bindings file of `ndvm run --bindings FILE.json`:
//!
//! ```json
//! {"scalars": {"q": 0.05},
//!  "constants": {"T": 80},
//!  "lanes": {"r": [0.1, 0.2]},
//!  "matrices": {"obs": {"rows": 2, "cols": 2, "data": [1, 2, 3, 4]}}}
//! ```
//!
//! Scalars are differentiable parameters broadcast to every lane; constants are numbers that
//! get no gradient (data, sizes, step counts); every lane list has the same length B (B = 1 when there
//! are none); matrices are row-major and shared by every lane. Names are kept in sorted order so
//! output is deterministic.

use ndvm_engine::{Bindings, Real};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingsFile {
    #[serde(default)]
    pub scalars: BTreeMap<String, f64>,
    #[serde(default)]
    pub constants: BTreeMap<String, f64>,
    #[serde(default)]
    pub lanes: BTreeMap<String, Vec<f64>>,
    #[serde(default)]
    pub matrices: BTreeMap<String, MatrixSpec>,
    /// Matrices with one value per lane: `data[lane]` is row-major.
    #[serde(default)]
    pub lane_matrices: BTreeMap<String, LaneMatrixSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneMatrixSpec {
    pub rows: usize,
    pub cols: usize,
    /// One row-major matrix per lane.
    pub data: Vec<Vec<f64>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixSpec {
    pub rows: usize,
    pub cols: usize,
    /// Row-major values.
    pub data: Vec<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum BindingsFileError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("matrix `{name}` is {rows}x{cols} but has {len} values")]
    MatrixSize {
        name: String,
        rows: usize,
        cols: usize,
        len: usize,
    },
}

impl BindingsFile {
    pub fn from_json(text: &str) -> Result<Self, BindingsFileError> {
        let file: BindingsFile = serde_json::from_str(text)?;
        let shared = file
            .matrices
            .iter()
            .map(|(n, m)| (n, m.rows, m.cols, &m.data));
        let per_lane = file
            .lane_matrices
            .iter()
            .flat_map(|(n, m)| m.data.iter().map(move |d| (n, m.rows, m.cols, d)));
        for (name, rows, cols, data) in shared.chain(per_lane) {
            // `checked_mul`: a product that overflows must not wrap around to the data's length.
            if rows == 0 || cols == 0 || rows.checked_mul(cols) != Some(data.len()) {
                return Err(BindingsFileError::MatrixSize {
                    name: name.clone(),
                    rows,
                    cols,
                    len: data.len(),
                });
            }
        }
        Ok(file)
    }

    /// Adds every binding of the file (scalars and lanes as parameters) to `out`.
    pub fn apply<R: Real>(&self, out: &mut Bindings<R>) {
        for (name, &x) in &self.scalars {
            out.scalar(name, R::from_f64(x));
        }
        for (name, &x) in &self.constants {
            out.constant(name, R::from_f64(x));
        }
        for (name, xs) in &self.lanes {
            out.lanes(name, xs.iter().map(|&x| R::from_f64(x)).collect());
        }
        let real = |d: &[f64]| d.iter().map(|&x| R::from_f64(x)).collect::<Vec<R>>();
        for (name, m) in &self.matrices {
            out.matrix(name, m.rows, m.cols, real(&m.data));
        }
        for (name, m) in &self.lane_matrices {
            let data = m.data.iter().map(|d| real(d)).collect();
            out.lane_matrices(name, m.rows, m.cols, data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndvm_engine::Input;

    #[test]
    fn parses_all_three_kinds() {
        let f = BindingsFile::from_json(
            r#"{"scalars": {"q": 0.5}, "lanes": {"r": [1, 2]}, "matrices": {"m": {"rows": 1, "cols": 2, "data": [3, 4]}}}"#,
        )
        .expect("parses");
        let mut b = Bindings::<f32>::new();
        f.apply(&mut b);
        assert_eq!(b.lane_count().expect("lanes"), 2);
        assert_eq!(b.items[0].value, Input::Scalar(0.5));
        assert_eq!(
            b.items[2].value,
            Input::Matrix {
                rows: 1,
                cols: 2,
                data: vec![3.0, 4.0]
            }
        );
    }

    #[test]
    fn rejects_unknown_fields_and_bad_matrices() {
        assert!(BindingsFile::from_json(r#"{"scalar": {}}"#).is_err());
        assert!(
            BindingsFile::from_json(r#"{"matrices": {"m": {"rows": 2, "cols": 2, "data": [1]}}}"#)
                .is_err()
        );
        let ragged = r#"{"lane_matrices": {"m": {"rows": 1, "cols": 2, "data": [[1, 2], [3]]}}}"#;
        assert!(BindingsFile::from_json(ragged).is_err());
    }

    #[test]
    fn lane_matrices_set_the_lane_count() {
        let f = BindingsFile::from_json(
            r#"{"constants": {"T": 3}, "lane_matrices": {"m": {"rows": 1, "cols": 2, "data": [[1, 2], [3, 4], [5, 6]]}}}"#,
        )
        .expect("parses");
        let mut b = Bindings::<f32>::new();
        f.apply(&mut b);
        assert_eq!(b.lane_count().expect("lanes"), 3);
        assert!(!b.items[0].param, "constants get no gradient");
    }
}
