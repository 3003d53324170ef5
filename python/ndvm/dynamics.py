"""``ndvm.ODERegressor``: the equations of a system's dynamics from its trajectories, in
PySINDy's conventions.

``fit(x, t=t)`` runs two searches (``docs/search.md``, "Discovering dynamics"):

1. **The screen.** ``Evolve`` fills a template with one hole per state, and each filling is
   calibrated by Levenberg–Marquardt against the derivatives estimated from the trajectories
   (:func:`derivatives`): one evaluation of the right-hand side per sample, so most of the
   budget goes here, to many programs.
2. **The refinement.** The screen's Pareto front and best programs are calibrated again on
   the trajectories themselves, one observation interval at a time (RK4 from each sample to the
   next), which finite differences cannot bias; each is integrated over the whole trajectory,
   and the chosen entry is one whose whole trajectory is within 0.01 R² of the best.
3. **The pruning** (with ``prune``): the chosen entry's constants set to 0 one at a time, each
   variant calibrated again one interval at a time, and the best kept while its loss stays
   within the Bayesian information criterion's allowance for one constant fewer — the small
   terms a search leaves to make up for a missing digit go.
4. **The polish** (noisy data, with ``smoothing``): the chosen entry's constants calibrated on
   the trajectories integrated whole, from the refined ones.

The answer is the refinement's Pareto front; ``equations()`` are the chosen entry's right-hand
sides, one per state, and ``simulate(x0, t)`` integrates them.

>>> import numpy as np, ndvm
>>> from scipy.integrate import solve_ivp
>>> t = np.linspace(0, 15, 150)
>>> lv = lambda _, s: [s[0] - 0.1 * s[0] * s[1], 0.075 * s[0] * s[1] - 1.5 * s[1]]
>>> x = solve_ivp(lv, (0, 15), [10, 5], t_eval=t, rtol=1e-12, atol=1e-12).y.T
>>> m = ndvm.ODERegressor(calibrations=20_000, seed=1, feature_names=["prey", "predator"])
>>> m = m.fit(x, t=t)
>>> m.score(x, t=t) > 0.9999
True
"""

from __future__ import annotations

import csv
import json
import os
import re
import tempfile
import time
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import NdvmError, Program, search
from .sklearn import _Names

try:
    from sklearn.base import BaseEstimator
    from sklearn.utils.validation import check_is_fitted
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.ODERegressor needs scikit-learn and scipy: pip install scikit-learn scipy sympy "
        "(or the extra: pip install \"./python[sklearn]\")"
    ) from e

__all__ = ["ODERegressor", "derivatives", "integrate"]

# Lanes a search holds at once (`ndvm_components::limits::LANES_IN_FLIGHT`).
_LANES_IN_FLIGHT = 1 << 22
_WINDOW = 16
# The share of a time budget the screen gets; the refinement has the rest up to
# `_REFINE_END`, the pruning what is left.
_SCREEN_SHARE = 0.85
_REFINE_END = 0.95
# L-BFGS steps of the polish on whole trajectories (noisy data).
_POLISH_STEPS = 300
# How far a pruned entry's whole-trajectory R² may fall below the entry it came from.
_PRUNE_SLACK = 1e-3

Times = Union[float, np.ndarray, Sequence[Any]]


