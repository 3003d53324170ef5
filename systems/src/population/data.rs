//! Data sets for fits: CSV columns or synthetic data, and the train/held-out split.
//!
//! A data set is columns of equal length — one value per data point — bound to program inputs,
//! a target column the program's output is fitted to, and a mask of training points. Synthetic
//! data is made by the engine itself: the generating program runs once over the grid as lanes
//! (f64), then seeded Gaussian noise is added. Everything is deterministic in the scene's seeds.

pub use ndvm_components::Dataset;
use ndvm_components::dataset::ColumnNames;
use ndvm_components::scene::{Data, Grid, Split};
use ndvm_engine::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use std::collections::BTreeMap;
use std::path::Path;

/// A data set that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: {message}")]
    Csv { path: String, message: String },
    #[error("{path}, row {row}: column `{column}` holds `{text}`, not a number")]
    NotANumber {
        path: String,
        row: usize,
        column: String,
        text: String,
    },
    #[error(
        "{path}, row {row}: column `{column}` holds `{text}`, not a finite number (remove the row or fill in the value)"
    )]
    NonFinite {
        path: String,
        row: usize,
        column: String,
        text: String,
    },
    #[error("synthetic data: {0}")]
    Synthetic(String),
}

/// Loads or makes `data`; CSV paths are relative to `base`.
pub fn load(data: &Data, base: &Path) -> Result<Dataset, DataError> {
    match data {
        Data::Trajectory { path, .. } => Err(DataError::Csv {
            path: path.clone(),
            message: "a trajectory is not a table of data points: give it as the scene's `data`"
                .into(),
        }),
        Data::Csv {
            path,
            columns,
            target,
            split,
            drop_non_finite,
        } => csv_columns(&base.join(path), columns, target, *split, *drop_non_finite),
        Data::Synthetic {
            program,
            constants,
            inputs,
            noise,
            noise_sd,
            seed,
            split,
        } => synthetic(
            program,
            constants,
            inputs,
            Noise {
                relative: *noise,
                absolute: *noise_sd,
            },
            *seed,
            *split,
        ),
    }
}

/// The number in a CSV cell, or an error naming its row and column: not a number, or not a
/// finite one.
pub(crate) fn cell(path: &str, row: usize, column: &str, text: &str) -> Result<f64, DataError> {
    let text = text.trim();
    let place = || (path.to_string(), row, column.to_string(), text.to_string());
    let x: f64 = text.parse().map_err(|_| {
        let (path, row, column, text) = place();
        DataError::NotANumber {
            path,
            row,
            column,
            text,
        }
    })?;
    if x.is_finite() {
        return Ok(x);
    }
    let (path, row, column, text) = place();
    Err(DataError::NonFinite {
        path,
        row,
        column,
        text,
    })
}

/// `columns: t, y` — at most [`COLUMNS_SHOWN`] names, then how many more (a file of 10⁶ columns
/// once made an 8.9 MB message).
fn column_list(headers: &csv::StringRecord) -> String {
    let shown: Vec<&str> = headers.iter().take(COLUMNS_SHOWN).map(str::trim).collect();
    match headers.len().saturating_sub(COLUMNS_SHOWN) {
        0 => format!("columns: {}", shown.join(", ")),
        more => format!(
            "{} columns: {}, and {more} more",
            headers.len(),
            shown.join(", ")
        ),
    }
}

/// Column names an error lists.
const COLUMNS_SHOWN: usize = 20;

