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
