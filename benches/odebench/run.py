"""ODEBench: ndvm against PySINDy and Operon on the same trajectories and the same clock.

For each system: the trajectory from its first initial condition (`trajectories.py`, with
ODEBench's multiplicative noise when asked for) is what every method is fitted to, with the same
wall-clock budget; the equations it finds are integrated (LSODA, from each observation time to
the next, an evaluation budget against stiff models) from both initial conditions and judged
against the noise-free solutions:

- reconstruction: R² over every state of the first trajectory (ODEFormer's score), success
  when > 0.9;
- generalization: the same from the second initial condition;
- symbolic recovery, per component the SRBench way: the found right-hand side, constants
  rounded to 3 significant digits, minus (or divided by) the true one simplifies to a
  constant (0 for the difference); a system is recovered when every component is.

Methods: `ndvm` (`ndvm.ODERegressor`, every core), `pysindy` (its polynomial library of degree 2
plus sines and cosines, derivatives by its smoothed finite differences, STLSQ) and `operon`
(`pyoperon`'s SymbolicRegressor per component on finite-difference derivatives, its budget
split between the components). Each result is appended to `OUT/results.jsonl` as it comes, so
a run resumes where it stopped; `--summary` prints the table.

    python benches/odebench/run.py --out DIR [--methods ndvm,pysindy,operon] [--systems 1,31]
        [--seconds 120] [--noise 0] [--seed 0] [--calibrations N]
    python benches/odebench/run.py --out DIR --summary
    python benches/odebench/run.py --out DIR --rejudge     # the stored equations, judged again
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import trajectories as tj  # noqa: E402

R2_SUCCESS = 0.9
# Right-hand-side evaluations one simulation may spend (a stiff model takes steps without end).
MAX_EVALUATIONS = 200_000


# -- judging -----------------------------------------------------------------------------------


def r2(truth: np.ndarray, predicted: np.ndarray) -> float:
    if not np.all(np.isfinite(predicted)):
        return float("-inf")
    return float(1 - np.sum((truth - predicted) ** 2) / np.sum((truth - truth.mean()) ** 2))


def simulate(exprs, names, x0, t) -> np.ndarray:
    """sympy right-hand sides (of the symbols `names`) integrated from `x0` at the times `t` by
    `ndvm.dynamics.integrate`, as ndvm's own `simulate` integrates: NaN from where it fails,
    blows up or runs out of evaluations."""
    import sympy
    from ndvm.dynamics import integrate

    f = sympy.lambdify([sympy.Symbol(n) for n in names], list(exprs), "numpy")
    return integrate(lambda s: f(*s), x0, t, MAX_EVALUATIONS)


def rounded(e):
    """`e` with SRBench's rounding (`round_floats` of its symbolic-solution check): a float
    below 1e-4 in magnitude becomes 0, every other one is rounded to 3 decimal places."""
    import sympy

    return e.xreplace(
        {
            n: sympy.Integer(0) if abs(float(n)) < 1e-4 else sympy.Float(round(float(n), 3))
            for n in e.atoms(sympy.Float)
        }
    )


# Seconds sympy may spend deciding one component (simplifying a large expression can take
# without end): past it, the component is not shown equal.
JUDGE_SECONDS = 20


class _Late(Exception):
    pass


def same_law(found, truth) -> bool:
    """Symbolic recovery of one component: SRBench's rule (the found expression, its floats
    rounded as :func:`rounded` does, minus the true one is 0, or their ratio a constant), or
    — since ODEBench's coefficients are products of its constants, never 3-decimal numbers —
    the same expanded form with every coefficient within 1% of the true one (coefficients
    below 1e-4 dropped, as SRBench drops them). At most `JUDGE_SECONDS`."""
    import signal

    def late(*_):
        raise _Late

    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(JUDGE_SECONDS)
    try:
        return _same_law(found, truth)
    except _Late:
        return False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _same_law(found, truth) -> bool:
    import sympy

    try:
        f = rounded(found)
        if sympy.simplify(f - truth) == 0:
            return True
        ratio = sympy.simplify(f / truth)
        if ratio.is_constant() and ratio != 0:
            return True
        return same_form(canonical(found, drop=1e-4), canonical(truth))
    except Exception:  # noqa: BLE001 - sympy's failures mean "not shown equal"
        return False


def canonical(e, drop: float = 0.0):
    """`e` expanded, trigonometric functions of sums and multiples too (`cos(3π/2 − 2x)` and
    `2·sin(x)·cos(x)` are one form), its numbers evaluated (`log(229/100)` as 0.8286…), and
    the floats below `drop` in magnitude set to 0."""
    import sympy

    e = sympy.expand(sympy.expand(sympy.expand_trig(sympy.expand(e))).evalf())
    if drop > 0:
        tiny = {n: sympy.Integer(0) for n in e.atoms(sympy.Float) if abs(float(n)) < drop}
        e = sympy.expand(e.xreplace(tiny))
    return e


def same_form(f, g, tolerance: float = 1e-2) -> bool:
    """Whether `f` and `g` are one expression up to their floating constants, each within
    `tolerance` (relative) of the other's: the same tree with every float replaced by one
    placeholder, and the floats of each, in order of size, pairwise within the tolerance."""
    import sympy

    c = sympy.Symbol("_C")

    def shape(e):
        # Every occurrence counts: `−5.0·x − 5.0·y` has two floats, not one.
        floats = sorted(float(n) for n in sympy.preorder_traversal(e) if isinstance(n, sympy.Float))
        return e.xreplace({n: c for n in e.atoms(sympy.Float)}), floats

    (sf, a), (sg, b) = shape(f), shape(g)
    if sympy.srepr(sf) != sympy.srepr(sg) or len(a) != len(b):
        return False
    return all(abs(x - y) <= tolerance * max(abs(x), abs(y)) for x, y in zip(a, b))


def truth_of(system: dict):
    import sympy

    xs = [sympy.Symbol(f"x_{i}") for i in range(system["dim"])]
    cs = {sympy.Symbol(f"c_{i}"): sympy.nsimplify(c, rational=True) for i, c in enumerate(system["consts"][0])}
    return [sympy.sympify(p, locals={str(x): x for x in xs}).subs(cs) for p in tj.components(system)]


# -- methods -----------------------------------------------------------------------------------


def names(d: int) -> list[str]:
    return [f"x_{i}" for i in range(d)]


# A calibration budget for ndvm instead of the clock (`--calibrations`: the CI smoke run, which
# must give the same answer on any machine).
CALIBRATIONS: list = [None]
# ndvm's smoothing window on noisy data (`--smoothing`; by default PySINDy's 11 samples when
# `--noise` is given, none on clean data).
SMOOTHING: list = [None]


def fit_ndvm(x, t, seconds, seed):
    import ndvm

    m = ndvm.ODERegressor(
        seconds=seconds,
        calibrations=CALIBRATIONS[0],
        smoothing=SMOOTHING[0],
        seed=seed + 1,
        feature_names=names(x.shape[1]),
    )
    m.fit(x, t=t)
    return m.sympy(), {"complexity": m.best_["complexity"], "equations": m.equations()}


def fit_pysindy(x, t, seconds, seed):
    import pysindy as ps
    import sympy

    library = ps.PolynomialLibrary(degree=2) + ps.FourierLibrary()
    model = ps.SINDy(
        feature_library=library,
        differentiation_method=ps.SmoothedFiniteDifference(),
        optimizer=ps.STLSQ(threshold=0.05),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, t=t, feature_names=names(x.shape[1]))
    symbols = {n: sympy.Symbol(n) for n in names(x.shape[1])}
    # Each feature's name is a product of factors separated by spaces (`x_0 x_1`, `sin(1 x_0)`).
    features = [
        sympy.sympify(f.replace(" ", "*").replace("^", "**"), locals=symbols)
        for f in model.get_feature_names()
    ]
    exprs = [
        sum((float(c) * f for c, f in zip(row, features) if c != 0), sympy.Integer(0))
        for row in model.coefficients()
    ]
    return exprs, {"equations": [str(e) for e in exprs]}


def fit_operon(x, t, seconds, seed):
    import sympy
    from pyoperon.sklearn import SymbolicRegressor

    d = x.shape[1]
    dx = np.gradient(x, t, axis=0, edge_order=2)
    exprs = []
    for j in range(d):
        m = SymbolicRegressor(
            max_time=max(1, int(seconds / d)),
            n_threads=os.cpu_count() or 1,
            random_state=seed + 1,
            allowed_symbols="add,sub,mul,div,constant,variable,exp,log,sin,cos,sqrt",
        )
        m.fit(x, dx[:, j])
        text = m.get_model_string(m.model_, 12, names=names(d))
        exprs.append(sympy.sympify(text.replace("^", "**"), locals={n: sympy.Symbol(n) for n in names(d)}))
    return exprs, {"equations": [str(e) for e in exprs]}


METHODS = {"ndvm": fit_ndvm, "pysindy": fit_pysindy, "operon": fit_operon}


def judge(system: dict, method: str, seconds: float, noise: float, seed: int) -> dict:
    t = tj.times()
    clean = [tj.solve(system, i) for i in range(2)]
    x = tj.observed(system, 0, noise, seed)
    started = time.perf_counter()
    row = {"id": system["id"], "dim": system["dim"], "method": method, "noise": noise, "seconds": seconds}
    try:
        exprs, extra = METHODS[method](x, t, seconds, seed)
    except Exception as e:  # noqa: BLE001 - a method that fails scores nothing
        row.update(error=f"{type(e).__name__}: {e}", wall_s=time.perf_counter() - started)
        return row
    row["wall_s"] = time.perf_counter() - started
    row.update(extra)
    n = names(system["dim"])
    row["reconstruction_r2"] = r2(clean[0], simulate(exprs, n, clean[0][0], t))
    row["generalization_r2"] = r2(clean[1], simulate(exprs, n, clean[1][0], t))
    truth = truth_of(system)
    per = [same_law(f, g) for f, g in zip(exprs, truth)]
    row["symbolic_components"] = per
    row["symbolic"] = all(per)
    return row


# -- the run -----------------------------------------------------------------------------------


def results(path: pathlib.Path) -> list[dict]:
    """The results so far; a last line cut short (a run killed mid-write) is dropped, and its
    system judged again."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def rejudge(path: pathlib.Path) -> None:
    """Judges every result's stored equations again (after a change to the judge)."""
    import sympy

    systems = {s["id"]: s for s in tj.systems()}
    rows = results(path)
    for r in rows:
        if "equations" not in r or "error" in r:
            continue
        symbols = {n: sympy.Symbol(n) for n in names(r["dim"])}
        try:
            found = [sympy.sympify(q, locals=symbols) for q in r["equations"]]
        except (sympy.SympifyError, TypeError):
            continue
        per = [same_law(f, g) for f, g in zip(found, truth_of(systems[r["id"]]))]
        r["symbolic_components"], r["symbolic"] = per, all(per)
    rewrite(path, rows)


