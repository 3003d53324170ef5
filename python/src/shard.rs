//! A search in shards, for `ndvm.ray.search` and `ndvm.search_sharded`: the plan, one task and
//! the merge, each taking and giving JSON text so that a task travels to any worker
//! (`ndvm_systems::search::shard`).

use crate::{input_err, scene_of};
use ndvm_systems::search::SearchOptions;
use ndvm_systems::search::local::run_local;
use ndvm_systems::search::log::LogWriter;
use ndvm_systems::search::merge::{Merged, merge};
use ndvm_systems::search::shard::{Plan, ShardOutput, ShardTask, run_task};
use pyo3::prelude::*;
use std::path::Path;

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

/// Merges the outputs of every task into what `ndvm search --out` writes: (file name, text)
/// for `search.json`, `frontier.csv`, `frontier.svg`, `calibrations.jsonl`, `programs.jsonl`.
#[pyfunction]
pub fn search_merge(
    py: Python<'_>,
    scene: &str,
    json: bool,
    title: &str,
    plan: &str,
    outputs: Vec<String>,
) -> PyResult<Vec<(String, String)>> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let plan: Plan = parse("search plan", plan)?;
    let outputs = outputs
        .iter()
        .map(|o| parse("shard output", o))
        .collect::<PyResult<Vec<ShardOutput>>>()?;
    let title = title.to_string();
    py.detach(move || -> Result<_, String> {
        let mut log = LogWriter::new(Vec::new(), Vec::new());
        let merged = merge(&scene, &plan, None, outputs, &mut log).map_err(|e| e.to_string())?;
        Ok(files(&merged, &title, log))
    })
    .map_err(input_err)
}

/// Runs a whole plan here, each epoch's shards at once on `threads` workers (else one per core;
/// `ndvm search --shards`), and merges it: the files of [`search_merge`].
#[pyfunction]
#[pyo3(signature = (scene, base, json, title, plan, threads=None))]
pub fn search_local(
    py: Python<'_>,
    scene: &str,
    base: &str,
    json: bool,
    title: &str,
    plan: &str,
    threads: Option<usize>,
) -> PyResult<Vec<(String, String)>> {
    let scene = scene_of(scene, json).map_err(input_err)?;
    let plan: Plan = parse("search plan", plan)?;
    let base = Path::new(base).to_path_buf();
    let title = title.to_string();
    py.detach(move || -> Result<_, String> {
        let options = SearchOptions {
            threads,
            ..SearchOptions::default()
        };
        let mut log = LogWriter::new(Vec::new(), Vec::new());
        let merged =
            run_local(&scene, &base, &options, &plan, &mut log).map_err(|e| e.to_string())?;
        Ok(files(&merged, &title, log))
    })
    .map_err(input_err)
}

/// A merged search, its log written in memory, as the files `ndvm search --out` writes.
fn files(merged: &Merged, title: &str, log: LogWriter<Vec<u8>>) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = (merged.report.files(title).into_iter())
        .map(|(f, t)| (f.to_string(), t))
        .collect();
    // JSON lines are UTF-8.
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap_or_default();
    files.push(("calibrations.jsonl".into(), text(log.calibrations)));
    files.push(("programs.jsonl".into(), text(log.programs)));
    files
}
