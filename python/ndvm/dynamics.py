"""``ndvm.ODERegressor``: the equations of a system's dynamics from its trajectories, in
PySINDy's conventions.

``fit(x, t=t)`` writes the trajectories to a CSV file in a temporary folder and runs a search
over them: the template is a right-hand side with one hole per state, ``Evolve`` fills the holes,
and each filled model is calibrated by Levenberg–Marquardt one observation interval at a time
(RK4 from each observation to the next; ``docs/search.md``, "Discovering dynamics"). The answer
is the search's Pareto front; ``equations()`` are the chosen entry's right-hand sides, one per
state, and ``simulate(x0, t)`` integrates them.

>>> import numpy as np, ndvm
>>> from scipy.integrate import solve_ivp
>>> t = np.linspace(0, 15, 150)
>>> lv = lambda _, s: [s[0] - 0.1 * s[0] * s[1], 0.075 * s[0] * s[1] - 1.5 * s[1]]
>>> x = solve_ivp(lv, (0, 15), [10, 5], t_eval=t, rtol=1e-12, atol=1e-12).y.T
>>> m = ndvm.ODERegressor(calibrations=2000, seed=1, feature_names=["prey", "predator"])
>>> m = m.fit(x, t=t)
>>> m.score(x, t=t) > 0.9999
True
"""

from __future__ import annotations

import csv
import os
import tempfile
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import Program, search
from .sklearn import _Names

try:
    from sklearn.base import BaseEstimator
    from sklearn.utils.validation import check_is_fitted
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.ODERegressor needs scikit-learn and scipy: pip install scikit-learn scipy sympy "
        "(or the extra: pip install \"./python[sklearn]\")"
    ) from e

__all__ = ["ODERegressor", "integrate"]

# Lanes a search holds at once (`ndvm_components::limits::LANES_IN_FLIGHT`).
_LANES_IN_FLIGHT = 1 << 22
_WINDOW = 16

Times = Union[float, np.ndarray, Sequence[Any]]


