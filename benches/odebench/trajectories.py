"""ODEBench's trajectories, made under its published protocol.

ODEBench (the ODEFormer paper's benchmark) is 63 systems of ordinary differential equations,
each with its constants and two initial conditions: `strogatz_equations.json` beside this file,
copied as data from its source (named in the file). Each system is solved from each initial
condition with scipy's LSODA at ODEBench's tolerances and observed at 150 times over [0, 10];
noise, when asked for, is ODEBench's: each value multiplied by 1 + noise * N(0, 1).

    python benches/odebench/trajectories.py --out DIR [--systems 1,31,55] [--noise 0.05] [--seed 0]

writes `DIR/system-<id>.csv`, one per system: the columns `init` (0 or 1: which initial
condition, one trajectory each), `t` and the states `x_0`, `x_1`, …, one row per observation.
A system whose solution fails or is not finite is reported and written as nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "strogatz_equations.json"


def benchmark() -> dict:
    """The data file: its source, the protocol and the 63 systems."""
    return json.loads(DATA.read_text())


def systems() -> list[dict]:
    return benchmark()["equations"]


def components(system: dict) -> list[str]:
    """The right-hand side of each state, in sympy's notation."""
    parts = [p.strip().replace("^", "**") for p in system["eq"].split("|")]
    if len(parts) != system["dim"]:
        raise ValueError(f"system {system['id']}: {len(parts)} components for {system['dim']} states")
    return parts


def rhs(system: dict, consts_index: int = 0):
    """f(t, x) for scipy, with the system's constants substituted."""
    import sympy

    xs = sympy.symbols([f"x_{i}" for i in range(system["dim"])])
    consts = system["consts"][consts_index]
    cs = {sympy.Symbol(f"c_{i}"): c for i, c in enumerate(consts)}
    exprs = [sympy.sympify(p, locals={str(x): x for x in xs}).subs(cs) for p in components(system)]
    for e in exprs:
        unknown = e.free_symbols - set(xs)
        if unknown:
            raise ValueError(f"system {system['id']}: unknown symbols {sorted(map(str, unknown))}")
    f = sympy.lambdify(xs, exprs, "numpy")
    return lambda t, x: np.asarray(f(*x), dtype=float)


def times() -> np.ndarray:
    p = benchmark()["protocol"]
    return np.linspace(p["t_span"][0], p["t_span"][1], p["points"])


def solve(system: dict, init: int) -> np.ndarray:
    """The states at the protocol's times from initial condition `init` (times × states)."""
    from scipy.integrate import solve_ivp

    p = benchmark()["protocol"]
    t = times()
    sol = solve_ivp(
        rhs(system),
        p["t_span"],
        np.asarray(system["init"][init], dtype=float),
        method=p["method"],
        t_eval=t,
        rtol=p["rtol"],
        atol=p["atol"],
        first_step=p["first_step"],
        min_step=p["min_step"],
    )
    if not sol.success or sol.y.shape[1] != len(t) or not np.all(np.isfinite(sol.y)):
        raise RuntimeError(f"system {system['id']}, initial condition {init}: {sol.message}")
    return sol.y.T


def observed(system: dict, init: int, noise: float, seed: int) -> np.ndarray:
    """`solve` with ODEBench's multiplicative noise, seeded per system and initial condition."""
    x = solve(system, init)
    if noise > 0:
        rng = np.random.default_rng([seed, system["id"], init])
        x = x * (1 + noise * rng.standard_normal(x.shape))
    return x


def write(system: dict, path: pathlib.Path, noise: float, seed: int) -> None:
    t = times()
    rows = []
    for init in range(len(system["init"])):
        x = observed(system, init, noise, seed)
        rows += [[init, repr(float(ti)), *map(lambda v: repr(float(v)), xi)] for ti, xi in zip(t, x)]
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["init", "t", *[f"x_{i}" for i in range(system["dim"])]])
        w.writerows(rows)
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--systems", help="comma-separated ids (default: all 63)")
    ap.add_argument("--noise", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    wanted = None if a.systems is None else {int(s) for s in a.systems.split(",")}
    a.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for s in systems():
        if wanted is not None and s["id"] not in wanted:
            continue
        try:
            write(s, a.out / f"system-{s['id']}.csv", a.noise, a.seed)
        except (RuntimeError, ValueError) as e:
            failed += 1
            print(f"warning: {e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
