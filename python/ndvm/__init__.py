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
)

__all__ = [
    "Program",
    "fit",
    "search",
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
) -> dict:
    """Runs a search scene, as ``ndvm search`` does, and returns its report as a dict."""
    text, base, is_json = _scene_text(scene, base_dir)
    return json.loads(search_json(text, base, is_json, threads, calibrations))