fn csv_columns(
    path: &Path,
    columns: &BTreeMap<String, String>,
    target: &str,
    split: Split,
    drop_non_finite: bool,
) -> Result<Dataset, DataError> {
    let shown = path.display().to_string();
    let fail = |message: String| DataError::Csv {
        path: shown.clone(),
        message,
    };
    let text = ndvm_components::input_file::read(path, ndvm_components::input_file::DATA_LIMIT)
        .map_err(fail)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| fail(e.to_string()))?.clone();
    let index = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| fail(format!("no column `{name}` ({})", column_list(&headers))))
    };
    let wanted: Vec<(String, usize)> = columns
        .iter()
        .map(|(input, column)| Ok((input.clone(), index(column)?)))
        .collect::<Result<_, DataError>>()?;
    let target_at = index(target)?;
    let mut inputs: BTreeMap<String, Vec<f64>> = wanted
        .iter()
        .map(|(n, _)| (n.clone(), Vec::new()))
        .collect();
    let mut y = Vec::new();
    let mut dropped_rows = Vec::new();
    'rows: for (r, record) in reader.records().enumerate() {
        let record = record.map_err(|e| fail(e.to_string()))?;
        let row = r + 2; // 1-based, after the header
        let number = |at: usize| {
            let column = headers.get(at).unwrap_or("").trim();
            cell(&shown, row, column, record.get(at).unwrap_or(""))
        };
        if (y.len() + 1).saturating_mul(wanted.len() + 1) > ndvm_components::limits::DATA_VALUES {
            return Err(fail(format!(
                "more than {} values (rows × bound columns): over the limit",
                ndvm_components::limits::DATA_VALUES
            )));
        }
        let mut row_values = Vec::with_capacity(wanted.len() + 1);
        for at in wanted.iter().map(|(_, at)| *at).chain([target_at]) {
            match number(at) {
                Ok(x) => row_values.push(x),
                Err(DataError::NonFinite { .. }) if drop_non_finite => {
                    dropped_rows.push(row);
                    continue 'rows;
                }
                Err(e) => return Err(e),
            }
        }
        for ((name, _), x) in wanted.iter().zip(&row_values) {
            inputs.entry(name.clone()).or_default().push(*x);
        }
        y.push(row_values[wanted.len()]);
    }
    if y.is_empty() && !dropped_rows.is_empty() {
        return Err(fail(format!(
            "every one of its {} data rows has a value that is not finite (NaN or ±inf) in a \
             bound column, and such rows are skipped: nothing is left to fit",
            dropped_rows.len()
        )));
    }
    if y.is_empty() {
        return Err(fail("no data rows".into()));
    }
    let train = split_mask(y.len(), split);
    Ok(Dataset {
        inputs,
        target: y,
        train,
        dropped_rows,
        names: ColumnNames {
            inputs: columns.clone(),
            target: target.to_string(),
        },
    })
}

/// Gaussian noise added to synthetic data: a fraction of the output's spread, or a fixed
/// standard deviation (a scene gives one of them).
#[derive(Clone, Copy, Debug)]
struct Noise {
    relative: f64,
    absolute: f64,
}

fn synthetic(
    src: &str,
    constants: &BTreeMap<String, f64>,
    grids: &BTreeMap<String, Grid>,
    noise: Noise,
    seed: u64,
    split: Split,
) -> Result<Dataset, DataError> {
    let inputs: BTreeMap<String, Vec<f64>> = grids
        .iter()
        .enumerate()
        .map(|(i, (name, g))| (name.clone(), grid(g, seed, i as u64)))
        .collect();
    let n = inputs.values().map(Vec::len).max().unwrap_or(0);
    if n == 0 || inputs.values().any(|v| v.len() != n) {
        return Err(DataError::Synthetic(
            "every input needs a grid, all of one length ≥ 1".into(),
        ));
    }
    let mut b = Bindings::<f64>::new();
    for (name, xs) in &inputs {
        b.lane_data(name, xs.clone());
    }
    for (name, &c) in constants {
        b.constant(name, c);
    }
    let program = Program::new(src, &b.names()).map_err(|e| DataError::Synthetic(e.render(src)))?;
    let mut vm = Vm::<f64>::default();
    let out =
        evaluate(&mut vm, &program, &b, false).map_err(|e| DataError::Synthetic(e.render(src)))?;
    let Output::Numbers(mut y) = out.result else {
        return Err(DataError::Synthetic(
            "the program must return a number".into(),
        ));
    };
    let sd = if noise.absolute > 0.0 {
        noise.absolute
    } else {
        let mean = y.iter().sum::<f64>() / n as f64;
        noise.relative * (y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt()
    };
    if sd > 0.0 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for v in &mut y {
            let z: f64 = StandardNormal.sample(&mut rng);
            *v += sd * z;
        }
    }
    Ok(Dataset {
        train: split_mask(n, split),
        names: ColumnNames::same(inputs.keys().cloned(), "y"),
        inputs,
        target: y,
        dropped_rows: Vec::new(),
    })
}

/// The values of one input grid; `Uniform` draws from a generator seeded by the data seed and
/// the input's position (a stream apart from the noise's).
fn grid(g: &Grid, seed: u64, position: u64) -> Vec<f64> {
    match g {
        Grid::Values(v) => v.clone(),
        Grid::Uniform(low, high, n) => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(position + 1);
            (0..*n)
                .map(|_| low + (high - low) * rng.random::<f64>())
                .collect()
        }
        Grid::Linspace(a, b, n) => match n {
            0 => Vec::new(),
            1 => vec![*a],
            _ => (0..*n)
                .map(|i| a + (b - a) * i as f64 / (*n - 1) as f64)
                .collect(),
        },
    }
}

