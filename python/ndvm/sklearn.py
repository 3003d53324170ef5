"""``ndvm.SymbolicRegressor``: symbolic regression as a scikit-learn estimator.

The estimator writes ``X`` and ``y`` to a CSV file in a temporary folder, runs an ``Evolve``
search on it (every proposal calibrated by gradient descent from several draws) and keeps the
search's Pareto front: the best program at every complexity, and the one chosen by score
(PySR's "best"; ``docs/search.md``). ``predict`` runs the chosen program (or any entry of the
front) through the engine.

>>> import numpy as np, ndvm
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(0.1, 5.0, size=(40, 1))
>>> y = 2.3 * X[:, 0] / (0.7 + X[:, 0])
>>> m = ndvm.SymbolicRegressor(calibrations=20000, seed=1).fit(X, y)
>>> m.score(X, y) > 0.999
True
>>> m.best_["complexity"] <= 9          # Vmax·x0/(Km + x0), in one of its forms
True
>>> eqs = m.equations_                  # the front, simplest first, each better than the last
>>> all(a["complexity"] < b["complexity"] and a["adjusted_loss"] > b["adjusted_loss"]
...     for a, b in zip(eqs, eqs[1:]))
True
"""

from __future__ import annotations

import csv
import os
import re
import tempfile
import warnings
from typing import Any, Optional, Sequence

import numpy as np

from . import Program, search

try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.utils.validation import check_is_fitted
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.SymbolicRegressor needs scikit-learn: pip install scikit-learn sympy "
        "(or the extra: pip install \"./python[sklearn]\")"
    ) from e

try:  # scikit-learn 1.6 and later
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn: the estimator's own checks
    validate_data = None  # type: ignore[assignment]

__all__ = ["SymbolicRegressor"]

# Inside, column i is `x{i}` whatever its name (a name such as `if`, `lambda` or `True` means
# something to the dialect or to Python): names are put back in what the estimator shows.
_INSIDE = re.compile(r"\bx(\d+)\b")
_INSIDE_LATEX = re.compile(r"x_\{(\d+)\}")
# The fitted constants' names (the ones Evolve gives out).
_LETTERS = [chr(c) for c in range(ord("a"), ord("h") + 1)]
# Lanes a search holds at once (`ndvm_components::limits::LANES_IN_FLIGHT`): window × draws ×
# rows must stay under it.
_LANES_IN_FLIGHT = 1 << 22
_WINDOW = 64
# |y| (or a prediction) beyond this squares past the largest double: every loss overflows.
_OVERFLOW = 1e150


