from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

Scene = Union[str, PathLike[str], Mapping[str, Any]]
Input = Union[float, int, npt.ArrayLike]

class NdvmError(Exception):
    kind: str
    message: str
    line: Optional[int]
    column: Optional[int]
    lanes: Optional[list[int]]

class SyntaxError(NdvmError): ...
class UnboundError(NdvmError): ...
class ArityError(NdvmError): ...
class TypeError(NdvmError): ...
class ShapeError(NdvmError): ...
class DivergenceError(NdvmError): ...
class LimitError(NdvmError): ...
class InputError(NdvmError): ...

class Program:
    def __init__(self, src: str, inputs: list[str]) -> None: ...
    @property
    def inputs(self) -> list[str]: ...
    @property
    def source(self) -> str: ...
    def evaluate(
        self,
        inputs: dict[str, Input],
        grad: bool = True,
        precision: str = "f32",
        constants: Optional[dict[str, Input]] = None,
        *,
        max_steps: Optional[int] = None,
        max_heap_cells: Optional[int] = None,
        max_tape_nodes: Optional[int] = None,
        max_depth: Optional[int] = None,
        max_payload_bytes: Optional[int] = None,
    ) -> dict[str, Any]: ...
    def native_seconds(
        self,
        inputs: dict[str, Input],
        n: int,
        grad: bool = True,
        precision: str = "f32",
        constants: Optional[dict[str, Input]] = None,
    ) -> float: ...

def _scene_text(scene: Scene, base_dir: Optional[str]) -> tuple[str, str, bool]: ...
def fit(
    scene: Scene,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    shard: Optional[int] = None,
    num_shards: Optional[int] = None,
) -> dict[str, Any]: ...
def search(
    scene: Scene,
    threads: Optional[int] = None,
    *,
    base_dir: Optional[str] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
) -> dict[str, Any]: ...
def search_sharded(
    scene: Scene,
    num_shards: int = ...,
    threads: Optional[int] = None,
    *,
    epochs: Optional[int] = None,
    calibrations: Optional[int] = None,
    seconds: Optional[float] = None,
    migrants: Optional[int] = None,
    base_dir: Optional[str] = None,
    out: Optional[Union[str, "PathLike[str]"]] = None,
) -> dict[str, Any]: ...
def fit_json(
    scene: str, base: str, json: bool = ..., threads: Optional[int] = ..., shard: Optional[int] = ..., num_shards: Optional[int] = ...
) -> str: ...
def merge_results(parts: list[str]) -> str: ...
def search_json(
    scene: str,
    base: str,
    json: bool = ...,
    threads: Optional[int] = ...,
    calibrations: Optional[int] = ...,
    seconds: Optional[float] = ...,
) -> str: ...
def search_plan(
    scene: str,
    json: bool,
    shards: int,
    epochs: Optional[int] = ...,
    calibrations: Optional[int] = ...,
    seconds: Optional[float] = ...,
    migrants: Optional[int] = ...,
) -> str: ...
def search_tasks(plan: str, epoch: int, earlier: list[str]) -> list[str]: ...
def search_shard(scene: str, base: str, json: bool, task: str, threads: Optional[int] = ...) -> str: ...
def search_merge(
    scene: str, json: bool, title: str, plan: str, outputs: list[str], out: Optional[str] = ...
) -> str: ...
def search_local(
    scene: str,
    base: str,
    json: bool,
    title: str,
    plan: str,
    threads: Optional[int] = ...,
    out: Optional[str] = ...,
) -> str: ...

class SymbolicRegressor:
    """scikit-learn estimator over ``ndvm search``'s Pareto front (``ndvm.sklearn``)."""

    equations_: list[dict[str, Any]]
    best_: dict[str, Any]
    report_: dict[str, Any]
    def __init__(
        self,
        seconds: float = ...,
        calibrations: Optional[int] = ...,
        unary: Sequence[str] = ...,
        binary: Sequence[str] = ...,
        max_nodes: int = ...,
        elite: int = ...,
        nested: bool = ...,
        optimizer: str = ...,
        steps: int = ...,
        draws: int = ...,
        lr: float = ...,
        seed: int = ...,
        threads: Optional[int] = ...,
        variable_names: Optional[Sequence[str]] = ...,
        max_rows: int = ...,
    ) -> None: ...
    def fit(self, X: Any, y: Any) -> "SymbolicRegressor": ...
    def predict(self, X: Any, index: Optional[int] = ...) -> Any: ...
    def score(self, X: Any, y: Any, sample_weight: Any = ...) -> float: ...
    def sympy(self, index: Optional[int] = ...) -> Any: ...
    def latex(self, index: Optional[int] = ...) -> str: ...

class ODERegressor:
    """The equations of a system's dynamics from its trajectories, PySINDy's way
    (``ndvm.dynamics``)."""

    equations_: list[dict[str, Any]]
    best_: dict[str, Any]
    report_: dict[str, Any]
    screen_report_: dict[str, Any]
    def __init__(
        self,
        seconds: float = ...,
        calibrations: Optional[int] = ...,
        unary: Sequence[str] = ...,
        binary: Sequence[str] = ...,
        max_nodes: int = ...,
        steps: int = ...,
        draws: int = ...,
        substeps: int = ...,
        smoothing: Optional[int] = ...,
        seed: int = ...,
        threads: Optional[int] = ...,
        feature_names: Optional[Sequence[str]] = ...,
    ) -> None: ...
    def fit(self, x: Any, t: Any = ...) -> "ODERegressor": ...
    def equations(self, index: Optional[int] = ...) -> list[str]: ...
    def sympy(self, index: Optional[int] = ...) -> list[Any]: ...
    def simulate(
        self, x0: Any, t: Any, index: Optional[int] = ..., max_evaluations: int = ...
    ) -> Any: ...
    def score(self, x: Any, t: Any = ..., index: Optional[int] = ...) -> float: ...
