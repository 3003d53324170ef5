//! Host inputs: the names a program reads that the host binds (docs/language-reference.md §3.2).
//!
//! An input is one value shared by every lane (a scalar or a matrix) or one value per lane (a
//! number or a matrix).
//! Scalar and per-lane inputs are **parameters** by default — the differentiable leaves whose
//! gradients the backward pass reports; [`Bindings::constant`] binds a non-differentiable one.

use crate::error::{Error, ErrorKind, Result};
use crate::real::Real;

#[derive(Clone, Debug, PartialEq)]
pub enum Input<R> {
    /// One number, broadcast to every lane.
    Scalar(R),
    /// One number per lane.
    Lanes(Vec<R>),
    /// One matrix shared by every lane, row-major.
    Matrix {
        rows: usize,
        cols: usize,
        data: Vec<R>,
    },
    /// One matrix per lane (`data[lane]`, row-major), e.g. each lane its own data set.
    LaneMatrices {
        rows: usize,
        cols: usize,
        data: Vec<Vec<R>>,
    },
}

impl<R> Input<R> {
    /// Whether this input is well formed for a batch of `lanes` lanes (what
    /// [`Bindings::lane_count`] requires of it): `Some(per_lane)` if so, `None` if not.
    pub(crate) fn fits(&self, lanes: usize) -> Option<bool> {
        match self {
            Input::Scalar(_) => Some(false),
            Input::Lanes(v) => (v.len() == lanes).then_some(true),
            Input::Matrix { rows, cols, data } => {
                (*rows > 0 && *cols > 0 && rows.checked_mul(*cols) == Some(data.len()))
                    .then_some(false)
            }
            Input::LaneMatrices { rows, cols, data } => {
                let ok = |d: &Vec<R>| !d.is_empty() && rows.checked_mul(*cols) == Some(d.len());
                (data.len() == lanes && data.iter().all(ok)).then_some(true)
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Binding<R> {
    pub name: String,
    pub value: Input<R>,
    /// Whether gradients flow to this input.
    pub param: bool,
}

/// The inputs of one evaluation and its lane count.
#[derive(Clone, Debug, PartialEq)]
pub struct Bindings<R> {
    pub items: Vec<Binding<R>>,
}

impl<R> Default for Bindings<R> {
    fn default() -> Self {
        Bindings { items: Vec::new() }
    }
}

impl<R: Real> Bindings<R> {
    pub fn new() -> Self {
        Self::default()
    }

    fn put(&mut self, name: &str, value: Input<R>, param: bool) -> &mut Self {
        match self.items.iter_mut().find(|b| b.name == name) {
            Some(b) => {
                b.value = value;
                b.param = param;
            }
            None => self.items.push(Binding {
                name: name.to_string(),
                value,
                param,
            }),
        }
        self
    }

    /// The binding of a program's input `i` named `name`: usually item `i` (programs are
    /// decoded against the bindings' own names, in order), else found by name.
    pub fn for_input(&self, i: usize, name: &str) -> Option<&Binding<R>> {
        // Names are short: comparing their bytes inline beats a call to `memcmp`.
        let same = self.items.get(i).filter(|b| {
            b.name.len() == name.len() && b.name.bytes().zip(name.bytes()).all(|(x, y)| x == y)
        });
        same.or_else(|| self.items.iter().find(|b| b.name == name))
    }

    /// A differentiable scalar, the same in every lane.
    pub fn scalar(&mut self, name: &str, x: R) -> &mut Self {
        self.put(name, Input::Scalar(x), true)
    }

    /// A differentiable per-lane input.
    pub fn lanes(&mut self, name: &str, xs: Vec<R>) -> &mut Self {
        self.put(name, Input::Lanes(xs), true)
    }

    /// A non-differentiable scalar (data, not a parameter).
    pub fn constant(&mut self, name: &str, x: R) -> &mut Self {
        self.put(name, Input::Scalar(x), false)
    }

    /// A non-differentiable per-lane input: a data column with one point per lane.
    pub fn lane_data(&mut self, name: &str, xs: Vec<R>) -> &mut Self {
        self.put(name, Input::Lanes(xs), false)
    }

    /// A matrix shared by every lane, row-major.
    pub fn matrix(&mut self, name: &str, rows: usize, cols: usize, data: Vec<R>) -> &mut Self {
        self.put(name, Input::Matrix { rows, cols, data }, false)
    }

    /// One matrix per lane (`data[lane]`, row-major); the lane count is `data.len()`.
    pub fn lane_matrices(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
        data: Vec<Vec<R>>,
    ) -> &mut Self {
        self.put(name, Input::LaneMatrices { rows, cols, data }, false)
    }

    pub fn names(&self) -> Vec<&str> {
        self.items.iter().map(|b| b.name.as_str()).collect()
    }

    /// The batch width: the common length of every per-lane input, 1 when there are none.
    pub fn lane_count(&self) -> Result<usize> {
        let mut lanes: Option<(usize, &str)> = None;
        for b in &self.items {
            if let Input::LaneMatrices { rows, cols, data } = &b.value
                && let Some(bad) = data
                    .iter()
                    .find(|d| rows.checked_mul(*cols) != Some(d.len()) || d.is_empty())
            {
                return Err(Error::unlocated(
                    ErrorKind::Input,
                    format!(
                        "matrix `{}` is {rows}x{cols} but a lane has {} values",
                        b.name,
                        bad.len()
                    ),
                ));
            }
            let per_lane = match &b.value {
                Input::Lanes(v) => Some(v.len()),
                Input::LaneMatrices { data, .. } => Some(data.len()),
                _ => None,
            };
            match &b.value {
                Input::Lanes(_) | Input::LaneMatrices { .. } => {
                    let v_len = per_lane.unwrap_or(0);
                    if v_len == 0 {
                        return Err(Error::unlocated(
                            ErrorKind::Input,
                            format!("input `{}` has no lanes", b.name),
                        ));
                    }
                    match lanes {
                        Some((n, other)) if n != v_len => {
                            return Err(Error::unlocated(
                                ErrorKind::Input,
                                format!(
                                    "input `{}` has {} lanes but `{other}` has {n}",
                                    b.name, v_len
                                ),
                            ));
                        }
                        _ => lanes = Some((v_len, &b.name)),
                    }
                }
                Input::Matrix { rows, cols, data } => {
                    // `checked_mul`: a product that overflows must not wrap to the data's length.
                    if *rows == 0 || *cols == 0 || rows.checked_mul(*cols) != Some(data.len()) {
                        return Err(Error::unlocated(
                            ErrorKind::Input,
                            format!(
                                "matrix `{}` is {rows}x{cols} but has {} values",
                                b.name,
                                data.len()
                            ),
                        ));
                    }
                }
                Input::Scalar(_) => {}
            }
        }
        Ok(lanes.map_or(1, |(n, _)| n))
    }

    /// Lane `b` alone: every per-lane input replaced by its value in that lane.
    pub fn lane(&self, b: usize) -> Bindings<R> {
        let items = self
            .items
            .iter()
            .map(|x| Binding {
                name: x.name.clone(),
                value: match &x.value {
                    Input::Lanes(v) => {
                        Input::Lanes(v.get(b).or(v.last()).copied().into_iter().collect())
                    }
                    Input::LaneMatrices { rows, cols, data } => Input::LaneMatrices {
                        rows: *rows,
                        cols: *cols,
                        data: data.get(b).or(data.last()).cloned().into_iter().collect(),
                    },
                    other => other.clone(),
                },
                param: x.param,
            })
            .collect();
        Bindings { items }
    }
}