class ODERegressor(BaseEstimator):  # type: ignore[misc,valid-type]
    """Finds ``dx/dt = f(x)`` from trajectories ``x`` (samples × states) sampled at times ``t``.

    Parameters
    ----------
    seconds : float
        The search's wall-clock budget (ignored when ``calibrations`` is given).
    calibrations : int, optional
        A calibration budget: then the same data and ``seed`` give the same equations, whatever
        ``threads``.
    unary, binary : sequences of str
        The operators ``Evolve`` builds right-hand sides from.
    max_nodes : int
        The largest expression per state (tree nodes).
    steps, draws : int
        Levenberg–Marquardt evaluations per calibration, and random starts per candidate.
    substeps : int
        RK4 steps between two observations.
    seed : int
    threads : int, optional
        Worker threads (default: every core).
    feature_names : sequence of str, optional
        The states' names in the equations (default ``x0``, ``x1``, …).

    Attributes
    ----------
    equations_ : list of dict
        The Pareto front, simplest first: ``complexity``, ``loss``, ``adjusted_loss``,
        ``score``, ``equations`` (one sympy string per state), ``latex``, ``program``,
        ``params`` and ``chosen``.
    best_ : dict
        The chosen entry of ``equations_``.
    report_ : dict
        The whole search report (``ndvm.search``'s).
    """

    def __init__(
        self,
        seconds: float = 30.0,
        calibrations: Optional[int] = None,
        unary: Sequence[str] = ("exp", "log", "sin", "cos", "sqrt"),
        binary: Sequence[str] = ("+", "-", "*", "/"),
        max_nodes: int = 24,
        steps: int = 50,
        draws: int = 4,
        substeps: int = 10,
        seed: int = 1,
        threads: Optional[int] = None,
        feature_names: Optional[Sequence[str]] = None,
    ):
        self.seconds = seconds
        self.calibrations = calibrations
        self.unary = unary
        self.binary = binary
        self.max_nodes = max_nodes
        self.steps = steps
        self.draws = draws
        self.substeps = substeps
        self.seed = seed
        self.threads = threads
        self.feature_names = feature_names

    # -- data ------------------------------------------------------------------------------

    @staticmethod
    def _trajectories(x, t: Times) -> list[tuple[np.ndarray, np.ndarray]]:
        """``x`` (one array, or a list of them) with the times of every sample."""
        runs = list(x) if isinstance(x, (list, tuple)) else [x]
        if not runs:
            raise ValueError("x holds no trajectory")
        times = list(t) if isinstance(t, (list, tuple)) and len(runs) > 1 else [t] * len(runs)
        if len(times) != len(runs):
            raise ValueError(f"{len(times)} time arrays for {len(runs)} trajectories")
        out = []
        for i, (xi, ti) in enumerate(zip(runs, times)):
            xi = np.asarray(xi, dtype=np.float64)
            if xi.ndim == 1:
                xi = xi[:, None]
            if xi.ndim != 2 or len(xi) < 2:
                raise ValueError(f"trajectory {i}: x must be samples × states, at least 2 samples")
            if np.ndim(ti) == 0:
                dt = float(ti)
                if not (np.isfinite(dt) and dt > 0):
                    raise ValueError(f"t={ti}: a time step must be a finite number > 0")
                ti = dt * np.arange(len(xi))
            ti = np.asarray(ti, dtype=np.float64).ravel()
            if len(ti) != len(xi):
                raise ValueError(f"trajectory {i}: {len(ti)} times for {len(xi)} samples")
            if not (np.isfinite(xi).all() and np.isfinite(ti).all()):
                raise ValueError(f"trajectory {i}: x and t must be finite")
            if not (np.diff(ti) > 0).all():
                raise ValueError(f"trajectory {i}: the times must increase strictly")
            if out and xi.shape[1] != out[0][0].shape[1]:
                raise ValueError("every trajectory must have the same states")
            out.append((xi, ti))
        return out

    def _names(self, n: int) -> list[str]:
        names = (
            [str(v) for v in self.feature_names]
            if self.feature_names is not None
            else [f"x{i}" for i in range(n)]
        )
        if len(names) != n or len(set(names)) != n:
            raise ValueError(f"feature_names {names} must name the {n} states once each")
        return names

    # -- fitting ---------------------------------------------------------------------------

    def fit(self, x, t: Times = 1.0):
        """Searches for the right-hand side; returns ``self``. ``x``: samples × states (or a
        list of such arrays, one per trajectory); ``t``: the times of the samples, or the time
        step between them (a list of either for several trajectories)."""
        runs = self._trajectories(x, t)
        d = runs[0][0].shape[1]
        names = self._names(d)
        inside = [f"x{i}" for i in range(d)]
        draws = int(self.draws)
        lanes = draws * d * sum(len(xi) - 1 for xi, _ in runs)
        if draws < 1 or lanes > _LANES_IN_FLIGHT:
            raise ValueError(f"draws={draws} × the observations: too many lanes ({lanes})")
        budget: dict[str, Any] = (
            {"calibrations": int(self.calibrations)}
            if self.calibrations is not None
            else {"seconds": float(self.seconds)}
        )
        with tempfile.TemporaryDirectory(prefix="ndvm-ode-") as tmp:
            with open(os.path.join(tmp, "x.csv"), "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["run", "t", *inside])
                for i, (xi, ti) in enumerate(runs):
                    for row, ts in zip(xi, ti):
                        w.writerow([f"r{i}", repr(float(ts))] + [repr(float(v)) for v in row])
            scene = {
                "candidates": [],
                "data": {
                    "Trajectory": {
                        "path": "x.csv",
                        "time": "t",
                        "states": inside,
                        "id": "run",
                        "substeps": int(self.substeps),
                        "window": 1,
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
                            }
                        }
                    ],
                    "calibration": {
                        "steps": int(self.steps),
                        "optimizer": {"LevenbergMarquardt": {}},
                        "draws": draws,
                        "draw": {"Normal": {"sd": 0.5}},
                    },
                    "success": {"TrainLoss": 0.0},
                    "budget": budget,
                    "window": max(1, min(_WINDOW, _LANES_IN_FLIGHT // max(lanes, 1))),
                    "seed": int(self.seed),
                },
            }
            report = search(scene, self.threads, base_dir=tmp)
        front = report["front"]
        shown = _Names(names)
        entries = []
        self._inside = []
        for i, e in enumerate(front["entries"]):
            eqs = e.get("equations", [])
            entries.append(
                {
                    "complexity": e["complexity"],
                    "loss": e["train_loss"],
                    "adjusted_loss": e["adjusted_loss"],
                    "score": e["score"],
                    "equations": [shown.text(q.get("sympy")) for q in eqs],
                    "latex": [shown.latex(q.get("latex")) for q in eqs],
                    "program": shown.text(e["src"]),
                    "params": dict(e["params"]),
                    "chosen": i == front["chosen"],
                }
            )
            self._inside.append(e["src"])
        if not entries:
            raise RuntimeError(
                f"no right-hand side could be calibrated within the budget {budget}: give it "
                "more calibrations or seconds"
            )
        self.report_ = report
        self.equations_ = entries
        self.best_ = entries[front["chosen"]]
        self.n_features_in_ = d
        self._variables = names
        return self

    # -- the found equations ---------------------------------------------------------------

    def _index(self, index: Optional[int]) -> int:
        check_is_fitted(self, "equations_")
        if index is None:
            return next(i for i, e in enumerate(self.equations_) if e["chosen"])
        return index

    def equations(self, index: Optional[int] = None) -> list[str]:
        """The right-hand sides of the chosen entry (or ``equations_[index]``), one per state,
        as sympy strings in the states' names."""
        return list(self.equations_[self._index(index)]["equations"])

    def sympy(self, index: Optional[int] = None) -> list:
        """The right-hand sides as sympy expressions."""
        try:
            import sympy
        except ImportError as e:
            raise ImportError("ODERegressor.sympy() needs sympy: pip install sympy") from e
        symbols = {n: sympy.Symbol(n) for n in self._variables}
        return [sympy.sympify(q, locals=symbols) for q in self.equations(index)]

    def _rhs(self, index: Optional[int]) -> tuple[Program, dict, list[str]]:
        """The right-hand side as one program of the states: the template's holes filled."""
        i = self._index(index)
        src = self._inside[i].strip()
        if not src.startswith("(holes"):
            raise RuntimeError(f"entry {i} is not a filling of the right-hand side: {src}")
        body = "[" + src[len("(holes") : -1].strip() + "]"
        params = self.equations_[i]["params"]
        inside = [f"x{k}" for k in range(self.n_features_in_)]
        return Program(body, list(params) + inside), params, inside

    def simulate(
        self, x0, t, index: Optional[int] = None, max_evaluations: int = 200_000
    ) -> np.ndarray:
        """The chosen equations (or ``equations_[index]``) integrated from ``x0`` at the times
        ``t`` by :func:`integrate`: samples × states, NaN from where the integration fails."""
        program, params, inside = self._rhs(index)
        constants = {k: float(v) for k, v in params.items()}
        x0 = np.asarray(x0, dtype=np.float64).ravel()
        if len(x0) != self.n_features_in_:
            raise ValueError(f"x0 has {len(x0)} states, the model {self.n_features_in_}")

        def f(s):
            inputs = {v: float(s[k]) for k, v in enumerate(inside)}
            out = program.evaluate(inputs, grad=False, precision="f64", constants=constants)
            return np.asarray(out["result"], dtype=np.float64).ravel()

        return integrate(f, x0, t, max_evaluations)

    def score(self, x, t: Times = 1.0, index: Optional[int] = None) -> float:
        """R² of the trajectories ``x`` against the equations integrated from each one's first
        sample (ODEBench's reconstruction score, over every state at once): 1 is perfect; a
        simulation that blows up scores −inf."""
        runs = self._trajectories(x, t)
        truth, predicted = [], []
        for xi, ti in runs:
            truth.append(xi)
            predicted.append(self.simulate(xi[0], ti, index))
        y, p = np.concatenate(truth), np.concatenate(predicted)
        if not np.isfinite(p).all():
            return float("-inf")
        return float(1.0 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))


