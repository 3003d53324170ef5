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
    out: "Optional[os.PathLike[str] | str]" = None,
) -> str:
    """Plans, runs every epoch with ``run_epoch`` and merges: the results JSON. With ``out``,
    the folder gets what ``ndvm search --out`` writes (claimed, streamed and renamed into place
    by the engine, as the CLI writes it)."""
    plan = search_plan(text, is_json, shards, epochs, calibrations, seconds, migrants)
    outputs: list[str] = []
    for epoch in range(json.loads(plan)["epochs"]):
        outputs.extend(run_epoch(search_tasks(plan, epoch, outputs)))
    folder = None if out is None else os.fspath(out)
    return search_merge(text, is_json, title, plan, outputs, folder)


def drive_files(*args, **kwargs) -> dict[str, str]:
    """:func:`drive`, returning every file ``ndvm search --out`` writes, by name, as text (the
    log read back whole: for tests and small searches)."""
    return files_of(lambda folder: drive(*args, out=folder, **kwargs))


def files_of(write: Callable[[str], object]) -> dict[str, str]:
    """The files ``write`` writes into a temporary output folder, by name, as text."""
    files = {}
    with tempfile.TemporaryDirectory(prefix="ndvm-merge-") as folder:
        write(folder)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not name.startswith(".") and os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    files[name] = f.read()
    return files
