"""Lotka–Volterra from one noisy trajectory: the equations found, the fitted trajectory over
the data, and a second start predicted (docs/search.md, "Discovering dynamics").

    python python/examples/lotka_volterra_noisy.py [--out docs/dynamics_lotka_volterra.svg]

Needs numpy, scipy, scikit-learn and sympy (``pip install "./python[sklearn]"``). The data:
the predator–prey system dx/dt = x − 0.1·x·y, dy/dt = 0.075·x·y − 1.5·y, solved to 1e-12 from
(10, 5) at 150 times over [0, 15], each value multiplied by 1 + 0.05·N(0, 1) (ODEBench's
noise). The fit sees only that trajectory; the second start, (6, 12), is predicted.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from scipy.integrate import solve_ivp

import ndvm

T = np.linspace(0, 15, 150)
NOISE = 0.05


def solve(x0) -> np.ndarray:
    def f(_, s):
        return [s[0] - 0.1 * s[0] * s[1], 0.075 * s[0] * s[1] - 1.5 * s[1]]

    return solve_ivp(f, (T[0], T[-1]), x0, t_eval=T, rtol=1e-12, atol=1e-12).y.T


def svg(panels, path: str) -> None:
    """Each panel (title, observed or None, curves) as a plot side by side: dots for the
    observations, a line per curve, prey in one colour and predators in another."""
    w, h, pad = 420, 260, 36
    colours = ["#1f77b4", "#d62728"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(panels)}" height="{h + 30}" '
           'font-family="sans-serif" font-size="12">']
    for p, (title, observed, curves) in enumerate(panels):
        ys = np.concatenate([c for _, c in curves] + ([observed] if observed is not None else []))
        top = float(np.nanmax(ys)) * 1.05

        def xy(t, v, left=p * w):
            return left + pad + (w - 2 * pad) * t / T[-1], h - pad + 20 - (h - 2 * pad) * v / top

        x0, y0 = xy(0, 0)
        x1, y1 = xy(T[-1], top)
        out.append(f'<text x="{p * w + pad}" y="18">{title}</text>')
        out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" '
                   'stroke="#999"/>')
        out.append(f'<text x="{x0}" y="{y0 + 14}">0</text><text x="{x1 - 10}" y="{y0 + 14}">'
                   f'{T[-1]:g}</text><text x="{x0 - 30}" y="{y1 + 10}">{top:.0f}</text>')
        if observed is not None:
            for j in range(observed.shape[1]):
                for t, v in zip(T, observed[:, j]):
                    cx, cy = xy(t, v)
                    out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="1.8" '
                               f'fill="{colours[j]}" opacity="0.5"/>')
        for dash, c in curves:
            style = ' stroke-dasharray="4 3"' if dash else ""
            for j in range(c.shape[1]):
                pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in (xy(t, v) for t, v in zip(T, c[:, j]))
                               if np.isfinite(b))
                out.append(f'<polyline points="{pts}" fill="none" stroke="{colours[j]}" '
                           f'stroke-width="1.5"{style}/>')
    for j, name in enumerate(["prey", "predator"]):
        out.append(f'<text x="{pad + 70 * j}" y="{h + 24}" fill="{colours[j]}">{name}</text>')
    out.append("</svg>")
    # Whole or not at all: written beside it, then renamed over it.
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="lotka_volterra_noisy.svg")
    ap.add_argument("--calibrations", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    clean = solve([10.0, 5.0])
    x = clean * (1 + NOISE * rng.standard_normal(clean.shape))
    m = ndvm.ODERegressor(
        calibrations=args.calibrations, smoothing=11, seed=args.seed,
        feature_names=["prey", "predator"],
    ).fit(x, t=T)
    for name, eq in zip(["prey", "predator"], m.equations()):
        print(f"d{name}/dt = {eq}")
    fitted = m.simulate(x[0], T)
    other = solve([6.0, 12.0])
    predicted = m.simulate(other[0], T)
    print(f"run a, fitted (R² against the noise-free solution): {m.score(clean, t=T):.4f}")
    print(f"run b, predicted from (6, 12): R² {m.score(other, t=T):.4f}")
    svg(
        [
            ("run a: observed (dots), found system (lines)", x, [(False, fitted)]),
            ("run b: truth (dashed), found system (lines)", None,
             [(True, other), (False, predicted)]),
        ],
        args.out,
    )
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
