//! A scene's population: candidate programs with their fit specifications and starting values.
//!
//! Candidates come in scene order (a stream's lines in file order). Each gets its parameters
//! (the scene's, or its own), its data set (loaded once and shared), the shared inputs and its
//! restarts: restart 0 starts at `init`, restart `r > 0` at `init + scale·z` with `z` standard
//! normal draws from the restart seed, clamped into the bounds. Nothing here depends on threads.
//! Data sets (CSV or synthetic, with their train/held-out split) are read by [`data`]; candidate
//! streams by [`ndvm_components::candidate_stream`].

pub mod data;
pub mod template;
pub mod trajectory;

use data::DataError;
use ndvm_bytecode::Form;
use ndvm_components::candidate_stream::{self, NAMED_WARNINGS, StreamError};
use ndvm_components::input_file;
use ndvm_components::prelude::*;
use ndvm_components::scene::search::Draw;
use ndvm_components::scene::{Candidates, Data, Parameters, Scene, SceneInput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use std::path::Path;
use std::sync::Arc;
use trajectory::Trajectories;

/// One candidate ready to spawn.
#[derive(Clone, Debug)]
pub struct Member {
    pub candidate: Candidate,
    pub spec: FitSpec,
    pub start: ParamValues,
}

/// Why a population could not be built from a scene.
#[derive(Debug, thiserror::Error)]
pub enum PopulationError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("candidate `{candidate}`: {message}")]
    Names { candidate: String, message: String },
    #[error("the population is empty: no candidate was read (an empty stream, or `take: Some(0)`)")]
    Empty,
    #[error(
        "the population has more than {0} candidates, the limit of one fit (fit it in parts with \
         a stream's `take`, or run a search: `ndvm search` streams any number)"
    )]
    TooMany(usize),
}

/// How every member of a population is fitted: a scene's settings, or a search's calibration
/// protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct Protocol {
    pub loss: Loss,
    pub optimizer: Optimizer,
    pub steps: u32,
    pub tolerance: Option<f64>,
    /// Whether restart 0 starts at `init` exactly (a fit's restarts) or is drawn like the others
    /// (a search's draws).
    pub first_at_init: bool,
    /// How restarts are drawn around `init`: `None` for `scale·N(0, 1)` with the parameters'
    /// `restarts.scale` (a fit), or a search's draw.
    pub draw: Option<Draw>,
}

impl Protocol {
    /// A fit's protocol: the scene's loss, optimizer, steps and tolerance.
    pub fn of_scene(scene: &Scene) -> Protocol {
        Protocol {
            loss: scene.loss,
            optimizer: scene.optimizer(),
            steps: scene.steps,
            tolerance: scene.tolerance,
            first_at_init: true,
            draw: None,
        }
    }
}

/// What every candidate of a scene sees: the shared inputs and the scene's data set (loaded
/// once, shared by reference).
#[derive(Clone, Debug)]
pub struct Context {
    pub shared: Arc<SharedInputs>,
    pub data: Option<Arc<Dataset>>,
    /// The scene's trajectories (its `data` as a `Trajectory`): among the shared inputs, and
    /// integrated by every candidate ([`trajectory`]).
    pub trajectories: Option<Arc<Trajectories>>,
    /// The trajectories a search holds out (`held_out`): scored, never fitted.
    pub held_trajectories: Option<Arc<Trajectories>>,
}

impl Context {
    /// Loads the scene's shared inputs and data (paths relative to `base`).
    pub fn load(scene: &Scene, base: &Path) -> Result<Context, PopulationError> {
        let mut shared = shared_inputs(scene, base)?;
        let (data, trajectories, held) = match &scene.data {
            Some(d) => match Trajectories::of(d, base)? {
                Some(mut t) => {
                    let held = match d {
                        Data::Trajectory { held_out, path, .. } => t.hold_out(held_out, path)?,
                        _ => None,
                    };
                    shared.matrices.extend(t.inputs());
                    let intervals = (t.window == Some(1)).then(|| Arc::new(t.intervals()));
                    (intervals, Some(Arc::new(t)), held.map(Arc::new))
                }
                None => (Some(Arc::new(data::load(d, base)?)), None, None),
            },
            None => (None, None, None),
        };
        Ok(Context {
            shared: Arc::new(shared),
            data,
            trajectories,
            held_trajectories: held,
        })
    }
}

/// The warning for rows a CSV data set left out (`drop_non_finite: true`), naming the first
/// [`NAMED_WARNINGS`] of them.
pub fn dropped_warning(d: &Dataset, data: &Data) -> Option<String> {
    let Data::Csv { path, .. } = data else {
        return None;
    };
    let n = d.dropped_rows.len();
    if n == 0 {
        return None;
    }
    let shown: Vec<String> = d
        .dropped_rows
        .iter()
        .take(NAMED_WARNINGS)
        .map(|r| r.to_string())
        .collect();
    let more = if n > NAMED_WARNINGS { ", …" } else { "" };
    Some(format!(
        "{path}: {n} row(s) with a NaN or infinite cell left out (`drop_non_finite: true`): row {}{more}",
        shown.join(", ")
    ))
}