class ODERegressor(BaseEstimator):  # type: ignore[misc,valid-type]
    """Finds ``dx/dt = f(x)`` from trajectories ``x`` (samples × states) sampled at times ``t``.

    Parameters
    ----------
    seconds : float
        The search's wall-clock budget (ignored when ``calibrations`` is given).
    calibrations : int, optional
        The screen's calibration budget (the refinement adds one calibration per draw of each
        program it refits): then the same data and ``seed`` give the same equations, whatever
        ``threads``.
    unary, binary : sequences of str
        The operators ``Evolve`` builds right-hand sides from.
    max_nodes : int
        The largest expression per state (tree nodes).
    steps, draws : int
        Levenberg–Marquardt evaluations per calibration, and random starts per candidate.
    substeps : int
        RK4 steps between two observations.
    smoothing : int, optional
        For noisy data: the trajectories pass through a Savitzky–Golay filter of this many
        samples (odd, ≥ 5; cubic), PySINDy's smoother, before anything else, and the chosen
        entry's constants are then polished on the whole trajectories (default: none).
    prune : bool
        Take the chosen entry's constants out one at a time while the fit allows it (default:
        no); the entry says how many went (``pruned``).
    seed : int
    threads : int, optional
        Worker threads (default: every core).
    feature_names : sequence of str, optional
        The states' names in the equations (default ``x0``, ``x1``, …).

    Attributes
    ----------
    equations_ : list of dict
        The Pareto front, simplest first: ``complexity``, ``loss``, ``adjusted_loss``,
        ``score``, ``reconstruction_r2`` (the training trajectories integrated whole from their
        first samples; the chosen entry's is within 0.01 of the best), ``equations`` (one sympy
        string per state), ``latex``, ``program``, ``params`` and ``chosen``.
    best_ : dict
        The chosen entry of ``equations_``.
    report_ : dict
        The refinement's search report (``ndvm.search``'s).
    screen_report_ : dict
        The screen's search report.
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
        smoothing: Optional[int] = None,
        prune: bool = False,
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
        self.smoothing = smoothing
        self.prune = prune
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
        if self.smoothing is not None:
            runs = [(_smoothed(xi, int(self.smoothing)), ti) for xi, ti in runs]
        d = runs[0][0].shape[1]
        names = self._names(d)
        inside = [f"x{i}" for i in range(d)]
        draws = int(self.draws)
        lanes = draws * d * sum(len(xi) for xi, _ in runs)
        if draws < 1 or lanes > _LANES_IN_FLIGHT:
            raise ValueError(f"draws={draws} × the observations: too many lanes ({lanes})")
        window = max(1, min(_WINDOW, _LANES_IN_FLIGHT // max(lanes, 1)))
        calibration = {
            "steps": int(self.steps),
            "optimizer": {"LevenbergMarquardt": {}},
            "draws": draws,
            "draw": {"Normal": {"sd": 0.5}},
        }
        started = time.perf_counter()
        screen = self._screen(runs, inside, calibration, window)
        # The refinement calibrates the screen's front and best programs once more each; under
        # a time budget it gets what the screen left.
        fillings: dict[str, list[str]] = {}
        for e in list(screen["front"]["entries"]) + list(screen.get("top") or []):
            fillings.setdefault(e["src"], sorted(e["params"]))
        if not fillings:
            raise RuntimeError(
                "no right-hand side could be calibrated against the derivatives within the "
                "budget: give it more calibrations or seconds"
            )
        budget: dict[str, Any] = {"calibrations": draws * max(len(fillings), 1)}
        if self.calibrations is None:
            end = (_REFINE_END if self.prune else 1.0) * float(self.seconds)
            left = end - (time.perf_counter() - started)
            budget["seconds"] = max(left, 0.05 * float(self.seconds))
        report = self._refine(runs, inside, calibration, window, fillings, budget)
        self.screen_report_ = screen
        front = report["front"]
        shown = _Names(names)
        entries = [
            {**_entry(e, shown), "chosen": i == front["chosen"]}
            for i, e in enumerate(front["entries"])
        ]
        self._inside = [e["src"] for e in front["entries"]]
        if not entries:
            raise RuntimeError(
                f"no right-hand side could be calibrated within the budget {budget}: give it "
                "more calibrations or seconds"
            )
        chosen = entries[front["chosen"]]
        if self.prune:
            deadline = None if self.calibrations is not None else started + float(self.seconds)
            self._prune(runs, inside, front["chosen"], chosen, shown, deadline)
        if self.smoothing is not None:
            self._polish(runs, inside, front["chosen"], chosen, shown)
        self.report_ = report
        self.equations_ = entries
        self.best_ = chosen
        self.n_features_in_ = d
        self._variables = names
        return self

    def _screen(self, runs, inside, calibration, window) -> dict:
        """The screen: a closed-form search of the right-hand sides against the derivatives
        estimated from the trajectories (:func:`derivatives`), one data point per sample and
        state, each state's residual divided by its derivatives' spread."""
        d = len(inside)
        slopes = [derivatives(xi, ti) for xi, ti in runs]
        spread = np.concatenate(slopes).std(axis=0)
        spread[~(spread > 0)] = 1.0
        weights = [f"ndvm-w{j}" for j in range(d)]
        budget: dict[str, Any] = (
            {"calibrations": int(self.calibrations)}
            if self.calibrations is not None
            else {"seconds": _SCREEN_SHARE * float(self.seconds)}
        )
        holes = " ".join(
            f"(* {w} (/ (hole d{v}/dt ({' '.join(inside)})) {float(s)!r}))"
            for w, v, s in zip(weights, inside, spread)
        )
        with tempfile.TemporaryDirectory(prefix="ndvm-ode-") as tmp:
            with open(os.path.join(tmp, "slopes.csv"), "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow([*inside, *weights, "slope"])
                for (xi, _), dxi in zip(runs, slopes):
                    for row, slope in zip(xi, dxi):
                        states = [repr(float(v)) for v in row]
                        for j in range(d):
                            one_hot = ["1" if k == j else "0" for k in range(d)]
                            w.writerow(states + one_hot + [repr(float(slope[j] / spread[j]))])
            scene = {
                "candidates": [],
                "data": {
                    "Csv": {
                        "path": "slopes.csv",
                        "columns": {c: c for c in inside + weights},
                        "target": "slope",
                    }
                },
                "loss": "Mse",
                "search": {
                    "template": f"(+ {holes})",
                    "proposers": [
                        {
                            "Evolve": {
                                "unary": list(self.unary),
                                "binary": list(self.binary),
                                "max_nodes": int(self.max_nodes),
                            }
                        }
                    ],
                    "calibration": calibration,
                    "success": {"TrainLoss": 0.0},
                    "budget": budget,
                    "window": window,
                    "seed": int(self.seed),
                },
            }
            return search(scene, self.threads, base_dir=tmp)

    def _refine(self, runs, inside, calibration, window, fillings, budget) -> dict:
        """The refinement: each of ``fillings`` calibrated on the trajectories themselves, one
        observation interval at a time (RK4 from each sample to the next), and chosen by the
        trajectories integrated whole (``docs/search.md``, "Discovering dynamics")."""
        spec = {"calibration": calibration, "budget": budget, "window": window}
        return self._on_trajectories(runs, inside, fillings, 1, spec, loss="Mse")

    def _prune(self, runs, inside, i: int, entry: dict, shown, deadline) -> None:
        """The chosen entry with its constants set to 0 one at a time, each variant calibrated
        again one interval at a time from the others' values; the best variant replaces the
        entry while its loss is within the Bayesian information criterion's allowance for one
        constant fewer (``exp(ln n / n)`` times the loss, ``n`` the residuals) and its whole
        trajectories are as good (``_PRUNE_SLACK``). Stops at ``deadline`` (``time``)."""
        n = len(inside) * sum(len(xi) - 1 for xi, _ in runs)
        allowance = float(np.exp(np.log(n) / n))
        pruned = 0
        while entry["params"]:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                break
            params = entry["params"]
            variants: dict[str, list[str]] = {}
            for p in params:
                variants.setdefault(_zeroed(self._inside[i], p), sorted(set(params) - {p}))
            budget: dict[str, Any] = {"calibrations": len(variants)}
            if left is not None:
                budget["seconds"] = left
            spec = {
                "calibration": {
                    "steps": int(self.steps),
                    "optimizer": {"LevenbergMarquardt": {}},
                    "draws": 1,
                    "draw": {"Normal": {"sd": 0.0}},
                },
                "budget": budget,
            }
            report = self._on_trajectories(
                runs, inside, variants, 1, spec, loss="Mse",
                parameters={"names": sorted(params), "init": params},
            )
            whole = entry.get("reconstruction_r2")
            floor = -np.inf if whole is None else whole - _PRUNE_SLACK
            kept = [
                e
                for e in report["front"]["entries"]
                if np.isfinite(e["train_loss"])
                and e["train_loss"] <= allowance * entry["loss"]
                and (whole is None or (e.get("reconstruction_r2") or -np.inf) >= floor)
            ]
            if not kept:
                break
            best = min(kept, key=lambda e: e["train_loss"])
            pruned += len(params) - len(best["params"])
            self._inside[i] = best["src"]
            entry.update(_entry(best, shown))
        entry["pruned"] = pruned

    def _polish(self, runs, inside, i: int, entry: dict, shown) -> None:
        """Noisy data: the chosen entry's constants calibrated once more on the trajectories
        integrated whole (L-BFGS from the refined constants, which one interval at a time
        leaves biased toward slower dynamics: each interval starts from a noisy state), each
        trajectory's starting state calibrated with them (``fit_start``: a noisy first sample
        does not pin the whole trajectory). The entry takes the new constants where the
        whole-trajectory fit converged to a finite loss; it can only be lower than where it
        started."""
        params = entry["params"]
        spec = {
            "calibration": {
                "steps": _POLISH_STEPS,
                "optimizer": {"Lbfgs": {}},
                "draws": 1,
                "draw": {"Normal": {"sd": 0.0}},
            },
            "budget": {"calibrations": 1},
        }
        report = self._on_trajectories(
            runs,
            inside,
            {self._inside[i]: sorted(params)},
            None,
            spec,
            parameters={"names": sorted(params), "init": params},
            precision="F64",
            fit_start=True,
        )
        polished = report["front"]["entries"]
        loss = polished[0].get("train_loss") if polished else None
        if loss is None or not np.isfinite(loss):
            return
        p = polished[0]
        # The starting states stay behind: `simulate` starts where it is told.
        entry["params"] = {k: v for k, v in p["params"].items() if k in params}
        entry["equations"] = [shown.text(q.get("sympy")) for q in p.get("equations", [])]
        entry["latex"] = [shown.latex(q.get("latex")) for q in p.get("equations", [])]
        entry["reconstruction_r2"] = 1.0 - loss / _total_squares(runs)
        entry["polished"] = True

    def _on_trajectories(
        self, runs, inside, fillings, window, spec, fit_start=False, **scene
    ) -> dict:
        """A search over the trajectories ``runs`` whose proposals are ``fillings`` (source →
        parameter names, each calibrated once), calibrated ``window`` intervals at a time
        (``None``: whole; ``fit_start``: from calibrated starting states), with the search
        settings ``spec`` and the scene fields ``scene``."""
        with tempfile.TemporaryDirectory(prefix="ndvm-ode-") as tmp:
            _write_runs(os.path.join(tmp, "x.csv"), runs, inside)
            with open(os.path.join(tmp, "fillings.jsonl"), "w", encoding="utf-8") as f:
                for src, params in fillings.items():
                    f.write(json.dumps({"src": src, "params": params}) + "\n")
            data = {"path": "x.csv", "time": "t", "states": inside, "id": "run",
                    "substeps": int(self.substeps)}
            if window is not None:
                data["window"] = window
            if fit_start:
                data["fit_start"] = True
            search_spec = {
                "proposers": [{"Stream": {"path": "fillings.jsonl", "cycle": False}}],
                "success": {"TrainLoss": 0.0},
                "seed": int(self.seed),
                **spec,
            }
            full = {"candidates": [], "data": {"Trajectory": data}, **scene, "search": search_spec}
            return search(full, self.threads, base_dir=tmp)

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
            # A state that left the numbers (the solver probing past a blow-up) or a model
            # that fails there: the step fails, and the rows from it on are NaN.
            if not np.all(np.isfinite(s)):
                return np.full(len(inside), np.nan)
            inputs = {v: float(s[k]) for k, v in enumerate(inside)}
            try:
                out = program.evaluate(inputs, grad=False, precision="f64", constants=constants)
            except NdvmError:
                return np.full(len(inside), np.nan)
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


def derivatives(x, t) -> np.ndarray:
    """The time derivatives of the samples ``x`` (samples × states) at the times ``t``: the
    fourth-order central difference (five samples) where the times are evenly spaced and
    there are five samples about a point, else :func:`numpy.gradient` (second order, its
    one-sided form at the ends). What ``ODERegressor`` screens right-hand sides against."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64).ravel()
    if len(t) < 3:
        return np.gradient(x, t, axis=0)
    out = np.gradient(x, t, axis=0, edge_order=2)
    steps = np.diff(t)
    if len(t) >= 5 and np.allclose(steps, steps[0], rtol=1e-9, atol=0.0):
        h = steps[0]
        out[2:-2] = (x[:-4] - 8 * x[1:-3] + 8 * x[3:-1] - x[4:]) / (12 * h)
    return out


