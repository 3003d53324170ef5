"""ndvm.ODERegressor: a system's equations from its trajectories, PySINDy's way."""

import numpy as np
import pytest

pytest.importorskip("sklearn")
scipy_integrate = pytest.importorskip("scipy.integrate")
sympy = pytest.importorskip("sympy")

import ndvm  # noqa: E402


def lotka_volterra(x0, t):
    def f(_, s):
        return [s[0] - 0.1 * s[0] * s[1], 0.075 * s[0] * s[1] - 1.5 * s[1]]

    sol = scipy_integrate.solve_ivp(f, (t[0], t[-1]), x0, t_eval=t, rtol=1e-12, atol=1e-12)
    return sol.y.T


T = np.linspace(0, 15, 150)


@pytest.fixture(scope="module")
def fitted():
    x = lotka_volterra([10.0, 5.0], T)
    m = ndvm.ODERegressor(calibrations=3000, seed=3, threads=2, feature_names=["prey", "predator"])
    return m.fit(x, t=T), x


def test_the_lotka_volterra_system_is_found_and_predicts_another_start(fitted):
    m, x = fitted
    prey, predator = sympy.symbols("prey predator")
    found = m.sympy()
    truth = [prey - 0.1 * prey * predator, 0.075 * prey * predator - 1.5 * predator]
    for f, want in zip(found, truth):
        # Equal up to the fitted constants' last digits: the difference's coefficients are tiny.
        diff = sympy.Poly(sympy.expand(f - want), prey, predator)
        assert max(abs(float(c)) for c in diff.coeffs()) < 1e-5, (f, want)
    # As text, one right-hand side per state, in the states' names.
    assert all("prey" in e and "predator" in e for e in m.equations())
    assert m.score(x, t=T) > 0.99999
    other = lotka_volterra([6.0, 12.0], T)
    assert m.score(other, t=T) > 0.99999
    sim = m.simulate([6.0, 12.0], T)
    assert sim.shape == (150, 2)
    np.testing.assert_allclose(sim, other, rtol=1e-3, atol=1e-3)
    assert len(m.equations()) == 2
    assert [e["complexity"] for e in m.equations_] == sorted(e["complexity"] for e in m.equations_)


def test_several_trajectories_and_a_time_step_are_accepted():
    # dx/dt = -0.5 x, two starts, sampled every 0.1: the same law from both.
    t = 0.1 * np.arange(40)
    runs = [x0 * np.exp(-0.5 * t)[:, None] for x0 in (1.0, 3.0)]
    m = ndvm.ODERegressor(calibrations=300, seed=2, threads=1).fit(runs, t=0.1)
    (rhs,) = m.sympy()
    x0 = sympy.Symbol("x0")
    assert abs(float(sympy.Poly(rhs, x0).coeff_monomial(x0)) + 0.5) < 1e-6, rhs
    assert m.score(runs, t=[t, t]) > 0.999999
    # The integration is bounded: out of evaluations, the rest is NaN (never a hang).
    short = m.simulate([1.0], t, max_evaluations=20)
    assert short[0, 0] == 1.0 and np.isnan(short[-1, 0])
    np.testing.assert_allclose(m.simulate([2.0], t)[:, 0], 2.0 * np.exp(-0.5 * t), rtol=1e-6)


def test_a_law_that_blows_up_gives_nan_rows_not_an_error():
    # dx/dt = x², x(0) = 1: x = 1/(1 − t), which leaves the numbers at t = 1.
    t = np.linspace(0, 0.5, 30)
    x = (1.0 / (1.0 - t))[:, None]
    m = ndvm.ODERegressor(calibrations=400, seed=1, threads=1).fit(x, t=t)
    assert m.score(x, t=t) > 0.9999
    # Every entry's trajectory integrated whole was measured; the chosen one is the best's.
    whole = [e["reconstruction_r2"] for e in m.equations_]
    assert all(w is None or w <= 1 for w in whole)
    assert m.best_["reconstruction_r2"] >= max(w for w in whole if w is not None) - 0.01
    later = np.linspace(0, 2, 21)
    sim = m.simulate([1.0], later)
    np.testing.assert_allclose(sim[:9, 0], 1.0 / (1.0 - later[:9]), rtol=1e-3)
    assert np.isnan(sim[-1, 0])


def test_bad_input_is_refused_with_a_reason():
    m = ndvm.ODERegressor(calibrations=10)
    x = np.ones((5, 2))
    for t, why in [
        (np.array([0, 1, 1, 2, 3.0]), "increase strictly"),
        (np.arange(4.0), "4 times for 5 samples"),
        (-1.0, "a time step must be a finite number > 0"),
    ]:
        with pytest.raises(ValueError, match=why):
            m.fit(x, t=t)
    with pytest.raises(ValueError, match="at least 2 samples"):
        m.fit(np.ones((1, 2)), t=1.0)
    with pytest.raises(ValueError, match="same states"):
        m.fit([np.ones((3, 2)), np.ones((3, 1))], t=1.0)
    with pytest.raises(ValueError, match="must name the 2 states"):
        ndvm.ODERegressor(feature_names=["a"]).fit(x, t=1.0)


