#!/usr/bin/env python3
"""Benchmark-scale recovery: the AI Feynman equations the SRBench way, ndvm beside gplearn.

For every equation of ``feynman_equations.csv`` (the AI Feynman database's list with its
variable ranges) and every target noise level, it samples points uniformly in the ranges,
adds Gaussian noise of ``noise × RMS(y)`` to the training targets (SRBench's target noise), and
gives each method the same training points and the same wall-clock budget. It then judges, as
SRBench does:

- *symbolic solution*: the chosen model, its constants rounded to 3 decimals, differs from the
  true formula by a constant or is a constant multiple of it (sympy simplifies the difference
  and the ratio);
- *accuracy*: R² on fresh, noise-free points (``r2 > 0.999`` counts as accurate).

For ndvm it also records whether a symbolic solution is anywhere on the Pareto front.

Results are appended to a JSON-lines file, one line per (equation, noise, method), and a run
skips what the file already holds: a long run is resumable and runs in parts
(``--equations 1-20``, then ``21-40``, …). ``--summary`` prints the rates as a Markdown table,
``--table`` the result of every equation.

    python benches/srbench/feynman.py --equations 1-10 --noise 0,0.01 --budget 60 \\
        --results feynman.jsonl
    python benches/srbench/feynman.py --results feynman.jsonl --summary

ndvm runs through its Python package (``ndvm.SymbolicRegressor``, the same search as
``ndvm search``; build it with ``maturin develop --release -m python/Cargo.toml``). Needs numpy,
sympy and scikit-learn; the peer needs gplearn (``pip install gplearn``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import sympy

HERE = Path(__file__).resolve().parent
EQUATIONS = HERE / "feynman_equations.csv"


def equations() -> list[dict]:
    out = []
    with open(EQUATIONS, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            n = int(row["# variables"])
            variables = [
                (row[f"v{i}_name"], float(row[f"v{i}_low"]), float(row[f"v{i}_high"]))
                for i in range(1, n + 1)
            ]
            out.append(
                {
                    "name": row["Filename"],
                    "number": int(row["Number"]),
                    "formula": row["Formula"],
                    "variables": variables,
                }
            )
    return out


def symbols(names):
    # Every variable's range is positive: sqrt(exp(x²)) is exp(x²/2) then.
    return {v: sympy.Symbol(v, positive=True) for v in names}


def truth(eq) -> sympy.Expr:
    names = [v for v, _, _ in eq["variables"]]
    local = symbols(names)
    local.update({"ln": sympy.log, "arcsin": sympy.asin, "pi": sympy.pi})
    return sympy.sympify(eq["formula"], locals=local)


def sample(eq, n: int, seed: int):
    rng = np.random.default_rng(seed)
    cols = {v: rng.uniform(lo, hi, n) for v, lo, hi in eq["variables"]}
    names = list(cols)
    f = sympy.lambdify([symbols(names)[v] for v in names], truth(eq), "numpy")
    y = np.asarray(f(*[cols[v] for v in names]), dtype=np.float64) * np.ones(n)
    assert np.isfinite(y).all(), eq["name"]
    return cols, y


def data(eq, noise: float, points: int):
    """Training points (noisy targets) and fresh noise-free test points."""
    train, y = sample(eq, points, seed=eq["number"])
    test, y_test = sample(eq, max(points // 3, 50), seed=10_000 + eq["number"])
    rng = np.random.default_rng(20_000 + eq["number"] + int(noise * 1e6))
    y_noisy = y + rng.normal(0.0, noise * np.sqrt(np.mean(y**2)), len(y))
    return train, y_noisy, test, y_test


def round_floats(expr: sympy.Expr, digits: int = 3) -> sympy.Expr:
    return expr.xreplace({a: sympy.Float(round(float(a), digits)) for a in expr.atoms(sympy.Float)})


def is_solution(model: sympy.Expr, true: sympy.Expr, eq: dict | None = None) -> bool:
    """SRBench's test: a constant difference or a constant, nonzero ratio.

    sympy decides it first. Where ``simplify`` leaves symbols behind, which it does for some
    true identities (``sqrt(1/((c/v)**2 - 1) + 1)`` is ``1/sqrt(1 - v**2/c**2)`` for c > v),
    the same test is made on numbers when ``eq`` is given: the rounded model against the truth
    at 256 points of the equation's ranges, the difference or the ratio constant to 1e-9 of
    its scale. Rounded constants make a model that only approximates the law miss by far more
    than that.
    """
    try:
        m = round_floats(model)
        if m.free_symbols - true.free_symbols:
            return False
    except Exception:  # noqa: BLE001 - sympy raises many kinds on odd models
        return False
    try:
        with time_limit(SIMPLIFY_SECONDS):
            diff = sympy.simplify(m - true)
            if not diff.free_symbols and diff.is_finite:
                return True
            ratio = sympy.simplify(m / true)
            if not ratio.free_symbols and bool(ratio.is_finite) and ratio != 0:
                return True
    except Exception:  # noqa: BLE001 - sympy raises many kinds on odd models; or out of time
        pass
    return eq is not None and numerically_equal(m, true, eq)


# sympy's simplify has no bound: on a large model (a peer's 60-node expression) it can run for
# hours. Past this, the judge decides on numbers alone.
SIMPLIFY_SECONDS = 20


class OutOfTime(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int):
    """Raises `OutOfTime` in the block after `seconds` (SIGALRM; the main thread, on Unix)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        raise OutOfTime()

    before = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def numerically_equal(m: sympy.Expr, true: sympy.Expr, eq: dict) -> bool:
    """A constant difference or a constant nonzero ratio, on 256 points of ``eq``'s ranges."""
    cols, y = sample(eq, 256, seed=30_000 + eq["number"])
    names = list(cols)
    try:
        f = sympy.lambdify([symbols(names)[v] for v in names], m, "numpy")
        with np.errstate(all="ignore"):
            p = np.asarray(f(*[cols[v] for v in names]), dtype=np.float64) * np.ones(len(y))
    except Exception:  # noqa: BLE001
        return False
    if not (np.isfinite(p).all() and np.isreal(p).all()):
        return False
    scale = np.max(np.abs(y))
    diff = p - y
    if np.ptp(diff) <= 1e-9 * scale:
        return True
    if np.any(y == 0):
        return False
    ratio = p / y
    return bool(np.ptp(ratio) <= 1e-9 * np.max(np.abs(ratio)) and np.max(np.abs(ratio)) > 0)


