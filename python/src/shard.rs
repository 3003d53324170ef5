//! A search in shards, for `ndvm.ray.search` and `ndvm.search_sharded`: the plan, one task and
//! the merge, each taking and giving JSON text so that a task travels to any worker
//! (`ndvm_search::shards`). A merged search's log streams into its output folder, as
//! `ndvm search --out` writes it (`ndvm_systems::folder`), or nowhere: never into memory.

use crate::interrupt::interruptible;
use crate::{input_err, scene_of};
use ndvm_search::SearchOptions;
use ndvm_search::log::{LOG_FILES, LogWriter};
use ndvm_search::report::RESULT_FILES;
use ndvm_search::shards::local::run_local;
use ndvm_search::shards::merge::{Merged, merge};
use ndvm_search::shards::{Plan, ShardOutput, ShardTask, run_task};
use ndvm_systems::folder::Folder;
use pyo3::prelude::*;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| input_err(format!("not a {what}: {e}")))
}

fn text<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| input_err(e.to_string()))
}

/// The plan of a sharded search (JSON): `shards` parts, `epochs` (default: 4 with Evolve on
/// several shards, else 1), the budget (the caller's, else the scene's) and the migrants.
#[pyfunction]
#[pyo3(signature = (scene, json, shards, epochs=None, calibrations=None, seconds=None, migrants=None))]
pub fn search_plan(
    scene: &str,
    json: bool,
    shards: usize,
    epochs: Option<u32>,
    calibrations: Option<u64>,
    seconds: Option<f64>,
    migrants: Option<usize>,
) -> PyResult<String> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let plan = Plan::new(&scene, shards, epochs, calibrations, seconds, migrants)
        .map_err(|e| input_err(e.to_string()))?;
    text(&plan)
}

/// The tasks of `epoch` (JSON each), given every output of the earlier epochs.
#[pyfunction]
pub fn search_tasks(plan: &str, epoch: u32, earlier: Vec<String>) -> PyResult<Vec<String>> {
    let plan: Plan = parse("search plan", plan)?;
    let earlier = earlier
        .iter()
        .map(|o| parse("shard output", o))
        .collect::<PyResult<Vec<ShardOutput>>>()?;
    // An output from another build would lose what that build does not send (its migrants).
    for o in &earlier {
        o.task.check_wire().map_err(|e| input_err(e.to_string()))?;
    }
    plan.tasks(epoch, &earlier).iter().map(text).collect()
}

/// Runs one task (the engine's own threads; the GIL released) and returns its output (JSON).
#[pyfunction]
#[pyo3(signature = (scene, base, json, task, threads=None))]
pub fn search_shard(
    py: Python<'_>,
    scene: &str,
    base: &str,
    json: bool,
    task: &str,
    threads: Option<usize>,
) -> PyResult<String> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let task: ShardTask = parse("shard task", task)?;
    let base = Path::new(base).to_path_buf();
    let out = py.detach(move || {
        let options = SearchOptions {
            threads,
            ..SearchOptions::default()
        };
        run_task(&scene, &base, &options, &task).map_err(|e| e.to_string())
    });
    text(&out.map_err(input_err)?)
}

/// Merges the outputs of every task (refused unless they are every task's) and returns the
/// results JSON; with `out`, the folder gets what `ndvm search --out` writes.
#[pyfunction]
#[pyo3(signature = (scene, json, title, plan, outputs, out=None))]
pub fn search_merge(
    py: Python<'_>,
    scene: &str,
    json: bool,
    title: &str,
    plan: &str,
    outputs: Vec<String>,
    out: Option<&str>,
) -> PyResult<String> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let plan: Plan = parse("search plan", plan)?;
    let outputs = outputs
        .iter()
        .map(|o| parse("shard output", o))
        .collect::<PyResult<Vec<ShardOutput>>>()?;
    let folder = claim(out, title)?;
    let title = title.to_string();
    py.detach(move || {
        let mut log = log_of(folder.as_ref());
        let merged = merge(&scene, &plan, None, outputs, &mut log).map_err(|e| e.to_string())?;
        finish(&merged, &title, folder.as_deref())
    })
    .map_err(input_err)
}

/// Runs a whole plan here, each epoch's shards at once on `threads` workers (else one per core;
/// `ndvm search --shards`), merges it and returns the results JSON; with `out`, the folder gets
/// what `ndvm search --out` writes. Ctrl-C stops it after its round, the files written, and
/// raises `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (scene, base, json, title, plan, threads=None, out=None))]
#[allow(clippy::too_many_arguments)]
pub fn search_local(
    py: Python<'_>,
    scene: &str,
    base: &str,
    json: bool,
    title: &str,
    plan: &str,
    threads: Option<usize>,
    out: Option<&str>,
) -> PyResult<String> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let plan: Plan = parse("search plan", plan)?;
    let base = Path::new(base).to_path_buf();
    let folder = claim(out, title)?;
    let title = title.to_string();
    interruptible(py, move |flag| {
        let options = SearchOptions {
            threads,
            interrupted: Some(flag),
            ..SearchOptions::default()
        };
        let mut log = log_of(folder.as_ref());
        let merged =
            run_local(&scene, &base, &options, &plan, &mut log).map_err(|e| e.to_string())?;
        finish(&merged, &title, folder.as_deref())
    })?
    .map_err(input_err)
}

/// The output folder `out`, claimed ([`Folder::claim`]).
fn claim(out: Option<&str>, title: &str) -> PyResult<Option<Arc<Folder>>> {
    let Some(out) = out else {
        return Ok(None);
    };
    let holder = format!("Python, search of {title}");
    let folder = Folder::claim(Path::new(out), &LOG_FILES, &RESULT_FILES, &holder)
        .map_err(|e| input_err(e.to_string()))?;
    Ok(Some(Arc::new(folder)))
}

/// The log: into the folder, else nowhere.
fn log_of(folder: Option<&Arc<Folder>>) -> LogWriter<Box<dyn Write + Send>> {
    match folder {
        Some(f) => LogWriter::new(Box::new(f.log_file(0)), Box::new(f.log_file(1))),
        None => LogWriter::new(Box::new(std::io::sink()), Box::new(std::io::sink())),
    }
}

/// The results JSON, the folder's result files written after its log.
fn finish(merged: &Merged, title: &str, folder: Option<&Folder>) -> Result<String, String> {
    if let Some(folder) = folder {
        if let Some(e) = &merged.log_error {
            return Err(format!("cannot write the calibration log: {e}"));
        }
        folder.write_results(merged.report.files(title))?;
    }
    Ok(merged.report.to_json())
}
