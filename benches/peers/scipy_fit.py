#!/usr/bin/env python3
"""ndvm's least squares beside scipy's, on the same data from the same starts.

    python3 benches/peers/scipy_fit.py target/release/ndvm     # needs numpy and scipy

1. `least_squares`: every candidate of scenes/feynman.scene.ron is fitted by ndvm
   (Levenberg-Marquardt, one restart from `init`) and by scipy.optimize.least_squares
   (method "lm", MINPACK, from the same `init`, on the same training rows, which ndvm writes
   with `--plots`). Prints the minima, their relative difference, and the evaluation counts.
2. `curve_fit`: every candidate of scenes/decay_csv.scene.ron — ndvm's standard errors and
   correlations beside the square roots of curve_fit's covariance diagonal.

The numbers in docs/fitting.md come from this script.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from scipy.optimize import curve_fit, least_squares

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCENES = os.path.join(ROOT, "scenes")


def parse(src):
    """An s-expression of the dialect's arithmetic as nested lists."""
    tokens = src.replace("(", " ( ").replace(")", " ) ").split()

    def read(i):
        if tokens[i] == "(":
            out, i = [], i + 1
            while tokens[i] != ")":
                x, i = read(i)
                out.append(x)
            return out, i + 1
        return tokens[i], i + 1

    return read(0)[0]


def compile_expr(e):
    """Python source over numpy for an arithmetic s-expression; symbols read `v[name]`."""
    if isinstance(e, str):
        try:
            float(e)
            return e
        except ValueError:
            return f"v[{e!r}]"
    op, args = e[0], [compile_expr(a) for a in e[1:]]
    if op in "+*":
        return "(" + f" {op} ".join(args) + ")"
    if op == "-":
        return f"(-{args[0]})" if len(args) == 1 else "(" + " - ".join(args) + ")"
    if op == "/":
        return f"({args[0]} / {args[1]})"
    if op in ("exp", "sqrt", "cos", "sin", "log"):
        return f"np.{op}({args[0]})"
    raise ValueError(f"not supported here: {op}")


def candidates(scene_text):
    """(name, src, parameter names, init) of each inline candidate, in order."""
    out = []
    for block in re.split(r"\bInline\(", scene_text)[1:]:
        name = re.search(r'name:\s*"([^"]+)"', block).group(1)
        src = re.search(r'src:\s*"([^"]+)"', block).group(1)
        names = re.findall(r'"([^"]+)"', re.search(r"names:\s*\[([^\]]*)\]", block).group(1))
        init = {k: float(x) for k, x in re.findall(r'"([^"]+)":\s*([-0-9.e]+)', re.search(r"init:\s*\{([^}]*)\}", block).group(1))}
        out.append((name, src, names, [init.get(n, 0.0) for n in names]))
    return out


def run_ndvm(ndvm, scene_name, one_restart):
    """Fits the scene by Levenberg-Marquardt (with one restart per candidate if asked) and
    returns the results and each candidate's rows (from the --plots CSVs)."""
    text = open(os.path.join(SCENES, scene_name)).read()
    text = re.sub(r"\n\s*optimizer:[^\n]*\n", "\n", text)
    text = re.sub(r"\n\s*steps:[^\n]*\n", "\n    steps: 500,\n", text)
    if one_restart:
        text = re.sub(r"Restarts\(count:\s*\d+", "Restarts(count: 1", text)
    tmp_scene = os.path.join(SCENES, ".scipy_compare.scene.ron")
    with open(tmp_scene, "w") as f:
        f.write(text)
    try:
        plots = tempfile.mkdtemp()
        out = subprocess.run(
            [ndvm, "fit", tmp_scene, "--json", "--plots", plots, "--top", "1000"],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.remove(tmp_scene)
    results = json.loads(out)
    rows = {}
    for c in results["candidates"]:
        path = os.path.join(plots, f"candidate-{c['index']}.csv")
        with open(path) as f:
            header = f.readline().strip().split(",")
            data = np.array([[float(x) for x in line.split(",")] for line in f if line.strip()])
        rows[c["index"]] = {h: data[:, i] for i, h in enumerate(header)}
    return text, results, rows


def fitted(text, results, rows):
    """Each candidate with ndvm's result, its data rows, the training mask and the law compiled
    to numpy: (name, parameter names, init, result, rows, train, f)."""
    for (name, src, names, init), c in zip(candidates(text), results["candidates"]):
        d = rows[c["index"]]
        f = eval("lambda v: " + compile_expr(parse(src)), {"np": np})
        yield name, names, init, c, d, d["held_out"] == 0, f


def compare_least_squares(ndvm):
    text, results, rows = run_ndvm(ndvm, "feynman.scene.ron", one_restart=True)
    print("| law | ndvm loss | scipy loss | max rel. diff of constants | ndvm evaluations | scipy evaluations |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, names, init, c, d, train, f in fitted(text, results, rows):
        inputs = [k for k in d if k not in ("target", "prediction", "residual", "held_out")]

        def residuals(p):
            v = {k: d[k][train] for k in inputs}
            v.update(zip(names, p))
            return f(v) - d["target"][train]

        if not np.all(np.isfinite(residuals(np.array(init)))):
            print(f"| {name} | {c['loss']:.9e} | (not finite at init) | - | {c['steps']} | - |")
            continue
        with np.errstate(all="ignore"):
            r = least_squares(residuals, init, method="lm", xtol=1e-10, ftol=1e-10, gtol=1e-10)
        scipy_loss = float(np.mean(r.fun ** 2))
        ours = [c["params"][n] for n in names]
        rel = max(abs(a - b) / max(abs(b), 1e-300) for a, b in zip(ours, r.x))
        print(f"| {name} | {c['loss']:.9e} | {scipy_loss:.9e} | {rel:.1e} | {c['steps']} | {r.nfev} |")


def compare_curve_fit(ndvm):
    text, results, rows = run_ndvm(ndvm, "decay_csv.scene.ron", one_restart=False)
    print("| law | constant | ndvm value ± error | curve_fit value ± error | rel. diff of errors |")
    print("|---|---|---|---|---:|")
    for name, names, init, c, d, train, f in fitted(text, results, rows):

        def model(t, *p):
            v = {"t": t}
            v.update(zip(names, p))
            return f(v)

        p, cov = curve_fit(model, d["t"][train], d["target"][train], p0=init, xtol=1e-12, ftol=1e-12)
        se = np.sqrt(np.diag(cov))
        u = c["uncertainty"]
        for i, n in enumerate(names):
            ours = u["std_errors"][n]
            print(f"| {name} | {n} | {c['params'][n]:.6f} ± {ours:.6f} | {p[i]:.6f} ± {se[i]:.6f} | {abs(ours - se[i]) / se[i]:.1e} |")
        corr = cov / np.outer(se, se)
        worst = float(np.max(np.abs(np.array(u["correlation"]) - corr)))
        print(f"| {name} | (correlations) | | | max abs. diff {worst:.1e} |")


if __name__ == "__main__":
    ndvm = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "ndvm")
    compare_least_squares(ndvm)
    print()
    compare_curve_fit(ndvm)