def r2(model: sympy.Expr, cols, y) -> float:
    names = list(cols)
    try:
        f = sympy.lambdify([symbols(names)[v] for v in names], model, "numpy")
        with np.errstate(all="ignore"):
            p = np.asarray(f(*[cols[v] for v in names]), dtype=np.float64) * np.ones(len(y))
        if not np.isfinite(p).all():
            return float("-inf")
        return float(1.0 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))
    except Exception:  # noqa: BLE001
        return float("-inf")


def parse(text: str, names) -> sympy.Expr | None:
    try:
        return sympy.sympify(text, locals=symbols(names))
    except Exception:  # noqa: BLE001
        return None


# -- ndvm ----------------------------------------------------------------------------------


def run_ndvm(eq, train, y, budget, threads) -> dict:
    import ndvm

    names = list(train)
    X = np.column_stack([train[v] for v in names])
    started = time.monotonic()
    m = ndvm.SymbolicRegressor(seconds=budget, threads=threads or None, variable_names=names)
    m.fit(X, y)
    seconds = time.monotonic() - started
    models = [parse(e["equation"], names) if e["equation"] else None for e in m.equations_]
    chosen = next(i for i, e in enumerate(m.equations_) if e["chosen"])
    return {
        "model": m.equations_[chosen]["equation"],
        "expr": models[chosen],
        "front": [x for x in models if x is not None],
        "front_equations": [e["equation"] for e in m.equations_ if e["equation"]],
        "calibrations": m.report_["summary"]["calibrations"],
        "seconds": seconds,
    }


# -- gplearn -------------------------------------------------------------------------------


# gplearn's functions as sympy: its protected sqrt and log take the absolute value (their
# guards near zero are left out).
GPLEARN = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "sqrt": lambda a: sympy.sqrt(sympy.Abs(a)),
    "log": lambda a: sympy.log(sympy.Abs(a)),
    "sin": sympy.sin,
    "cos": sympy.cos,
    "neg": lambda a: -a,
    "inv": lambda a: 1 / a,
}


def run_gplearn(eq, train, y, budget, seed=1) -> dict:
    from gplearn.genetic import SymbolicRegressor

    names = list(train)
    X = np.column_stack([train[v] for v in names])
    m = SymbolicRegressor(
        population_size=1000,
        generations=1,
        function_set=("add", "sub", "mul", "div", "sqrt", "log", "sin", "cos"),
        parsimony_coefficient=0.001,
        random_state=seed,
        warm_start=True,
    )
    started = time.monotonic()
    generations = 0
    # Generation by generation until the budget is spent (gplearn has no time budget).
    while time.monotonic() - started < budget:
        generations += 1
        m.set_params(generations=generations)
        m.fit(X, y)
    local = {f"X{i}": s for i, s in enumerate(symbols(names).values())}
    local.update(GPLEARN)
    text = str(m._program)
    try:
        expr = sympy.sympify(text, locals=local)
    except Exception:  # noqa: BLE001
        expr = None
    return {
        "model": str(expr) if expr is not None else text,
        "expr": expr,
        "front": [],
        "generations": generations,
        "seconds": time.monotonic() - started,
    }


# -- the run -------------------------------------------------------------------------------


