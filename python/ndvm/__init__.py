"""ndvm: exact gradients for programs that stay data.

The native engine (a Rust extension) behind a small Python API:

>>> import numpy as np, ndvm
>>> p = ndvm.Program("(* a (exp (- (* b t))))", ["a", "b", "t"])
>>> out = p.evaluate({"a": np.array([1.0, 2.0]), "b": 0.5}, constants={"t": 2.0}, precision="f64")
>>> out["lanes"]
2
>>> round(float(out["result"][1]), 6)
0.735759
>>> round(float(out["grads"]["a"][0]), 6)  # d/da of a·e^(−bt) = e^(−bt)
0.367879

Errors are located:

>>> try:
...     ndvm.Program("(+ 1\\n   (car x))", ["x"]).evaluate({"x": 2.0})
... except ndvm.NdvmError as e:
...     print(type(e).__name__, e.kind, e.line, e.column)
TypeError type 2 4

``fit`` and ``search`` run scenes (a ``.scene.ron`` path or a dict) and return the results as
plain Python objects; ``ndvm.torch``, ``ndvm.jax`` and ``ndvm.ray`` are optional extras.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Union

from ._ndvm import (  # noqa: F401
    ArityError,
    DivergenceError,
    InputError,
    LimitError,
    NdvmError,
    Program,
    ShapeError,
    SyntaxError,
    TypeError,
    UnboundError,
    fit_json,
    merge_results,
    search_json,
    search_local,
    search_merge,
    search_plan,
    search_shard,
    search_tasks,
)

__all__ = [
    "Program",
    "SymbolicRegressor",
    "fit",
    "search",
    "search_sharded",
    "NdvmError",
    "SyntaxError",
    "UnboundError",
    "ArityError",
    "TypeError",
    "ShapeError",
    "DivergenceError",
    "LimitError",
    "InputError",
]

Scene = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _scene_text(scene: Scene, base_dir: Optional[str]) -> tuple[str, str, bool]:
    """The scene's text, the folder its relative paths start from, and whether it is JSON."""
    if isinstance(scene, Mapping):
        return json.dumps(scene), os.fspath(base_dir or os.getcwd()), True
    path = os.fspath(scene)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    base = base_dir or os.path.dirname(os.path.abspath(path))
    return text, base, False


def fit(
    scene: Scene,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    shard: Optional[int] = None,
    num_shards: Optional[int] = None,
) -> dict:
    """Fits every candidate of a scene, as ``ndvm fit`` does, and returns its results.

    ``scene`` is a ``.scene.ron`` path or a dict in the scene format (relative paths start at
    ``base_dir``, default the current folder). The result is the results JSON of
    ``ndvm fit --out`` (without timing) as a dict: ``candidates`` (each with ``name``,
    ``status``, ``loss``, ``params``, ``restarts``, …) and ``ranking``. The GIL is released while
    the engine works. ``shard``/``num_shards`` fit only the candidates whose index is
    ``shard`` modulo ``num_shards`` (what :func:`ndvm.ray.fit` runs per task).
    """
    text, base, is_json = _scene_text(scene, base_dir)
    return json.loads(fit_json(text, base, is_json, threads, shard, num_shards))


def search(
    scene: Scene,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
) -> dict:
    """Runs a search scene, as ``ndvm search`` does, and returns its report as a dict.

    ``calibrations`` or ``seconds`` replace the scene's budget. The report's ``front`` is the
    Pareto front (``entries``, simplest first, each with ``complexity``, ``train_loss``,
    ``sympy``, ``latex``; ``chosen`` indexes the pick).
    """
    text, base, is_json = _scene_text(scene, base_dir)
    return json.loads(search_json(text, base, is_json, threads, calibrations, seconds))


def _title(scene: Scene) -> str:
    return "scene" if isinstance(scene, Mapping) else os.path.basename(os.fspath(scene))


def search_sharded(
    scene: Scene,
    num_shards: int = 2,
    threads: Optional[int] = None,
    *,
    epochs: Optional[int] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
    migrants: Optional[int] = None,
    base_dir: Optional[str] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> dict:
    """Runs a search as ``num_shards`` shards, here, and returns the merged report (the dict
    :func:`search` returns): each round's shards at once on ``threads`` workers (else one per
    core), as ``ndvm search --shards`` does. What :func:`ndvm.ray.search` computes on a cluster,
    byte for byte under a calibration budget, whatever ``threads`` (docs/python.md).

    Shards deal out the scene's candidates and every stream's lines and run Evolve, Command
    and plugin proposers with seeds of their own; in ``epochs`` rounds (default 4 when several
    shards run Evolve, else 1) each shard's best ``migrants`` programs (default 4) seed every
    shard's Evolve in the next round. The budget (``calibrations``, ``seconds``, else the
    scene's) is the whole search's; ``seconds`` is the run's wall time (with more shards than
    ``threads``, each wave of shards gets its share of a round). With ``out``, the folder gets
    what ``ndvm search --out`` writes, as it writes it (``calibrations.jsonl`` and
    ``programs.jsonl`` streamed, then ``search.json`` with the wall-clock ``timing``,
    ``frontier.csv``, ``frontier.svg``, ``front.svg``; one run at a time per folder); without,
    the log goes nowhere and memory stays flat. Ctrl-C stops the search after its round and
    raises ``KeyboardInterrupt``. One shard in one epoch is exactly :func:`search`.
    """
    text, base, is_json = _scene_text(scene, base_dir)
    plan = search_plan(text, is_json, num_shards, epochs, calibrations, seconds, migrants)
    folder = None if out is None else os.fspath(out)
    return _report(search_local(text, base, is_json, _title(scene), plan, threads, folder))


def _report(results: str) -> dict:
    """A merged search's results JSON as :func:`search` returns it (the wall-clock timing
    apart)."""
    report = json.loads(results)
    report.pop("timing", None)
    return report


def __getattr__(name: str) -> Any:
    # The estimator imports scikit-learn: only when it is asked for.
    if name == "SymbolicRegressor":
        from .sklearn import SymbolicRegressor

        return SymbolicRegressor
    if name == "ODERegressor":
        from .dynamics import ODERegressor

        return ODERegressor
    raise AttributeError(f"module 'ndvm' has no attribute {name!r}")