class SymbolicRegressor(RegressorMixin, BaseEstimator):  # type: ignore[misc,valid-type]
    """Finds a formula for ``y`` from the columns of ``X``.

    Parameters
    ----------
    seconds : float, default 30
        The search's time budget (ignored when ``calibrations`` is given).
    calibrations : int, optional
        A calibration budget instead: the result is then the same on every machine and at
        every thread count.
    unary, binary : sequences of str
        The operators programs are built from (the dialect's names).
    max_nodes : int, default 30
        The largest program tried.
    elite : int, default 24
        How many of the best distinct programs the search breeds from (with its Pareto front):
        larger keeps more kinds of program alive, smaller searches closer to the best.
    nested : bool, default False
        Let the search build a function inside another of its family (``exp``/``log`` inside
        ``exp``/``log``, ``sin``/``cos``/``tan`` inside one of them). Off, it spends its budget
        on other shapes instead of polishing ``exp(exp(…))`` approximations.
    optimizer : ``"lm"`` (default) or ``"adam"``
        How each program's constants are fitted: Levenberg–Marquardt on the exact Jacobian
        (precise, so that the front compares laws rather than where an optimizer stopped), or
        Adam with learning rate ``lr``.
    steps, draws, lr : calibration settings
        Optimizer steps per calibration, initial draws per program, Adam's learning rate.
    seed : int, default 1
    threads : int, optional
        Worker threads (default: one per core).
    variable_names : sequence of str, optional
        Names of ``X``'s columns in the equations (default: a DataFrame's columns, else
        ``x0``, ``x1``, …): any distinct strings.
    max_rows : int, default 10000
        The most rows the search fits: a larger ``X`` is subsampled (rows drawn with ``seed``,
        a warning says so). Each calibration fits every row it is given, from ``draws``
        starting points at once.

    Attributes
    ----------
    equations_ : list of dict
        The Pareto front, simplest first: ``complexity``, ``loss`` (training MSE),
        ``adjusted_loss`` (what the front compares: ln(loss) plus a BIC penalty), ``score``,
        ``equation`` (a sympy string), ``latex``, ``program`` (the dialect source), ``params``
        and ``chosen``.
    best_ : dict
        The chosen entry of ``equations_``.
    report_ : dict
        The whole search report (``ndvm.search``'s).
    """

    def __init__(
        self,
        seconds: float = 30.0,
        calibrations: Optional[int] = None,
        unary: Sequence[str] = ("exp", "log", "sin", "cos", "sqrt", "square"),
        binary: Sequence[str] = ("+", "-", "*", "/"),
        max_nodes: int = 30,
        elite: int = 24,
        nested: bool = False,
        optimizer: str = "lm",
        steps: int = 40,
        draws: int = 4,
        lr: float = 0.1,
        seed: int = 1,
        threads: Optional[int] = None,
        variable_names: Optional[Sequence[str]] = None,
        max_rows: int = 10_000,
    ):
        self.seconds = seconds
        self.calibrations = calibrations
        self.unary = unary
        self.binary = binary
        self.max_nodes = max_nodes
        self.elite = elite
        self.nested = nested
        self.optimizer = optimizer
        self.steps = steps
        self.draws = draws
        self.lr = lr
        self.seed = seed
        self.threads = threads
        self.variable_names = variable_names
        self.max_rows = max_rows

    # -- scikit-learn --------------------------------------------------------------------

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        # A search under a time budget is not repeatable; under a calibration budget it is.
        tags.non_deterministic = self.calibrations is None
        return tags

    def _validate(self, X, y=None, reset=True):
        if validate_data is not None:
            if y is None:
                return validate_data(self, X, reset=reset, dtype=np.float64), None
            return validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or not np.isfinite(X).all():
            raise ValueError("X must be a finite 2-D array")
        if reset:
            self.n_features_in_ = X.shape[1]
        if y is None:
            return X, None
        y = np.asarray(y, dtype=np.float64).ravel()
        if len(y) != len(X) or not np.isfinite(y).all():
            raise ValueError("y must be finite with one value per row of X")
        return X, y

    def _names(self, n: int) -> list[str]:
        if self.variable_names is not None:
            names = [str(v) for v in self.variable_names]
        elif hasattr(self, "feature_names_in_"):
            names = [str(v) for v in self.feature_names_in_]
        else:
            names = [f"x{i}" for i in range(n)]
        if len(names) != n:
            raise ValueError(f"{len(names)} variable names for {n} columns of X")
        if len(set(names)) != n:
            raise ValueError(f"variable names {names} repeat a name")
        return names

    def _rows(self, X, y):
        """``X`` and ``y``, subsampled to ``max_rows`` (with a warning), and the search window
        that keeps window × draws × rows within the engine's limit."""
        draws = int(self.draws)
        if draws < 1:
            raise ValueError(f"draws={draws}: at least 1")
        if int(self.max_rows) < 2:
            raise ValueError(f"max_rows={self.max_rows}: at least 2")
        rows = min(len(X), int(self.max_rows))
        if draws * rows > _LANES_IN_FLIGHT:
            raise ValueError(
                f"draws={draws} × {rows} rows is over the {_LANES_IN_FLIGHT} lanes a search "
                "holds at once: lower max_rows or draws"
            )
        if rows < len(X):
            warnings.warn(
                f"{len(X)} rows: the search fits {rows} of them, drawn at random (seed "
                f"{self.seed}); set max_rows to fit more",
                stacklevel=3,
            )
            keep = np.sort(np.random.default_rng(int(self.seed)).choice(len(X), rows, replace=False))
            X, y = X[keep], y[keep]
        window = max(1, min(_WINDOW, _LANES_IN_FLIGHT // (draws * rows)))
        return X, y, window

    def fit(self, X, y):
        """Searches for a formula; returns ``self``."""
        if y is None:
            raise ValueError(
                "SymbolicRegressor requires y to be passed, but the target y is None"
            )
        X, y = self._validate(X, y)
        if len(X) < 2:
            raise ValueError(f"{len(X)} sample(s): a fit needs at least 2")
        names = self._names(X.shape[1])
        inside = [f"x{i}" for i in range(X.shape[1])]
        big = float(np.max(np.abs(y)))
        if big > _OVERFLOW:
            raise ValueError(
                f"y reaches {big:.3g}: its squared errors overflow double precision, so no "
                "loss would be finite; divide y by a constant (its standard deviation, say) "
                "and scale the equations back"
            )
        X, y, window = self._rows(X, y)
        budget: dict[str, Any] = (
            {"calibrations": int(self.calibrations)}
            if self.calibrations is not None
            else {"seconds": float(self.seconds)}
        )
        with tempfile.TemporaryDirectory(prefix="ndvm-sr-") as tmp:
            path = os.path.join(tmp, "data.csv")
            with open(path, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow([*inside, "__target__"])
                for row, t in zip(X, y):
                    w.writerow([repr(float(v)) for v in row] + [repr(float(t))])
            scene = {
                "candidates": [],
                "parameters": {
                    "init": {p: 1.0 for p in _LETTERS}
                },
                "data": {
                    "Csv": {
                        "path": "data.csv",
                        "columns": {n: n for n in inside},
                        "target": "__target__",
                    }
                },
                "loss": "Mse",
                "search": {
                    "proposers": [
                        {
                            "Evolve": {
                                "unary": list(self.unary),
                                "binary": list(self.binary),
                                "max_nodes": int(self.max_nodes),
                                "elite": int(self.elite),
                                "nested": bool(self.nested),
                            }
                        }
                    ],
                    "calibration": {
                        "steps": int(self.steps),
                        "optimizer": self._optimizer(),
                        "draws": int(self.draws),
                        "draw": {"Normal": {"sd": 1.0}},
                    },
                    "success": {"TrainLoss": 0.0},
                    "budget": budget,
                    "window": window,
                    "seed": int(self.seed),
                },
            }
            report = search(scene, self.threads, base_dir=tmp)
        front = report["front"]
        shown = _Names(names)
        entries, self._inside = [], []
        for i, e in enumerate(front["entries"]):
            entries.append(
                {
                    "complexity": e["complexity"],
                    "loss": e["train_loss"],
                    "adjusted_loss": e["adjusted_loss"],
                    "score": e["score"],
                    "equation": shown.text(e.get("sympy")),
                    "latex": shown.latex(e.get("latex")),
                    "program": shown.text(e["src"]),
                    "params": dict(e["params"]),
                    "chosen": i == front["chosen"],
                }
            )
            self._inside.append((e.get("sympy"), e["src"]))
        if not entries:
            raise RuntimeError(_nothing_found(report, budget))
        self.report_ = report
        self.equations_ = entries
        self.best_ = entries[front["chosen"]]
        self._variables = names
        return self

    def _optimizer(self) -> dict:
        if self.optimizer == "lm":
            return {"LevenbergMarquardt": {}}
        if self.optimizer == "adam":
            return {"Adam": {"lr": float(self.lr)}}
        raise ValueError(f"optimizer {self.optimizer!r}: 'lm' or 'adam'")

    def _entry(self, index: Optional[int]) -> dict:
        check_is_fitted(self, "equations_")
        return self.best_ if index is None else self.equations_[index]

    def _inside_of(self, index: Optional[int]) -> tuple[Optional[str], str]:
        """The entry's sympy text and program as the engine wrote them (columns `x{i}`)."""
        check_is_fitted(self, "equations_")
        if index is None:
            index = next(i for i, e in enumerate(self.equations_) if e["chosen"])
        return self._inside[index]

    def predict(self, X, index: Optional[int] = None) -> np.ndarray:
        """The chosen equation (or ``equations_[index]``) at the rows of ``X``."""
        entry = self._entry(index)
        X, _ = self._validate(X, reset=False)
        params = entry["params"]
        inside = [f"x{i}" for i in range(len(self._variables))]
        program = Program(self._inside_of(index)[1], list(params) + inside)
        inputs = {v: X[:, i].copy() for i, v in enumerate(inside)}
        out = program.evaluate(
            inputs, grad=False, precision="f64", constants={k: float(v) for k, v in params.items()}
        )
        result = np.asarray(out["result"], dtype=np.float64).ravel()
        if result.size == 1 and len(X) != 1:
            result = np.full(len(X), result[0])
        return result

    def sympy(self, index: Optional[int] = None):
        """The chosen equation (or ``equations_[index]``) as a sympy expression."""
        try:
            import sympy
        except ImportError as e:  # an optional extra
            raise ImportError(
                "SymbolicRegressor.sympy() needs sympy: pip install sympy "
                "(or the extra: pip install \"./python[sklearn]\")"
            ) from e

        entry = self._entry(index)
        equation = self._inside_of(index)[0]
        if equation is None:
            raise ValueError(f"`{entry['program']}` is not one arithmetic expression")
        symbols = {f"x{i}": sympy.Symbol(v) for i, v in enumerate(self._variables)}
        return sympy.sympify(equation, locals=symbols)

    def latex(self, index: Optional[int] = None) -> str:
        """The chosen equation (or ``equations_[index]``) as LaTeX."""
        entry = self._entry(index)
        if entry["latex"] is None:
            raise ValueError(f"`{entry['program']}` is not one arithmetic expression")
        return entry["latex"]


class _Names:
    """Puts the columns' names back into what the engine wrote with `x{i}`."""

    def __init__(self, names: Sequence[str]):
        self.names = list(names)

    def text(self, s: Optional[str]) -> Optional[str]:
        if s is None:
            return None
        return _INSIDE.sub(lambda m: self.names[int(m.group(1))], s)

    def latex(self, s: Optional[str]) -> Optional[str]:
        if s is None:
            return None

        def name(m: "re.Match[str]") -> str:
            n = self.names[int(m.group(1))]
            if re.fullmatch(r"[A-Za-z]\d*", n):
                return n[0] + (f"_{{{n[1:]}}}" if n[1:] else "")
            escaped = re.sub(r"([_#$%&{}\\^~])", r"\\\1", n)
            return rf"\mathrm{{{escaped}}}"

        return _INSIDE_LATEX.sub(name, s)


def _nothing_found(report: dict, budget: dict) -> str:
    """Why a search's front is empty, and what to change."""
    summary = report["summary"]
    n = summary["calibrations"]
    if n == 0:
        setting = "calibrations" if "calibrations" in budget else "seconds"
        return f"the search finished no calibration within its budget: raise `{setting}`"
    return (
        f"none of the {n} calibrations had a finite loss: the data may be too large or too "
        "small for double precision (rescale X and y), or the operators unsuited to it "
        "(`unary`, `binary`)"
    )