/// A name given twice among a candidate's inputs: a parameter listed twice, or a parameter,
/// data column or shared input sharing a name with another. Each would bind one name to two
/// values, so the constants reported would not be those the loss was computed with.
pub fn name_clash(
    params: &[String],
    data: Option<&Dataset>,
    shared: &SharedInputs,
) -> Option<String> {
    let columns = data.map(|d| d.inputs.keys().map(String::as_str).collect::<Vec<_>>());
    let columns = columns.unwrap_or_default();
    let is_shared = |name: &str| {
        shared.numbers.iter().any(|(n, _)| n == name)
            || shared.matrices.iter().any(|m| m.name == name)
    };
    for (i, name) in params.iter().enumerate() {
        if params[..i].contains(name) {
            return Some(format!("the parameter `{name}` is listed twice"));
        }
        if columns.contains(&name.as_str()) {
            return Some(format!(
                "`{name}` is both a parameter and a data column: rename one"
            ));
        }
        if is_shared(name) {
            return Some(format!(
                "`{name}` is both a parameter and a shared input (`inputs`): rename one"
            ));
        }
    }
    columns
        .iter()
        .find(|c| is_shared(c))
        .map(|c| format!("`{c}` is both a data column and a shared input (`inputs`): rename one"))
}

/// The population of `scene`; relative paths are resolved against `base` (the scene's folder).
/// Returns the members and the warnings: a malformed line of a candidate stream is skipped,
/// named and counted ([`candidate_stream`]); a stream with no valid line at all is an error.
pub fn build(scene: &Scene, base: &Path) -> Result<(Vec<Member>, Vec<String>), PopulationError> {
    let mut warnings = Vec::new();
    let Context {
        shared,
        data: scene_data,
        trajectories,
        ..
    } = Context::load(scene, base)?;
    let protocol = Protocol::of_scene(scene);
    if let (Some(d), Some(data)) = (&scene_data, &scene.data) {
        warnings.extend(dropped_warning(d, data));
    }
    let mut members = Vec::new();
    let mut push = |name: String,
                    (source, form): (String, Form),
                    params: &Parameters,
                    data: Option<Arc<Dataset>>|
     -> Result<(), PopulationError> {
        let index = members.len();
        let data = if scene.loss == Loss::Mse { data } else { None };
        let with_starts = trajectories.as_ref().map(|t| t.with_starts(params));
        let params = with_starts.as_ref().unwrap_or(params);
        if params.names.len() > ndvm_components::limits::PARAMS {
            return Err(PopulationError::Names {
                candidate: name,
                message: format!(
                    "{} parameters, over the limit of {}",
                    params.names.len(),
                    ndvm_components::limits::PARAMS
                ),
            });
        }
        let points = data.as_ref().map_or(1, |d| d.points());
        let lanes = (params.restarts.count.max(1) as usize).saturating_mul(points);
        if lanes > ndvm_components::limits::LANES {
            return Err(PopulationError::Names {
                candidate: name,
                message: format!(
                    "{} restarts × {points} data points = {lanes} lanes, over the limit of {}",
                    params.restarts.count,
                    ndvm_components::limits::LANES
                ),
            });
        }
        if let Some(message) = name_clash(&params.names, data.as_deref(), &shared) {
            return Err(PopulationError::Names {
                candidate: name,
                message,
            });
        }
        if form == Form::Dialect
            && let Some((line, column)) = template::first_hole(&source)
        {
            return Err(PopulationError::Names {
                candidate: name,
                message: format!(
                    "line {line}, column {column}: a program with a `(hole …)` is a template, \
                     which a search fills: give it as the search's `template`"
                ),
            });
        }
        let source = match &trajectories {
            Some(_) if form == Form::Assembly => {
                return Err(PopulationError::Names {
                    candidate: name,
                    message: "a bytecode candidate cannot be a trajectory's right-hand side".into(),
                });
            }
            Some(t) => t.program(&source),
            None => source,
        };
        let mut m = member(&protocol, index, name, source, params, data, shared.clone());
        m.candidate.form = form;
        members.push(m);
        Ok(())
    };
    for c in &scene.candidates {
        match c {
            Candidates::Inline {
                name,
                src,
                bytecode,
                parameters,
                data,
            } => {
                let data = match data {
                    Some(d) => {
                        let loaded = data::load(d, base)?;
                        warnings.extend(dropped_warning(&loaded, d));
                        Some(Arc::new(loaded))
                    }
                    None => scene_data.clone(),
                };
                let form = if *bytecode {
                    Form::Assembly
                } else {
                    Form::Dialect
                };
                push(
                    name.clone(),
                    (src.clone(), form),
                    parameters.as_deref().unwrap_or(&scene.parameters),
                    data,
                )?;
            }
            Candidates::File(path) => {
                let source = read(base, path)?;
                let name = Path::new(path)
                    .file_stem()
                    .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned());
                let form = match Form::of(path, false) {
                    Form::Assembly => Form::Assembly,
                    _ => Form::Dialect,
                };
                push(name, (source, form), &scene.parameters, scene_data.clone())?;
            }
            Candidates::Stream { path, take } => {
                let stem = Path::new(path)
                    .file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
                // Read no further than one past the population limit.
                let room = ndvm_components::limits::CANDIDATES + 1;
                let take = Some(take.map_or(room, |t| t.min(room)));
                let reading = candidate_stream::read(&base.join(path), path, take, |entry| {
                    let mut params = scene.parameters.clone();
                    if let Some(names) = entry.params {
                        params.names = names;
                    }
                    let name = format!("{stem}:{}", entry.line);
                    // A line whose names clash is skipped like any malformed line.
                    let src = (entry.src, Form::Dialect);
                    push(name, src, &params, scene_data.clone()).map_err(|e| match e {
                        PopulationError::Names { message, .. } => message,
                        other => other.to_string(),
                    })
                })?;
                warnings.extend(reading.warnings);
            }
        }
    }
    if members.is_empty() && scene.search.is_none() {
        return Err(PopulationError::Empty);
    }
    if members.len() > ndvm_components::limits::CANDIDATES {
        return Err(PopulationError::TooMany(
            ndvm_components::limits::CANDIDATES,
        ));
    }
    Ok((members, warnings))
}