def integrate(f, x0, t, max_evaluations: int = 200_000) -> np.ndarray:
    """``ds/dt = f(s)`` integrated from ``x0`` at the times ``t`` (LSODA, rtol 1e-8, atol
    1e-10, from each time to the next): samples × states. Rows from where the integration
    fails, blows up (a state past 1e100) or spends ``max_evaluations`` evaluations of ``f`` (a
    stiff model can take steps without end) are NaN. What ``ODERegressor.simulate`` and the
    ODEBench harness integrate found equations with."""
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=np.float64).ravel()
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    spent = [0]

    class _Spent(Exception):
        pass

    def rhs(_, s):
        spent[0] += 1
        if spent[0] > max_evaluations:
            raise _Spent
        with np.errstate(all="ignore"):
            return np.asarray(f(s), dtype=np.float64).ravel() * np.ones(len(s))

    out = np.full((len(t), len(x0)), np.nan)
    out[0] = x0
    state = x0
    for k in range(1, len(t)):
        try:
            sol = solve_ivp(rhs, (t[k - 1], t[k]), state, method="LSODA", rtol=1e-8, atol=1e-10)
        except (_Spent, ValueError, OverflowError, ZeroDivisionError):
            break
        state = sol.y[:, -1]
        if not sol.success or not np.all(np.abs(state) < 1e100):
            break
        out[k] = state
    return out
