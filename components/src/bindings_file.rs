//! The bindings file of `ndvm run --bindings FILE.json`:
//!
//! ```json
//! {"scalars": {"q": 0.05},
//!  "lanes": {"r": [0.1, 0.2]},
//!  "matrices": {"obs": {"rows": 2, "cols": 2, "data": [1, 2, 3, 4]}}}
//! ```
//!
//! Scalars are broadcast to every lane; every lane list has the same length B (B = 1 when there
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
    pub lanes: BTreeMap<String, Vec<f64>>,
    #[serde(default)]
    pub matrices: BTreeMap<String, MatrixSpec>,
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
        for (name, m) in &file.matrices {
            if m.rows == 0 || m.cols == 0 || m.rows * m.cols != m.data.len() {
                return Err(BindingsFileError::MatrixSize {
                    name: name.clone(),
                    rows: m.rows,
                    cols: m.cols,
                    len: m.data.len(),
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
        for (name, xs) in &self.lanes {
            out.lanes(name, xs.iter().map(|&x| R::from_f64(x)).collect());
        }
        for (name, m) in &self.matrices {
            out.matrix(
                name,
                m.rows,
                m.cols,
                m.data.iter().map(|&x| R::from_f64(x)).collect(),
            );
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
    }
}