def test_it_clones_like_any_estimator():
    from sklearn.base import clone

    m = ndvm.ODERegressor(calibrations=50, seed=3, feature_names=["u"])
    c = clone(m)
    assert c.get_params() == m.get_params()


def test_derivatives_are_fourth_order_on_even_samples():
    from ndvm.dynamics import derivatives

    errors = []
    for h in (0.1, 0.05):
        t = np.arange(0, 6, h)
        x = np.stack([np.sin(t), np.exp(-t)], axis=1)
        d = derivatives(x, t)
        want = np.stack([np.cos(t), -np.exp(-t)], axis=1)
        errors.append(np.abs(d - want)[2:-2].max())
        # The two samples at each end: numpy's second-order one-sided differences.
        np.testing.assert_allclose(d[:2], np.gradient(x, t, axis=0, edge_order=2)[:2])
    # Halving the step divides the interior error by about 2⁴.
    assert errors[0] < 5e-6 and 12 < errors[0] / errors[1] < 20, errors
    # Uneven samples: numpy's second-order differences throughout.
    t = np.sort(np.random.default_rng(0).uniform(0, 6, 80))
    x = np.sin(t)[:, None]
    np.testing.assert_allclose(derivatives(x, t), np.gradient(x, t, axis=0, edge_order=2))


def test_smoothing_is_checked_and_takes_noise_off():
    t = np.linspace(0, 4, 80)
    clean = (2.0 * np.exp(-0.7 * t))[:, None]
    noisy = clean * (1 + 0.05 * np.random.default_rng(1).standard_normal(clean.shape))
    for bad, why in [(4, "odd number"), (10, "odd number"), (81, "only 80 samples")]:
        with pytest.raises(ValueError, match=why):
            ndvm.ODERegressor(calibrations=10, smoothing=bad).fit(noisy, t=t)
    m = ndvm.ODERegressor(calibrations=400, smoothing=11, seed=1, threads=1).fit(noisy, t=t)
    (rhs,) = m.sympy()
    x0 = sympy.Symbol("x0")
    rate = float(sympy.Poly(sympy.expand(rhs), x0).coeff_monomial(x0))
    assert abs(rate + 0.7) < 0.05, rhs
    assert m.score(clean, t=t) > 0.99
    # Smoothed data: the chosen constants are polished on the whole trajectory, from a
    # calibrated start that stays behind (`fit_start`: the parameter `x0_0`).
    assert m.best_["polished"] and 0.99 < m.best_["reconstruction_r2"] <= 1
    assert "x0_0" not in m.best_["params"], m.best_["params"]


def test_pruning_drops_a_constant_the_data_do_not_need_and_keeps_one_they_do():
    from ndvm.dynamics import _zeroed
    from ndvm.sklearn import _Names

    assert _zeroed("(holes (+ (* a x0) ab) [a])", "a") == "(holes (+ (* 0 x0) ab) [0])"
    t = np.linspace(0, 4, 60)
    decay = np.exp(-0.7 * t)[:, None]  # x' = -0.7 x
    logistic = (0.7 / (0.3 + 0.4 * np.exp(0.7 * t)))[:, None]  # x' = -0.7 x + 0.3 x²
    cases = [
        # An offset the law does not have goes, and the rate refits to the truth.
        (decay, "(holes (+ (* a x0) b))", {"a": -0.69, "b": 0.004}, {"a": -0.7}),
        # Both terms are the law's: neither goes.
        (logistic, "(holes (+ (* a x0) (* b (* x0 x0))))", {"a": -0.69, "b": 0.31},
         {"a": -0.7, "b": 0.3}),
    ]
    for x, src, params, want in cases:
        m = ndvm.ODERegressor(calibrations=10, threads=1)
        m._inside = [src]
        entry = {"params": params, "loss": 1e-6, "reconstruction_r2": 0.99}
        m._prune([(x, t)], ["x0"], 0, entry, _Names(["x0"]), None)
        assert set(entry["params"]) == set(want), entry
        assert entry["pruned"] == len(params) - len(want)
        if len(want) < len(params):
            # Replaced by the pruned variant, calibrated again: the law, to RK4's accuracy.
            assert abs(entry["params"]["a"] + 0.7) < 1e-6, entry
            assert entry["reconstruction_r2"] > 0.999999 and m._inside[0] == "(holes (+ (* a x0) 0))"
        else:
            assert entry["params"] == params and m._inside[0] == src


def test_the_noisy_lotka_volterra_example_runs_and_predicts(tmp_path):
    """`python/examples/lotka_volterra_noisy.py`, the worked example of docs/search.md."""
    import pathlib
    import subprocess
    import sys

    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "lotka_volterra_noisy.py"
    out = tmp_path / "plot.svg"
    done = subprocess.run(
        [sys.executable, str(example), "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("dprey/dt = ") and lines[1].startswith("dpredator/dt = ")
    r2 = [float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("run ")]
    assert len(r2) == 2 and min(r2) > 0.998, done.stdout
    svg = out.read_text()
    assert svg.count("<circle") == 300 and svg.count("<polyline") == 6