/// One candidate: its starting values drawn from `params` (restart `r` at
/// `init + scale·z_r`, restart 0 at `init` when the protocol says so), clamped into bounds.
pub fn member(
    protocol: &Protocol,
    index: usize,
    name: String,
    source: String,
    params: &Parameters,
    data: Option<Arc<Dataset>>,
    shared: Arc<SharedInputs>,
) -> Member {
    let restarts = params.restarts.count.max(1) as usize;
    let bounds: Vec<Bounds> = params
        .names
        .iter()
        .map(|n| params.bounds.get(n).copied().unwrap_or_default())
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(params.restarts.seed);
    let mut start = vec![0.0; params.names.len() * restarts];
    for r in 0..restarts {
        for (p, name) in params.names.iter().enumerate() {
            let init = params.init.get(name).copied().unwrap_or(0.0);
            let x = if r == 0 && protocol.first_at_init {
                init
            } else {
                let z = |rng: &mut ChaCha8Rng| -> f64 { StandardNormal.sample(rng) };
                init + match protocol.draw {
                    None => params.restarts.scale * z(&mut rng),
                    Some(Draw::Normal { sd }) => sd * z(&mut rng),
                    Some(Draw::Uniform { low, high }) => low + (high - low) * rng.random::<f64>(),
                }
            };
            start[p * restarts + r] = bounds[p].clamp(x);
        }
    }
    Member {
        candidate: Candidate {
            index,
            name,
            source,
            form: Form::Dialect,
        },
        spec: FitSpec {
            params: params.names.clone(),
            bounds,
            restarts,
            loss: protocol.loss,
            data,
            shared,
            optimizer: protocol.optimizer,
            steps: protocol.steps,
            tolerance: protocol.tolerance,
        },
        start: ParamValues(start),
    }
}

fn read(base: &Path, path: &str) -> Result<String, PopulationError> {
    input_file::read(&base.join(path), input_file::TEXT_LIMIT).map_err(|message| {
        PopulationError::File {
            path: path.to_string(),
            message,
        }
    })
}

fn shared_inputs(scene: &Scene, base: &Path) -> Result<SharedInputs, PopulationError> {
    let mut shared = SharedInputs::default();
    for (name, input) in &scene.inputs {
        match input {
            SceneInput::Number(x) => shared.numbers.push((name.clone(), *x)),
            SceneInput::MatrixCsv(path) => shared.matrices.push(matrix_csv(name, base, path)?),
        }
    }
    Ok(shared)
}

/// A matrix from a CSV file: a header row, then one row of numbers per matrix row.
fn matrix_csv(name: &str, base: &Path, path: &str) -> Result<SharedMatrix, PopulationError> {
    let fail = |message: String| PopulationError::File {
        path: path.to_string(),
        message,
    };
    let text = input_file::read(&base.join(path), input_file::DATA_LIMIT).map_err(fail)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut data = Vec::new();
    let (mut rows, mut cols) = (0, 0);
    for (r, record) in reader.records().enumerate() {
        let record = record.map_err(|e| fail(e.to_string()))?;
        if r == 0 {
            cols = record.len();
        }
        for (c, field) in record.iter().enumerate() {
            let x: f64 = field.trim().parse().map_err(|_| {
                fail(format!(
                    "row {}, column {}: `{field}` is not a number",
                    r + 2,
                    c + 1
                ))
            })?;
            data.push(x);
        }
        rows += 1;
    }
    if rows == 0 || cols == 0 {
        return Err(fail("no data rows".into()));
    }
    Ok(SharedMatrix {
        name: name.to_string(),
        rows,
        cols,
        data,
    })
}
