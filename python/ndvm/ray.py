"""Populations on Ray: a scene's candidates sharded into Ray tasks, each a whole ``fit`` of its
shard with the engine's own threads, merged deterministically.

>>> import ray, ndvm.ray                                   # doctest: +SKIP
>>> ray.init(address="auto")                               # doctest: +SKIP
>>> results = ndvm.ray.fit("scenes/feynman.scene.ron", num_shards=8)  # doctest: +SKIP

The merged results are byte for byte what one process's ``ndvm.fit`` (and ``ndvm fit --out``,
without timing) gives for the same scene, whatever the shard count (for scenes without a
wall-clock ``budget_seconds``, which each shard's fit would count on its own clock): candidate ``i`` goes to
shard ``i mod num_shards``, each candidate's fit depends only on itself, and the merge orders
candidates by index and recomputes the ranking. Ray's fault tolerance covers workers: a task
whose worker dies is retried (``max_retries``), and the merge keeps one result per candidate, so
none is lost or duplicated. Every node needs ``ndvm`` (``pip install ./python``) and the scene's
files at the same path (or pass a dict with absolute paths); see docs/python.md.
"""

from __future__ import annotations

import json
import os
import time
from typing import Optional

try:
    import ray as _ray
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.ray needs ray: pip install ray (or the extra: pip install \"./python[ray]\")"
    ) from e

from . import Scene, _scene_text, fit_json, merge_results


@_ray.remote
def _fit_shard(text: str, base: str, is_json: bool, threads: Optional[int], shard: int, num_shards: int) -> str:
    pause = os.environ.get("NDVM_RAY_TEST_PAUSE_DIR")
    if pause:
        # Test instrumentation (tests/test_ray.py): announce this worker, and on a first attempt
        # linger so the test can kill it mid-run.
        marker = os.path.join(pause, f"shard{shard}.pid")
        first = not os.path.exists(marker)
        with open(marker, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        if first:
            time.sleep(3.0)
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


__all__ = ["fit", "fit_json_text"]
