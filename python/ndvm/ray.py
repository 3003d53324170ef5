"""Fits and searches on Ray: a scene's work sharded into Ray tasks, each running with the
engine's own threads, merged deterministically.

>>> import ray, ndvm.ray                                   # doctest: +SKIP
>>> ray.init(address="auto")                               # doctest: +SKIP
>>> results = ndvm.ray.fit("scenes/feynman.scene.ron", num_shards=8)  # doctest: +SKIP
>>> report = ndvm.ray.search("scenes/search_feynman.scene.ron", num_workers=8,
...                          calibrations=200_000, out="feynman-search")  # doctest: +SKIP

**Fits.**
The merged results are byte for byte what one process's ``ndvm.fit`` (and ``ndvm fit --out``,
without timing) gives for the same scene, whatever the shard count (for scenes without a
wall-clock ``budget_seconds``, which each shard's fit would count on its own clock): candidate ``i`` goes to
shard ``i mod num_shards``, each candidate's fit depends only on itself, and the merge orders
candidates by index and recomputes the ranking. Ray's fault tolerance covers workers: a task
whose worker dies is retried (``max_retries``), and the merge keeps one result per candidate, so
none is lost or duplicated. Every node needs ``ndvm`` (``pip install ./python``) and the scene's
files at the same path (or pass a dict with absolute paths); see docs/python.md.

**Searches.** :func:`search` runs a search scene as ``num_workers`` shards (islands): the scene's
candidates and every stream's lines are dealt out among them, Evolve, Command and plugin
proposers run in each with seeds of their own, and in epochs the best programs of every shard
migrate to all. The logs and frontiers merge into one search's (``ndvm.search_sharded`` runs the
same tasks in one process, and gives the same bytes).
"""

from __future__ import annotations

import json
import os
import time
from typing import Optional, Union

try:
    import ray as _ray
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.ray needs ray: pip install ray (or the extra: pip install \"./python[ray]\")"
    ) from e

from . import Scene, _report, _scene_text, _title, fit_json, merge_results, search_shard
from ._shards import drive, files_of


def _test_pause(kind: str, name: str) -> None:
    """Test instrumentation (tests/test_ray.py): announce this worker, and on a first attempt
    linger so the test can kill it mid-run."""
    pause = os.environ.get("NDVM_RAY_TEST_PAUSE_DIR")
    if not pause:
        return
    marker = os.path.join(pause, f"{kind}{name}.pid")
    first = not os.path.exists(marker)
    with open(marker, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    if first:
        time.sleep(3.0)


@_ray.remote
def _fit_shard(text: str, base: str, is_json: bool, threads: Optional[int], shard: int, num_shards: int) -> str:
    _test_pause("shard", str(shard))
    return fit_json(text, base, is_json, threads, shard, num_shards)


def fit_json_text(
    scene: Scene,
    num_shards: int = 2,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    max_retries: int = 3,
    num_cpus: Optional[float] = None,
) -> str:
    """Like :func:`fit`, returning the results JSON text itself (for byte comparisons)."""
    if num_shards < 1:
        raise ValueError("num_shards must be at least 1")
    text, base, is_json = _scene_text(scene, base_dir)
    options = {"max_retries": max_retries}
    if num_cpus is not None:
        options["num_cpus"] = num_cpus
    task = _fit_shard.options(**options)
    refs = [task.remote(text, base, is_json, threads, k, num_shards) for k in range(num_shards)]
    return merge_results(_ray.get(refs))


def fit(
    scene: Scene,
    num_shards: int = 2,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    max_retries: int = 3,
    num_cpus: Optional[float] = None,
) -> dict:
    """Fits a scene's candidates in ``num_shards`` Ray tasks and returns the merged results (the
    dict :func:`ndvm.fit` returns). ``threads`` is each task's engine thread count and
    ``num_cpus`` the CPUs Ray reserves for each task (give both the same number); a task whose
    worker dies is retried up to ``max_retries`` times."""
    text = fit_json_text(
        scene, num_shards, threads, base_dir=base_dir, max_retries=max_retries, num_cpus=num_cpus
    )
    return json.loads(text)


@_ray.remote
def _search_task(text: str, base: str, is_json: bool, task: str, threads: Optional[int]) -> str:
    t = json.loads(task)
    _test_pause("search", f"{t['epoch']}-{t['shard']}")
    return search_shard(text, base, is_json, task, threads)


def _epoch_runner(text, base, is_json, threads, max_retries, num_cpus):
    """Runs one epoch's tasks as Ray tasks (retried when a worker dies)."""
    options = {"max_retries": max_retries}
    if num_cpus is not None:
        options["num_cpus"] = num_cpus
    task = _search_task.options(**options)

    def run_epoch(tasks):
        return _ray.get([task.remote(text, base, is_json, t, threads) for t in tasks])

    return run_epoch


def _drive(scene, num_workers, threads, epochs, calibrations, seconds, migrants, base_dir,
           max_retries, num_cpus, out) -> str:
    """Plans, runs every epoch as Ray tasks and merges (into ``out`` if given): the results
    JSON."""
    if num_workers < 1:
        raise ValueError("num_workers must be at least 1")
    text, base, is_json = _scene_text(scene, base_dir)
    return drive(
        text,
        is_json,
        _title(scene),
        num_workers,
        _epoch_runner(text, base, is_json, threads, max_retries, num_cpus),
        epochs=epochs,
        calibrations=calibrations,
        seconds=seconds,
        migrants=migrants,
        out=out,
    )


def search_files(
    scene: Scene,
    num_workers: int = 2,
    threads: Optional[int] = None,
    *,
    epochs: Optional[int] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
    migrants: Optional[int] = None,
    base_dir: Optional[str] = None,
    max_retries: int = 3,
    num_cpus: Optional[float] = None,
) -> dict[str, str]:
    """Like :func:`search`, returning the merged files by name (``search.json``,
    ``calibrations.jsonl``, ``programs.jsonl``, ``frontier.csv``, ``frontier.svg``,
    ``front.svg``) as text."""
    return files_of(
        lambda folder: _drive(scene, num_workers, threads, epochs, calibrations, seconds,
                              migrants, base_dir, max_retries, num_cpus, folder)
    )


def search(
    scene: Scene,
    num_workers: int = 2,
    threads: Optional[int] = None,
    *,
    epochs: Optional[int] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
    migrants: Optional[int] = None,
    base_dir: Optional[str] = None,
    max_retries: int = 3,
    num_cpus: Optional[float] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> dict:
    """Runs a search scene as ``num_workers`` shards on the Ray cluster and returns the merged
    report (the dict :func:`ndvm.search` returns); with ``out``, writes what ``ndvm search
    --out`` writes into that folder.

    Each epoch (``epochs``, default 4 when the scene has Evolve, else 1) is one Ray task per
    shard; between epochs the shards' best ``migrants`` programs seed every shard's Evolve.
    ``calibrations``/``seconds`` are the whole search's budget (else the scene's). Under a
    calibration budget the result is byte for byte :func:`ndvm.search_sharded` with the same
    shard count, on any cluster: a task whose worker dies is rerun (``max_retries``) and gives
    the same output, and the merge keeps one output per shard and epoch. ``threads`` is each
    task's engine thread count and ``num_cpus`` what Ray reserves for it.
    """
    return _report(
        _drive(scene, num_workers, threads, epochs, calibrations, seconds, migrants,
               base_dir, max_retries, num_cpus, out)
    )


__all__ = ["fit", "fit_json_text", "search", "search_files"]