def rewrite(path: pathlib.Path, rows: list[dict]) -> None:
    """`path` replaced by `rows`, whole or not at all: written to a temporary file, flushed to
    disk, then renamed over it."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


@contextlib.contextmanager
def only_writer(out: pathlib.Path):
    """Holds `out`'s lock (`out/.lock`) for the run: a second run on the same folder is refused
    rather than interleaving its lines and rewrites with this one's."""
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    with (out / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"error: another run is writing {out}; wait for it to finish") from None
        yield


def summary(path: pathlib.Path) -> str:
    rows = results(path)
    out = ["| method | noise | systems | reconstruction R² > 0.9 | generalization R² > 0.9 | symbolic | median wall s |",
           "|---|---|---|---|---|---|---|"]
    keys = sorted({(r["method"], r["noise"]) for r in rows})
    for method, noise in keys:
        rs = [r for r in rows if r["method"] == method and r["noise"] == noise]
        n = len(rs)
        rec = sum(r.get("reconstruction_r2", -np.inf) > R2_SUCCESS for r in rs)
        gen = sum(r.get("generalization_r2", -np.inf) > R2_SUCCESS for r in rs)
        sym = sum(bool(r.get("symbolic")) for r in rs)
        wall = float(np.median([r["wall_s"] for r in rs]))
        pct = lambda k: f"{k}/{n} ({100 * k / n:.0f}%)"  # noqa: E731
        out.append(f"| {method} | {noise} | {n} | {pct(rec)} | {pct(gen)} | {pct(sym)} | {wall:.1f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--methods", default="ndvm,pysindy,operon")
    ap.add_argument("--systems", help="comma-separated ids (default: all 63)")
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--noise", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calibrations", type=int, help="ndvm's budget in calibrations, not seconds")
    ap.add_argument("--smoothing", type=int, help="ndvm's Savitzky-Golay window (default: 11 with --noise, else none)")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--rejudge", action="store_true", help="judge the stored equations again")
    args = ap.parse_args(argv)
    CALIBRATIONS[0] = args.calibrations
    SMOOTHING[0] = args.smoothing if args.smoothing else (11 if args.noise > 0 else None)
    path = args.out / "results.jsonl"
    if args.summary and not args.rejudge:
        print(summary(path))
        return 0
    for m in args.methods.split(","):
        if m and m not in METHODS:
            ap.error(f"--methods: {m} is not one of {', '.join(METHODS)}")
    with only_writer(args.out):
        return run(args, path)