def select(spec: str, all_eqs):
    if not spec:
        return all_eqs
    chosen = set()
    for part in spec.split(","):
        if "-" in part and part.replace("-", "").isdigit():
            lo, hi = part.split("-")
            chosen.update(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            chosen.add(int(part))
        else:
            chosen.update(i + 1 for i, e in enumerate(all_eqs) if e["name"] == part)
    return [e for i, e in enumerate(all_eqs) if i + 1 in chosen]


def done_keys(path: Path):
    keys = set()
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                keys.add((r["equation"], r["noise"], r["method"]))
    return keys


def rejudge(path: Path) -> None:
    """Judges the stored models again (after a change to the judge), in place."""
    by_name = {e["name"]: e for e in equations()}
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    for r in rows:
        eq = by_name[r["equation"]]
        names = [v for v, _, _ in eq["variables"]]
        true = truth(eq)
        expr = parse(r["model"], names) if r.get("model") else None
        r["solution"] = expr is not None and is_solution(expr, true, eq)
        if "front_equations" in r:
            front = [parse(s, names) for s in r["front_equations"]]
            r["on_front"] = r["solution"] or any(
                m is not None and is_solution(m, true, eq) for m in front
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def summary(path: Path) -> str:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["method"], r["noise"], r["budget_s"]), []).append(r)
    out = [
        "| method | noise | budget (s) | equations | symbolic solution | on the front | R² > 0.999 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (method, noise, budget), rs in sorted(groups.items()):
        n = len(rs)
        sol = sum(r["solution"] for r in rs)
        front = sum(r.get("on_front", r["solution"]) for r in rs)
        acc = sum(r["r2_test"] > 0.999 for r in rs)
        out.append(
            f"| {method} | {noise} | {budget} | {n} | {sol} ({100 * sol / n:.0f}%) | "
            f"{front} ({100 * front / n:.0f}%) | {acc} ({100 * acc / n:.0f}%) |"
        )
    return "\n".join(out)


def table(path: Path) -> str:
    """Per-equation results as Markdown: one row per equation, a column per (method, noise).

    ``S`` is a symbolic solution, ``f`` a solution on ndvm's front (not chosen), ``a`` an
    accurate model (R² > 0.999 on fresh points) that is not a solution, ``·`` neither.
    """
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    cols = sorted({(r["method"], r["noise"]) for r in rows})
    by_eq: dict = {}
    for r in rows:
        by_eq.setdefault(r["equation"], {})[(r["method"], r["noise"])] = r
    order = {e["name"]: i for i, e in enumerate(equations())}

    def mark(r) -> str:
        if r is None:
            return ""
        if r["solution"]:
            return "S"
        if r.get("on_front"):
            return "f"
        return "a" if r["r2_test"] > 0.999 else "·"

    head = " | ".join(f"{m} {n}" for m, n in cols)
    out = [f"| equation | {head} |", "|---|" + "---:|" * len(cols)]
    for name in sorted(by_eq, key=lambda n: order.get(n, 1 << 30)):
        marks = " | ".join(mark(by_eq[name].get(c)) for c in cols)
        out.append(f"| {name} | {marks} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--equations", default="", help="numbers (1-100), ranges, or names")
    ap.add_argument("--noise", default="0,0.001,0.01,0.1")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per equation and method")
    ap.add_argument("--points", type=int, default=300, help="training points per equation")
    ap.add_argument("--methods", default="ndvm,gplearn")
    ap.add_argument("--threads", type=int, default=0, help="ndvm's threads (0: every core)")
    ap.add_argument("--results", default="feynman.jsonl")
    ap.add_argument("--summary", action="store_true", help="print the rates and stop")
    ap.add_argument("--rejudge", action="store_true", help="judge the stored models again")
    ap.add_argument("--table", action="store_true", help="print per-equation results and stop")
    args = ap.parse_args()
    path = Path(args.results)
    if args.table:
        print(table(path))
        return 0
    if args.rejudge:
        rejudge(path)
    if args.summary or args.rejudge:
        print(summary(path))
        return 0
    have = done_keys(path)
    eqs = select(args.equations, equations())
    noises = [float(x) for x in args.noise.split(",")]
    methods = args.methods.split(",")
    for eq in eqs:
        true = truth(eq)
        for noise in noises:
            train, y, test, y_test = data(eq, noise, args.points)
            for method in methods:
                if (eq["name"], noise, method) in have:
                    continue
                if method not in ("ndvm", "gplearn"):
                    raise SystemExit(f"unknown method {method}")
                try:
                    if method == "ndvm":
                        got = run_ndvm(eq, train, y, args.budget, args.threads)
                    else:
                        got = run_gplearn(eq, train, y, args.budget)
                except Exception as e:  # noqa: BLE001 - a failed method is a result, not the end
                    got = {"model": None, "error": f"{type(e).__name__}: {e}"}
                expr = got.pop("expr", None)
                front = got.pop("front", [])
                row = {
                    "equation": eq["name"],
                    "noise": noise,
                    "method": method,
                    "budget_s": args.budget,
                    "points": args.points,
                    "truth": eq["formula"],
                    "solution": expr is not None and is_solution(expr, true, eq),
                    "r2_test": r2(expr, test, y_test) if expr is not None else float("-inf"),
                    **got,
                }
                if method == "ndvm":
                    row["on_front"] = row["solution"] or any(
                        is_solution(m, true, eq) for m in front
                    )
                with open(path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{eq['name']:>10} noise {noise:<5} {method:>7}: "
                    f"{'SOLVED' if row['solution'] else 'no':>6}  R² {row['r2_test']:.4f}  "
                    f"{row.get('model')}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