/// A seeded shuffle picks `round(train·n)` training points (at least one).
fn split_mask(n: usize, split: Split) -> Vec<bool> {
    let k = ((split.train * n as f64).round() as usize).clamp(1, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(split.seed));
    let mut mask = vec![false; n];
    for &i in &order[..k] {
        mask[i] = true;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_data_follows_its_program_and_seeds() {
        let data = Data::Synthetic {
            program: "(* a (exp (* b x)))".into(),
            constants: [("a".into(), 2.0), ("b".into(), -0.3)].into(),
            inputs: [("x".into(), Grid::Linspace(0.0, 3.0, 31))].into(),
            noise: 0.0,
            noise_sd: 0.0,
            seed: 1,
            split: Split {
                train: 0.7,
                seed: 9,
            },
        };
        let d = load(&data, Path::new(".")).expect("data");
        assert_eq!(d.points(), 31);
        for (x, y) in d.inputs["x"].iter().zip(&d.target) {
            assert!((y - 2.0 * (-0.3 * x).exp()).abs() < 1e-14);
        }
        assert_eq!(d.train.iter().filter(|&&t| t).count(), 22);
        assert_eq!(d, load(&data, Path::new(".")).expect("again"));
        // Noise: 2% of the output's spread, the same draws for the same seed.
        let mut noisy = data.clone();
        if let Data::Synthetic { noise, .. } = &mut noisy {
            *noise = 0.02;
        }
        let a = load(&noisy, Path::new(".")).expect("noisy");
        let rel: f64 = a
            .target
            .iter()
            .zip(&d.target)
            .map(|(p, q)| (p - q).abs())
            .sum::<f64>()
            / 31.0;
        assert!(rel > 1e-4 && rel < 0.05, "{rel}");
        assert_eq!(a, load(&noisy, Path::new(".")).expect("again"));
    }

    #[test]
    fn csv_columns_bind_inputs_and_errors_name_the_place() {
        let dir = std::env::temp_dir().join(format!("ndvm-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("d.csv"),
            "t, y ,other\n0,1.5,x\n1,2.5,y\n2,3.5,z\n",
        )
        .expect("write");
        let csv = |target: &str| Data::Csv {
            path: "d.csv".into(),
            columns: [("x".into(), "t".into())].into(),
            target: target.into(),
            split: Split::default(),
            drop_non_finite: false,
        };
        let d = load(&csv("y"), &dir).expect("csv");
        assert_eq!(d.inputs["x"], vec![0.0, 1.0, 2.0]);
        assert_eq!(d.target, vec![1.5, 2.5, 3.5]);
        assert_eq!(d.train, vec![true; 3]);
        let e = load(&csv("other"), &dir).expect_err("text").to_string();
        assert!(
            e.contains("row 2") && e.contains("`other`") && e.contains("`x`"),
            "{e}"
        );
        let e = load(&csv("z"), &dir).expect_err("missing").to_string();
        assert!(e.contains("no column `z` (columns: t, y, other)"), "{e}");
        // A very wide file: a few names and the count, not every name.
        let wide: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
        std::fs::write(dir.join("wide.csv"), wide.join(",") + "\n").expect("write");
        let wide_csv = Data::Csv {
            path: "wide.csv".into(),
            columns: [("x".into(), "t".into())].into(),
            target: "y".into(),
            split: Split::default(),
            drop_non_finite: false,
        };
        let e = load(&wide_csv, &dir).expect_err("missing").to_string();
        assert!(e.contains("no column `t` (100000 columns: c0, c1,"), "{e}");
        assert!(e.contains("c19, and 99980 more)") && e.len() < 500, "{e}");
        // NaN and infinite cells parse as numbers but are refused, row and column named.
        for (cell, row) in [("NaN", 3), ("inf", 3), ("-Infinity", 3)] {
            std::fs::write(
                dir.join("d.csv"),
                format!("t, y ,other\n0,1.5,x\n1,{cell},y\n2,3.5,z\n"),
            )
            .expect("write");
            let e = load(&csv("y"), &dir).expect_err("non-finite").to_string();
            assert!(
                e.contains(&format!(
                    "row {row}: column `y` holds `{cell}`, not a finite number"
                )),
                "{e}"
            );
        }
        // Unless the scene asks to drop such rows: they are left out and named.
        std::fs::write(dir.join("d.csv"), "t,y\n0,1.5\ninf,2.5\n2,NaN\n3,4.5\n").expect("write");
        let dropping = Data::Csv {
            path: "d.csv".into(),
            columns: [("x".into(), "t".into())].into(),
            target: "y".into(),
            split: Split::default(),
            drop_non_finite: true,
        };
        let d = load(&dropping, &dir).expect("rows dropped");
        assert_eq!(d.inputs["x"], vec![0.0, 3.0]);
        assert_eq!(d.target, vec![1.5, 4.5]);
        assert_eq!(d.dropped_rows, vec![3, 4]);
        assert_eq!(d.train.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