def _entry(e: dict, shown) -> dict:
    """A front entry of a search over the trajectories, as ``equations_`` holds it."""
    eqs = e.get("equations", [])
    return {
        "complexity": e["complexity"],
        "loss": e["train_loss"],
        "adjusted_loss": e["adjusted_loss"],
        "score": e["score"],
        "reconstruction_r2": e.get("reconstruction_r2"),
        "equations": [shown.text(q.get("sympy")) for q in eqs],
        "latex": [shown.latex(q.get("latex")) for q in eqs],
        "program": shown.text(e["src"]),
        "params": dict(e["params"]),
    }


def _zeroed(src: str, name: str) -> str:
    """``src`` with every occurrence of the symbol ``name`` written as 0."""
    return re.sub(r"(?<=[\s(\[])" + re.escape(name) + r"(?=[\s)\]])", "0", src)


def _write_runs(path: str, runs, inside: list[str]) -> None:
    """The trajectories as a search's CSV file: `run`, `t` and the states."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run", "t", *inside])
        for i, (xi, ti) in enumerate(runs):
            for row, ts in zip(xi, ti):
                w.writerow([f"r{i}", repr(float(ts))] + [repr(float(v)) for v in row])


def _total_squares(runs) -> float:
    """What a search's R² over trajectories divides by: every sample after a trajectory's
    first, each state's distance to its mean over all samples over its spread, squared."""
    every = np.concatenate([xi for xi, _ in runs])
    mean, spread = every.mean(axis=0), every.std(axis=0)
    spread[~(spread > 0)] = 1.0
    return float(sum((((xi[1:] - mean) / spread) ** 2).sum() for xi, _ in runs))


def _smoothed(x: np.ndarray, window: int) -> np.ndarray:
    """``x`` through a Savitzky–Golay filter (``window`` samples, cubic), PySINDy's smoother."""
    from scipy.signal import savgol_filter

    if window < 5 or window % 2 == 0:
        raise ValueError(f"smoothing={window}: the window must be an odd number of samples ≥ 5")
    if len(x) < window:
        raise ValueError(f"smoothing={window}: a trajectory has only {len(x)} samples")
    return savgol_filter(x, window, 3, axis=0)
