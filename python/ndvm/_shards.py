"""The driver of a search in shards for :func:`ndvm.ray.search` (tasks on a Ray cluster) and
any other executor (``python/bench/ray_search.py`` runs it on local processes);
:func:`ndvm.search_sharded` runs the same plan in the engine, every shard of a round at once.

The engine plans (``search_plan``), runs a task (``search_shard``) and merges
(``search_merge``); this loop only hands tasks out, epoch after epoch, and collects their
outputs. Every task is a pure function of the scene and its task text under a calibration
budget, so the merged result does not depend on where, how often or in which order the tasks
ran.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Callable, Optional, Sequence

from ._ndvm import search_merge, search_plan, search_tasks

#: Runs one epoch's tasks (JSON texts) and returns their outputs (JSON texts), in any order.
RunEpoch = Callable[[Sequence[str]], Sequence[str]]


def drive(
    text: str,
    is_json: bool,
    title: str,
    shards: int,
    run_epoch: RunEpoch,
    *,
    epochs: Optional[int] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
    migrants: Optional[int] = None,
) -> dict[str, str]:
    """Plans, runs every epoch with ``run_epoch`` and merges: the output files by name."""
    plan = search_plan(text, is_json, shards, epochs, calibrations, seconds, migrants)
    outputs: list[str] = []
    for epoch in range(json.loads(plan)["epochs"]):
        outputs.extend(run_epoch(search_tasks(plan, epoch, outputs)))
    return dict(search_merge(text, is_json, title, plan, outputs))


def write_files(out: "os.PathLike[str] | str", files: dict[str, str]) -> None:
    """Writes the merged files into the folder ``out`` (created if missing), each through a
    temporary file renamed into place, replacing only regular files."""
    folder = os.fspath(out)
    os.makedirs(folder, exist_ok=True)
    for name, body in files.items():
        path = os.path.join(folder, name)
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
            raise ValueError(f"{path}: not a regular file; outputs replace only regular files")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