def run(args, path: pathlib.Path) -> int:
    """Judges what `args` asks for that `path` does not hold yet (or, with `--rejudge`, all of
    it again), under the folder's lock."""
    if args.rejudge:
        rejudge(path)
        print(summary(path))
        return 0
    wanted = None if args.systems is None else {int(s) for s in args.systems.split(",")}
    done = set()
    if path.exists():
        rows = results(path)
        done = {(r["id"], r["method"], r["noise"]) for r in rows}
        # Drop a torn last line before appending after it.
        rewrite(path, rows)
    methods = [m for m in args.methods.split(",") if m]
    for system in tj.systems():
        if wanted is not None and system["id"] not in wanted:
            continue
        for method in methods:
            if (system["id"], method, args.noise) in done:
                continue
            row = judge(system, method, args.seconds, args.noise, args.seed)
            with path.open("a") as f:
                f.write(json.dumps(row) + "\n")
                f.flush()
                os.fsync(f.fileno())
            print(
                f"system {system['id']:>2} {method:>8}: reconstruction {row.get('reconstruction_r2', float('nan')):.4f} "
                f"generalization {row.get('generalization_r2', float('nan')):.4f} "
                f"symbolic {row.get('symbolic')} ({row['wall_s']:.1f} s){' ' + row['error'] if 'error' in row else ''}",
                flush=True,
            )
    print(summary(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
